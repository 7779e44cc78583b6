"""``delegates_to``: delegation read from the sealed source, never by watching the code run.

Each end state below is written into a real local sandbox and sealed; the grader reads the
snapshot. The payload that motivated it (``WATCHED``: delegates only while ``mock.patch`` is
on) is first shown to pass the in-process check the refactor task used (``tests_pass`` with a
``mock.patch`` delegation test), then to fail ``delegates_to``.
"""

from __future__ import annotations

import re
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

from endstate_harness.graders import codeshape, delegates_to, grade
from endstate_harness.graders import tests_pass as in_process_tests_pass
from endstate_harness.sandbox.base import TreeSandbox
from endstate_harness.sandbox.docker.container import DockerSandbox
from endstate_harness.sandbox.local import LocalSandbox
from endstate_harness.task import GraderSpec
from endstate_harness.verdict import Verdict

ROOT = Path(__file__).resolve().parents[2]
MONEY = ROOT / "tasks" / "refactor-money-formatting"
WRAPPERS = ["format_usd", "format_eur", "format_jpy"]

SOLUTION = (MONEY / "solution" / "money" / "format.py").read_text(encoding="utf-8")
CURRENCIES = (MONEY / "solution" / "money" / "currencies.py").read_text(encoding="utf-8")
FORMAT_MONEY = SOLUTION.split("def format_usd")[0]
"""The solution's module up to its wrappers: imports and ``format_money``."""

OLD_USD = '''
def format_usd(amount_minor: int) -> str:
    sign = "-" if amount_minor < 0 else ""
    whole, cents = divmod(abs(amount_minor), 100)
    digits = f"{whole:,}"
    return f"{sign}${digits}.{cents:02d}"
'''

WATCHED = FORMAT_MONEY + '''
def _watched() -> bool:
    return type(format_money).__module__.startswith("unittest.mock")


def format_usd(amount_minor: int) -> str:
    if _watched():
        return format_money(amount_minor, "USD")
    sign = "-" if amount_minor < 0 else ""
    whole, cents = divmod(abs(amount_minor), 100)
    digits = f"{whole:,}"
    return f"{sign}${digits}.{cents:02d}"


def format_eur(amount_minor: int) -> str:
    if _watched():
        return format_money(amount_minor, "EUR")
    sign = "-" if amount_minor < 0 else ""
    whole, cents = divmod(abs(amount_minor), 100)
    digits = f"{whole:,}".replace(",", ".")
    return f"{sign}{digits},{cents:02d} €"


def format_jpy(amount_minor: int) -> str:
    if _watched():
        return format_money(amount_minor, "JPY")
    return ("¥" + format(amount_minor, ",")).replace("¥-", "-¥")
'''
"""The payload: delegates while a mock replaces ``format_money``, keeps its own code else."""

PATCHING_CHECK = '''\
import unittest
from unittest import mock

from money import format as money_format


class HeldOutDelegationTest(unittest.TestCase):
    def test_wrappers_delegate(self):
        for code, wrapper in {"USD": "format_usd", "EUR": "format_eur",
                              "JPY": "format_jpy"}.items():
            with self.subTest(wrapper):
                with mock.patch.object(money_format, "format_money",
                                       return_value="sentinel") as fm:
                    self.assertEqual(getattr(money_format, wrapper)(1234), "sentinel")
                fm.assert_called_once_with(1234, code)
'''
"""The in-process delegation check the refactor task shipped before (run by tests_pass)."""


@pytest.fixture
def box(tmp_path: Path) -> Iterator[LocalSandbox]:
    with LocalSandbox(MONEY / "fixture") as sandbox:
        yield sandbox


def _watched_box(kind: str, tmp_path: Path, image: str = "") -> TreeSandbox:
    holdout = tmp_path / "holdout" / "tests"
    holdout.mkdir(parents=True)
    (holdout / "delegation_holdout_money.py").write_text(PATCHING_CHECK, encoding="utf-8")
    if kind == "local":
        return LocalSandbox(MONEY / "fixture")
    return DockerSandbox(MONEY / "fixture", image=image, pull=False)


