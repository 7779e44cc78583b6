"""Helpers shared by the tests and the ``bench/`` scripts; not part of the product (the wheel
does not ship them).

:mod:`~.tasks` writes the authoring guide's sound task (and variants) to disk,
:mod:`~.fuzzgen` draws damaged task.json documents (needs ``hypothesis``, a dev dependency),
:mod:`~.lspclient` speaks raw JSON-RPC to the real language server over stdio,
:mod:`~.raycluster` starts a two-node Ray cluster on loopback (needs the ``ray`` extra). A bench
script puts the repository root on ``sys.path`` to import them.
"""
