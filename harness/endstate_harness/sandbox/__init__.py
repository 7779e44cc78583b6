"""Sandboxes: where an end state lives and its commands run."""
