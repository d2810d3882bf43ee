"""The environment a test gives flowrun: the developer's own without any real key or base URL
(`SECRET_VARS`), and the variables that point one wire format's SDK at the scripted model
server (`model_env`); and whether the tests run under CI (`under_ci`)."""

from __future__ import annotations

import os
from collections.abc import Mapping

import pytest

from support.wire_server import Api, WireServer

SECRET_VARS = (
    "ANTHROPIC_API_KEY",
    "ANTHROPIC_AUTH_TOKEN",
    "ANTHROPIC_BASE_URL",
    "OPENAI_API_KEY",
    "OPENAI_BASE_URL",
    "TAVILY_API_KEY",
    "OPENAI_MODEL",
    "ANTHROPIC_MODEL",
    "LLM_BASE_URL",
)
WIRES: tuple[Api, ...] = ("anthropic", "openai")  # for @pytest.mark.parametrize("wire", WIRES)
# the key each wire's SDK sends (test_e2e_research checks it never lands in a run folder)
KEYS: dict[str, str] = {"anthropic": "test-key-anthropic-123", "openai": "test-key-openai-123"}
FAST_RETRIES = {"FLOWRUN_RETRY_BASE_S": "0.01"}  # a retried model call waits 10 ms, not seconds


def clean_env(extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """This process's environment without `SECRET_VARS`, then `extra`."""
    return {k: v for k, v in os.environ.items() if k not in SECRET_VARS} | dict(extra or {})


def model_env(server: WireServer, *wires: str, **more: str) -> dict[str, str]:
    """The key and base URL variables of each wire format's SDK ("anthropic", "openai")
    pointing at `server`, then `more`."""
    env: dict[str, str] = {}
    for wire in wires:
        assert wire in WIRES, f"not a wire format: {wire!r}"
        env |= {f"{wire.upper()}_API_KEY": KEYS[wire], f"{wire.upper()}_BASE_URL": server.base_url(wire)}
    return env | more


def point_sdks(monkeypatch: pytest.MonkeyPatch, server: WireServer, *wires: str) -> None:
    """This process's SDKs of `wires` (a Python API run in the test) pointed at `server`."""
    for name, value in model_env(server, *wires).items():
        monkeypatch.setenv(name, value)


def yes(value: str | None) -> bool:
    """An environment variable's value read as a switch: on unless unset, empty, 0, false or no
    (in any case)."""
    return (value or "").strip().lower() not in ("", "0", "false", "no")


def under_ci() -> bool:
    """Whether the tests run under CI, where a missing dependency fails its tests instead of
    skipping them: the CI variable, read as a switch (CI=false is not CI)."""
    return yes(os.environ.get("CI"))
