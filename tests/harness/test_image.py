"""The sandbox image: the mirror read from apt's configuration, and the one resolution order."""

from __future__ import annotations

from pathlib import Path

import pytest

from endstate_harness.sandbox.docker import image
from endstate_harness.sandbox.docker.daemon import DEFAULT_IMAGE, IMAGE_ENV

MIRROR = "http://mirror.invalid/debian"


def test_one_line_sources(tmp_path: Path) -> None:
    listing = tmp_path / "sources.list"
    listing.write_text(
        "# a comment\n"
        f"deb {MIRROR}-security bookworm-security main\n"
        f"deb [arch=amd64 signed-by=/k.gpg] {MIRROR}/ bookworm main contrib\n"
    )
    assert image.apt_mirror((listing,)) == (MIRROR, "bookworm")


def test_deb822_sources(tmp_path: Path) -> None:
    folder = tmp_path / "sources.list.d"
    folder.mkdir()
    (folder / "debian.sources").write_text(
        "Types: deb\n# comment\nURIs: " + MIRROR + "\nSuites: bookworm bookworm-updates\n"
        "Components: main\n\nTypes: deb\nURIs: " + MIRROR + "-security\n"
        "Suites: bookworm-security\nComponents: main\n"
    )
    (folder / "other.list.disabled").write_text(f"deb {MIRROR}2 trixie main\n")
    assert image.apt_mirror((tmp_path / "missing.list", folder)) == (MIRROR, "bookworm")


def test_no_apt_configuration_is_none(tmp_path: Path) -> None:
    assert image.apt_mirror((tmp_path / "sources.list", tmp_path / "d")) is None


def test_resolution_order(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(IMAGE_ENV, "from-env:1")
    assert image.resolve_image("given:1", "0.1.0", check=False).image == "given:1"
    assert image.resolve_image(None, "0.1.0", check=False).image == "from-env:1"
    monkeypatch.delenv(IMAGE_ENV)
    # no daemon to ask whether the own image is built: named, "when it is built", never
    # the guess "no toolkit image built"
    unknown = image.resolve_image(None, "0.1.0", check=False)
    assert unknown.image == image.own_image("0.1.0") and unknown.present is None
    assert "when it is built" in unknown.reason and DEFAULT_IMAGE in unknown.reason
    assert "no toolkit image built" not in unknown.reason


def test_the_toolkit_image_wins_over_the_default_when_built(docker_image: str) -> None:
    """With a daemon: a present toolkit image is chosen without any flag or variable."""
    client = __import__("docker").from_env()
    try:
        own = image.own_image("0.0.0-test")
        client.images.get(docker_image).tag(own.split(":")[0], own.split(":")[1])
        try:
            resolved = image.resolve_image(None, "0.0.0-test")
            if resolved.reason.startswith("$"):
                pytest.skip("$ENDSTATE_SANDBOX_IMAGE is set in this environment")
            assert resolved.image == own and resolved.present
        finally:
            client.images.remove(own)
        # the daemon answers and no toolkit image of this version exists: the default
        fallback = image.resolve_image(None, "0.0.0-test")
        if not fallback.reason.startswith("$"):
            assert fallback.image == DEFAULT_IMAGE and "no toolkit image built" in fallback.reason
    finally:
        client.close()
