"""JavaScript regex source -> RE2 syntax, so a lorebook's `/pattern/flags` key runs on a linear-time engine.

RE2 (google-re2) cannot backtrack, so no key can stall a scan however it is written; in exchange it has no
backreferences and no lookaround. :func:`to_re2` rewrites JavaScript syntax RE2 reads differently (``.`` and
``\\s`` are JavaScript's, ``\\uXXXX``, ``\\cX``, ``[^]``, ``(?<name>``), and converts the lookarounds whose
only use in a *test* (SillyTavern only asks whether a key matches) is existence:

- a positive lookahead ending a top-level alternative, ``X(?=Y)``, is ``XY``; a positive lookbehind starting
  one, ``(?<=Y)X``, is ``YX``;
- a negative lookahead of one character ending an alternative, ``X(?!C)``, is ``X(?:[^C]|\\z)``; a negative
  lookbehind of one character starting one, ``(?<!C)X``, is ``(?:\\A|[^C])X``.

Anything else it cannot express raises :class:`Unsupported` (the key is refused, never run on Python's
``re``); a pattern JavaScript itself would reject raises :class:`Invalid` (SillyTavern then matches the key
as plain text). Known remaining differences, all minor: ``^``/``$`` with ``m`` see only ``\\n`` as a line
break; ``i`` folds case by Unicode's simple folding; without ``u`` JavaScript sees UTF-16 code units, RE2
code points (``/^.$/`` matches one emoji).
"""

from __future__ import annotations

_JS_SPACE = (
    "\\t\\n\\x{0b}\\f\\r \\x{a0}\\x{1680}\\x{2000}-\\x{200a}\\x{2028}\\x{2029}\\x{202f}\\x{205f}\\x{3000}\\x{feff}"
)
_NOT_LINE_BREAK = "[^\\n\\r\\x{2028}\\x{2029}]"
_PASS_ESCAPES = {"d": "\\d", "D": "\\D", "w": "\\w", "W": "\\W", "b": "\\b", "B": "\\B"}
_CONTROL = {"n": 10, "r": 13, "t": 9, "f": 12, "v": 11}
_HEX = frozenset("0123456789abcdefABCDEF")


class Unsupported(ValueError):
    """Valid JavaScript that RE2 cannot express (a backreference, a lookaround it cannot convert, ...)."""


class Invalid(ValueError):
    """Not a valid JavaScript regex: SillyTavern's `new RegExp` would throw and use the key as plain text."""


def _lit(cp: int) -> str:
    ch = chr(cp)
    return ch if ch.isalnum() or ch == "_" else f"\\x{{{cp:x}}}"


