"""Benchmark and differential: the mutants of a weakly tested task, batched and graded alone.

A sound task kills every mutant, and a kill is cheap (a judged run stops at its first failing
test). The tasks an author most needs prove for are the weak ones, whose survivors (ES911) run
every test. This bench makes a weak task from a shipped one: the same task without its holdout,
so that only the visible tests judge the mutants. In one run, as fresh processes with no cache
(``prove TASK --sandbox local --no-cache --only mutants``), interleaved, fastest of ``--repeat``:

* **alone** — ``ENDSTATE_MUTANT_BATCH=0``: a sandbox, a judge and a child per mutant;
* **batched** — the default: mutants judged up to four dozen to a judge, kills and survivors alike
  decided in the batch (``endstate_author/prove/mutant_batch.py``).

It prints both times, their ratio, the survivors, and whether every mutant had the same
outcome both ways and every survivor the same words (its ES911 finding, what the author
reads). A killed mutant's words name the tests that failed, and a batch stops at the first
(graded alone, every test runs): the same outcome, fewer names, so those are not compared.

    .venv/bin/python bench/survivors.py [TASK] [--repeat N]
"""

from __future__ import annotations

import argparse
import shutil
import tempfile
from pathlib import Path
from typing import Any

from bare import precompile
from prove import ROOT, run_prove_report


def _outcomes(report: dict[str, Any]) -> dict[str, tuple[str, str]]:
    return {c["check"]: (c["outcome"], c.get("detail", "")) for t in report.get("tasks", [])
            for c in t.get("checks", [])}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("task", nargs="?",
                        default=str(ROOT / "tasks" / "add-markdown-table-alignment"))
    parser.add_argument("--repeat", type=int, default=2)
    args = parser.parse_args()
    precompile()
    with tempfile.TemporaryDirectory(prefix="endstate-bench-survivors-") as tmp:
        weak = Path(tmp) / (Path(args.task).name + "-without-holdout")
        shutil.copytree(args.task, weak, symlinks=True)
        shutil.rmtree(weak / "holdout", ignore_errors=True)
        common = [str(weak), "--sandbox", "local", "--no-cache", "--only", "mutants"]
        best: dict[str, float] = {}
        reports: dict[str, dict[str, Any]] = {}
        for n in range(args.repeat):
            for label, env in (("alone", {"ENDSTATE_MUTANT_BATCH": "0"}), ("batched", {})):
                seconds, _rc, report = run_prove_report(common, Path(tmp) / f"c-{label}-{n}", env)
                best[label] = min(best.get(label, seconds), seconds)
                reports[label] = report
    alone, batched = _outcomes(reports["alone"]), _outcomes(reports["batched"])
    survivors = sum(o == "fail" for o, _ in batched.values())
    print(f"task: {weak.name} (a shipped task without its holdout), mutants only, local, no cache")
    print(f"mutants {len(batched)}, survivors (ES911) {survivors}")
    print(f"alone    {best['alone']:6.2f} s")
    print(f"batched  {best['batched']:6.2f} s  = {best['batched'] / best['alone']:.2f}x alone")
    same = bool(alone) and alone.keys() == batched.keys() and all(
        alone[k][0] == batched[k][0] and (alone[k][0] != "fail" or alone[k] == batched[k])
        for k in alone)
    print(f"differential: every mutant's outcome, and every survivor's words, the same both "
          f"ways: {'yes' if same else 'NO'}")


if __name__ == "__main__":
    main()
