"""``tests_pass``: a unittest grader that the hacks of exploits.md do not fool, run in an
isolated interpreter through ``sandbox.run`` (so in any sandbox whose image has ``python3``).
Its limits: docs/guide/graders.md; its design: docs/architecture.md. Its text is vendored into
suites (``VENDORED_MODULES`` in :mod:`endstate_harness.graders.names`): standard library and
harness imports only.
"""

import ast
import hashlib
import json
import posixpath
import secrets
import shlex
from dataclasses import dataclass, field
from fnmatch import fnmatch
from typing import Any

import endstate_harness.inside as inside
from endstate_harness.sandbox.base import Sandbox
from endstate_harness.verdict import Check, Verdict

_KEPT_ENV = ("PATH", "HOME", "LANG", "LC_ALL", "LC_CTYPE", "TZ", "TMPDIR", "USER")
"""The only variables the test interpreter inherits; every PYTHON* variable is dropped."""

_ALLOWED_SKIP_OUTCOMES = ("skipped", "expected_failure")
_VALID_MODULE = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ_"



def _parse(source: str) -> ast.Module:
    """``ast.parse``, retried on a spurious ``SystemError``: CPython 3.11 before 3.11.8 can
    raise one when another thread parses at the same moment (gh-106905), and prove grades in
    threads. Self-contained (no harness import) because ``vendor`` copies this module."""
    for attempt in range(5):
        try:
            return ast.parse(source)
        except SystemError:
            if attempt == 4:
                raise
    raise AssertionError("unreachable")

def tests_pass(
    sandbox: Sandbox,
    *,
    start_dir: str = "tests",
    pattern: str = "test*.py",
    top_level_dir: str = ".",
    timeout_s: float = 120.0,
    min_tests: int = 1,
    name: str = "",
    python: str = "python3",
) -> Verdict:
    """Pass when every expected unittest test ran, in an isolated interpreter, and passed.

    Args (all keyword; the defaults suit a ``tests/`` package at the root of the fixture):
        start_dir: the folder discovery starts in, relative to the tree (``tests``).
        pattern: test file name pattern, as unittest's ``-p`` (``test*.py``).
        top_level_dir: the folder put on ``sys.path`` and test ids are relative to (``.``);
            with the default, ``start_dir`` must be a package (hold ``__init__.py``), exactly
            as for ``python -m unittest discover -s tests -t .``.
        timeout_s: wall clock for the whole run; on expiry the grader fails (120 s).
        min_tests: the least number of tests that must run and pass (1).
        name: label for the checks; default ``"unittest <start_dir>/"``.
        python: the interpreter to run in the sandbox (``python3``).

    Checks returned (each named ``<label>: …``):
        ``runner reported after the last test`` – the keyed report arrived (an early exit,
        a crash or a timeout leaves none); ``unittest machinery untouched`` – no watched
        function was replaced and no test method was swapped for code outside the test
        folder; ``all expected tests ran`` – every test id found statically in the pristine
        fixture's test files and in the holdout's, and at least ``min_tests``;
        ``all tests passed`` – no failure, error, unexpected success, and no skip or expected
        failure except where the pristine test source itself declares one.

    Known limits, by design or by nature:
        * always-equal (returning an object whose ``__eq__`` is always true) and
          read-the-test (inspecting the caller to return the literal it expects) pass: only
          holdout discipline stops them (``type(r) is str``; expected values kept in data).
        * pair it with ``files_unchanged`` on the test files, ``no_new_skips`` and
          ``changed_paths_within``: it does not itself notice an edited visible test.
        * the runner shares a process with the code under test; a payload written against
          this runner (finding its key by walking frames) could forge a report.
        * tests are counted statically: classes deriving (in the same file) from a
          ``…TestCase`` with ``test*`` methods; test methods inherited from another module and
          files with their own ``load_tests`` add no expectations (they still must pass).
        * no site-packages: tests needing third-party packages fail to import here.
        * hash randomisation is off (``PYTHONHASHSEED=0``), as in the sandbox (§4), unless
          the sandbox runs under another seed (prove's second grading): then that one.
    """
    label = name or f"unittest {start_dir.rstrip('/')}/"
    names = (
        f"{label}: runner reported after the last test",
        f"{label}: unittest machinery untouched",
        f"{label}: all expected tests ran",
        f"{label}: all tests passed",
    )
    key = secrets.token_hex(16)
    sealed = sealed_digests(sandbox, start_dir, pattern)
    command = build_command(
        key,
        start_dir=start_dir,
        pattern=pattern,
        top_level_dir=top_level_dir,
        python=python,
        sealed=sealed,
        hash_seed=str(getattr(sandbox, "hash_seed", "0")),
        order=str(getattr(sandbox, "test_order", "") or ""),
    )
    result = sandbox.run(command, timeout_s=timeout_s)
    inventories, reports = parse_channel(result.stdout, key)
    if result.timed_out or len(inventories) != 1 or len(reports) != 1:
        if result.timed_out:
            why = f"timed out after {timeout_s}s"
        elif len(reports) > 1 or len(inventories) > 1:
            why = "more than one report carried this run's key: the report was forged"
        else:
            tail = result.output[-1500:].strip()
            why = (
                f"no report from the runner (exit {result.exit_code}): the run ended before the "
                f"last test, e.g. an os._exit or a crash in the code under test\n{tail}"
            )
        return Verdict.from_checks(
            [Check(name=names[0], passed=False, detail=why)]
            + [Check(name=n, passed=False, detail="no report") for n in names[1:]]
        )
    inventory, report = inventories[0], reports[0]
    expectation = expected_tests(sandbox, inventory, start_dir, pattern, top_level_dir)
    return Verdict.from_checks(
        [
            Check(name=names[0], passed=True, detail=f"Python {report.get('python', '?')}"),
            *judge(report, expectation, min_tests, names[1:]),
        ]
    )


