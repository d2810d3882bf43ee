"""How a run runs: one `RunOptions` object from the command line's flags to run.json, and the
`RunHooks` (callbacks) that go with it but are not recorded.

    options = flowrun.RunOptions(model="openai:gpt-4o", agent_models={"writer": "claude"}, dry_run=True)
    result = await wf.run({"question": "..."}, options, on_event=print)
    await wf.run({"question": "..."}, dry_run=True)           # the same fields as keyword arguments

One value has one name everywhere: the field name is the Python keyword, the key in run.json's
`options` (and in the `run_start` event's) and, with `-` for `_`, the CLI flag (`--model M` is
`model`, `--model AGENT=M` is `agent_models`, `--set` is `overrides`, `-q`/`-v` are
`verbosity`). `from_record` reads the options back from a run.json or a `run_start` event of any
version (earlier ones kept them as flat keys: `model_override`, `agent_models`, `dry_run`, ...).

RunOptions is a frozen dataclass rather than a pydantic model: it is plain data that pickles as
it is (the Ray backend ships it in each job) and crosses the batch workers' pipes and run.json
as `to_dict()`; it is made for every run and read back on every resume, and its few checks
give flowrun's own one-line UsageError (with a did-you-mean for a misspelt name)."""

from __future__ import annotations

import dataclasses
import difflib
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, Protocol, TypedDict, cast

from flowrun.errors import UsageError
from flowrun.events import Event
from flowrun.records import OptionsRecord, RunRecord
from flowrun.tools.sandbox import MODES, Mode

Decisions = Literal["wait", "refuse"]
DRY_WORKDIR = "workdir"  # a dry run's stand-in for the user's folder, in its run folder

if TYPE_CHECKING:
    from flowrun.runtime.loop.approvals import Approver


