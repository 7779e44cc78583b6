"""Which commands a warm interpreter may run, and what a run forked from one must look like.

The recognising half of :mod:`endstate_harness.sandbox.warm` (its docstring says what is
recognised and why that is sound), shared with the Docker sandbox's runner: a command is
recognised here, then forked by whichever zygote serves that sandbox.
"""

from __future__ import annotations

import functools
import os
import re
import shlex
import signal
import sys
from dataclasses import dataclass
from typing import Any

_PYTHON = re.compile(r"python(3(\.\d+)?)?")
_FLAGS = frozenset({"-s", "-S", "-B", "-P", "-u"})
"""Flags a run may carry (the zygote gets the same). Not -E or -I: they ignore
PYTHONHASHSEED, so every fresh process has its own hash secret, which forks would share."""
_MODULES = {"unittest": ("runpy", "unittest", "unittest.main"), "pytest": ("runpy", "pytest")}
_KEPT = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\+([A-Za-z_][A-Za-z0-9_]*)=\$([A-Za-z_]\w*)\}")
_ASSIGN = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)=(.*)", re.S)
PER_RUN = ("HOME", "TMPDIR", "PWD")
"""Set per run, so not part of a zygote's key or environment."""
_CWD = "\0cwd"
"""Stands for the run's working folder in :attr:`PythonRun.env` (``/bin/sh`` exports PWD)."""
_NEVER_PRELOAD = frozenset({
    "__main__", "site", "readline", "rlcompleter", "curses", "tkinter", "turtle", "idlelib",
    "this", "antigravity", "ensurepip", "venv", "pydoc", "webbrowser", "getpass", "pdb",
})


@dataclass(frozen=True)
class PythonRun:
    """A recognised run: ``python FLAGS MODE TARGET ARGS`` in ``env``."""

    python: str
    flags: tuple[str, ...]
    mode: str
    target: str
    args: tuple[str, ...]
    env: tuple[tuple[str, str], ...]

    def preload(self) -> tuple[str, ...]:
        if self.mode == "-m":
            return _MODULES[self.target]
        return _stdlib_imports(self.target)


_IMPORT = re.compile(r"^[ \t]*(?:from[ \t]+([\w.]+)[ \t]+import\b|import[ \t]+([\w.]+))", re.M)


@functools.lru_cache(maxsize=64)
def _stdlib_imports(source: str) -> tuple[str, ...]:
    """The standard-library modules a program's source imports (line by line, absolute
    imports; an under-count only means less is preloaded)."""
    stdlib = set(getattr(sys, "stdlib_module_names", ())) - _NEVER_PRELOAD
    found = {a or b for a, b in _IMPORT.findall(source)}
    return tuple(sorted(n for n in found if n.partition(".")[0] in stdlib))


def recognise_argv(argv: list[str], env: dict[str, str]) -> PythonRun | None:
    """The run ``argv`` (executed directly, in ``env``) stands for, or None."""
    if not argv or not _PYTHON.fullmatch(argv[0]):
        return None
    if not env.get("PYTHONHASHSEED", "").isdigit():
        return None  # a random hash seed per process cannot be forked
    if any(k in env for k in ("PYTHONPATH", "PYTHONSTARTUP", "PYTHONHOME", "PYTHONINSPECT")):
        return None
    i = 1
    while i < len(argv) and argv[i] in _FLAGS:
        i += 1
    if i + 1 >= len(argv) or argv[i] not in ("-c", "-m"):
        return None
    mode, target, args = argv[i], argv[i + 1], tuple(argv[i + 2:])
    if mode == "-m" and target not in _MODULES:
        return None
    return PythonRun(argv[0], tuple(argv[1:i]), mode, target, args, tuple(sorted(env.items())))


def recognise_shell(command: str, env: dict[str, str], *,
                    sh_is_dash: bool | None = None) -> PythonRun | None:
    """The run a ``/bin/sh -c command`` in ``env`` stands for, or None (see module doc).

    Only where ``/bin/sh`` is dash (this host's, unless ``sh_is_dash`` says of another
    system's), whose one visible trace (besides PWD) is the line it writes when the command
    dies of a signal: :func:`shell_epilogue` writes the same."""
    if not (_SH_IS_DASH if sh_is_dash is None else sh_is_dash):
        return None
    words = _canonical_words(command)
    if words is None:
        return None
    kept: dict[int, tuple[str, str]] = {}
    rendered = []
    for n, word in enumerate(words):
        match = _KEPT.fullmatch(word)
        if match and match.group(1) == match.group(2) == match.group(3):
            kept[n] = (match.group(1), match.group(1))
            rendered.append(f'${{{match.group(1)}+"{match.group(1)}=${match.group(1)}"}}')
        else:
            rendered.append(shlex.quote(word))
    if " ".join(rendered) != command:
        return None  # anything the shell would expand or interpret: not recognised
    run_env = dict(env)
    if words[:2] == ["env", "-i"]:
        run_env = {}
        i = 2
        while i < len(words):
            if i in kept:
                name = kept[i][0]
                if name in env:
                    run_env[name] = env[name]
            elif (assign := _ASSIGN.fullmatch(words[i])) and not words[i].startswith("-"):
                run_env[assign.group(1)] = assign.group(2)
            else:
                break
            i += 1
        words = words[i:]
        if "PATH" not in run_env or any(k >= i for k in kept):
            return None
    elif kept:
        return None
    else:
        run_env.setdefault("PWD", _CWD)  # what /bin/sh adds to the environment it passes on
    return recognise_argv(words, run_env)


