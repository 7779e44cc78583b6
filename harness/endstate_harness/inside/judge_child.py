"""The judge's child: the processes that run the code under test. Shipped as source after
:mod:`endstate_harness.judgewire` and :mod:`endstate_harness.inside.judge_scope`, run
with ``python -s -S -B -c``; standard library only, Python 3.8+.
"""

import importlib
import importlib.machinery
import operator
import os
import signal
import sys
import time

if "encode" not in globals():  # imported in a test; shipped, wire.py's text comes first
    from endstate_harness.judgewire import (
        MAX_MESSAGE_BYTES,
        WireError,
        decode,
        dumps,
        encode,
        loads,
    )
if "Ground" not in globals():  # the same: judge_scope.py's text comes before this one's
    from endstate_harness.inside.judge_scope import (
        Ground,
        after_fork,
        drop_signals,
        hold_signals,
        open_fds,
        writable_roots,
    )
if "preimports" not in globals():  # the same: judge_warm.py's text comes before this one's
    from endstate_harness.inside.judge_warm import WARM_FILES, _warm, preimports  # noqa: F401

_APPLY = {
    "len": len,
    "repr": lambda o: "%s" % (repr(o),),
    "str": lambda o: "%s" % (o,),
    "format": lambda o, spec: "%s" % (format(o, spec),),
    "iter": iter,
    "next": next,
    "bool": bool,
    "int": int,
    "float": float,
    "index": operator.index,
    "hash": hash,
    "abs": abs,
    "neg": operator.neg,
    "pos": operator.pos,
    "getitem": operator.getitem,
    "setitem": operator.setitem,
    "delitem": operator.delitem,
    "contains": operator.contains,
    "lt": operator.lt,
    "le": operator.le,
    "gt": operator.gt,
    "ge": operator.ge,
    "add": operator.add,
    "sub": operator.sub,
    "mul": operator.mul,
    "truediv": operator.truediv,
    "floordiv": operator.floordiv,
    "mod": operator.mod,
    "reversed": reversed,
    "enter": lambda o: o.__enter__(),
    "exit": lambda o, a, b, c: o.__exit__(a, b, c),
}
"""The operations the judge may ask for besides import/getattr/setattr/call. String results
are rebuilt with ``%`` so that a ``str`` subclass comes back as a plain ``str``."""


_SCOPE_OPS = ("fork", "end", "settle", "pin", "variant")
"""What the process the tests are forked from still answers once it forked one."""