@dataclass(frozen=True, slots=True)
class RunOptions:
    """Every knob of a run that run.json records (all optional; the defaults are a plain run)."""

    model: str | None = None  # --model M: every agent's model (a workflow model name or provider:model)
    agent_models: dict[str, str] = field(default_factory=dict)  # --model AGENT=M, over `model`
    dry_run: bool = False  # --dry-run: the offline test provider
    stream: bool | None = None  # --stream/--no-stream; None: each model's own setting
    sandbox: Mode | None = None  # --sandbox: overrides every `sandbox:` mode
    yes: bool = False  # -y/--yes: approve every call of an `approve: ask` tool
    no_thinking: bool = False  # --no-thinking: every model's thinking off
    workdir: Path | None = None  # --workdir (or workspace.dir): the agents' folder, absolute once run
    verbosity: int = 0  # -v (1): flowrun.log at DEBUG when above 0
    limits: dict[str, float | None] = field(default_factory=dict)  # tighter `limits:` for this run
    overrides: tuple[str, ...] = ()  # --set PATH=VALUE: the texts the manifests were changed with
    # --decisions: what an `approve: ask` call, an ask_user question or an `on_budget: ask` budget
    # does when nobody can answer now: wait (the run ends `waiting`, to be decided and resumed)
    # or refuse (the call is refused, the question unanswered, the budget stops the run)
    decisions: Decisions = "wait"
    decide_within: float | None = None  # --decide-within: seconds a decision may wait (over limits)
    # --memory-dir: every memory the run's agents declare (but `run` ones) in DIR/SCOPE/NAME instead
    # of its own folder: a scratch memory (an eval's `memory: fresh`), kept for the next run given it
    memory_dir: Path | None = None

    def __post_init__(self) -> None:
        # normalised once, so two options that mean the same compare (and record) the same
        set_ = object.__setattr__
        if self.model is not None and (not isinstance(self.model, str) or not self.model.strip()):
            raise UsageError(f"model {self.model!r} is not a model name", MODEL_HINT)
        if not isinstance(self.agent_models, Mapping):
            raise UsageError("agent_models must map agent names to models", MODEL_HINT)
        set_(self, "agent_models", {str(k): str(v) for k, v in self.agent_models.items()})
        if self.sandbox is not None and self.sandbox not in MODES:
            raise UsageError(f"unknown sandbox mode {self.sandbox!r}", "use required, auto or off")
        for name in ("workdir", "memory_dir"):
            if getattr(self, name) is not None:
                set_(self, name, Path(getattr(self, name)))
        if not isinstance(self.limits, Mapping):
            raise UsageError("limits must map `limits:` keys to values", 'e.g. {"max_cost_usd": 0.5}')
        set_(self, "limits", dict(self.limits))
        set_(self, "overrides", _override_texts(self.overrides))
        set_(self, "verbosity", int(self.verbosity))
        for name in ("dry_run", "yes", "no_thinking"):
            set_(self, name, bool(getattr(self, name)))
        if self.decisions not in DECISIONS:
            raise UsageError(f"unknown decisions mode {self.decisions!r}", "use wait or refuse")
        if self.decide_within is not None:
            set_(self, "decide_within", duration(self.decide_within))

    def agents_root(self, run_dir: Path, run_real: Path) -> Path:
        """Where the agents work: the run folder (`run_real`, resolved already), or a folder of
        the user's (`workdir`) that is kept across runs while the run folder keeps the engine's
        files; a dry run never writes there: its agents work in a stand-in inside its run folder
        (runtime/seeding.py)."""
        if self.workdir is None:
            return run_real
        return (run_dir / DRY_WORKDIR).resolve() if self.dry_run else self.workdir.resolve()

    # ------------------------------------------------------------ changing

    def changed(self, _known: Iterable[str] = (), **changes: Any) -> RunOptions:
        """A copy with `changes` (field names) applied. `model` may also be a mapping of agent
        name to model (key "*": every other agent), as `Workflow.run` has always taken it. An
        unknown name is a UsageError with a did-you-mean (over the fields and `_known`, the
        caller's other keyword arguments)."""
        if not changes:
            return self
        for name in changes:
            if name not in FIELDS:
                raise unknown_option(name, [*FIELDS, *_known])
        model = changes.get("model")
        if isinstance(model, Mapping):
            per_agent = {str(k): str(v) for k, v in model.items()}
            changes["model"] = per_agent.pop("*", None)
            changes["agent_models"] = {**dict(changes.get("agent_models") or {}), **per_agent}
        return dataclasses.replace(self, **changes)

    @classmethod
    def given(
        cls, options: RunOptions | None, changes: Mapping[str, object], known: Iterable[str] = ()
    ) -> RunOptions:
        """`options` (or the defaults) with keyword `changes` over them: what an API function
        taking `options=None, **changes` runs with."""
        if options is not None and not isinstance(options, RunOptions):
            raise UsageError(
                f"options must be a flowrun.RunOptions, not {type(options).__name__}",
                "pass RunOptions(...) or the options as keyword arguments",
            )
        return (options or cls()).changed(known, **changes)

    # ------------------------------------------------------------ recording

    def to_dict(self) -> OptionsRecord:
        """As run.json's `options` records them (plain JSON)."""
        return {
            "model": self.model,
            "agent_models": dict(self.agent_models),
            "dry_run": self.dry_run,
            "stream": self.stream,
            "sandbox": self.sandbox,
            "yes": self.yes,
            "no_thinking": self.no_thinking,
            "workdir": str(self.workdir) if self.workdir is not None else None,
            "verbosity": self.verbosity,
            "limits": dict(self.limits),
            "overrides": list(self.overrides),
            "decisions": self.decisions,
            "decide_within": self.decide_within,
            "memory_dir": str(self.memory_dir) if self.memory_dir is not None else None,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], strict: bool = True) -> RunOptions:
        """Options from `to_dict()`'s shape. `strict`: an unknown key is a UsageError (a
        caller's mistake); otherwise it is skipped (a record written by a later version)."""
        if strict:
            for name in data:
                if name not in FIELDS:
                    raise unknown_option(str(name), FIELDS)
        values = {k: v for k, v in data.items() if k in FIELDS}
        for name in ("agent_models", "limits"):
            if values.get(name) is None:
                values.pop(name, None)
        values["overrides"] = values.get("overrides") or ()
        return cls(**values)

    @classmethod
    def from_record(cls, record: RunRecord) -> RunOptions:
        """The options a run recorded, from its run.json or its `run_start` event (as a dict):
        the `options` object, or the flat keys of the layouts before it (`model_override`,
        `agent_models`, `dry_run`, `no_thinking`, `workdir`, `overrides`; 0.1.0 had only the
        first and `dry_run`), the knobs they did not record at their defaults."""
        recorded = record.get("options")
        if isinstance(recorded, Mapping):
            return cls.from_dict(recorded, strict=False)
        return cls(
            model=record.get("model_override") or None,
            agent_models=dict(record.get("agent_models") or {}),
            dry_run=bool(record.get("dry_run")),
            no_thinking=bool(record.get("no_thinking")),
            workdir=Path(workdir) if (workdir := record.get("workdir")) else None,
            overrides=tuple(str(o) for o in record.get("overrides") or ()),
        )

    def summary(self) -> str:
        """The options that differ from the defaults, for people (`flowrun show`)."""
        parts: list[str] = []
        if self.dry_run:
            parts.append("--dry-run")
        if self.model:
            parts.append(f"--model {self.model}")
        parts += [f"--model {agent}={ref}" for agent, ref in self.agent_models.items()]
        parts += [f"--set {text}" for text in self.overrides]
        if self.stream is not None:
            parts.append("--stream" if self.stream else "--no-stream")
        if self.no_thinking:
            parts.append("--no-thinking")
        if self.sandbox:
            parts.append(f"--sandbox {self.sandbox}")
        if self.yes:
            parts.append("--yes")
        if self.workdir is not None:
            parts.append(f"--workdir {self.workdir}")
        parts += [f"limits.{key}={value}" for key, value in self.limits.items()]
        if self.decisions != "wait":
            parts.append(f"--decisions {self.decisions}")
        if self.memory_dir is not None:
            parts.append(f"--memory-dir {self.memory_dir}")
        if self.decide_within is not None:
            parts.append(f"--decide-within {self.decide_within:g}s")
        return " ".join(parts)


