"""One mapping between models that share field names (a command and its event, a log event and its view).

``mapped(Target, source, **given)`` builds ``Target`` from ``source``'s attributes named like ``Target``'s
fields, ``given`` adding or overriding fields. It replaces the field-by-field copies (``x=source.x`` for each
field) that every hop between the wire, the log and the read models wrote out again: where the names agree the
copy is implied, and only what differs is written, so the differences are what a reader sees.

The target is validated by pydantic (a model by ``model_validate``, a dataclass by a ``TypeAdapter``), so
values are coerced to the declared field types (a list to a tuple and back, each a copy of the source's) and
a wrong one raises ``ValidationError`` like the model's own constructor. A source attribute the target does not
declare is ignored, and a target field the source lacks keeps its default (or must be given).
"""

from __future__ import annotations

import dataclasses
from typing import Any, TypeVar

from pydantic import BaseModel, TypeAdapter

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
    return _adapter(target).validate_python(values)


_ADAPTERS: dict[type[Any], TypeAdapter[Any]] = {}  # built once per dataclass: building one compiles a validator


def _adapter(target: type[T]) -> TypeAdapter[T]:
    if (adapter := _ADAPTERS.get(target)) is None:
        adapter = _ADAPTERS[target] = TypeAdapter(target)
    return adapter
