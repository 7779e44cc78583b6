"""Every surviving mutant proven or downgraded: a call on which it and the solution differ.

A mutant every grader passes is an error (ES911) only with its evidence: a call into the
package on which the solution and the mutant behave differently, found here and shown with
both outcomes and a ready assertion. A survivor for which no such call is found within the
budget is a warning (ES916: probably equivalent), never an error an author must argue with.

How: the calls to try come from :mod:`endstate_author.prove.calls` (the tests' own calls,
their neighbours, generated values). Both sides run as the code under test always runs — in a
sandbox of the task's kind, never in this process — through a small program shipped as text
(``inside/caller.py``): each call in a fresh fork, twice, so a call whose outcome changes from
run to run is never a counterexample. What crosses back is data (value, exact type, exception
type), compared here. The solution's outcomes are computed once for all survivors, and a
call a mutant differs on is asked of the solution again (twice) before it counts; each
mutant's run stops at its first difference, within its share of the budget.
"""

from __future__ import annotations

import json
import shlex
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import endstate_author.prove.calls as calls_mod
from endstate_author.prove.calls import Call
from endstate_author.prove.model import (
    DEFAULT_COUNTEREXAMPLE_BUDGET,
    CheckResult,
    ProveContext,
    Unassessed,
)
from endstate_author.prove.mutation import Mutant, generate
from endstate_harness.sandbox.base import SandboxError

MAX_CALLS = 120
"""Calls tried per mutant (the tests' own first, then neighbours, then generated)."""
GENERATED_PER_SEED = 6
_SCRIPT = ".endstate-caller.py"
_INPUT = ".endstate-calls.json"


def _caller_text() -> str:
    # deferred: the text is read only when a survivor is searched
    from endstate_harness.inside import program

    return program("caller")


@dataclass(frozen=True)
class Counterexample:
    call: Call
    solution: dict[str, Any]
    mutant: dict[str, Any]

    def words(self) -> str:
        return (f"`{self.call.shown()}`: the solution {_said(self.solution)}, the mutant "
                f"{_said(self.mutant)}")

    def assertion(self) -> str | None:
        """A holdout test's line that fails on the mutant and passes on the solution."""
        shown = self.call.shown()
        if "raises" in self.solution:
            kind = self.solution["raises"].rsplit(".", 1)[-1]
            return f"with self.assertRaises({kind}):\n    {shown}"
        value = self.solution.get("value")
        plain = _plain(value)
        if plain is _NOT_PLAIN:
            return None
        mine = _plain(self.mutant.get("value")) if "value" in self.mutant else _NOT_PLAIN
        text = f"self.assertEqual({shown}, {plain!r})"
        if mine is not _NOT_PLAIN and mine == plain and type(mine) is not type(plain):
            text += f"\nself.assertIs(type({shown}), {type(plain).__name__})"
        return text

    def to_json(self) -> dict[str, Any]:
        return {"call": self.call.shown(), "source": self.call.source,
                "module": self.call.module, "name": self.call.name,
                "solution": self.solution, "mutant": self.mutant,
                "assertion": self.assertion()}


_NOT_PLAIN = object()


def _plain(encoded: Any) -> Any:
    """The caller's encoding of a builtin value back as that value; ``_NOT_PLAIN`` else."""
    if not isinstance(encoded, list) or len(encoded) != 2:
        return _NOT_PLAIN
    kind, content = encoded
    if kind in ("NoneType", "bool", "str") or (kind == "int" and type(content) is int):
        return content
    if kind == "int":
        return int(content)
    if kind == "float":
        return float(content)
    if kind == "bytes":
        return bytes.fromhex(content)
    if kind in ("list", "tuple", "set", "frozenset"):
        items = [_plain(i) for i in content]
        if any(i is _NOT_PLAIN for i in items):
            return _NOT_PLAIN
        try:
            return {"list": list, "tuple": tuple, "set": set, "frozenset": frozenset}[kind](
                items)
        except TypeError:
            return _NOT_PLAIN
    if kind == "dict":
        pairs = [(_plain(k), _plain(v)) for k, v in content]
        if any(x is _NOT_PLAIN for pair in pairs for x in pair):
            return _NOT_PLAIN
        try:
            return dict(pairs)
        except TypeError:
            return _NOT_PLAIN
    return _NOT_PLAIN


