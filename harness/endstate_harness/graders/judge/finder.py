"""How the judge's imports of the package under test reach the child: a meta-path finder."""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import sys
import types
from collections.abc import Sequence

from endstate_harness.graders.judge.proxies import RemoteModule
from endstate_harness.graders.judge.remote import Conversation


class _RemoteLoader(importlib.abc.Loader):
    def __init__(self, conv: Conversation) -> None:
        self.conv = conv

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> types.ModuleType:
        remote = self.conv.request("import", name=spec.name)
        number = getattr(remote, "_judge_ref", None) if isinstance(remote, RemoteModule) else None
        if number is None:
            raise ImportError(f"the code under test gave no module for {spec.name!r}")
        module = RemoteModule(spec.name, self.conv, number)
        self.conv.objects[number] = module
        return module

    def exec_module(self, module: types.ModuleType) -> None:
        return None


class RemoteFinder(importlib.abc.MetaPathFinder):
    """Answers imports of the package under test (and its submodules) with proxy modules."""

    def __init__(
        self, conv: Conversation, top_names: set[str], exact: set[str] | None = None
    ) -> None:
        self.conv = conv
        self.top_names = top_names
        self.exact = exact or set()

    def find_spec(
        self,
        fullname: str,
        path: Sequence[str] | None,
        target: types.ModuleType | None = None,
    ) -> importlib.machinery.ModuleSpec | None:
        if fullname.partition(".")[0] not in self.top_names and fullname not in self.exact:
            return None
        spec = importlib.machinery.ModuleSpec(fullname, _RemoteLoader(self.conv), is_package=True)
        return spec


def install(
    conv: Conversation, top_names: set[str], helpers: dict[str, str] | None = None
) -> RemoteFinder:
    """Answer imports of the code under test with proxies; define the task's child helpers
    (test doubles that must live where the package runs) in the child first."""
    for name, source in (helpers or {}).items():
        conv.request("define", name=name, source=source)
    finder = RemoteFinder(conv, top_names, set(helpers or {}))
    sys.meta_path.insert(0, finder)
    return finder
