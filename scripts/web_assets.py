"""The web files prove's mutation report needs, fetched with npm from its registry.

``prove --mutation-report DIR`` writes its mutants in the mutation-testing report schema
(the JSON format the Stryker tools publish) and an HTML view built on the
``mutation-testing-elements`` web component. The component is not ours, so it is not kept in
this repository: the wheel build (``hatch_build.py``) and a checkout (``make web-assets``)
fetch the pinned version with ``npm pack`` (npm's configured registry; no host is written
here), check the tarball against the pinned integrity, and copy out the one file needed, with
its licence. The tests fetch the published JSON schema the same way, to validate the report.

Standard library only: the build hook loads this file by path before anything is installed.

    python scripts/web_assets.py DEST [--schema]
"""

from __future__ import annotations

import base64
import hashlib
import shutil
import subprocess
import sys
import tarfile
import tempfile
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Pin:
    package: str
    version: str
    integrity: str
    """npm's ``dist.integrity`` of the tarball (sha512, base64)."""
    files: tuple[tuple[str, str], ...]
    """(path in the tarball, name written in the destination)."""


ELEMENTS = Pin(
    "mutation-testing-elements",
    "3.9.0",
    "sha512-3G4GhBO8Wc/ZrqOJ5uT8AbM1h/ew9kfX0MIlpy59gWu/amMZyKH3TreKAOMwwXNibhZMOL7A3n5nFvhYWLd"
    "tYQ==",
    (("package/dist/mutation-test-elements.js", "mutation-test-elements.js"),
     ("package/LICENSE", "LICENSE.mutation-testing-elements")),
)
"""The web component the HTML view is built on (a browser bundle, no other file needed)."""

SCHEMA = Pin(
    "mutation-testing-report-schema",
    "3.8.4",
    "sha512-s4G71R6Lt/PpZ0cqeglIcgyBdzLM8E+SeCHZAPg1wkSsPtRBa4XfPzAozYKdiJk/TLbNEEb7En9t0/bveu"
    "PuxA==",
    (("package/src/mutation-testing-report-schema.json", "mutation-testing-report-schema.json"),),
)
"""The published JSON schema of the report (the tests validate against it)."""


class FetchError(Exception):
    """npm is missing, cannot reach its registry, or handed over something else."""


def _check(tarball: Path, integrity: str) -> None:
    algorithm, _, expected = integrity.partition("-")
    digest = hashlib.new(algorithm, tarball.read_bytes()).digest()
    if base64.b64encode(digest).decode() != expected:
        raise FetchError(f"{tarball.name}: its digest is not the pinned {integrity}")


def fetch(pin: Pin, dest: Path, timeout: float = 300.0) -> list[Path]:
    """``pin``'s files written into ``dest`` (kept when already there); their paths."""
    wanted = [dest / name for _, name in pin.files]
    if all(p.is_file() for p in wanted):
        return wanted
    npm = shutil.which("npm")
    if npm is None:
        raise FetchError("npm is not installed")
    with tempfile.TemporaryDirectory(prefix="es-web-assets-") as scratch:
        work = Path(scratch)
        try:
            done = subprocess.run(
                [npm, "pack", f"{pin.package}@{pin.version}", "--silent",
                 "--pack-destination", str(work)],
                cwd=work, capture_output=True, text=True, timeout=timeout, check=False,
            )
        except subprocess.TimeoutExpired as exc:
            raise FetchError(f"npm pack {pin.package} took over {timeout:.0f} s") from exc
        tarballs = sorted(work.glob("*.tgz"))
        if done.returncode != 0 or len(tarballs) != 1:
            tail = (done.stderr or done.stdout).strip().splitlines()[-3:]
            raise FetchError(f"npm pack {pin.package}@{pin.version} failed: {' '.join(tail)}")
        _check(tarballs[0], pin.integrity)
        dest.mkdir(parents=True, exist_ok=True)
        with tarfile.open(tarballs[0]) as archive:
            for inside, name in pin.files:
                member = archive.getmember(inside)
                source = archive.extractfile(member) if member.isfile() else None
                if source is None:
                    raise FetchError(f"{pin.package}: {inside} is not a file")
                partial = dest / f".{name}.part"
                try:
                    partial.write_bytes(source.read())
                    partial.replace(dest / name)
                finally:
                    partial.unlink(missing_ok=True)
    return wanted


def main(argv: list[str]) -> int:
    if not argv or argv[0].startswith("-"):
        print(__doc__.strip().splitlines()[-1].strip(), file=sys.stderr)
        return 2
    dest = Path(argv[0])
    try:
        for pin in (ELEMENTS, SCHEMA) if "--schema" in argv else (ELEMENTS,):
            for path in fetch(pin, dest):
                print(path)
    except FetchError as exc:
        print(f"web_assets: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
