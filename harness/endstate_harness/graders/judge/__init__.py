"""The judge: a test grader that never shares a process with the code it judges.

One room per part of the design:

* :mod:`~endstate_harness.graders.judge.grader` — the ``judged_tests`` grader: builds the trusted
test
  folder, starts both processes, relays between them, turns the report into checks;
* :mod:`~endstate_harness.graders.judge.main` — the judge process (host side, trusted files only);
* :mod:`~endstate_harness.graders.judge.remote` — the conversation with the child, within
  the call's deadline;
* :mod:`~endstate_harness.graders.judge.proxies` — the judge's proxies for the code under
  test: what they ask the child, what they answer or refuse themselves;
* :mod:`~endstate_harness.graders.judge.assertions` — assertions that refuse operands standing
  for the code under test, and bounded diffs;
* :mod:`~endstate_harness.graders.judge.finder` — the import hook that makes those proxies;
* :mod:`~endstate_harness.inside.judge_child` — the server that runs the code under test (in the
  sandbox; shipped as source, never imported by the harness);
* :mod:`~endstate_harness.graders.judge.wire` — the values-only encoding both sides speak.
"""