# ----- the command and its channel -------------------------------------------------------------


def runner_source() -> str:
    """The runner's source text, read from this package (it is shipped, never imported)."""
    return inside.program("unittest_runner")


def sealed_digests(sandbox: Sandbox, start_dir: str, pattern: str) -> dict[str, str]:
    """sha256 of each sealed end-state test file, so the runner sends back only the text of
    files that differ from it (the holdout's)."""
    start = posixpath.normpath(start_dir.replace("\\", "/"))
    return {
        path: hashlib.sha256(text.encode("utf-8")).hexdigest()
        for path, text in sandbox.end_state_files().items()
        if _is_test_file(path, start, pattern)
    }


def build_command(
    key: str,
    *,
    start_dir: str,
    pattern: str,
    top_level_dir: str,
    python: str = "python3",
    sealed: dict[str, str] | None = None,
    hash_seed: str = "0",
    order: str = "",
) -> str:
    """The shell command that runs the runner in a cleared environment (see module doc),
    under the sandbox's ``hash_seed``, the tests in its ``order`` (as discovered: "")."""
    config: dict[str, object] = {
        "key": key,
        "start_dir": start_dir,
        "pattern": pattern,
        "top_level_dir": top_level_dir,
        "sealed": dict(sealed or {}),
    }
    if order:  # only then: the command of a default grading is the one it always was
        config["order"] = order
    source = runner_source() + f"\nmain({config!r})\n"
    kept = " ".join(f'${{{v}+"{v}=${v}"}}' for v in _KEPT_ENV)
    return (
        f"env -i {kept} PYTHONHASHSEED={hash_seed if hash_seed.isdigit() else '0'} "
        "PYTHONDONTWRITEBYTECODE=1 PYTHONSAFEPATH=1 "
        f"{shlex.quote(python)} -s -S -B "
        f"-c {shlex.quote(source)}"
    )


