"""lint: the static rules run over task folders, with a cache and a fast path."""