def _said(outcome: dict[str, Any]) -> str:
    if "raises" in outcome:
        return f"raises {outcome['raises']}"
    if "unknown" in outcome:
        return f"gives no answer ({outcome['unknown']})"
    value = outcome.get("value")
    plain = _plain(value)
    if plain is not _NOT_PLAIN:
        return f"returns {plain!r}"
    if isinstance(value, list) and len(value) == 2:
        return f"returns {value[1]}"  # an object: its repr (addresses left out)
    return "returns an unreadable value"


def _differs(solution: dict[str, Any] | None, mutant: dict[str, Any] | None) -> bool:
    if solution is None or mutant is None:
        return False
    if "unsteady" in solution or "unsteady" in mutant or "unknown" in solution:
        return False
    return solution != mutant


# ----- what to try, per mutant ---------------------------------------------------------------


def _module_of(path: str) -> str:
    parts = path.removesuffix(".py").split("/")
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


def _line(text: bytes | None, number: int) -> str:
    lines = (text or b"").decode("utf-8", "replace").splitlines()
    return lines[number - 1] if 0 < number <= len(lines) else ""


def plan(seeds: list[Call], mutant: Mutant, solution_text: bytes | None) -> list[Call]:
    """The calls to try on ``mutant``, likeliest first, each once, at most :data:`MAX_CALLS`."""
    module = _module_of(mutant.path)
    near = [c for c in seeds if c.module == module or c.module.startswith(module + ".")]
    ordered = near + [c for c in seeds if c not in near]
    constants = calls_mod.line_constants(_line(solution_text, mutant.line))
    constants += calls_mod.line_constants(_line(mutant.content, mutant.line))
    out: dict[str, Call] = {}

    def add(found: Iterator[Call] | list[Call]) -> None:
        for call in found:
            if len(out) >= MAX_CALLS:
                return
            if call.wire() is not None:
                out.setdefault(call.key(), call)

    add(ordered)
    for seed in ordered:
        add(calls_mod.neighbours(seed, constants))
    for seed in ordered[:8]:
        add(_generated(seed))
    return list(out.values())


def _generated(seed: Call) -> list[Call]:
    """Calls with arguments of the seed's types drawn by Hypothesis (derandomised)."""
    # deferred: Hypothesis (~0.3 s to import) only when a survivor is searched
    from hypothesis import HealthCheck, Phase, given, settings
    from hypothesis import strategies as st  # deferred: as the line above

    def strategy(value: Any, depth: int = 0) -> Any:
        kind = type(value)
        if value is None:
            return st.none()
        if kind is bool:
            return st.booleans()
        if kind is int:
            return st.integers(-1000, 1000)
        if kind is float:
            return st.floats(-1e6, 1e6, allow_nan=False, allow_infinity=False)
        if kind is str:
            return st.text(max_size=12)
        if kind is bytes:
            return st.binary(max_size=12)
        if depth > 2:
            return st.nothing()
        if kind is list:
            inner = strategy(value[0], depth + 1) if value else st.integers(-9, 9)
            return st.lists(inner, max_size=6)
        if kind is tuple:
            return st.tuples(*(strategy(v, depth + 1) for v in value))
        if kind is dict:
            first = next(iter(value.values()), 0)
            return st.dictionaries(st.text(max_size=6), strategy(first, depth + 1), max_size=4)
        return st.nothing()

    drawn: list[tuple[Any, ...]] = []
    try:
        argument_strategy = st.tuples(*(strategy(a) for a in seed.args))
    except Exception:  # a value Hypothesis cannot describe: the seed's own calls stand
        return []

    @settings(max_examples=GENERATED_PER_SEED, derandomize=True, database=None, deadline=None,
              phases=[Phase.generate], suppress_health_check=list(HealthCheck))
    @given(argument_strategy)
    def collect(args: tuple[Any, ...]) -> None:
        drawn.append(args)

    try:
        collect()
    except Exception:  # nothing drawn (st.nothing): no generated calls for this seed
        return []
    return [Call(seed.module, seed.name, args, seed.kwargs, seed.init, "generated")
            for args in drawn]


