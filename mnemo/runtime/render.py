"""Human-readable rendering of a context reply for the terminal."""

from __future__ import annotations

from typing import Any


def render_reply(reply: dict[str, Any]) -> str:
    if "error" in reply:
        return f"error: {reply['error']}"
    lines = [f"context ({reply.get('token_count')} tokens, degraded: {reply.get('degraded') or 'none'})", ""]
    for section in reply.get("sections", []):
        lines.append(f"--- {section['name']} ({section['tokens']} tokens) ---")
        lines.append(section["text"])
        lines.append("")
    scored = [s for s in reply.get("sources", []) if s.get("score") is not None]
    if scored:
        lines.append("retrieved sources:")
        lines.extend(f"  {s.get('exact_kind') or s['kind']:<8} {s['id']}  score {s['score']:.2f}" for s in scored)
    lore = [s for s in reply.get("sources", []) if s.get("kind") == "lore" and not s.get("exact_kind")]
    if lore:
        lines.append("lore fired:")
        lines.extend(f"  {s['id']}  {s.get('detail') or ''}" for s in lore)
    return "\n".join(lines)
