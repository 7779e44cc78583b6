"""ES2 — grader names, resolution, the contract and args; and the catalogue behind them.

Each code has a test that draws it (code, severity and the exact range of the node) and a
near-miss that does not. Ranges are computed from the literal node text in the written
task.json, so a test fails if a finding lands on the wrong node.
"""

from __future__ import annotations

import copy
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from endstate_author.engine import catalogue as cat
from endstate_author.engine.argtypes import check, describe, parse_annotation
from endstate_author.engine.catalogue import Catalogue, canonical_name, split_name
from endstate_author.engine.config import Config
from endstate_author.engine.diagnostics import Diagnostic
from endstate_author.lint.run import lint_task
from endstate_author.rules.registry import RULES, load_all
from tests.rules.conftest import GOOD_MANIFEST, GUIDE_GRADERS, TaskBuilder, good, lint

REPO = Path(__file__).resolve().parents[2]
E = "endstate.evals.graders"


def graders(*extra: dict[str, Any], base: bool = True) -> list[dict[str, Any]]:
    """The guide's four assertions plus ``extra`` entries."""
    out = copy.deepcopy(GUIDE_GRADERS) if base else []
    out.extend(copy.deepcopy(list(extra)))
    return out


def only(diags: list[Diagnostic], code: str) -> list[Diagnostic]:
    return [d for d in diags if d.code == code]


def span(text: str, needle: str, nth: int = 0) -> tuple[int, int, int, int]:
    """1-based (line, column, end_line, end_column) of the nth occurrence of ``needle``."""
    at = -1
    for _ in range(nth + 1):
        at = text.index(needle, at + 1)
    before = text[:at]
    line = before.count("\n") + 1
    column = at - (before.rfind("\n") + 1) + 1
    inside = text[at : at + len(needle)]
    end_line = line + inside.count("\n")
    end_column = (
        column + len(needle) if "\n" not in inside else len(inside) - inside.rfind("\n")
    )
    return line, column, end_line, end_column


def rng(d: Diagnostic) -> tuple[int, int, int, int]:
    return d.line, d.column, d.end_line, d.end_column


def manifest_text(task: Path) -> str:
    return (task / "task.json").read_text(encoding="utf-8")


SUITE_GRADERS = '''\
"""Suite graders for the tests: some sound, some breaking the contract on purpose."""
from endstate.evals import Check, Verdict


def no_secrets(sandbox, *, pattern: str = "sk-", paths: list[str] | None = None) -> Verdict:
    """Sound: sandbox first, every argument named."""
    return Verdict.from_checks([Check(name="ok", passed=True, detail="")])


def wrong_first(tree, *, pattern: str = "x"):
    return None


def kw_sandbox(*, sandbox):
    return None


def reads_transcript(sandbox, transcript: str = ""):
    return None


def takes_kwargs(sandbox, **options):
    return None


def positional_only(sandbox, limit: int, /):
    return None


def typed(sandbox, *, count: int = 0, ratio: float = 1.0, flag: bool = False,
          mode: "Literal['a', 'b']" = "a", label: str = None, extra: SomethingUnknown = None,
          table: dict[str, int] | None = None, pair: tuple[str, int] = ("a", 1)):
    return None
'''


def with_suite_module(make_task: TaskBuilder, manifest: dict[str, Any], **kw: Any) -> Path:
    """A task whose suite folder holds ``mytasks/graders.py`` (next to the tasks)."""
    task = make_task(manifest, **kw)
    pkg = task.parent / "mytasks"
    pkg.mkdir(exist_ok=True)
    (pkg / "__init__.py").write_text("", encoding="utf-8")
    (pkg / "graders.py").write_text(SUITE_GRADERS, encoding="utf-8")
    return task


# ----- the guide's example is clean ------------------------------------------------------------


def test_es2_guide_example_has_no_es2_findings(make_task: TaskBuilder) -> None:
    found = [d for d in lint(make_task()) if d.code.startswith("ES2")]
    assert found == []
    assert GOOD_MANIFEST["graders"] == GUIDE_GRADERS


