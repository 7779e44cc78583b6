"""What a person reads after ``eval``: the console summary, report.html, and run comparisons.

The harness writes results.json and report.md (plain, for machines and diffs); this package
turns a run folder into what a person opens: real tables on the console (:mod:`.console`), a
self-contained report.html with charts drawn as static SVG (:mod:`.html`, :mod:`.charts`), and
``eval compare RUN_A RUN_B`` (:mod:`.compare`). Everything reads the run folder (results.json
and sessions.sqlite3), so a saved run can be reported on or compared at any later time.
"""
