"""A small real prove stand-in for the server's prove-on-save tests (a real process).

Called as ``fake_prove.py TASK --output-format json --sandbox S`` (the command line the
server builds). It records that it started (``<suite>/prove-runs/<pid>.started``), reports
two steps on stderr, sleeps ``<suite>/prove-delay`` seconds (default 0.5), then prints a
valid prove JSON report with one ES902 finding about the ``no_new_skips`` grader (its
``pointer``), and
records that it finished.
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

task = Path(sys.argv[1]).resolve()
runs = task.parent / "prove-runs"
runs.mkdir(exist_ok=True)
(runs / f"{os.getpid()}.started").write_text(" ".join(sys.argv[1:]))
delay_file = task.parent / "prove-delay"
delay = float(delay_file.read_text()) if delay_file.exists() else 0.5
print("checking: fixture fails", file=sys.stderr, flush=True)
time.sleep(delay / 2)
print("checking: solution passes", file=sys.stderr, flush=True)
time.sleep(delay / 2)
graders = json.loads((task / "task.json").read_text()).get("graders", [])
named = next(i for i, g in enumerate(graders) if str(g.get("name", "")).endswith("no_new_skips"))
report = {
    "diagnostics": [
        {
            "code": "ES902",
            "severity": "error",
            "message": "the graders fail on the reference solution: no_new_skips failed",
            "file": str(task / "task.json"),
            "line": 1,
            "column": 1,
            "end_line": 1,
            "end_column": 1,
            "pointer": ["graders", named],  # as prove says which grader it is about
        }
    ],
    "tasks": [
        {
            "task": task.name,
            "path": str(task),
            "checks": [
                {"check": "fixture-fails", "outcome": "pass", "seconds": 0.1, "detail": ""},
                {"check": "solution-passes", "outcome": "fail", "seconds": 0.2, "detail": "x"},
            ],
        }
    ],
}
print(json.dumps(report))
(runs / f"{os.getpid()}.finished").write_text("done")
sys.exit(1)