class Server:
    """Keeps the objects handed out, by reference number, and answers requests."""

    def __init__(self, ground=None):
        self.objects = {}
        self.numbers = {}
        self.next_number = 1
        """The next reference number; a fork numbers from the base the judge gives it, so
        that no two processes of one run give one number to two objects."""
        self.ground = ground if ground is not None else Ground([])
        self.depth = 0
        """0: the process that imported the tests' modules; n: a fork of depth n - 1 (a
        module's, a class's or a test's: the judge decides, :mod:`judge.isolation`)."""
        self.forked = False
        self.variant = None
        """In a variant's process: "open"; in the process that forks them: "parent" once the
        first variant was asked for (it then answers nothing but the next variant)."""
        self.gone = None
        """Why the last variant's process ended on its own (the judge is told)."""
        self.cut = False
        """Whether it was ended here, at its time bound (:func:`_wait_or_kill`)."""

    # --- references -------------------------------------------------------------------

    def ref(self, obj):
        number = self.number(obj)
        out = {"T": "ref", "id": number, "kind": _kind(obj)}
        if isinstance(obj, type):
            out["cls"] = self.describe_class(obj)
        else:
            out["cls"] = self.describe_class(type(obj))
        return out

    def number(self, obj):
        number = self.numbers.get(id(obj))
        if number is None or self.objects.get(number) is not obj:
            number = self.next_number
            self.next_number += 1
            self.objects[number] = obj
            self.numbers[id(obj)] = number
        return number

    def describe_class(self, cls, depth=0):
        if cls.__module__ == "builtins" or depth > 32:
            return {"builtin": cls.__name__}
        bases = [self.describe_class(b, depth + 1) for b in cls.__bases__]
        exc = None
        if issubclass(cls, BaseException):
            for klass in cls.__mro__:
                if klass.__module__ == "builtins":
                    exc = klass.__name__
                    break
        number = self.number(cls)
        return {
            "id": number,
            "name": "%s" % (getattr(cls, "__name__", "?"),),
            "module": "%s" % (getattr(cls, "__module__", "?"),),
            "bases": [b for b in bases if "id" in b],
            "exc": exc,
        }

    def encode(self, value):
        return encode(value, self.ref)

    def decode(self, data):
        return decode(data, self.load_ref)

    def load_ref(self, data):
        number = data.get("id")
        if type(number) is not int or number not in self.objects:
            raise WireError("unknown reference %r" % (number,))
        return self.objects[number]

    # --- requests ---------------------------------------------------------------------

    def handle(self, msg):
        op = msg.get("op")
        if op == "settle":  # answered once the last variant's files are written back
            if self.variant == "open":
                raise WireError("a variant is still open")
            return None
        if self.variant == "parent" and op != "variant":
            # a request the judge sent the last variant's process, read here because that
            # process was ended first (at its bound, or by its code): the judge already had
            # this process's word that it ended, and an answer now would answer its next one
            return _NO_REPLY
        if self.forked and not self.depth and op not in _SCOPE_OPS:
            raise WireError("the tests run in processes of their own: this one only forks them")
        if op == "fork":
            return self.fork_scope(msg.get("base"))
        if op not in _SCOPE_OPS:
            self.ground.ran = True  # code under test may run: look again before a fork
        if op == "variant":
            return self.fork_variant(msg.get("files"), msg.get("limit_s"))
        if op == "pin":  # onto the judge's CPU: they take turns (launch.shared_cpu says why)
            cpu = msg.get("cpu")
            if type(cpu) is not int:
                raise WireError("pin needs a CPU number")
            try:
                os.sched_setaffinity(0, {cpu})
            except (AttributeError, OSError, ValueError, OverflowError):
                pass  # not allowed here (a container's CPU set): only speed depends on it
            return None
        if op == "end":
            if self.depth:
                raise _EndVariant()
            if self.variant != "open":
                raise WireError("no variant to end")
            raise _EndVariant()
        if op == "import":
            name = msg.get("name")
            if type(name) is not str:
                raise WireError("import needs a name")
            __import__(name)
            return sys.modules[name]
        if op == "define":
            return self.define(msg.get("name"), msg.get("source"))
        if op == "getattr":
            return getattr(self.decode(msg.get("obj")), _name(msg))
        if op == "setattr":
            setattr(self.decode(msg.get("obj")), _name(msg), self.decode(msg.get("value")))
            return None
        if op == "call":
            target = self.decode(msg.get("obj"))
            args = self.decode(msg.get("args") or [])
            kwargs = {}
            for pair in msg.get("kwargs") or []:
                kwargs["%s" % (pair[0],)] = self.decode(pair[1])
            return target(*args, **kwargs)
        if op == "apply":
            fn = _APPLY.get(msg.get("fn"))
            if fn is None:
                raise WireError("unknown operation %r" % (msg.get("fn"),))
            return fn(*self.decode(msg.get("args") or []))  # type: ignore[operator]
        raise WireError("unknown op %r" % (op,))

    def fork_variant(self, files, limit_s=None):
        """One variant of the tree (prove's mutants: files that differ from the solution's;
        none: the tree as it is, the judge's reference run) in a process of its own, forked
        from this one before any code under test was imported: it writes the variant's files,
        answers the judge until "end", and exits; this process then writes the files back,
        ends what it left (:class:`Ground`), and waits for the next variant. What one
        variant's code leaves never reaches the next. ``limit_s``: the variant's process is
        killed that long after it started (:func:`_wait_or_kill` says why)."""
        if self.variant == "open" or self.objects:
            raise WireError("a variant starts only from a process that imported nothing")
        if type(files) is not dict:
            raise WireError("a variant names the files it changes")
        root = os.getcwd()
        if self.variant is None:  # the first variant: what every variant would redo, once
            _warm(root)
        saved = {}  # type: dict[str, bytes | None]
        for rel, text in files.items():
            parts = rel.split("/") if type(rel) is str else [".."]
            if rel.startswith("/") or ".." in parts or "" in parts or (
                    text is not None and type(text) is not str):
                raise WireError("a variant's file must be a relative path with a text")
            path = os.path.join(root, *parts)
            try:
                with open(path, "rb") as old:
                    saved[path] = old.read()
            except FileNotFoundError:
                saved[path] = None
        why = self.ground.prepare()  # the tree as it is without the variant, to come back to
        if why is not None:
            raise WireError(why)
        mask = hold_signals()
        pid = os.fork()
        if pid == 0:
            self.ground = after_fork(self.ground)
            signal.pthread_sigmask(signal.SIG_SETMASK, mask)
            self.variant = "open"
            listed = False  # whether a folder's list of files changes (one added, one gone)
            for rel, text in files.items():
                path = os.path.join(root, *rel.split("/"))
                _drop_bytecode(path)  # a .pyc of the file it replaces must not stand in
                listed = listed or (text is None) != (saved[path] is None)
                if text is None:
                    if os.path.exists(path):
                        os.unlink(path)
                else:
                    with open(path, "wb") as new:
                        new.write(text.encode("utf-8", "surrogateescape"))
            if listed:  # a file that was not there before is seen, one gone is not found
                importlib.invalidate_caches()
            return None
        try:
            status, cut = _wait_or_kill(pid, limit_s)
            for path, data in saved.items():
                try:
                    if data is None:
                        if os.path.exists(path):
                            os.unlink(path)
                    else:
                        with open(path, "wb") as old:
                            old.write(data)
                except OSError:
                    pass
            why = self.ground.put_back()  # and whatever else its tests left
        finally:
            drop_signals(mask)
        self.variant = "parent"
        if status != _ENDED << 8:  # ended by its code, not by "end": the judge is waiting
            self.gone = _ended("the variant", status)
            self.cut = cut
        elif why is not None:
            self.gone = why
        return _NO_REPLY

    def fork_scope(self, base):
        """A process of its own for what follows (a test, or a class's or module's fixtures
        and their tests), forked from this one: it answers the judge until "end" and exits.
        This process then ends what it left (:class:`Ground`) and waits for the next fork; at
        depth 0 it answers nothing else any more. A fork that ended otherwise, or left what
        cannot be put back, is reported: the judge stops there."""
        if type(base) is not int or base < self.next_number or self.variant == "parent":
            raise WireError("a fork needs a base above this process's references")
        why = self.ground.prepare()
        if why is not None:
            raise WireError(why)
        mask = hold_signals()
        pid = os.fork()
        if pid == 0:
            self.ground = after_fork(self.ground)
            self.depth += 1
            self.forked = False
            self.next_number = base
            signal.pthread_sigmask(signal.SIG_SETMASK, mask)
            return None
        self.forked = True
        try:
            _pid, status = os.waitpid(pid, 0)
            why = self.ground.put_back()
        finally:
            drop_signals(mask)
        if status != _ENDED << 8 or why is not None:
            why = why or _ended("a test", status)
            if self.depth or self.variant == "open":  # its parent puts back and says so
                os.write(2, ("judge child: %s\n" % (why,)).encode("utf-8", "replace"))
                os._exit(_LOST)
            self.gone = why
        return _NO_REPLY

    def define(self, name, source):
        """Run a test helper module the task declares (``child_helpers``) as ``name``.

        Its parent packages are registered as empty modules if absent, so that defining
        ``tests.doubles`` never imports the end state's own ``tests/__init__.py``."""
        if type(name) is not str or type(source) is not str:
            raise WireError("define needs a name and a source")
        module = type(sys)(name)
        module.__file__ = "<judge helper %s>" % (name,)
        parts = name.split(".")
        for i in range(1, len(parts)):
            parent = ".".join(parts[:i])
            if parent not in sys.modules:
                package = type(sys)(parent)
                package.__path__ = []
                sys.modules[parent] = package
        sys.modules[name] = module
        exec(compile(source, module.__file__, "exec"), module.__dict__)
        return module

    def describe_exception(self, exc):
        args = []
        for arg in getattr(exc, "args", ()):
            try:
                args.append(self.encode(arg) if _plain(arg) else "%s" % (repr(arg),))
            except BaseException:
                args.append("?")
        try:
            text = "%s" % (exc,)
        except BaseException:
            text = "?"
        return {"cls": self.describe_class(type(exc)), "args": args, "str": text[:4000],
                "obj": self.ref(exc)}


