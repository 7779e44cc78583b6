"""The judge's side of the boundary: proxies for the code under test, which lives elsewhere."""

from __future__ import annotations

import builtins
import os
import select
import time
import types
from collections.abc import Sequence
from typing import Any

from endstate_harness.graders.judge.wire import (
    MAX_MESSAGE_BYTES,
    WireError,
    decode,
    dumps,
    encode,
    loads,
)


class BoundaryError(TypeError):
    """The holdout asked for something that cannot cross to the code under test."""


class ChildGone(RuntimeError):
    """The child process exited, crashed, hung or broke the protocol."""


class RemoteError(Exception):
    """An exception of the child that the judge does not mirror as itself (SystemExit, …)."""


_MIRRORED_BUILTINS = {
    name: obj
    for name, obj in vars(builtins).items()
    if isinstance(obj, type)
    and issubclass(obj, Exception)
    and not issubclass(obj, Warning)
}
"""Builtin exception classes a child's exception may be mirrored onto (all ``Exception``
subclasses but warnings; never ``SystemExit``/``KeyboardInterrupt``/``GeneratorExit``)."""


class Conversation:
    """Requests to the child over this process's stdin/stdout, one at a time, with a deadline."""

    def __init__(self, rfd: int, wfd: int, deadline: float, call_timeout_s: float) -> None:
        self.rfd = rfd
        self.wfd = wfd
        self.deadline = deadline
        self.call_timeout_s = call_timeout_s
        self.next_id = 0
        self.buffer = b""
        self.gone: str | None = None
        self.objects: dict[int, Any] = {}
        self.classes: dict[int, type] = {}

    # --- transport --------------------------------------------------------------------

    def _fail(self, why: str) -> ChildGone:
        self.gone = self.gone or why
        return ChildGone(self.gone)

    def _readline(self) -> bytes:
        limit = min(self.deadline, time.monotonic() + self.call_timeout_s)
        while b"\n" not in self.buffer:
            remaining = limit - time.monotonic()
            if remaining <= 0:
                raise self._fail("the code under test did not answer in time (hang or timeout)")
            ready, _, _ = select.select([self.rfd], [], [], remaining)
            if not ready:
                continue
            data = os.read(self.rfd, 1 << 16)
            if not data:
                raise self._fail("the process running the code under test ended")
            self.buffer += data
            if len(self.buffer) > MAX_MESSAGE_BYTES:
                raise self._fail("the code under test sent an oversized message")
        line, _, self.buffer = self.buffer.partition(b"\n")
        return line

    def request(self, op: str, **fields: Any) -> Any:
        """Send one request and return its decoded answer (or raise what the child raised)."""
        if self.gone:
            raise ChildGone(self.gone)
        self.next_id += 1
        rid = self.next_id
        message = {"id": rid, "op": op, **fields}
        try:
            os.write(self.wfd, dumps(message))
        except OSError:
            raise self._fail("the process running the code under test ended") from None
        try:
            reply = loads(self._readline())
        except WireError as exc:
            raise self._fail(f"the code under test broke the protocol: {exc}") from None
        if reply.get("id") != rid:
            raise self._fail("the code under test answered out of turn")
        if "ok" in reply:
            try:
                return decode(reply["ok"], self.load_ref)
            except WireError as exc:
                raise self._fail(f"the code under test sent a malformed value: {exc}") from None
        if "raise" in reply and type(reply["raise"]) is dict:
            raise self.exception(reply["raise"])
        if type(reply.get("fault")) is str:
            raise BoundaryError(f"the judge's request failed in the child: {reply['fault']}")
        raise self._fail("the code under test sent an answer of no known shape")

    # --- values -----------------------------------------------------------------------

    def encode_arg(self, value: Any) -> Any:
        return encode(value, self._ref_of)

    def _ref_of(self, value: Any) -> dict[str, Any]:
        number = getattr(value, "_judge_ref", None) if _is_proxy(value) else None
        if type(number) is int:
            return {"T": "ref", "id": number}
        raise BoundaryError(
            f"cannot pass {type(value).__name__} to the code under test: only plain data "
            "(None, bool, numbers, str, bytes, lists, tuples, dicts, sets) and objects it "
            "returned can cross the judge's boundary"
        )

    def load_ref(self, data: dict[str, Any]) -> Any:
        number = data.get("id")
        if type(number) is not int:
            raise WireError("a reference needs a number")
        known = self.objects.get(number)
        if known is not None:
            return known
        kind = data.get("kind")
        cls_info = data.get("cls")
        if kind == "class" and isinstance(cls_info, dict) and "id" in cls_info:
            proxy: Any = self.class_for(cls_info)
        elif kind == "module":
            proxy = RemoteModule(f"<remote module #{number}>", self, number)
        else:
            base = self.class_for(cls_info) if isinstance(cls_info, dict) else Remote
            if issubclass(base, BaseException):
                proxy = base.__new__(base)
                object.__setattr__(proxy, "_judge_ref", number)
            else:
                proxy = object.__new__(base)
                object.__setattr__(proxy, "_judge_ref", number)
                object.__setattr__(proxy, "_judge_conv", self)
        self.objects[number] = proxy
        return proxy

    def class_for(self, info: dict[str, Any], depth: int = 0) -> type:
        """The judge's proxy class for a class of the child (cached by its reference)."""
        if "id" not in info or depth > 32:
            return Remote
        number = info["id"]
        if type(number) is not int:
            raise WireError("a class needs a number")
        known = self.classes.get(number)
        if known is not None:
            return known
        name = str(info.get("name") or "Remote")[:200]
        module = str(info.get("module") or "?")[:200]
        bases_info: list[Any] = info["bases"] if isinstance(info.get("bases"), list) else []
        exc_name = info.get("exc")
        bases = [self.class_for(b, depth + 1) for b in bases_info if isinstance(b, dict)]
        if exc_name is not None:
            builtin = _MIRRORED_BUILTINS.get(str(exc_name), RemoteError)
            if module.startswith("unittest"):
                builtin = RemoteError
            bases = [b for b in bases if issubclass(b, BaseException)] or [builtin]
            namespace = {"__module__": module, "_judge_class": number,
                         "__getattr__": _exc_getattr}
            try:
                cls: type = RemoteExceptionMeta(name, tuple(bases), namespace)
            except TypeError:
                cls = RemoteExceptionMeta(name, (builtin,), namespace)
        else:
            bases = [b for b in bases if not issubclass(b, BaseException)] or [Remote]
            namespace = {"__module__": module, "_judge_class": number, "__slots__": ()}
            try:
                cls = RemoteMeta(name, tuple(bases), namespace)
            except TypeError:
                cls = RemoteMeta(name, (Remote,), namespace)
        type.__setattr__(cls, "_judge_cls_conv", self)
        self.classes[number] = cls
        self.objects[number] = cls
        return cls

    def exception(self, info: dict[str, Any]) -> BaseException:
        """The local exception mirroring one the child raised."""
        cls_info: dict[str, Any] = info["cls"] if isinstance(info.get("cls"), dict) else {}
        text = str(info.get("str", ""))[:4000]
        args: list[Any] = []
        for arg in info.get("args") or []:
            try:
                args.append(decode(arg, self.load_ref))
            except WireError:
                args.append("?")
        exc: Any = None
        if "builtin" in cls_info:
            name = str(cls_info["builtin"])
            cls: type = _MIRRORED_BUILTINS.get(name, RemoteError)
            if cls is RemoteError:
                args = [f"{name}: {text}"]
        else:
            cls = self.class_for(cls_info)
            if not issubclass(cls, BaseException):
                cls, args = RemoteError, [f"{cls_info.get('name', '?')}: {text}"]
            elif isinstance(info.get("obj"), dict):
                try:
                    exc = decode(info["obj"], self.load_ref)
                except WireError:
                    exc = None
        if not isinstance(exc, cls):
            exc = cls.__new__(cls)  # type: ignore[call-overload]
        exc.args = tuple(args) if args else (text,)
        return exc  # type: ignore[no-any-return]

    def call(self, target_ref: int, args: Sequence[Any], kwargs: dict[str, Any]) -> Any:
        return self.request(
            "call",
            obj={"T": "ref", "id": target_ref},
            args=[self.encode_arg(a) for a in args],
            kwargs=[[k, self.encode_arg(v)] for k, v in kwargs.items()],
        )

    def apply(self, fn: str, *args: Any) -> Any:
        return self.request("apply", fn=fn, args=[self.encode_arg(a) for a in args])

    def getattr(self, ref: int, name: str) -> Any:
        return self.request("getattr", obj={"T": "ref", "id": ref}, name=name)


