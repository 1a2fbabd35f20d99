"""Keyword activation benchmark: `python -m bench.lore` (or `make bench-lore`).

Books of 100, 1,000 and 10,000 synthetic entries (2-3 keys each, a fifth with secondary keys, some multi-word
keys, a few constants) over a 50-message scan window. Measures `activate` on a compiled book (compiling is done
once per book version and cached by the caller; its time is printed), beside a naive scan that tests one
precompiled regex per key, in the same run:

- cold: every text of the window scanned anew (the key sets forget what each text held before each run): the
  engine's whole work, compared with the naive scan (``ratio_to_naive``; the goal is at most 1/50 at 1,000
  entries);
- warm: as in a conversation, only the newest message is new at each run (the engine remembers the keys each
  text held, ``matcher.py``), the other 49 were scanned by earlier requests.

``--sizes 100,1000 --runs 10`` for a quick run. Ends with one JSON line: {"p95_ms": {...} (cold),
"warm_p95_ms", "naive_p95_ms", "ratio_to_naive", "compile_ms"}.
"""

from __future__ import annotations

import argparse
import json
import random
import re
import statistics
import time
from collections.abc import Callable, Iterator
from functools import partial

from mnemo.services.context_assembler.lore.engine.activation import ScanMessage, ScanRequest, activate
from mnemo.services.context_assembler.lore.engine.compiled import ActiveBook, CompiledLore, compile_lore
from mnemo.shared.lore.model import Lorebook, LoreEntry, WorldInfoSettings

SIZES = (100, 1_000, 10_000)
WINDOW = 50
RUNS = 60
SYLLABLES = ["ka", "ri", "to", "mon", "el", "dar", "vin", "sa", "lo", "qua", "zen", "mir", "tha", "gor", "ul", "bre"]
COMMON = [
    "the",
    "a",
    "of",
    "and",
    "to",
    "in",
    "is",
    "was",
    "he",
    "she",
    "it",
    "with",
    "as",
    "his",
    "her",
    "on",
    "at",
    "by",
    "they",
    "from",
    "this",
    "that",
]
FILLER = ["river", "stone", "walked", "quietly", "lantern", "market", "between", "morning", "silver", "window"]


def word(rng: random.Random) -> str:
    return "".join(rng.choice(SYLLABLES) for _ in range(rng.randint(3, 5)))


def make_book(n: int, rng: random.Random) -> Lorebook:
    """Keys are distinct made-up names, as in real books (a shared key would just activate many entries)."""
    used: set[str] = set()

    def name() -> str:
        while (candidate := word(rng)) in used or len(candidate) < 5:
            pass
        used.add(candidate)
        return candidate

    entries = []
    for uid in range(n):
        keys = [name() for _ in range(rng.randint(2, 3))]
        if rng.random() < 0.2:
            keys.append(f"{name()} {rng.choice(FILLER)}")
        secondary = [word(rng) for _ in range(2)] if rng.random() < 0.2 else []
        entries.append(
            LoreEntry(
                uid=uid,
                key=keys,
                keysecondary=secondary,
                # Prose with, now and then, another entry's key, so recursion has something to do.
                content=" ".join(rng.choice(FILLER) for _ in range(30)) + (f" {word(rng)}" if uid % 10 == 0 else ""),
                constant=uid % 200 == 0,
                order=rng.randint(0, 200),
            )
        )
    return Lorebook(name=f"bench-{n}", entries=entries)


def make_chat(book: Lorebook, rng: random.Random) -> list[ScanMessage]:
    keys = [k for e in book.entries for k in e.key]
    messages = []
    for i in range(WINDOW):
        words = [rng.choice(COMMON) if rng.random() < 0.6 else rng.choice(FILLER) for _ in range(40)]
        for _ in range(2):  # about 100 key mentions in the window, whatever the book size
            words.insert(rng.randrange(len(words)), rng.choice(keys))
        messages.append(ScanMessage("User" if i % 2 == 0 else "Narrator", " ".join(words)))
    return messages


