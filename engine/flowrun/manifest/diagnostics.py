"""Diagnostics: one problem in one manifest, with where it is and what to do about it."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from typing import Literal

from flowrun.errors import ManifestError

Severity = Literal["error", "warning"]


@dataclass(slots=True)
class Diagnostic:
    file: str
    line: int
    column: int
    path: str  # YAML path, e.g. "tools[2]" or "models.fast.provider"; "" for the whole file
    message: str
    hint: str = ""
    code: str = "invalid"
    severity: Severity = "error"

    @property
    def location(self) -> str:
        """`file:line:column`, or just the origin when there is no line (a `--set` option)."""
        return f"{self.file}:{self.line}:{self.column}" if self.line else self.file

    def text(self) -> str:
        where = f" (at {self.path})" if self.path else ""
        line = f"{self.location}: {self.severity}[{self.code}]: {self.message}{where}"
        return f"{line}\n    hint: {self.hint}" if self.hint else line

    def github(self) -> str:
        kind = "error" if self.severity == "error" else "warning"
        where = f" (at {self.path})" if self.path else ""
        hint = f" Hint: {self.hint}" if self.hint else ""
        body = f"{self.message}{where}.{hint}".replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")
        if not self.line:
            return f"::{kind} title={self.code}::{self.file}: {body}"
        return f"::{kind} file={self.file},line={self.line},col={self.column},title={self.code}::{body}"


def yaml_path(parts: tuple[str | int, ...] | list[str | int]) -> str:
    out = ""
    for part in parts:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += f".{part}" if out else str(part)
    return out


def render(diagnostics: list[Diagnostic], fmt: str, checked: int) -> str:
    errors = sum(d.severity == "error" for d in diagnostics)
    warnings = len(diagnostics) - errors
    if fmt == "json":
        return json.dumps(
            {
                "ok": errors == 0,
                "files_checked": checked,
                "errors": errors,
                "warnings": warnings,
                "diagnostics": [asdict(d) for d in diagnostics],
            },
            indent=2,
        )
    if fmt == "github":
        return "\n".join(d.github() for d in diagnostics)
    lines = [d.text() for d in diagnostics]
    lines.append(f"{checked} file(s) checked: {errors} error(s), {warnings} warning(s)")
    return "\n".join(lines)


class ManifestInvalid(ManifestError):
    """A workflow's manifests have errors; `diagnostics` holds every problem found (errors and
    warnings), `errors` just the errors."""

    def __init__(self, path: str, diagnostics: list[Diagnostic]) -> None:
        errors = [d for d in diagnostics if d.severity == "error"]
        lines = "\n".join(d.text() for d in errors[:20]) or f"{path} is not a workflow manifest"
        super().__init__(
            f"{len(errors) or 1} problem(s) in the workflow, nothing was run:\n{lines}",
            f"run `flowrun validate {path}` for the full list",
        )
        self.diagnostics = diagnostics
        self.errors = errors
