"""What a hook's answer means, as Claude Code reads it: exit code 0 (stdout parsed as the JSON
output when it is an object), 2 (blocking: stderr is the reason), anything else a non-blocking
error. flowrun adds one rule: a hook that gave no answer at all (a timeout, a command that is
not found or not executable, a Python hook that raised) blocks where its event can block,
unless the hook says `on_failure: continue`, and the reason says what failed."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from flowrun.types import decode_json

Decision = Literal["none", "allow", "ask", "deny", "block", "stop"]
# events whose hooks can hold something up (exit 2, `decision: block`, a failure)
BLOCKING = ("PreToolUse", "PostToolUse", "UserPromptSubmit", "Stop", "SubagentStop")
# events whose plain stdout (exit 0, not JSON) is context for the model, as in Claude Code
STDOUT_IS_CONTEXT = ("UserPromptSubmit", "SessionStart")
RANK: dict[Decision, int] = {"none": 0, "allow": 1, "ask": 2, "block": 3, "deny": 3, "stop": 4}
NOT_FOUND_CODES = {126: "is not executable", 127: "was not found"}


@dataclass(slots=True)
class HookAnswer:
    """What one hook gave back."""

    exit_code: int | None = None
    stdout: str = ""
    stderr: str = ""
    failure: str | None = None  # it gave no answer: why (timed out, not found, raised ...)


@dataclass(slots=True)
class Verdict:
    """What the hooks of one moment decided, together."""

    decision: Decision = "none"
    reasons: list[str] = field(default_factory=list)  # for the decision taken
    context: list[str] = field(default_factory=list)  # additionalContext, in order
    updated_input: dict[str, object] | None = None
    stop_reason: str | None = None

    @property
    def reason(self) -> str:
        return "\n".join(r for r in self.reasons if r)

    def add(self, other: Verdict) -> None:
        """Another hook's verdict of the same moment: the strongest decision wins (stop, then
        deny or block, ask, allow), contexts add up, updated inputs merge in order."""
        if RANK[other.decision] > RANK[self.decision]:
            self.decision, self.reasons = other.decision, list(other.reasons)
        elif other.decision == self.decision:
            self.reasons += other.reasons
        self.context += other.context
        if other.updated_input is not None:
            self.updated_input = {**(self.updated_input or {}), **other.updated_input}
        self.stop_reason = self.stop_reason or other.stop_reason


def interpret(event: str, answer: HookAnswer, label: str, on_failure: str = "block") -> Verdict:
    """One hook's answer at `event` as a verdict; `label` names the hook in a failure's reason."""
    if answer.failure is not None:
        if on_failure != "block" or event not in BLOCKING:
            return Verdict()
        why = f"the {event} hook `{label}` failed ({answer.failure}), so this is blocked"
        return Verdict(_blocking(event), [why])
    if answer.exit_code == 2:
        if event not in BLOCKING:
            return Verdict()
        return Verdict(_blocking(event), [answer.stderr.strip() or f"blocked by the {event} hook `{label}`"])
    if answer.exit_code != 0:
        return Verdict()  # a non-blocking error: logged with its stderr
    return _output(event, answer.stdout)


def _blocking(event: str) -> Decision:
    return "deny" if event == "PreToolUse" else "block"


def _output(event: str, stdout: str) -> Verdict:
    text = stdout.strip()
    parsed: object = None
    if text.startswith("{"):
        try:
            parsed = decode_json(text)  # (what a hook prints may echo a model's deep arguments)
        except ValueError:
            parsed = None
    if not isinstance(parsed, dict):
        return Verdict(context=[text] if text and event in STDOUT_IS_CONTEXT else [])
    verdict = Verdict()
    specific = parsed.get("hookSpecificOutput")
    specific = specific if isinstance(specific, dict) else {}
    context = specific.get("additionalContext")
    if isinstance(context, str) and context.strip():
        verdict.context.append(context.strip())
    _decision(event, parsed, specific, verdict)
    if parsed.get("continue") is False:
        verdict.decision = "stop"
        reason = parsed.get("stopReason")
        verdict.stop_reason = str(reason) if reason else f"a {event} hook said to stop"
        verdict.reasons = [verdict.stop_reason]
    return verdict


def _decision(event: str, parsed: dict[str, object], specific: dict[str, object], verdict: Verdict) -> None:
    reason = parsed.get("reason")
    said = parsed.get("decision")
    if event == "PreToolUse":
        permission = specific.get("permissionDecision")
        decided: dict[object, Decision] = {"allow": "allow", "deny": "deny", "ask": "ask"}
        if permission in decided:
            verdict.decision = decided[permission]
            why = specific.get("permissionDecisionReason")
            verdict.reasons = [str(why)] if why else []
        elif said in ("approve", "block"):  # Claude Code's older spelling
            verdict.decision = "allow" if said == "approve" else "deny"
            verdict.reasons = [str(reason)] if reason else []
        updated = specific.get("updatedInput")
        if isinstance(updated, dict) and verdict.decision in ("none", "allow", "ask"):
            verdict.updated_input = {str(k): v for k, v in updated.items()}
        if verdict.decision == "deny" and not verdict.reasons:
            verdict.reasons = ["a PreToolUse hook denied this call"]
        return
    if said == "block" and event in BLOCKING:
        verdict.decision = "block"
        verdict.reasons = [str(reason) if reason else f"a {event} hook blocked this"]
