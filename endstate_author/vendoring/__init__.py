"""``endstate-author vendor``: the hardened graders, written into a suite for plain endstate."""
