"""An Agent Spec `llm_config` as a flowrun model: `OpenAiCompatibleConfig` and `VllmConfig` as an
OpenAI-compatible server at `url` (flowrun's `vllm` preset for vLLM), `OllamaConfig` on the
`ollama` preset, `OpenAiConfig` on OpenAI, `GeminiConfig` on the `gemini` preset;
`default_generation_parameters` as the model's settings. OCI Generative AI has no flowrun
provider: the agent keeps the default model, with a warning."""

from __future__ import annotations

from collections.abc import Mapping
from urllib.parse import urlsplit

from flowrun.manifest.foreign.agentspec.document import Comp, flowrun_meta
from flowrun.manifest.foreign.conversion import Conversion, Doc, flowrun_name

DEFAULT_MODEL = "agentspec-default"
DIRECT_MODEL = "agentspec_direct"
DEFAULT_SPEC: Doc = {"provider": "openai", "model": "gpt-4o-mini", "api_key_env": "OPENAI_API_KEY"}
# Agent Spec's generation parameters that a flowrun model takes under its own name
SAME = ("temperature", "max_tokens")
EXTRA_BODY = ("top_p", "frequency_penalty", "presence_penalty", "seed", "stop")
PRESET_OF = {"VllmConfig": "vllm", "VLLMConfig": "vllm", "OllamaConfig": "ollama", "GeminiConfig": "gemini"}


def base_url(url: str) -> str:
    """An Agent Spec `url` as an OpenAI base URL: a scheme added when it has none, `/v1` when
    its path does not end with it (Agent Spec runtimes take the server's address)."""
    text = url.strip().rstrip("/")
    if "://" not in text:
        text = "http://" + text
    return text if urlsplit(text).path.endswith("/v1") else text + "/v1"


def model_spec(conv: Conversion, comp: Comp) -> Doc | None:
    """The flowrun model settings of an llm_config component; None (with a warning) when flowrun
    has no provider for it."""
    kept = flowrun_meta(comp).get("model")
    if isinstance(kept, Mapping):
        conv.note(comp.src, comp.path, "the flowrun model kept in its metadata")
        return dict(kept)
    kind = comp.type
    model_id = comp.get("model_id")
    if not isinstance(model_id, str) or not model_id.strip():
        conv.problem(
            comp.src, comp.path, f"{kind} '{comp.name}' has no `model_id`", "add `model_id:`", "missing-key"
        )
        return None
    url = comp.get("url")
    spec: Doc
    if kind in PRESET_OF:
        spec = {"preset": PRESET_OF[kind], "model": model_id}
        if isinstance(url, str) and url.strip() and kind != "GeminiConfig":
            spec["base_url"] = base_url(url)
    elif kind == "OpenAiConfig":
        spec = {"provider": "openai", "model": model_id, "api_key_env": "OPENAI_API_KEY"}
    elif kind == "OpenAiCompatibleConfig" and isinstance(url, str) and url.strip():
        spec = {"provider": "openai-compatible", "model": model_id, "base_url": base_url(url)}
    else:
        message = f"{kind} '{comp.name}': flowrun has no provider for it; the agent uses the default model"
        conv.problem(comp.src, comp.at("component_type"), message, "", "unknown-model", severity="warning")
        conv.note(comp.src, comp.path, "the workflow's default model", "approximated")
        return None
    spec |= _generation(conv, comp)
    conv.note(comp.src, comp.path, f"model {model_id} ({spec.get('preset') or spec.get('provider')})")
    return spec


def _generation(conv: Conversion, comp: Comp) -> Doc:
    params = comp.get("default_generation_parameters")
    if not isinstance(params, Mapping):
        return {}
    out: Doc = {}
    extra: Doc = {}
    for key, value in params.items():
        where = comp.at("default_generation_parameters", key)
        if value is None:  # unset: the model's own default
            continue
        if key in SAME:
            out[key] = value
            conv.note(comp.src, where, f"the model's {key}")
        elif key in EXTRA_BODY:
            extra[key] = value
            conv.note(comp.src, where, f"sent as `{key}` in the request body", "approximated")
        else:
            conv.note(comp.src, where, "not sent to the model", "dropped")
    if extra:
        out["extra_body"] = extra
    return out


class Models:
    """The workflow's `models:`, one per llm_config component (the same component once)."""

    def __init__(self, conv: Conversion) -> None:
        self.conv = conv
        self.specs: dict[str, Doc] = {}
        self._by_place: dict[tuple[str, tuple[object, ...]], str | None] = {}

    def ref(self, comp: Comp | None) -> str | None:
        """The name of `comp`'s model in `models:`, None for the default model."""
        if comp is None:
            return None
        place = (comp.src.display, comp.path)
        if place not in self._by_place:
            spec = model_spec(self.conv, comp)
            name = None
            if spec is not None:
                name = flowrun_name(comp.name)
                while name in self.specs and self.specs[name] != spec:
                    name = flowrun_name(name + "_2")
                self.specs[name] = spec
            self._by_place[place] = name
        return self._by_place[place]

    def default(self) -> str:
        """The default model: the first one named, else OpenAI's."""
        named = [n for n in self.specs if n != DIRECT_MODEL]
        if named:
            return named[0]
        self.specs[DEFAULT_MODEL] = dict(DEFAULT_SPEC)
        return DEFAULT_MODEL

    def direct(self) -> str:
        """The model of the steps that run one tool without a model (flowrun's `direct` provider)."""
        self.specs.setdefault(DIRECT_MODEL, {"provider": "direct", "model": "direct"})
        return DIRECT_MODEL
