"""The server's settings model, without a server (like jedi-language-server's
initialization-options test): camelCase keys, defaults, and one warning per bad value."""

from __future__ import annotations

from typing import Any

import pytest

from endstate_lsp.settings import SANDBOXES, SECTION, Settings


def test_defaults() -> None:
    settings = Settings()
    assert settings.model_dump(by_alias=True) == {
        "trusted": False,
        "proveOnSave": True,
        "debounceMs": 150,
        "sandbox": "auto",
    }
    assert not settings.may_prove
    assert set(SANDBOXES) == {"auto", "docker", "local"}


@pytest.mark.parametrize("wrap", [False, True], ids=["bare", "in-section"])
def test_valid_camel_case_values(wrap: bool) -> None:
    raw: dict[str, Any] = {
        "trusted": True,
        "proveOnSave": False,
        "debounceMs": 40,
        "sandbox": "docker",
    }
    settings = Settings()
    assert settings.update({SECTION: raw} if wrap else raw) == []
    assert (settings.trusted, settings.prove_on_save, settings.debounce_ms, settings.sandbox) == (
        True,
        False,
        40,
        "docker",
    )
    assert not settings.may_prove  # trusted, but prove on save is off


@pytest.mark.parametrize(
    ("key", "value", "problem"),
    [
        ("trusted", "yes", "trusted must be true or false"),
        ("trusted", 1, "trusted must be true or false"),
        ("proveOnSave", None, "proveOnSave must be true or false"),
        ("debounceMs", -1, "debounceMs must be a number of milliseconds between 0 and 10000"),
        ("debounceMs", 10001, "debounceMs must be a number of milliseconds between 0 and 10000"),
        ("debounceMs", True, "debounceMs must be a number of milliseconds between 0 and 10000"),
        ("debounceMs", "150", "debounceMs must be a number of milliseconds between 0 and 10000"),
        (
            "debounceMs",
            float("nan"),
            "debounceMs must be a number of milliseconds between 0 and 10000",
        ),
        ("sandbox", "podman", 'sandbox must be "auto", "docker" or "local"'),
        ("sandbox", ["local"], 'sandbox must be "auto", "docker" or "local"'),
    ],
)
def test_a_bad_value_is_one_warning_and_the_rest_apply(key: str, value: Any, problem: str) -> None:
    settings = Settings()
    settings.update({"trusted": True, "debounceMs": 20, "sandbox": "local"})  # earlier values
    good = {"trusted": False, "proveOnSave": False, "debounceMs": 75, "sandbox": "docker"}
    before = settings.model_dump(by_alias=True)
    assert settings.update({**good, key: value}) == [problem]
    after = settings.model_dump(by_alias=True)
    assert after == {**good, key: before[key]}  # the bad key keeps its value, the rest change


def test_several_bad_values_one_warning_each() -> None:
    settings = Settings()
    problems = settings.update({"trusted": "no", "debounceMs": "x", "sandbox": 3, "proveOnSave": 0})
    assert problems == [
        "trusted must be true or false",
        "proveOnSave must be true or false",
        "debounceMs must be a number of milliseconds between 0 and 10000",
        'sandbox must be "auto", "docker" or "local"',
    ]
    assert settings == Settings()


def test_a_fraction_of_a_millisecond_is_cut() -> None:
    settings = Settings()
    assert settings.update({"debounceMs": 12.9}) == []
    assert settings.debounce_ms == 12


@pytest.mark.parametrize(
    "raw",
    [
        None,
        [],
        "trusted",
        {},
        {"prove_on_save": False, "debounce_ms": 1, "path": "/usr/bin/x", "interpreter": ["py"]},
        {SECTION: "not an object"},
    ],
)
def test_unknown_keys_and_non_objects_are_ignored(raw: Any) -> None:
    settings = Settings()
    assert settings.update(raw) == []
    assert settings == Settings()


def test_update_merges() -> None:
    settings = Settings()
    settings.update({"trusted": True})
    settings.update({"sandbox": "local"})
    assert (settings.trusted, settings.sandbox, settings.may_prove) == (True, "local", True)


def test_the_sandbox_setting_offers_the_one_choice_every_command_has() -> None:
    from endstate_harness.sandbox.choice import DEFAULT_KIND, SandboxKind
    from endstate_lsp.settings import SANDBOXES, Settings

    assert set(SANDBOXES) == {kind.value for kind in SandboxKind}
    assert Settings().sandbox == DEFAULT_KIND.value
