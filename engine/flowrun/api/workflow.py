"""A workflow loaded and checked (`flowrun.load`), ready to run any number of times: a new run
(`run`, `run_sync`, `stream`, `chat`), its models checked against the options, and its worst-case
cost before anything is sent."""

from __future__ import annotations

import asyncio
import dataclasses
import time
from collections.abc import AsyncIterator, Iterable, Mapping
from contextlib import asynccontextmanager
from pathlib import Path
from typing import TYPE_CHECKING

from flowrun.api.handle import RunHandle
from flowrun.api.launch import check_credentials, execute, new_run, new_run_id, probe_sandbox, tightened
from flowrun.api.results import RunResult
from flowrun.api.stream import EventStream
from flowrun.errors import UsageError
from flowrun.manifest.checks.checked import checked_project
from flowrun.manifest.checks.relevance import blocking
from flowrun.manifest.diagnostics import Diagnostic, ManifestInvalid
from flowrun.manifest.graph import run_agents, workflow_agents
from flowrun.manifest.inputs import resolve_inputs
from flowrun.manifest.model_config import reference_problem
from flowrun.manifest.overrides import Override, apply_overrides, parse_overrides
from flowrun.manifest.project import Loaded, Project, load_project
from flowrun.manifest.schema.check import did_you_mean
from flowrun.manifest.specs import InputSpec, WorkflowManifest
from flowrun.paths import exists, is_dir, is_file, refuse_long_name
from flowrun.runtime.durable.run_folder import RunFolderLock, check_run_id, claim_new
from flowrun.runtime.loop.approvals import Approver
from flowrun.runtime.models.calls import ModelChoice
from flowrun.runtime.models.prefetch import prefetch as prefetch_sdks
from flowrun.runtime.options import (
    AskUser,
    Conversation,
    Interjection,
    OnEvent,
    ReadMessage,
    RunChanges,
    RunHooks,
    RunOptions,
)
from flowrun.runtime.seeding import preflight

if TYPE_CHECKING:
    from typing_extensions import Unpack

    from flowrun.manifest.ceiling import Preview

# the keyword arguments of Workflow.run besides the options (for the did-you-mean of a typo)
RUN_KEYWORDS: tuple[str, ...] = ("options", "run_dir", "runs_dir", "run_id", "on_event", "ask_user")
RUN_KEYWORDS += ("approve", "conversation", "interject")


class RunPlace(RunChanges, total=False):
    """`Workflow.run`'s keyword arguments but the callbacks `on_event` and `conversation`: what
    `stream` passes on."""

    run_dir: str | Path | None
    runs_dir: str | Path
    run_id: str | None
    ask_user: AskUser | None
    approve: Approver | None


class RunArguments(RunPlace, total=False):
    """`Workflow.run`'s keyword arguments but `conversation`: what `run_sync` and `chat` pass on."""

    on_event: OnEvent | None


ModelChoiceArg = str | Mapping[str, str] | None


