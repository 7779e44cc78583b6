"""The check groups of prove, one module each, in the order they run.

directions, holdout, defects and probes grade an end state built without an agent
(:mod:`endstate_author.prove.grading`); oracle and guards drive a scripted agent through the
real runner (:mod:`endstate_author.prove.harness`). Each module offers ``jobs(task)`` — its
checks as independent units of work — and, where a group can be skipped as a whole,
``skipped(task)``: the notes that say why.
"""
