"""CrewAI crews run as they are: `config/agents.yaml` + `config/tasks.yaml` (with a crew.py read,
never run) and `crew.jsonc` + `agents/*.jsonc`, through the CLI and `flowrun.load`, against the
scripted model server over both wire formats: the tasks in order, each with the earlier outputs
as its context, the placeholders as inputs, a hierarchical crew's manager delegating to the
agents; problems reported at the line of the CrewAI file; `flowrun import` of a crew."""

from __future__ import annotations

from pathlib import Path

import pytest
from support.cli import run_cli
from support.env import WIRES, model_env, point_sdks
from support.project import write_files
from support.runs import events
from support.wire_server import Reply, Script, WireServer, call, calls

import flowrun

RESEARCHER = "{topic} Senior Researcher"
ANALYST = "{topic} Reporting Analyst"


def agents_yaml(wire: str) -> str:
    return f"""\
        researcher:
          role: "{RESEARCHER}"
          goal: "Find what matters about {{topic}}"
          backstory: You dig through sources.
          llm: {wire}/m
        reporting_analyst:
          role: "{ANALYST}"
          goal: "Write a report on {{topic}}"
          backstory: You turn notes into reports.
          llm: {wire}/m
        """


TASKS = """\
research_task:
  description: Research {topic} for {year}.
  expected_output: Ten bullet points.
  agent: researcher
reporting_task:
  description: Expand the notes into a report.
  expected_output: A markdown report.
  agent: reporting_analyst
  output_file: report.md
"""


def crew_script(topic: str) -> Script:
    return Script(
        {"researcher": [Reply("- point one\n- point two")], "analyst": [Reply("# Report\nfrom the points")]},
        {
            "researcher": f"You are {topic} Senior Researcher.",
            "analyst": f"You are {topic} Reporting Analyst.",
        },
    )


@pytest.mark.parametrize("wire", WIRES)
def test_a_yaml_crew_runs_its_tasks_in_order_with_the_context(tmp_path: Path, wire: str) -> None:
    crew = write_files(
        tmp_path / "crew", {"config/agents.yaml": agents_yaml(wire), "config/tasks.yaml": TASKS}
    )
    with WireServer(crew_script("AI")) as server:
        args = [str(crew), "--topic", "AI", "--year", "2025", "--run-id", "r"]
        proc = run_cli(args, cwd=tmp_path, env=model_env(server, wire))
        requests = server.requests
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert [r.system.split(".")[0] for r in requests] == [
        "You are AI Senior Researcher",
        "You are AI Reporting Analyst",
    ]
    first, second = requests
    assert (
        first.system == "You are AI Senior Researcher. You dig through sources.\n"
        "Your personal goal is: Find what matters about AI"
    )
    assert first.last_user_text.startswith("Current Task: Research AI for 2025.")
    assert "This is the expected criteria for your final answer: Ten bullet points." in first.last_user_text
    # the second task gets the first one's output as its context (CrewAI's default)
    assert "This is the context you're working with:\n- point one\n- point two" in second.last_user_text
    run = tmp_path / "runs" / "r"
    assert (run / "report.md").read_text() == "# Report\nfrom the points"
    assert (run / "crew" / "research_task.md").read_text().startswith("- point one")
    assert events(run)[-1]["status"] == "completed"


def test_context_names_the_tasks_whose_output_a_task_reads(tmp_path: Path) -> None:
    tasks = (
        TASKS
        + """\
review_task:
  description: Review the report.
  expected_output: A verdict.
  agent: researcher
  context: [reporting_task]
summary_task:
  description: Say done.
  expected_output: One word.
  agent: researcher
  context: []
"""
    )
    crew = write_files(
        tmp_path / "crew", {"config/agents.yaml": agents_yaml("openai"), "config/tasks.yaml": tasks}
    )
    script = Script(
        {
            "researcher": [Reply("- the notes")],
            "analyst": [Reply("THE REPORT")],
        },
        {"researcher": "Senior Researcher", "analyst": "Reporting Analyst"},
    )
    with WireServer(script) as server:
        args = [str(crew), "--topic", "AI", "--year", "2025", "--run-id", "r"]
        proc = run_cli(args, cwd=tmp_path, env=model_env(server, "openai"))
        requests = server.requests
    assert proc.returncode == 0, proc.stdout + proc.stderr
    review, summary = requests[2], requests[3]
    assert "context you're working with:\nTHE REPORT" in review.last_user_text
    assert "- the notes" not in review.last_user_text  # only the task it names
    assert "context you're working with" not in summary.last_user_text  # `context: []`: none


