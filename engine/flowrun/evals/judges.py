"""LLM judges: a rubric (a Jinja2 template of the case and its run) sent to a model of the
manifests through flowrun's providers, answering through structured output (an OpenAI
`json_schema` response format, an Anthropic forced tool, or instructions) with a score from 0
to 1 and a reason. Every answer is kept (judges.jsonl; `--record` keeps them as cassettes), and
offline, the recorded answer for the same case, judge and prompt is given instead of a call."""

from __future__ import annotations

import asyncio
import hashlib
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from flowrun.errors import FlowrunError, UsageError
from flowrun.evals.graders.judge import JudgeGrader
from flowrun.evals.grading import GraderScore, failed, short
from flowrun.evals.outcome import Outcome
from flowrun.providers.base import ModelConfig, ModelRequest, Provider
from flowrun.types import Message, Usage, decode_json

if TYPE_CHECKING:
    from flowrun.api import Workflow

JUDGE_SCHEMA: dict[str, object] = {
    "type": "object",
    "properties": {
        "score": {
            "type": "number",
            "minimum": 0,
            "maximum": 1,
            "description": "0: fails the rubric; 1: meets it fully.",
        },
        "reason": {"type": "string", "description": "Why, in one or two sentences."},
    },
    "required": ["score", "reason"],
    "additionalProperties": False,
}
SYSTEM = (
    "You are the judge '{name}': you score the work of an AI agent team against a rubric. Read the "
    "rubric and the material it quotes, then answer with a score from 0 (fails the rubric) to 1 "
    "(meets it fully) and a reason of one or two sentences."
)
REPAIR = (
    "Your answer was not a JSON object {{score: number from 0 to 1, reason: string}} ({problem}). "
    "Answer again."
)

Key = tuple[str, str, int, str]  # (variant, case, repeat, judge)


@dataclass(frozen=True, slots=True)
class Verdict:
    score: float
    reason: str


def judge_variables(
    outcome: Outcome, case: str, inputs: Mapping[str, object], expected: object
) -> dict[str, object]:
    """What a rubric sees."""
    output, _ = outcome.output_text()
    return {
        "inputs": dict(inputs),
        "expected": expected,
        "output": output if output is not None else "",
        "message": outcome.message,
        "status": outcome.status,
        "case": case,
    }


