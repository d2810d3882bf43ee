"""What a model call costs: the model's `price:` from the manifest when it has one, else the
price table bundled with the `genai-prices` package (input, output, cached-input and cache-write
tokens, tiered prices), else unknown (None).

The table is the snapshot shipped inside the installed package: flowrun never starts its
`UpdatePrices` fetcher, so no price is fetched over the network at run time; a newer table comes
with `pip install -U genai-prices`. The package is imported only when a cost is computed or a
model is looked up, so `flowrun --help` and `flowrun validate` stay fast.

flowrun's provider names map to the table's providers: `anthropic` and `openai` by name, a
preset by its service (its `price_table`, providers/presets.py), any other base URL by the
table's URL patterns, and a URL the table does not know (a proxy) by the provider type. Local
servers (the ollama and vllm presets) serve models the table cannot price: give them `price:`
(zeros for a free local server)."""

from __future__ import annotations

import contextlib
import functools
import hashlib
import importlib.metadata
import importlib.util
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from flowrun.paths import cache_base
from flowrun.providers.base import ModelConfig
from flowrun.providers.presets import PRESETS
from flowrun.types import Usage

if TYPE_CHECKING:
    from genai_prices.types import ModelInfo, Provider

PriceSource = Literal["manifest", "table", "unknown"]


@dataclass(frozen=True, slots=True)
class TableEntry:
    """A model as the price table knows it."""

    provider_id: str
    model_id: str
    context_window: int | None


def warm() -> None:
    """Load the price table (and read its version) now: the first call's answer needs it, and
    its import is tens of ms that a background thread can spend while the first request waits
    (runtime/models/prefetch.py)."""
    from genai_prices.data_snapshot import get_snapshot

    get_snapshot()
    table_version()


@functools.cache  # the package metadata scan is tens of ms; the version does not change
def table_version() -> str:
    """The installed genai-prices version (the table's), or "" when it is not installed."""
    try:
        return importlib.metadata.version("genai-prices")
    except importlib.metadata.PackageNotFoundError:
        return ""


def has_manifest_price(config: ModelConfig) -> bool:
    return config.price_input is not None and config.price_output is not None


def price_source(config: ModelConfig) -> PriceSource:
    """Where the cost of this model's calls comes from."""
    if has_manifest_price(config):
        return "manifest"
    return "table" if table_entry(config) is not None else "unknown"


def table_entry(config: ModelConfig) -> TableEntry | None:
    """The table's entry for this model, or None when the table does not know it (or the
    model is the offline test or scripted model)."""
    where = table_provider(config)
    if where is None:
        return None
    found = _lookup(where, config.model)
    if found is None:
        return None
    provider, model = found
    return TableEntry(provider.id, model.id, model.context_window)


def cost_usd(usage: Usage, config: ModelConfig, when: datetime | None = None) -> float | None:
    """The USD cost of one call's usage: the manifest's price, else the table's, else None.
    flowrun's `input_tokens` exclude cached ones (the table's include them)."""
    if has_manifest_price(config):
        return manifest_cost(usage, config)
    where = table_provider(config)
    found = _lookup(where, config.model) if where is not None else None
    if found is None:
        return None
    from genai_prices.types import Usage as TableUsage

    provider, model = found
    counted = TableUsage(
        input_tokens=usage.input_tokens + usage.cache_read_tokens + usage.cache_write_tokens,
        output_tokens=usage.output_tokens,
        cache_read_tokens=usage.cache_read_tokens,
        cache_write_tokens=usage.cache_write_tokens,
    )
    priced = model.calc_price(counted, provider, genai_request_timestamp=when or datetime.now(tz=UTC))
    return float(priced.total_price)


def manifest_cost(usage: Usage, config: ModelConfig) -> float:
    """A `price:` (USD per million tokens); cached input without its own price costs as input."""
    assert config.price_input is not None and config.price_output is not None
    cost = usage.input_tokens * config.price_input + usage.output_tokens * config.price_output
    cost += usage.cache_read_tokens * (
        config.price_cache_read if config.price_cache_read is not None else config.price_input
    )
    cost += usage.cache_write_tokens * (
        config.price_cache_write if config.price_cache_write is not None else config.price_input
    )
    return cost / 1_000_000


def table_provider(config: ModelConfig) -> tuple[str | None, str | None] | None:
    """(provider id, API URL) to look the model up by; None: the table cannot price it."""
    if config.provider == "anthropic":
        return "anthropic", None
    if config.provider != "openai":
        return None  # the offline test and scripted models cost nothing
    url = (config.base_url or "").rstrip("/")
    if not url:
        return "openai", None
    for preset in PRESETS.values():
        if url == preset.base_url.rstrip("/"):
            return (preset.price_table, None) if preset.price_table is not None else None
    return None, url


@functools.lru_cache(maxsize=512)
def _lookup(where: tuple[str | None, str | None], model: str) -> tuple[Provider, ModelInfo] | None:
    marker = _unpriced_marker(where, model)
    if marker is not None and marker.exists():
        return None  # this table had no entry for it: loading the table would not find one
    from genai_prices.data_snapshot import get_snapshot

    provider_id, url = where
    snapshot = get_snapshot()
    if url is not None:
        try:
            snapshot.find_provider(None, None, url)
        except LookupError:  # a URL the table does not know (a proxy, a local server)
            provider_id, url = "openai", None
    try:
        return snapshot.find_provider_model(model, None, provider_id, url)
    except LookupError:
        if marker is not None:
            with contextlib.suppress(OSError):
                marker.parent.mkdir(parents=True, exist_ok=True)
                marker.touch()
        return None


def maybe_priced(config: ModelConfig) -> bool:
    """Whether the table may price this model's calls, without loading it: False for a model
    whose provider it cannot price, or that an earlier process looked up and did not find
    (what the prefetch thread then leaves unloaded)."""
    where = table_provider(config)
    if where is None:
        return False
    marker = _unpriced_marker(where, config.model)
    return marker is None or not marker.exists()


def _unpriced_marker(where: tuple[str | None, str | None], model: str) -> Path | None:
    """The file that says this installed table has no entry for the model (a local server's,
    a proxy's model): later processes skip loading the table for it, 0.1 s of CPU each (the
    package and its snapshot). Keyed by the table's files, so a new genai-prices looks again;
    None when the cache is off or the table is not installed."""
    table = _table_identity()
    base = cache_base()
    if table is None or base is None:
        return None
    key = hashlib.sha256(repr((table, where, model)).encode()).hexdigest()[:32]
    return base / f"prices-{MARKER_FORMAT}" / key


MARKER_FORMAT = "1"


@functools.cache
def _table_identity() -> tuple[str, int, int] | None:
    """The installed table's data file (path, size, time): it changes with every genai-prices
    release. Found without importing the package (a spec search)."""
    try:
        spec = importlib.util.find_spec("genai_prices")
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.submodule_search_locations:
        return None
    data = Path(next(iter(spec.submodule_search_locations))) / "data.py"
    try:
        found = data.stat()
    except OSError:
        return None
    return str(data), found.st_size, found.st_mtime_ns
