"""Whom an agent's tools act for: one tenant and user (and optionally one character and some campaigns), fixed
by the operator's configuration, never by the model. The section ``agent`` of the settings tree
(``MNEMO_AGENT__<KEY>``) holds it; `mnemo mcp` and `mnemo tools` flags override it."""

from __future__ import annotations

from dataclasses import dataclass

from pydantic import BaseModel, ConfigDict, Field

SECTION = "agent"


class AgentSettings(BaseModel):
    """Section ``agent``: ``MNEMO_AGENT__TENANT_ID``, ``MNEMO_AGENT__USER_ID``, ..."""

    model_config = ConfigDict(frozen=True)

    tenant_id: str | None = Field(None, description="`mnemo mcp`: the tenant its tools act in (required)")
    user_id: str | None = Field(None, description="`mnemo mcp`: the user its tools act for (required)")
    bot_id: str | None = Field(
        None, description="`mnemo mcp`: the character the agent plays: searches as it, memories known by it"
    )
    campaign_ids: list[str] = Field(
        default_factory=list, description='`mnemo mcp`: campaigns it may search (JSON list, e.g. `["kestrel"]`)'
    )
    engine: bool = Field(
        False,
        description="`mnemo mcp`: write with the engine's right (its campaigns' and character's namespaces; the "
        "NATS user must hold it, e.g. `platform`)",
    )
    request_timeout_s: float = Field(30.0, gt=0, description="`mnemo mcp`: how long a tool call waits for mnemo")
    http_host: str = Field("127.0.0.1", description="`mnemo mcp --http`: the address it listens on")
    http_port: int = Field(8765, ge=0, le=65535, description="`mnemo mcp --http`: its port")


@dataclass(frozen=True)
class Binding:
    """The scope every tool call runs in: the model names none of it."""

    tenant_id: str
    user_id: str
    bot_id: str | None = None
    campaign_ids: tuple[str, ...] = ()
    engine: bool = False

    def __post_init__(self) -> None:
        for name in ("tenant_id", "user_id"):
            if not getattr(self, name):
                raise ValueError(f"an agent binding needs a {name} (flag or MNEMO_AGENT__{name.upper()})")

    @property
    def own(self) -> str:
        return f"player:{self.user_id}"

    @property
    def readable(self) -> tuple[str, ...]:
        """The namespaces a search may name: the user's own, the bound campaigns, the bound character's."""
        character = (f"character:{self.bot_id}",) if self.bot_id else ()
        return (self.own, *(f"campaign:{c}" for c in self.campaign_ids), *character)

    @property
    def writable(self) -> tuple[str, ...]:
        """The namespaces a write may target: the user's own; with the engine's right every readable one."""
        return self.readable if self.engine else (self.own,)
