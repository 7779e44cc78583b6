"""What the holdout holds in the judge for an object of the code under test: a proxy.

Why its own module: :mod:`endstate_harness.graders.judge.remote` moves requests and values;
this module decides what a proxy answers *itself* and what it asks the child. The rule is
that no verdict rests on the agent's operators:

* asked of the child, and allowed: attributes, calls, ``str``/``repr``/``format``, ``len``,
  ``int``/``float``/``index``, iteration and indexing (values come out; no value of the
  judge's goes into an operator whose answer decides anything);
* answered here: equality is identity (never the child's ``__eq__``), the hash is the
  proxy's own;
* refused (:class:`PlainValuesOnly`, with what to write instead): truth, membership and
  ordering, which would be the agent's answer to the judge's question, and an arithmetic
  operator that gives back plain data (``ref - 21.0`` returning ``0.0`` is how
  ``assertAlmostEqual`` would be answered by the agent). One that gives back another object
  of the package is allowed, so a holdout can still exercise ``Money(5) + Money(3)`` and
  compare ``str()`` of the result.

Assertions whose operands hold a proxy are refused too, by
:mod:`endstate_harness.graders.judge.assertions`. Module data attributes (``__all__``,
``__version__``…, :data:`MODULE_DATA`) and ``__doc__``/``__name__``/``__qualname__`` cross as
values; other dunders do not (lint reports reading them as ES508).
"""

from __future__ import annotations

import types
from typing import Any


class BoundaryError(TypeError):
    """The holdout asked for something that cannot cross to the code under test."""


class RemoteError(Exception):
    """An exception of the child that the judge does not mirror as itself (SystemExit, …)."""


class PlainValuesOnly(BaseException):
    """The holdout let an object of the code under test decide a verdict: compare plain
    values instead. A ``BaseException`` so that no ``except Exception`` in a test (or an
    ``assertRaises(TypeError)``) can turn the refusal into a pass; unittest records it."""


PLAIN_VALUES_FIX = (
    "compare plain values instead: str(x), len(x), an attribute or a method that returns "
    "plain data (x.amount, x.to_dict()), list(x), or json.dumps of those"
)
"""The advice every refusal ends with (lint's ES508 gives the same)."""

ALLOWED = frozenset({
    "assertIs", "assertIsNot", "assertIsNone", "assertIsNotNone", "assertIsInstance",
    "assertNotIsInstance", "assertRaises", "assertRaisesRegex", "assertRaisesRegexp",
    "failUnlessRaises", "assertWarns", "assertWarnsRegex", "assertLogs", "assertNoLogs",
    "fail",
})  # fmt: skip
"""The TestCase assertions decided by the judge alone whatever their operands: identity,
type, and the context managers (what is raised, warned or logged). The judge refuses a
reference among the operands of every other one (:mod:`.assertions`)."""

MODULE_DATA = frozenset({
    "__all__", "__version__", "__version_info__", "__author__", "__author_email__",
    "__email__", "__license__", "__copyright__", "__credits__", "__maintainer__",
    "__status__", "__date__", "__title__", "__summary__", "__url__", "__uri__",
    "__description__",
})  # fmt: skip
"""Dunder attributes of a module that are data: the judge reads them from the child (like any
constant of the module). Every other dunder of the package stays on its side (``__file__``,
``__path__``, ``__dict__``, ``__spec__``: what they say is about the sandbox's files)."""

OBJECT_DATA = frozenset({"__doc__", "__name__", "__qualname__"})
"""Dunder attributes of the package's objects (functions, classes, instances) read from the
child; ``__doc__`` of a module too."""


def refuse(what: str, value: Any) -> PlainValuesOnly:
    """The refusal for ``what`` (e.g. "truth (bool)") applied to ``value``, a proxy."""
    return PlainValuesOnly(
        f"{what} of {_describe(value)} would be decided by the code under test's own "
        f"operators, so the judge does not ask it: {PLAIN_VALUES_FIX}"
    )


def _describe(value: Any) -> str:
    kind = type(value)
    return f"an object of the code under test ({kind.__module__}.{kind.__name__})"


