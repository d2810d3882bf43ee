"""The Python API: load a workflow, run it, resume or replay a run folder.

    import flowrun

    wf = flowrun.load("examples/research.yaml")           # ManifestInvalid lists every problem
    result = await wf.run({"question": "..."}, dry_run=True)
    print(result.status, result.output, result.usage["total_tokens"])
    options = flowrun.RunOptions(model="openai:gpt-4o", sandbox="off")   # as run.json records them
    result = await wf.run({"question": "..."}, options, on_event=print)  # the callbacks: keyword arguments

    async with wf.stream({"question": "..."}, dry_run=True) as events:   # typed events as they happen
        async for event in events:
            ...
    print(events.result.status)

Cancelling the task that awaits `run()` stops the run the way Ctrl-C does: the folder is kept,
`run.json` says `interrupted`, and `flowrun.resume(run_dir)` continues it.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import shutil
import tempfile
import time
import uuid
from collections.abc import AsyncIterator, Iterable, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, cast

from flowrun.errors import ManifestError, RunError, UsageError
from flowrun.events import Event
from flowrun.manifest.checks.checked import checked_project
from flowrun.manifest.checks.relevance import blocking
from flowrun.manifest.diagnostics import Diagnostic, ManifestInvalid
from flowrun.manifest.env_refs import UnsetVariable, unset_diagnostics
from flowrun.manifest.graph import run_agents, workflow_agents
from flowrun.manifest.inputs import resolve_inputs
from flowrun.manifest.model_config import reference_problem
from flowrun.manifest.overrides import Override, apply_overrides, parse_overrides
from flowrun.manifest.project import Loaded, Project, load_project
from flowrun.manifest.schema_check import did_you_mean
from flowrun.manifest.specs import InputSpec, Limits, WorkflowManifest
from flowrun.paths import claim_folder, exists, is_dir, is_file, refuse_long_name
from flowrun.pinned import read_json_object
from flowrun.providers.clients import keep_imported
from flowrun.records import ReplayDivergence, RunRecord, UsageRecord, run_record
from flowrun.runtime.decide import expire_locked
from flowrun.runtime.durable.decisions import PendingDecision
from flowrun.runtime.durable.event_log import read_lines
from flowrun.runtime.durable.ledger import Ledger
from flowrun.runtime.durable.run_folder import (
    RunFolderLock,
    check_records,
    check_run_id,
    claim_new,
    never_started,
    not_a_run_folder,
    settled_meta,
    unwritable,
)
from flowrun.runtime.durable.run_log import RunLog
from flowrun.runtime.execute import EXIT_CODES, RunSummary, execute_run
from flowrun.runtime.loop.approvals import Approver
from flowrun.runtime.loop.sandboxes import sandbox_modes, startup_check
from flowrun.runtime.models.calls import ModelChoice
from flowrun.runtime.models.credentials import missing_credentials
from flowrun.runtime.models.prefetch import prefetch as prefetch_sdks
from flowrun.runtime.options import (
    FIELDS,
    AskUser,
    Conversation,
    Interjection,
    OnEvent,
    ReadMessage,
    RunChanges,
    RunHooks,
    RunOptions,
    unknown_option,
)
from flowrun.runtime.run import Run
from flowrun.runtime.seeding import preflight
from flowrun.runtime.telemetry.live import live_export
from flowrun.tools import sandbox

if TYPE_CHECKING:
    from typing_extensions import Unpack

    from flowrun.manifest.ceiling import Preview

# the keyword arguments of Workflow.run besides the options (for the did-you-mean of a typo)
RUN_KEYWORDS: tuple[str, ...] = ("options", "run_dir", "runs_dir", "run_id", "on_event", "ask_user")
RUN_KEYWORDS += ("approve", "conversation", "interject")
# what a resumed run keeps from its recording (the rest may change: sandbox, yes, verbosity, ...)
RECORDED_FOR_GOOD = ("model", "agent_models", "dry_run", "no_thinking", "workdir", "overrides")
REPLAY_CHANGES = ("sandbox", "verbosity")  # a replay runs with the recorded options but these


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


@dataclass
class RunResult:
    status: str  # completed | failed | max_steps | budget_exceeded | waiting | interrupted
    exit_code: int  # the CLI's exit code for this status
    message: str  # the final answer, or what went wrong (or what the run waits for)
    output: Path | None  # the workflow's declared output, when written
    usage: UsageRecord  # tokens and cost per agent and model, totals (as usage.json)
    run_dir: Path
    # waiting: the decisions it waits for (take them with flowrun.respond, then flowrun.resume)
    pending: list[PendingDecision] = field(default_factory=list)

    @property
    def run_id(self) -> str:
        return self.run_dir.name

    @property
    def ok(self) -> bool:
        return self.status == "completed"


@dataclass
class ReplayResult(RunResult):
    recorded_status: str = ""
    declared_output: str | None = None  # the workflow's `output`, relative to the run folder
    # True/False when the workflow declares an output and both runs ended alike; None otherwise
    output_reproduced: bool | None = None
    # where the replay first differed from the recording: {agent, agent_id, step, reason, message}
    # (reason: missing, system, tools or history); None when every call matched
    divergence: ReplayDivergence | None = None
    differences: list[str] = field(default_factory=list)  # what differed there, for people


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
        run = self._new_run(values, target, options, hooks)
        _check_credentials(run)
        picked = (options.model, tuple(sorted(options.agent_models.items())), options.dry_run)
        if picked not in self._prefetched:  # the models these options pick
            self._prefetched.add(picked)
            prefetch_sdks(run.project, run.spec, run.models.choice)
        await _probe_sandbox(run)  # before the folder exists: `required` fails closed here
        preflight(run)  # a seed, an output or a workdir of the wrong type: one line, no folder made
        async with RunFolderLock(target):
            claim_new(target)
            return await _execute(run)

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

    def _new_run(
        self,
        inputs: dict[str, object],
        run_dir: Path,
        options: RunOptions,
        hooks: RunHooks,
        ledger: Ledger | None = None,
    ) -> Run:
        loaded = self.loaded if not options.limits else tightened(self.loaded, options.limits)
        return Run(self.project, loaded, inputs, run_dir, options, ledger, hooks)


class EventStream:
    """The events of a running workflow as an async iterator; `result` once it has ended."""

    def __init__(self) -> None:
        self._queue: asyncio.Queue[Event | None] = asyncio.Queue()
        self._task: asyncio.Task[RunResult] | None = None
        self._loop = asyncio.get_running_loop()

    def attach(self, task: asyncio.Task[RunResult]) -> None:
        self._task = task
        task.add_done_callback(lambda _: self._queue.put_nowait(None))

    def put(self, event: Event) -> None:
        # events may come from a tool's worker thread: hand them to the loop's thread
        self._loop.call_soon_threadsafe(self._queue.put_nowait, event)

    def __aiter__(self) -> EventStream:
        return self

    async def __anext__(self) -> Event:
        event = await self._queue.get()
        if event is None:
            raise StopAsyncIteration
        return event

    @property
    def result(self) -> RunResult:
        if self._task is None or not self._task.done():
            raise RunError("the run has not ended yet", "iterate over all events first")
        return self._task.result()


def load(
    path: str | Path, overrides: Mapping[str, object] | Iterable[str] | None = None, *, prefetch: bool = True
) -> Workflow:
    """Load and check a workflow file with its project folders and the built-ins. `overrides`
    change manifest values for this load: `["agents.worker.max_steps=5"]` (values read as YAML,
    like `--set`) or `{"agents.worker.max_steps": 5}`. Raises ManifestInvalid (with every
    diagnostic) when something is wrong. Unless `prefetch` is False, the SDKs of the models its
    agents use start importing in a background thread (runtime/models/prefetch.py), so a first
    run does not wait for them."""
    path = Path(path)
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


def _overridden(path: Path, changes: list[Override]) -> tuple[Project, list[Diagnostic]]:
    """The project with `--set` overrides applied: a copy of its own (never the one shared by
    loads of the unchanged files), checked again."""
    project = load_project(path.parent, [path])
    diagnostics: list[Diagnostic] = list(project.diagnostics)
    if project.workflows and not any(d.severity == "error" for d in diagnostics):
        _, found = apply_overrides(project, project.workflows[0], changes)
        diagnostics += found
    if not any(d.severity == "error" for d in diagnostics):
        from flowrun.manifest.checks.crossref import check_project  # (a load without --set: cached)

        diagnostics += check_project(project)
    return project, diagnostics


async def resume(
    run_dir: str | Path,
    *,
    on_event: OnEvent | None = None,
    ask_user: AskUser | None = None,
    approve: Approver | None = None,
    message: str | None = None,
    read: ReadMessage | None = None,
    interject: Interjection | None = None,
    **changes: object,
) -> RunResult:
    """Continue a stopped run (crash, kill, Ctrl-C, cancelled task) or a waiting one from its
    event log: recorded model answers, tool results and decisions (also those taken while it
    waited: `flowrun.respond`, `flowrun approve`) are used again, then the run goes live where
    the log ends; decisions past their deadline are taken first (denied, unanswered). It runs
    with the options it recorded (its models, dry run, `--set`s, workdir, sandbox, limits ...);
    `changes` (RunOptions field names: `sandbox`, `yes`, `verbosity`, `limits`, `stream`,
    `decisions`, `decide_within`) change them from here on, a None value keeping the recorded
    one. `message` is an instruction from the user to the entry agent (or the chat's
    agent) where the recorded run ends: a finished run continues with it. A chat goes on with
    `read` (as in `Workflow.chat`) when given. The callbacks are `Workflow.run`'s."""
    run_dir = Path(run_dir)
    changes = _changes(changes, RECORDED_FOR_GOOD, "a resumed run keeps its recorded {name}", RESUME_KEYWORDS)
    async with RunFolderLock(run_dir, create=False):  # one process at a time, before reading anything
        meta, workflow = recorded_run(run_dir)
        meta = settled_meta(run_dir, meta)  # died after its run_end: it ended
        expire_locked(run_dir)  # decisions past their deadline are taken (by "deadline") first
        talk = _resumed_conversation(meta, workflow, message, read)
        if meta.get("status") == "completed" and talk is None:
            return _recorded_result(run_dir, meta)
        options = RunOptions.from_record(meta).changed(RESUME_KEYWORDS, **changes)
        hooks = RunHooks(on_event, ask_user, approve, talk, interject)
        inputs = dict(meta.get("inputs") or {})
        if never_started(run_dir):  # stopped before its first event: it starts from the beginning
            run = workflow._new_run(inputs, run_dir, options, hooks)
            prefetch_sdks(run.project, run.spec, run.models.choice)
            await _probe_sandbox(run)
            return await _execute(run)
        ledger = Ledger.from_events(run_dir / "events.jsonl", "resume")
        run = workflow._new_run(inputs, run_dir, options, hooks, ledger)
        prefetch_sdks(run.project, run.spec, run.models.choice)
        await _probe_sandbox(run)
        return await _execute(run, resume=True)