class Workflow:
    """A checked workflow, ready to run any number of times."""

    def __init__(
        self,
        path: Path,
        project: Project,
        loaded: Loaded[WorkflowManifest],
        overrides: list[Override] | None = None,
        diagnostics: list[Diagnostic] | None = None,
    ) -> None:
        self.path = path
        self.project = project
        self.loaded = loaded
        self.overrides = list(overrides or [])  # the --set changes this workflow was loaded with
        self.diagnostics = list(diagnostics or [])  # the project's problems (none stops this workflow)
        # the model choices whose SDKs were started importing: a second run with the same ones
        # skips working them out again (runtime/models/prefetch.py; 0.1-0.2 ms a batch item)
        self._prefetched: set[tuple[object, ...]] = set()

    @property
    def spec(self) -> WorkflowManifest:
        return self.loaded.spec

    @property
    def name(self) -> str:
        return self.spec.name

    @property
    def inputs(self) -> dict[str, InputSpec]:
        return dict(self.spec.inputs)

    async def run(
        self,
        inputs: Mapping[str, object] | None = None,
        options: RunOptions | None = None,
        *,
        run_dir: str | Path | None = None,
        runs_dir: str | Path = "runs",
        run_id: str | None = None,
        on_event: OnEvent | None = None,
        ask_user: AskUser | None = None,
        approve: Approver | None = None,
        conversation: Conversation | None = None,
        interject: Interjection | None = None,
        **changes: Unpack[RunChanges],
    ) -> RunResult:
        """Run the workflow in a new run folder (`run_dir`, else `runs_dir/run_id`, else
        `runs_dir/<timestamp>-<name>-<hex>`). How it runs is `options` (a flowrun.RunOptions)
        with `changes` over it: any of its fields as keyword arguments (`dry_run=True`,
        `model="openai:gpt-4o"`, `sandbox="off"`, ...; see runtime/options.py), an unknown name
        being a UsageError. `model` may also map agent names to models (key "*": every other
        agent); `workdir` is relative to the current folder (over the workflow's
        `workspace.dir`); `overrides` (`--set` texts) are applied on top of those the workflow
        was loaded with; `limits` ({"max_cost_usd": 0.5, ...}) tightens the workflow's
        `limits:` where it is lower. The callbacks are not options (run.json records the
        options, not them): `on_event(event)` gets each typed event; `ask_user` answers the
        agents' questions; `approve` is awaited with an ApprovalRequest for each call of an
        `approve: ask` tool and returns True to let it run, False to refuse it. Without them
        (or when they return None: "later"), the run waits: it ends `waiting` (exit code 75)
        with `pending` listing what it waits for, `flowrun.respond` takes each decision and
        `flowrun.resume` continues; with `decisions="refuse"` such calls are refused and
        questions unanswered instead. `yes` approves every call. `interject` is the pause key
        (runtime/options.Interjection: a message for the running agent, recorded)."""
        opts = RunOptions.given(options, changes, RUN_KEYWORDS)
        hooks = RunHooks(on_event, ask_user, approve, conversation, interject)
        return await self.with_overrides(opts.overrides)._run_new(
            inputs, opts, hooks, run_dir, runs_dir, run_id
        )

    async def _run_new(
        self,
        inputs: Mapping[str, object] | None,
        options: RunOptions,
        hooks: RunHooks,
        run_dir: str | Path | None,
        runs_dir: str | Path,
        run_id: str | None,
    ) -> RunResult:
        self.check_models(options)
        values = resolve_inputs(self.spec.inputs, dict(inputs or {}), self.name)
        options = dataclasses.replace(
            options, workdir=self.agents_folder(values, options.workdir), overrides=self.override_texts
        )
        name = check_run_id(run_id) if run_id is not None else new_run_id(self.name, runs_dir)
        target = Path(run_dir) if run_dir is not None else Path(runs_dir) / name
        run = new_run(self.project, self.loaded, values, target, options, hooks)
        check_credentials(run)
        picked = (options.model, tuple(sorted(options.agent_models.items())), options.dry_run)
        if picked not in self._prefetched:  # the models these options pick
            self._prefetched.add(picked)
            prefetch_sdks(run.project, run.spec, run.models.choice)
        await probe_sandbox(run)  # before the folder exists: `required` fails closed here
        preflight(run)  # a seed, an output or a workdir of the wrong type: one line, no folder made
        async with RunFolderLock(target):
            claim_new(target)
            return await execute(run)

    def start(
        self,
        inputs: Mapping[str, object] | None = None,
        options: RunOptions | None = None,
        **arguments: Unpack[RunArguments],
    ) -> RunHandle:
        """Start `run()` in the background on the running event loop (call it from a
        coroutine) and return its handle at once: `handle.run_dir` is known before the run
        begins, `handle.cancel()` stops it resumably, `await handle.result()` gives how it
        ended (a cancelled run's partial result: status `cancelled`, what each agent had
        said, usage and cost so far). The arguments are `run()`'s."""
        if arguments.get("run_dir") is None and arguments.get("run_id") is None:
            arguments["run_id"] = new_run_id(self.name, arguments.get("runs_dir", "runs"))
        given = arguments.get("run_dir")
        run_dir = (
            Path(given)
            if given is not None
            else Path(arguments.get("runs_dir", "runs")) / str(arguments.get("run_id"))
        )
        return RunHandle(asyncio.create_task(self.run(inputs, options, **arguments)), run_dir)

    def run_sync(
        self,
        inputs: Mapping[str, object] | None = None,
        options: RunOptions | None = None,
        **arguments: Unpack[RunArguments],
    ) -> RunResult:
        """`run()` for scripts without an event loop."""
        return asyncio.run(self.run(inputs, options, **arguments))

    @asynccontextmanager
    async def stream(
        self,
        inputs: Mapping[str, object] | None = None,
        options: RunOptions | None = None,
        **arguments: Unpack[RunPlace],
    ) -> AsyncIterator[EventStream]:
        """Run in the background and iterate over its events; leaving the block early cancels
        the run (it stays resumable). The arguments are `run()`'s, but `on_event`."""
        events = EventStream()
        task = asyncio.create_task(self.run(inputs, options, on_event=events.put, **arguments))
        events.attach(task)
        try:
            yield events
        finally:
            if not task.done():
                task.cancel()
            await asyncio.gather(task, return_exceptions=True)

    @property
    def override_texts(self) -> tuple[str, ...]:
        """The `--set` texts this workflow was loaded with (as run.json records them)."""
        return tuple(o.text for o in self.overrides)

    def with_overrides(self, texts: Iterable[str]) -> Workflow:
        """This workflow with more `--set` texts applied (loaded again with its own and them),
        or itself when it has them all already."""
        own = self.override_texts
        more = [text for text in texts if text not in own]
        return load(self.path, [*own, *more], prefetch=False) if more else self

    def prefetch(self) -> None:
        """Start importing the SDKs of the models its agents use, in a background thread
        (runtime/models/prefetch.py): a first run in this process then does not wait for them."""
        prefetch_sdks(self.project, self.spec, self.default_models())

    def default_models(self) -> ModelChoice:
        """The models its agents call when a run's options pick none."""
        return ModelChoice(
            self.project, dict(self.spec.models), self.spec.default_model, self.path.parent.resolve()
        )

    def cost_preview(
        self, options: RunOptions | None = None, inputs: Mapping[str, object] | None = None
    ) -> Preview:
        """The worst case of a run before anything is sent (manifest/ceiling.py): model calls
        and dollars per agent, per sub-agent tree and for the run under its limits, with the
        models `options` pick (`model`, `dry_run`) and its `limits` applied. Nothing is sent."""
        from flowrun.manifest.ceiling import preview

        opts = options or RunOptions()
        self.check_models(opts)
        loaded = self.loaded if not opts.limits else tightened(self.loaded, opts.limits)
        choice = ModelChoice(
            self.project,
            dict(self.spec.models),
            self.spec.default_model,
            self.path.parent.resolve(),
            dry_run=opts.dry_run,
            override=opts.model,
            per_agent=dict(opts.agent_models),
            replaying=True,  # nothing is sent: an unset ${VAR} in a model's settings is no error
        )
        return preview(loaded.spec, self.project, choice.config, inputs)

    def check_models(self, options: RunOptions) -> None:
        """The options' models exist (checked also for a dry run, which does not use them)."""
        self.model_choice({**({"*": options.model} if options.model else {}), **options.agent_models})

    def model_choice(self, model: ModelChoiceArg) -> tuple[str | None, dict[str, str]]:
        """(the model for every agent, the models of single agents), each checked (also for a
        dry run, which does not use them): UsageError names the bad one."""
        if model is None or isinstance(model, str):
            every, per_agent = model, {}
        else:
            per_agent = {str(k): str(v) for k, v in model.items()}
            every = per_agent.pop("*", None)
        named = set(self.spec.models) | set(self.project.models)
        for agent, ref in [("*", every), *per_agent.items()]:
            if ref is None:
                continue
            shown = ref if agent == "*" else f"{agent}={ref}"
            if problem := reference_problem(ref, named):
                hint = did_you_mean(ref, named) or "a name from the workflow's `models:`, or provider:model"
                raise UsageError(f"--model {shown}: {problem}", hint)
        agents = run_agents(self.spec, self.project)
        for agent in per_agent:
            if agent not in agents:
                hint = did_you_mean(agent, agents) or "its agents: " + ", ".join(sorted(agents))
                raise UsageError(f"--model {agent}=...: the workflow runs no agent '{agent}'", hint)
        return every, per_agent

    async def chat(
        self,
        read: ReadMessage,
        inputs: Mapping[str, object] | None = None,
        options: RunOptions | None = None,
        *,
        agent: str | None = None,
        **arguments: Unpack[RunArguments],
    ) -> RunResult:
        """A conversation with one agent and its tools, saved as a run folder that `resume`
        continues. `read(answer)` is awaited for each user message: first with None (the first
        message, which is the agent's task), then with the agent's last answer; it returns the
        next message, or None to end. `agent` defaults to the workflow's entry (or first step's)
        agent; `options` and the keyword arguments are `run()`'s."""
        name = self.chat_agent(agent)
        return await self.run(inputs, options, conversation=Conversation(name, read, chat=True), **arguments)

    def chat_agent(self, agent: str | None = None) -> str:
        """The agent `chat` talks to: `agent`, else the entry (or first step's) agent; a
        UsageError naming the workflow's agents when there is no such agent."""
        name = agent or self.spec.entry or next((n for n, _ in workflow_agents(self.spec)), None)
        if name is None or name not in self.project.agents:
            own = run_agents(self.spec, self.project)
            hint = did_you_mean(str(name), own) or did_you_mean(str(name), set(self.project.agents))
            raise UsageError(
                f"no agent '{name}' to chat with", hint or "the workflow's agents: " + ", ".join(sorted(own))
            )
        if name not in run_agents(self.spec, self.project) and (
            errors := blocking(self.project, [name], self.diagnostics)
        ):
            raise ManifestInvalid(str(self.path), errors)
        return name

    def agents_folder(self, inputs: Mapping[str, object], workdir: str | Path | None) -> Path | None:
        """The folder the agents work in when it is not the run folder: `workdir` (relative to
        the current folder), else the workflow's `workspace.dir` (relative to its file)."""
        if workdir is not None:
            folder = Path(workdir).expanduser()
            what = f"--workdir {workdir}"
        elif self.spec.workspace.dir:
            from flowrun.manifest.templates import render

            variables = {**inputs, "inputs": dict(inputs), "date": time.strftime("%Y-%m-%d")}
            rendered = render(self.spec.workspace.dir, variables, what="workspace.dir").strip()
            folder = self.path.parent / Path(rendered).expanduser()
            what = f"workspace.dir {rendered}"
        else:
            return None
        refuse_long_name(folder, what)
        folder = folder.resolve()
        if folder == Path(folder.anchor) or folder in (Path.home().resolve(), Path("/usr"), Path("/etc")):
            raise UsageError(f"{what}: the agents may not work in {folder}", "give a project folder")
        if exists(folder) and not is_dir(folder):
            raise UsageError(f"{what}: {folder} is a file, not a folder", "give a folder")
        return folder


