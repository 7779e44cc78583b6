"""The judge's side of the boundary: the conversation with the child that runs the code
(references come back as proxies, :mod:`endstate_harness.graders.judge.proxies`)."""

from __future__ import annotations

import builtins
import os
import select
import sys
import time
from collections.abc import Sequence
from typing import Any

from endstate_harness.graders.judge.proxies import (
    BoundaryError,
    Remote,
    RemoteError,
    RemoteExceptionMeta,
    RemoteMeta,
    RemoteModule,
    exception_getattr,
    is_reference,
)
from endstate_harness.judgewire import (
    MAX_MESSAGE_BYTES,
    Budget,
    WireError,
    decode,
    dumps,
    encode,
    loads,
)


class ChildGone(RuntimeError):
    """The child process exited, crashed, hung or broke the protocol."""


class NotIsolated(BaseException):
    """The child could not give a test a process that no other test reached (the code under
    test left a thread or shared memory where the tests are forked from): this test and every
    later one fail. A ``BaseException``, so that no ``except Exception`` in a test (or an
    ``assertRaises(TypeError)``) turns the refusal into a pass."""


MAX_CLASSES = 4096
"""Most classes of the child one conversation mirrors."""
MAX_BASES = 8
"""Most bases of one mirrored class (the child's class may have more; they are left out)."""
MAX_CLASS_DEPTH = 16
"""Deepest ancestry mirrored (deeper ancestors are mirrored as :class:`Remote`)."""

_MIRRORED_BUILTINS = {
    name: obj
    for name, obj in vars(builtins).items()
    if isinstance(obj, type)
    and issubclass(obj, Exception)
    and not issubclass(obj, Warning)
}
"""Builtin exception classes a child's exception may be mirrored onto (all ``Exception``
subclasses but warnings; never ``SystemExit``/``KeyboardInterrupt``/``GeneratorExit``)."""


