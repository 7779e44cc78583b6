"""Calls into the code under test, each in a fresh fork, and what each one gave, as data.

Shipped as text into a sandbox by prove's counterexample search (never imported by the host):
``python3 caller.py CALLS.json`` in the root of an end state prints one JSON line per call.
A call is ``{"module": "pkg.mod", "name": "f" | "Cls.method", "args": [...], "kwargs":
{...}}`` with plain-value arguments (the host's :func:`decode` of ``["tuple", [...]]``
etc.); its outcome is ``{"value": <encoded>}``, ``{"raises": "ValueError"}``, or
``{"unknown": why}`` (the call did not end in time, the fork died). Every call runs in a
fresh fork of this process, taken after the package's modules were imported once, so no
call sees what another did; what the code prints goes nowhere. A call runs twice (on a
mutant's side only when its first answer differs from the solution's, ``"expect"``; not at
all with ``"once"``, where the host asks again itself), so a call whose outcome changes from
run to run (time, randomness, an address) says so (``{"unsteady": true}``) and is never
compared.

Standard library only (Python 3.8+).
"""

import json
import os
import re
import signal
import sys

LIMIT_S = 2
"""Seconds one call may take: a mutant that loops is cut, and that call is "unknown"."""
_ADDRESS = re.compile(r" at 0x[0-9a-fA-F]+")


def _name(kind):
    module = getattr(kind, "__module__", "") or ""
    qual = getattr(kind, "__qualname__", getattr(kind, "__name__", "?"))
    return qual if module == "builtins" else module + "." + qual


def encode(value, depth=0):
    """A value as comparable data: its exact type and its content (containers by their
    items, sets and dicts in a canonical order, other objects by their repr less addresses)."""
    kind = type(value)
    if depth > 20:
        return ["deep", _name(kind)]
    if value is None or kind is bool or kind is str:
        return [_name(kind), value]
    if kind is int:
        return ["int", value if abs(value) < 2 ** 53 else str(value)]
    if kind is float:
        return ["float", repr(value)]
    if kind is bytes:
        return ["bytes", value.hex()]
    if kind in (list, tuple):
        return [_name(kind), [encode(v, depth + 1) for v in value]]
    if kind in (set, frozenset):
        items = [encode(v, depth + 1) for v in value]
        return [_name(kind), sorted(items, key=lambda e: json.dumps(e, sort_keys=True))]
    if kind is dict:
        items = [[encode(k, depth + 1), encode(v, depth + 1)] for k, v in value.items()]
        return ["dict", sorted(items, key=lambda e: json.dumps(e, sort_keys=True))]
    try:
        shown = repr(value)
    except Exception as exc:  # a broken __repr__ is an outcome of its own
        shown = "<repr raised " + type(exc).__name__ + ">"
    return [_name(kind), _ADDRESS.sub("", shown)[:2000]]


def decode(data):
    """The argument the host wrote: a plain JSON value, or ``["tuple"|"set"|"frozenset"|
    "bytes", ...]`` tagged."""
    if isinstance(data, list):
        if len(data) == 2 and data[0] in ("tuple", "set", "frozenset", "bytes", "list"):
            tag, items = data
            if tag == "bytes":
                return bytes.fromhex(items)
            made = [decode(v) for v in items]
            return {"tuple": tuple, "set": set, "frozenset": frozenset, "list": list}[tag](made)
        return [decode(v) for v in data]
    if isinstance(data, dict):
        return {k: decode(v) for k, v in data.items()}
    return data


def _target(call):
    __import__(call["module"])
    found = sys.modules[call["module"]]
    for part in call["name"].split("."):
        found = getattr(found, part)
    return found


def _one(call):
    try:
        function = _target(call)
        args = [decode(a) for a in call.get("args", [])]
        kwargs = {k: decode(v) for k, v in call.get("kwargs", {}).items()}
        if call.get("init") is not None:  # a method: on a fresh object of its class
            init = call["init"]
            owner = function.__qualname__.rsplit(".", 1)[0]
            cls = _target({"module": call["module"], "name": owner})
            obj = cls(*[decode(a) for a in init.get("args", [])],
                      **{k: decode(v) for k, v in init.get("kwargs", {}).items()})
            function = getattr(obj, call["name"].rsplit(".", 1)[-1])
        value = function(*args, **kwargs)
        return {"value": encode(value)}
    except SystemExit as exc:
        return {"raises": "SystemExit", "code": str(exc.code)}
    except BaseException as exc:
        return {"raises": _name(type(exc))}


def _in_fork(call):
    """One call in a fresh fork; its outcome, or "unknown" when it does not end in time."""
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(read)
        # what the code under test prints must not mix with the answers on stdout
        null = os.open(os.devnull, os.O_WRONLY)
        os.dup2(null, 1)
        os.dup2(null, 2)
        signal.alarm(LIMIT_S)
        try:
            out = json.dumps(_one(call))
        except BaseException as exc:
            out = json.dumps({"unknown": "the outcome could not be encoded: "
                              + type(exc).__name__})
        data = out.encode("utf-8")
        while data:
            data = data[os.write(write, data):]
        os._exit(0)
    os.close(write)
    chunks = []
    while True:
        chunk = os.read(read, 65536)
        if not chunk:
            break
        chunks.append(chunk)
    os.close(read)
    _, status = os.waitpid(pid, 0)
    if not chunks:
        if os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGALRM:
            return {"unknown": f"did not end within {LIMIT_S} s"}
        return {"unknown": "the call's process ended without an answer"}
    return json.loads(b"".join(chunks).decode("utf-8"))


def _import_first(modules):
    """Import the modules the calls name once, here, so that each fork starts with them (a
    fork per call then costs a fork, not an import). What they print at import goes nowhere;
    one that fails to import fails again, with its exception, in each call's fork."""
    sys.stdout.flush()
    saved = os.dup(1), os.dup(2)
    null = os.open(os.devnull, os.O_WRONLY)
    os.dup2(null, 1)
    os.dup2(null, 2)
    try:
        for name in modules:
            try:
                __import__(name)
            except BaseException:
                sys.modules.pop(name, None)
    finally:
        sys.stdout.flush()
        os.dup2(saved[0], 1)
        os.dup2(saved[1], 2)
        os.close(null)
        os.close(saved[0])
        os.close(saved[1])


def main():
    with open(sys.argv[1], encoding="utf-8") as f:
        calls = json.load(f)
    sys.path.insert(0, os.getcwd())
    _import_first(sorted({call["module"] for call in calls}))
    for call in calls:
        expect = call.pop("expect", None)
        once = call.pop("once", False)
        first = _in_fork(call)
        comparable = expect is not None and "unsteady" not in expect and "unknown" not in expect
        # a mutant's side runs a call again only when it differs from the solution's answer
        # (a difference must repeat to count); "once": the host asks again where it matters
        if not once and (not comparable or first != expect):
            second = _in_fork(call)
            if first != second:
                first = {"unsteady": True}
        sys.stdout.write(json.dumps(first) + "\n")
        sys.stdout.flush()
        if comparable and "unsteady" not in first and first != expect:
            break  # the host compares again; this only spares the calls after a difference


if __name__ == "__main__":
    main()
