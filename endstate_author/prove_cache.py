"""The prove cache: an unchanged task is answered at once.

The key is a fingerprint of everything the answer depends on: every file of the task
folder (task.json, prompt.md, fixture/, holdout/, solution/, defects/, oracle.json), the
suite's own grader modules the task names, the toolkit's version, the sandbox and the
options. Entries live in the user's cache folder (``$ENDSTATE_AUTHOR_CACHE``, else
``$XDG_CACHE_HOME/endstate-author/prove``, else ``~/.cache/endstate-author/prove``) —
never inside the suite, which is only ever read. Unassessed results are never cached.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import TYPE_CHECKING

from endstate_author import __version__

if TYPE_CHECKING:
    from endstate_author.prove import ProveOptions, TaskProof
    from endstate_harness.task import Task

_PARTS = ("task.json", "prompt.md", "oracle.json", "fixture", "holdout", "solution", "defects")


def cache_dir() -> Path:
    explicit = os.environ.get("ENDSTATE_AUTHOR_CACHE")
    if explicit:
        return Path(explicit)
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "endstate-author" / "prove"


def _feed_tree(digest: hashlib._Hash, root: Path, label: str) -> None:
    if root.is_symlink():
        digest.update(f"L {label} {os.readlink(root)}\n".encode())
        return
    if root.is_file():
        digest.update(f"F {label}\n".encode())
        digest.update(root.read_bytes())
        return
    if not root.is_dir():
        return
    for dirpath, dirnames, filenames in os.walk(root, followlinks=False):
        dirnames.sort()
        for name in sorted(
            filenames + [d for d in dirnames if os.path.islink(os.path.join(dirpath, d))]
        ):
            path = Path(dirpath) / name
            rel = path.relative_to(root).as_posix()
            if path.is_symlink():
                digest.update(f"L {label}/{rel} {os.readlink(path)}\n".encode())
            elif path.is_file():
                digest.update(f"F {label}/{rel} {path.stat().st_size}\n".encode())
                digest.update(path.read_bytes())


def _grader_modules(task: Task) -> list[Path]:
    try:
        from endstate_author.catalogue import Catalogue
        from endstate_author.config import Config

        catalogue = Catalogue.for_task(task.root, task.root.parent, Config())
    except Exception:
        return []
    files = []
    for spec in task.graders:
        try:
            info = catalogue.resolve(spec.name)
        except Exception:
            info = None
        if info is not None and info.file is not None and not info.builtin:
            files.append(Path(info.file))
    return sorted(set(files))


def fingerprint(task: Task, options: ProveOptions) -> str:
    digest = hashlib.sha256()
    digest.update(
        json.dumps(
            [
                __version__,
                options.sandbox.kind,
                options.sandbox.image,
                sorted(options.only),
                options.repeat,
            ],
        ).encode()
    )
    for part in _PARTS:
        _feed_tree(digest, task.root / part, part)
    for module in _grader_modules(task):
        _feed_tree(digest, module, f"module:{module}")
    return digest.hexdigest()


def load(key: str) -> TaskProof | None:
    from endstate_author.diagnostics import Diagnostic
    from endstate_author.prove import CheckResult, TaskProof

    path = cache_dir() / f"{key}.json"
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        proof = TaskProof(data["task"], Path(data["path"]), seconds=data.get("seconds", 0.0))
        proof.checks = [CheckResult(**c) for c in data["checks"]]
        proof.diagnostics = [
            Diagnostic(**{**d, "file": Path(d["file"])}) for d in data["diagnostics"]
        ]
        return proof
    except (OSError, ValueError, KeyError, TypeError):
        return None


def store(key: str, proof: TaskProof) -> None:
    from dataclasses import asdict

    folder = cache_dir()
    try:
        folder.mkdir(parents=True, exist_ok=True)
        data = {
            "task": proof.task_id,
            "path": str(proof.path),
            "seconds": proof.seconds,
            "checks": [asdict(c) for c in proof.checks],
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