@pytest.mark.parametrize("wire", WIRES)
def test_a_hierarchical_crew_has_a_manager_that_delegates(tmp_path: Path, wire: str) -> None:
    crew_py = f"""\
        from crewai import Agent, Crew, Process, Task
        from crewai.project import CrewBase, agent, crew, task
        raise SystemExit("crew.py was run")  # flowrun reads it with ast, never runs it

        @CrewBase
        class ResearchCrew:
            @agent
            def researcher(self) -> Agent:
                return Agent(config=self.agents_config["researcher"])

            @agent
            def reporting_analyst(self) -> Agent:
                return Agent(config=self.agents_config["reporting_analyst"])

            @task
            def research_task(self) -> Task:
                return Task(config=self.tasks_config["research_task"])

            @crew
            def crew(self) -> Crew:
                return Crew(agents=self.agents, tasks=self.tasks, process=Process.hierarchical,
                            manager_llm="{wire}/m")
        """
    tasks = """\
        research_task:
          description: Research {topic} for {year}.
          expected_output: Ten bullet points.
        """
    files = {"config/agents.yaml": agents_yaml(wire), "config/tasks.yaml": tasks, "crew.py": crew_py}
    crew = write_files(tmp_path / "crew", files)
    script = Script(
        {
            "manager": [
                Reply(tool_calls=[call("researcher", task="Find three facts on AI.")]),
                Reply("Done: 3 facts"),
            ],
            "researcher": [Reply("fact 1, fact 2, fact 3")],
        },
        {"manager": "You are Crew Manager.", "researcher": "Senior Researcher"},
    )
    with WireServer(script) as server:
        args = [str(crew), "--topic", "AI", "--year", "2025", "--run-id", "r"]
        proc = run_cli(args, cwd=tmp_path, env=model_env(server, wire))
        requests = server.requests
    assert proc.returncode == 0, proc.stdout + proc.stderr
    manager = [r for r in requests if r.system.startswith("You are Crew Manager.")]
    assert {"researcher", "reporting_analyst"} <= set(manager[0].tool_names)
    researcher = next(r for r in requests if "Senior Researcher" in r.system)
    assert researcher.last_user_text == "Find three facts on AI."
    assert "fact 1, fact 2, fact 3" in manager[1].tool_results[0][1]
    log = events(tmp_path / "runs" / "r")
    assert [e["agent"] for e in log if e["type"] == "agent_start"] == ["crew_manager", "researcher"]


JSON_CREW = """\
    {
      // a JSON-first crew (CrewAI 1.15)
      "name": "Research Crew",
      "agents": ["researcher", "analyst"],
      "tasks": [
        {"name": "research", "description": "Research {topic}.", "expected_output": "Notes.",
         "agent": "researcher"},
        {"name": "analysis", "description": "Analyse.", "expected_output": "A report.",
         "agent": "analyst", "context": ["research"], "output_file": "output/report.md", "markdown": true,},
      ],
      "process": "sequential",
      "inputs": {"topic": "AI Agents"}
    }
    """


def json_agent(role: str, wire: str) -> str:
    return (
        f'{{"role": "{role}", "goal": "Do it.", "backstory": "Seasoned.", "llm": "{wire}/m",\n'
        '  // built-in tools map to flowrun\'s\n  "tools": ["SerperDevTool"], "settings": {"max_iter": 4}}\n'
    )


@pytest.mark.parametrize("wire", WIRES)
def test_a_json_crew_runs_through_the_python_api(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, wire: str
) -> None:
    files = {
        "crew.jsonc": JSON_CREW,
        "agents/researcher.jsonc": json_agent("Researcher of {topic}", wire),
        "agents/analyst.jsonc": json_agent("Analyst", wire),
    }
    crew = write_files(tmp_path / "crew", files)
    script = Script(
        {"researcher": [Reply("notes on agents")], "analyst": [Reply("# Report")]},
        {"researcher": "You are Researcher of AI Agents.", "analyst": "You are Analyst."},
    )
    with WireServer(script) as server:
        point_sdks(monkeypatch, server, wire)
        wf = flowrun.load(crew)
        assert wf.name == "research-crew" and wf.inputs["topic"].default == "AI Agents"
        result = wf.run_sync(runs_dir=tmp_path / "runs", run_id="r")
        requests = server.requests
    assert result.status == "completed", result
    assert "web_search" in requests[0].tool_names  # SerperDevTool
    assert "context you're working with:\nnotes on agents" in requests[1].last_user_text
    assert "Your final answer MUST be formatted in Markdown syntax." in requests[1].last_user_text
    assert (tmp_path / "runs" / "r" / "output" / "report.md").read_text() == "# Report"
    assert wf.project.agents["researcher"].spec.max_steps == 4