def naive_scan(book: Lorebook) -> Callable[[str], int]:
    """One precompiled whole-word regex per key, tested entry by entry: what a simple implementation does."""
    compiled = [
        (
            [re.compile(r"(?<![A-Za-z0-9_])" + re.escape(k.lower()) + r"(?![A-Za-z0-9_])") for k in e.key],
            [re.compile(r"(?<![A-Za-z0-9_])" + re.escape(k.lower()) + r"(?![A-Za-z0-9_])") for k in e.keysecondary],
        )
        for e in book.entries
    ]

    def run(haystack: str) -> int:
        hay = haystack.lower()
        hits = 0
        for primary, secondary in compiled:
            if any(rx.search(hay) for rx in primary) and (not secondary or any(rx.search(hay) for rx in secondary)):
                hits += 1
        return hits

    return run


def timed(fn: Callable[[], object], runs: int) -> list[float]:
    fn()  # warm-up
    out = []
    for _ in range(runs):
        start = time.perf_counter()
        fn()
        out.append((time.perf_counter() - start) * 1000)
    return out


def pct(samples: list[float], q: float) -> float:
    return statistics.quantiles(samples, n=100, method="inclusive")[int(q) - 1]


def forget(lore: CompiledLore) -> None:
    for keyset in lore.keysets.values():
        keyset.forget()


def main(sizes: tuple[int, ...] = SIZES, runs: int = RUNS) -> dict[str, dict[str, float]]:
    rng = random.Random(42)
    settings = WorldInfoSettings(depth=WINDOW)
    out: dict[str, dict[str, float]] = {k: {} for k in ("p95_ms", "warm_p95_ms", "naive_p95_ms", "compile_ms")}
    for n in sizes:
        book = make_book(n, rng)
        chat = make_chat(book, rng)
        newest = [m.text for m in make_chat(book, rng)] * (runs // WINDOW + 2)
        started = time.perf_counter()
        lore = compile_lore([ActiveBook("bench", book)], settings)
        compile_ms = (time.perf_counter() - started) * 1000
        request = ScanRequest(messages=chat, max_context=32_000, seed="bench:1")
        result = activate(lore, request)

        def cold(lore: CompiledLore = lore, request: ScanRequest = request) -> object:
            forget(lore)
            return activate(lore, request)

        def warm(
            lore: CompiledLore = lore, chat: list[ScanMessage] = chat, turns: Iterator[str] = iter(newest)
        ) -> object:
            messages = [*chat[:-1], ScanMessage("User", next(turns))]
            return activate(lore, ScanRequest(messages=messages, max_context=32_000, seed="bench:1"))

        ours = timed(cold, runs)
        again = timed(warm, runs)
        haystack = "\n".join("\x01" + f"{m.name}: {m.text}" for m in reversed(chat))
        naive = naive_scan(book)
        theirs = timed(partial(naive, haystack), max(5, runs // max(1, n // 100)))
        out["p95_ms"][str(n)] = round(pct(ours, 95), 3)
        out["warm_p95_ms"][str(n)] = round(pct(again, 95), 3)
        out["naive_p95_ms"][str(n)] = round(pct(theirs, 95), 3)
        out["compile_ms"][str(n)] = round(compile_ms, 1)
        print(
            f"{n:>6} entries: activate p50 {pct(ours, 50):7.3f} ms  p95 {pct(ours, 95):7.3f} ms"
            f" (warm: p95 {pct(again, 95):6.3f} ms)"
            f"  ({len(result.entries)} activated, {result.passes} passes, compile {compile_ms:.0f} ms)"
            f" | naive per-key regex p50 {pct(theirs, 50):8.3f} ms  p95 {pct(theirs, 95):8.3f} ms",
            flush=True,
        )
    out["ratio_to_naive"] = {n: round(out["p95_ms"][n] / out["naive_p95_ms"][n], 4) for n in out["p95_ms"]}
    return out


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default=",".join(map(str, SIZES)), help="book sizes, comma-separated")
    parser.add_argument("--runs", type=int, default=RUNS, help="timed runs per size")
    args = parser.parse_args()
    print(json.dumps(main(tuple(int(x) for x in args.sizes.split(",")), args.runs)))
