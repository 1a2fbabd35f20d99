"""Who may write and who may see a memory of an ``owner_namespace``: the memory API's guardrail, in one place.

Namespaces: ``player:<user_id>`` (a player's own), ``campaign:<campaign_id>`` (a shared world),
``character:<bot_id>`` (what one character knows in every conversation). A memory may also name the
character who knows it (``bot_id``): then only that character is shown it.

Writing (remember, update, forget; :func:`write_refusal`): ``player:<u>`` only by a call acting for ``u``;
``campaign:`` and ``character:`` only with the engine's right (a game engine or game master's tool), which is
a subject (``mnemo.rpc.memory.engine.<verb>.v1``) granted per NATS user or API key (docs/memory-api.md). Nobody
writes another player's namespace, the engine included: it acts for that player by naming them as the user.

Seeing (search and context assembly; :class:`Viewer`): a viewer is a user of a tenant, optionally as one
character (``bot_id``: the speaking bot of a context) and in some campaigns (those a context or a search
names: the platform vouches for membership, as for ``campaign_id`` in a context). It sees its own
``player:<user>`` namespace (as a character: only what is for everyone or for that character), the named
campaigns' memories that are for everyone or for its character, and ``character:<bot>`` only as that bot.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from mnemo.shared.events.recorded import EVERYONE
from mnemo_client.wire.memory_api_contract import namespace_kind

__all__ = ["EVERYONE", "Viewer", "memory_audience", "player", "read_refusal", "write_refusal"]


def player(user_id: str) -> str:
    return f"player:{user_id}"


def write_refusal(namespace: str, user_id: str, *, engine: bool) -> str | None:
    """Why a call acting for ``user_id`` (with or without the engine's right) may not write ``namespace``;
    None when it may."""
    kind, owner = namespace_kind(namespace)
    if kind == "player":
        if owner != user_id:
            return (
                f"`{namespace}` is another player's namespace: a call acting for {user_id!r} writes `player:{user_id}`"
            )
        return None
    if not engine:
        return (
            f"writing `{namespace}` takes the engine's right: call mnemo.rpc.memory.engine.<verb>.v1 "
            "(granted per NATS user or API key, docs/memory-api.md)"
        )
    return None


def read_refusal(namespace: str, user_id: str, bot_id: str | None) -> str | None:
    """Why a search acting for ``user_id`` (as ``bot_id``) may not name ``namespace``; None when it may."""
    kind, owner = namespace_kind(namespace)
    if kind == "player" and owner != user_id:
        return f"`{namespace}` is another player's namespace"
    if kind == "character" and owner != bot_id:
        return f"`{namespace}` is searched as that character: give bot_id {owner!r}"
    return None


def memory_audience(bot_id: str | None) -> list[str]:
    """Who may be shown a memory: its character, or everyone who sees the namespace."""
    return [bot_id] if bot_id else [EVERYONE]


@dataclass(frozen=True)
class Viewer:
    """Who is looking: a user of a tenant, maybe as one character, in the campaigns named."""

    tenant_id: str
    user_id: str
    bot_id: str | None = None
    campaigns: tuple[str, ...] = ()

    def namespaces(self) -> list[str]:
        """Every namespace this viewer sees (its own, its campaigns', its character's)."""
        out = [player(self.user_id), *(f"campaign:{c}" for c in self.campaigns)]
        if self.bot_id is not None:
            out.append(f"character:{self.bot_id}")
        return list(dict.fromkeys(out))

    def audiences(self, namespace: str) -> tuple[str, ...] | None:
        """The ``audience`` values a memory of ``namespace`` may carry to be shown to this viewer (None: any,
        the viewer's own namespace seen as no character); ``()`` when it sees nothing of that namespace."""
        if namespace not in self.namespaces():
            return ()
        if self.bot_id is not None:
            return (self.bot_id, EVERYONE)
        # One of this viewer's own namespaces, built here: its kind is its prefix. Not parsed again, since a
        # user id the contract allows (any 1-256 characters, " " too) need not make a namespace a caller may name.
        return None if namespace.startswith("player:") else (EVERYONE,)

    def sees(self, namespace: str, audience: Sequence[str]) -> bool:
        """Whether a memory of ``namespace`` for ``audience`` is shown to this viewer (read-side check, after the
        vector filter applied the same rule)."""
        allowed = self.audiences(namespace)
        if allowed is None:
            return True
        return bool(set(allowed) & set(audience or (EVERYONE,)))