_CONTROL = ("pin", "variant", "end", "settle", "fork")
"""Requests about the child's processes, sent from where they are (never forked for)."""


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
        self.budget = Budget()
        self.scopes: list[int] = []
        """The forks wanted now, outermost first (a module's, a class's, a test's: see
        :mod:`endstate_harness.graders.judge.isolation`), each the base of its reference
        numbers once the child made it, else 0. A fork is made when its first request goes
        out: a test that calls nothing costs none."""
        self.forks = 0
        self.refused: str | None = None
        self.expired = False
        """Whether a request went unanswered by the deadline (a variant cut at its bound)."""
        self.ended = False
        """Whether the child's word that it ended a variant cut at its bound came already."""

    # --- isolation --------------------------------------------------------------------

    def open_scope(self) -> None:
        """What follows runs in a process of its own, forked when it first asks the child."""
        self.scopes.append(0)

    def close_scope(self) -> None:
        """End the innermost scope's process, if it was made (its fork's parent then ends
        what it left). Never raises: a child that does not answer is ``gone``, and every
        later request says so."""
        if not self.scopes:
            return
        base = self.scopes.pop()
        if not base:
            return
        if not self.gone:
            try:
                self._request("end")
            except Exception:  # the child's state is unknown: it is gone (set by _fail)
                self.gone = self.gone or "the process of a test did not end cleanly"
        self._forget_modules(base)

    def _forget_modules(self, base: int) -> None:
        """The proxies of modules the ended process imported (a test's own ``import``) leave
        the judge's import system, so that a later test imports them again, in its process."""
        for name, module in list(sys.modules.items()):
            if (isinstance(module, RemoteModule) and module.__dict__.get("_judge_conv") is self
                    and module.__dict__.get("_judge_ref", 0) >= base):
                del sys.modules[name]
                parent, _, leaf = name.rpartition(".")
                holder = sys.modules.get(parent)
                if isinstance(holder, RemoteModule) and holder.__dict__.get(leaf) is module:
                    del holder.__dict__[leaf]

    def _fork_scope(self) -> None:
        """The innermost scope's process, forked from the innermost one made: a scope between
        them (a class whose fixtures asked nothing) has nothing of its own to inherit."""
        self.forks += 1
        base = self.forks << 32  # its own reference numbers
        self._request("fork", base=base)
        self.scopes[-1] = base

    # --- transport --------------------------------------------------------------------

    def _fail(self, why: str) -> ChildGone:
        self.gone = self.gone or why
        return ChildGone(self.gone)

    def _readline(self, limit: float) -> bytes:
        """One line from the child by ``limit`` (monotonic); each byte is looked at once."""
        chunks = [self.buffer]
        size = len(self.buffer)
        end = self.buffer.find(b"\n")
        while end < 0:
            remaining = limit - time.monotonic()
            if remaining <= 0:
                self.expired = True
                raise self._fail("the code under test did not answer in time (hang or timeout)")
            ready, _, _ = select.select([self.rfd], [], [], remaining)
            if not ready:
                continue
            data = os.read(self.rfd, 1 << 16)
            if not data:
                raise self._fail("the process running the code under test ended")
            newline = data.find(b"\n")
            if newline >= 0:
                end = size + newline
            chunks.append(data)
            size += len(data)
            if size > MAX_MESSAGE_BYTES and (end < 0 or end > MAX_MESSAGE_BYTES):
                raise self._fail("the code under test sent an oversized message")
        joined = b"".join(chunks)
        line, self.buffer = joined[:end], joined[end + 1:]
        return line

    def request(self, op: str, **fields: Any) -> Any:
        """Send one request and return its decoded answer (or raise what the child raised),
        from the process of the innermost scope (forked first, if need be).

        Reading the answer and rebuilding its value share one deadline: the call's."""
        if self.refused:
            raise NotIsolated(self.refused)
        if self.gone:
            raise ChildGone(self.gone)
        if self.scopes and not self.scopes[-1] and op not in _CONTROL:
            try:
                self._fork_scope()
            except BoundaryError as exc:  # the child said why it cannot
                self.refused = self.gone = f"the tests cannot be isolated: {exc}"[:2000]
                raise NotIsolated(self.refused) from None
        return self._request(op, **fields)

    def _request(self, op: str, **fields: Any) -> Any:
        if self.gone:
            raise ChildGone(self.gone)
        self.next_id += 1
        rid = self.next_id
        message = {"id": rid, "op": op, **fields}
        limit = min(self.deadline, time.monotonic() + self.call_timeout_s)
        exchanged = False
        try:
            try:
                os.write(self.wfd, dumps(message))
            except OSError:
                raise self._fail("the process running the code under test ended") from None
            line = self._readline(limit)
            exchanged = True
        finally:
            if not exchanged:  # whatever interrupted the exchange, the next answer is unknown
                self.gone = self.gone or "the judge was interrupted while the child answered"
        try:
            reply = loads(line)
        except WireError as exc:
            raise self._fail(f"the code under test broke the protocol: {exc}") from None
        if reply.get("id") is None and type(reply.get("gone")) is str:  # a variant's end
            if reply.get("cut") is True:  # at its bound, by the child: the notice came first
                self.expired = self.ended = True
            raise self._fail(f"the code under test ended: {reply['gone'][:200]}")
        if reply.get("id") != rid:
            raise self._fail("the code under test answered out of turn")
        self.budget.start(limit)
        raised: BaseException | None = None
        try:
            if "ok" in reply:
                return decode(reply["ok"], self.load_ref, 0, self.budget)
            if "raise" in reply and type(reply["raise"]) is dict:
                raised = self.exception(reply["raise"])
        except WireError as exc:
            raise self._fail(f"the code under test sent a value the judge refuses: {exc}") from None
        except MemoryError:
            raise self._fail("the code under test sent a value larger than the judge's "
                             "memory allows") from None
        if raised is not None:
            raise raised
        if type(reply.get("fault")) is str:
            raise BoundaryError(f"the judge's request failed in the child: {reply['fault']}")
        raise self._fail("the code under test sent an answer of no known shape")

    def await_ended(self, limit: float) -> bool:
        """After a variant was cut at its time bound: whether the process it was forked from
        says, by ``limit`` (monotonic), that it ended it (``judge_child._wait_or_kill``).
        Nothing is sent meanwhile (the variant's process may still read the channel); a late
        answer of the variant's is skipped."""
        while not self.ended:
            try:
                reply = loads(self._readline(limit))
            except (ChildGone, WireError):
                return False
            if reply.get("id") is None and type(reply.get("gone")) is str:
                return True
        return True

    # --- values -----------------------------------------------------------------------

    def encode_arg(self, value: Any) -> Any:
        return encode(value, self._ref_of)

    def _ref_of(self, value: Any) -> dict[str, Any]:
        number = getattr(value, "_judge_ref", None) if is_reference(value) else None
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
        """The judge's proxy class for a class of the child (cached by its reference).

        Bounded, since building a class computes its method resolution order: at most
        ``MAX_CLASSES`` per conversation, ``MAX_BASES`` bases each (the rest are left out of
        the mirror), ``MAX_CLASS_DEPTH`` levels (deeper ancestors are mirrored as Remote)."""
        if "id" not in info or depth > MAX_CLASS_DEPTH:
            return Remote
        number = info["id"]
        if type(number) is not int:
            raise WireError("a class needs a number")
        known = self.classes.get(number)
        if known is not None:
            return known
        if len(self.classes) >= MAX_CLASSES:
            raise WireError(f"more than {MAX_CLASSES} classes")
        self.budget.spend()
        name = _text(info.get("name"), "Remote")
        module = _text(info.get("module"), "?")
        bases_info: list[Any] = info["bases"] if isinstance(info.get("bases"), list) else []
        bases_info = bases_info[:MAX_BASES]
        exc_name = info.get("exc")
        bases = [self.class_for(b, depth + 1) for b in bases_info if isinstance(b, dict)]
        if exc_name is not None:
            builtin = _MIRRORED_BUILTINS.get(str(exc_name), RemoteError)
            if module.startswith("unittest"):
                builtin = RemoteError
            bases = [b for b in bases if issubclass(b, BaseException)] or [builtin]
            namespace = {"__module__": module, "_judge_class": number,
                         "__getattr__": exception_getattr}
            try:
                cls: type = RemoteExceptionMeta(name, tuple(bases), namespace)
            except TypeError:
                cls = RemoteExceptionMeta(name, (builtin,), namespace)
        else:
            bases = [b for b in bases if not issubclass(b, BaseException)] or [Remote]
            namespace = {"__module__": module, "_judge_class": number, "__slots__": (),
                         "__doc__": Remote.__dict__["__doc__"]}
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
        text = _text(info.get("str"), "", 4000)
        args: list[Any] = []
        raw_args = info.get("args")
        for arg in raw_args if type(raw_args) is list else []:
            args.append(decode(arg, self.load_ref, 0, self.budget))
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
                exc = decode(info["obj"], self.load_ref, 0, self.budget)
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


def _text(value: Any, default: str, limit: int = 200) -> str:
    """A name or message the child sent: a string, cut to ``limit``; anything else is
    ``default`` (``str()`` of a large structure would cost the judge for nothing)."""
    return value[:limit] if type(value) is str and value else default
