"""One mapping between models that share field names (a command and its event, a log event and its view).

``mapped(Target, source, **given)`` builds ``Target`` from ``source``'s attributes named like ``Target``'s
fields, ``given`` adding or overriding fields. It replaces the field-by-field copies (``x=source.x`` for each
field) that every hop between the wire, the log and the read models wrote out again: where the names agree the
copy is implied, and only what differs is written, so the differences are what a reader sees.

A pydantic target is validated (``model_validate``), so sequences are coerced to the field's type (a tuple to
a list, and back); a dataclass target gets the values as they are. A source attribute the target does not
declare is ignored, and a target field the source lacks keeps its default (or must be given).
"""

from __future__ import annotations

import dataclasses
from typing import Any, TypeVar

from pydantic import BaseModel

T = TypeVar("T")


def field_names(target: type[Any]) -> tuple[str, ...]:
    """The names a pydantic model or a dataclass is built from."""
    if isinstance(target, type) and issubclass(target, BaseModel):
        return tuple(target.model_fields)
    if dataclasses.is_dataclass(target):
        return tuple(f.name for f in dataclasses.fields(target) if f.init)
    raise TypeError(f"{target.__name__} is neither a pydantic model nor a dataclass")


def mapped(target: type[T], source: object, /, **given: Any) -> T:
    """``target`` from ``source``'s same-named attributes, ``given`` adding or overriding fields."""
    values = {
        name: getattr(source, name) for name in field_names(target) if name not in given and hasattr(source, name)
    }
    values.update(given)
    if issubclass(target, BaseModel):
        return target.model_validate(values)
    return target(**values)