RESUME_KEYWORDS = ("on_event", "ask_user", "approve", "message", "read", "interject")


async def replay(
    run_dir: str | Path,
    *,
    into: str | Path | None = None,
    diff: bool = False,
    on_event: OnEvent | None = None,
    **changes: object,
) -> ReplayResult:
    """Re-run a recorded run into a new folder with no network: model calls come from the log,
    local tools run again to rebuild the files, and the output is compared with the original.
    It runs with the recorded options (but the workdir: it replays into its own folder);
    `sandbox` and `verbosity` may be changed (a None value keeps the recorded one). A call the
    recording cannot answer, or one whose system prompt, tools or history differ, ends the
    replay `failed` at the first differing step (`divergence`, `differences`). With `diff` and
    no `into`, the replay goes to a temporary folder that is removed afterwards."""
    run_dir = Path(run_dir)
    meta, workflow = recorded_run(run_dir)
    options = replay_options(meta, **changes)
    temporary = diff and into is None
    target = (
        Path(tempfile.mkdtemp(prefix="flowrun-replay-"))
        if temporary
        else Path(into)
        if into is not None
        else _replay_folder(run_dir)
    )
    if not temporary and target.exists() and any(target.iterdir()):
        raise UsageError(f"{target} already exists", "choose another --into folder")
    try:
        result, ledger = await replay_events(
            workflow, run_dir / "events.jsonl", meta, target, options, RunHooks(on_event)
        )
        return _compared(result, run_dir, meta, ledger)
    except BaseException:
        if into is None and not temporary:  # the RUN-replay folder this replay made, still empty
            with contextlib.suppress(OSError):
                target.rmdir()
        raise
    finally:
        if temporary:
            shutil.rmtree(target, ignore_errors=True)


