"""Every real file in ../shared/fixtures/lorebooks imports with the warnings the spec predicts and exports to a
file that imports back to the same entries."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from mnemo.services.lore.formats.exporter import export_world_info
from mnemo.services.lore.formats.importer import import_lorebook

FILES = {
    "st-wi_date-a-live_v12.0.0.json": ("sillytavern", 107),
    "st-wi_honkai-impact-3rd.json": ("sillytavern", 116),
    "st-wi_monster-hunter_with-originalData.json": ("sillytavern", 387),
    "chub-wi_lythora-station.json": ("chub", 8),
    "st-wi_tarot_zh.json": ("sillytavern", 9),
    "card-v2-png_sakana.png": ("card", 14),
}


@pytest.fixture
def lorebooks(shared_dir: Path) -> Path:
    path = shared_dir / "fixtures" / "lorebooks"
    if not path.exists():
        pytest.skip(f"needs the lorebook fixtures at {path}")
    return path


@pytest.mark.parametrize("name", sorted(FILES))
def test_imports_and_round_trips(lorebooks: Path, name: str) -> None:
    fmt, count = FILES[name]
    result = import_lorebook((lorebooks / name).read_bytes(), name=name)
    assert (result.format, len(result.book.entries)) == (fmt, count)
    exported = json.loads(json.dumps(export_world_info(result.book, result.original)))
    again = import_lorebook(exported, name=name)
    assert again.book.entries == result.book.entries


def test_lythora_position_10_is_the_only_warning(lorebooks: Path) -> None:
    result = import_lorebook((lorebooks / "chub-wi_lythora-station.json").read_bytes())
    assert [(w.uid, w.field) for w in result.warnings] == [(3, "position")]
    entry = next(e for e in result.book.entries if e.uid == 3)
    assert entry.position == 10
    assert "10" in result.warnings[0].message


def test_clean_st_books_import_without_warnings(lorebooks: Path) -> None:
    for name in ("st-wi_date-a-live_v12.0.0.json", "st-wi_honkai-impact-3rd.json", "st-wi_tarot_zh.json"):
        assert import_lorebook((lorebooks / name).read_bytes()).warnings == []


def test_fixture_facts_survive_normalisation(lorebooks: Path) -> None:
    hi3 = import_lorebook((lorebooks / "st-wi_honkai-impact-3rd.json").read_bytes()).book
    assert sum(e.activation_mode == "hybrid" for e in hi3.entries) == 104
    mh = import_lorebook((lorebooks / "st-wi_monster-hunter_with-originalData.json").read_bytes())
    assert sum(1 for e in mh.book.entries if e.keysecondary) == 17
    assert "originalData" in export_world_info(mh.book, mh.original)
    card = import_lorebook((lorebooks / "card-v2-png_sakana.png").read_bytes()).book
    assert card.name == "Sakana-WI"
    assert all(e.position == 1 for e in card.entries)


def test_tarot_whole_words_on_cjk_acts_like_substring(lorebooks: Path) -> None:
    from tests.context_assembler.unit.activation_helpers import scan

    tarot = import_lorebook((lorebooks / "st-wi_tarot_zh.json").read_bytes()).book
    keyed = {e.uid for e in tarot.entries if not e.constant and not e.disable and e.key}
    assert keyed, "the tarot book has keyed entries"
    text = "我想试试" + "和".join(next(e for e in tarot.entries if e.uid == uid).key[0] for uid in keyed) + "吧"
    result = scan(tarot, [text], settings={"match_whole_words": True})
    assert {e.entry.uid for e in result.entries} >= keyed