def test_problems_point_at_the_crewai_files(tmp_path: Path) -> None:
    agents = """\
        researcher:
          role: R
          goal: G
          backstroy: B
        """
    tasks = """\
        research_task:
          description: D
          expected_output: E
          agent: reseacher
        """
    crew = write_files(tmp_path / "crew", {"config/agents.yaml": agents, "config/tasks.yaml": tasks})
    proc = run_cli(["validate", str(crew)], cwd=tmp_path)
    assert proc.returncode == 1
    out = proc.stdout
    assert "crew/config/agents.yaml:4:3: error[unknown-key]: unknown key 'backstroy' in a CrewAI agent" in out
    assert "did you mean 'backstory'?" in out
    assert (
        "crew/config/tasks.yaml:4:10: error[unknown-agent]: "
        "task 'research_task' names unknown agent 'reseacher'" in out
    )
    broken = write_files(
        tmp_path / "json", {"crew.jsonc": '{\n  "agents": [],\n  "tasks": [\n    {"name": }\n  ]\n}\n'}
    )
    proc = run_cli(["validate", str(broken / "crew.jsonc")], cwd=tmp_path)
    assert proc.returncode == 1
    assert "json/crew.jsonc:4:14: error[json-syntax]: JSON syntax error: Expecting value" in proc.stdout