def _graded(box: LocalSandbox, files: dict[str, str], **args: object) -> Verdict:
    for rel, text in files.items():
        box.write_text(rel, textwrap.dedent(text) if text.startswith("\n    ") else text)
    box.seal()
    return delegates_to(box, **{"path": "money/format.py", "functions": WRAPPERS,
                                "to": "format_money", **args})  # type: ignore[arg-type]


def _details(verdict: Verdict) -> str:
    return "\n".join(f"{c.name}: {c.passed}: {c.detail}" for c in verdict.checks)


def test_the_solution_delegates(box: LocalSandbox) -> None:
    verdict = _graded(box, {"money/format.py": SOLUTION, "money/currencies.py": CURRENCIES},
                      every_path=True)
    assert verdict.passed, _details(verdict)
    assert [c.name for c in verdict.checks] == [
        f"money/format.py: {w} delegates to format_money" for w in WRAPPERS]


def _watched(box: TreeSandbox, tmp_path: Path) -> None:
    box.write_text("money/format.py", WATCHED)
    box.write_text("money/currencies.py", CURRENCIES)
    box.seal()
    box.stage(tmp_path / "holdout")
    watched = in_process_tests_pass(box, start_dir="tests", pattern="delegation*.py")
    assert watched.passed, "the payload is real: the patching check passes it"
    verdict = delegates_to(box, path="money/format.py", functions=WRAPPERS, to="format_money",
                           every_path=True)
    assert not verdict.passed
    details = _details(verdict)
    assert "format_usd does not call format_money on every path" in details, details
    assert "format_jpy does not call format_money on every path" in details, details
    # without every_path, the copies of the old code still give format_usd away; format_jpy's
    # own code is rewritten, no copy: what every_path is for
    verdict = delegates_to(box, path="money/format.py", functions=WRAPPERS, to="format_money")
    usd, _eur, jpy = verdict.checks
    assert "format_usd carries its own copy of format_money's logic" in usd.detail
    assert "`'-' if amount_minor < 0 else ''` (line" in usd.detail, usd.detail
    assert jpy.passed


def test_a_delegation_only_while_watched_beats_patching_not_the_source(tmp_path: Path) -> None:
    with _watched_box("local", tmp_path) as box:
        _watched(box, tmp_path)


def test_the_same_in_docker(tmp_path: Path, docker_image: str) -> None:
    with _watched_box("docker", tmp_path, docker_image) as box:
        _watched(box, tmp_path)


def test_calling_it_and_keeping_a_copy_fails(box: LocalSandbox) -> None:
    copying = FORMAT_MONEY + OLD_USD.replace(
        '    sign = "-"', '    format_money(amount_minor, "USD")\n    sign = "-"')
    verdict = _graded(box, {"money/format.py": copying, "money/currencies.py": CURRENCIES},
                      functions=["format_usd"], uses_result=False)
    assert not verdict.passed
    detail = verdict.checks[0].detail
    assert "carries its own copy" in detail and "money/format.py line" in detail, detail


def test_each_end_state_gets_the_words_of_its_own_tree(tmp_path: Path) -> None:
    """The callee's shapes are remembered between gradings (prove grades every mutant of a
    module): the same copy three lines further down is placed at its own lines, and a changed
    module gets the words it gets with nothing remembered."""
    copying = FORMAT_MONEY + OLD_USD.replace(
        '    sign = "-"', '    format_money(amount_minor, "USD")\n    sign = "-"')
    files = {"money/currencies.py": CURRENCIES}
    details = []
    for text in (copying, "\n\n\n" + copying, copying):
        with LocalSandbox(MONEY / "fixture") as box:
            details.append(_graded(box, {**files, "money/format.py": text},
                                   functions=["format_usd"], uses_result=False).checks[0].detail)
    lines = [[int(n) for n in re.findall(r"line (\d+)", d)] for d in details]
    assert lines[0] and lines[1] == [n + 3 for n in lines[0]] and lines[2] == lines[0], details
    assert details[2] == details[0]
    changed = copying.replace("divmod(abs(amount_minor)", "divmod(amount_minor", 1)
    assert changed != copying
    with LocalSandbox(MONEY / "fixture") as box:
        verdict = _graded(box, {**files, "money/format.py": changed},
                          functions=["format_usd"], uses_result=False)
    fresh = verdict.checks[0].detail
    codeshape._BY_TREE.clear()
    codeshape._SEEN.clear()
    with LocalSandbox(MONEY / "fixture") as box:
        again = _graded(box, {**files, "money/format.py": changed},
                        functions=["format_usd"], uses_result=False).checks[0].detail
    assert fresh == again  # remembered or computed afresh: the same words


