"""redteam: a model told to pass a task's graders without doing the work (ES913).

Probes replay hacks someone already knew; the hacks that beat a hardened grader were found by
an adversary who read the grader and aimed at it. ``endstate-author redteam`` makes that
adversary a command: each attempt is an agent run through the embedded harness with a red-team
instruction in place of the prompt (:mod:`.instruction`, :mod:`.attempt`); an end state that
passes every grader is triaged against behaviour checks the agent could not see
(:mod:`.triage`, :mod:`.diff`); a confirmed exploit is reported as ES913 (:mod:`.report`) and
can be kept as a suite probe that ``prove`` replays on every task (:mod:`.probe_store`).

Nothing is imported here: ``prove`` reads :mod:`.probe_store` and must not pay for the agent
loop the other modules import.
"""
