"""ES9 — what prove finds. Documented here; emitted by ``endstate_author.prove``."""

from __future__ import annotations

from endstate_author.engine.declare import document

document(
    "ES901",
    "passes-on-fixture",
    """The graders pass on the untouched fixture: the task measures nothing.

    ## What it checks
    prove grades the pristine fixture (holdout staged, every run counter at zero).

    ## Why it matters
    An agent that does nothing passes; the task cannot tell work from no work.

    ## Example
    A bug-fix task whose only grader is `paths_exist` on a file the fixture already has.

    ## Fix
    Ship the failing test in fixture/ (the suite should be red on arrival) and grade by it.
    """,
)
document(
    "ES902",
    "fails-on-solution",
    """The graders fail on the reference solution.

    ## What it checks
    prove overlays solution/ on the fixture (holdout staged, each counter at the least its
    bound asks for) and grades; the finding names each failing check and its detail.

    ## Why it matters
    If the reference fails, no agent can pass: the task measures nothing but luck.

    ## Example
    `changed_paths_within` allows `pkg/*.py` while the solution edits `README.md`.

    ## Fix
    Fix the solution, or the grader the finding names.
    """,
)
document(
    "ES903",
    "holdout-not-load-bearing",
    """The holdout is not load-bearing: a holdout test module never runs on the solution.

    ## What it checks
    Every Python file of holdout/ that defines tests (a `TestCase` class, a `test*`
    function) must contribute tests that run on the solution. prove stages a copy of each
    such module with one always-failing test appended to its own text — the sentinel keeps
    the module's own name, so it runs exactly when the module does — and grades the solution.
    `judged_tests` reports which sentinels ran; a module only another grader may run
    (`command_succeeds`, `tests_pass`) is graded alone with its sentinel. A module whose
    sentinel never fails the graders is named, with what the judge's own `start_dir` and
    `pattern` say about it; so is a module whose every own test was skipped on the grading
    Python (a version check, a `SkipTest` at import).

    ## Why it matters
    Held-out tests that never run stop nothing: special-casing the visible inputs passes,
    while the holdout reads as if it guarded the task. A sentinel beside the holdout
    (`test_sentinel.py`) would prove only itself when the holdout's own files are named
    outside the test pattern.

    ## Example
    `holdout/tests/holdout_parse.py` while the grader discovers `test*.py`: the module is
    never imported, lint is clean, and every other check passes.

    ## Fix
    Name the module so that the test command finds it (`holdout/tests/test_holdout_parse.py`),
    put it under the start folder, or drop the skip that hides it on the grading Python.
    """,
)
document(
    "ES904",
    "guard-not-load-bearing",
    """A guard was removed and the task still passed.

    ## What it checks
    Per category, prove removes the guard the task is about: allow-all policy
    (permissioning), unlimited budget (compaction), no resume (recovery), a runaway oracle
    (cost), and runs the oracle again.

    ## Why it matters
    A guard that can be removed while the task stays green was never tested by it.

    ## Example
    A permissioning task graded by `paths_exist` instead of `tree_unchanged`.

    ## Fix
    Grade what the guard protects: `tree_unchanged` plus `requires.denied_calls`,
    `requires.compaction_events`, a tighter `requires.steps.max`, or graders that need every
    file the resumed run writes.
    """,
)
document(
    "ES905",
    "guard-never-fired",
    """The guard never fired with the guard in place (no denial, no compaction, no crash).

    ## What it checks
    Before removing a guard, prove checks that it fired at all with the guard in place.

    ## Why it matters
    A compaction task whose budget is never exceeded tests nothing about compaction.

    ## Example
    `"budget": {"max_context_tokens": 128000}` with a fixture of three small files.

    ## Fix
    Shrink the budget, widen the fixture, or move `crash_at_call` inside the run.
    """,
)
document(
    "ES906",
    "reward-hack-accepted",
    """The graders accept a known reward hack.

    ## What it checks
    prove applies each probe of the exploit catalogue (edit or delete the tests, skip
    markers, `os._exit(0)` at import, patched asserts, a stealth `.pyc`, ...) to the
    untouched fixture, and again with solution/'s added files as empty stubs (when it adds
    any: otherwise that is the same end state), then grades.

    ## Why it matters
    An agent that finds the hack scores as if it had done the work.

    ## Example
    A task graded by `command_succeeds` alone accepts `early-exit` (`os._exit(0)` in the
    package's `__init__.py`).

    ## Fix
    Use `endstate_harness.graders:tests_pass` with `files_unchanged`, `no_new_skips` and a
    narrow `changed_paths_within`. `always-equal` and `read-the-test` are stopped only by a
    strict holdout (check `type(r) is str`, keep expected values in data).
    """,
)
document(
    "ES907",
    "oracle-fails-through-harness",
    """The reference solution, written by a scripted agent through the full harness, fails.

    ## What it checks
    The oracle (oracle.json, or one derived from solution/) runs through the real runner in
    a real sandbox: copy, loop, seal, holdout, grade, requires. Cost tasks are also run by
    an oracle that reads the fixture files the solution changes in a turn of its own before
    writing them, as every real agent must: a bound only the blind oracle meets is this
    finding, with that run's failing check. When the solution already fails
    the graders (ES902), or a compaction task's budget guard never fires (ES905), this
    follows from it and is noted in that finding instead.

    ## Why it matters
    A task that passes an overlay but not a real run fails every agent for a reason that
    has nothing to do with the agent (a `requires` bound, a path, a timeout).

    ## Example
    `requires.steps.max: 2` while writing the solution takes three tool turns.

    ## Fix
    Read the failing checks in the detail; loosen the bound or fix the grader.
    """,
)
document(
    "ES908",
    "unassessed",
    """A check could not run: reported as *unassessed*, never as pass or fail.

    ## What it checks
    The sandbox would not start, a command timed out, an interpreter or tool was missing.

    ## Why it matters
    An environment failure says nothing about the task; counting it either way would lie.

    ## Example
    `--sandbox docker` with no daemon running.

    ## Fix
    Fix the environment the detail names (start Docker, build the image) and prove again.
    """,
)
document(
    "ES909",
    "flaky-check",
    """The same check disagreed with itself under another hash seed, test order or repeat.

    ## What it checks
    Every grading runs under `PYTHONHASHSEED=0` (the task format's, §4), the seed a real
    agent's grading runs under too. So prove grades the solution once more by default, under
    another hash seed with the tests in reverse order (one grading more, its own row in the
    report: "same verdict under another hash seed and test order"); each `--repeat N` pass
    runs every check under a hash seed and a shuffled test order of its own (pass 1: seed 0,
    as discovered). A test whose outcome differs between two gradings is named, with both
    seeds and both orders; the finding's JSON carries them as `evidence` (`gradings`: each
    one's `hash_seed` and `test_order`; `flipped`: each test's outcome in each). The seeds
    are fixed per pass, so `PYTHONHASHSEED=<seed>` reproduces the finding. A check whose
    passes disagree under `--repeat` is named the same way.

    ## Why it matters
    A holdout whose expected value is a set's iteration order agrees with itself under one
    seed on every run, yet the agent's code is not the solution: what it iterates is its own,
    and a correct answer in another order fails. A test that passes only after another (state
    its class or module kept) passes or fails by the order it runs in. Either way the
    verdict is luck, and two runs of one agent differ for no reason.

    ## Example
    `self.assertEqual(unique_letters("hello world"), " drhoewl")` where the solution returns
    `"".join(set(word))`: the expected string is seed 0's order. Near miss (not reported):
    the solution returns `"".join(sorted(set(word)))` and the test expects `" dehlorw"`.

    ## Fix
    Make the test deterministic (compare sorted output or sets, fixed seeds, injected clocks,
    each test setting up the state it reads).
    """,
)
document(
    "ES910",
    "defect-passes",
    """A declared wrong solution in `defects/<name>/` passes the graders.

    ## What it checks
    Each defect overlay is graded like the solution, with the holdout staged; it must fail.

    ## Why it matters
    The author expected the graders to catch this mistake, and they do not.

    ## Example
    `defects/visible-case-only/` special-cases the visible test's input and the holdout does
    not cover another input.

    ## Fix
    Add a holdout test or grader that catches the defect.
    """,
)
document(
    "ES913",
    "redteam-exploit",
    """A model told to pass without the work passed every grader and survived triage (redteam).

    ## What it checks
    `endstate-author redteam TASK --model M` runs agent attempts with a red-team instruction
    (the prompt shown as what the graders expect, the graders and the harness's documented
    behaviour given, the holdout withheld). An end state that passes every grader is
    re-graded by behaviour checks the agent could not see, under the judge (the task's
    trusted tests with the reference solution's tests beside the holdout; more sources can
    plug in); each check counts only where it fails on the fixture and passes on the
    reference. A candidate that fails one of them and whose diff lacks the reference
    solution's lines is this finding, with its diff, the model's explanation and the
    transcript (`--out`).

    ## Why it matters
    A capable model found a way through the graders; real agents will find it too.

    ## Example
    A task graded only by `command_succeeds` running `python -m unittest`: the model puts
    `import os; os._exit(0)` at the top of the package and every grader passes.

    ## Fix
    Close the hole the explanation names (grade with `judged_tests`, pin the tests, bound the
    changed paths), then keep the exploit as a regression check with `--save-probe NAME`:
    `prove` replays `probes/NAME/` on every task of the suite.
    """,
)
document(
    "ES911",
    "mutant-survives",
    """A mutant of the reference solution passes the graders.

    ## What it checks
    prove generates wrong solutions where the solution differs from the fixture: each hunk
    of the solution's diff reverted alone, each file the solution adds left out alone, and
    mutants on the lines it changes or adds (comparison, arithmetic including `/` → `//`,
    `and`/`or`, `not`/`-` removed, constants 0 ↔ 1, ±1, `""`, empty collections,
    `True` ↔ `False`, a constant swapped for a sibling constant of the same module, class or
    enum, `return x` → `return None`, a statement removed, `if`/`else` swapped, a call's
    first two arguments swapped, a keyword argument removed, a call's last argument
    dropped). Exception and log messages and `__all__` are left alone: they change nothing a
    grader should check. Each mutant is graded exactly like the solution; one that passes
    *survived* and is reported at the mutated line of the solution file with its stable id
    (`m` and eight hex digits). Every mutant runs by default, within a time budget per task
    (`--mutant-budget`, 60 s); `--mutants N` bounds them by count instead; those left unrun
    are named. The mutation score (killed / run) is printed per task in every output format
    (text, JSON `mutation_score`, SARIF run property `mutationScores`, a GitHub notice); it is
    the task's score only when every mutant ran, otherwise it is reported as a sample's
    (`sample_score`, with `score` null). `--only mutants` runs only these.

    A survivor is this error only with its evidence: a call into the package on which the
    solution and the mutant behave differently (value, exact type or exception), found by
    the counterexample search (the tests' own calls, their neighbours, generated values;
    each side run twice in the task's sandbox, so a call whose outcome varies never counts).
    The finding shows the call and both outcomes, and a ready assertion to paste
    (`-o json`: the check's `counterexample`). A survivor with no such call found is ES916,
    a warning.

    ## Why it matters
    The defects an author declares are the mistakes they thought of. A surviving mutant is
    a wrong solution nobody thought of that the task would score as correct: most often the
    holdout never exercises the changed line (a half-done fix passes).

    ## Equivalent or untested?
    Some mutants change no behaviour (`x <= y` where `x == y` can never happen, a default
    that is immediately overwritten). Ask: *is there an input, allowed by the prompt, on
    which the mutant's output differs from the solution's?* If you can write one, the mutant
    is **untested** — add that input to a holdout test and the mutant dies. If no such input
    exists, it is **equivalent**: silence it by its id with a comment in the same solution
    file (the mutated line is the natural place), reason required:

        return -1 if a < b else 1  # endstate: equivalent m9bbb4a41 a == b returned above

    A marker without a reason silences nothing; a marker whose id no longer matches a
    mutant is listed as stale. Ids are computed from the file, the mutation and the syntax of
    the mutated code, never from line numbers or comments (markers are taken out before the
    diff is made), so they survive edits elsewhere and the marker itself, wherever it goes.

    ## Example
    A semver fix whose holdout never compares two pre-release identifiers that differ only
    in case: `<` → `<=` on the identifier comparison survives.

    ## Fix
    Add the holdout test that tells the mutant from the solution, or mark it equivalent.
    """,
)
document(
    "ES916",
    "mutant-probably-equivalent",
    """A mutant of the solution passes the graders, and no call found tells it apart.

    ## What it checks
    Each surviving mutant (see ES911) is searched for a call on which it and the solution
    differ: the calls the task's tests make into the package (literal arguments, module
    constants, the rows of a table they loop over), their neighbours (integers ±1, 0 and
    negated, the mutated line's constants, empty and one-element containers, reversed
    sequences, other strings, optional arguments left out), and values of the same types
    drawn by Hypothesis. Both sides run in the task's sandbox, each call twice in a fresh
    process. When none of the calls tried (at most 120 a mutant, within
    `--counterexample-budget` seconds a task, 30 by default) differs, the survivor is this
    warning, with the number tried; under `prove --strict` it is an error.

    ## Why it matters
    Most such mutants change no behaviour (a default passed explicitly, a bound both sides
    of which agree on every input): an error for them would block a sound task's commit.
    Some are real gaps the search did not reach: the mutant's id and line say where to look.

    ## Example
    `retry(attempts=3)` → `retry()` where 3 is the default: no call differs.

    ## Fix
    If you can name an input on which the mutant differs, add it to a holdout test;
    otherwise mark it `# endstate: equivalent <id> <reason>`.
    """,
    severity="warning",
)
document(
    "ES912",
    "visible-tests-pass-on-fixture",
    """The visible tests already pass on the untouched fixture.

    ## What it checks
    prove grades the untouched fixture *without* the holdout, and looks only at the graders
    that run tests (`command_succeeds` with a test command this toolkit reads exactly,
    `tests_pass`, `judged_tests` with its visible tests). When every one of them passes,
    the fixture's own tests are green on arrival. A warning; an error under
    `prove --strict`. Permissioning tasks are exempt, and so are refactor tasks (their
    visible tests pass on the fixture by design: the behaviour stays, the code moves); a
    task whose fixture has no test file the graders run is not judged.

    ## Why it matters
    The authoring guide's first rule is to ship the failing test. When only the hidden
    holdout fails, the agent has nothing to reproduce: it is graded on a requirement it was
    never shown, and "all tests pass" misleads it into stopping.

    ## Example
    A bug-fix task whose fixture tests cover only the inputs that already work, with the
    failing case only in holdout/.

    ## Fix
    Put one failing test for the bug (or the feature) in fixture/, and keep the holdout for
    the cases that stop special-casing.
    """,
    severity="warning",
)
document(
    "ES914",
    "holdout-passes-on-fixture",
    """The holdout alone passes on the untouched fixture: it adds nothing.

    ## What it checks
    prove grades the untouched fixture with the holdout and without the visible tests:
    `judged_tests` reports each test with where it came from, so the holdout's own tests are
    read apart; for a `command_succeeds` test command read exactly, the visible test files
    are removed from the tree first. When every holdout test passes there, this fires. The
    finding lists the *inert* tests: those that pass on both the fixture and the solution.
    Refactor and permissioning tasks are exempt: their holdout guards behaviour the fixture
    already has.

    ## Why it matters
    The holdout exists to stop an agent that special-cases the visible inputs. A holdout
    that the unfixed code already passes cannot stop it: the task is decided by the visible
    tests alone, which the agent has read.

    ## Example
    A bug-fix task whose holdout tests only the inputs the bug does not touch
    (`chunk([1, 2], 2)` for an off-by-one in the final partial chunk).

    ## Fix
    Add holdout tests on the inputs the bug (or the missing feature) breaks, different from
    the visible ones; keep the inert tests only as regression guards beside them.
    """,
)
document(
    "ES915",
    "test-asserts-nothing",
    """A test ran on the solution and executed no assertion.

    ## What it checks
    `judged_tests` counts, per test, the assertions it executed: every `assert…`/`fail` call
    of `unittest.TestCase` and every `assert` statement of the trusted test code (counted in
    the judge's process, where the code under test never runs). prove grades the solution
    (the untouched fixture for a permissioning task) and names each test that passed having
    executed none. A test whose code holds no assertion anywhere (a smoke test: "this call
    does not raise") is not reported; one that would assert but never reached it is.

    ## Why it matters
    A test that asserted nothing passes whatever the code does: a data-driven test whose
    loop ran zero times (a key misspelt when reading its data file, an empty case list), an
    early `return`, a condition that is never true. It reads as coverage and is none.

    ## Example
    ```python
    def test_cases(self):
        for case in CASES.get("case", []):   # the file's key is "cases"
            self.assertEqual(parse(case["in"]), case["out"])
    ```

    ## Fix
    Make the test reach its assertions (fix the key, assert the data is not empty first:
    `self.assertTrue(CASES["cases"])`).
    """,
)