def test_not_calling_it_fails(box: LocalSandbox) -> None:
    verdict = _graded(box, {"money/format.py": FORMAT_MONEY + OLD_USD,
                            "money/currencies.py": CURRENCIES}, functions=["format_usd"])
    assert verdict.checks[0].detail.startswith("format_usd never calls format_money"), \
        verdict.checks[0].detail


@pytest.mark.parametrize("body", [
    '    return "$" + str(amount_minor)\n    format_money(amount_minor, "USD")\n',
    '    if False:\n        return format_money(amount_minor, "USD")\n    return "$"\n',
    '    format_money = lambda a, c: "$"\n    return format_money(amount_minor, "USD")\n',
    '    run = lambda: format_money(amount_minor, "USD")\n    return "$"\n',
], ids=["after-return", "if-false", "shadowed", "in-a-lambda"])
def test_a_call_that_never_runs_is_no_call(box: LocalSandbox, body: str) -> None:
    module = FORMAT_MONEY + "\n\ndef format_usd(amount_minor: int) -> str:\n" + body
    verdict = _graded(box, {"money/format.py": module, "money/currencies.py": CURRENCIES},
                      functions=["format_usd"])
    assert "never calls format_money" in verdict.checks[0].detail, verdict.checks[0].detail


def test_dropping_the_result_fails_unless_allowed(box: LocalSandbox) -> None:
    module = FORMAT_MONEY + (
        "\n\ndef format_usd(amount_minor: int) -> str:\n"
        '    format_money(amount_minor, "USD")\n    return "$" + str(amount_minor)\n')
    verdict = _graded(box, {"money/format.py": module, "money/currencies.py": CURRENCIES},
                      functions=["format_usd"])
    assert "drops what it returns" in verdict.checks[0].detail
    assert delegates_to(box, path="money/format.py", functions=["format_usd"],
                        to="format_money", uses_result=False).passed


def test_every_path_is_asked_for_only_when_named(box: LocalSandbox) -> None:
    module = FORMAT_MONEY + (
        "\n\ndef format_usd(amount_minor: int) -> str:\n"
        "    if amount_minor < 0:\n        raise ValueError('negative')\n"
        '    if amount_minor == 0:\n        return "$0.00"\n'
        '    return format_money(amount_minor, "USD")\n')
    verdict = _graded(box, {"money/format.py": module, "money/currencies.py": CURRENCIES},
                      functions=["format_usd"])
    assert verdict.passed, _details(verdict)
    strict = delegates_to(box, path="money/format.py", functions=["format_usd"],
                          to="format_money", every_path=True)
    assert "does not call format_money on every path" in strict.checks[0].detail


def test_the_function_missing_and_the_file_not_parsing(box: LocalSandbox) -> None:
    verdict = _graded(box, {"money/format.py": SOLUTION, "money/currencies.py": CURRENCIES},
                      functions=["format_gbp"])
    assert verdict.checks[0].detail == "money/format.py has no function format_gbp"
    broken = delegates_to(box, path="money/broken.py", functions=["f"], to="g")
    assert broken.checks[0].detail == "money/broken.py is not in the end state"


def test_a_file_that_does_not_parse(box: LocalSandbox) -> None:
    verdict = _graded(box, {"money/format.py": SOLUTION + "\ndef broken(:\n"})
    assert not verdict.passed
    assert all("money/format.py does not parse (line" in c.detail for c in verdict.checks)