def parse_channel(stdout: str, key: str) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The inventory and report lines carrying ``key`` (the runner writes each exactly once)."""
    inventories: list[dict[str, Any]] = []
    reports: list[dict[str, Any]] = []
    marker = key + " "
    for line in stdout.splitlines():
        at = line.find(marker)
        if at < 0:
            continue
        kind, _, payload = line[at + len(marker) :].partition(" ")
        try:
            data = json.loads(payload)
        except ValueError:
            continue
        if not isinstance(data, dict):
            continue
        if kind == "inventory":
            inventories.append(data)
        elif kind == "report":
            reports.append(data)
    return inventories, reports


# ----- what should run -------------------------------------------------------------------------


@dataclass
class Expectation:
    """The test ids that must run, and whether the pristine source lets each be skipped."""

    ids: dict[str, bool] = field(default_factory=dict)
    from_fixture: int = 0
    from_holdout: int = 0
    notes: list[str] = field(default_factory=list)


def expected_tests(
    sandbox: Sandbox,
    inventory: dict[str, Any],
    start_dir: str,
    pattern: str,
    top_level_dir: str,
) -> Expectation:
    """Test ids from the pristine fixture's test files and from files the holdout staged.

    The fixture's files are every end-state path plus every changed path (a deleted file is a
    changed path), read with ``fixture_text``. A holdout file is one the runner saw in the
    live tree whose text is not the sealed end state's: it was staged after the seal.
    """
    start = posixpath.normpath(start_dir.replace("\\", "/"))
    top = posixpath.normpath(top_level_dir.replace("\\", "/"))
    sealed = sandbox.end_state_files()
    changed = set(sandbox.changed_paths())
    known = set(sealed) | changed
    fixture_files = {p for p in known if p not in changed or sandbox.fixture_text(p)}
    live_files: dict[str, str] = {
        str(k): str(v) for k, v in dict(inventory.get("files") or {}).items()
    }
    live_packages = {str(p) for p in inventory.get("packages") or []}
    # The runner sent whole only the files whose text is not the sealed one's.
    holdout = {p: t for p, t in live_files.items() if sealed.get(p) != t}

    out = Expectation()
    for path in sorted(fixture_files):
        if path in holdout or not _is_test_file(path, start, pattern):
            continue
        if not _discoverable(path, start, lambda d: f"{d}/__init__.py" in fixture_files):
            continue
        out.from_fixture += _add_ids(out, path, sandbox.fixture_text(path), top)
    for path, text in sorted(holdout.items()):
        if not _is_test_file(path, start, pattern):
            continue
        if not _discoverable(path, start, lambda d: d in live_packages):
            continue
        out.from_holdout += _add_ids(out, path, text, top)
    return out


def _is_test_file(path: str, start: str, pattern: str) -> bool:
    inside = start == "." or path.startswith(start + "/")
    base = posixpath.basename(path)
    return (
        inside
        and base.endswith(".py")
        and base[:1] in _VALID_MODULE
        and base[:-3].isidentifier()
        and fnmatch(base, pattern)
    )


def _discoverable(path: str, start: str, has_init: Any) -> bool:
    """unittest descends only into sub-folders that are packages."""
    folder = posixpath.dirname(path)
    while folder and folder != start and folder != ".":
        if not has_init(folder):
            return False
        folder = posixpath.dirname(folder)
    return True


def _add_ids(out: Expectation, path: str, text: str, top: str) -> int:
    relative = posixpath.relpath(path, top) if top != "." else path
    if relative.startswith("../"):
        return 0
    module = relative[:-3].replace("/", ".")
    ids, note = static_test_ids(text, module)
    if note:
        out.notes.append(f"{path}: {note}")
    out.ids.update(ids)
    return len(ids)


def static_test_ids(source: str, module: str) -> tuple[dict[str, bool], str]:
    """Test ids a unittest loader would find in ``source``, read without running it.

    Returns ``({id: may_skip}, note)``. ``may_skip`` is true when the pristine source itself
    can skip the test (a skip/expectedFailure decorator on the method or class, or a
    ``skipTest`` call in the method, ``setUp`` or ``setUpClass``): such a skip is the author's,
    not the agent's. The note explains a file that yields no expectations.
    """
    try:
        tree = _parse(source)
    except (SyntaxError, ValueError) as exc:
        return {}, f"not parseable ({exc}); it must still import and pass"
    if any(
        isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name == "load_tests"
        for node in tree.body
    ):
        return {}, "defines load_tests, so its tests are not counted statically"
    classes = {node.name: node for node in tree.body if isinstance(node, ast.ClassDef)}

    def is_test_case(cls: ast.ClassDef, seen: frozenset[str]) -> bool:
        for base in cls.bases:
            base_name = _dotted(base)
            if base_name.split(".")[-1].endswith("TestCase"):
                return True
            local = classes.get(base_name)
            if local is None or base_name in seen:
                continue
            if is_test_case(local, seen | {base_name}):
                return True
        return False

    def methods(cls: ast.ClassDef, seen: frozenset[str]) -> dict[str, bool]:
        found: dict[str, bool] = {}
        for base in reversed(cls.bases):
            local = classes.get(_dotted(base))
            if local is not None and local.name not in seen:
                found.update(methods(local, seen | {local.name}))
        class_skips = _declares_skip(cls.decorator_list) or any(
            isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))
            and n.name in ("setUp", "setUpClass", "asyncSetUp")
            and _calls_skip(n)
            for n in cls.body
        )
        for node in cls.body:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name.startswith(
                "test"
            ):
                found[node.name] = (
                    class_skips or _declares_skip(node.decorator_list) or _calls_skip(node)
                )
        if class_skips:
            found = dict.fromkeys(found, True)
        return found

    ids: dict[str, bool] = {}
    for cls in classes.values():
        if is_test_case(cls, frozenset({cls.name})):
            for method, may_skip in methods(cls, frozenset({cls.name})).items():
                ids[f"{module}.{cls.name}.{method}"] = may_skip
    return ids, ""


def _dotted(node: ast.expr) -> str:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return f"{_dotted(node.value)}.{node.attr}"
    return ""


def _declares_skip(decorators: list[ast.expr]) -> bool:
    for decorator in decorators:
        target = decorator.func if isinstance(decorator, ast.Call) else decorator
        last = _dotted(target).split(".")[-1].lower()
        if "skip" in last or "expectedfailure" in last or "xfail" in last:
            return True
    return False


def _calls_skip(function: ast.AST) -> bool:
    for node in ast.walk(function):
        if isinstance(node, ast.Call):
            last = _dotted(node.func).split(".")[-1]
            if last in ("skipTest", "SkipTest"):
                return True
        if isinstance(node, ast.Raise) and node.exc is not None:
            target = node.exc.func if isinstance(node.exc, ast.Call) else node.exc
            if _dotted(target).endswith("SkipTest"):
                return True
    return False


# ----- the verdict -----------------------------------------------------------------------------


def judge(
    report: dict[str, Any], expected: Expectation, min_tests: int, names: tuple[str, ...]
) -> list[Check]:
    """Turn the runner's report and the expectation into the last three checks."""
    raw_outcomes = dict(report.get("outcomes") or {})
    outcomes: dict[str, str] = {str(k): str(v) for k, v in raw_outcomes.items()}
    tampered = dict(report.get("tampered") or {})
    replaced = dict(report.get("replaced") or {})
    problems = list(report.get("problems") or [])
    load_error = report.get("load_error")

    untouched_detail = ""
    if tampered:
        first = ", ".join(f"{k} (during {v})" for k, v in sorted(tampered.items())[:6])
        untouched_detail = f"patched while the tests ran: {first}"
    if replaced:
        swapped = ", ".join(f"{k} ({v})" for k, v in sorted(replaced.items())[:6])
        untouched_detail = untouched_detail + "; " if untouched_detail else ""
        untouched_detail += f"test methods swapped for code outside the tests: {swapped}"
    machinery = Check(name=names[0], passed=not (tampered or replaced), detail=untouched_detail)

    missing = sorted(i for i in expected.ids if i not in outcomes)
    ran_ok = [i for i, o in outcomes.items() if o == "passed"]
    origin = f"{expected.from_fixture} from the fixture, {expected.from_holdout} from the holdout"
    count = len(expected.ids)
    ran_detail = f"{count - len(missing)} of {count} expected ran ({origin})"
    ran_passed = not missing and len(ran_ok) >= min_tests
    if missing:
        ran_detail += f"; did not run: {', '.join(missing[:8])}"
        if len(missing) > 8:
            ran_detail += f" and {len(missing) - 8} more"
    if len(ran_ok) < min_tests:
        ran_detail += f"; {len(ran_ok)} passed, at least {min_tests} required"
    if load_error:
        ran_detail += f"\ndiscovery failed:\n{load_error}"
    if expected.notes:
        ran_detail += "\n" + "\n".join(expected.notes)
    ran = Check(name=names[1], passed=ran_passed, detail=ran_detail)

    bad = {
        i: o
        for i, o in outcomes.items()
        if o != "passed" and not (o in _ALLOWED_SKIP_OUTCOMES and expected.ids.get(i))
    }
    pass_detail = f"{len(ran_ok)} of {len(outcomes)} passed"
    if bad:
        listed = ", ".join(f"{i} ({o})" for i, o in sorted(bad.items())[:8])
        pass_detail += f"; not passed: {listed}"
        texts = [str(p.get("text", "")) for p in problems if str(p.get("id")) in bad][:3]
        if texts:
            pass_detail += "\n" + "\n".join(texts)
    if load_error and not outcomes:
        pass_detail += "; nothing ran"
    passed = Check(
        name=names[2], passed=not bad and bool(outcomes) and not load_error, detail=pass_detail
    )
    return [machinery, ran, passed]
