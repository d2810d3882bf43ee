"""OpenAI-compatible services flowrun knows by name: configuration only, a base_url and the
variable that holds the key. A new preset is one line here, or `register_preset` from outside
flowrun (runtime/kinds.py): the schema's `preset` choices, the `PRESET:model` shorthand, the
price table's lookup and the docs' table of presets come from this table."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True, slots=True)
class Preset:
    base_url: str
    api_key_env: str
    key_optional: bool = False  # a local server that may run without a key
    key_alias: str | None = None  # another name the key goes by, read when `api_key_env` is unset
    # the service's provider id in the bundled price table (genai-prices); None: not in the table
    price_table: str | None = None
    # extra_body that switches the model's thinking off (`thinking: false`, --no-thinking) and on
    # (`thinking: true`)
    thinking_off: dict[str, Any] = field(default_factory=dict)
    thinking_on: dict[str, Any] = field(default_factory=dict)


PRESETS: dict[str, Preset] = {
    "deepseek": Preset("https://api.deepseek.com/v1", "DEEPSEEK_API_KEY", price_table="deepseek"),
    "qwen": Preset(
        "https://dashscope.aliyuncs.com/compatible-mode/v1",
        "DASHSCOPE_API_KEY",  # DashScope: not in the price table
        thinking_off={"enable_thinking": False},
        thinking_on={"enable_thinking": True},
    ),
    "glm": Preset(
        "https://open.bigmodel.cn/api/paas/v4",
        "ZHIPUAI_API_KEY",  # what Zhipu's SDK and docs read
        key_alias="GLM_API_KEY",  # what the ReAct design's .env names it
        price_table="zhipuai",
        thinking_off={"thinking": {"type": "disabled"}},
        thinking_on={"thinking": {"type": "enabled"}},
    ),
    "moonshot": Preset("https://api.moonshot.cn/v1", "MOONSHOT_API_KEY", price_table="moonshotai"),
    "ollama": Preset("http://localhost:11434/v1", "OLLAMA_API_KEY", key_optional=True),
    "vllm": Preset(
        "http://localhost:8000/v1",
        "VLLM_API_KEY",
        key_optional=True,
        thinking_off={"chat_template_kwargs": {"enable_thinking": False}},
        thinking_on={"chat_template_kwargs": {"enable_thinking": True}},
    ),
    "openrouter": Preset("https://openrouter.ai/api/v1", "OPENROUTER_API_KEY", price_table="openrouter"),
    # Google's OpenAI-compatible Gemini endpoint; ADK and its samples name the key GOOGLE_API_KEY
    "gemini": Preset(
        "https://generativelanguage.googleapis.com/v1beta/openai",
        "GEMINI_API_KEY",
        key_alias="GOOGLE_API_KEY",
        price_table="google",
    ),
    "mistral": Preset("https://api.mistral.ai/v1", "MISTRAL_API_KEY", price_table="mistral"),
    "xai": Preset("https://api.x.ai/v1", "XAI_API_KEY", price_table="x-ai"),
    "groq": Preset("https://api.groq.com/openai/v1", "GROQ_API_KEY", price_table="groq"),
    "perplexity": Preset("https://api.perplexity.ai", "PERPLEXITY_API_KEY", price_table="perplexity"),
}
