"""A throw-away preset: an OpenAI-compatible service on this machine, whose key is
LOOPBACK_API_KEY. It is registered with one line: `register_preset("loopback", at(port))`."""

from __future__ import annotations

from flowrun.providers.presets import Preset


def at(port: int) -> Preset:
    """The service listening on 127.0.0.1:`port`."""
    return Preset(f"http://127.0.0.1:{port}/v1", "LOOPBACK_API_KEY")
