"""One case per rule of the World Info spec (../shared/specs/sillytavern-world-info.md), written from its text.

Each case: entries (uid = position in the tuple), chat messages (oldest first), settings, and the expected
activated uids, either as a set or, when the case is about order, as the insertion-order list.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pytest

from tests.context_assembler.unit.activation_helpers import activated, book, scan, uids


@dataclass
class Case:
    rule: str
    entries: list[dict[str, Any]]
    messages: list[str]
    expect: set[int] | list[int]
    settings: dict[str, Any] = field(default_factory=dict)
    request: dict[str, Any] = field(default_factory=dict)
    macros: dict[str, str] | None = None


K = {"selective": True}
CASES = [
    # §3.5 plain keys
    Case("3.5 plain key, any one of the keys is enough (OR)", [{"key": ["dragon", "wyrm"]}], ["a wyrm flies"], {0}),
    Case("3.5 case-insensitive by default", [{"key": ["Dragon"]}], ["DRAGON!"], {0}),
    Case("3.5 case-sensitive per entry", [{"key": ["Dragon"], "caseSensitive": True}], ["dragon"], set()),
    Case("3.5 case-sensitive global", [{"key": ["Dragon"]}], ["dragon"], set(), {"case_sensitive": True}),
    Case("3.5 whole words: no match inside a word", [{"key": ["cat"]}], ["concatenate"], set()),
    Case("3.5 whole words: punctuation is a boundary", [{"key": ["cat"]}], ["the cat's toy"], {0}),
    Case("3.5 whole words off: substring", [{"key": ["cat"], "matchWholeWords": False}], ["concatenate"], {0}),
    Case("3.5 whole words: multi-word key is a plain substring", [{"key": ["old man"]}], ["bold manner"], {0}),
    Case("3.5 whole words: CJK chars count as boundaries", [{"key": ["塔罗牌"]}], ["我想用塔罗牌占卜"], {0}),
    Case("3.5 whole words: Latin key next to CJK", [{"key": ["tarot"]}], ["tarot牌"], {0}),
    Case("3.5 whole words: underscore is a word char", [{"key": ["cat"]}], ["cat_food"], set()),
    Case("3.5 regex key, original case", [{"key": ["/Dra+gon/"]}], ["Draaagon"], {0}),
    Case("3.5 regex ignores case setting (needs i flag)", [{"key": ["/dragon/"]}], ["DRAGON"], set()),
    Case("3.5 regex with i flag", [{"key": ["/dragon/i"]}], ["DRAGON"], {0}),
    Case("3.5 regex \\x01 targets message starts", [{"key": ["/\\x01Bot:[^\\x01]*?hello/"]}], ["hello", "x"], set()),
    Case("3.5 regex \\x01 targets the speaker", [{"key": ["/\\x01Bot:[^\\x01]*?hello/"]}], ["x", "hello"], {0}),
    Case("3.5 slash without closing is plain", [{"key": ["/开始旅行"]}], ["我们/开始旅行吧"], {0}),
    Case("3.5 macros expanded in keys", [{"key": ["{{char}}"]}], ["where is Aria?"], {0}, macros={"char": "Aria"}),
    Case(
        "3.3 overlapping keys both found",
        [{"key": ["ab"]}, {"key": ["bc"]}],
        ["abc"],
        set(),
    ),
    Case(
        "3.3 overlapping substring keys",
        [{"key": ["ab"], "matchWholeWords": False}, {"key": ["bc"], "matchWholeWords": False}],
        ["abc"],
        {0, 1},
    ),
    Case("3.3 key inside a longer key", [{"key": ["dragon"]}, {"key": ["dragon king"]}], ["the dragon king"], {0, 1}),
    # §3.1 scan depth
    Case("3.1 default depth 2: older messages not scanned", [{"key": ["sword"]}], ["sword", "a", "b"], set()),
    Case("3.1 default depth 2 sees the last two", [{"key": ["sword"]}], ["sword", "a"], {0}),
    Case("3.1 per-entry scan depth", [{"key": ["sword"], "scanDepth": 3}], ["sword", "a", "b"], {0}),
    Case("3.1/§9 scan depth 0 matches nothing", [{"key": ["sword"], "scanDepth": 0}], ["sword"], set()),
    Case("3.1 names included in scanned text", [{"key": ["Bot"]}], ["hi", "hello"], {0}),
    Case("3.1 names off", [{"key": ["Bot"]}], ["hi", "hello"], set(), {"include_names": False}),
    Case(
        "3.1 persona text only with its flag",
        [{"key": ["elf"]}],
        ["hi"],
        set(),
        request={"scan_data": {"persona_description": "an elf"}},
    ),
    Case(
        "3.1 persona flag adds the text",
        [{"key": ["elf"], "matchPersonaDescription": True}],
        ["hi"],
        {0},
        request={"scan_data": {"persona_description": "an elf"}},
    ),
    Case(
        "3.1 scenario flag",
        [{"key": ["war"], "matchScenario": True}],
        ["hi"],
        {0},
        request={"scan_data": {"scenario": "war"}},
    ),
    # §3.3 per-entry checks
    Case("3.3 disabled entry", [{"key": ["x"], "disable": True}], ["x"], set()),
    Case("3.3 constant activates without keys", [{"constant": True}], ["nothing"], {0}),
    Case("3.3 disabled constant stays off", [{"constant": True, "disable": True}], ["x"], set()),
    Case("3.3 no keys: skip", [{"content": "c"}], ["anything"], set()),
    Case("3.3 triggers: other generation type", [{"key": ["x"], "triggers": ["continue"]}], ["x"], set()),
    Case(
        "3.3 triggers: listed type",
        [{"key": ["x"], "triggers": ["continue"]}],
        ["x"],
        {0},
        request={"trigger": "continue"},
    ),
    Case(
        "3.3 character filter include",
        [{"key": ["x"], "characterFilter": {"names": ["alice"]}}],
        ["x"],
        set(),
        request={"character": "bob"},
    ),
    Case(
        "3.3 character filter exclude",
        [{"key": ["x"], "characterFilter": {"names": ["alice"], "isExclude": True}}],
        ["x"],
        {0},
        request={"character": "bob"},
    ),
    Case("3.3 whitespace-only key matches anything", [{"key": [" "]}], ["zzz"], {0}),
    Case("3.3 empty key never matches", [{"key": [""]}], ["zzz"], set()),
    Case("3.7 @@activate", [{"content": "@@activate\nbody"}], ["zzz"], {0}),
    Case("3.7 @@dont_activate blocks constant", [{"constant": True, "content": "@@dont_activate\nbody"}], ["z"], set()),
    Case(
        "3.3 vector hit forces a hybrid entry",
        [{"key": ["nope"], "activationMode": "hybrid"}],
        ["z"],
        {0},
        request={"forced": frozenset({"b.0"})},
    ),
    Case(
        "3.3 vector hit ignored for keyword mode",
        [{"key": ["nope"]}],
        ["z"],
        set(),
        request={"forced": frozenset({"b.0"})},
    ),
    Case("3.3 vector-only entries ignore keys", [{"key": ["z"], "activationMode": "vector"}], ["z"], set()),
    # §3.6 secondary keys
    Case("3.6 AND_ANY pass", [{"key": ["a"], "keysecondary": ["b", "c"], **K, "selectiveLogic": 0}], ["a c"], {0}),
    Case("3.6 AND_ANY fail", [{"key": ["a"], "keysecondary": ["b", "c"], **K, "selectiveLogic": 0}], ["a"], set()),
    Case("3.6 NOT_ALL pass", [{"key": ["a"], "keysecondary": ["b", "c"], **K, "selectiveLogic": 1}], ["a b"], {0}),
    Case("3.6 NOT_ALL fail", [{"key": ["a"], "keysecondary": ["b", "c"], **K, "selectiveLogic": 1}], ["a b c"], set()),
    Case("3.6 NOT_ANY pass", [{"key": ["a"], "keysecondary": ["b", "c"], **K, "selectiveLogic": 2}], ["a"], {0}),
    Case("3.6 NOT_ANY fail", [{"key": ["a"], "keysecondary": ["b", "c"], **K, "selectiveLogic": 2}], ["a c"], set()),
    Case("3.6 AND_ALL pass", [{"key": ["a"], "keysecondary": ["b", "c"], **K, "selectiveLogic": 3}], ["a b c"], {0}),
    Case("3.6 AND_ALL fail", [{"key": ["a"], "keysecondary": ["b", "c"], **K, "selectiveLogic": 3}], ["a b"], set()),
    Case("3.6 unknown logic never", [{"key": ["a"], "keysecondary": ["b"], **K, "selectiveLogic": 7}], ["a b"], set()),
    Case(
        "3.6 selective false ignores secondary",
        [{"key": ["a"], "keysecondary": ["b"], "selective": False, "selectiveLogic": 3}],
        ["a"],
        {0},
    ),
    Case("3.6 NOT_ALL with no secondary keys is plain", [{"key": ["a"], "selectiveLogic": 1}], ["a"], {0}),
    Case(
        "3.6 empty secondary key counts as not matching",
        [{"key": ["a"], "keysecondary": [""], **K, "selectiveLogic": 0}],
        ["a"],
        set(),
    ),
    # §3.2 recursion
    Case(
        "3.2 recursion: content triggers another entry",
        [{"key": ["a"], "content": "mentions beta"}, {"key": ["beta"]}],
        ["a"],
        {0, 1},
    ),
    Case(
        "3.2 recursion off",
        [{"key": ["a"], "content": "mentions beta"}, {"key": ["beta"]}],
        ["a"],
        {0},
        {"recursive": False},
    ),
    Case(
        "3.2 preventRecursion",
        [{"key": ["a"], "content": "beta", "preventRecursion": True}, {"key": ["beta"]}],
        ["a"],
        {0},
    ),
    Case(
        "3.2 excludeRecursion",
        [{"key": ["a"], "content": "beta"}, {"key": ["beta"], "excludeRecursion": True}],
        ["a"],
        {0},
    ),
    Case("3.2 excludeRecursion still matches chat", [{"key": ["beta"], "excludeRecursion": True}], ["beta"], {0}),
    Case("3.2 delayUntilRecursion: not in chat pass", [{"key": ["a"], "delayUntilRecursion": 1}], ["a"], set()),
    Case(
        "3.2 delayUntilRecursion: fires in recursion",
        [{"key": ["x"], "content": "a"}, {"key": ["a"], "delayUntilRecursion": 1}],
        ["x a"],
        {0, 1},
    ),
    Case(
        "3.2 max recursion steps 1 = initial pass only",
        [{"key": ["a"], "content": "beta"}, {"key": ["beta"]}],
        ["a"],
        {0},
        {"max_recursion_steps": 1},
    ),
    Case(
        "3.2 chain of three",
        [{"key": ["a"], "content": "b"}, {"key": ["b"], "content": "c"}, {"key": ["c"]}],
        ["a"],
        {0, 1, 2},
    ),
    Case("3.2 min activations deepen the scan", [{"key": ["old"]}], ["old", "x", "y"], {0}, {"min_activations": 1}),
    Case(
        "3.2 min activations bounded by depth max",
        [{"key": ["old"]}],
        ["old", "w", "x", "y"],
        set(),
        {"min_activations": 1, "min_activations_depth_max": 2},
    ),
    # §3.8 groups
    Case(
        "3.8 override: highest order wins",
        [{"key": ["x"], "group": "g", "order": 5}, {"key": ["x"], "group": "g", "order": 9, "groupOverride": True}],
        ["x"],
        {1},
    ),
    Case("3.8 one candidate stays", [{"key": ["x"], "group": "g"}, {"key": ["nope"], "group": "g"}], ["x"], {0}),
    Case(
        "3.8 scoring keeps the best match",
        [{"key": ["x"], "group": "g"}, {"key": ["x", "y"], "group": "g"}],
        ["x y"],
        {1},
        {"use_group_scoring": True},
    ),
    Case(
        "3.8 group already activated blocks later passes",
        [{"key": ["x"], "content": "y", "group": "g"}, {"key": ["y"], "group": "g"}],
        ["x"],
        {0},
    ),
    Case(
        "3.8 weight 0 never wins a draw",
        [{"key": ["x"], "group": "g", "groupWeight": 0}, {"key": ["x"], "group": "g", "groupWeight": 100}],
        ["x"],
        {1},
    ),
    # §3.4 probability
    Case("3.4 probability 0 never", [{"key": ["x"], "probability": 0}], ["x"], set()),
    Case(
        "3.4 probability ignored without useProbability",
        [{"key": ["x"], "probability": 0, "useProbability": False}],
        ["x"],
        {0},
    ),
    # §3.9 delay
    Case("3.9 delay: too few messages", [{"key": ["x"], "delay": 3}], ["x", "x"], set()),
    Case("3.9 delay: enough messages", [{"key": ["x"], "delay": 3}], ["x", "x", "x"], {0}),
    # §4 placement order
    Case(
        "4 ascending order within a position",
        [{"constant": True, "order": 50}, {"constant": True, "order": 10}],
        ["z"],
        [1, 0],
    ),
    Case(
        "4 positions in prompt order",
        [{"constant": True, "position": 1}, {"constant": True, "position": 0}],
        ["z"],
        [1, 0],
    ),
    Case("4 equal orders: reverse priority", [{"constant": True}, {"constant": True}], ["z"], [1, 0]),
    Case(
        "4 invalid position activated but last, unplaced",
        [{"constant": True, "position": 10}, {"constant": True}],
        ["z"],
        [1, 0],
    ),
]


@pytest.mark.parametrize("case", CASES, ids=[c.rule for c in CASES])
def test_rule(case: Case) -> None:
    result = scan(book(*case.entries), case.messages, settings=case.settings, macros=case.macros, **case.request)
    if isinstance(case.expect, list):
        assert uids(result) == case.expect
    else:
        assert activated(result) == case.expect
