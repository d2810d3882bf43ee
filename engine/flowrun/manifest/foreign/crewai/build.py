"""What mapping a CrewAI crew builds up: the inputs its placeholders make, the workflow's models,
and a draft of each agent (its data and where each key came from)."""

from __future__ import annotations

from dataclasses import dataclass, field

from flowrun.manifest.foreign import llm, placeholders
from flowrun.manifest.foreign.conversion import Conversion, Doc, flowrun_name
from flowrun.manifest.foreign.crewai.definition import Crew, Found
from flowrun.manifest.yaml_source import PathKey, Source

DEFAULT_MODEL = "crewai-default"
# what CrewAI uses for an agent without `llm` (crewai.constants.DEFAULT_LLM_MODEL, on OpenAI)
CREWAI_DEFAULT = {"provider": "openai", "model": "gpt-4.1-mini"}


@dataclass
class Draft:
    """A manifest being made: its data, and where each of its keys came from in `src`."""

    data: Doc
    src: Source
    base: PathKey
    where: dict[PathKey, PathKey] = field(default_factory=dict)
    inject_date: bool = False


@dataclass
class Build:
    crew: Crew
    conv: Conversion
    inputs: dict[str, Doc] = field(default_factory=dict)
    models: dict[str, Doc] = field(default_factory=lambda: {DEFAULT_MODEL: dict(CREWAI_DEFAULT)})
    agents: dict[str, Draft] = field(default_factory=dict)
    names: dict[str, str] = field(default_factory=dict)  # CrewAI agent key -> flowrun agent name

    def template(self, text: str) -> str:
        """CrewAI text with `{placeholder}`s as a Jinja2 template; each name becomes an input."""
        for name in placeholders.names(text, placeholders.CREWAI):
            self.inputs.setdefault(name, {"description": f"Fills {{{name}}} in the crew's agents and tasks."})
        return placeholders.template(text, placeholders.CREWAI, lambda m: placeholders.variable(m.group(1)))

    def model(self, found: Found | None, owner: str) -> str | None:
        """An `llm` value as an agent's model: a reference, or the name of a model added to the
        workflow's `models:`; None for the crew's default (with a warning when it was unusable)."""
        if found is None or found.value is None:
            return None
        value = found.value
        if isinstance(value, dict) and "llm" in value:  # LLM(model=...) in crew.py
            value = value["llm"]
        if isinstance(value, str):
            pick = llm.litellm(value)
        elif isinstance(value, dict):
            pick = llm.settings(value)
        else:
            pick = llm.ModelPick(
                problem=f"the model is set in Python ({_text(value)}), which flowrun does not run"
            )
        if not pick.usable:
            self.conv.note(
                found.src, found.where, f"the crew's default model: {pick.problem}", "approximated"
            )
            hint = "write provider/model (openai/gpt-4o, anthropic/claude-sonnet-4-5), or run with --model"
            message = f"{owner}: {pick.problem}; it uses the crew's default model ({CREWAI_DEFAULT['model']})"
            self.conv.problem(found.src, found.where, message, hint, "unknown-model", severity="warning")
            return None
        self.conv.note(found.src, found.where, pick.describe())
        if pick.spec is None:
            return pick.ref
        name = flowrun_name(f"{owner}-llm")
        self.models[name] = pick.spec
        return name


def _text(value: object) -> str:
    return getattr(value, "text", None) or repr(value)
