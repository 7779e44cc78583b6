"""Semantic version parsing and precedence (semver.org, 2.0.0).

A version is ``MAJOR.MINOR.PATCH`` with an optional ``-pre.release`` part and an optional
``+build`` part. Release tooling sorts git tags with this module, so a wrong order ships the
wrong artefact.
"""

from __future__ import annotations

import functools
import re

_VERSION = re.compile(
    r"^v?(?P<core>\d+\.\d+\.\d+)"
    r"(?:-(?P<pre>[0-9A-Za-z-]+(?:\.[0-9A-Za-z-]+)*))?"
    r"(?:\+(?P<build>[0-9A-Za-z-]+(?:\.[0-9A-Za-z-]+)*))?$"
)


def parse(text: str) -> tuple[list[str], list[str]]:
    """Split a version into its core parts and its pre-release identifiers.

    Raises:
        ValueError: ``text`` is not a semantic version.
    """
    match = _VERSION.match(text.strip())
    if match is None:
        raise ValueError(f"not a semantic version: {text!r}")
    core = match.group("core").split(".")
    pre = match.group("pre").split(".") if match.group("pre") else []
    return core, pre


def _identifier_key(identifier: str) -> tuple[int, int, str]:
    """Numeric identifiers compare as numbers and sort before alphanumeric ones (§11.4)."""
    if identifier.isdigit():
        # endstate: equivalent mc43acb27 numeric keys that tie on the number tie on this field too
        return (0, int(identifier), "")
    # endstate: equivalent m28357288 every alphanumeric key has the same middle field
    return (1, 0, identifier)


def _compare_identifiers(left: list[str], right: list[str]) -> int:
    for a, b in zip(left, right):
        key_a, key_b = _identifier_key(a), _identifier_key(b)
        if key_a != key_b:
            # endstate: equivalent m9bbb4a41 the keys differ here, so < and <= agree
            return -1 if key_a < key_b else 1
    return (len(left) > len(right)) - (len(left) < len(right))


def compare(left: str, right: str) -> int:
    """Return -1, 0 or 1 as ``left`` has lower, equal or higher precedence than ``right``."""
    left_core, left_pre = parse(left)
    right_core, right_pre = parse(right)
    result = _compare_identifiers(left_core, right_core)
    if result:
        return result
    if not left_pre or not right_pre:
        # A pre-release has lower precedence than the release it precedes.
        return (not left_pre) - (not right_pre)
    return _compare_identifiers(left_pre, right_pre)


def sort_versions(versions: list[str]) -> list[str]:
    """Versions from lowest to highest precedence; equal versions keep their order."""
    return sorted(versions, key=functools.cmp_to_key(compare))


def latest(versions: list[str]) -> str:
    """The version with the highest precedence.

    Raises:
        ValueError: ``versions`` is empty.
    """
    if not versions:
        raise ValueError("no versions to choose from")
    return sort_versions(versions)[-1]