def replay_options(record: RunRecord, **changes: object) -> RunOptions:
    """The options a recorded run (its run.json, or its run_start event) ran with, for replaying
    it: the agents work in the replay's own folder; only `sandbox` and `verbosity` change."""
    fixed = tuple(name for name in FIELDS if name not in REPLAY_CHANGES)
    changes = _changes(changes, fixed, "a replay keeps the recorded {name}", ("into", "diff", "on_event"))
    recorded = RunOptions.from_record(record)
    return dataclasses.replace(recorded, workdir=None).changed(("into", "diff", "on_event"), **changes)


async def replay_events(
    workflow: Workflow,
    events: Path,
    meta: RunRecord,
    target: Path,
    options: RunOptions,
    hooks: RunHooks | None = None,
) -> tuple[RunResult, Ledger]:
    """Replay a recorded event log with `workflow` (as it is now) into `target`; the ledger
    says where it first diverged."""
    ledger = Ledger.from_events(events, "replay")
    run = workflow._new_run(dict(meta.get("inputs") or {}), target, options, hooks or RunHooks(), ledger)
    await _probe_sandbox(run)
    async with RunFolderLock(target):
        claim_new(target)
        result = await _execute(run)
    return result, ledger


def _changes(
    changes: dict[str, object], fixed: Iterable[str], refusal: str, known: Iterable[str]
) -> dict[str, object]:
    """The option changes a resume or replay was given (None: keep the recorded value); one it
    cannot make is a UsageError, an unknown name one with a did-you-mean."""
    for name in changes:
        if name not in FIELDS:
            raise unknown_option(name, [*FIELDS, *known])
        if name in fixed and changes[name] is not None:
            raise UsageError(refusal.format(name=name), "start a new run to change it")
    return {name: value for name, value in changes.items() if value is not None}