def is_reference(value: Any) -> bool:
    """Whether ``value`` stands for something of the child: a proxy object, module or class,
    or an exception the child raised."""
    return (
        isinstance(value, Remote | RemoteModule)
        or isinstance(value, RemoteMeta)
        or isinstance(type(value), RemoteMeta)
    )


def _conv(obj: Any) -> Any:
    return object.__getattribute__(obj, "_judge_conv")


def exception_getattr(self: BaseException, name: str) -> Any:
    """``__getattr__`` of mirrored exceptions: attributes of the child's exception object."""
    if (name.startswith("__") and name not in OBJECT_DATA) or name.startswith("_judge"):
        raise AttributeError(name)
    number = self.__dict__.get("_judge_ref")
    if number is None:
        raise AttributeError(name)
    return type(self)._judge_cls_conv.getattr(number, name)  # type: ignore[attr-defined]


class RemoteMeta(type):
    """Metaclass of proxy classes: class attributes and construction go to the child."""

    def __getattr__(cls, name: str) -> Any:
        if (name.startswith("__") and name not in OBJECT_DATA) or name.startswith("_judge"):
            raise AttributeError(name)
        return cls._judge_cls_conv.getattr(cls._judge_class, name)  # type: ignore[attr-defined]

    def __call__(cls, *args: Any, **kwargs: Any) -> Any:
        return cls._judge_cls_conv.call(cls._judge_class, args, kwargs)  # type: ignore[attr-defined]

    def __setattr__(cls, name: str, value: Any) -> None:
        raise BoundaryError(
            f"cannot assign {name!r} on {cls.__name__} of the code under test: monkeypatching "
            "the package does not cross the judge's boundary; test its behaviour instead"
        )

    def __repr__(cls) -> str:
        return f"<remote class {cls.__module__}.{cls.__name__}>"

    @property
    def __doc__(cls) -> Any:  # type: ignore[override]
        number = cls.__dict__.get("_judge_class")
        if number is None:
            return cls.__dict__.get("__doc__")
        return cls._judge_cls_conv.getattr(number, "__doc__")  # type: ignore[attr-defined]


class RemoteExceptionMeta(RemoteMeta):
    """Metaclass of proxy exception classes: constructed here when the child raises; calling
    one from the holdout still builds the exception in the child."""


def _arith(op: str, symbol: str) -> Any:
    """An arithmetic operator of proxies: asked of the child, allowed when the answer is
    another object of the package, refused when it is plain data."""

    def method(self: Remote, *other: Any) -> Any:
        result = _conv(self).apply(op, self, *other)
        if not is_reference(result):
            raise PlainValuesOnly(
                f"{symbol} on {_describe(self)} gave back {type(result).__name__}, computed "
                "by the code under test's own operator from the judge's operand (that is how "
                f"assertAlmostEqual would be answered); {PLAIN_VALUES_FIX}"
            )
        return result

    method.__name__ = f"__{op}__"
    return method


def _refused(what: str) -> Any:
    def method(self: Remote, *other: Any) -> Any:
        raise refuse(what, self)

    return method


