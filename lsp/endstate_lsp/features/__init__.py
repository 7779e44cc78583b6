"""The language server's features, one module per LSP feature, each with a ``register(ls)``
hook that :mod:`endstate_lsp.app` calls to attach its handlers.

- ``configuration``: initialize, initialized (file watching), settings changes;
- ``diagnostics``: lint as you type, publish or answer pulls, react to file changes;
- ``completion``: proposals for keys, values, grader names, arguments, paths;
- ``hover``: what the thing under the cursor means;
- ``navigation``: go-to-definition and document links;
- ``symbols``: the outline;
- ``actions``: quick fixes, fix-all, "add the missing mandatory assertions";
- ``code_lens``: the prove status line.

Prove on save, which is more than a handler, is :mod:`endstate_lsp.prove_on_save`. The
answers themselves come from :mod:`endstate_author.assist` (same names, protocol-free);
these modules only convert between it and the protocol.
"""
