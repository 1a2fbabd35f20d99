"""The base of what a prompt asks a chat model to return (each service's ``schemas.py`` derives from it)."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict


class LLMOutput(BaseModel):
    """Frozen, unknown keys ignored (a model may add some), strings stripped: what a reply is validated as."""

    model_config = ConfigDict(frozen=True, extra="ignore", str_strip_whitespace=True)