class _Parser:
    def __init__(self, source: str, flags: str) -> None:
        self.s, self.i = source, 0
        self.unicode, self.dotall, self.sticky = "u" in flags, "s" in flags, "y" in flags

    def peek(self, k: int = 0) -> str:
        j = self.i + k
        return self.s[j] if j < len(self.s) else ""

    def take(self) -> str:
        ch = self.peek()
        if not ch:
            raise Invalid("unexpected end of pattern")
        self.i += 1
        return ch

    # --- structure -----------------------------------------------------------------------------------------
    def alternation(self, top: bool) -> str:
        alts = [self.sequence(top)]
        while self.peek() == "|":
            self.i += 1
            alts.append(self.sequence(top))
        return "|".join(alts)

    def sequence(self, top: bool) -> str:
        items: list[tuple[str, str, str]] = []  # (kind, re2 text, one-character body or "")
        while self.peek() and self.peek() not in "|)":
            kind, text, single = self.atom()
            quant = self.quantifier()
            if quant:
                if kind.startswith("look"):
                    raise Unsupported("a quantified lookaround")
                if kind in ("^", "$", "\\b"):
                    raise Invalid("nothing to repeat")
                text += quant
                kind, single = "atom", ""
            items.append((kind, text, single))
        out = []
        for n, (kind, text, single) in enumerate(items):
            if kind.startswith("look"):
                out.append(self.lookaround(kind, text, single, top, first=n == 0, last=n == len(items) - 1))
            else:
                out.append(text)
        return "".join(out)

    def lookaround(self, kind: str, body: str, single: str, top: bool, *, first: bool, last: bool) -> str:
        ahead = kind in ("look=", "look!")
        if top and ahead and last:
            if kind == "look=":
                return f"(?:{body})"
            if single:
                return f"(?:{single}|\\z)"
        if top and not ahead and first and not self.sticky:
            if kind == "look<=":
                return f"(?:{body})"
            if single:
                return f"(?:\\A|{single})"
        what = "lookahead" if ahead else "lookbehind"
        raise Unsupported(
            f"a {what} RE2 cannot run (only a lookahead ending the pattern or a lookbehind starting it, "
            "negative ones of one character, can be converted)"
        )

    def quantifier(self) -> str:
        ch = self.peek()
        if ch in ("*", "+", "?"):
            self.i += 1
        elif ch == "{":
            j = self.s.find("}", self.i)
            body = self.s[self.i + 1 : j] if j > 0 else ""
            lo, _, hi = body.partition(",")
            if not (lo.isdigit() and (hi == "" or hi.isdigit())):
                return ""  # JavaScript (without `u`) reads a `{` that starts no quantifier as a literal
            if (hi and int(hi) < int(lo)) or int(lo) > 1000 or (hi and int(hi) > 1000):
                if hi and int(hi) < int(lo):
                    raise Invalid("numbers out of order in {} quantifier")
                raise Unsupported("a repetition count above 1000")
            ch, self.i = self.s[self.i : j + 1], j + 1
        else:
            return ""
        if self.peek() == "?":
            self.i += 1
            return ch + "?"
        return ch

    def atom(self) -> tuple[str, str, str]:
        ch = self.take()
        if ch == "(":
            return self.group()
        if ch == "[":
            text, negated = self.char_class()
            return "atom", text, negated
        if ch == ".":
            if self.dotall:  # the negation of "any character" is no character: `(?!.)` is then `\z` alone
                return "atom", "(?s:.)", "(?:\\z.)"
            return "atom", _NOT_LINE_BREAK, "[\\n\\r\\x{2028}\\x{2029}]"
        if ch in "^$":
            return ch, ch, ""
        if ch == "\\":
            return self.escape()
        if ch in "*+?":
            raise Invalid("nothing to repeat")
        if ch == "{" and self.quantifier_at(self.i - 1):
            raise Invalid("nothing to repeat")
        cp = ord(ch)
        return "atom", _lit(cp), f"[^{_lit(cp)}]"

    def quantifier_at(self, at: int) -> bool:
        saved, self.i = self.i, at
        try:
            return bool(self.quantifier())
        finally:
            self.i = saved

    def group(self) -> tuple[str, str, str]:
        kind, head = "atom", "("
        if self.peek() == "?":
            for prefix, k in (("?:", "atom"), ("?=", "look="), ("?!", "look!"), ("?<=", "look<="), ("?<!", "look<!")):
                if self.s.startswith(prefix, self.i):
                    self.i += len(prefix)
                    kind, head = k, "(?:"
                    break
            else:
                if not self.s.startswith("?<", self.i):
                    raise Invalid("invalid group")
                end = self.s.find(">", self.i)
                name = self.s[self.i + 2 : end] if end > 0 else ""
                if not (
                    name and (name[0].isalpha() or name[0] in "_$") and all(c.isalnum() or c in "_$" for c in name)
                ):
                    raise Invalid("invalid capture group name")
                if "$" in name:
                    raise Unsupported("a `$` in a group name")
                self.i, head = end + 1, f"(?P<{name}>"
        start = self.i
        body = self.alternation(top=False)
        if self.peek() != ")":
            raise Invalid("unterminated group")
        self.i += 1
        single = ""
        if kind in ("look!", "look<!"):
            single = self._negate_single(self.s[start : self.i - 1])
        return kind, (body if kind.startswith("look") else head + body + ")"), single

    def _negate_single(self, source: str) -> str:
        """The negation of a one-character lookaround body, as RE2 text; "" when it is not one character."""
        if not source or source[0] in "|)":
            return ""  # `(?!|)`: an empty alternative, not the character `|`
        sub = _Parser(source, ("u" if self.unicode else "") + ("s" if self.dotall else ""))
        try:
            kind, _text, negated = sub.atom()
        except (Invalid, Unsupported):
            return ""
        return negated if kind == "atom" and not sub.peek() and negated else ""

    # --- escapes and classes -------------------------------------------------------------------------------
    def escape(self) -> tuple[str, str, str]:
        ch = self.take()
        if ch in _PASS_ESCAPES:
            if ch in "bB":
                return "\\b", _PASS_ESCAPES[ch], ""
            return "atom", _PASS_ESCAPES[ch], _PASS_ESCAPES[ch.swapcase()]
        if ch == "s":
            return "atom", f"[{_JS_SPACE}]", f"[^{_JS_SPACE}]"
        if ch == "S":
            return "atom", f"[^{_JS_SPACE}]", f"[{_JS_SPACE}]"
        if ch in "123456789":
            raise Unsupported("a backreference")
        if ch == "k" and ("(?<" in self.s or self.unicode):
            raise Unsupported("a named backreference")
        if ch in "pP" and self.unicode:
            if self.peek() != "{" or "}" not in self.s[self.i :]:
                raise Invalid("invalid property name")
            end = self.s.index("}", self.i)
            prop, self.i = self.s[self.i + 1 : end], end + 1
            text = f"\\{ch}{{{prop}}}"
            return "atom", text, f"\\{'P' if ch == 'p' else 'p'}{{{prop}}}"
        cp = self.code_point(ch, in_class=False)
        return "atom", _lit(cp), f"[^{_lit(cp)}]"

    def code_point(self, ch: str, *, in_class: bool) -> int:
        """The character an escape (after its backslash) stands for."""
        if ch in _CONTROL:
            return _CONTROL[ch]
        if ch == "0" and not self.peek().isdigit():
            return 0
        if ch in "01234567" and in_class:
            digits = ch
            while len(digits) < 3 and self.peek() in "01234567" and self.peek():
                digits += self.take()
            return int(digits, 8)
        digits = self.s[self.i : self.i + 2]
        if ch == "x" and len(digits) == 2 and all(c in _HEX for c in digits):
            self.i += 2
            return int(digits, 16)
        if ch == "u":
            return self.unicode_escape()
        if ch == "c" and self.peek().isascii() and self.peek().isalpha():
            return ord(self.take()) % 32
        if ch.isalnum() and self.unicode:
            raise Invalid(f"invalid escape \\{ch}")
        return ord(ch)  # an identity escape: `\/`, `\.`, or (without `u`) `\q` meaning `q`

    def unicode_escape(self) -> int:
        if self.unicode and self.peek() == "{":
            end = self.s.find("}", self.i)
            digits = self.s[self.i + 1 : end] if end > 0 else ""
            if not digits or any(c not in _HEX for c in digits) or int(digits, 16) > 0x10FFFF:
                raise Invalid("invalid Unicode escape")
            self.i = end + 1
            return int(digits, 16)
        digits = self.s[self.i : self.i + 4]
        if len(digits) < 4 or any(c not in _HEX for c in digits):
            if self.unicode:
                raise Invalid("invalid Unicode escape")
            return ord("u")
        self.i += 4
        cp = int(digits, 16)
        low = self.s[self.i + 2 : self.i + 6] if self.s.startswith("\\u", self.i) else ""
        if 0xD800 <= cp < 0xDC00 and len(low) == 4 and all(c in _HEX for c in low) and 0xDC00 <= int(low, 16) < 0xE000:
            self.i += 6  # a surrogate pair written as two escapes is one character
            return 0x10000 + ((cp - 0xD800) << 10) + (int(low, 16) - 0xDC00)
        if 0xD800 <= cp < 0xE000:
            raise Unsupported("a lone UTF-16 surrogate")
        return cp

    def char_class(self) -> tuple[str, str]:
        """(the class as RE2 text, its negation); JavaScript's `[]` matches nothing and `[^]` anything."""
        negated = self.peek() == "^"
        if negated:
            self.i += 1
        parts: list[str] = []
        space = not_space = False
        while True:
            ch = self.take()
            if ch == "]":
                break
            item, is_class = self.class_atom(ch)
            if item == "S":
                not_space = True
                continue
            if item == "s":
                space = True
                continue
            if not is_class and self.peek() == "-" and self.peek(1) not in ("]", ""):
                save = self.i
                self.i += 1
                hi, hi_class = self.class_atom(self.take())
                if hi_class:
                    self.i = save  # `[a-\d]`: JavaScript (without `u`) reads the `-` as a literal
                else:
                    if int(hi, 16) < int(item, 16):
                        raise Invalid("range out of order in character class")
                    parts.append(f"\\x{{{item}}}-\\x{{{hi}}}")
                    continue
            parts.append(item if is_class else f"\\x{{{item}}}")
        if space:
            parts.append(_JS_SPACE)
        body = "".join(parts)
        if not_space:
            if space:
                return ("(?s:.)", "[^\\x00-\\x{10ffff}]") if not negated else ("[^\\x00-\\x{10ffff}]", "(?s:.)")
            if negated:
                raise Unsupported("`\\S` in a negated character class")
            anything = f"[^{_JS_SPACE}]"
            return (f"(?:[{body}]|{anything})" if body else anything), ""
        if not body:
            return ("(?s:.)", "[^\\x00-\\x{10ffff}]") if negated else ("[^\\x00-\\x{10ffff}]", "(?s:.)")
        return (f"[^{body}]", f"[{body}]") if negated else (f"[{body}]", f"[^{body}]")

    def class_atom(self, ch: str) -> tuple[str, bool]:
        """(hex code point, False) for a character; (class text, True) for `\\d`-like; ("s"/"S", True)."""
        if ch != "\\":
            return f"{ord(ch):x}", False
        esc = self.take()
        if esc in "dDwW":
            return _PASS_ESCAPES[esc], True
        if esc in "sS":
            return esc, True
        if esc == "b":
            return "8", False  # backspace inside a class
        if esc in "pP" and self.unicode:
            end = self.s.find("}", self.i)
            if self.peek() != "{" or end < 0:
                raise Invalid("invalid property name")
            prop, self.i = self.s[self.i + 1 : end], end + 1
            return f"\\{esc}{{{prop}}}", True
        return f"{self.code_point(esc, in_class=True):x}", False


def to_re2(pattern: str, flags: str) -> str:
    """RE2 syntax behaving like ``new RegExp(pattern, flags).test`` (``g`` ignored: SillyTavern builds a new
    RegExp per test; ``y`` anchors at the text's start). Raises :class:`Unsupported` or :class:`Invalid`."""
    parser = _Parser(pattern, flags)
    body = parser.alternation(top=True)
    if parser.peek() == ")":
        raise Invalid("unmatched `)`")
    prefix = "".join(f for f in ("i", "m") if f in flags)
    head = f"(?{prefix})" if prefix else ""
    return head + (f"\\A(?:{body})" if parser.sticky else body)
