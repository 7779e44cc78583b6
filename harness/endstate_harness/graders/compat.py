"""Let suite grader modules written for endstate 0.3.0 import without endstate installed."""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import sys
import threading
import types
from collections.abc import Sequence

import endstate_harness.graders.reference as reference
from endstate_harness.errors import GraderContractError, SandboxError
from endstate_harness.sandbox.base import ExecResult, Sandbox
from endstate_harness.verdict import Check, Verdict

_ALIASED = ("endstate", "endstate.evals", "endstate.evals.graders")
_lock = threading.Lock()
_resolver_exports: dict[str, object] = {}
"""``resolve`` and ``Grader``, handed in by :mod:`endstate_harness.graders` when it installs the
finder: that module imports this one, so importing it back here would be a cycle."""


def _build(name: str) -> types.ModuleType:
    """The module object an aliased name maps to."""
    if name == "endstate.evals.graders":
        return reference
    module = types.ModuleType(name)
    module.__doc__ = (
        "Compatibility alias installed by endstate_harness.graders.compat: "
        f"{name} is not installed, "
        "so the names a grader module needs come from endstate_harness."
    )
    if name == "endstate":
        module.__path__ = []  # a package, so that ``endstate.evals`` can be imported below it
        return module
    module.__path__ = []
    # deferred: the pydantic task model, only when a suite grader imports endstate.evals
    from endstate_harness.task import GraderSpec

    exported: dict[str, object] = {
        "Check": Check,
        "Verdict": Verdict,
        "Sandbox": Sandbox,
        "ExecResult": ExecResult,
        "SandboxError": SandboxError,
        "GraderSpec": GraderSpec,
        "GraderContractError": GraderContractError,
        **_resolver_exports,
    }
    module.__dict__.update(exported)
    module.__all__ = sorted(exported)  # type: ignore[attr-defined]
    return module


class _AliasLoader(importlib.abc.Loader):
    """Hands back the prebuilt alias module; there is no code to execute."""

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> types.ModuleType:
        return _build(spec.name)

    def exec_module(self, module: types.ModuleType) -> None:
        return None


class EndstateAliasFinder(importlib.abc.MetaPathFinder):
    """Answers for the aliased ``endstate`` names, but only as a last resort (see module doc)."""

    def find_spec(
        self,
        fullname: str,
        path: Sequence[str] | None,
        target: types.ModuleType | None = None,
    ) -> importlib.machinery.ModuleSpec | None:
        if fullname not in _ALIASED:
            return None
        # A real ``endstate`` already imported owns its submodules; never mix the two.
        parent = sys.modules.get("endstate")
        if fullname != "endstate" and parent is not None and not _is_alias(parent):
            return None
        return importlib.machinery.ModuleSpec(
            fullname, _AliasLoader(), is_package=fullname != "endstate.evals.graders"
        )


def _is_alias(module: types.ModuleType) -> bool:
    return "endstate_harness.graders.compat" in (module.__doc__ or "")


def install(**resolver_exports: object) -> None:
    """Append the alias finder to ``sys.meta_path`` once (idempotent, thread-safe).

    ``resolver_exports`` (``resolve``, ``Grader``) join what ``endstate.evals`` offers.
    """
    with _lock:
        _resolver_exports.update(resolver_exports)
        if not any(isinstance(f, EndstateAliasFinder) for f in sys.meta_path):
            sys.meta_path.append(EndstateAliasFinder())


def real_endstate_available() -> bool:
    """Whether the genuine endstate package can be imported (without importing it)."""
    spec = importlib.machinery.PathFinder.find_spec("endstate")
    return spec is not None
