"""The `scripted` provider: replays replies listed per agent in a `kind: script` YAML file, for
deterministic tests of a user's own workflow. An agent's k-th model call gets its k-th reply."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from flowrun.errors import ProviderError
from flowrun.providers.base import ModelConfig, ModelRequest, Provider, call_index
from flowrun.types import ModelResponse, ToolCall, Usage, parse_arguments


def load_script(path: Path) -> dict[str, list[dict[str, Any]]]:
    from flowrun.errors import ManifestError
    from flowrun.manifest.project import parse_manifest

    kind, spec, _, diags = parse_manifest(path)
    if spec is None or kind != "script":
        first = diags[0].text() if diags else f"{path} is not a `kind: script` manifest"
        raise ManifestError(f"bad script file: {first}", "see `flowrun schema script`")
    agents = spec.raw("agents") or {}
    return {
        name: [{"text": r.get("text", ""), "tool_calls": r.get("tool_calls") or []} for r in replies]
        for name, replies in agents.items()
    }


class ScriptedProvider(Provider):
    def __init__(self, config: ModelConfig) -> None:
        super().__init__(config)
        script = config.options.get("script")
        if not script:
            raise ProviderError(
                f"scripted model '{config.name}' names no script file",
                "set `script:` on the model",
                model=config.name,
            )
        self.path = Path(script)
        if not self.path.is_file():
            raise ProviderError(f"script file {self.path} not found", "check the model's `script:` path")
        self.replies = load_script(self.path)

    async def complete(self, request: ModelRequest) -> ModelResponse:
        replies = self.replies.get(request.agent)
        if replies is None:
            raise ProviderError(
                f"script {self.path.name} has no replies for agent '{request.agent}'",
                f"add `{request.agent}:` under `agents:`",
                agent=request.agent,
                model=self.config.name,
            )
        step = call_index(request)
        if step >= len(replies):
            raise ProviderError(
                f"script {self.path.name} has {len(replies)} replies for agent "
                f"'{request.agent}'; call {step + 1} asked for another",
                "add replies, or end the agent earlier (a reply without tool_calls ends it)",
                agent=request.agent,
                model=self.config.name,
            )
        reply = replies[step]
        calls = []
        for i, spec in enumerate(reply["tool_calls"]):
            raw = spec.get("arguments", {})
            args, err = parse_arguments(raw)
            calls.append(
                ToolCall(
                    id=f"script_{request.agent}_{step}_{i}",
                    name=spec["name"],
                    arguments=args,
                    raw_arguments=raw if isinstance(raw, str) else None,
                    parse_error=err,
                )
            )
        usage = Usage(input_tokens=len(request.system) // 4, output_tokens=len(reply["text"]) // 4 + 1)
        return ModelResponse(text=reply["text"], tool_calls=calls, usage=usage, model="scripted")
