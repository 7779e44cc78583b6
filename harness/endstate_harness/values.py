"""Plain values standing for pydantic models: the task's parts and a grader's verdict.

Why: importing pydantic and building a model costs ~0.1 s before anything is validated, and a
one-check prove is about one bare run of a task's tests (issue 48): loading the task and
reading the judge's report were most of its start. A :class:`Value` class names its pydantic
model (same name, in ``_model_module``), which stays the one source of truth for what is
valid and what an error says. Data the class's plain check (``_plain``) is sure of is taken
as it is; anything else goes through the model, whose ``ValidationError`` is raised as it is
and whose reading of the data (its coercions, its validators) is what the value then holds.
So a wrong plain check can only cost time, never change an answer; a differential test per
module holds the plain checks and the fields to the models.
"""

from __future__ import annotations

import importlib
from collections.abc import Iterator
from typing import Any, ClassVar, Self

REQUIRED: Any = object()
"""A field without a default (in ``_defaults``)."""


class Value:
    """The part of pydantic's interface callers use: construction by keywords (checked),
    ``model_validate``, ``model_dump``, ``model_copy``, iteration over ``(field, value)``,
    equality and a repr."""

    _defaults: ClassVar[dict[str, Any]] = {}
    """Every field and its default (:data:`REQUIRED`: none; a class or a callable: called for
    a fresh one), in the model's order."""
    _aliases: ClassVar[dict[str, str]] = {}
    """Field name -> its key in the data, where the two differ."""
    _model_module: ClassVar[str] = ""
    """The module of the pydantic model of the same name."""

    def __init__(self, **data: Any) -> None:
        self.__dict__.update(self._build(self._validated(data)).__dict__)

    @classmethod
    def _plain(cls, data: Any) -> bool:
        """True only for data the model accepts as it is (no coercion, no validator changes
        it beyond :meth:`_convert`); False sends it to the model."""
        return False

    @classmethod
    def _validated(cls, data: Any) -> Any:
        if cls._plain(data):
            return data
        # deferred: the pydantic model, only for what the plain check is not sure of
        model = getattr(importlib.import_module(cls._model_module), cls.__name__)
        return model.model_validate(_as_data(data)).model_dump(by_alias=True)

    @classmethod
    def model_validate(cls, data: Any) -> Self:
        """The value of ``data`` (itself when it is one); pydantic's ``ValidationError`` when
        the model refuses it."""
        if isinstance(data, cls):
            return data
        return cls._build(cls._validated(data))

    @classmethod
    def _build(cls, data: dict[str, Any]) -> Self:
        """The value of ``data``, which the model accepts (no check here)."""
        value = cls.__new__(cls)
        for name, default in cls._defaults.items():
            key = cls._aliases.get(name, name)
            if key in data:
                value.__dict__[name] = cls._convert(name, data[key])
            elif default is REQUIRED:
                raise TypeError(f"{cls.__name__}: {key} is required")
            else:
                value.__dict__[name] = default() if callable(default) else default
        return value

    @classmethod
    def _convert(cls, name: str, raw: Any) -> Any:
        """A field's value from accepted data (a nested part becomes its value)."""
        return raw

    def model_dump(
        self, *, by_alias: bool = False, exclude_none: bool = False,
        exclude_defaults: bool = False,
    ) -> dict[str, Any]:
        """The fields as plain data, as pydantic's ``model_dump`` gives them."""
        flags = {"by_alias": by_alias, "exclude_none": exclude_none,
                 "exclude_defaults": exclude_defaults}  # fmt: skip
        out: dict[str, Any] = {}
        for name, default in self._defaults.items():
            value = self.__dict__[name]
            if exclude_none and value is None:
                continue
            if exclude_defaults and default is not REQUIRED and value == (
                default() if callable(default) else default
            ):
                continue
            if isinstance(value, Value):
                value = value.model_dump(**flags)
            elif isinstance(value, list):
                value = [v.model_dump(**flags) if isinstance(v, Value) else v for v in value]
            elif isinstance(value, dict):
                value = dict(value)
            out[self._aliases.get(name, name) if by_alias else name] = value
        return out

    def model_copy(self, *, update: dict[str, Any] | None = None) -> Self:
        """A shallow copy with ``update``'s fields replaced (unchecked, as pydantic's)."""
        value = type(self).__new__(type(self))
        value.__dict__.update(self.__dict__)
        value.__dict__.update(update or {})
        return value

    @classmethod
    def __get_pydantic_core_schema__(cls, _source: Any, handler: Any) -> Any:
        """As a field of a pydantic model (``TaskResult.checks``): validated by the model of
        the same name into this value (one of them kept as it is), dumped as its data."""
        # deferred: only a pydantic model that has this value as a field asks, pydantic loaded
        from pydantic_core import core_schema

        model = getattr(importlib.import_module(cls._model_module), cls.__name__)

        def validate(value: Any, inner: Any) -> Any:
            if isinstance(value, cls):
                return value
            return cls._build(inner(_as_data(value)).model_dump(by_alias=True))

        return core_schema.no_info_wrap_validator_function(
            validate, handler.generate_schema(model),
            serialization=core_schema.plain_serializer_function_ser_schema(
                lambda value: value.model_dump(by_alias=True) if isinstance(value, Value)
                else value),
        )

    def __iter__(self) -> Iterator[tuple[str, Any]]:
        """``(field, value)`` pairs, as iterating a pydantic model gives them."""
        return iter(list(self.__dict__.items()))

    def __eq__(self, other: object) -> bool:
        if type(other) is not type(self):
            return NotImplemented
        return self.__dict__ == other.__dict__

    __hash__ = None  # type: ignore[assignment]  # mutable, like the model

    def __repr__(self) -> str:
        fields = ", ".join(f"{k}={v!r}" for k, v in self.__dict__.items())
        return f"{type(self).__name__}({fields})"


def _as_data(data: Any) -> Any:
    """``data`` with every value in it as plain data, for the model to validate."""
    if isinstance(data, Value):
        return data.model_dump(by_alias=True)
    if isinstance(data, dict):
        return {k: _as_data(v) for k, v in data.items()}
    if isinstance(data, list):
        return [_as_data(v) for v in data]
    return data
