"""endstate-author's language server (protocol handling; the analysis is endstate_author's)."""

__version__ = "0.1.0"
