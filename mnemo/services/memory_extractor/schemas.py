"""What the knowledge prompts ask the model to return, validated on receipt.

The JSON Schema of each model is sent to the provider (see ``json_schema``); the validators below check what
a schema cannot express, and a failure there triggers the adapter's one correction retry like any other
schema violation. Whether ``character_id`` values name characters that were actually present is the
caller's check: only the caller knows who was there.
"""

from __future__ import annotations

from pydantic import Field, field_validator

from mnemo.shared.llm.output import LLMOutput


class CharacterKnowledge(LLMOutput):
    character_id: str = Field(description="an id from the list of characters present")
    learned_facts: list[str] = Field(description="short standalone statements this character now knows")

    @field_validator("character_id")
    @classmethod
    def _id_not_blank(cls, value: str) -> str:
        if not value:
            raise ValueError("character_id must not be empty")
        return value

    @field_validator("learned_facts")
    @classmethod
    def _drop_blank_facts(cls, facts: list[str]) -> list[str]:
        return [fact.strip() for fact in facts if fact.strip()]


class KnowledgeUpdates(LLMOutput):
    """Per character present, what they learned in the span."""  # sent to the model

    updates: list[CharacterKnowledge]