def load(
    path: str | Path, overrides: Mapping[str, object] | Iterable[str] | None = None, *, prefetch: bool = True
) -> Workflow:
    """Load and check a workflow file with its project folders and the built-ins. `overrides`
    change manifest values for this load: `["agents.worker.max_steps=5"]` (values read as YAML,
    like `--set`) or `{"agents.worker.max_steps": 5}`. Raises ManifestInvalid (with every
    diagnostic) when something is wrong. Unless `prefetch` is False, the SDKs of the models its
    agents use start importing in a background thread (runtime/models/prefetch.py), so a first
    run does not wait for them."""
    path = foreign_entry(Path(path))
    if not is_file(path):
        hint = "give the path of a workflow .yaml file"
        refuse_long_name(path, f"workflow file '{path}'", hint)
        what = "is not a regular file" if exists(path) else "does not exist"
        raise UsageError(f"workflow file '{path}' {what}", hint)
    changes = parse_overrides(overrides)
    project, diagnostics = _overridden(path, changes) if changes else checked_project(path)
    if not project.workflows:
        raise ManifestInvalid(str(path), diagnostics)
    starts = [name for name, _ in workflow_agents(project.workflows[0].spec)]
    if errors := blocking(project, starts, diagnostics):  # not those of agents it never uses
        raise ManifestInvalid(str(path), errors)
    workflow = Workflow(path, project, project.workflows[0], changes, diagnostics)
    if prefetch:
        workflow.prefetch()
    return workflow


def foreign_entry(path: Path) -> Path:
    """The file that stands for another framework's project (a CrewAI crew's folder is its
    `config/tasks.yaml`, an ADK folder its `root_agent.yaml`); any other path as it is."""
    if not is_dir(path):
        return path
    from flowrun.manifest.foreign.registry import detect

    found = detect(path)
    return found.entry if found is not None else path


def _overridden(path: Path, changes: list[Override]) -> tuple[Project, list[Diagnostic]]:
    """The project with `--set` overrides applied: a copy of its own (never the one shared by
    loads of the unchanged files), checked again."""
    project = load_project(path.parent, [path])
    diagnostics: list[Diagnostic] = list(project.diagnostics)
    # (a file with errors still loads what it can, and a run stops only on the errors of what
    # it uses: the overrides and the cross-references apply whatever else is broken)
    if project.workflows:
        _, found = apply_overrides(project, project.workflows[0], changes)
        diagnostics += found
    from flowrun.manifest.checks.crossref import check_project  # (a load without --set: cached)

    return project, diagnostics + check_project(project)
