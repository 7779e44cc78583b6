"""``endstate-author sandbox build`` and ``sandbox status``: the Docker image is the tool's own;
``status`` also says whether the local sandbox's walls (bubblewrap) can stand here, and why not.
"""

from __future__ import annotations

from typing import Annotated, NoReturn

import docker.errors
import requests.exceptions
import typer

from endstate_author import __version__
from endstate_harness.errors import SandboxError
from endstate_harness.sandbox.docker.daemon import connect
from endstate_harness.sandbox.docker.image import (
    build_image,
    missing_image_message,
    own_image,
    resolve_image,
)
from endstate_harness.sandbox.walls import status as walls_status

app = typer.Typer(
    name="sandbox",
    help="Build and inspect the Docker image prove and eval run in.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
)


def _say(line: str) -> None:
    typer.echo(f"sandbox: {line}")


def _fail(message: str) -> NoReturn:
    typer.echo(f"endstate-author: {message}", err=True)
    raise typer.Exit(2)


def _image_id(client: docker.DockerClient, tag: str) -> str | None:
    try:
        return str(client.images.get(tag).id)
    except docker.errors.ImageNotFound:
        return None


@app.command("build")
def build_command(
    tag: Annotated[
        str | None,
        typer.Option("--tag", help="Image tag (default: endstate-sandbox:<version>)."),
    ] = None,
    force: Annotated[
        bool, typer.Option("--force", help="Rebuild even when the image already exists.")
    ] = False,
) -> None:
    """Build the sandbox image from this machine's Debian packages (needs root, debootstrap).

    Debian minbase with python3 (also as `python`), git and ca-certificates, from the archive
    apt is configured with, imported into Docker. Does nothing when the image already exists.
    """
    tag = tag or own_image(__version__)
    try:
        client = connect(timeout_s=10)
    except SandboxError as exc:
        _fail(f"cannot build {tag}: {exc}")
    try:
        old = _image_id(client, tag)
    except (docker.errors.DockerException, requests.exceptions.RequestException) as exc:
        client.close()
        _fail(f"cannot build {tag}: the daemon could not be asked about it ({exc})")
    if old is not None and not force:
        client.close()
        _say(f"{tag} already exists ({old[7:19]}); nothing to do (--force rebuilds it)")
        raise typer.Exit(0)
    _say(f"building {tag} (Debian minbase + python3; about a minute)")
    try:
        new = build_image(tag, say=_say)
    except SandboxError as exc:
        client.close()
        _fail(f"cannot build {tag}: {exc}")
    if old is not None and old != new:
        try:  # the replaced image would only be left dangling
            client.images.remove(old)
        except (docker.errors.DockerException, requests.exceptions.RequestException):
            pass
    client.close()
    if tag == own_image(__version__):
        _say("prove and eval use it from now on (see `endstate-author sandbox status`)")
    else:
        _say(f"use it with --image {tag} or ENDSTATE_SANDBOX_IMAGE={tag}")


@app.command("status")
def status_command(
    image: Annotated[
        str | None, typer.Option("--image", help="The --image you would pass to prove or eval.")
    ] = None,
) -> None:
    """Say which image prove and eval would use and why, whether it is present, whether the
    Docker daemon answers, and whether the local sandbox can wall its commands in with
    bubblewrap (and why not). Exit 0 when a Docker run can start, else 2."""
    try:
        connect(timeout_s=10).close()
        daemon: str | None = None
    except SandboxError as exc:
        daemon = str(exc)
    resolved = resolve_image(image, __version__, check=daemon is None)
    present = {True: "yes", False: "no", None: "unknown: the daemon does not answer"}[
        resolved.present
    ]
    typer.echo(f"image:   {resolved.image}")
    typer.echo(f"why:     {resolved.reason}")
    typer.echo(f"present: {present}")
    typer.echo(f"daemon:  {'answers' if daemon is None else 'does not answer'}")
    found = walls_status()
    typer.echo(f"walls:   {'yes' if found.available else 'no'} (the local sandbox: "
               f"{found.describe()})")
    if daemon is not None:
        # the one thing wrong is the daemon: whether the image is there cannot be known
        typer.echo(f"\nno Docker run can start: the daemon is down, not the image. {daemon}")
        raise typer.Exit(2)
    if not resolved.present:
        typer.echo(
            "\nprove and eval try to pull it once before any task starts; when that fails "
            f"they stop with:\n\n{missing_image_message(resolved.image, __version__)}"
        )
        raise typer.Exit(2)
