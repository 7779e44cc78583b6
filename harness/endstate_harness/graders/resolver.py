"""Resolution: how a task's grader names become callables of the sandbox alone, and the
run-level ``requires`` checks. The public face is :mod:`endstate_harness.graders`."""


from __future__ import annotations

import importlib
import importlib.machinery
import inspect
import sys
import threading
import types
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import endstate_harness.graders.compat as compat
from endstate_harness.errors import (
    GraderContractError,
    PathEscapeError,
    SandboxDied,
    SandboxError,
)
from endstate_harness.graders.names import (
    FORBIDDEN_PARAMETERS,
    GRADERS,
    REFERENCE_MODULE,
    REFERENCE_NAMES,
    SEALED_ONLY,
    THIS_MODULE,
)
from endstate_harness.graders.reference import REFERENCE_GRADERS
from endstate_harness.sandbox.base import Sandbox
from endstate_harness.verdict import Check, EnvironmentFault, Verdict

if TYPE_CHECKING:  # the pydantic model: the resolver only reads what the runner hands it
    from endstate_harness.task import GraderSpec, Requires

Grader = Callable[[Sandbox], Verdict]
"""What the runner holds: a grader with its args already bound, taking only the sandbox."""

BUILTIN_GRADERS: dict[str, Callable[..., Verdict]] = {
    record.name: record.load() for record in GRADERS
}
"""Every grader of the library, by short name, loaded from its record's module
(:data:`~endstate_harness.graders.names.GRADERS`). Named ``endstate_harness.graders:<name>``
in a task; the reference ones also ``endstate.evals.graders:<name>``."""


def reads_sealed_state_only(spec: GraderSpec) -> bool:
    """Whether ``spec`` names one of this library's graders that read only the sealed end
    state and run nothing (``files_unchanged``, ``changed_paths_within``, ...: the records
    marked ``sealed_only``). A suite's own grader is never one: what it does is unknown."""
    try:
        module_name, attribute = split_name(spec.name)
    except GraderContractError:
        return False
    if module_name == THIS_MODULE:
        return attribute in SEALED_ONLY
    return module_name == REFERENCE_MODULE and attribute in SEALED_ONLY & REFERENCE_NAMES


# ----- resolution -----------------------------------------------------------------------------

_import_lock = threading.Lock()


def split_name(name: str) -> tuple[str, str]:
    """``module:function`` or last-dot ``module.function`` into (module, function).

    Raises:
        GraderContractError: the name has neither form.
    """
    module_name, sep, attribute = name.partition(":")
    if not sep:
        module_name, _, attribute = name.rpartition(".")
    if not module_name or not attribute or ":" in attribute:
        raise GraderContractError(
            f"{name!r} is not a grader name: write 'module:function', "
            "e.g. 'endstate.evals.graders:command_succeeds'"
        )
    return module_name, attribute


def resolve(spec: GraderSpec, *, search_paths: Sequence[Path] = ()) -> Grader:
    """Turn a grader spec into a callable of the sandbox alone, enforcing the contract.

    ``endstate.evals.graders`` names map onto this module through an alias table, so endstate
    is never imported (installed or not) and both libraries' check names agree. Any other
    module is imported with ``search_paths`` (task-format.md §7: task folder, suite folder,
    project root, grader-paths) placed first on ``sys.path`` for the import only.

    Raises:
        GraderContractError: the name cannot be imported, is not callable, has a signature
            that could see more than the sandbox, or does not accept the spec's ``args``.
    """
    module_name, attribute = split_name(spec.name)
    function = _lookup(spec.name, module_name, attribute, search_paths)
    signature = check_contract(spec.name, function)
    bound = dict(spec.args)
    try:
        signature.bind(None, **bound)
    except TypeError as exc:
        raise GraderContractError(f"{spec.name}: the args do not fit its signature: {exc}") from exc

    def grader(sandbox: Sandbox) -> Verdict:
        return function(sandbox, **bound)  # type: ignore[no-any-return]

    grader.__name__ = attribute
    grader.__qualname__ = attribute
    return grader


def _lookup(
    full: str, module_name: str, attribute: str, search_paths: Sequence[Path]
) -> Callable[..., Any]:
    if module_name == REFERENCE_MODULE:
        function: object = REFERENCE_GRADERS.get(attribute)
        if function is None:
            known = ", ".join(sorted(REFERENCE_GRADERS))
            raise GraderContractError(f"{REFERENCE_MODULE} has no grader {attribute!r} ({known})")
    elif module_name == THIS_MODULE:
        function = BUILTIN_GRADERS.get(attribute)
        if function is None:
            known = ", ".join(sorted(BUILTIN_GRADERS))
            raise GraderContractError(f"{THIS_MODULE} has no grader {attribute!r} ({known})")
    else:
        module = import_grader_module(module_name, search_paths)
        function = getattr(module, attribute, None)
        if function is None:
            raise GraderContractError(f"{full}: module {module_name!r} has no {attribute!r}")
    if not callable(function):
        raise GraderContractError(f"{full} is not callable")
    return function  # type: ignore[no-any-return]