def _wait_or_kill(pid, limit_s):
    """The exit status of the variant's process ``pid``, killed once ``limit_s`` passed, and
    whether it was killed so.

    Why here: the judge cuts a variant that runs past its time bound (a mutant that loops) on
    its own clock, but cannot end it: the variant's process still reads the channel, so any
    word the judge sent would reach the code under test. This process, which only waits, ends
    it instead (its test's process, orphaned, comes back here and :meth:`Ground.put_back`
    ends it), and its word that the variant ended lets the judge go on to the next variant.
    The judge's own clock started before this one's, so the judge always cuts first."""
    if type(limit_s) not in (int, float) or not limit_s > 0:
        return os.waitpid(pid, 0)[1], False
    deadline = time.monotonic() + limit_s
    while True:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            return status, False
        left = deadline - time.monotonic()
        if left <= 0:
            break
        try:  # signals are held while this process waits: SIGCHLD stays pending, seen here
            signal.sigtimedwait([signal.SIGCHLD], min(left, 1.0))
        except AttributeError:  # no sigtimedwait (not Linux): look again shortly
            time.sleep(min(left, 0.005))
    try:
        os.kill(pid, signal.SIGKILL)
    except OSError:
        pass
    return os.waitpid(pid, 0)[1], True


def _drop_bytecode(path):
    folder, name = os.path.split(path)
    cache = os.path.join(folder, "__pycache__")
    if not name.endswith(".py"):
        return
    stem = name[:-3] + "."
    try:
        names = os.listdir(cache)
    except OSError:
        return
    for entry in names:
        if entry.startswith(stem) and entry.endswith(".pyc"):
            try:
                os.unlink(os.path.join(cache, entry))
            except OSError:
                pass


