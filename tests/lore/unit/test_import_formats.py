"""Synthetic files, built from the spec, for formats and quirks no real fixture covers."""

from __future__ import annotations

import base64
import json
import struct
import zlib
from typing import Any

import pytest

from mnemo.services.lore.formats.convert import MalformedFileError, NotALorebookError, UnsupportedFormatError
from mnemo.services.lore.formats.exporter import export_world_info
from mnemo.services.lore.formats.importer import import_lorebook
from mnemo.shared.lore.model import MAX_NUMBER


def png(chunks: dict[str, dict[str, Any]]) -> bytes:
    def chunk(kind: bytes, body: bytes) -> bytes:
        return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body))

    out = b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", 1, 1, 8, 2, 0, 0, 0))
    for name, card in chunks.items():
        out += chunk(b"tEXt", name.encode() + b"\0" + base64.b64encode(json.dumps(card).encode()))
    return out + chunk(b"IEND", b"")


def card(spec: str, entries: list[dict[str, Any]]) -> dict[str, Any]:
    return {"spec": spec, "spec_version": "3.0", "data": {"name": "Ann", "character_book": {"entries": entries}}}


def fields(result: Any, uid: int = 0) -> dict[str, Any]:
    entry = next(e for e in result.book.entries if e.uid == uid)
    return dict(entry.model_dump(by_alias=True))


def st_entry(**extra: Any) -> dict[str, Any]:
    return {"entries": {"0": {"uid": 0, "key": ["a"], "content": "c", "order": 100, "position": 0, **extra}}}


def warned(result, field: str) -> bool:
    return any(w.field == field for w in result.warnings)


def test_probability_null_with_roll_on_never_activates_like_sillytavern() -> None:
    result = import_lorebook(st_entry(probability=None, useProbability=True))
    assert fields(result)["probability"] == 0
    assert warned(result, "probability")


def test_missing_use_probability_means_no_roll() -> None:
    result = import_lorebook(st_entry(probability=10))
    assert fields(result)["useProbability"] is False
    assert warned(result, "useProbability")


def test_string_position_is_inserted_nowhere() -> None:
    result = import_lorebook(st_entry(position="1"))
    assert fields(result)["position"] == -1
    assert warned(result, "position")


def test_missing_selective_ignores_secondary_keys() -> None:
    result = import_lorebook(st_entry(keysecondary=["b"]))
    assert fields(result)["selective"] is False


def test_chub_extensions_only_values_ignored_unless_fallback() -> None:
    doc = st_entry(keys=["a"], extensions={"group": "g"})
    assert fields(import_lorebook(doc))["group"] == ""
    assert warned(import_lorebook(doc), "group")
    assert fields(import_lorebook(doc, extensions_fallback=True))["group"] == "g"


def test_v3_card_ccv3_chunk_wins_over_chara() -> None:
    v2 = card("chara_card_v2", [{"keys": ["old"], "content": "v2", "enabled": True, "insertion_order": 1}])
    v3 = card(
        "chara_card_v3",
        [{"keys": ["new"], "content": "v3", "enabled": True, "insertion_order": 1, "use_regex": True, "id": "7"}],
    )
    result = import_lorebook(png({"chara": v2, "ccv3": v3}))
    assert result.book.entries[0].key == ["new"]
    assert result.book.entries[0].uid == 7
    assert result.book.name == "Ann's Lorebook"


def test_card_mapping_and_deviations() -> None:
    entry = {"keys": ["k"], "content": "c", "insertion_order": 3, "case_sensitive": True, "secondary_keys": "x, y"}
    result = import_lorebook(card("chara_card_v3", [entry]))
    got = fields(result)
    assert got["disable"] is False
    assert warned(result, "enabled")  # deviation: missing enabled = enabled
    assert got["caseSensitive"] is True  # deviation: top-level case_sensitive used
    assert got["position"] == 1  # missing position -> after_char
    assert got["keysecondary"] == ["x", "y"]
    assert got["selective"] is False
    exported = export_world_info(result.book, result.original)
    assert exported["originalData"]["entries"][0]["keys"] == ["k"]
    assert import_lorebook(exported).book.entries == result.book.entries


