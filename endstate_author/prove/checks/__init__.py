"""The check groups of prove, one module each, in the order they run."""
