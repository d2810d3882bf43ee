"""Redaction of secrets and the forms a shell makes of them, in text and in tool results; the
encoded forms come from the real tools (rev, base64, xxd, od) run by the shell tool."""

from __future__ import annotations

import base64
import json
import os
from pathlib import Path

import pytest

from flowrun.redaction import MARK, Redactor, is_secret_name, redact, secret_env_values
from flowrun.tools.base import ToolContext
from flowrun.tools.sandbox import SandboxPolicy
from flowrun.tools.shell import execute_shell
from flowrun.types import ToolError, ToolResult

SECRET = "sk-proj-Zx9Q2mB7LkT4vW1rYp8NcJ3hGf6DsA0e"


def forms(secret: str) -> dict[str, str]:
    raw = secret.encode()
    return {
        "exact": secret,
        "reversed": secret[::-1],
        "hex": raw.hex(),
        "HEX": raw.hex().upper(),
        "hex-spaced": " ".join(f"{b:02x}" for b in raw),
        "hex-colons": ":".join(f"{b:02x}" for b in raw),
        "base64": base64.b64encode(raw).decode(),
        "base64-unpadded": base64.b64encode(raw).decode().rstrip("="),
        "base64-urlsafe": base64.urlsafe_b64encode(raw).decode().rstrip("="),
        "base64 KEY=value": base64.b64encode(b"OPENAI_API_KEY=" + raw).decode(),
        "base64 1 byte before": base64.b64encode(b"x" + raw + b"\n").decode(),
        "base64 2 bytes before": base64.b64encode(b"xy" + raw + b"\n").decode(),
        "base64 wrapped at 76": base64.encodebytes(b"A" * 70 + raw + b"B" * 70).decode(),
    }


def recoverable(text: str) -> bool:
    """Whether the middle of SECRET can be read back from `text`: as is, reversed, or by
    decoding its base64 (either alphabet, any alignment) or hex characters."""
    middle = SECRET[3:-3]
    if middle in text or middle[::-1] in text:
        return True
    compact = "".join(text.split()).replace(":", "")
    hexchars = "".join(ch for ch in compact if ch in "0123456789abcdefABCDEF")
    for start in (0, 1):
        chunk = hexchars[start:]
        if middle in bytes.fromhex(chunk[: len(chunk) // 2 * 2]).decode("latin-1"):
            return True
    b64 = "".join(ch for ch in compact.replace("-", "+").replace("_", "/") if ch.isalnum() or ch in "+/")
    for start in range(4):
        chunk = b64[start:]
        decoded = base64.b64decode(chunk[: len(chunk) // 4 * 4]).decode("latin-1")
        if middle in decoded:
            return True
    return False


@pytest.mark.parametrize("name", list(forms(SECRET)))
def test_every_form_is_redacted(name: str) -> None:
    text = f"before {forms(SECRET)[name]} after"
    assert recoverable(text)  # the check below can fail
    out = Redactor([SECRET], from_env=False).text(text)
    assert MARK in out and out.startswith("before ") and out.rstrip().endswith("after")
    assert not recoverable(out.replace(MARK, " "))


def test_json_escaped_line_breaks_inside_an_event_line() -> None:
    line = json.dumps({"text": base64.encodebytes(b"Z" * 50 + SECRET.encode()).decode()})
    assert "\\n" in line and recoverable(line.replace("\\n", ""))
    out = Redactor([SECRET], from_env=False).text(line)
    assert not recoverable(out.replace("\\n", "").replace(MARK, " "))


def test_short_and_unrelated_text_is_left_alone() -> None:
    redactor = Redactor(["abcd", SECRET], from_env=False)
    assert redactor.text("dcba abcd") == f"dcba {MARK}"  # a short secret: exact match only
    plain = "the quick brown fox 0123456789 " + base64.b64encode(b"nothing secret here").decode()
    assert redactor.text(plain) == plain


def test_tool_results_are_redacted_everywhere() -> None:
    result = ToolResult(
        status="error",
        text=f"found {SECRET[::-1]}",
        data={"stdout": SECRET, "nested": [{"hex": SECRET.encode().hex()}], SECRET: 1},
        error=ToolError("COMMAND_FAILED", f"failed with {SECRET}"),
        context={"params_input": {"command": f"echo {SECRET}"}},
    )
    out = Redactor([SECRET], from_env=False).result(result)
    assert SECRET not in json.dumps(out.to_dict()) and SECRET[::-1] not in out.text
    assert out.data["nested"][0]["hex"] == MARK and MARK in out.data


def test_secret_names_and_values(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in (
        "OPENAI_API_KEY",
        "GITHUB_TOKEN",
        "DB_PASSWORD",
        "X_AUTH",
        "SESSION_COOKIE",
        "OPENAI_BASE_URL",
    ):
        assert is_secret_name(name), name
    for name in ("PATH", "HOME", "GIT_AUTHOR_NAME", "LANG"):
        assert not is_secret_name(name), name
    monkeypatch.setenv("SOME_SERVICE_TOKEN", "tok-0123456789")
    monkeypatch.setenv("SHORT_TOKEN", "abc")
    assert "tok-0123456789" in secret_env_values() and "abc" not in secret_env_values()
    assert redact("a tok-0123456789 b") == f"a {MARK} b"


def test_secret_values_follow_every_change_of_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    """The environment is decoded once per change (flowrun/environ.py): a variable set, changed
    or removed after a first read is seen by the next (by os.environ, whichever way it is edited)."""
    monkeypatch.setenv("LATER_SERVICE_TOKEN", "first-0123456789")
    assert "first-0123456789" in secret_env_values()
    monkeypatch.setenv("LATER_SERVICE_TOKEN", "second-0123456789")
    found = secret_env_values()
    assert "second-0123456789" in found and "first-0123456789" not in found
    monkeypatch.delenv("LATER_SERVICE_TOKEN")
    assert "second-0123456789" not in secret_env_values()
    os.environ.update({"UPDATED_SERVICE_SECRET": "third-0123456789"})
    try:
        assert "third-0123456789" in secret_env_values()
    finally:
        del os.environ["UPDATED_SERVICE_SECRET"]
    assert "third-0123456789" not in secret_env_values()


async def test_the_shell_tools_encodings_are_redacted(tmp_path: Path) -> None:
    """A key that reached a file anyway (the environment never carries one) and the shell's
    rev, base64, xxd and od of it: the result the model would get shows none of it."""
    (tmp_path / "leak.txt").write_text(f"OPENAI_API_KEY={SECRET}\n")
    ctx = ToolContext(
        workspace=tmp_path, base_dir=tmp_path, cwd=tmp_path, run_dir=tmp_path, sandbox=SandboxPolicy()
    )
    redactor = Redactor([SECRET], from_env=False)
    for command in (
        "cat leak.txt",
        "rev leak.txt",
        "base64 leak.txt",
        "base64 -w 0 leak.txt | tr '+/' '-_' | tr -d =",
        "xxd -p leak.txt",
        "od -A n -t x1 leak.txt",
        "for i in 1 2 3; do cat leak.txt; done | base64",
    ):
        result = await execute_shell(ctx, command=command)
        assert result.status == "success", result.text
        assert recoverable(result.text), command  # the tool itself does not redact: the runtime does
        cleaned = redactor.result(result)
        assert MARK in cleaned.text, command
        assert not recoverable(cleaned.text.replace(MARK, " ")), command
        assert not recoverable(cleaned.data["stdout"].replace(MARK, " ")), command
