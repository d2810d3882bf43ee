"""Prices that come with flowrun: the bundled genai-prices table costs every call of a model it
knows (cached-input and cache-write tokens, tiered prices), through the real SDKs against the
scripted server in both wire formats; a manifest `price:` wins; a model nobody knows is
"unknown" in `flowrun runs`/`show`, and a USD budget over it is a `validate` warning naming
the model and the key to add (an error with --strict), while the run still runs."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from genai_prices import Usage as TableUsage
from genai_prices import calc_price
from support.cli import run_cli
from support.env import WIRES, model_env
from support.project import workflow, write_project
from support.wire_server import Reply, ToolCallSpec, WireRequest, WireServer

from flowrun.manifest.model_config import model_config
from flowrun.providers.prices import cost_usd, price_source, table_entry
from flowrun.types import Usage

KNOWN = {"anthropic": "claude-sonnet-4-5", "openai": "gpt-4o"}
# (input, output) and (cache read, cache write) per call; the second anthropic call crosses
# claude-sonnet-4-5's 200k-token tier
CALLS = {
    "anthropic": [((1_200, 300), (4_000, 2_000)), ((230_000, 500), (0, 0))],
    "openai": [((1_200, 300), (4_000, 0)), ((2_000, 500), (0, 0))],
}


def make_project(
    tmp: Path, provider: str, model: str, price: dict[str, float] | None = None, **limits: Any
) -> None:
    entry = {"provider": provider, "model": model} | ({"price": price} if price is not None else {})
    spec = workflow(entry, name="priced", entry="solo", task="Look around.", limits=limits or None)
    write_project(
        tmp, spec, {"solo": {"prompt": "You look.", "tools": ["list_directory"]}}, name="priced.yaml"
    )


def responder(provider: str) -> Any:
    (first_usage, first_cache), (second_usage, second_cache) = CALLS[provider]

    def answer(request: WireRequest) -> Reply:
        if request.assistant_turns == 0:
            return Reply(
                tool_calls=[ToolCallSpec("list_directory", {})], usage=first_usage, cache=first_cache
            )
        return Reply(text="Seen.", usage=second_usage, cache=second_cache)

    return answer


def table_cost(provider: str, model: str, usage: tuple[int, int], cache: tuple[int, int]) -> float:
    """The table's own figure: its input count includes the cached tokens."""
    counted = TableUsage(
        input_tokens=usage[0] + cache[0] + cache[1],
        output_tokens=usage[1],
        cache_read_tokens=cache[0],
        cache_write_tokens=cache[1],
    )
    return float(calc_price(counted, model, provider_id=provider).total_price)


def run(tmp: Path, provider: str) -> tuple[Any, Path]:
    with WireServer(responder(provider)) as server:
        proc = run_cli(["priced.yaml", "--run-id", "r"], cwd=tmp, env=model_env(server, provider))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return proc, tmp / "runs" / "r"


@pytest.mark.parametrize("provider", WIRES)
def test_known_models_cost_what_the_table_says(tmp_path: Path, provider: str) -> None:
    model = KNOWN[provider]
    make_project(tmp_path, provider, model)
    proc, run_dir = run(tmp_path, provider)

    expected = [table_cost(provider, model, usage, cache) for usage, cache in CALLS[provider]]
    events = [json.loads(line) for line in (run_dir / "events.jsonl").read_text().splitlines()]
    costs = [e["cost_usd"] for e in events if e["type"] == "model_response"]
    assert costs == pytest.approx(expected, rel=1e-9)
    # cached input is cheaper than the same tokens uncached: the cache prices were used
    (usage, cache), _ = CALLS[provider]
    uncached = table_cost(provider, model, (usage[0] + cache[0] + cache[1], usage[1]), (0, 0))
    assert expected[0] != pytest.approx(uncached)
    if provider == "anthropic":  # past 200k input tokens, every token costs the higher tier's price
        (big, out), _ = CALLS[provider][1]
        assert expected[1] > (big * 3.0 + out * 15.0) / 1e6

    usage_file = json.loads((run_dir / "usage.json").read_text())
    assert usage_file["total_cost_usd"] == pytest.approx(sum(expected), abs=1e-6)
    assert usage_file["by_model"]["m"]["price"].startswith("genai-prices ")
    assert f"cost ${sum(expected):.4f}" in proc.stdout

    shown = run_cli(["show", str(run_dir)], cwd=tmp_path)
    assert f"cost ${sum(expected):.4f}" in shown.stdout
    listed = run_cli(["runs", "--runs-dir", "runs"], cwd=tmp_path)
    assert f"${sum(expected):.4f}" in listed.stdout