# ----- running both sides --------------------------------------------------------------------


def run_side(
    ctx: ProveContext, mutant: Mutant | None, tried: list[Call], seconds: float,
    expect: list[dict[str, Any] | None] | None = None, once: bool = False,
) -> list[dict[str, Any] | None]:
    """Each call's outcome on the solution (``mutant`` None) or on the mutant, run in a
    sandbox of the task's kind; None for a call the run did not reach. ``expect`` (the
    solution's outcomes) only lets the run stop at its first difference: the comparison that
    counts is made here, on what came back."""
    task = ctx.task
    assert task.solution is not None
    payload = []
    for i, call in enumerate(tried):
        wire = call.wire()
        assert wire is not None
        if expect is not None:
            wire["expect"] = expect[i]
        if once:
            wire["once"] = True
        payload.append(wire)
    sandbox = ctx.spec.make(task.fixture)
    try:
        try:
            sandbox.setup()
            sandbox.start()
            sandbox.stage(task.solution)
            if mutant is not None:
                data = mutant.file_bytes(task.fixture)
                target = sandbox.live / mutant.path
                if data is None:
                    target.unlink(missing_ok=True)
                else:
                    target.write_bytes(data)
            (sandbox.live / _SCRIPT).write_text(_caller_text(), encoding="utf-8")
            (sandbox.live / _INPUT).write_text(json.dumps(payload), encoding="utf-8")
            sandbox.seal()
            result = sandbox.run(
                f"python3 {shlex.quote(_SCRIPT)} {shlex.quote(_INPUT)}",
                timeout_s=max(1.0, seconds),
            )
        except (SandboxError, OSError) as exc:
            raise Unassessed(f"the counterexample search could not run: {exc}") from exc
    finally:
        sandbox.close()
    out: list[dict[str, Any] | None] = [None] * len(tried)
    for i, line in enumerate(result.stdout.splitlines()[: len(tried)]):
        try:
            found = json.loads(line)
        except ValueError:
            break
        out[i] = found if isinstance(found, dict) else None
    return out


@dataclass
class Search:
    found: Counterexample | None
    tried: int
    reached: bool = True
    """False when the budget was spent before this mutant was searched."""


def search_all(
    ctx: ProveContext, mutants: list[Mutant], seconds: float
) -> dict[str, Search]:
    """A :class:`Search` for each of ``mutants``, within ``seconds`` for all of them."""
    started = time.monotonic()
    task = ctx.task
    assert task.solution is not None
    roots = [task.fixture, task.solution]
    modules = calls_mod.package_modules(roots)
    tests = sorted(task.holdout.rglob("*.py")) if task.holdout is not None else []
    tests += sorted(p for p in task.fixture.rglob("*.py")
                    if p.name.startswith("test") or "tests" in p.relative_to(task.fixture).parts)
    seeds = calls_mod.calls_in_tests(tests, modules)
    plans = {}
    for mutant in mutants:
        solution_file = task.solution / mutant.path
        text = solution_file.read_bytes() if solution_file.is_file() else None
        plans[mutant.id] = plan(seeds, mutant, text)
    union: dict[str, Call] = {}
    for tried in plans.values():
        for call in tried:
            union.setdefault(call.key(), call)
    every = list(union.values())
    left = seconds - (time.monotonic() - started)
    known: dict[str, dict[str, Any] | None] = {}
    if every and left > 0:
        # each call once on the solution: a call a mutant differs on is asked again below,
        # before it counts (most calls tell no mutant apart: asking each twice doubled this)
        outcomes = run_side(ctx, None, every, left / 2, once=True)
        known = {call.key(): outcome for call, outcome in zip(every, outcomes, strict=True)}
    results: dict[str, Search] = {}
    for n, mutant in enumerate(mutants):
        tried = plans[mutant.id]
        left = seconds - (time.monotonic() - started)
        if not tried or left <= 0:  # nothing to call, or no time left to call it
            results[mutant.id] = Search(None, 0, reached=left > 0)
            continue
        share = left / (len(mutants) - n)  # the mutants after this one keep their share
        expect = [known.get(c.key()) for c in tried]
        mine = run_side(ctx, mutant, tried, share, expect)
        found = None
        for call, theirs, ours in zip(tried, expect, mine, strict=True):
            if _differs(theirs, ours):
                assert theirs is not None and ours is not None
                again = run_side(ctx, None, [call], max(1.0, share))[0]  # twice, in one run
                if again == theirs:  # the solution's answer repeats: the difference counts
                    found = Counterexample(call, theirs, ours)
                    break
                known[call.key()] = {"unsteady": True}
        ran = sum(1 for o in mine if o is not None)
        results[mutant.id] = Search(found, ran)
    return results


