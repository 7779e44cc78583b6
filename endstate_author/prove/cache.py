"""The prove cache: an unchanged task is answered at once."""

from __future__ import annotations

import hashlib
import json
import os
import re
import threading
from collections.abc import Sequence
from dataclasses import asdict
from pathlib import Path

from endstate_author import __version__, interrupts
from endstate_author.engine.diagnostics import Diagnostic
from endstate_author.prove.inputs import grader_modules, read_inputs
from endstate_author.prove.model import ProveOptions, TaskProof
from endstate_author.prove.wire import decode_check, encode_check
from endstate_author.taskhash import ANY_NAME, feed_tree
from endstate_harness.task import Task


def cache_dir() -> Path:
    explicit = os.environ.get("ENDSTATE_AUTHOR_CACHE")
    if explicit:
        return Path(explicit)
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "endstate-author" / "prove"


def fingerprint(task: Task, options: ProveOptions, inputs: dict[str, str] | None = None) -> str:
    """The cache key of a whole proof: the toolkit, the options that change a finding, and
    every input the proof reads (:func:`endstate_author.prove.inputs.read_inputs`, or
    ``inputs`` already read)."""
    digest = hashlib.sha256()
    digest.update(
        json.dumps(
            [
                __version__,
                options.sandbox.kind,
                options.sandbox.image,
                options.sandbox.walls(),  # graded behind walls or not: another proof
                sorted(options.only),
                options.repeat,
                options.mutants,
                options.strict,
                options.counterexample_budget,  # a survivor's ES911 or ES916 depends on it
            ],
        ).encode()
    )
    digest.update(json.dumps(inputs or read_inputs(task), sort_keys=True).encode())
    return digest.hexdigest()


def load(key: str) -> TaskProof | None:
    path = cache_dir() / f"{key}.json"
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        proof = TaskProof(data["task"], Path(data["path"]), seconds=data.get("seconds", 0.0))
        proof.mutation = data.get("mutation")
        checks = [decode_check(c) for c in data["checks"]]
        if any(c is None for c in checks):
            return None  # written by another version: run again
        proof.checks = [c for c in checks if c is not None]
        proof.diagnostics = [
            Diagnostic(**{**d, "file": Path(d["file"])}) for d in data["diagnostics"]
        ]
        return proof
    except (OSError, ValueError, KeyError, TypeError):
        return None


def store(key: str, proof: TaskProof) -> None:
    folder = cache_dir()
    try:
        folder.mkdir(parents=True, exist_ok=True)
        data = {
            "task": proof.task_id,
            "path": str(proof.path),
            "seconds": proof.seconds,
            "mutation": proof.mutation,
            "checks": [encode_check(c) for c in proof.checks],
            "diagnostics": [
                {
                    **{k: v for k, v in asdict(d).items() if k not in ("fix", "file")},
                    "file": str(d.file),
                }
                for d in proof.diagnostics
            ],
        }
        tmp = folder / f"{key}.json.tmp{os.getpid()}"
        tmp.write_text(json.dumps(data), encoding="utf-8")
        tmp.replace(folder / f"{key}.json")
    except OSError:
        pass  # a cache that cannot be written only costs time


# --- one mutant's verdict (ES911) -------------------------------------------------------

_MUTANT_PARTS = ("task.json", "fixture", "holdout")
_MARKER_LINE = re.compile(rb"^[ \t]*#[ \t]*endstate:[ \t]*equivalent[^\n]*\n?", re.MULTILINE)
_MARKER_TAIL = re.compile(rb"[ \t]*#[ \t]*endstate:[ \t]*equivalent[^\n]*")


def without_markers(data: bytes) -> bytes:
    """A solution file as a mutant's verdict sees it: ``# endstate: equivalent`` markers
    change no behaviour, so marking one mutant does not send the others back to grading."""
    return _MARKER_TAIL.sub(b"", _MARKER_LINE.sub(b"", data))


def _feed_solution(digest: hashlib._Hash, root: Path) -> None:
    if not root.is_dir():
        return
    for path in sorted(root.rglob("*")):
        rel = path.relative_to(root).as_posix()
        if path.is_symlink():
            digest.update(f"L solution/{rel} {os.readlink(path)}\n".encode(errors=ANY_NAME))
        elif path.is_file():
            digest.update(f"F solution/{rel}\n".encode(errors=ANY_NAME))
            digest.update(without_markers(path.read_bytes()))
        elif not path.is_dir():
            digest.update(f"S solution/{rel}\n".encode(errors=ANY_NAME))


def mutant_base(task: Task, sandbox: Sequence[str]) -> str:
    """What every mutant of a task is graded against: the manifest, fixture, holdout and
    solution trees, the suite's grader modules, the toolkit and the sandbox — and nothing
    a mutant's verdict does not read (prompt.md, defects/, the options)."""
    digest = hashlib.sha256()
    digest.update(json.dumps(["mutant", __version__, *sandbox]).encode())
    for part in _MUTANT_PARTS:
        feed_tree(digest, task.root / part, part)
    _feed_solution(digest, task.root / "solution")
    for label, module in grader_modules(task):
        feed_tree(digest, module, f"module:{label}")
    return digest.hexdigest()


def mutant_key(base: str, mutant_id: str, content: bytes | None) -> str:
    digest = hashlib.sha256(f"{base}\0{mutant_id}\0".encode(errors=ANY_NAME))
    digest.update(without_markers(content) if content is not None else b"\0left out")
    return digest.hexdigest()


def load_mutant(key: str) -> tuple[str, str] | None:
    """(outcome, detail) of a mutant graded before, or None."""
    try:
        data = json.loads((cache_dir() / "mutants" / f"{key}.json").read_text(encoding="utf-8"))
        outcome, detail = data["outcome"], data["detail"]
    except (OSError, ValueError, KeyError, TypeError):
        return None
    if outcome not in ("pass", "fail") or not isinstance(detail, str):
        return None
    return outcome, detail


def store_mutant(key: str, outcome: str, detail: str) -> None:
    if interrupts.INTERRUPTED.is_set():
        return  # the grading was stopped under it: its verdict is of a killed command
    folder = cache_dir() / "mutants"
    try:
        folder.mkdir(parents=True, exist_ok=True)
        tmp = folder / f"{key}.json.tmp{os.getpid()}.{threading.get_ident()}"
        tmp.write_text(json.dumps({"outcome": outcome, "detail": detail}), encoding="utf-8")
        tmp.replace(folder / f"{key}.json")
    except OSError:
        pass  # a cache that cannot be written only costs time
