"""The examples of workflow power (foreach, structured output) end to end as subprocesses, with
the real anthropic and openai SDKs talking to the scripted wire server."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from support.env import WIRES
from support.wire_server import Reply, WireRequest, WireServer, call
from test_rosters import EXAMPLES, assert_ok, first_user_text, of_type, pick, run_example

SEARCHER = "You are a search specialist"
WRITER = "You are the writer"
QUESTIONS = ["How does sorted() order equal keys?", "What does a key function receive?", "Is sort in place?"]


def foreach_responder(request: WireRequest) -> Reply:
    opening = first_user_text(request)
    if SEARCHER in request.system:
        k = int(re.search(r"Research question (\d+) of", opening).group(1))  # type: ignore[union-attr]
        replies = [
            Reply(tool_calls=[call("web_search", query=QUESTIONS[k - 1])]),
            Reply(tool_calls=[call("write_file", path=f"workspace/q{k}/notes.md", content=f"notes {k}\n")]),
            Reply(text=f"ANSWER-{k}: see workspace/q{k}/notes.md (Sorting HOWTO)."),
        ]
    elif WRITER in request.system:
        report = "# Report\n\n" + "".join(f"## Q{k}\nANSWER-{k}\n\n" for k in range(1, 4))
        replies = [
            Reply(tool_calls=[call("read_file", path="workspace/answers.json")]),
            Reply(tool_calls=[call("write_file", path="report.md", content=report)]),
            Reply(text="Merged the three answers into report.md."),
        ]
    else:
        return Reply(
            status=400, error_body={"error": {"message": "unknown agent", "type": "invalid_request_error"}}
        )
    return pick(replies, request)


@pytest.mark.parametrize("provider", WIRES)
def test_research_foreach(tmp_path: Path, provider: str) -> None:
    with WireServer(foreach_responder) as server:
        code, out, run_dir = run_example(
            tmp_path,
            server,
            provider,
            EXAMPLES / "research_foreach.yaml",
            {"questions": json.dumps(QUESTIONS)},
        )
        requests = server.requests
    events = assert_ok(code, out, run_dir)
    answers = json.loads((run_dir / "workspace" / "answers.json").read_text())
    assert [a["item"] for a in answers] == QUESTIONS
    for k, answer in enumerate(answers, start=1):
        assert answer["text"].startswith(f"ANSWER-{k}:")
        assert (run_dir / f"workspace/q{k}/answer.md").read_text() == answer["text"]
        assert (run_dir / f"workspace/q{k}/notes.md").read_text() == f"notes {k}\n"
    # the writer read the collected answers, then merged them
    read = of_type(events, "tool_result", agent="writer", tool="read_file")[0]["result"]
    assert "ANSWER-3" in read["data"]["content"]
    assert (run_dir / "report.md").read_text().count("ANSWER-") == 3
    assert sum(SEARCHER in r.system for r in requests) == 9
    assert (
        json.loads((run_dir / "question.txt").read_text().splitlines()[0].split(". ", 1)[1].join('""'))
        == QUESTIONS[0]
    )


CITED = {
    "report": "report.md",
    "summary": "Python's sorts are stable and take a key function.",
    "citations": [
        {"claim": "sorted() is stable", "source": "https://docs.python.org/3/howto/sorting.html"},
        {"claim": "key functions run once per element", "source": "workspace/notes/sorting.md"},
    ],
}
CITED_WRITER = "answer with a JSON object and nothing else"


def cited_responder(request: WireRequest) -> Reply:
    if SEARCHER in request.system:
        replies = [
            Reply(tool_calls=[call("web_search", query="python sorting howto")]),
            Reply(
                tool_calls=[call("write_file", path="workspace/notes/sorting.md", content="stable; key\n")]
            ),
            Reply(text="Notes in workspace/notes/sorting.md."),
        ]
    elif CITED_WRITER in request.system:
        final = (
            Reply(tool_calls=[call("final_answer", **CITED)])
            if request.api == "anthropic"
            else Reply(text=json.dumps(CITED))
        )
        replies = [
            Reply(tool_calls=[call("read_file", path="workspace/notes/sorting.md")]),
            Reply(tool_calls=[call("write_file", path="report.md", content="# Sorting\n\nStable [1].\n")]),
            final,
        ]
    else:
        return Reply(
            status=400, error_body={"error": {"message": "unknown agent", "type": "invalid_request_error"}}
        )
    return pick(replies, request)


@pytest.mark.parametrize("provider", WIRES)
def test_research_cited(tmp_path: Path, provider: str) -> None:
    with WireServer(cited_responder) as server:
        code, out, run_dir = run_example(
            tmp_path,
            server,
            provider,
            EXAMPLES / "research_cited.yaml",
            {"question": "How does sorting work?"},
        )
        requests = server.requests
    events = assert_ok(code, out, run_dir)
    assert json.loads((run_dir / "citations.json").read_text()) == CITED
    assert (run_dir / "report.md").read_text().startswith("# Sorting")
    writer = [r for r in requests if CITED_WRITER in r.system]
    assert len(writer) == 3
    schema = json.loads((EXAMPLES / "schemas" / "citations.schema.json").read_text())
    for request in writer:
        if provider == "openai":
            assert request.body["response_format"]["json_schema"]["schema"] == schema
        else:
            assert any(t["name"] == "final_answer" and t["input_schema"] == schema for t in request.tools)
    assert not of_type(events, "output_invalid")