def import_grader_module(module_name: str, search_paths: Sequence[Path] = ()) -> types.ModuleType:
    """Import a suite's grader module afresh from ``search_paths``, leaving no trace behind.

    Two suites may each ship a ``graders.py``; a cached ``sys.modules['graders']`` would hand
    the second suite the first one's functions. So when the module's top-level package is found
    in the search paths, its entries in ``sys.modules`` are set aside, the module is imported
    with the search paths first on ``sys.path``, and afterwards ``sys.path`` and the set-aside
    entries are restored (the imported functions keep their globals, so they still work).
    A module not found there (an installed package) is imported the ordinary way. The import
    runs under a lock because ``sys.path`` and ``sys.modules`` are process-wide.

    Raises:
        GraderContractError: the module cannot be imported; the message says from where.
    """
    compat.install(resolve=resolve, Grader=Grader)
    paths = [str(Path(p).resolve()) for p in search_paths]
    top = module_name.split(".")[0]
    with _import_lock:
        local = bool(paths) and importlib.machinery.PathFinder.find_spec(top, paths) is not None
        if not local:
            try:
                return importlib.import_module(module_name)
            except Exception as exc:  # an import runs arbitrary code; report, never crash
                where = f" (searched {', '.join(paths)} and sys.path)" if paths else ""
                raise GraderContractError(
                    f"cannot import {module_name!r}{where}: {type(exc).__name__}: {exc}"
                ) from exc
        saved_path = list(sys.path)
        owned = {k: m for k, m in sys.modules.items() if k == top or k.startswith(top + ".")}
        for key in owned:
            del sys.modules[key]
        sys.path[:0] = paths
        try:
            return importlib.import_module(module_name)
        except Exception as exc:
            raise GraderContractError(
                f"cannot import {module_name!r} from {', '.join(paths)}: "
                f"{type(exc).__name__}: {exc}"
            ) from exc
        finally:
            sys.path[:] = saved_path
            for key in [k for k in sys.modules if k == top or k.startswith(top + ".")]:
                del sys.modules[key]
            sys.modules.update(owned)
            importlib.invalidate_caches()


def check_contract(name: str, function: Callable[..., Any]) -> inspect.Signature:
    """Enforce §3 on a grader's signature and return it.

    Raises:
        GraderContractError: the first parameter is not a positional ``sandbox``, a parameter
            is named like the transcript, or there is a ``**kwargs`` that would let one in.
    """
    try:
        signature = inspect.signature(function)
    except (TypeError, ValueError) as exc:
        raise GraderContractError(f"{name}: cannot read its signature ({exc})") from exc
    parameters = list(signature.parameters.values())
    if not parameters:
        raise GraderContractError(f"{name} takes no parameters; a grader takes `sandbox` first")
    first = parameters[0]
    if first.name != "sandbox":
        raise GraderContractError(f"{name} must take `sandbox` first, not {first.name!r}")
    if first.kind not in (first.POSITIONAL_ONLY, first.POSITIONAL_OR_KEYWORD):
        raise GraderContractError(f"{name} must take `sandbox` as a positional parameter")
    for parameter in parameters:
        if parameter.name in FORBIDDEN_PARAMETERS:
            raise GraderContractError(
                f"{name} takes {parameter.name!r}: a grader reads the end state, "
                "never the transcript"
            )
        if parameter.kind is parameter.VAR_KEYWORD:
            raise GraderContractError(
                f"{name} takes **{parameter.name}, which would let the transcript in; "
                "name every keyword argument"
            )
    return signature


