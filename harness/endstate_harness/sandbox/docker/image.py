"""The sandbox image: which one a run uses, and building the toolkit's own from Debian packages."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import docker.errors

from endstate_harness.errors import SandboxError
from endstate_harness.fdtree import remove_tree
from endstate_harness.sandbox.docker.daemon import (
    DEFAULT_IMAGE,
    IMAGE_ENV,
    IMAGE_NAME,
    DockerFailure,
    connect,
    short_error,
    toolkit_version,
)

PACKAGES = ("python3", "python-is-python3", "git", "ca-certificates")
"""Beyond debootstrap's minbase (sh, coreutils, findutils, grep, sed, tar…): Python as both
``python3`` and ``python``, and git, which task test commands and agents commonly call."""

APT_SOURCES = (Path("/etc/apt/sources.list"), Path("/etc/apt/sources.list.d"))


@dataclass(frozen=True)
class Resolved:
    """The image a run will use, and why (``sandbox status`` prints both)."""

    image: str
    reason: str
    present: bool | None = None


def own_image(version: str) -> str:
    """The tag of the toolkit's own image for a toolkit version."""
    return f"{IMAGE_NAME}:{version}"


def resolve_image(explicit: str | None, version: str, *, check: bool = True) -> Resolved:
    """The image a Docker sandbox should use (see the module docstring for the order).

    With ``check`` the daemon is asked whether the toolkit's own image exists, and whether
    the chosen image is present. Without it (no daemon to ask) the own image is named, with
    a reason saying it may not be built: ``present`` is None, never a guess.
    """
    if explicit:
        return Resolved(explicit, "--image", _present(explicit) if check else None)
    from_env = os.environ.get(IMAGE_ENV)
    if from_env:
        return Resolved(from_env, f"${IMAGE_ENV}", _present(from_env) if check else None)
    own = own_image(version)
    if not check:
        # nobody asked the daemon whether the own image is built: both are possible, and
        # "no toolkit image built" would be a guess
        return Resolved(
            own,
            f"the toolkit's own image when it is built, else {DEFAULT_IMAGE} (which one, and "
            "whether it is present, is known once the Docker daemon answers)",
            None,
        )
    present = _present(own)
    if present:
        return Resolved(own, "the toolkit's own image (endstate-author sandbox build)", True)
    if present is None:  # the daemon stopped answering between the two questions
        return Resolved(own, "the toolkit's own image when it is built (the Docker daemon "
                        "did not answer whether it is)", None)  # fmt: skip
    return Resolved(
        DEFAULT_IMAGE,
        "the default (no --image, no $ENDSTATE_SANDBOX_IMAGE, no toolkit image built)",
        _present(DEFAULT_IMAGE),
    )


def _present(image: str) -> bool | None:
    try:
        client = connect(timeout_s=10)
    except SandboxError:
        return None
    try:
        client.images.get(image)
        return True
    except docker.errors.ImageNotFound:
        return False
    except DockerFailure:
        return None
    finally:
        client.close()


def usable_image(
    explicit: str | None, version: str | None = None, *, say: Callable[[str], None] = print
) -> Resolved:
    """The image a Docker run will use, checked once before any task starts: chosen as
    :func:`resolve_image` says and, when absent, pulled once (where a registry answers).

    ``version`` is the toolkit's (default: :func:`toolkit_version`).

    Raises:
        SandboxError: the daemon does not answer, or the image is absent and cannot be pulled
            (then with :func:`missing_image_message`, the one paragraph a run shows).
    """
    version = version or toolkit_version()
    resolved = resolve_image(explicit, version)
    if resolved.present:
        return resolved
    client = connect()
    try:
        say(f"pulling {resolved.image} (it is not present locally)")
        client.images.pull(resolved.image)
    except DockerFailure:
        raise SandboxError(missing_image_message(resolved.image, version)) from None
    finally:
        client.close()
    return Resolved(resolved.image, resolved.reason, True)


def missing_image_message(image: str, version: str) -> str:
    """The one paragraph shown when the image a run needs is not there."""
    return (
        f"the sandbox image {image!r} is not present and cannot be pulled here. Build the "
        f"toolkit's own image from this machine's Debian packages with\n\n"
        f"    sudo endstate-author sandbox build\n\n"
        f"(it becomes {own_image(version)!r} and is used from then on), pass --image NAME, "
        f"or set ${IMAGE_ENV}. `endstate-author sandbox status` says which image is used and why."
    )


# ----- the mirror and the suite, from the machine's apt configuration --------------------------


