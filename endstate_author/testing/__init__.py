"""Helpers shared by tests and benchmarks, not used by the product.

They live in the package so ``bench/`` scripts can import them without putting ``tests/`` on
``sys.path``: :mod:`~.tasks` writes the authoring guide's sound task (and variants) to disk,
:mod:`~.fuzzgen` draws damaged task.json documents (needs ``hypothesis``, a dev dependency),
:mod:`~.lspclient` speaks raw JSON-RPC to the real language server over stdio,
:mod:`~.raycluster` starts a two-node Ray cluster on loopback (needs the ``ray`` extra). Nothing in
``endstate_author``, ``endstate_lsp`` or ``endstate_harness`` imports them.
"""
