"""OpenAI-compatible services flowrun knows by name: configuration only, a base_url and the
variable that holds the key. A new preset is one line here (the schema's `preset` choices and
the `PRESET:model` shorthand come from this table)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Preset:
    base_url: str
    api_key_env: str
    key_optional: bool = False  # a local server that may run without a key


PRESETS: dict[str, Preset] = {
    "deepseek": Preset("https://api.deepseek.com/v1", "DEEPSEEK_API_KEY"),
    "qwen": Preset("https://dashscope.aliyuncs.com/compatible-mode/v1", "DASHSCOPE_API_KEY"),
    "glm": Preset("https://open.bigmodel.cn/api/paas/v4", "ZHIPUAI_API_KEY"),
    "moonshot": Preset("https://api.moonshot.cn/v1", "MOONSHOT_API_KEY"),
    "ollama": Preset("http://localhost:11434/v1", "OLLAMA_API_KEY", key_optional=True),
    "vllm": Preset("http://localhost:8000/v1", "VLLM_API_KEY", key_optional=True),
    "openrouter": Preset("https://openrouter.ai/api/v1", "OPENROUTER_API_KEY"),
}
