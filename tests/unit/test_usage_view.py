"""``mnemo status --usage --growth-days N``'s table: each tenant's memory types, held now and added in the window,
and its vector points per kind (what the operators' usage report carries with ``growth_days``)."""

from __future__ import annotations

from rich.console import Console

from mnemo.runtime import views
from mnemo_client.wire.ops_contract import UsageReply


def test_the_usage_table_shows_each_tenants_growth_per_type() -> None:
    reply = UsageReply.model_validate(
        {
            "tenants": [
                {
                    "tenant_id": "t1",
                    "messages": 12,
                    "vectors": 20,
                    "memory_types": [
                        {
                            "source": "message",
                            "type": "message",
                            "held": 12,
                            "added": [{"day": "2026-11-26", "added": 5}],
                        },
                        {"source": "knowledge", "type": "semantic", "held": 3, "added": []},
                    ],
                    "vectors_by_kind": {"message": 17, "fact": 3, "summary": 0},
                },
                {"tenant_id": "t2", "messages": 0, "vectors": 0},
            ],
            "total": 2,
            "growth_since": "2026-11-20",
        }
    ).model_dump(mode="json")
    console = Console(record=True, width=160)
    views.usage(console, reply)
    out = console.export_text()
    assert "t1: memory growth since 2026-11-20" in out
    assert "2026-11-26 (+5)" in out
    assert "semantic" in out
    assert "vector points: message 17, fact 3" in out
    assert "t2: memory growth" not in out  # a tenant that holds nothing has no growth table