def test_es2_every_reference_grader_and_tests_pass_resolve_cleanly(make_task: TaskBuilder) -> None:
    extra = [
        {"name": f"{E}:paths_exist", "args": {"paths": ["chunker/core.py"]}},
        {"name": f"{E}:paths_absent", "args": {"paths": ["chunker/old.py"]}},
        {"name": f"{E}:file_matches", "args": {"path": "chunker/core.py", "pattern": "def"}},
        {"name": f"{E}:file_contains", "args": {"path": "chunker/core.py", "text": "chunk",
                                                "should_contain": True}},
        {"name": f"{E}:pattern_count", "args": {"pattern": "print", "maximum": 0}},
        {"name": f"{E}:command_succeeds", "args": {"command": "python3 -m unittest -q",
                                                   "timeout_s": 60, "expect_exit_code": 0}},
        {"name": "endstate_harness.graders:tests_pass",
         "args": {"start_dir": "tests", "min_tests": 1, "timeout_s": 90}},
    ]
    found = [d for d in lint(make_task(good(graders=graders(*extra)))) if d.code.startswith("ES2")]
    assert found == []


# ----- ES201 ----------------------------------------------------------------------------------


def test_es201_bare_function_name_draws_with_suggestion(make_task: TaskBuilder) -> None:
    task = make_task(good(graders=graders({"name": "command_succeeds",
                                           "args": {"command": "make test"}})))
    [d] = only(lint(task), "ES201")
    assert d.severity == "error"
    assert rng(d) == span(manifest_text(task), '"command_succeeds"')
    assert "not a `module:function` path" in d.message
    assert f"{E}:command_succeeds" in d.message
    assert d.fix is not None and d.fix.safe  # the one suggestion: lint --fix applies it
    assert d.fix.edits[0].new_text == json.dumps(f"{E}:command_succeeds")


def test_es201_missing_name_draws_at_the_entry(make_task: TaskBuilder) -> None:
    text = json.dumps(good(graders=graders({"args": {"command": "x"}})), indent=2)
    task = make_task(text, name="fix-chunk-off-by-one")
    [d] = only(lint(task), "ES201")
    entry = '{\n      "args": {\n        "command": "x"\n      }\n    }'
    assert rng(d) == span(text, entry)
    assert "ES102" not in [x.code for x in lint(task)]


def test_es201_non_string_name_draws_at_the_value(make_task: TaskBuilder) -> None:
    task = make_task(good(graders=graders({"name": 42})))
    [d] = only(lint(task), "ES201")
    assert rng(d) == span(manifest_text(task), "42")
    assert "not the number 42" in d.message


@pytest.mark.parametrize("name", ["a:b:c", "mod:", ":f", "my-pkg.graders:check", " x.y:z", ""])
def test_es201_malformed_names_draw(make_task: TaskBuilder, name: str) -> None:
    task = make_task(good(graders=graders({"name": name})))
    assert [d.code for d in lint(task) if d.code.startswith("ES2")] == ["ES201"]


def test_es201_last_dot_form_is_accepted(make_task: TaskBuilder) -> None:
    task = make_task(good(graders=graders(
        {"name": f"{E}.file_contains", "args": {"path": "a", "text": "b"}})))
    assert [d for d in lint(task) if d.code.startswith("ES2")] == []


# ----- ES202 ----------------------------------------------------------------------------------


def test_es202_builtin_typo_suggests_the_function(make_task: TaskBuilder) -> None:
    g = graders(base=True)
    g[0]["name"] = f"{E}:command_succeed"
    task = make_task(good(graders=g))
    [d] = only(lint(task), "ES202")
    assert d.severity == "error"
    assert rng(d) == span(manifest_text(task), f'"{E}:command_succeed"')
    assert "did you mean 'command_succeeds'" in d.message
    assert d.fix is not None and d.fix.edits[0].new_text == json.dumps(f"{E}:command_succeeds")


def test_es202_module_typo_suggests_the_module(make_task: TaskBuilder) -> None:
    task = make_task(good(graders=graders({"name": "endstate.eval.graders:no_new_skips"})))
    [d] = only(lint(task), "ES202")
    assert "not found in" in d.message
    assert str(task) in d.message and str(task.parent) in d.message  # searched folders named
    assert f"{E}:no_new_skips" in d.message


def test_es202_project_grader_under_the_endstate_name(make_task: TaskBuilder) -> None:
    task = make_task(good(graders=graders({"name": f"{E}:tests_pass"})))
    [d] = only(lint(task), "ES202")
    assert "endstate_harness.graders:tests_pass" in d.message
    assert d.fix is not None
    assert d.fix.edits[0].new_text == '"endstate_harness.graders:tests_pass"'


