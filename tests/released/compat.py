"""Whether the public contract still serves the clients released against an earlier one, read from the JSON
Schema bundle (``contracts/mnemo.schema.json``) the clients are generated from.

What reaches mnemo (an event's or a request's payload) must still be accepted as old clients send it: no new
required field, no field gone (the services refuse unknown fields), no enum value gone, no bound tightened, no
type changed. What mnemo answers (a reply) must still be read by old clients: no enum value or type they do
not know, no required field gone or made nullable, no bound loosened. A new field, enum value or bound that old
clients never see is fine; anything else needs a new version of the subject beside the old one.

``python -m tests.released.compat`` prints the bundle's compatibility-relevant shape (descriptions, titles and
examples dropped); ``tests/released/contract_v1.json`` holds it as published on main at 5f05b42 (2026-11-26;
the shape of ec729a4, which the released client models of ``context_v1.py`` come from, passes against it too,
and the context reply of e18ee12, with its ``memory`` kind, does not). Never rewrite that file to make a test
pass: it is what clients in the field were built against.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any, Literal

Direction = Literal["payload", "reply"]
ROOT = Path(__file__).resolve().parents[2]
RELEASED = Path(__file__).with_name("contract_v1.json")
_PROSE = frozenset({"description", "title", "examples", "example"})
_UPPER, _LOWER = ("maxLength", "maxItems", "maximum"), ("minLength", "minItems", "minimum")


def shape(node: Any) -> Any:
    """``node`` without prose: what a client's validation depends on."""
    if isinstance(node, dict):
        return {k: shape(v) for k, v in sorted(node.items()) if k not in _PROSE}
    if isinstance(node, list):
        return [shape(v) for v in node]
    return node


def released_shape(bundle: dict[str, Any]) -> dict[str, Any]:
    ops = [{k: op[k] for k in ("subject", "kind", "payload", "reply")} for op in bundle["x-mnemo-operations"]]
    return {"$defs": shape(bundle["$defs"]), "operations": ops}


class _Walk:
    def __init__(self, old: dict[str, Any], new: dict[str, Any]) -> None:
        self.old, self.new = old["$defs"], new["$defs"]
        self.problems: list[str] = []
        self._seen: set[tuple[str, str, Direction]] = set()

    def _resolve(self, node: dict[str, Any], defs: dict[str, Any]) -> tuple[str | None, dict[str, Any]]:
        ref = node.get("$ref")
        if ref is None:
            return None, node
        name = ref.rsplit("/", 1)[-1]
        return name, defs[name]

    def _kind(self, node: dict[str, Any], defs: dict[str, Any]) -> str:
        """A form's JSON type (a model reached by ``$ref`` by what it is, not its name: renaming one is harmless)."""
        _, node = self._resolve(node, defs)
        return str(node.get("type", "enum" if "enum" in node or "const" in node else "any"))

    def compare(self, old: dict[str, Any], new: dict[str, Any], where: str, way: Direction) -> None:
        old_name, old = self._resolve(old, self.old)
        new_name, new = self._resolve(new, self.new)
        if old_name is not None and new_name is not None:
            key = (old_name, new_name, way)
            if key in self._seen:
                return
            self._seen.add(key)
        self._branches(old, new, where, way)

    def _branches(self, old: dict[str, Any], new: dict[str, Any], where: str, way: Direction) -> None:
        olds = [(b, self._kind(b, self.old)) for b in old.get("anyOf", [old])]
        news = [(b, self._kind(b, self.new)) for b in new.get("anyOf", [new])]
        # A payload's old forms must each still be accepted; a reply's new forms must each be one old clients read.
        must, among = (olds, news) if way == "payload" else (news, olds)
        for branch, kind in must:
            match = next((b for b, k in among if k == kind), None)
            if match is None:
                self.problems.append(f"{where}: {way} form {kind} has no counterpart in {[k for _, k in among]}")
            elif way == "payload":
                self._node(branch, match, where, way)
            else:
                self._node(match, branch, where, way)

    def _node(self, old: dict[str, Any], new: dict[str, Any], where: str, way: Direction) -> None:
        if "$ref" in old or "$ref" in new:
            self.compare(old, new, where, way)
            return
        self._enum(old, new, where, way)
        self._bounds(old, new, where, way)
        if "properties" in old:
            self._object(old, new, where, way)
        for key in ("items", "additionalProperties"):
            if isinstance(old.get(key), dict) and isinstance(new.get(key), dict):
                self.compare(old[key], new[key], f"{where}[]", way)

    def _enum(self, old: dict[str, Any], new: dict[str, Any], where: str, way: Direction) -> None:
        was = set(map(str, old.get("enum", []))) | ({str(old["const"])} if "const" in old else set())
        now = set(map(str, new.get("enum", []))) | ({str(new["const"])} if "const" in new else set())
        if not was and not now:
            return
        if way == "reply" and was and (not now or now - was):
            self.problems.append(
                f"{where}: a reply may now hold {sorted(now - was) or 'any value'} (old: {sorted(was)})"
            )
        if way == "payload" and now and (not was or was - now):
            self.problems.append(f"{where}: a payload's {sorted(was - now) or 'other values'} are no longer accepted")

    def _bounds(self, old: dict[str, Any], new: dict[str, Any], where: str, way: Direction) -> None:
        for key in _UPPER + _LOWER:
            was, now = old.get(key), new.get(key)
            if was == now:
                continue
            looser = _looser(key, was, now)
            # A payload's bound may only loosen (old clients' values stay accepted), a reply's only tighten.
            if looser != (way == "payload"):
                self.problems.append(f"{where}: {key} {was} -> {now} breaks old clients' {way}s")

    def _object(self, old: dict[str, Any], new: dict[str, Any], where: str, way: Direction) -> None:
        props, new_props = old.get("properties", {}), new.get("properties", {})
        required, new_required = set(old.get("required", [])), set(new.get("required", []))
        if way == "payload":
            if gone := sorted(set(props) - set(new_props)):
                self.problems.append(f"{where}: fields {gone} old clients send are refused now")
            if added := sorted(new_required - required):
                self.problems.append(f"{where}: fields {added} are required now; old clients do not send them")
        elif gone := sorted(required - new_required):
            self.problems.append(f"{where}: fields {gone} old clients require may be left out now")
        for name in set(props) & set(new_props):
            self.compare(props[name], new_props[name], f"{where}.{name}", way)


def _looser(key: str, was: float | None, now: float | None) -> bool:
    """Whether bound ``key`` accepts more as ``now`` than as ``was`` (no bound accepts the most)."""
    if now is None or was is None:
        return now is None
    return now > was if key in _UPPER else now < was


def problems(released: dict[str, Any], current: dict[str, Any]) -> list[str]:
    """What in ``current`` (a :func:`released_shape`) breaks a client built against ``released``."""
    walk = _Walk(released, current)
    served = {op["subject"]: op for op in current["operations"]}
    for op in released["operations"]:
        now = served.get(op["subject"])
        if now is None:
            walk.problems.append(f"{op['subject']} is no longer served")
            continue
        ways: tuple[Direction, ...] = ("payload", "reply")
        for way in ways:
            if op[way] is not None:
                if now[way] is None:
                    walk.problems.append(f"{op['subject']}: no {way} any more")
                else:
                    walk.compare(op[way], now[way], f"{op['subject']} {way}", way)
    return walk.problems


if __name__ == "__main__":
    bundle = json.loads((ROOT / "contracts" / "mnemo.schema.json").read_text())
    json.dump(released_shape(bundle), sys.stdout, indent=None, separators=(",", ":"), sort_keys=True)
