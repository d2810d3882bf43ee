"""The dry run of every shipped example calls every tool with arguments that tool accepts: a
healthy roster shows no tool error. A copy of an example in another folder still finds the
offline corpus (shipped with flowrun)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from support.cli import run_cli
from support.paths import REPO
from support.project import write_files
from support.runs import events

EXAMPLES = {
    "research": "--question",
    "research_v2": "--question",
    "instructor_worker": "--task",
    "init_execute": "--task",
    "react": "--question",
    "research_cited": "--question",
    "research_foreach": "--questions",
    "claude_code/claude_code": "--bug",
    "evals/librarian": "--question",
}


@pytest.mark.parametrize("name", sorted(EXAMPLES))
def test_every_example_dry_runs_without_a_tool_error(tmp_path: Path, name: str) -> None:
    args = [
        str(REPO / "examples" / f"{name}.yaml"),
        EXAMPLES[name],
        "How do Python's sorting functions work?",
    ]
    proc = run_cli([*args, "--dry-run", "--run-id", "r"], cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "←" not in proc.stderr, proc.stderr  # the plain progress prints a line per failed tool result
    found = events(tmp_path / "runs" / "r")
    results = [e for e in found if e["type"] == "tool_result"]
    failed = [
        (e["agent"], e["tool"], e["result"]["text"]) for e in results if e["result"]["status"] == "error"
    ]
    assert failed == []
    offered = {t for e in found if e["type"] == "model_request" for t in e["tools"]}
    called = {e["tool"] for e in found if e["type"] == "tool_call"}
    # every tool is exercised except ask_user (never called offline)
    assert offered - called <= {"ask_user"}, offered - called


def test_the_readme_dry_run_prints_no_error_line(tmp_path: Path) -> None:
    args = [str(REPO / "examples" / "research.yaml"), "--question", "How do Python's sorting functions work?"]
    proc = run_cli([*args, "--dry-run"], cwd=tmp_path)
    assert proc.returncode == 0
    assert "error" not in proc.stderr.lower(), proc.stderr
    assert "status: completed" in proc.stdout


def test_a_copy_of_the_example_elsewhere_finds_the_shipped_corpus(tmp_path: Path) -> None:
    shutil.copy(REPO / "examples" / "research.yaml", tmp_path / "research.yaml")
    proc = run_cli(
        ["research.yaml", "--question", "sorting key functions", "--dry-run", "--run-id", "r"], cwd=tmp_path
    )
    assert proc.returncode == 0, proc.stderr
    results = {e["tool"]: e["result"] for e in events(tmp_path / "runs" / "r") if e["type"] == "tool_result"}
    search = results["web_search"]
    assert search["status"] == "success", search["text"]
    assert search["data"]["results"] and "UNAVAILABLE" not in search["text"]
    assert results["visit_url"]["status"] in ("success", "partial")


def test_a_copy_of_the_react_example_copies_the_shipped_corpus(tmp_path: Path) -> None:
    """`workspace.copy: [corpus]` with no corpus/ next to the copy: the shipped corpus is copied;
    a copy path that exists nowhere is a diagnostic at its line (validate, and before a run)."""
    shutil.copy(REPO / "examples" / "react.yaml", tmp_path / "react.yaml")
    for rel in ("agents.d/explorer.yaml", "prompts/explorer.md.j2"):
        (tmp_path / rel).parent.mkdir(exist_ok=True)
        shutil.copy(REPO / "examples" / rel, tmp_path / rel)
    proc = run_cli(["react.yaml", "--question", "sorting", "--dry-run", "--run-id", "r"], cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "←" not in proc.stderr, proc.stderr
    assert (tmp_path / "runs" / "r" / "corpus" / "howto" / "sorting.md").is_file()
    text = (tmp_path / "react.yaml").read_text()
    (tmp_path / "react.yaml").write_text(text.replace("copy: [corpus]", "copy: [corpsu]"))
    for args in (["validate", "react.yaml"], ["react.yaml", "--question", "q", "--dry-run"]):
        proc = run_cli(args, cwd=tmp_path)
        assert proc.returncode == 1, proc.stderr
        out = proc.stdout + proc.stderr
        assert "react.yaml:63:10: error[missing-path]: workspace.copy: 'corpsu' not found" in out, out
        assert "did you mean 'corpus'?" in out


def test_problems_of_agents_a_run_never_uses_do_not_stop_it(tmp_path: Path) -> None:
    """react.yaml copied with every example agent, cited_writer (which react never uses) naming
    an output schema that exists nowhere. validate of the folder reports it, validate of
    react.yaml does not (a neighbour's problem); the react run goes on; a chat with
    cited_writer, or a workflow that uses it, is stopped by it."""
    shutil.copy(REPO / "examples" / "react.yaml", tmp_path / "react.yaml")
    shutil.copy(REPO / "examples" / "research_cited.yaml", tmp_path / "research_cited.yaml")
    for folder in ("agents.d", "prompts"):
        shutil.copytree(REPO / "examples" / folder, tmp_path / folder)
    writer = tmp_path / "agents.d" / "cited_writer.yaml"
    writer.write_text(writer.read_text().replace("citations.schema.json", "nowhere.schema.json"))
    problem = "agents.d/cited_writer.yaml:13:16: error[missing-schema]"
    validated = run_cli(["validate", "."], cwd=tmp_path)
    assert validated.returncode == 1 and problem in validated.stdout
    validated = run_cli(["validate", "--strict", "react.yaml"], cwd=tmp_path)
    assert validated.returncode == 0 and "cited_writer" not in validated.stdout, validated.stdout
    proc = run_cli(["react.yaml", "--question", "sorting", "--dry-run", "--run-id", "r", "-q"], cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    for args in (
        ["research_cited.yaml", "--question", "q", "--dry-run"],
        ["chat", "react.yaml", "--agent", "cited_writer", "--question", "q", "--dry-run"],
    ):
        proc = run_cli(args, cwd=tmp_path)
        assert proc.returncode == 1 and problem in proc.stderr, proc.stderr


def test_the_wheel_ships_the_corpus(tmp_path: Path) -> None:
    """The wheel (built by hatchling, the build backend) holds the corpus next to the built-in
    manifests, and flowrun run from that wheel finds it for a copy of the example."""
    import subprocess
    import sys
    import zipfile

    build = subprocess.run(
        [sys.executable, "-m", "hatchling", "build", "-t", "wheel", "-d", str(tmp_path / "dist")],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert build.returncode == 0, build.stderr
    [wheel] = (tmp_path / "dist").glob("flowrun-*.whl")
    with zipfile.ZipFile(wheel) as archive:
        names = archive.namelist()
        archive.extractall(tmp_path / "site")
    assert "flowrun/_builtin/examples/corpus/howto/sorting.md" in names
    assert "flowrun/_builtin/tools.d/web_search.yaml" in names
    work = tmp_path / "elsewhere"
    work.mkdir()
    shutil.copy(REPO / "examples" / "research.yaml", work / "research.yaml")
    env = {"PYTHONPATH": str(tmp_path / "site")}
    code = "import sys, flowrun.cli; sys.exit(flowrun.cli.main())"
    args = ["research.yaml", "--question", "sorting", "--dry-run", "--run-id", "r", "-q"]
    proc = subprocess.run(
        [sys.executable, "-c", code, *args], cwd=work, env=env, capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 0, proc.stderr
    results = [
        e for e in events(work / "runs" / "r") if e["type"] == "tool_result" and e["tool"] == "web_search"
    ]
    assert results and results[0]["result"]["status"] == "success"
    assert "_builtin/examples/corpus" in json.dumps(results[0]["result"]["data"]["results"])
    # the web UI's pages ship too (no build step), and the report is drawn from them
    for page in ("index.html", "static/app.js", "static/report.js", "static/timeline.js", "static/style.css"):
        assert f"flowrun/serve/ui/{page}" in names
    report = subprocess.run(
        [sys.executable, "-c", code, "show", "runs/r", "--html", "r.html"],
        cwd=work,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert report.returncode == 0, report.stderr
    assert "function timeAxis(" in (work / "r.html").read_text()  # (the timeline module, inlined)


def test_every_shipped_workflow_is_dry_run_above() -> None:
    shipped = {
        str(p.relative_to(REPO / "examples").with_suffix(""))
        for p in [*REPO.glob("examples/*.yaml"), *REPO.glob("examples/*/*.yaml")]
        if p.read_text().lstrip().startswith(("version", "#")) and "\nkind: workflow" in p.read_text()
    }
    assert shipped == set(EXAMPLES)


UNFAMILIAR = {
    "wf.yaml": """\
        version: 1
        kind: workflow
        name: unfamiliar
        inputs: {topic: {}}
        entry: lead
        default_model: "test:x"
        """,
    "agents.d/lead.yaml": """\
        version: 1
        name: lead
        prompt: Lead the work on {{ topic }}.
        tools: [shape, wc, impossible, {reviewer: {max_calls: 2}}]
        """,
    # a reviewer that only reads: nothing of its own to read in the dry run
    "agents.d/reviewer.yaml": "version: 1\nname: reviewer\nprompt: Review.\ntools: [read_file, grep]\n",
    "tools.d/shape.yaml": """\
        version: 1
        name: shape
        description: A tool whose schema uses the constraints tool authors use.
        parameters:
          type: object
          $defs:
            lang: {type: string, enum: [en, fr]}
          properties:
            text: {type: string, minLength: 5, maxLength: 40}
            code: {type: string, pattern: "^[A-Z]{3}-\\\\d{2}$"}
            colour: {type: string, pattern: "^#[0-9a-f]{6}$"}
            tags: {type: array, items: {type: string, pattern: "^[a-z]+$"}, minItems: 2, uniqueItems: true}
            ratio: {type: number, exclusiveMinimum: 0, maximum: 0.5}
            even: {type: integer, minimum: 3, maximum: 9, multipleOf: 2}
            when: {type: string, format: date}
            contact: {type: string, format: email}
            pick: {anyOf: [{type: "null"}, {type: integer, minimum: 10}]}
            options:
              allOf:
                - {type: object, properties: {lang: {$ref: "#/$defs/lang"}}, required: [lang]}
                - {properties: {level: {type: integer, minimum: -5, maximum: -1}}, required: [level]}
          required: [text, code, colour, tags, ratio, even, when, contact, pick, options]
          additionalProperties: false
        implementation:
          python: mytools:shape
        """,
    "tools.d/impossible.yaml": """\
        version: 1
        name: impossible
        description: No value can satisfy this schema.
        parameters:
          type: object
          properties:
            n: {type: integer, minimum: 5, maximum: 4}
          required: [n]
        implementation:
          python: mytools:impossible
        """,
    "tools.d/wc.yaml": """\
        version: 1
        name: wc
        description: Count the lines of a file.
        parameters: {type: object, properties: {path: {type: string}}, required: [path]}
        implementation:
          command: [wc, -l, "{{ path }}"]
        """,
    "mytools.py": """\
        import json
        from flowrun.types import ToolResult

        async def shape(ctx, **arguments):
            return ToolResult.ok(json.dumps(arguments, sort_keys=True))

        async def impossible(ctx, n):
            return ToolResult.ok(str(n))
        """,
}


def test_unfamiliar_tools_get_valid_arguments(tmp_path: Path) -> None:
    """A new roster of the user's own: schema constraints (pattern, format, multipleOf, bounds,
    uniqueItems, anyOf, allOf, $ref), a command tool and a reviewer that only reads all run
    without an error line; a tool no valid arguments exist for is left out and named; with
    --workdir the user's files are not touched."""
    write_files(tmp_path, UNFAMILIAR)
    proc = run_cli(["wf.yaml", "--topic", "t", "--dry-run", "--run-id", "r"], cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "←" not in proc.stderr, proc.stderr
    found = events(tmp_path / "runs" / "r")
    results = {e["tool"]: e["result"] for e in found if e["type"] == "tool_result"}
    assert set(results) == {"shape", "wc", "reviewer", "read_file", "grep"}
    assert all(r["status"] == "success" for r in results.values()), results
    shaped = json.loads(results["shape"]["text"])
    assert shaped["even"] % 2 == 0 and 0 < shaped["ratio"] <= 0.5 and shaped["pick"] >= 10
    assert shaped["options"]["lang"] == "en" and shaped["options"]["level"] <= -1
    assert len(set(shaped["tags"])) == 2
    [lead_end] = [e for e in found if e["type"] == "model_response" and e["agent"] == "lead"][-1:]
    assert "Left out (no valid arguments could be made for them): impossible" in json.dumps(lead_end)

    project = tmp_path / "project"
    (project / "src").mkdir(parents=True)
    (project / "src" / "app.py").write_text("print('mine')\n")
    args = ["wf.yaml", "--topic", "t", "--dry-run", "--run-id", "w", "--workdir", str(project)]
    proc = run_cli(args, cwd=tmp_path)
    assert proc.returncode == 0 and "←" not in proc.stderr, proc.stderr
    results = {e["tool"]: e["result"] for e in events(tmp_path / "runs" / "w") if e["type"] == "tool_result"}
    assert results["wc"]["context"]["params_input"]["path"] == "dry-run/lead-sample.md"
    assert (project / "src" / "app.py").read_text() == "print('mine')\n"
