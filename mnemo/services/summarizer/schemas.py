"""What the summarizer's prompts ask the model to return, validated on receipt.

The JSON Schema of each model is sent to the provider (see ``json_schema``); the validators below check what
a schema cannot express, and a failure there triggers the adapter's one correction retry like any other
schema violation.
"""

from __future__ import annotations

from pydantic import Field, field_validator

from mnemo.shared.llm.output import LLMOutput


class SummaryOutput(LLMOutput):
    """A summary of one span of conversation."""  # sent to the model as the schema description

    summary: str = Field(description="about 120 words, third person, past tense")
    importance: int = Field(ge=1, le=10, description="1 = small talk, 10 = life-changing for the characters")
    emotional_context: str = Field(description="the prevailing mood and how it shifted, one sentence")

    @field_validator("summary")
    @classmethod
    def _not_blank(cls, value: str) -> str:
        if not value:
            raise ValueError("summary must not be empty")
        return value
