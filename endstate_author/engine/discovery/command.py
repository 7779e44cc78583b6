"""Reading a test command the way the shell and the runner would: :func:`parse_command`."""

from __future__ import annotations

import posixpath
import re
import shlex
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

Runner = Literal["unittest-discover", "unittest-modules", "pytest", "unknown"]

DEFAULT_PATTERN = "test*.py"
"""unittest's default discovery pattern (also the default of ``tests_pass``)."""

_REDIRECT = re.compile(r"(?<=\s)\d?(?:>>?|<)(?:&\d|\s*[^\s;&|<>]+)")
"""An output redirection (``2>&1``, ``> log.txt``): it does not change the exit code."""
_PYTHON = re.compile(r"^(?:.*/)?python(?:\d+(?:\.\d+)?)?$")

# Python interpreter options that take a separate argument (``-X dev``, ``-W error``).
_PY_OPTS_WITH_ARG = frozenset({"-X", "-W", "-c", "-Q"})
# unittest main options that take an argument.
_UT_OPTS_WITH_ARG = frozenset({"-k", "--durations"})
# pytest options that take a separate argument; paths after them are not test targets.
_PT_OPTS_WITH_ARG = frozenset(
    {
        "-k", "-m", "-p", "-c", "-o", "-W", "-n", "-r",
        "--rootdir", "--ignore", "--ignore-glob", "--deselect", "--confcutdir", "--basetemp",
        "--maxfail", "--tb", "--durations", "--junitxml", "--junit-xml", "--log-level",
        "--override-ini", "--config-file", "--import-mode", "--capture", "--pyargs",
        "--cov", "--cov-report", "--timeout", "--log-file", "--color",
    }
)  # fmt: skip


@dataclass(frozen=True)
class TestCommand:
    """A test command as the rules need it.

    ``start_dir``/``top_level_dir`` are set for unittest discovery; ``targets`` holds the
    explicit modules as tree-relative ``.py`` paths (unittest names) or the paths given to
    pytest (files or folders, ``::node`` ids stripped). ``cwd`` is where the runner starts
    (after any leading ``cd``). ``reason`` says why a command is ``unknown``.
    """

    __test__ = False  # not a pytest test class despite its name

    runner: Runner
    command: str = ""
    cwd: str = "."
    start_dir: str | None = None
    top_level_dir: str | None = None
    pattern: str = DEFAULT_PATTERN
    targets: tuple[str, ...] = ()
    reason: str = ""
    module_names: tuple[str, ...] = field(default=(), compare=False)

    @property
    def known(self) -> bool:
        return self.runner != "unknown"

    @property
    def folders(self) -> tuple[str, ...]:
        """The folders the command needs to exist (for ES507), tree-relative."""
        out: list[str] = []
        if self.cwd != ".":
            out.append(self.cwd)
        if self.runner == "unittest-discover":
            for folder in (self.top_level_dir, self.start_dir):
                if folder is not None and folder != "." and folder not in out:
                    out.append(folder)
        return tuple(out)

    @property
    def effective_top(self) -> str | None:
        """unittest's top-level folder: ``-t`` when given, else the start folder itself."""
        if self.runner != "unittest-discover":
            return None
        return self.top_level_dir if self.top_level_dir is not None else self.start_dir


def unknown(command: str, reason: str) -> TestCommand:
    return TestCommand("unknown", command=command, reason=reason)


def tree_join(cwd: str, path: str) -> str | None:
    """``path`` relative to the tree root, or None when it is absolute or escapes the tree."""
    if not path or path.startswith(("/", "~", "$")):
        return None
    joined = posixpath.normpath(posixpath.join(cwd, path))
    if joined == ".." or joined.startswith("../"):
        return None
    return joined


def _tokens(command: str) -> list[str] | None:
    """Shell words with operators (``&&``, ``;``, ``|``, ``||``) split out; None if unparsable."""
    try:
        lexer = shlex.shlex(command, posix=True, punctuation_chars=";&|")
        lexer.whitespace_split = True
        return list(lexer)
    except ValueError:
        return None


def parse_command(command: str) -> TestCommand:
    """Read a ``command_succeeds`` command; ``unknown`` unless it is a test run read exactly."""
    if not isinstance(command, str) or not command.strip():
        return unknown(str(command), "empty command")
    tokens = _tokens(_REDIRECT.sub(" ", command))
    if tokens is None:
        return unknown(command, "the command does not parse as shell words")
    for op in ("|", "||", "&", ">", "<", ">>"):
        if op in tokens:
            return unknown(command, f"the command uses {op!r}; its exit code is not the runner's")
    if any(t in ("(", ")", "`") or t.startswith("$(") for t in tokens):
        return unknown(command, "the command uses a subshell")
    segments: list[list[str]] = [[]]
    for tok in tokens:
        if tok in ("&&", ";"):
            segments.append([])
        else:
            segments[-1].append(tok)
    cwd = "."
    found: TestCommand | None = None
    for words in segments:
        if not words:
            continue
        while words and re.match(r"^[A-Za-z_][A-Za-z0-9_]*=", words[0]):
            words = words[1:]  # VAR=value prefix
        if words and words[0] == "env":
            words = [w for w in words[1:] if "=" not in w or w.startswith("-")]
        if not words:
            continue
        if words[0] == "cd":
            if found is not None:
                continue
            if len(words) != 2:
                return unknown(command, "`cd` without exactly one folder")
            new = tree_join(cwd, words[1])
            if new is None:
                return unknown(command, f"`cd {words[1]}` leaves the tree")
            cwd = new
            continue
        parsed = _parse_runner(words, cwd, command)
        if parsed is None:
            if found is None:
                return unknown(command, f"{words[0]!r} is not a test runner this tool reads")
            continue
        if found is not None:
            # Two runners in one command: report the first; both must pass anyway.
            continue
        found = parsed
    return found if found is not None else unknown(command, "no test runner in the command")


