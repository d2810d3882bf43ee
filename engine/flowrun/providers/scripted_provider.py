"""The `scripted` provider: replays replies listed per agent in a `kind: script` YAML file, for
deterministic tests of a user's own workflow. An agent's k-th model call gets its k-th reply."""

from __future__ import annotations

from pathlib import Path
from typing import Any, ClassVar

from flowrun.errors import ProviderError
from flowrun.providers.base import ModelConfig, ModelRequest, Provider, call_index
from flowrun.types import ModelResponse, ToolCall, Usage, parse_arguments

Replies = dict[str, list[dict[str, Any]]]  # agent name -> [{text, tool_calls}, ...]


class ScriptedProvider(Provider):
    """Replays the replies a `kind: script` file lists per agent. `config.options` holds
    `script` (the replies, read and checked by the manifest layer) and `script_path`."""

    needs_key = False
    requires: ClassVar[dict[str, str]] = {"script": "name a `kind: script` file relative to the workflow"}

    @classmethod
    def shorthand(cls, model: str) -> dict[str, object] | None:
        return {"model": "script", "script": model}  # `scripted:FILE.yaml`

    def __init__(self, config: ModelConfig) -> None:
        super().__init__(config)
        replies = config.options.get("script")
        self.path = Path(str(config.options.get("script_path") or "script"))
        if not isinstance(replies, dict):
            raise ProviderError(
                f"scripted model '{config.name}' names no script file",
                "set `script:` on the model",
                model=config.name,
            )
        self.replies: Replies = replies

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