FIELDS: tuple[str, ...] = tuple(f.name for f in dataclasses.fields(RunOptions))


class RunChanges(TypedDict, total=False):
    """The fields of `RunOptions` as keyword arguments of the API (`wf.run(..., dry_run=True)`):
    what they accept before `RunOptions` normalises them."""

    model: str | Mapping[str, str] | None  # a mapping: agent name -> model ("*": every other agent)
    agent_models: Mapping[str, str]
    dry_run: bool
    stream: bool | None
    sandbox: Mode | None
    yes: bool
    no_thinking: bool
    workdir: str | Path | None
    verbosity: int
    limits: Mapping[str, float | None]
    overrides: Sequence[str] | Mapping[str, object]
    decisions: Decisions
    decide_within: float | None


DECISIONS: tuple[Decisions, ...] = ("wait", "refuse")
MODEL_HINT = "a workflow model name or provider:model, e.g. openai:gpt-4o"

OnEvent = Callable[[Event], None]
# answers an ask_user question; None: nobody answers now (the run waits for `flowrun answer`)
AskUser = Callable[[str], Awaitable[str | None]]
ReadMessage = Callable[[str | None], Awaitable[str | None]]  # (the agent's answer) -> next message


@dataclass(frozen=True, slots=True)
class Conversation:
    """Someone talking to the run's top agent: `flowrun chat` (a turn after each answer) or the
    `--message` of a resumed run (once, where the recorded run ends)."""

    agent: str  # the top agent (depth 0) the messages go to
    read: ReadMessage  # (its answer, or None) -> a message, or None
    chat: bool = False  # a chat: asked only after an answer, and its first message is the task


class Interjection(Protocol):
    """The user's pause key (`flowrun run` on a terminal): at each step boundary of any agent
    the run asks `requested()`; when it is, `read(agent)` gets one message for the agent that
    reached the boundary (None or empty: go on without one). `read` clears the request before
    it first awaits, so one pause gives one message."""

    def requested(self) -> bool: ...

    async def read(self, agent: str) -> str | None: ...


@dataclass(frozen=True, slots=True)
class RunHooks:
    """The callbacks of a run: given to each call (keyword arguments of the API), never recorded.
    A resumed run gets new ones from its caller."""

    on_event: OnEvent | None = None  # each typed event, after it is written
    ask_user: AskUser | None = None  # answers ask_user; None: questions wait (or are refused)
    approve: Approver | None = None  # decides `approve: ask` calls; None: they wait (or are refused)
    conversation: Conversation | None = None  # chat turns, or a resumed run's --message
    interject: Interjection | None = None  # the pause key: a message for the agent that is running


def unknown_option(name: str, known: Iterable[str]) -> UsageError:
    close = difflib.get_close_matches(name, sorted(set(known)), n=1, cutoff=0.6)
    hint = f"did you mean '{close[0]}'?" if close else "the options: " + ", ".join(FIELDS)
    return UsageError(f"unknown run option '{name}'", hint)


def duration(value: object) -> float:
    """A duration in seconds: a number, or text such as "90", "90s", "30m", "2h", "1d"."""
    if isinstance(value, bool):
        raise UsageError(f"decide_within {value!r} is not a duration", DURATION_HINT)
    if isinstance(value, int | float):
        seconds = float(value)
    else:
        text = str(value).strip().lower()
        unit = DURATION_UNITS.get(text[-1:], None) if text else None
        number = text[:-1] if unit is not None else text
        try:
            seconds = float(number) * (unit or 1.0)
        except ValueError:
            raise UsageError(f"decide_within {value!r} is not a duration", DURATION_HINT) from None
    if not seconds > 0 or seconds == float("inf"):
        raise UsageError(f"decide_within {value!r} must be a positive duration", DURATION_HINT)
    return seconds


DURATION_UNITS = {"s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0}
DURATION_HINT = "seconds, or a number with s, m, h or d: 90, 30m, 2h, 1d"


def _override_texts(given: object) -> tuple[str, ...]:
    """`--set` texts: a list of PATH=VALUE strings, or a mapping of path to value (made into the
    texts that read back as the same values, as flowrun.load records them)."""
    if isinstance(given, str):
        raise UsageError(f"overrides {given!r} is one string", 'give a list: ["PATH=VALUE", ...]')
    if isinstance(given, Mapping):
        from flowrun.manifest.overrides import parse_overrides

        return tuple(o.text for o in parse_overrides(cast(Mapping[str, Any], given)))
    return tuple(str(text) for text in cast(Iterable[object], given or ()))