_WORD = re.compile(
    r"""([\w@%+=:,./-]+)|('[^']*'(?:"'"'[^']*')*)|(\$\{[A-Za-z_]\w*\+"[A-Za-z_]\w*=\$[A-Za-z_]\w*"\})""",
    re.ASCII,
)


def _canonical_words(command: str) -> list[str] | None:
    """The words of ``command`` as :func:`shlex.split` gives them, when it is words joined by
    single spaces, each a plain word, a single-quoted one (``'"'"'`` for a quote, as
    :func:`shlex.quote` writes it) or a ``${NAME+"NAME=$NAME"}``; else None.

    Why not shlex itself: it reads a character at a time in Python, and the hardened
    ``tests_pass`` command carries its runner's whole source in one word (18 ms a command,
    measured, for what this regex does in well under one)."""
    words: list[str] = []
    pos, end = 0, len(command)
    while True:
        match = _WORD.match(command, pos)
        if match is None:
            return None
        plain, quoted, kept = match.groups()
        if plain is not None:
            words.append(plain)
        elif quoted is not None:
            words.append(quoted[1:-1].replace("'\"'\"'", "'"))
        else:
            words.append(kept.replace('"', ""))
        pos = match.end()
        if pos == end:
            return words
        if command[pos] != " ":
            return None
        pos += 1


def recognise_joined(argv: list[str], env: dict[str, str], *,
                     sh_is_dash: bool | None = None) -> PythonRun | None:
    """What :func:`recognise_shell` says of ``shlex.join(argv)``, without joining and
    re-parsing it (the judge's child carries its whole source in one word)."""
    if not (_SH_IS_DASH if sh_is_dash is None else sh_is_dash):
        return None
    if argv[:1] == ["env"]:
        return recognise_shell(shlex.join(argv), env, sh_is_dash=sh_is_dash)
    return recognise_argv(argv, {**env, "PWD": env.get("PWD", _CWD)})


_SH_IS_DASH = os.path.basename(os.path.realpath("/bin/sh")) == "dash"


def shell_epilogue(code: int) -> bytes:
    """What dash writes to stderr after its command ended with ``code`` (negative: a signal)."""
    if code >= 0 or -code in (signal.SIGINT, signal.SIGPIPE):
        return b""
    try:
        return (signal.strsignal(-code) or "").encode() + b"\n"
    except ValueError:
        return b""


class ZygoteShape:
    """What a started zygote reported of itself (``ready``: its preloaded modules, working
    folder and environment), and what follows for a run forked from it; shared by the
    host's zygotes and those inside a container (:mod:`endstate_harness.sandbox.docker.runner`)."""

    def __init__(self, ready: dict[str, Any], zygote_env: dict[str, str], home: str) -> None:
        self.modules = frozenset(str(m) for m in ready.get("modules", ()))
        # What the interpreter's start did to its environment (a pyenv shim prepends to PATH
        # and sets PYENV_* and PWD; Python sets LC_CTYPE): done to every run's too, with the
        # zygote's own folders standing for the run's.
        seen = ready.get("environ", {})
        self.cwd = str(ready.get("cwd", ""))
        self.home = home
        self.env_added = {k: v for k, v in seen.items() if zygote_env.get(k) != v}
        self.env_removed = [k for k in zygote_env if k not in seen]

    def shadows(self, run: PythonRun, names: list[str], home_has_local: bool) -> bool:
        """Whether a working folder holding ``names`` could change what a fresh run imports
        or runs (``home_has_local``: HOME is unset or holds ``.local``)."""
        if any(n == ".python-version" or n.partition(".")[0] in self.modules for n in names):
            return True
        # Without -s, a fresh run would add HOME's user site-packages (and its .pth files).
        return "-s" not in run.flags and home_has_local

    def run_env(self, run: PythonRun, cwd: str) -> dict[str, str]:
        """The environment a fresh process of ``run`` in ``cwd`` would see at its start."""
        env = {k: (cwd if v == _CWD else v) for k, v in run.env}
        for k in self.env_removed:
            env.pop(k, None)
        for k, v in self.env_added.items():
            if v == self.cwd:
                v = cwd
            elif v == self.home:
                v = env.get("HOME", v) if k != "TMPDIR" else env.get("TMPDIR", v)
            env[k] = v
        return env