class JudgePanel:
    """The judges of an eval: one provider per judging model, at most `concurrency` calls at
    once. `recorded` (offline): the answers of a recording, keyed by case and judge."""

    def __init__(
        self,
        workflow: Workflow,
        here: Path,
        *,
        dry_run: bool = False,
        concurrency: int = 4,
        recorded: Mapping[Key, Mapping[str, object]] | None = None,
    ) -> None:
        from flowrun.runtime.models.calls import ModelChoice

        self.choice = ModelChoice(
            workflow.project,
            dict(workflow.spec.models),
            workflow.spec.default_model,
            workflow.path.parent.resolve(),
            dry_run=dry_run,
        )
        self.here = here
        self.recorded = recorded
        self.answers: list[dict[str, object]] = []
        self._providers: dict[str, Provider] = {}
        self._gate = asyncio.Semaphore(concurrency)

    def config(self, grader: JudgeGrader, name: str) -> ModelConfig:
        return self.choice.config(grader.judge.model, f"judge {name}")

    def check(self, judges: list[tuple[JudgeGrader, str]]) -> None:
        """Before anything runs: every judging model resolves and has its key (not offline)."""
        from flowrun.runtime.models.credentials import missing_key

        if self.recorded is not None:
            return
        for grader, name in judges:
            missing = missing_key(self.config(grader, name))
            if missing is not None:
                raise UsageError(
                    f"judge '{name}' uses model '{grader.judge.model}' but {missing} is not set",
                    "export the key, or use --dry-run (the test provider answers the judges)",
                )

    def rubric(self, grader: JudgeGrader, variables: Mapping[str, object]) -> str:
        from flowrun.manifest.templates import render

        text = grader.judge.rubric
        if grader.judge.rubric_file is not None:
            text = (self.here / grader.judge.rubric_file).read_text(encoding="utf-8")
        return render(text or "", variables, what="a judge's rubric")

    async def grade(
        self, grader: JudgeGrader, name: str, variables: Mapping[str, object], key: Key
    ) -> GraderScore:
        try:
            rubric = self.rubric(grader, variables)
            system = SYSTEM.format(name=name)
            digest = hashlib.sha256(f"{grader.judge.model}\n{system}\n{rubric}".encode()).hexdigest()[:16]
            verdict = (
                self._recorded(key, digest)
                if self.recorded is not None
                else await self._ask(grader, name, system, rubric, key, digest)
            )
        except FlowrunError as e:
            return failed(grader, name, f"judge: {e.message}")
        passed = verdict.score >= grader.pass_mark - 1e-9
        detail = f"{verdict.score:.2f}: {short(verdict.reason)}"
        return GraderScore(name, "judge", verdict.score, passed, detail, grader.weight)

    def _recorded(self, key: Key, digest: str) -> Verdict:
        assert self.recorded is not None
        answer = self.recorded.get(key)
        if answer is None:
            raise FlowrunError(
                "no recorded answer for this case and judge", "record the eval again (--record)"
            )
        if answer.get("digest") != digest:
            raise FlowrunError(
                "the judge's prompt differs from the recorded one (its rubric, its model or the run's "
                "output changed)",
                "record the eval again (--record)",
            )
        self.answers.append(dict(answer))
        score = answer.get("score")
        if not isinstance(score, int | float):
            raise FlowrunError(f"its recorded answer did not fit {{score, reason}}: {answer.get('reason')}")
        return Verdict(float(score), str(answer.get("reason") or ""))

    async def _ask(
        self, grader: JudgeGrader, name: str, system: str, rubric: str, key: Key, digest: str
    ) -> Verdict:
        from flowrun.runtime.models.usage import cost_of

        config = self.config(grader, name)
        provider = self._provider(config)
        messages = [Message("user", rubric)]
        usage = Usage()
        async with self._gate:
            for attempt in range(2):  # one repair turn for an answer that does not fit
                request = ModelRequest(
                    f"judge:{name}", system, list(messages), [], output_schema=JUDGE_SCHEMA
                )
                response = await provider.complete(request)
                usage = usage + response.usage
                verdict, problem = parse_verdict(response.text)
                if verdict is not None or attempt:
                    break
                messages += [
                    Message("assistant", response.text),
                    Message("user", REPAIR.format(problem=problem)),
                ]
        variant, case, repeat, judge = key
        self.answers.append(
            {
                "variant": variant,
                "case": case,
                "repeat": repeat,
                "judge": judge,
                "model": grader.judge.model,
                "digest": digest,
                "score": verdict.score if verdict else None,
                "reason": verdict.reason if verdict else problem,
                "input_tokens": usage.input_tokens,
                "output_tokens": usage.output_tokens,
                "cost_usd": cost_of(usage, config),
            }
        )
        if verdict is None:
            raise FlowrunError(f"its answer did not fit {{score, reason}}: {problem}")
        return verdict

    def _provider(self, config: ModelConfig) -> Provider:
        from flowrun.providers.registry import make_provider

        key = f"{config.name}|{config.provider}|{config.model}"
        if key not in self._providers:
            self._providers[key] = make_provider(config)
        return self._providers[key]

    async def aclose(self) -> None:
        for provider in self._providers.values():
            await provider.aclose()

    def cost_usd(self) -> float | None:
        costs = [a.get("cost_usd") for a in self.answers]
        priced = [float(c) for c in costs if isinstance(c, int | float)]
        return round(sum(priced), 6) if priced else None


def parse_verdict(text: str) -> tuple[Verdict | None, str]:
    """The judge's answer as a Verdict, or None and what is wrong with it."""
    stripped = text.strip()
    if stripped.startswith("```"):
        stripped = stripped.strip("`").removeprefix("json").strip()
    try:
        raw = decode_json(stripped)
    except ValueError:
        return None, f"not JSON: {short(text)!r}"
    if not isinstance(raw, dict):
        return None, "not a JSON object"
    score = raw.get("score")
    if not isinstance(score, int | float) or isinstance(score, bool) or not 0 <= score <= 1:
        return None, f"score {score!r} is not a number from 0 to 1"
    return Verdict(float(score), str(raw.get("reason") or "")), ""