def _compared(result: RunResult, run_dir: Path, meta: RunRecord, ledger: Ledger) -> ReplayResult:
    """The replay next to its recording: the output, and where it first diverged."""
    target = result.run_dir
    divergence, differences = None, []
    if ledger.divergence is not None:
        point = ledger.divergence
        divergence = ReplayDivergence(
            {
                "agent": point.agent,
                "agent_id": point.agent_id,
                "step": point.step,
                "reason": point.reason,
                "message": point.message,
            }
        )
        from flowrun.runtime.replay.diff import divergence_details  # only a diverged replay

        differences = divergence_details(run_dir / "events.jsonl", target / "events.jsonl", point)
    recorded_status = str(meta.get("status") or "")
    output = meta.get("output")
    same: bool | None = None
    original, again = run_dir / str(output), target / str(output)
    if output and result.status == recorded_status and (original.exists() or again.exists()):
        same = again.exists() and original.exists() and original.read_bytes() == again.read_bytes()
    return ReplayResult(
        **vars(result),
        recorded_status=recorded_status,
        declared_output=output,
        output_reproduced=same,
        divergence=divergence,
        differences=differences,
    )


def _resumed_conversation(
    meta: RunRecord, workflow: Workflow, message: str | None, read: ReadMessage | None
) -> Conversation | None:
    """Who talks to the resumed run: the chat's reader, or `message` once (to the chat's agent
    or the workflow's entry agent); None when nobody does."""
    once = _once(message) if message else None
    if chat := meta.get("chat"):
        reader = once or read
        return Conversation(str(chat), reader, chat=True) if reader is not None else None
    if once is None:
        return None
    if not workflow.spec.entry:
        raise UsageError(
            "--message goes to the entry agent, and this workflow has `steps:` instead",
            "resume without --message",
        )
    return Conversation(workflow.spec.entry, once)