def test_a_manifest_price_wins_over_the_table(tmp_path: Path) -> None:
    make_project(tmp_path, "openai", "gpt-4o", price={"input": 1000.0, "output": 1000.0})
    _, run_dir = run(tmp_path, "openai")
    usage = json.loads((run_dir / "usage.json").read_text())
    calls = CALLS["openai"]
    # cached input without its own price costs as input: every token at $1000 per million
    tokens = sum(u[0] + u[1] + c[0] + c[1] for u, c in calls)
    assert usage["total_cost_usd"] == pytest.approx(tokens * 1000 / 1e6)
    assert usage["by_model"]["m"]["price"] == "manifest"


def test_an_unknown_model_runs_and_its_cost_is_unknown(tmp_path: Path) -> None:
    make_project(tmp_path, "openai", "house-model-7", max_cost_usd=1.0)
    checked = run_cli(["validate", "priced.yaml"], cwd=tmp_path)
    assert checked.returncode == 0, checked.stdout
    assert "model 'm' (openai:house-model-7) has no price" in checked.stdout
    assert "price: {input: ..., output: ...}" in checked.stdout and "max_cost_usd" in checked.stdout
    assert run_cli(["validate", "--strict", "priced.yaml"], cwd=tmp_path).returncode == 1

    proc, run_dir = run(tmp_path, "openai")  # the budget counts what it can price: nothing here
    usage = json.loads((run_dir / "usage.json").read_text())
    assert usage["total_cost_usd"] is None and usage["by_model"]["m"]["price"] == "unknown"
    assert "cost unknown" in proc.stdout
    assert "cost unknown" in run_cli(["show", str(run_dir)], cwd=tmp_path).stdout
    assert "unknown" in run_cli(["runs", "--runs-dir", "runs"], cwd=tmp_path).stdout


def test_a_known_model_with_a_usd_budget_validates_clean(tmp_path: Path) -> None:
    make_project(tmp_path, "anthropic", "claude-sonnet-4-5", max_cost_usd=1.0)
    checked = run_cli(["validate", "--strict", "priced.yaml"], cwd=tmp_path)
    assert checked.returncode == 0, checked.stdout


def test_provider_names_map_to_the_tables_providers() -> None:
    deepseek = model_config("d", preset="deepseek", model="deepseek-chat")
    assert (entry := table_entry(deepseek)) is not None and entry.provider_id == "deepseek"
    assert price_source(model_config("l", preset="ollama", model="llama3.1")) == "unknown"
    assert price_source(model_config("t", provider="test", model="test")) == "unknown"
    # a proxy the table does not know serves an OpenAI model: priced as that model
    proxy = model_config("p", provider="openai", model="gpt-4o", base_url="https://llm.example.com/v1")
    assert price_source(proxy) == "table"
    one = Usage(input_tokens=1_000_000)
    assert cost_usd(one, proxy) == pytest.approx(
        float(calc_price(TableUsage(input_tokens=1_000_000), "gpt-4o", provider_id="openai").total_price)
    )


LOOKUP = """\
import sys
from flowrun.manifest.model_config import model_config
from flowrun.providers.prices import maybe_priced, price_source
config = model_config("m", provider="openai", model=sys.argv[1], base_url="http://127.0.0.1:9/v1")
print(maybe_priced(config), price_source(config), "genai_prices" in sys.modules)
"""


def test_a_model_the_table_lacks_is_looked_up_once_per_table(tmp_path: Path) -> None:
    """A local server's model: the first process loads the table and finds nothing; later ones
    know it from the cache and do not load the table (0.1 s of CPU each), with the same answer.
    A model the table knows is looked up every time; without the cache, every time too."""
    import os
    import subprocess
    import sys

    def lookup(model: str, **env: str) -> list[str]:
        full = {**os.environ, "FLOWRUN_CACHE_DIR": str(tmp_path / "cache"), **env}
        done = subprocess.run([sys.executable, "-c", LOOKUP, model], env=full, capture_output=True, text=True)
        assert done.returncode == 0, done.stderr
        return done.stdout.split()

    assert lookup("house-model-7") == ["True", "unknown", "True"]  # the table loaded, no entry
    assert lookup("house-model-7") == ["False", "unknown", "False"]  # known unpriced: not loaded
    assert lookup("house-model-7", FLOWRUN_NO_CACHE="1") == ["True", "unknown", "True"]
    assert lookup("gpt-4o") == ["True", "table", "True"]
    assert lookup("gpt-4o") == ["True", "table", "True"]  # a priced model leaves no mark
