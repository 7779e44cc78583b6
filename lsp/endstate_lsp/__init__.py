"""endstate-author's language server (protocol handling; the analysis is endstate_author's)."""

from endstate_author import __version__

__all__ = ["__version__"]