def test_es202_suite_module_without_the_function(make_task: TaskBuilder) -> None:
    task = with_suite_module(make_task, good(graders=graders(
        {"name": "mytasks.graders:no_secret"})))
    [d] = only(lint(task), "ES202")
    assert rng(d) == span(manifest_text(task), '"mytasks.graders:no_secret"')
    assert f"module found at {task.parent / 'mytasks' / 'graders.py'}" in d.message
    assert "has no function 'no_secret'" in d.message
    assert "did you mean 'no_secrets'" in d.message


def test_es202_suite_module_found_is_a_near_miss(make_task: TaskBuilder) -> None:
    task = with_suite_module(make_task, good(graders=graders(
        {"name": "mytasks.graders:no_secrets", "args": {"pattern": "AKIA"}},
        {"name": "mytasks.graders.no_secrets", "args": {"paths": ["a.txt"]}},
    )))
    assert [d for d in lint(task) if d.code.startswith("ES2")] == []


def test_es202_module_in_the_task_folder_is_found(make_task: TaskBuilder) -> None:
    task = make_task(good(graders=graders({"name": "local_checks:ok"})),
                     extra={"local_checks.py": "def ok(sandbox):\n    return None\n"})
    assert [d for d in lint(task) if d.code.startswith("ES2")] == []


def test_es202_grader_paths_from_config_are_searched(
    make_task: TaskBuilder, tmp_path: Path
) -> None:
    shared = tmp_path / "shared_graders"
    (shared / "house").mkdir(parents=True)
    (shared / "house" / "__init__.py").write_text("")
    (shared / "house" / "checks.py").write_text("def clean(sandbox, *, level: int = 1):\n    ...\n")
    task = make_task(good(graders=graders({"name": "house.checks:clean"})))
    without = lint_task(task, config=Config())
    assert [d.code for d in without if d.code.startswith("ES2")] == ["ES202"]
    with_paths = lint_task(task, config=Config(grader_paths=[shared]))
    assert [d for d in with_paths if d.code.startswith("ES2")] == []


def test_es202_syntax_error_in_the_module(make_task: TaskBuilder) -> None:
    task = make_task(good(graders=graders({"name": "broken:check"})),
                     extra={"broken.py": "import os\n\ndef check(sandbox:\n    pass\n"})
    [d] = only(lint(task), "ES202")
    assert f"module {task / 'broken.py'} has a syntax error at line 3" in d.message


def test_es202_module_that_is_not_a_package(make_task: TaskBuilder) -> None:
    task = make_task(good(graders=graders({"name": "flat.sub:check"})),
                     extra={"flat.py": "def check(sandbox):\n    pass\n"})
    assert [d.code for d in lint(task) if d.code.startswith("ES2")] == ["ES202"]


def test_es202_symlink_leading_outside_is_not_followed(
    make_task: TaskBuilder, tmp_path: Path
) -> None:
    outside = tmp_path / "elsewhere.py"
    outside.write_text("def check(sandbox):\n    return None\n")
    task = make_task(good(graders=graders({"name": "linked:check"})))
    (task / "linked.py").symlink_to(outside)
    [d] = only(lint(task), "ES202")
    assert "is not followed" in d.message


def test_es202_reexport_and_dynamic_names_are_not_accused(make_task: TaskBuilder) -> None:
    task = make_task(
        good(graders=graders(
            {"name": "reexp:files_unchanged", "args": {"paths": ["tests/test_chunk.py"],
                                                        "name": "pinned"}},
            {"name": "reexp:made", "args": {"anything": 1}},
            {"name": "dyn:whatever"},
        )),
        extra={
            "reexp.py": f"from {E} import files_unchanged\nmade = object()\n",
            "dyn.py": "def __getattr__(name):\n    raise AttributeError(name)\n",
        },
    )
    assert [d for d in lint(task) if d.code.startswith("ES2")] == []


def test_es202_reexport_is_judged_through_to_its_definition(make_task: TaskBuilder) -> None:
    task = make_task(
        good(graders=graders({"name": "pkg2:check", "args": {"paht": "x"}})),
        extra={"pkg2/__init__.py": "from .impl import check\n",
               "pkg2/impl.py": "def check(sandbox, *, path: str = ''):\n    return None\n"},
    )
    [d] = only(lint(task), "ES206")
    assert "did you mean 'path'" in d.message


# ----- never importing suite code --------------------------------------------------------------