class _EndVariant(Exception):
    """The judge ended the variant this process runs: answer, then exit."""


_ENDED = 90
"""The exit status of a variant's process that the judge ended (any other: its code ended
it, and the judge, waiting for an answer, is told)."""

_LOST = 91
"""The exit status of a fork whose own fork ended on its own or left what cannot be put back:
the judge stops there, told by the process the variant or the tests were forked from."""


def _ended(what, status):
    if status == _LOST << 8:
        return "the process running %s ended: a test's process ended on its own or left what " \
               "cannot be put back" % (what,)
    return "the process running %s ended (status %d)" % (what, status)


_NO_REPLY = object()
"""What the forking process returns once a variant's process ended: the variant answered for
itself, so no second answer goes out."""


def _plain(value):
    return type(value) in (type(None), bool, int, float, str, bytes, tuple, list, dict)


def _name(msg):
    name = msg.get("name")
    if type(name) is not str:
        raise WireError("a name must be a string")
    return name


def _kind(obj):
    if type(obj).__name__ == "module" and type(obj).__module__ == "builtins":
        return "module"
    if isinstance(obj, type):
        return "class"
    if callable(obj):
        return "callable"
    return "object"


def main():
    proto_in = os.fdopen(os.dup(0), "rb")
    proto_out = os.fdopen(os.dup(1), "wb")
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.dup2(2, 1)
    sys.path.insert(0, os.getcwd())
    private = "private-tmp" in sys.argv[1:]  # the harness's word (launch.PRIVATE_TMP)
    server = Server(Ground(writable_roots(os.getcwd(), os.environ, private), open_fds(), private))
    while True:
        line = proto_in.readline(MAX_MESSAGE_BYTES + 1)
        if not line:
            return
        rid = None
        try:
            msg = loads(line)
            rid = msg.get("id")
            try:
                value = server.handle(msg)
                if value is _NO_REPLY:
                    if server.gone:
                        proto_out.write(dumps({"id": None, "gone": server.gone,
                                               "cut": server.cut}))
                        proto_out.flush()
                        server.gone, server.cut = None, False
                    continue
                reply = {"id": rid, "ok": server.encode(value)}
            except _EndVariant:
                proto_out.write(dumps({"id": rid, "ok": server.encode(None)}))
                proto_out.flush()
                os._exit(_ENDED)
            except WireError as exc:
                reply = {"id": rid, "fault": "%s" % (exc,)}
            except BaseException as exc:  # the code under test raised: that is an answer
                reply = {"id": rid, "raise": server.describe_exception(exc)}
            data = dumps(reply)
        except BaseException as exc:  # even describing it failed: say so, stay up
            data = dumps({"id": rid, "fault": "cannot encode the answer: %s" % (
                type(exc).__name__,)})
        proto_out.write(data)
        proto_out.flush()


if __name__ == "__main__":
    main()
