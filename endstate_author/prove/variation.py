"""What prove varies between gradings of one end state, as a real agent's run varies it: the
hash seed and the order the tests run in; and which tests a change of them flipped (ES909).

Why: every sandbox command and the judge run under one ``PYTHONHASHSEED`` (the task format's
0), so a holdout whose expected value is a set's iteration order (``list({"a", "b"})``), or a
solution that joins a set, agrees with itself on every run of prove, and a grading under the
same seed in the same order repeats the same luck. The agent's run is graded under seed 0 too,
but its code is not the solution: what it iterates and in which order is its own. So the
solution is graded once more under another seed with the tests in reverse order (each pair
of tests meets in the other order), and each ``--repeat`` pass runs under a seed and a
shuffled order of its own. The seeds are fixed per pass (not random), so a finding names
seeds that reproduce it, and a proof answered from the cache is the proof that ran.
"""

from __future__ import annotations

from typing import Any

from endstate_harness.sandbox.choice import SandboxChoice

_STEP = 2654435761
"""Seed k is k times this, modulo 2**32 (a multiplier that spreads consecutive k over the
whole range: seeds of neighbouring passes share no low bits)."""


def seed_of(k: int) -> int:
    """The k-th grading's hash seed: 0 (the task format's) first."""
    return (k * _STEP) % (1 << 32)


def order_of(k: int) -> str:
    """The k-th grading's test order: as discovered first, then reversed, then shuffled."""
    if k == 0:
        return ""
    return "reversed" if k == 1 else f"shuffled:{seed_of(k)}"


def for_pass(spec: SandboxChoice, index: int) -> SandboxChoice:
    """The sandbox of ``--repeat`` pass ``index`` (0: ``spec`` as given, the default seed)."""
    if index == 0:
        return spec
    return spec.varied(seed_of(2 * index), order_of(2 * index))


def other(spec: SandboxChoice, index: int) -> SandboxChoice:
    """The sandbox of pass ``index``'s second grading of the solution: another seed, and
    another order than the pass's own."""
    return spec.varied(seed_of(2 * index + 1), order_of(2 * index + 1))


def flipped(first: dict[str, str], second: dict[str, str]) -> dict[str, tuple[str, str]]:
    """Tests whose outcome differs between two gradings (one that ran in only one of them
    counts as ``not run`` in the other); a skip against a skip, or a test both runs name the
    same, is no flip."""
    out: dict[str, tuple[str, str]] = {}
    for name in sorted(set(first) | set(second)):
        a, b = first.get(name, "not run"), second.get(name, "not run")
        if a != b:
            out[name] = (a, b)
    return out


def evidence(specs: list[SandboxChoice], flips: dict[str, tuple[str, str]]) -> dict[str, Any]:
    """ES909's evidence, for the finding's JSON: each grading's seed and order, and each
    flipped test's outcome in each."""
    return {
        "gradings": [{"hash_seed": spec.hash_seed, "test_order": spec.test_order or "discovered"}
                     for spec in specs],
        "flipped": {name: list(pair) for name, pair in flips.items()},
    }


def flip_lines(flips: dict[str, tuple[str, str]], limit: int = 8) -> str:
    """``test (file) passed → failed; …``, at most ``limit`` of them, the rest counted."""
    shown = [f"{name} {a} → {b}" for name, (a, b) in list(flips.items())[:limit]]
    more = len(flips) - len(shown)
    return "; ".join(shown) + (f"; and {more} more" if more > 0 else "")


def describe(spec: SandboxChoice) -> str:
    """``hash seed 0, tests as discovered``."""
    return spec.variation()
