"""Secret detection and redaction, for everything a run writes or hands to a model.

Which environment variables are secret: those named by a model config (`api_key_env`,
`auth_token_env`) and any whose name looks secret (`SECRET_NAME`: …KEY, …TOKEN, …SECRET,
…PASSWORD, …CREDENTIAL, …AUTH, …COOKIE, …PRIVATE), plus every ANTHROPIC_* and OPENAI_* variable.
The same rule decides what never enters a tool's environment (`is_secret_name`).

What is replaced by `[REDACTED]`: a secret's exact value, and the forms a shell makes of it in one
command: reversed (`rev`), hex (`xxd -p`, `od`, `.hex()`, either case, bytes separated by
spaces, colons or line breaks), and base64 in both alphabets with or without padding, also when
the value sits inside a longer encoded text such as `env | base64` (the part of the encoding that
only depends on the value's bytes is matched at each of the three byte alignments, across the
line breaks `base64` inserts). A secret cut into pieces by the shell (`cut -c1-5`) is not found:
the environment allowlist of the sandbox keeps keys away from tools in the first place.
"""

from __future__ import annotations

import base64
import os
import re
from collections.abc import Iterable
from functools import lru_cache
from typing import TYPE_CHECKING, Any

from flowrun.environ import variables

if TYPE_CHECKING:
    from flowrun.types import ToolResult

MARK = "[REDACTED]"
SECRET_NAME = re.compile(
    r"(KEY|TOKEN|SECRET|PASSWORD|PASSWD|CREDENTIAL|AUTH(?!OR)|COOKIE|PRIVATE)", re.IGNORECASE
)
# variables of the model SDKs flowrun drives: keys, tokens and endpoints alike
SDK_PREFIXES = ("ANTHROPIC_", "OPENAI_")
MIN_NAMED = 4  # a variable a model config names is a secret from this length on
MIN_GUESSED = 8  # a variable whose name only looks secret
MIN_FORMS = 8  # shorter secrets are matched exactly only (their encodings would hit noise)
LINE_BREAK = r"(?:\r?\n|(?:\\r)?\\n)?"  # a real line break, or one escaped inside a JSON line
HEX_GAP = r"[\s:]*"


@lru_cache(maxsize=4096)  # every run scans the environment's names (secret_env_values)
def is_secret_name(name: str) -> bool:
    """Whether a variable of this name may hold a secret (never passed to a tool)."""
    return bool(SECRET_NAME.search(name)) or name.upper().startswith(SDK_PREFIXES)


def secret_env_values(environ: dict[str, str] | None = None) -> set[str]:
    """Values of the environment variables whose names look secret."""
    pairs = variables() if environ is None else environ.items()
    return {v for k, v in pairs if is_secret_name(k) and len(v) >= MIN_GUESSED}


def secret_forms(secret: str) -> list[str]:
    """Regular expressions for the secret and the shapes a shell makes of it."""
    forms = [re.escape(secret)]
    if len(secret) < MIN_FORMS:
        return forms
    raw = secret.encode("utf-8")
    forms.append(re.escape(secret[::-1]))
    forms.append("(?i:" + HEX_GAP.join(f"{b:02x}" for b in raw) + ")")
    forms += _base64_forms(raw)
    return forms


def _base64_forms(raw: bytes) -> list[str]:
    """The stable middle of the value's base64 at each byte alignment, in both alphabets."""
    forms: list[str] = []
    for shift in range(3):
        encoded = base64.b64encode(b"\0" * shift + raw).decode("ascii")
        start = 4 if shift else 0  # the first group mixes in the bytes before the value
        whole_groups = (shift + len(raw)) // 3
        core = encoded[start : whole_groups * 4]  # the last group may mix in the bytes after it
        if len(core) < 8:
            continue
        for alphabet in (core, core.replace("+", "-").replace("/", "_")):
            form = LINE_BREAK.join(re.escape(ch) for ch in alphabet)
            if form not in forms:
                forms.append(form)
    return forms


@lru_cache(maxsize=64)  # each run makes its redactor: the same secrets, one pattern per process
def _pattern_of(secrets: frozenset[str]) -> re.Pattern[str] | None:
    forms = {form for secret in secrets for form in secret_forms(secret)}
    # longest first, so a value wins over a shorter secret inside it
    ordered = sorted(forms, key=len, reverse=True)
    return re.compile("|".join(ordered)) if ordered else None


def redact(text: str, secrets: Iterable[str] | None = None) -> str:
    """`text` with every secret (and its shell-made forms) replaced; the environment's secret
    variables when `secrets` is None."""
    redactor = Redactor(secrets if secrets is not None else secret_env_values(), from_env=False)
    return redactor.text(text)


class Redactor:
    """Replaces secret values and their forms wherever they appear. Starts with the
    environment's secret-looking variables; `add_env` adds the ones model configs name."""

    def __init__(self, secrets: Iterable[str] | None = None, *, from_env: bool = True) -> None:
        self.secrets: set[str] = set(secrets or ())
        if from_env:
            self.secrets |= secret_env_values()
        self._pattern: re.Pattern[str] | None = None
        self._compiled_for: frozenset[str] = frozenset()

    def add(self, value: str | None, minimum: int = MIN_NAMED) -> None:
        if value and len(value) >= minimum:
            self.secrets.add(value)

    def add_env(self, name: str | None) -> None:
        self.add(os.environ.get(name or "", ""))

    def pattern(self) -> re.Pattern[str] | None:
        current = frozenset(s for s in self.secrets if s)
        if current != self._compiled_for or (self._pattern is None and current):
            self._pattern = _pattern_of(current)
            self._compiled_for = current
        return self._pattern

    def text(self, value: str) -> str:
        pattern = self.pattern()
        if pattern is None or not value:
            return value
        return pattern.sub(MARK, value)

    def value(self, obj: object) -> Any:
        """A JSON-like value with every string in it redacted (dict keys included)."""
        if isinstance(obj, str):
            return self.text(obj)
        if isinstance(obj, dict):
            return {self.value(k): self.value(v) for k, v in obj.items()}
        if isinstance(obj, list | tuple):
            return [self.value(v) for v in obj]
        return obj

    def result(self, result: ToolResult) -> ToolResult:
        """A tool result as the model and the event log may see it (redacted in place)."""
        if self.pattern() is None:
            return result
        result.text = self.text(result.text)
        result.data = self.value(result.data)
        if result.error is not None:
            result.error.message = self.text(result.error.message)
        result.context = self.value(result.context)
        return result