def test_crew_py_tools_map_to_builtins_and_its_own_tools_are_named(tmp_path: Path) -> None:
    crew_py = """\
        from crewai_tools import SerperDevTool, ScrapeWebsiteTool
        from my_crew.tools.custom_tool import MyCustomTool
        open("ran.txt", "w").write("crew.py was run")

        @CrewBase
        class MyCrew:
            @agent
            def researcher(self) -> Agent:
                return Agent(config=self.agents_config["researcher"],
                             tools=[SerperDevTool(), ScrapeWebsiteTool()],
                             max_iter=7)

            @agent
            def reporting_analyst(self) -> Agent:
                return Agent(config=self.agents_config["reporting_analyst"], tools=[MyCustomTool()])
        """
    files = {"config/agents.yaml": agents_yaml("openai"), "config/tasks.yaml": TASKS, "crew.py": crew_py}
    crew = write_files(tmp_path / "crew", files)
    proc = run_cli(["validate", str(crew)], cwd=tmp_path)
    assert proc.returncode == 1
    assert "crew/crew.py:15:76: error[python-tool]: tool 'MyCustomTool'" in proc.stdout
    assert "tools.d/MyCustomTool.yaml" in proc.stdout
    assert not (tmp_path / "ran.txt").exists() and not (crew / "ran.txt").exists()
    # without the custom tool, the crew validates: the built-ins are flowrun's
    crew_py = crew_py.replace("tools=[MyCustomTool()]", "tools=[]")
    write_files(crew, {"crew.py": crew_py})
    proc = run_cli(["validate", str(crew)], cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout
    wf = flowrun.load(crew)
    researcher = wf.project.agents["researcher"].spec
    assert researcher.tool_list == ["web_search", "visit_url"] and researcher.max_steps == 7


def test_import_writes_a_project_that_validates_and_dry_runs(tmp_path: Path) -> None:
    agents = agents_yaml("openai").replace(
        "          llm: openai/m\n", "          llm: openai/m\n          verbose: true\n", 1
    )
    crew = write_files(tmp_path / "crew", {"config/agents.yaml": agents, "config/tasks.yaml": TASKS})
    proc = run_cli(["import", str(crew), "-o", "out"], cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    out = tmp_path / "out"
    names = sorted(p.relative_to(out).as_posix() for p in out.rglob("*") if p.is_file())
    assert names == [
        "IMPORTED.md",
        "agents.d/reporting_analyst.yaml",
        "agents.d/researcher.yaml",
        "crew.yaml",
        "prompts/reporting_analyst.md.j2",
        "prompts/researcher.md.j2",
    ]
    imported = (out / "IMPORTED.md").read_text()
    assert (
        "| `config/agents.yaml:6` | `researcher.verbose` | "
        "not used: it only changes what the framework prints |" in imported
    )
    assert (
        "| `config/tasks.yaml:5` | `reporting_task` | "
        "step 2: agent reporting_analyst, its answer written to report.md |" in imported
    )
    prompt = (out / "prompts" / "researcher.md.j2").read_text()
    assert (
        prompt == "You are {{ topic }} Senior Researcher. You dig through sources.\n"
        "Your personal goal is: Find what matters about {{ topic }}\n"
    )
    args = [str(out / "crew.yaml"), "--topic", "AI", "--year", "2025", "--dry-run", "--run-id", "d"]
    proc = run_cli(args, cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert (tmp_path / "runs" / "d" / "report.md").is_file()
    # a second import into the same folder: a usage error, nothing overwritten
    proc = run_cli(["import", str(crew), "-o", "out"], cwd=tmp_path)
    assert proc.returncode == 2 and "is not a new or empty folder" in proc.stderr


def test_import_says_why_nothing_runnable_can_be_made(tmp_path: Path) -> None:
    tasks = TASKS.replace("agent: researcher", "agent: nobody")
    crew = write_files(
        tmp_path / "crew", {"config/agents.yaml": agents_yaml("openai"), "config/tasks.yaml": tasks}
    )
    proc = run_cli(["import", str(crew), "-o", "out"], cwd=tmp_path)
    assert proc.returncode == 1
    assert (
        "crew/config/tasks.yaml:4:10: error[unknown-agent]: task 'research_task' names unknown agent 'nobody'"
        in proc.stderr
    )
    assert "nothing was written" in proc.stderr and not (tmp_path / "out").exists()
    proc = run_cli(
        ["import", str(tmp_path / "crew" / "config" / "agents.yaml"), "--format", "adk"], cwd=tmp_path
    )
    assert proc.returncode == 2


def test_human_input_is_a_question_the_run_waits_for(tmp_path: Path) -> None:
    tasks = TASKS.replace("  agent: researcher\n", "  agent: researcher\n  human_input: true\n")
    crew = write_files(
        tmp_path / "crew", {"config/agents.yaml": agents_yaml("openai"), "config/tasks.yaml": tasks}
    )
    script = Script(
        {
            "researcher": [calls(call("ask_user", question="Draft: - a. Looks good?")), Reply("- a")],
            "analyst": [Reply("# R")],
        },
        {"researcher": "Senior Researcher", "analyst": "Reporting Analyst"},
    )
    with WireServer(script) as server:
        env = model_env(server, "openai")
        args = [str(crew), "--topic", "AI", "--year", "2025", "--run-id", "r"]
        proc = run_cli(args, cwd=tmp_path, env=env)
        assert proc.returncode == 75, proc.stdout + proc.stderr  # waiting for the person's answer
        assert "ask_user" in server.requests[0].tool_names
        assert "show it to the person with ask_user" in server.requests[0].last_user_text
        proc = run_cli(["answer", str(tmp_path / "runs" / "r"), "looks good"], cwd=tmp_path, env=env)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert (tmp_path / "runs" / "r" / "report.md").read_text() == "# R"


def test_crew_py_names_bound_above_are_read_and_a_missing_config_entry_is_said_once(tmp_path: Path) -> None:
    """Crews often bind a tool or a model to a name first (`search_tool = SerperDevTool()` at
    the top, `llm = LLM(...)` in the class, a local in the method) and pass the name; older ones
    pass a LangChain chat model. A config entry crew.py reads that the YAML lacks is one error
    at crew.py's line, not one per missing key."""
    crew_py = """\
        from crewai import LLM
        from crewai_tools import SerperDevTool, ScrapeWebsiteTool
        from langchain_openai import ChatOpenAI
        search_tool = SerperDevTool()

        @CrewBase
        class MyCrew:
            llm = LLM(model="anthropic/claude-sonnet-4-5")

            @agent
            def researcher(self) -> Agent:
                scrape = ScrapeWebsiteTool()
                return Agent(config=self.agents_config["researcher"],
                             tools=[search_tool, scrape], llm=self.llm)

            @agent
            def reporting_analyst(self) -> Agent:
                return Agent(config=self.agents_config["reporting_analyst"],
                             llm=ChatOpenAI(model="gpt-4o-mini"))
        """
    agents = agents_yaml("openai").replace("llm: openai/m", "")
    files = {"config/agents.yaml": agents, "config/tasks.yaml": TASKS, "crew.py": crew_py}
    crew = write_files(tmp_path / "crew", files)
    proc = run_cli(["validate", str(crew)], cwd=tmp_path)
    assert proc.returncode == 0 and "0 error(s), 0 warning(s)" in proc.stdout, proc.stdout
    wf = flowrun.load(crew)
    researcher, analyst = (wf.project.agents[n].spec for n in ("researcher", "reporting_analyst"))
    assert researcher.tool_list == ["web_search", "visit_url"]
    models = {name: (spec.provider, spec.model) for name, spec in wf.spec.models.items()}
    assert models[str(researcher.model)] == ("anthropic", "claude-sonnet-4-5")
    assert models[str(analyst.model)] == ("openai", "gpt-4o-mini")

    write_files(
        crew, {"crew.py": crew_py.replace('agents_config["researcher"]', 'agents_config["researcher_x"]')}
    )
    proc = run_cli(["validate", str(crew)], cwd=tmp_path)
    assert proc.returncode == 1
    errors = [line for line in proc.stdout.splitlines() if "error[" in line]
    assert len(errors) == 1, proc.stdout
    assert (
        "crew/crew.py:13:29: error[missing-key]: crew.py reads CrewAI agent 'researcher_x' from "
        "config/agents.yaml, which does not define it" in errors[0]
    )