def grade(
    specs: Sequence[GraderSpec], sandbox: Sandbox, *, search_paths: Sequence[Path] = ()
) -> Verdict:
    """Run every grader and conjoin every check.

    A grader that cannot be resolved, raises, or returns something that is not a verdict fails
    the task with that as the reason (no traceback reaches the user). Unlike endstate 0.3.0's
    ``compose``, a verdict that failed with no checks stays failed: conjoining by ``passed``
    rather than by checks is what keeps a raising grader from turning into a pass.

    An end state that cannot be graded at all (:meth:`Sandbox.end_state_problem`: a fifo in it,
    the tree gone) fails with that reason before any grader runs. When the sandbox dies
    *during* grading while the machinery around it still answers (:class:`SandboxDied`: the
    container stopped or vanished), the code under test did it, since grading runs nothing
    else there: the task fails with the reason. Only when the environment itself is gone
    (the daemon does not answer) is :class:`SandboxError` raised for the caller to report the
    task as unassessed. The health check runs only when something failed, since a dead
    sandbox cannot produce a pass.

    Raises:
        SandboxError: the environment failed while grading (an error, not a failure).
    """
    if not specs:
        return Verdict.fail("the task names no graders")
    problem = sandbox.end_state_problem()
    if problem:
        return Verdict.fail(f"the end state cannot be graded: {problem}")
    verdict: Verdict | None = None
    for spec in specs:
        try:
            one = _grade_one(spec, sandbox, search_paths)
        except SandboxDied as exc:
            return Verdict.fail(f"{spec.name}: the code under test killed the sandbox: {exc}")
        verdict = one if verdict is None else verdict.merged_with(one)
    assert verdict is not None
    if not verdict.passed:
        try:
            sandbox.check_health()
        except SandboxDied as exc:
            return verdict.merged_with(
                Verdict.fail(f"the code under test killed the sandbox while graded: {exc}")
            )
    return verdict


def _grade_one(spec: GraderSpec, sandbox: Sandbox, search_paths: Sequence[Path]) -> Verdict:
    try:
        grader = resolve(spec, search_paths=search_paths)
    except GraderContractError as exc:
        # The harness's own failure, typed where it happens: nothing downstream reads the
        # reason to find it (the reason may quote the end state's names).
        fault = EnvironmentFault(
            kind="grader-unresolved", detail=f"the grader {spec.name} could not be loaded: {exc}"
        )
        return Verdict(passed=False, reason=f"{spec.name}: cannot resolve: {exc}",
                       environment=fault)
    try:
        answer = grader(sandbox)
    except PathEscapeError as exc:  # the agent's tree leads outside it: the task's failure
        return Verdict.fail(f"{spec.name} raised {type(exc).__name__}: {exc}")
    except SandboxError as exc:
        # The environment, or a grader misusing a healthy sandbox (a bad timeout, say)? Only
        # the sandbox knows: when it has failed this raises, and the task is unassessed.
        try:
            sandbox.check_health()
        except SandboxError as dead:
            raise type(dead)(f"{spec.name}: {exc} ({dead})") from exc
        return Verdict.fail(f"{spec.name} raised {type(exc).__name__}: {exc}")
    except Exception as exc:  # a grader is user code: its failure is the task's, not ours
        return Verdict.fail(f"{spec.name} raised {type(exc).__name__}: {exc}")
    try:
        return as_verdict(answer)
    except TypeError as exc:
        return Verdict.fail(f"{spec.name}: {exc}")


def as_verdict(answer: object) -> Verdict:
    """Accept our Verdict or any verdict-shaped object (endstate 0.3.0's, when a suite module
    imports the real package) and return ours.

    Raises:
        TypeError: ``answer`` is not verdict-shaped.
    """
    if isinstance(answer, Verdict):
        return answer
    passed = getattr(answer, "passed", None)
    raw_checks = getattr(answer, "checks", None)
    if not isinstance(passed, bool) or not isinstance(raw_checks, list):
        raise TypeError(f"returned {type(answer).__name__}, not a Verdict")
    checks = []
    for item in raw_checks:
        name, ok = getattr(item, "name", None), getattr(item, "passed", None)
        if not isinstance(name, str) or not isinstance(ok, bool):
            raise TypeError(f"returned a check that is not a Check: {item!r}")
        checks.append(Check(name=name, passed=ok, detail=str(getattr(item, "detail", "") or "")))
    return Verdict(passed=passed, reason=str(getattr(answer, "reason", "") or ""), checks=checks)


def requirements_checks(
    requires: Requires, counters: dict[str, int], stop_reason: str
) -> list[Check]:
    """The run-level requirements as checks, named as endstate 0.3.0 names them.

    ``"<counter with spaces> <bound>"`` with detail ``"was N"``, in field order, then
    ``"stop reason is X"``. A counter missing from ``counters`` reads as 0: a run that never
    recorded a compaction had none.
    """
    checks: list[Check] = []
    for field, bound in requires.bounds().items():
        value = int(counters.get(field, 0))
        checks.append(
            Check(
                name=f"{field.replace('_', ' ')} {bound}",
                passed=bound.admits(value),
                detail=f"was {value}",
            )
        )
    if requires.stop_reason is not None:
        checks.append(
            Check(
                name=f"stop reason is {requires.stop_reason}",
                passed=stop_reason == requires.stop_reason,
                detail=f"was {stop_reason}",
            )
        )
    return checks



__all__ = [
    "BUILTIN_GRADERS",
    "Grader",
    "as_verdict",
    "check_contract",
    "grade",
    "import_grader_module",
    "reads_sealed_state_only",
    "requirements_checks",
    "resolve",
    "split_name",
]