def test_es202_suite_module_is_never_imported(make_task: TaskBuilder, tmp_path: Path) -> None:
    marker = tmp_path / "IMPORTED"
    hostile = textwrap.dedent(f"""\
        import pathlib
        pathlib.Path({str(marker)!r}).write_text("imported")
        print("side effect at import")
        raise SystemExit(3)

        def check(sandbox, *, level: int = 1):
            return None
        """)
    task = make_task(good(graders=graders({"name": "hostile_graders:check",
                                           "args": {"level": "high"}})),
                     extra={"hostile_graders.py": hostile})
    found = lint(task)
    assert [d.code for d in found if d.code.startswith("ES2")] == ["ES208"]
    assert not marker.exists()
    assert "hostile_graders" not in sys.modules


def _run_isolated(
    code: str, env_extra: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTHON")}
    env.update(env_extra or {})
    return subprocess.run(
        [sys.executable, "-c", code], cwd=REPO, env=env, capture_output=True, text=True,
        timeout=120,
    )


def test_es202_endstate_names_resolve_without_importing_endstate(make_task: TaskBuilder) -> None:
    task = make_task(good(graders=graders({"name": f"{E}:command_succeed"})))
    code = textwrap.dedent(f"""
        import sys
        class Block:
            seen = []
            def find_spec(self, name, path=None, target=None):
                if name == "endstate" or name.startswith("endstate."):
                    Block.seen.append(name)
                    raise ImportError("endstate is blocked in this test")
                return None
        sys.meta_path.insert(0, Block())
        from pathlib import Path
        from endstate_author.lint.run import lint_paths
        diags = lint_paths([Path({str(task)!r})], isolated=True).diagnostics
        es2 = [(d.code, d.message) for d in diags if d.code.startswith("ES2")]
        assert [c for c, _ in es2] == ["ES202"], es2
        assert "command_succeeds" in es2[0][1], es2
        assert Block.seen == [], Block.seen
        assert not any(m == "endstate" or m.startswith("endstate.") for m in sys.modules)
        print("OK")
        """)
    done = _run_isolated(code)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "OK"


def test_es202_installed_package_found_without_importing_it(
    make_task: TaskBuilder, tmp_path: Path
) -> None:
    site = tmp_path / "site"
    marker = tmp_path / "INSTALLED_IMPORTED"
    (site / "instpkg").mkdir(parents=True)
    (site / "instpkg" / "__init__.py").write_text(
        f"import pathlib\npathlib.Path({str(marker)!r}).write_text('x')\n")
    (site / "instpkg" / "graders.py").write_text(
        f"import pathlib\npathlib.Path({str(marker)!r}).write_text('x')\n"
        "def check(sandbox, *, level: int = 1):\n    return None\n")
    task = make_task(good(graders=graders(
        {"name": "instpkg.graders:check", "args": {"levl": 2}},
        {"name": "instpkg.graders:absent"},
        {"name": "notinstalled_zz.graders:check"},
    )))
    code = textwrap.dedent(f"""
        import sys
        from pathlib import Path
        from endstate_author.lint.run import lint_paths
        diags = lint_paths([Path({str(task)!r})], isolated=True).diagnostics
        print(sorted((d.code, d.message.split(":")[0]) for d in diags
                     if d.code.startswith("ES2")))
        assert "instpkg" not in sys.modules
        """)
    done = _run_isolated(code, {"PYTHONPATH": str(site)})
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == str(sorted([
        ("ES206", "instpkg.graders"),
        ("ES202", "grader 'instpkg.graders"),
        ("ES202", "grader 'notinstalled_zz.graders"),
    ]))
    assert not marker.exists()


def test_es202_one_parse_for_a_suite_sharing_a_module(make_task: TaskBuilder) -> None:
    cat.clear_cache()
    tasks = []
    for n in range(25):
        tasks.append(with_suite_module(make_task, good(
            id=f"t-{n}", graders=graders({"name": "mytasks.graders:no_secrets"}))))
    module = tasks[0].parent / "mytasks" / "graders.py"
    old = module.stat().st_mtime - 60  # an mtime this fresh is deliberately not cached
    os.utime(module, (old, old))
    before = cat.PARSE_COUNT[0]
    diags = lint(tasks[0].parent)
    assert [d for d in diags if d.code.startswith("ES2")] == []
    assert cat.PARSE_COUNT[0] - before == 1
    # an edit is seen: the cache is keyed by mtime and size
    module.write_text(SUITE_GRADERS.replace("def no_secrets", "def no_secretz"))
    assert "ES202" in [d.code for d in lint(tasks[0])]


# ----- ES203–ES205 ----------------------------------------------------------------------------


def _def_span(module: Path, def_text: str) -> tuple[int, int, int, int]:
    return span(module.read_text(), def_text)


def test_es203_misnamed_first_parameter_draws_twice(make_task: TaskBuilder) -> None:
    task = with_suite_module(make_task, good(graders=graders(
        {"name": "mytasks.graders:wrong_first"})))
    found = only(lint(task), "ES203")
    assert len(found) == 2
    at_task = next(d for d in found if d.file.name == "task.json")
    at_def = next(d for d in found if d.file.name == "graders.py")
    assert at_task.severity == at_def.severity == "error"
    assert rng(at_task) == span(manifest_text(task), '"mytasks.graders:wrong_first"')
    module = task.parent / "mytasks" / "graders.py"
    assert at_def.file == module
    assert rng(at_def) == _def_span(module, "def wrong_first")
    assert "'tree', not `sandbox`" in at_task.message


def test_es203_keyword_only_sandbox_draws(make_task: TaskBuilder) -> None:
    task = with_suite_module(make_task, good(graders=graders(
        {"name": "mytasks.graders:kw_sandbox"})))
    found = only(lint(task), "ES203")
    assert {d.file.name for d in found} == {"task.json", "graders.py"}
    assert all("keyword-only" in d.message for d in found)


def test_es203_no_parameters_and_installed_file_gets_no_def_finding(
    make_task: TaskBuilder,
) -> None:
    task = make_task(good(graders=graders({"name": "nothing:grade"}, {"name": "json:dumps"})),
                     extra={"nothing.py": "def grade():\n    return None\n"})
    found = only(lint(task), "ES203")
    # nothing.grade: task.json + nothing.py; json.dumps: task.json only (stdlib is not the
    # author's file, so no finding is placed there)
    assert sorted(d.file.name for d in found) == ["nothing.py", "task.json", "task.json"]


def test_es203_positional_only_sandbox_is_a_near_miss(make_task: TaskBuilder) -> None:
    task = make_task(good(graders=graders({"name": "po:grade", "args": {"x": 2}})),
                     extra={"po.py": "async def grade(sandbox, /, *, x: int = 1):\n    ...\n"})
    assert [d for d in lint(task) if d.code.startswith("ES2")] == []


def test_es204_forbidden_parameter_draws_twice(make_task: TaskBuilder) -> None:
    task = with_suite_module(make_task, good(graders=graders(
        {"name": "mytasks.graders:reads_transcript"})))
    found = only(lint(task), "ES204")
    assert {d.file.name for d in found} == {"task.json", "graders.py"}
    at_def = next(d for d in found if d.file.name == "graders.py")
    assert rng(at_def) == _def_span(task.parent / "mytasks" / "graders.py",
                                    "def reads_transcript")
    assert "'transcript'" in at_def.message
    assert "ES207" not in [d.code for d in lint(task)]


def test_es204_similar_but_allowed_name_is_a_near_miss(make_task: TaskBuilder) -> None:
    task = make_task(good(graders=graders({"name": "ok:grade"})),
                     extra={"ok.py": "def grade(sandbox, results_dir: str = 'out'):\n    ...\n"})
    assert [d for d in lint(task) if d.code.startswith("ES2")] == []


def test_es205_var_keyword_draws_twice(make_task: TaskBuilder) -> None:
    task = with_suite_module(make_task, good(graders=graders(
        {"name": "mytasks.graders:takes_kwargs", "args": {"anything": 1}})))
    found = only(lint(task), "ES205")
    assert {d.file.name for d in found} == {"task.json", "graders.py"}
    assert all("**options" in d.message for d in found)
    assert "ES206" not in [d.code for d in lint(task)]  # **options takes any key


def test_es205_var_positional_is_a_near_miss(make_task: TaskBuilder) -> None:
    task = make_task(good(graders=graders({"name": "va:grade"})),
                     extra={"va.py": "def grade(sandbox, *paths: str):\n    ...\n"})
    assert [d for d in lint(task) if d.code.startswith("ES2")] == []


def test_es203_def_finding_is_shown_once_per_task(make_task: TaskBuilder) -> None:
    task = with_suite_module(make_task, good(graders=graders(
        {"name": "mytasks.graders:wrong_first", "args": {"pattern": "a"}},
        {"name": "mytasks.graders:wrong_first", "args": {"pattern": "b"}})))
    found = only(lint(task), "ES203")
    assert sorted(d.file.name for d in found) == ["graders.py", "task.json", "task.json"]


# ----- ES206 ----------------------------------------------------------------------------------


def test_es206_unknown_argument_draws_at_the_key(make_task: TaskBuilder) -> None:
    g = graders()
    g[1]["args"] = {"path": ["tests/test_chunk.py"]}
    task = make_task(good(graders=g))
    [d] = only(lint(task), "ES206")
    assert d.severity == "error"
    assert rng(d) == span(manifest_text(task), '"path"')
    assert "did you mean 'paths'" in d.message
    assert d.fix is not None and d.fix.safe  # one unambiguous did-you-mean
    assert d.fix.edits[0].new_text == '"paths"'


def test_es206_sandbox_in_args_draws(make_task: TaskBuilder) -> None:
    g = graders()
    g[2]["args"] = {"sandbox": "local"}
    task = make_task(good(graders=g))
    [d] = only(lint(task), "ES206")
    assert rng(d) == span(manifest_text(task), '"sandbox"')
    assert "passes the sandbox itself" in d.message


def test_es206_positional_only_argument_draws(make_task: TaskBuilder) -> None:
    task = with_suite_module(make_task, good(graders=graders(
        {"name": "mytasks.graders:positional_only", "args": {"limit": 3}})))
    [d] = only(lint(task), "ES206")
    assert "by position only" in d.message
    assert [x.code for x in only(lint(task), "ES207")] == ["ES207"]


def test_es206_known_argument_is_a_near_miss(make_task: TaskBuilder) -> None:
    g = graders()
    g[1]["args"] = {"paths": ["tests/test_chunk.py"], "name": "tests pinned"}
    assert "ES206" not in [d.code for d in lint(make_task(good(graders=g)))]


# ----- ES207 ----------------------------------------------------------------------------------


def test_es207_missing_required_argument_without_args(make_task: TaskBuilder) -> None:
    g = graders()
    del g[1]["args"]
    task = make_task(good(graders=g))
    [d] = only(lint(task), "ES207")
    assert d.severity == "error"
    assert rng(d) == span(manifest_text(task), f'"{E}:files_unchanged"')
    assert "'paths'" in d.message


def test_es207_missing_required_argument_at_args(make_task: TaskBuilder) -> None:
    text = json.dumps(good(graders=graders(
        {"name": f"{E}:file_matches", "args": {"path": "chunker/core.py"}})), indent=2)
    task = make_task(text, name="fix-chunk-off-by-one")
    [d] = only(lint(task), "ES207")
    assert rng(d) == span(text, '{\n        "path": "chunker/core.py"\n      }')
    assert "'pattern'" in d.message


def test_es207_defaults_are_not_required(make_task: TaskBuilder) -> None:
    task = make_task(good(graders=graders({"name": f"{E}:tree_unchanged"},
                                          {"name": f"{E}:pattern_count",
                                           "args": {"pattern": "x"}})))
    assert "ES207" not in [d.code for d in lint(task)]


# ----- ES208 ----------------------------------------------------------------------------------


def test_es208_string_for_a_list_explains_the_vacuous_pass(make_task: TaskBuilder) -> None:
    g = graders()
    g[1]["args"] = {"paths": "tests/test_chunk.py"}
    task = make_task(good(graders=g))
    [d] = only(lint(task), "ES208")
    assert d.severity == "error"
    text = manifest_text(task)
    assert rng(d) == span(text, '"tests/test_chunk.py"')
    assert "iterates by character" in d.message and "vacuously" in d.message
    assert d.fix is not None and not d.fix.safe
    edit = d.fix.edits[0]
    fixed = text.encode()[: edit.start] + edit.new_text.encode() + text.encode()[edit.end:]
    assert json.loads(fixed)["graders"][1]["args"]["paths"] == ["tests/test_chunk.py"]


def test_es208_points_at_the_bad_element(make_task: TaskBuilder) -> None:
    text = json.dumps(good(graders=graders(
        {"name": f"{E}:paths_exist", "args": {"paths": ["a.py", 7]}})), indent=2)
    task = make_task(text, name="fix-chunk-off-by-one")
    [d] = only(lint(task), "ES208")
    line, column, _, _ = span(text, "7\n")
    assert rng(d) == (line, column, line, column + 1)
    assert "args.paths[1]" in d.message and "a string" in d.message


@pytest.mark.parametrize(
    ("args", "bad"),
    [
        ({"count": True}, "count"),
        ({"count": 1.5}, "count"),
        ({"ratio": "1"}, "ratio"),
        ({"flag": 1}, "flag"),
        ({"mode": "c"}, "mode"),
        ({"table": {"a": "1"}}, "table"),
        ({"pair": ["a"]}, "pair"),
    ],
)
def test_es208_wrong_types_draw(make_task: TaskBuilder, args: dict[str, Any], bad: str) -> None:
    task = with_suite_module(make_task, good(graders=graders(
        {"name": "mytasks.graders:typed", "args": args})))
    [d] = only(lint(task), "ES208")
    assert f"args.{bad}" in d.message


def test_es208_sound_values_are_near_misses(make_task: TaskBuilder) -> None:
    args = {"count": 3, "ratio": 2, "flag": False, "mode": "b", "label": None,
            "extra": {"anything": [1, "x"]}, "table": {"a": 1}, "pair": ["x", 2]}
    task = with_suite_module(make_task, good(graders=graders(
        {"name": "mytasks.graders:typed", "args": args},
        {"name": "mytasks.graders:no_secrets", "args": {"paths": None}},
        {"name": f"{E}:command_succeeds", "args": {"command": "make test", "timeout_s": None}},
    )))
    assert [d for d in lint(task) if d.code.startswith("ES2")] == []


# ----- ES209 ----------------------------------------------------------------------------------


def test_es209_missing_graders(make_task: TaskBuilder) -> None:
    task = make_task(good(graders=None))
    found = lint(task)
    [d] = only(found, "ES209")
    assert d.severity == "error"
    assert rng(d) == (1, 1, 1, 2)
    assert "ES102" not in [x.code for x in found]


def test_es209_empty_graders(make_task: TaskBuilder) -> None:
    task = make_task(good(graders=[]))
    found = lint(task)
    [d] = only(found, "ES209")
    assert rng(d) == span(manifest_text(task), "[]")
    assert "ES102" not in [x.code for x in found]


def test_es209_one_grader_is_a_near_miss(make_task: TaskBuilder) -> None:
    task = make_task(good(graders=graders({"name": f"{E}:tree_unchanged"}, base=False)))
    assert "ES209" not in [d.code for d in lint(task)]


# ----- ES210 ----------------------------------------------------------------------------------


def test_es210_same_grader_same_args_in_another_spelling(make_task: TaskBuilder) -> None:
    task = make_task(good(graders=graders(
        {"name": "endstate_harness.graders.no_new_skips", "args": {"glob": "*test*.py"}})))
    [d] = only(lint(task), "ES210")
    assert d.severity == "warning"
    assert rng(d) == span(manifest_text(task), '"endstate_harness.graders.no_new_skips"')
    assert "graders[4] repeats graders[2]" in d.message


def test_es210_numbers_compare_by_value(make_task: TaskBuilder) -> None:
    task = make_task(good(graders=graders(
        {"name": f"{E}:command_succeeds",
         "args": {"command": "python -m unittest discover -s tests -t . -q", "timeout_s": 60}},
        {"name": f"{E}:command_succeeds",
         "args": {"timeout_s": 60.0, "command": "python -m unittest discover -s tests -t . -q"}},
    )))
    assert [d.code for d in lint(task)].count("ES210") == 1


def test_es210_different_args_are_a_near_miss(make_task: TaskBuilder) -> None:
    task = make_task(good(graders=graders(
        {"name": f"{E}:no_new_skips", "args": {"glob": "test_*.py"}},
        {"name": f"{E}:command_succeeds",
         "args": {"command": "python -m unittest discover -s tests -t . -q",
                  "expect_exit_code": 1}},
    )))
    assert "ES210" not in [d.code for d in lint(task)]


# ----- the catalogue and the type evaluator ----------------------------------------------------


def test_catalogue_names_and_canonical_forms() -> None:
    assert split_name("a.b:c") == ("a.b", "c")
    assert split_name("a.b.c") == ("a.b", "c")
    assert split_name("abc") is None
    assert canonical_name(f"{E}.tree_unchanged") == "endstate_harness.graders:tree_unchanged"
    assert canonical_name("my.mod.f") == "my.mod:f"


def test_catalogue_all_graders_lists_builtins_and_suite_functions(
    make_task: TaskBuilder,
) -> None:
    task = with_suite_module(make_task, good())
    (task / "fixture" / "decoy.py").write_text("def decoy(sandbox):\n    pass\n")
    names = {i.name for i in Catalogue.for_task(task, task.parent, Config()).all_graders()}
    assert f"{E}:command_succeeds" in names
    assert "endstate_harness.graders:tests_pass" in names
    assert "mytasks.graders:no_secrets" in names
    assert "mytasks.graders:takes_kwargs" in names
    assert "mytasks.graders:wrong_first" not in names  # first parameter is not sandbox
    assert not any("decoy" in n for n in names)  # fixture/ is the agent's world


def test_catalogue_lookup_builtin_signature() -> None:
    info = Catalogue([]).resolve(f"{E}:files_unchanged")
    assert info is not None and info.builtin and info.signature_known
    paths = info.param("paths")
    assert paths is not None and paths.required and paths.kind == "keyword"
    assert info.canonical == "endstate_harness.graders:files_unchanged"


@pytest.mark.parametrize(
    ("annotation", "value", "fits"),
    [
        ("str", "x", True),
        ("str", 1, False),
        ("int", True, False),
        ("float", 3, True),
        ("bool", 0, False),
        ("list[str]", "abc", False),
        ("Sequence[str]", ["a"], True),
        ("typing.Sequence[str]", "abc", False),
        ("tuple[str, ...]", ["a", "b"], True),
        ("tuple[str, int]", ["a", "b"], False),
        ("dict[str, int]", {"a": 1}, True),
        ("dict[int, int]", {"1": 1}, False),
        ("list[str] | None", None, True),
        ("Optional[int]", "1", False),
        ("Union[int, str]", "1", True),
        ("Any", {"x": [1]}, True),
        ("object", None, True),
        ("pathlib.Path", "a", True),
        ("'list[int]'", [1], True),
        ("Annotated[int, 'doc']", "x", False),
        ("Literal['a', 1]", 1, True),
        ("Literal[1]", True, False),
        ("not valid (", 5, True),
    ],
)
def test_argtypes_check(annotation: str, value: Any, fits: bool) -> None:
    assert (check(parse_annotation(annotation), value) is None) is fits


def test_argtypes_describe() -> None:
    assert describe(parse_annotation("list[str] | None")) == "an array of strings or null"
    assert describe(parse_annotation("dict[str, list[int]]")) == (
        "an object of arrays of integers"
    )
    mismatch = check(parse_annotation("Sequence[str]"), "tests/x.py")
    assert mismatch is not None and mismatch.string_as_sequence


def test_es2_rule_docs_have_every_section() -> None:
    load_all()
    for code in [f"ES2{n:02d}" for n in range(1, 11)]:
        doc = RULES[code].doc
        for section in ("## What it checks", "## Why it matters", "## Example", "## Fix"):
            assert section in doc, (code, section)
        assert doc.splitlines()[0].strip()


def test_es2_lint_knows_delegates_to_args(make_task: TaskBuilder) -> None:
    """The structure grader's signature is read like every grader's: its args resolve
    cleanly, a string for ``functions`` is ES208, a missing ``to`` ES207, a typo ES206."""
    name = "endstate_harness.graders:delegates_to"
    sound = {"name": name, "args": {"path": "chunker/core.py", "functions": ["chunk"],
                                    "to": "chunk", "every_path": True, "min_copy_nodes": 6}}
    found = [d for d in lint(make_task(good(graders=graders(sound)))) if d.code.startswith("ES2")]
    assert found == []
    cases = {
        "ES208": {"path": "chunker/core.py", "functions": "chunk", "to": "chunk"},
        "ES207": {"path": "chunker/core.py", "functions": ["chunk"]},
        "ES206": {"path": "chunker/core.py", "functions": ["chunk"], "to": "chunk",
                  "every_paths": True},
    }
    for code, args in cases.items():
        task = make_task(good(graders=graders({"name": name, "args": args})), name=code.lower())
        codes = [d.code for d in lint(task) if d.code.startswith("ES2")]
        assert codes == [code], (code, codes)
    from endstate_author.engine.catalogue.library import builtin_info

    info = builtin_info("delegates_to")
    assert info is not None and "A copy is an expression" in info.doc
    assert [p.name for p in info.params][:4] == ["sandbox", "path", "functions", "to"]