def _once(message: str) -> ReadMessage:
    sent = False

    async def read(answer: str | None) -> str | None:
        nonlocal sent
        if sent:
            return None
        sent = True
        return message

    return read


def recorded_run(run_dir: Path) -> tuple[RunRecord, Workflow]:
    """A run folder's run.json (or, when that is missing or damaged, its run_start event) and
    its workflow, loaded again."""
    if not (run_dir / "events.jsonl").is_file() and not (run_dir / "run.json").is_file():
        raise not_a_run_folder(run_dir)
    check_records(run_dir)
    decoded = read_json_object(run_dir / "run.json")  # ({} when missing, not JSON, not UTF-8)
    if isinstance(decoded.get("workflow_file"), str):
        meta = run_record(decoded)
    else:
        lines = read_lines(run_dir / "events.jsonl")
        start = next((e for e in lines if e.get("type") == "run_start"), None)
        if start is None or not isinstance(start.get("workflow_file"), str):
            raise RunError(
                f"{run_dir} has no run.json and no run_start event",
                "the run never started: run it again with the same --run-id",
            )
        # the options of its last start: a resume may have changed some
        starts = [e for e in lines if e.get("type") in ("run_start", "run_resumed") and e.get("options")]
        latest = [e["options"] for e in starts]
        meta = run_record({**start, **({"options": latest[-1]} if latest else {}), "status": "incomplete"})
    workflow = Path(str(meta.get("workflow_file"))).resolve()
    if not workflow.is_file():
        raise RunError(f"the run's workflow {workflow} no longer exists", "restore it at that path")
    # no head start for the SDKs here: a replay sends nothing (resume starts it once it knows)
    return meta, load(workflow, list(RunOptions.from_record(meta).overrides), prefetch=False)


def _recorded_result(run_dir: Path, meta: RunRecord) -> RunResult:
    """A finished run as its folder records it (resuming a completed run changes nothing)."""
    status = str(meta.get("status"))
    output = run_dir / name if (name := meta.get("output")) else None
    usage = cast(UsageRecord, read_json_object(run_dir / "usage.json"))
    return RunResult(
        status=status,
        exit_code=EXIT_CODES.get(status, 1),
        message="already completed; nothing to resume",
        output=output if output is not None and output.exists() else None,
        usage=usage,
        run_dir=run_dir,
    )


def tightened(
    loaded: Loaded[WorkflowManifest], limits: Mapping[str, float | None]
) -> Loaded[WorkflowManifest]:
    """The workflow with `limits` applied where they are lower than its own (or it has none)."""
    from pydantic import ValidationError

    current = loaded.spec.limits.model_dump()
    unknown = sorted(set(limits) - set(current))
    if unknown:
        raise UsageError(f"unknown limit '{unknown[0]}'", "limits: " + ", ".join(current))
    merged = {key: _tighter(current[key], value) for key, value in limits.items()}
    try:
        tighter = Limits.model_validate({**loaded.spec.limits.model_dump(exclude_unset=True), **merged})
    except ValidationError as e:
        raise UsageError(f"bad limit: {e.errors()[0]['msg']}", "see the workflow's `limits:` keys") from None
    spec = loaded.spec.model_copy(update={"limits": tighter})
    return Loaded(spec, loaded.source, loaded.root, loaded.builtin)


def _tighter(current: object, given: object) -> object:
    """The lower of two numeric limits (None: no limit); a setting (`on_budget`) as given."""
    if given is None:
        return current
    if current is None or not isinstance(given, int | float) or isinstance(given, bool):
        return given
    return min(current, given) if isinstance(current, int | float) else given


_ISSUED: tuple[str, set[str]] = ("", set())  # the ids this process gave out in the current second