def test_novelai_agnai_risu() -> None:
    nai = import_lorebook(
        {
            "lorebookVersion": 5,
            "entries": [
                {
                    "text": "t",
                    "keys": ["k"],
                    "displayName": "n",
                    "enabled": True,
                    "forceActivation": True,
                    "contextConfig": {"budgetPriority": 400},
                }
            ],
        }
    )
    assert (nai.format, fields(nai)["order"], fields(nai)["constant"]) == ("novelai", 400, False)
    assert warned(nai, "forceActivation")
    agnai = import_lorebook(
        {
            "kind": "memory",
            "name": "M",
            "entries": [{"name": "n", "entry": "e", "keywords": ["k"], "priority": 1, "weight": 7, "enabled": False}],
        }
    )
    assert (agnai.format, fields(agnai)["order"], fields(agnai)["disable"]) == ("agnai", 7, True)
    risu = import_lorebook(
        {
            "type": "risu",
            "ver": 1,
            "data": [
                {
                    "key": "a, b",
                    "secondkey": "",
                    "comment": "c",
                    "content": "x",
                    "insertorder": 5,
                    "mode": "normal",
                    "alwaysActive": True,
                    "selective": False,
                    "activationPercent": 40,
                }
            ],
        }
    )
    got = fields(risu)
    assert (got["key"], got["keysecondary"], got["constant"], got["probability"]) == (["a", "b"], [], True, 40)


def test_a_uid_beyond_what_json_clients_and_storage_hold_falls_back_to_its_map_key() -> None:
    """Uids are stored as plain 64-bit integers and read by JavaScript: above 2**53 - 1 a uid is not usable."""
    got = import_lorebook({"entries": {"7": {"uid": 2**60, "content": "x"}}})
    assert [e.uid for e in got.book.entries] == [7]
    assert (7, "uid") in [(w.uid, w.field) for w in got.warnings]
    card = import_lorebook({"spec": "chara_card_v2", "data": {"name": "A", "character_book": {"entries": [
        {"id": 2**60, "keys": ["a"], "content": "x", "enabled": True, "insertion_order": 1, "selective": False}]}}})  # fmt: skip
    assert [e.uid for e in card.book.entries] == [0]


def test_numbers_beyond_what_a_field_holds_are_set_to_the_bound_with_a_warning() -> None:
    big = {"uid": 0, "key": ["a"], "content": "x", "sticky": 2**80, "order": -1e300, "depth": "9" * 30}
    got = import_lorebook({"entries": {"0": big}})
    [entry] = got.book.entries
    assert (entry.sticky, entry.order, entry.depth) == (MAX_NUMBER, -MAX_NUMBER, MAX_NUMBER)
    assert {"sticky", "order", "depth"} <= {w.field for w in got.warnings if "beyond" in w.message}


@pytest.mark.parametrize(
    ("data", "error", "words"),
    [
        (b"{not json", MalformedFileError, "not valid JSON"),
        (b"[1, 2]", NotALorebookError, "list"),
        ({"hello": 1}, NotALorebookError, "entries"),
        ({"entries": "x"}, NotALorebookError, "entries"),
        ({"spec": "chara_card_v2", "data": {"name": "A"}}, UnsupportedFormatError, "character_book"),
        (b"\x89PNG\r\n\x1a\n", MalformedFileError, "IEND"),
        (png({}), UnsupportedFormatError, "chara"),
        (png({})[:30], MalformedFileError, "truncated"),
        ({"entries": {str(2**60): {"uid": 2**60, "content": "x"}}}, MalformedFileError, "no usable uid"),
        ({"entries": {"²": {"content": "x"}}}, MalformedFileError, "no usable uid"),  # a digit int() refuses
    ],
)
def test_bad_files_raise_typed_errors_naming_the_problem(data, error, words) -> None:
    with pytest.raises(error, match=words):
        import_lorebook(data)
