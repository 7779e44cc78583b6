"""The language server's features, one module per LSP feature, each with a ``register(ls)``
hook that :mod:`endstate_lsp.app` calls to attach its handlers.
"""