def new_run_id(name: str, runs_dir: str | Path | None = None) -> str:
    """`YYYYMMDD-HHMMSS-NAME-<6 hex>`: never one this process gave out already, nor (given the runs
    folder) one whose folder is there: a server or a script starting many runs in one second
    gets as many ids, not a clash that fails a run the user never named."""
    global _ISSUED
    stamp = time.strftime("%Y%m%d-%H%M%S")
    if _ISSUED[0] != stamp:
        _ISSUED = (stamp, set())
    while True:
        run_id = f"{stamp}-{name}-{uuid.uuid4().hex[:6]}"
        if run_id not in _ISSUED[1] and (runs_dir is None or not exists(Path(runs_dir) / run_id)):
            _ISSUED[1].add(run_id)
            return run_id


def _replay_folder(run_dir: Path) -> Path:
    """`RUN-replay`, else `RUN-replay2`, ...: made here (mkdir claims the name), so two replays
    of one run at once get a folder each."""
    try:
        return claim_folder(lambda n: run_dir.with_name(f"{run_dir.name}-replay{n if n > 1 else ''}"))
    except OSError as e:
        raise UsageError(
            f"cannot create a replay folder beside {run_dir}: {e.strerror or e}",
            "give --into a folder you can write",
        ) from None


def _check_credentials(run: Run) -> None:
    try:
        missing = missing_credentials(run.project, run.spec, run.models.choice)
    except UnsetVariable as e:  # a model the run uses names an unset ${VAR}: where it is written
        raise ManifestInvalid(str(run.workflow.source.display), _unset_where(run, e)) from None
    if missing:
        needs = "; ".join(f"{env} (for {', '.join(sorted(set(agents)))})" for env, agents in missing.items())
        raise ManifestError(
            f"no model provider is configured: set {needs}",
            "export the key, or try it offline with --dry-run, or use a local server: "
            "--model ollama:llama3.1 (or OPENAI_BASE_URL=http://localhost:8000/v1 --model openai:MODEL)",
        )


def _unset_where(run: Run, e: UnsetVariable) -> list[Diagnostic]:
    """The diagnostics (file:line) of the model whose variable is unset."""
    if e.model in run.spec.models:
        return unset_diagnostics(run.workflow.source, e.model, run.spec.models[e.model])
    loaded = run.project.models.get(e.model)
    if loaded is not None:
        return unset_diagnostics(loaded.source, e.model, loaded.spec)
    raise e


async def _probe_sandbox(run: Run) -> None:
    """Before the log or any model request: `required` fails closed here (SandboxError). The
    first probe of a process starts one: in a worker thread (one probe at a time), so the
    loop's other runs go on and a cancel meanwhile (a stopped batch) lands before the run
    begins; later runs read its answer."""
    if not sandbox.probed() and sandbox_modes(run.project, run.spec, run.sandboxes):
        await asyncio.to_thread(sandbox.probe)
    run.sandbox_warning = startup_check(run.project, run.spec, run.sandboxes, run.options.dry_run)


async def _execute(run: Run, resume: bool = False) -> RunResult:
    """Run with the folder's lock held by the caller."""
    try:
        log = RunLog(run.run_dir, run.options.verbosity, run.redactor.text)
    except OSError as e:  # flowrun.log cannot be opened: nothing was recorded
        raise unwritable(run.run_dir, e) from None
    run.subscribers.append(log.on_event)
    if run.hooks.on_event is not None:
        run.subscribers.append(run.hooks.on_event)
    live = live_export(run)  # OpenTelemetry spans as they happen, when an OTLP endpoint is set
    if live is not None:
        run.subscribers.append(live.on_event)
    try:
        summary = await execute_run(run, resume=resume)
    finally:
        log.close()
        if live is not None:
            live.close()
    return _result(run, summary)


def _result(run: Run, summary: RunSummary) -> RunResult:
    return RunResult(
        status=summary.status,
        exit_code=summary.exit_code,
        message=summary.message,
        output=Path(summary.output) if summary.output else None,
        usage=run.usage.to_dict(),
        run_dir=run.run_dir,
        pending=list(summary.pending),
    )


keep_imported()  # flowrun's modules live as long as the process (providers/clients.keep_imported)