def _is_proxy(value: Any) -> bool:
    return isinstance(value, Remote | RemoteModule) or isinstance(
        type(value), RemoteMeta | RemoteExceptionMeta
    ) or isinstance(value, RemoteMeta | RemoteExceptionMeta)


def _conv(obj: Any) -> Conversation:
    return object.__getattribute__(obj, "_judge_conv")  # type: ignore[no-any-return]


def _exc_getattr(self: BaseException, name: str) -> Any:
    if name.startswith("__") or name.startswith("_judge"):
        raise AttributeError(name)
    number = self.__dict__.get("_judge_ref")
    if number is None:
        raise AttributeError(name)
    return type(self)._judge_cls_conv.getattr(number, name)  # type: ignore[attr-defined]


class RemoteMeta(type):
    """Metaclass of proxy classes: class attributes and construction go to the child."""

    def __getattr__(cls, name: str) -> Any:
        if name.startswith("__") or name.startswith("_judge"):
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


class RemoteExceptionMeta(RemoteMeta):
    """Metaclass of proxy exception classes: constructed here when the child raises; calling
    one from the holdout still builds the exception in the child."""


class Remote:
    """An object that lives in the child. See the module docstring for what is forwarded."""

    __slots__ = ("__weakref__", "_judge_conv", "_judge_ref")

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__") or name.startswith("_judge"):
            raise AttributeError(name)
        return _conv(self).getattr(self._judge_ref, name)

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
        return hash(("judge-ref", self._judge_ref))

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
        return _exact(_conv(self).apply("len", self), int, "len()")

    def __bool__(self) -> bool:
        return _exact(_conv(self).apply("bool", self), bool, "bool()")

    def __int__(self) -> int:
        return _exact(_conv(self).apply("int", self), int, "int()")

    def __index__(self) -> int:
        return _exact(_conv(self).apply("index", self), int, "index()")

    def __float__(self) -> float:
        return _exact(_conv(self).apply("float", self), float, "float()")

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

    def __contains__(self, item: Any) -> bool:
        return _exact(_conv(self).apply("contains", self, item), bool, "in")

    def __lt__(self, other: Any) -> Any:
        return _conv(self).apply("lt", self, other)

    def __le__(self, other: Any) -> Any:
        return _conv(self).apply("le", self, other)

    def __gt__(self, other: Any) -> Any:
        return _conv(self).apply("gt", self, other)

    def __ge__(self, other: Any) -> Any:
        return _conv(self).apply("ge", self, other)

    def __add__(self, other: Any) -> Any:
        return _conv(self).apply("add", self, other)

    def __sub__(self, other: Any) -> Any:
        return _conv(self).apply("sub", self, other)

    def __mul__(self, other: Any) -> Any:
        return _conv(self).apply("mul", self, other)

    def __truediv__(self, other: Any) -> Any:
        return _conv(self).apply("truediv", self, other)

    def __floordiv__(self, other: Any) -> Any:
        return _conv(self).apply("floordiv", self, other)

    def __mod__(self, other: Any) -> Any:
        return _conv(self).apply("mod", self, other)

    def __neg__(self) -> Any:
        return _conv(self).apply("neg", self)

    def __abs__(self) -> Any:
        return _conv(self).apply("abs", self)

    def __enter__(self) -> Any:
        return _conv(self).apply("enter", self)

    def __exit__(self, *exc: Any) -> Any:
        return _conv(self).apply("exit", self, None, None, None)


def _exact(value: Any, kind: type, what: str) -> Any:
    if type(value) is not kind:
        raise BoundaryError(f"{what} of an object of the code under test returned "
                            f"{type(value).__name__}, not {kind.__name__}")
    return value


def _string(value: Any) -> str:
    return _exact(value, str, "str()")  # type: ignore[no-any-return]


class RemoteModule(types.ModuleType):
    """A module of the code under test, seen from the judge: attributes come from the child."""

    def __init__(self, name: str, conv: Conversation, ref: int) -> None:
        super().__init__(name)
        object.__setattr__(self, "_judge_conv", conv)
        object.__setattr__(self, "_judge_ref", ref)

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__") or name.startswith("_judge"):
            raise AttributeError(name)
        return object.__getattribute__(self, "_judge_conv").getattr(
            object.__getattribute__(self, "_judge_ref"), name
        )

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