def _parse_runner(words: list[str], cwd: str, command: str) -> TestCommand | None:
    head = words[0]
    if head in ("pytest", "py.test"):
        return _parse_pytest(words[1:], cwd, command)
    if not _PYTHON.match(head):
        return None
    i = 1
    while i < len(words) and words[i].startswith("-") and words[i] != "-m":
        opt = words[i]
        if opt == "-c":
            return None  # python -c "..." runs arbitrary code
        if opt.startswith("-m") and len(opt) > 2:
            words = [*words[:i], "-m", opt[2:], *words[i + 1 :]]
            break
        i += 2 if opt in _PY_OPTS_WITH_ARG else 1
    if i + 1 >= len(words) or words[i] != "-m":
        return None
    module, rest = words[i + 1], words[i + 2 :]
    if module == "unittest":
        return _parse_unittest(rest, cwd, command)
    if module == "pytest":
        return _parse_pytest(rest, cwd, command)
    return None


def _parse_unittest(args: list[str], cwd: str, command: str) -> TestCommand:
    if args and args[0] == "discover":
        return _parse_discover(args[1:], cwd, command)
    names: list[str] = []
    i = 0
    while i < len(args):
        arg = args[i]
        if arg in _UT_OPTS_WITH_ARG:
            i += 2
            continue
        if arg.startswith("-"):
            i += 1
            continue
        names.append(arg)
        i += 1
    if not names:
        # `python -m unittest` alone is `discover` from the working directory.
        return TestCommand("unittest-discover", command=command, cwd=cwd, start_dir=cwd)
    targets: list[str] = []
    for name in names:
        if name.endswith(".py") or "/" in name:
            path = tree_join(cwd, name)
            if path is None:
                return unknown(command, f"the test module {name!r} is outside the tree")
            targets.append(path)
        else:
            targets.append(name)
    return TestCommand(
        "unittest-modules",
        command=command,
        cwd=cwd,
        targets=tuple(targets),
        module_names=tuple(names),
    )


def _parse_discover(args: list[str], cwd: str, command: str) -> TestCommand:
    start, pattern, top = ".", DEFAULT_PATTERN, None
    positional: list[str] = []
    i = 0
    while i < len(args):
        arg = args[i]
        value: str | None = None
        key = arg
        if arg.startswith("--") and "=" in arg:
            key, value = arg.split("=", 1)
        elif arg[:2] in ("-s", "-p", "-t") and len(arg) > 2:
            key, value = arg[:2], arg[2:]
        if key in ("-s", "--start-directory", "-p", "--pattern", "-t", "--top-level-directory"):
            if value is None:
                if i + 1 >= len(args):
                    return unknown(command, f"{key} without a value")
                value = args[i + 1]
                i += 1
            if key in ("-s", "--start-directory"):
                start = value
            elif key in ("-p", "--pattern"):
                pattern = value
            else:
                top = value
        elif key in _UT_OPTS_WITH_ARG:
            i += 1
        elif not arg.startswith("-"):
            positional.append(arg)
        i += 1
    # discover's positional form: start, pattern, top.
    if positional:
        start = positional[0]
    if len(positional) > 1:
        pattern = positional[1]
    if len(positional) > 2:
        top = positional[2]
    start_path = tree_join(cwd, start)
    top_path = tree_join(cwd, top) if top is not None else None
    if start_path is None or (top is not None and top_path is None):
        return unknown(command, "the discovery folder is outside the tree")
    return TestCommand(
        "unittest-discover",
        command=command,
        cwd=cwd,
        start_dir=start_path,
        top_level_dir=top_path,
        pattern=pattern,
    )


def _parse_pytest(args: list[str], cwd: str, command: str) -> TestCommand:
    targets: list[str] = []
    i = 0
    while i < len(args):
        arg = args[i]
        if arg.startswith("-"):
            if arg in _PT_OPTS_WITH_ARG:
                i += 1
            i += 1
            continue
        path = tree_join(cwd, arg.split("::", 1)[0])
        if path is None:
            return unknown(command, f"the pytest target {arg!r} is outside the tree")
        targets.append(path)
        i += 1
    return TestCommand("pytest", command=command, cwd=cwd, targets=tuple(targets))


def from_tests_pass(args: Mapping[str, Any]) -> TestCommand:
    """The command ``endstate_harness.graders:tests_pass`` runs, from its ``args``.

    Its defaults are ``start_dir="tests"``, ``pattern="test*.py"``, ``top_level_dir="."``:
    the same discovery as ``python -m unittest discover -s tests -t .``.
    """
    start = args.get("start_dir", "tests")
    pattern = args.get("pattern", DEFAULT_PATTERN)
    top = args.get("top_level_dir", ".")
    label = "tests_pass"
    if not isinstance(start, str) or not isinstance(pattern, str) or not isinstance(top, str):
        return unknown(label, "tests_pass arguments of the wrong type (ES208 says which)")
    start_path, top_path = tree_join(".", start), tree_join(".", top)
    if start_path is None or top_path is None:
        return unknown(label, "the discovery folder is outside the tree")
    return TestCommand(
        "unittest-discover",
        command=f"python -m unittest discover -s {start} -t {top} -p {pattern}",
        start_dir=start_path,
        top_level_dir=top_path,
        pattern=pattern,
    )
