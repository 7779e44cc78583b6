"""The reference grader library on real trees, resolution and its contract, and grade()."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

from endstate_harness import graders as g
from endstate_harness.graders import GraderContractError, grade, requirements_checks, resolve
from endstate_harness.graders.names import GRADERS, RECORDS
from endstate_harness.sandbox.local import LocalSandbox
from endstate_harness.task import GraderSpec, Requires
from endstate_harness.verdict import Verdict
from tests.harness.grader_fixture import UNITTEST_COMMAND, make_task

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def task(tmp_path: Path) -> Path:
    return make_task(tmp_path / "task")


@pytest.fixture
def box(task: Path) -> Iterator[LocalSandbox]:
    with LocalSandbox(task / "fixture") as sandbox:
        yield sandbox


def names(verdict: Verdict) -> list[str]:
    return [c.name for c in verdict.checks]


# ----- the library on real trees ------------------------------------------------------------


def test_command_succeeds(box: LocalSandbox, task: Path) -> None:
    failing = g.command_succeeds(box, command=UNITTEST_COMMAND)
    assert not failing.passed
    assert failing.checks[0].detail.startswith("exit 1")
    assert g.command_succeeds(box, command="exit 3", expect_exit_code=3, name="three").passed
    slow = g.command_succeeds(box, command="sleep 5", timeout_s=0.5)
    assert not slow.passed and slow.checks[0].detail == "timed out after 0.5s"
    box.stage(task / "solution")
    assert g.command_succeeds(box, command=UNITTEST_COMMAND).passed


def test_files_unchanged(box: LocalSandbox) -> None:
    assert g.files_unchanged(box, paths=["tests/test_mod.py", "README.md"]).passed
    (box.live / "README.md").write_text("changed\n")
    (box.live / "tests" / "test_mod.py").unlink()
    verdict = g.files_unchanged(box, paths=["tests/test_mod.py", "README.md", "never.txt"])
    assert [(c.passed, c.detail) for c in verdict.checks] == [
        (False, "deleted or emptied"),
        (False, "modified"),
        (True, ""),
    ]
    assert names(g.files_unchanged(box, paths=["a", "b"], name="pinned")) == ["pinned", "pinned"]


def test_paths_exist_and_absent(box: LocalSandbox) -> None:
    assert g.paths_exist(box, paths=["pkg/mod.py", "docs"]).passed
    assert not g.paths_exist(box, paths=["pkg/mod.py", "pkg/new.py"]).passed
    assert g.paths_absent(box, paths=["pkg/new.py"]).passed
    (box.live / "pkg" / "mod.py").unlink()
    assert g.paths_absent(box, paths=["pkg/mod.py"]).passed
    assert names(g.paths_absent(box, paths=["x"])) == ["x is gone"]


def test_file_matches_and_contains(box: LocalSandbox) -> None:
    assert g.file_matches(box, path="pkg/mod.py", pattern=r"^def clamp").passed
    assert not g.file_matches(box, path="pkg/mod.py", pattern=r"hi\)\)$").passed
    assert g.file_matches(box, path="pkg/mod.py", pattern="hi - 1", should_match=True).passed
    assert not g.file_matches(box, path="pkg/mod.py", pattern="hi - 1", should_match=False).passed
    assert g.file_matches(box, path="missing.py", pattern="x", should_match=False).passed
    assert g.file_contains(box, path="README.md", text="with a bug").passed
    assert not g.file_contains(
        box, path="README.md", text="with a bug", should_contain=False
    ).passed
    assert names(g.file_contains(box, path="README.md", text="x")) == ["README.md contains 'x'"]


def test_pattern_count(box: LocalSandbox) -> None:
    assert g.pattern_count(box, pattern=r"^def ", minimum=2, maximum=2).passed
    verdict = g.pattern_count(box, pattern=r"^def ", maximum=1)
    assert not verdict.passed and verdict.checks[0].detail.startswith("found 2 in")
    assert g.pattern_count(box, pattern="bug", glob="*.md", minimum=1).passed
    assert g.pattern_count(box, pattern="clamp", paths=["pkg/mod.py"], minimum=1, maximum=1).passed
    assert names(g.pattern_count(box, pattern="x")) == ["/x/ occurs any number of times"]


def test_no_new_skips(box: LocalSandbox) -> None:
    assert g.no_new_skips(box).passed
    test_file = box.live / "tests" / "test_mod.py"
    test_file.write_text(
        test_file.read_text().replace(
            "    def test_add", "    @unittest.skip('x')\n    def test_add"
        )
    )
    verdict = g.no_new_skips(box)
    assert not verdict.passed and verdict.checks[0].detail == "tests/test_mod.py (+1)"
    assert g.no_new_skips(box, glob="*.md").passed


def test_tree_unchanged_and_changed_paths_within(box: LocalSandbox, task: Path) -> None:
    assert g.tree_unchanged(box).passed
    assert g.changed_paths_within(box, allowed=[]).passed
    box.stage(task / "solution")
    assert not g.tree_unchanged(box).passed
    assert g.changed_paths_within(box, allowed=["pkg/*"]).passed
    (box.live / "docs" / "notes.md").unlink()
    (box.live / "docs" / "extra").mkdir()
    (box.live / "docs" / "extra" / "b.md").write_text("b")
    stray = g.changed_paths_within(box, allowed=["pkg/*"])
    assert not stray.passed and stray.checks[0].detail == "docs/extra/b.md, docs/notes.md"
    assert g.changed_paths_within(box, allowed=["pkg/*", "*.md"]).passed  # * crosses folders


def test_graders_read_the_sealed_end_state(box: LocalSandbox, task: Path) -> None:
    box.seal()
    box.stage(task / "holdout")
    assert g.tree_unchanged(box).passed
    assert g.paths_absent(box, paths=["tests/test_holdout.py"]).passed


# ----- resolution -----------------------------------------------------------------------------


def test_reference_names_resolve_to_this_module() -> None:
    for short in g.REFERENCE_GRADERS:
        for name in (f"endstate.evals.graders:{short}", f"endstate.evals.graders.{short}"):
            assert resolve(GraderSpec(name=name, args=_minimal_args(short))).__name__ == short
    assert set(g.REFERENCE_GRADERS) == {r.name for r in GRADERS if r.reference}
    assert set(g.BUILTIN_GRADERS) == {r.name for r in GRADERS}
    with pytest.raises(GraderContractError, match="has no grader 'tests_pass'"):
        resolve(GraderSpec(name="endstate.evals.graders:tests_pass"))
    assert resolve(GraderSpec(name="endstate_harness.graders:tests_pass")).__name__ == "tests_pass"


def _minimal_args(short: str) -> dict[str, object]:
    return dict(RECORDS[short].example)


def test_every_builtin_is_fully_annotated() -> None:
    import inspect

    for short, function in g.BUILTIN_GRADERS.items():
        signature = inspect.signature(function, eval_str=True)
        assert signature.return_annotation is Verdict, short
        for parameter in signature.parameters.values():
            assert parameter.annotation is not inspect.Parameter.empty, (short, parameter.name)
    params = inspect.signature(g.command_succeeds).parameters
    assert params["timeout_s"].annotation == (float | None)
    assert inspect.signature(g.files_unchanged).parameters["paths"].annotation == list[str]


def test_alias_resolution_never_imports_endstate() -> None:
    code = (
        "import sys\n"
        "from endstate_harness.graders import resolve\n"
        "from endstate_harness.task import GraderSpec\n"
        "resolve(GraderSpec(name='endstate.evals.graders:tree_unchanged'))\n"
        "resolve(GraderSpec(name='endstate.evals.graders.no_new_skips'))\n"
        "assert not [m for m in sys.modules if m.split('.')[0] == 'endstate'], 'imported'\n"
        "import endstate; print(endstate.__file__)\n"  # and the real one is installed
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT)
    assert done.returncode == 0, done.stderr
    assert "site-packages" in done.stdout


def _write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text))
    return path


@pytest.mark.parametrize(
    ("source", "message"),
    [
        ("def bad(box): ...", "must take `sandbox` first, not 'box'"),
        ("def bad(*, sandbox): ...", "as a positional parameter"),
        ("def bad(): ...", "takes no parameters"),
        ("def bad(sandbox, *, transcript): ...", "takes 'transcript'"),
        ("def bad(sandbox, messages=None): ...", "takes 'messages'"),
        ("def bad(sandbox, **extra): ...", r"takes \*\*extra"),
        ("bad = 3", "is not callable"),
        ("def other(sandbox): ...", "has no 'bad'"),
        ("raise RuntimeError('boom at import')", "RuntimeError: boom at import"),
        ("def bad(sandbox, *, need): ...", "args do not fit its signature"),
    ],
)
def test_contract_errors(tmp_path: Path, source: str, message: str) -> None:
    _write(tmp_path / "contract_mod.py", source)
    with pytest.raises(GraderContractError, match=message):
        resolve(GraderSpec(name="contract_mod:bad"), search_paths=[tmp_path])


def test_bad_names() -> None:
    for name in ("nomodule", "mod:", ":fn", "no_such_module_xyz:fn"):
        with pytest.raises(GraderContractError):
            resolve(GraderSpec(name=name))
    with pytest.raises(GraderContractError, match=r"got an unexpected keyword argument .pathz."):
        resolve(
            GraderSpec(name="endstate.evals.graders:paths_exist", args={"paths": [], "pathz": []})
        )


SUITE_GRADER = """
    from endstate.evals import Check, Sandbox, Verdict

    MARK = {mark!r}


    def no_secrets(sandbox: Sandbox, *, needle: str = "SECRET") -> Verdict:
        hits = [p for p, t in sandbox.end_state_files().items() if needle in t]
        return Verdict.from_checks(
            [Check(name=f"{{MARK}}: no {{needle}}", passed=not hits, detail=", ".join(hits))]
        )
