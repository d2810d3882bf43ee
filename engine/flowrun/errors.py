"""Exceptions for engine and user failures. Tool failures are never exceptions: they are
`ToolResult(status="error")` data the model can act on.

    FlowrunError                  base; carries a one-line message and a hint
    ├── UsageError                bad command line, run id or inputs; unusable runs folder (exit 2)
    │   └── RunInUse              another live process holds the run folder's lock (exit 2)
    ├── ManifestError             a manifest problem found while loading (exit 1)
    ├── ProviderError             a model call failed for good (after retries)
    │   └── MissingCredentials    the env var holding a key is not set
    ├── OutputInvalid             a final answer does not match the agent's output_schema, after repairs
    ├── HookBlocked               a UserPromptSubmit hook refused an agent's task
    ├── HookStopped               a hook answered `continue: false`: the run stops
    ├── GuardrailFailed           a guardrail with `on_fail: stop` (or out of retries) stopped an agent
    ├── RunError                  a run cannot start or continue (missing run folder, ...)
    │   └── SandboxError          `sandbox: required` and the sandbox does not work here (exit 5)
    └── BudgetExceeded            a run limit was reached (the run stops cleanly)
"""

from __future__ import annotations


class FlowrunError(Exception):
    exit_code = 1

    def __init__(self, message: str, hint: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint

    def __str__(self) -> str:
        return f"{self.message} (hint: {self.hint})" if self.hint else self.message


class UsageError(FlowrunError):
    exit_code = 2


class RunInUse(UsageError):
    pass


class ManifestError(FlowrunError):
    pass


class ProviderError(FlowrunError):
    def __init__(
        self,
        message: str,
        hint: str | None = None,
        *,
        agent: str = "",
        model: str = "",
        retryable: bool = False,
    ) -> None:
        super().__init__(message, hint)
        self.agent = agent
        self.model = model
        self.retryable = retryable


class MissingCredentials(ProviderError):
    pass


class OutputInvalid(FlowrunError):
    pass


class HookBlocked(FlowrunError):
    pass


class HookStopped(FlowrunError):
    pass


class GuardrailFailed(FlowrunError):
    def __init__(
        self, message: str, hint: str | None = None, *, agent: str = "", guardrail: str = ""
    ) -> None:
        super().__init__(message, hint)
        self.agent = agent
        self.guardrail = guardrail


class RunError(FlowrunError):
    pass


class SandboxError(RunError):
    exit_code = 5


class BudgetExceeded(FlowrunError):
    def __init__(self, message: str, limit: str) -> None:
        super().__init__(message, "raise the limit under the workflow's `limits:` or resume the run")
        self.limit = limit