class Remote:
    """An object that lives in the child. See the module docstring for what is forwarded."""

    __slots__ = ("__weakref__", "_judge_conv", "_judge_ref")

    def __getattr__(self, name: str) -> Any:
        if (name.startswith("__") and name not in OBJECT_DATA) or name.startswith("_judge"):
            raise AttributeError(name)
        return _conv(self).getattr(self._judge_ref, name)

    @property
    def __doc__(self) -> Any:  # type: ignore[override]
        return _conv(self).getattr(self._judge_ref, "__doc__")

    def __setattr__(self, name: str, value: Any) -> None:
        conv = _conv(self)
        conv.request(
            "setattr", obj={"T": "ref", "id": self._judge_ref}, name=name,
            value=conv.encode_arg(value),
        )

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return _conv(self).call(self._judge_ref, args, kwargs)

    def __eq__(self, other: object) -> bool:
        return self is other

    def __ne__(self, other: object) -> bool:
        return self is not other

    def __hash__(self) -> int:
        return object.__hash__(self)  # the judge's own: the child cannot choose it

    def __repr__(self) -> str:
        try:
            text = _string(_conv(self).apply("repr", self))
        except Exception:
            text = "?"
        return f"<remote {type(self).__name__} {text[:300]}>"

    def __str__(self) -> str:
        return _string(_conv(self).apply("str", self))

    def __format__(self, spec: str) -> str:
        return _string(_conv(self).apply("format", self, spec))

    def __len__(self) -> int:
        return _exact(_conv(self).apply("len", self), int, "len()")  # type: ignore[no-any-return]

    def __int__(self) -> int:
        return _exact(_conv(self).apply("int", self), int, "int()")  # type: ignore[no-any-return]

    def __index__(self) -> int:
        return _exact(_conv(self).apply("index", self), int, "index()")  # type: ignore[no-any-return]

    def __float__(self) -> float:
        return _exact(_conv(self).apply("float", self), float, "float()")  # type: ignore[no-any-return]

    def __iter__(self) -> Any:
        return _conv(self).apply("iter", self)

    def __next__(self) -> Any:
        return _conv(self).apply("next", self)

    def __reversed__(self) -> Any:
        return _conv(self).apply("reversed", self)

    def __getitem__(self, key: Any) -> Any:
        return _conv(self).apply("getitem", self, key)

    def __setitem__(self, key: Any, value: Any) -> None:
        _conv(self).apply("setitem", self, key, value)

    def __delitem__(self, key: Any) -> None:
        _conv(self).apply("delitem", self, key)

    def __enter__(self) -> Any:
        return _conv(self).apply("enter", self)

    def __exit__(self, *exc: Any) -> Any:
        return _conv(self).apply("exit", self, None, None, None)

    __bool__ = _refused("truth (bool, if, assertTrue)")
    __contains__ = _refused("membership (in)")
    __lt__ = _refused("ordering (<)")
    __le__ = _refused("ordering (<=)")
    __gt__ = _refused("ordering (>)")
    __ge__ = _refused("ordering (>=)")
    __add__ = _arith("add", "+")
    __sub__ = _arith("sub", "-")
    __mul__ = _arith("mul", "*")
    __truediv__ = _arith("truediv", "/")
    __floordiv__ = _arith("floordiv", "//")
    __mod__ = _arith("mod", "%")
    __neg__ = _arith("neg", "unary -")
    __abs__ = _arith("abs", "abs()")


def _exact(value: Any, kind: type, what: str) -> Any:
    if type(value) is not kind:
        raise BoundaryError(f"{what} of an object of the code under test returned "
                            f"{type(value).__name__}, not {kind.__name__}")
    return value


def _string(value: Any) -> str:
    return _exact(value, str, "str()")  # type: ignore[no-any-return]


class RemoteModule(types.ModuleType):
    # A module of the code under test, seen from the judge: attributes come from the child.
    # (No docstring: ``__doc__`` is the module's own, read from the child.)

    def __init__(self, name: str, conv: Any, ref: int) -> None:
        super().__init__(name)
        object.__setattr__(self, "_judge_conv", conv)
        object.__setattr__(self, "_judge_ref", ref)

    @property
    def __doc__(self) -> Any:  # type: ignore[override]
        return self._remote("__doc__")

    def _remote(self, name: str) -> Any:
        return object.__getattribute__(self, "_judge_conv").getattr(
            object.__getattribute__(self, "_judge_ref"), name
        )

    def __getattr__(self, name: str) -> Any:
        if (name.startswith("__") and name not in MODULE_DATA) or name.startswith("_judge"):
            raise AttributeError(name)
        return self._remote(name)

    def __setattr__(self, name: str, value: Any) -> None:
        # The import system binds submodules and its own dunders; anything else is a patch.
        if name.startswith("__") or isinstance(value, RemoteModule):
            object.__setattr__(self, name, value)
            return
        raise BoundaryError(
            f"cannot assign {name!r} on module {self.__name__} of the code under test: "
            "monkeypatching (mock.patch, assignment) does not cross the judge's boundary; "
            "test the package's behaviour through its inputs instead"
        )