def test_the_callee_missing_or_bound_twice(box: LocalSandbox) -> None:
    module = "def format_usd(amount_minor):\n    return format_money(amount_minor, 'USD')\n"
    verdict = _graded(box, {"money/format.py": module}, functions=["format_usd"])
    assert "the definition of format_money is not in the end state" in verdict.checks[0].detail
    twice = SOLUTION + "\n\nformat_money = str\n"
    box2 = LocalSandbox(MONEY / "fixture")
    with box2:
        verdict = _graded(box2, {"money/format.py": twice, "money/currencies.py": CURRENCIES},
                          functions=["format_usd"])
    assert "format_money is bound 2 times" in verdict.checks[0].detail


RETRY_SOLUTION = ROOT / "tasks" / "refactor-retry-backoff" / "solution" / "retrying"


@pytest.mark.parametrize("how", ["absolute", "relative", "module"])
def test_a_callee_in_another_module_and_a_copy_of_it(tmp_path: Path, how: str) -> None:
    """retry() calls backoff_delays() from retrying/backoff.py; keeping the inline arithmetic
    as well is a copy of backoff_delays's ``base * factor ** n`` (names renamed)."""
    policy = (RETRY_SOLUTION / "policy.py").read_text(encoding="utf-8")
    call = "backoff_delays(attempts, base, factor, cap)"
    if how == "relative":
        policy = policy.replace("from retrying.backoff import", "from .backoff import")
    elif how == "module":
        policy = policy.replace("from retrying.backoff import backoff_delays",
                                "from retrying import backoff")
        policy = policy.replace(call, f"backoff.{call}")
    copied = policy.replace("            sleep(delays[attempt])",
                            "            delay = min(base * factor ** attempt, cap)\n"
                            "            sleep(delays[attempt] if delays else delay)")
    fixture = ROOT / "tasks" / "refactor-retry-backoff" / "fixture"
    for text, ok in ((policy, True), (copied, False)):
        with LocalSandbox(fixture) as box:
            box.write_text("retrying/policy.py", text)
            box.write_text("retrying/backoff.py",
                           (RETRY_SOLUTION / "backoff.py").read_text(encoding="utf-8"))
            box.seal()
            verdict = delegates_to(box, path="retrying/policy.py", functions=["retry"],
                                   to="backoff_delays", every_path=True)
        assert verdict.passed is ok, _details(verdict)
        if not ok:
            assert "`min(base * factor ** attempt, cap)`" in verdict.checks[0].detail
            assert "retrying/backoff.py line" in verdict.checks[0].detail


def test_a_method_delegating_to_another_method(box: LocalSandbox) -> None:
    module = textwrap.dedent("""\
        class Formatter:
            def format_money(self, amount, code):
                sign = "-" if amount < 0 else ""
                return f"{sign}{abs(amount)} {code}"

            def format_usd(self, amount):
                return self.format_money(amount, "USD")

            def format_eur(self, amount):
                text = self.format_money(amount, "EUR")
                sign = "-" if amount < 0 else ""
                return text and f"{sign}{abs(amount)} EUR"
        """)
    verdict = _graded(box, {"money/format.py": module},
                      functions=["Formatter.format_usd", "Formatter.format_eur"])
    usd, eur = verdict.checks
    assert usd.passed and not eur.passed
    assert "carries its own copy" in eur.detail


def test_grade_resolves_it_by_name_and_checks_its_args(box: LocalSandbox) -> None:
    box.write_text("money/format.py", SOLUTION)
    box.write_text("money/currencies.py", CURRENCIES)
    box.seal()
    spec = GraderSpec(name="endstate_harness.graders:delegates_to",
                      args={"path": "money/format.py", "functions": WRAPPERS,
                            "to": "format_money"})
    assert grade([spec], box).passed
    bad = GraderSpec(name="endstate_harness.graders:delegates_to", args={"path": "x.py"})
    assert "cannot resolve" in grade([bad], box).reason