# ----- what the finding says ----------------------------------------------------------------


def _mutant_id(check: CheckResult) -> str | None:
    parts = check.check.split()
    return parts[1] if len(parts) > 1 and parts[0] == "mutant" else None


def settle(ctx: ProveContext, checks: list[CheckResult], *, strict: bool,
           seconds: float = DEFAULT_COUNTEREXAMPLE_BUDGET) -> dict[str, Any] | None:
    """Rewrites each surviving mutant's check (ES911) by its evidence: with a counterexample
    it stays ES911, showing the call, both outcomes and a ready assertion; without one it is
    ES916, a warning (an error under ``--strict``). Returns what the search did (for the
    report: survivors, told apart, left ES916, seconds, the budget), None without survivors."""
    survivors = [c for c in checks
                 if c.code == "ES911" and c.outcome == "fail" and _mutant_id(c) is not None]
    task = ctx.task
    if not survivors or task.solution is None:
        return None
    started = time.monotonic()
    by_id = {m.id: m for m in generate(task.fixture, task.solution).mutants}
    wanted = [by_id[i] for c in survivors if (i := _mutant_id(c)) in by_id]
    try:
        searched = search_all(ctx, wanted, seconds) if seconds > 0 else {}
    except Unassessed:
        searched = {}
    for check in survivors:
        mutant = by_id.get(_mutant_id(check) or "")
        if mutant is None:
            continue
        where = f"solution/{mutant.path}:{mutant.line}: {mutant.description}"
        search = searched.get(mutant.id, Search(None, 0, reached=False))
        if search.found is not None:
            found = search.found
            ready = found.assertion()
            check.detail = (
                f"{where} passes every grader, yet {found.words()} (mutant {mutant.id}: "
                + (f"add `{ready.splitlines()[0]}` to a holdout test" if ready else
                   "add a holdout test of that call")
                + f", or mark it `# endstate: equivalent {mutant.id} <reason>`)"
            )
            check.counterexample = found.to_json()
            continue
        check.code = "ES916"
        check.severity = "error" if strict else "warning"
        if not search.reached:
            why = "the counterexample search's budget was spent before it was reached"
        elif search.tried:
            why = f"no call found that tells it from the solution ({search.tried} tried)"
        else:
            why = ("no call into the package with plain-value arguments could be read from "
                   "the tests to try (0 tried)")
        check.detail = (
            f"{where} passes every grader, and {why}: probably equivalent; add a test, or "
            f"mark it `# endstate: equivalent {mutant.id} <reason>`"
        )
    told = sum(1 for c in survivors if c.counterexample is not None)
    return {
        "survivors": len(survivors), "counterexamples": told,
        "probably_equivalent": sum(1 for c in survivors if c.code == "ES916"),
        "calls_tried": sum(s.tried for s in searched.values()),
        "seconds": round(time.monotonic() - started, 3), "budget": seconds,
        "max_calls_per_mutant": MAX_CALLS,
    }