"""


def test_suite_modules_resolve_from_the_task_folder_and_do_not_collide(
    tmp_path: Path, box: LocalSandbox
) -> None:
    one, two = tmp_path / "suite1" / "t1", tmp_path / "suite2" / "t2"
    _write(one / "mygraders" / "__init__.py", "")
    _write(one / "mygraders" / "checks.py", SUITE_GRADER.format(mark="one"))
    _write(two / "mygraders" / "__init__.py", "")
    _write(two / "mygraders" / "checks.py", SUITE_GRADER.format(mark="two"))
    spec = GraderSpec(name="mygraders.checks:no_secrets")
    first = resolve(spec, search_paths=g.grader_search_paths(one))(box)
    second = resolve(spec, search_paths=g.grader_search_paths(two))(box)
    assert names(first) == ["one: no SECRET"] and first.passed
    assert names(second) == ["two: no SECRET"]
    assert "mygraders" not in sys.modules and str(one) not in sys.path
    (box.live / "leak.txt").write_text("SECRET=1")
    verdict = grade([spec], box, search_paths=[one])
    assert not verdict.passed and verdict.checks[0].detail == "leak.txt"


def test_grader_search_paths_order(tmp_path: Path) -> None:
    project = tmp_path / "proj"
    task = project / "suite" / "t"
    task.mkdir(parents=True)
    (project / "pyproject.toml").write_text("")
    extra = tmp_path / "extra"
    paths = g.grader_search_paths(task, suite_root=project / "suite", grader_paths=[extra, task])
    assert paths == [
        task.resolve(),
        (project / "suite").resolve(),
        project.resolve(),
        extra.resolve(),
    ]


def test_compat_alias_works_when_endstate_is_not_importable(tmp_path: Path) -> None:
    """With the real package hidden from the path finder, ``from endstate.evals import …``
    in a suite module gets this project's classes, and the grade runs."""
    _write(tmp_path / "suite" / "sg.py", SUITE_GRADER.format(mark="compat"))
    suite = str(tmp_path / "suite")
    code = textwrap.dedent(
        f"""
        import importlib.machinery, sys
        class Hide(importlib.machinery.PathFinder):
            @classmethod
            def find_spec(cls, name, path=None, target=None):
                if name == "endstate":
                    return None
                return super().find_spec(name, path, target)
        sys.meta_path[:] = [Hide if f is importlib.machinery.PathFinder else f
                            for f in sys.meta_path]
        from endstate_harness.graders import resolve
        from endstate_harness.task import GraderSpec
        from endstate_harness.verdict import Verdict
        grader = resolve(GraderSpec(name="sg:no_secrets"), search_paths=[{suite!r}])
        import endstate.evals
        assert endstate.evals.Verdict is Verdict, endstate.evals.Verdict
        import endstate.evals.graders as eg, endstate_harness.graders.reference as hr
        assert eg is hr
        print("ok")
        """
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "ok"


def test_a_suite_module_using_the_real_endstate_is_graded(
    tmp_path: Path, box: LocalSandbox
) -> None:
    """endstate is installed here, so the suite module gets endstate's own Verdict; grade()
    accepts that shape."""
    _write(tmp_path / "real_sg.py", SUITE_GRADER.format(mark="real"))
    verdict = grade([GraderSpec(name="real_sg:no_secrets")], box, search_paths=[tmp_path])
    assert isinstance(verdict, Verdict) and verdict.passed and names(verdict) == ["real: no SECRET"]


# ----- grade ----------------------------------------------------------------------------------


def test_grade_conjoins_and_fails_on_raise_or_unresolvable(
    tmp_path: Path, box: LocalSandbox
) -> None:
    _write(
        tmp_path / "odd.py",
        """
        def boom(sandbox):
            raise ValueError("no such file: x")

        def not_a_verdict(sandbox):
            return 42

        def failed_no_checks(sandbox):
            from endstate_harness.verdict import Verdict
            return Verdict.fail("said no")
        """,
    )
    ok = GraderSpec(name="endstate.evals.graders:tree_unchanged")
    assert grade([ok], box).passed
    raised = grade([ok, GraderSpec(name="odd:boom")], box, search_paths=[tmp_path])
    assert not raised.passed and raised.reason == "odd:boom raised ValueError: no such file: x"
    assert names(raised) == ["the sandbox is untouched"]
    assert (
        "not a Verdict"
        in grade([GraderSpec(name="odd:not_a_verdict")], box, search_paths=[tmp_path]).reason
    )
    assert not grade(
        [ok, GraderSpec(name="odd:failed_no_checks")], box, search_paths=[tmp_path]
    ).passed
    unresolved = grade([GraderSpec(name="odd:missing")], box, search_paths=[tmp_path])
    assert not unresolved.passed and "cannot resolve" in unresolved.reason
    assert not grade([], box).passed


def test_requirements_checks_match_the_reference() -> None:
    from endstate.evals.task import RunRequirements

    data = {
        "compaction_events": {"min": 1},
        "denied_calls": {"min": 1, "max": 1},
        "steps": {"max": 8},
        "total_tokens": {},
        "stop_reason": "end_turn",
    }
    counters = {
        "compaction_events": 0,
        "denied_calls": 1,
        "unsettled_calls": 0,
        "steps": 9,
        "input_tokens": 0,
        "output_tokens": 0,
        "total_tokens": 5,
    }
    ours = requirements_checks(Requires.model_validate(data), counters, "max_steps")
    theirs = RunRequirements.model_validate(data).check(counters, "max_steps")
    assert [c.model_dump() for c in ours] == [c.model_dump() for c in theirs]
    assert [c.passed for c in ours] == [False, True, False, True, False]


# ----- graders read the program Python runs (issue 42, class 5) -------------------------------


def _utf7(statement: str) -> str:
    """A comment to UTF-8 that is ``\\n<statement>\\n`` to a UTF-7 decoder."""
    import base64  # deferred: only these tests encode

    raw = base64.b64encode(("\n" + statement + "\n").encode("utf-16-be")).decode().rstrip("=")
    return f"# +{raw}-\n"


def test_text_graders_refuse_python_that_declares_another_encoding(box: LocalSandbox) -> None:
    """A skip, a pattern or a text hidden by ``# coding: utf-7`` in what UTF-8 reads as a
    comment is code to the interpreter: the graders that read Python files as text fail
    rather than count in another program than the one that runs."""
    test_file = box.live / "tests" / "test_mod.py"
    original = test_file.read_text()
    hidden = _utf7("@unittest.skip('x')").rstrip("\n")
    skipped = original.replace("    def test_add", f"    {hidden}\n    def test_add")
    assert "+" not in original and original.isascii()
    test_file.write_text("# -*- coding: utf-7 -*-\n" + skipped)
    source = test_file.read_bytes()
    assert b"@unittest.skip" not in source and b"@unittest.skip" in source.decode("utf-7").encode()
    verdict = g.no_new_skips(box)
    assert not verdict.passed and "declares the source encoding 'utf-7'" in verdict.checks[0].detail
    counted = g.pattern_count(box, pattern=r"unittest\.skip", paths=["tests/test_mod.py"],
                              maximum=0)
    assert not counted.passed and "utf-7" in counted.checks[0].detail
    assert not g.file_contains(box, path="tests/test_mod.py", text="unittest.skip",
                               should_contain=False).passed
    assert not g.file_matches(box, path="tests/test_mod.py", pattern="skip",
                              should_match=False).passed
    # the same text in a file Python does not run is text: counted as before
    (box.live / "notes.txt").write_text("# -*- coding: utf-7 -*-\nskip\n")
    assert g.file_contains(box, path="notes.txt", text="skip").passed
    # a UTF-8 declaration (any spelling) and a BOM are UTF-8
    test_file.write_text("# -*- coding: UTF8 -*-\n" + original)
    assert g.no_new_skips(box).passed
    test_file.write_bytes(b"\xef\xbb\xbf" + original.encode())
    assert g.no_new_skips(box).passed


@pytest.mark.parametrize(
    ("head", "codec"),
    [
        (b"# coding: utf-7\n", "utf-7"),
        (b"#!/usr/bin/env python\n# vim: set fileencoding=latin-1 :\n", "iso8859-1"),
        (b"#!/usr/bin/env python\r# coding: utf-7\r", "utf-7"),  # old Mac line ends
        (b"# coding: utf-8\n", "utf-8"),
        (b"x = 1\n# coding: utf-7\n", "utf-8"),  # a declaration on line 2 needs line 1 empty
        (b"\n\n# coding: utf-7\n", "utf-8"),  # line 3: not a declaration
        (b"\xef\xbb\xbfx = 1\n", "utf-8-sig"),
    ],
)
def test_the_encoding_is_the_interpreters(head: bytes, codec: str) -> None:
    from endstate_harness.graders.pysource import declared_encoding, python_text

    text = head.decode("utf-8") + "y = 2\n"
    assert declared_encoding(text) == codec
    decoded, refused = python_text(text, "m.py")
    assert bool(refused) == (codec not in ("utf-8", "utf-8-sig"))
    if not refused:
        assert "\r" not in decoded and not decoded.startswith("\ufeff")
    _, unknown = python_text("# coding: no-such-codec\n", "m.py")
    assert "does not parse" in unknown


def test_every_binding_of_a_name_is_found() -> None:
    """Each statement shape that binds ``f`` at module level, besides its def."""
    from endstate_harness.graders import pyast
    from endstate_harness.graders.pysource import scope_bindings

    shapes = {
        "del f": "del",
        "for f in ():\n    pass": "a for target",
        "with open('x') as f:\n    pass": "a with target",
        "try:\n    pass\nexcept Exception as f:\n    pass": "an except target",
        "match 1:\n    case f:\n        pass": "a match capture",
        "match {}:\n    case {**f}:\n        pass": "a match capture",
        "[(f := 1) for _ in ()]": "a walrus",
        "def g(x=(f := 1)):\n    pass": "a walrus",
        "def g():\n    def h():\n        global f\n        f = 1": (
            "a global declaration in a function"
        ),
        "import os as f": "import",
        "from os import path as f": "import",
        "class f:\n    pass": "class",
        "f, g = 1, 2": "assignment",
        "f += 1": "assignment",
        "if True:\n    def f():\n        pass": "def",
    }
    for code, how in shapes.items():
        tree = pyast.parse("def f():\n    pass\n" + code + "\n")
        found = scope_bindings(tree.body).get("f", [])
        assert [b.how for b in found][1:] == [how], (code, found)
    # names bound inside functions, lambdas and classes are theirs
    inner = pyast.parse(
        "def g():\n    f = 1\nclass C:\n    f = 2\nh = lambda f: f\n[f for f in ()]\n"
    )
    assert "f" not in scope_bindings(inner.body)


@pytest.mark.parametrize(
    ("tail", "why"),
    [
        ("\nclamp = min\n", "bound again after its def"),
        ("\nif True:\n    def clamp(x, lo, hi):\n        return x\n", "bound again after its def"),
        ("\ndef _swap(f):\n    return min\n", ""),
        ("\nimport sys\nsys.modules[__name__].clamp = min\n", "writes names at run time"),
        ("\nexec('clamp = min')\n", "writes names at run time"),
    ],
)
def test_delegates_to_judges_every_binding(box: LocalSandbox, tail: str, why: str) -> None:
    (box.live / "pkg" / "mod.py").write_text(_DELEGATING + tail)
    box.seal()
    verdict = g.delegates_to(box, path="pkg/mod.py", functions=["clamp"], to="_bound")
    assert verdict.passed == (not why), verdict.checks[0].detail
    assert why in verdict.checks[0].detail


_DELEGATING = '''\
def _bound(x, lo, hi):
    return max(lo, min(x, hi))


def clamp(x, lo, hi):
    return _bound(x, lo, hi)


class Box:
    def limit(self, x):
        return self.clip(x)

    def clip(self, x):
        return max(0, min(x, 9))
'''


@pytest.mark.parametrize(
    ("tail", "why"),
    [
        ("", ""),
        ("\nBox.limit = lambda self, x: x\n", "writes an attribute named limit"),
        ("\nsetattr(Box, 'limit', len)\n", "writes an attribute named limit"),
        ("\nBox = dict\n", "bound again after its def"),
        ("\ndef _patch(box):\n    box.clip = len\n", "writes an attribute named clip"),
    ],
)
def test_a_method_is_judged_by_every_binding_too(box: LocalSandbox, tail: str, why: str) -> None:
    rebound_in_body = _DELEGATING.replace(
        "        return max(0, min(x, 9))\n",
        "        return max(0, min(x, 9))\n\n    limit = clip\n",
    )
    (box.live / "pkg" / "mod.py").write_text(_DELEGATING + tail)
    box.seal()
    verdict = g.delegates_to(box, path="pkg/mod.py", functions=["Box.limit"], to="clip")
    assert verdict.passed == (not why) and why in verdict.checks[0].detail, verdict
    if not tail:
        (box.live / "pkg" / "mod.py").write_text(rebound_in_body)
        fresh = LocalSandbox(box.live)
        with fresh:
            fresh.seal()
            again = g.delegates_to(fresh, path="pkg/mod.py", functions=["Box.limit"], to="clip")
        assert not again.passed and "bound again after its def" in again.checks[0].detail


def test_a_module_name_bound_again_is_not_the_module(box: LocalSandbox) -> None:
    """``core.bound(...)`` reaches ``pkg/core.py``'s function only while ``core`` is that
    module: bound again, the call goes wherever the last binding points."""
    core = "def bound(x, lo, hi):\n    return max(lo, min(x, hi))\n"
    (box.live / "pkg" / "core.py").write_text(core)
    delegating = (
        "import pkg.core as core\n\n\ndef clamp(x, lo, hi):\n    return core.bound(x, lo, hi)\n"
    )
    (box.live / "pkg" / "mod.py").write_text(delegating + "\n\nclass core:\n    bound = min\n")
    box.seal()
    verdict = g.delegates_to(box, path="pkg/mod.py", functions=["clamp"], to="bound")
    assert not verdict.passed, verdict.checks[0].detail
    (box.live / "pkg" / "mod.py").write_text(delegating)
    with LocalSandbox(box.live) as fresh:
        fresh.seal()
        plain = g.delegates_to(fresh, path="pkg/mod.py", functions=["clamp"], to="bound")
    assert plain.passed, plain.checks[0].detail


@pytest.mark.parametrize(
    "shadow", ["pkg/mod/__init__.py", "pkg/mod.cpython-311-x86_64-linux-gnu.so"]
)
def test_a_module_import_does_not_run_is_not_read(box: LocalSandbox, shadow: str) -> None:
    """``import pkg.mod`` runs the package ``pkg/mod/`` or an extension ``pkg/mod.*.so``
    before ``pkg/mod.py``: the source read must be the one that runs."""
    (box.live / "pkg" / "mod.py").write_text(_DELEGATING)
    (box.live / shadow).parent.mkdir(parents=True, exist_ok=True)
    (box.live / shadow).write_text("def clamp(x, lo, hi):\n    return x\n")
    box.seal()
    verdict = g.delegates_to(box, path="pkg/mod.py", functions=["clamp"], to="_bound")
    assert not verdict.passed and "`import` runs it, not pkg/mod.py" in verdict.checks[0].detail
