"""endstate-author: lint, prove and edit endstate evaluation tasks. No silent task."""

__version__ = "0.2.0"