def apt_mirror(paths: tuple[Path, ...] = APT_SOURCES) -> tuple[str, str] | None:
    """(mirror URI, suite) of the first Debian main archive configured for apt, or None.

    Security and updates archives are skipped (debootstrap wants the main one).
    """
    files: list[Path] = []
    for path in paths:
        if path.is_dir():
            files += sorted(p for p in path.iterdir() if p.suffix in (".list", ".sources"))
        elif path.is_file():
            files.append(path)
    for file in files:
        try:
            text = file.read_text(encoding="utf-8", errors="replace")
        except OSError:
            continue
        found = _deb822(text) if file.suffix == ".sources" else _one_line(text)
        if found is not None:
            return found
    return None


def _usable(uri: str, suite: str) -> bool:
    return (
        uri.startswith(("http://", "https://", "file:/"))
        and "security" not in uri
        and not suite.endswith(("-security", "-updates", "-backports"))
    )


def _one_line(text: str) -> tuple[str, str] | None:
    for line in text.splitlines():
        words = re.sub(r"\[[^\]]*\]", " ", line.split("#", 1)[0]).split()
        if len(words) >= 3 and words[0] == "deb" and _usable(words[1], words[2]):
            return words[1].rstrip("/"), words[2]
    return None


def _deb822(text: str) -> tuple[str, str] | None:
    for stanza in re.split(r"\n\s*\n", text):
        fields: dict[str, str] = {}
        for line in stanza.splitlines():
            if line.startswith("#") or ":" not in line:
                continue
            key, _, value = line.partition(":")
            fields[key.strip().lower()] = value.strip()
        if "deb" not in fields.get("types", "").split() or fields.get("enabled") == "no":
            continue
        for uri in fields.get("uris", "").split():
            for suite in fields.get("suites", "").split():
                if _usable(uri, suite):
                    return uri.rstrip("/"), suite
    return None


# ----- building ----------------------------------------------------------------------------------


def build_image(
    tag: str,
    *,
    say: Callable[[str], None] = print,
    mirror: tuple[str, str] | None = None,
    packages: tuple[str, ...] = PACKAGES,
) -> str:
    """Build ``tag`` with debootstrap (minbase + ``packages``) and import it into Docker.

    Returns the image id. Every temporary folder is removed, also on Ctrl-C.

    Raises:
        SandboxError: not root, debootstrap or the daemon missing, no apt mirror configured,
            or a step failed (the message names the log to read).
    """
    if os.geteuid() != 0:
        raise SandboxError("building the sandbox image needs root (debootstrap): run it with sudo")
    debootstrap = shutil.which("debootstrap")
    if debootstrap is None:
        raise SandboxError("debootstrap is not installed: sudo apt-get install debootstrap")
    client = connect()
    try:
        source = mirror or apt_mirror()
        if source is None:
            raise SandboxError(
                "no Debian archive found in this machine's apt configuration "
                "(/etc/apt/sources.list, /etc/apt/sources.list.d); configure apt first"
            )
        uri, suite = source
        work = Path(tempfile.mkdtemp(prefix="endstate-image-"))
        try:
            rootfs = work / "rootfs"
            log = work / "debootstrap.log"
            say(f"debootstrap --variant=minbase {suite} with {', '.join(packages)} (from apt's "
                "configured archive)")
            with open(log, "wb") as out:
                done = subprocess.run(
                    [debootstrap, "--variant=minbase", f"--include={','.join(packages)}",
                     suite, str(rootfs), uri],
                    stdout=out, stderr=subprocess.STDOUT, check=False,
                )
            if done.returncode != 0:
                tail = log.read_text(errors="replace")[-1500:]
                raise SandboxError(f"debootstrap failed (exit {done.returncode}):\n{tail}")
            for junk in ("var/cache/apt/archives", "var/lib/apt/lists"):
                folder = rootfs / junk
                if folder.is_dir():
                    for entry in folder.iterdir():
                        if entry.is_file():
                            entry.unlink()
            say(f"importing the root file system as {tag}")
            archive = work / "rootfs.tar"
            packed = subprocess.run(
                ["tar", "-C", str(rootfs), "-cf", str(archive), "."],
                capture_output=True, check=False,
            )
            if packed.returncode != 0:
                why = packed.stderr.decode(errors="replace")[-500:]
                raise SandboxError(f"packing the root file system failed: {why}")
            repository, _, version = tag.rpartition(":") if ":" in tag else (tag, "", "latest")
            with open(archive, "rb") as fh:
                client.api.import_image(
                    src=fh,
                    repository=repository,
                    tag=version,
                    changes=['CMD ["/bin/sh"]', "ENV LANG=C.UTF-8"],
                )
            image = client.images.get(tag)
            say(f"built {tag} ({image.short_id})")
            return str(image.id)
        finally:
            remove_tree(work)
    except DockerFailure as exc:
        raise SandboxError(f"docker import failed: {short_error(exc)}") from None
    finally:
        client.close()
