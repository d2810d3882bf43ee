"""The files of a new project: `flowrun init` (a runnable project from a shipped example) and
`flowrun new` (one agent, tool or skill that validates). Nothing here writes over a file.

A template is an example workflow of the shipped examples (`research`, `react`, ...) or an
example folder holding one (`claude_code`). A project made from a workflow holds the workflow,
every agent it can start (built-in ones too, so the whole team can be edited), their prompts
(with what those include), the tools.d manifests that are not the engine's own, the skills and
output schemas the agents name, a copy of flowrun's JSON Schema files in `schema/` that the
`# yaml-language-server: $schema=...` line of each manifest points at (relative, so the project
works in an editor and in CI wherever it is checked out; `flowrun schema --write schema`
refreshes them after an upgrade), and a `.gitignore` for `runs/`."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from flowrun.errors import UsageError
from flowrun.manifest.graph import reachable_agents, tool_entries, workflow_agents
from flowrun.manifest.output_schemas import SCHEMAS_DIR, schema_file
from flowrun.manifest.project import Loaded, Project, find_agent_prompt, load_project
from flowrun.manifest.schema.check import did_you_mean
from flowrun.manifest.specs import NAME, AgentManifest
from flowrun.manifest.templates import analyse
from flowrun.paths import builtin_root, examples_root

SCHEMA_LINE = re.compile(r"^# yaml-language-server: \$schema=\S*\n?")
GITIGNORE = "# flowrun's run folders\nruns/\n"
# evals/ holds eval sets over the examples beside it (and the workflow one of them runs): no
# project of its own to start from
SKIPPED = {"runs", "__pycache__", ".git", "evals"}
SKILL_FUNCTIONS = ("flowrun.tools.skills:use_skill", "flowrun.tools.skill_scripts:run_skill_script")
PORTABLE_SKILL = re.compile(r"^[a-z0-9]+(-[a-z0-9]+)*$")
USABLE_SKILL = re.compile(r"^[a-z0-9]+([_-][a-z0-9]+)*$")  # with the snake_case of a skills.json library
KIND_OF_FOLDER = {"agents.d": "agent", "tools.d": "tool", "models.d": "models"}


@dataclass(frozen=True)
class Template:
    name: str
    workflow: Path  # the workflow file
    description: str
    folder: Path | None = None  # a template that is a whole example folder (copied as it is)


@dataclass
class Files:
    """Relative path → content of the files to write."""

    texts: dict[str, bytes] = field(default_factory=dict)

    def add(self, rel: str, content: str | bytes) -> None:
        self.texts.setdefault(rel, content.encode("utf-8") if isinstance(content, str) else content)


# ---------------------------------------------------------------- templates


def templates() -> dict[str, Template]:
    """The shipped examples that `flowrun init` can copy, by name."""
    root = examples_root()
    found: dict[str, Template] = {}
    for path in sorted(root.glob("*.yaml")):
        if _is_workflow(path):
            found[path.stem] = Template(path.stem, path, _description(path))
    for folder in sorted(p for p in root.iterdir() if p.is_dir() and p.name not in SKIPPED):
        workflows = [p for p in sorted(folder.glob("*.yaml")) if _is_workflow(p)]
        if workflows:
            found[folder.name] = Template(folder.name, workflows[0], _description(workflows[0]), folder)
    return found


def template(name: str) -> Template:
    found = templates()
    if name not in found:
        hint = did_you_mean(name, set(found)) or "see `flowrun init --list`"
        raise UsageError(f"no template '{name}'", hint)
    return found[name]


def is_folder_name(given: str) -> bool:
    """Whether `flowrun init X` means the folder X: X names no template and is not a near miss
    of one (`reserch` is still the did-you-mean error of a template)."""
    found = templates()
    return given not in found and (not did_you_mean(given, set(found)) or Path(given).exists())


def _is_workflow(path: Path) -> bool:
    return re.search(r"^kind:\s*workflow\s*$", path.read_text(encoding="utf-8"), re.MULTILINE) is not None


def _description(path: Path) -> str:
    """The workflow's `description:` (its first sentence), read without loading the project."""
    import yaml

    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    text = " ".join(str(data.get("description") or "").split()) if isinstance(data, dict) else ""
    return text.split(". ")[0].rstrip(".")


# ---------------------------------------------------------------- flowrun init


def project_files(chosen: Template) -> Files:
    """Every file of a runnable project made from `chosen`."""
    files = Files()
    if chosen.folder is not None:
        _copy_folder(chosen.folder, files)
    else:
        _workflow_project(chosen.workflow, files)
    schema = builtin_root() / "schema"
    for path in sorted(schema.glob("*.schema.json")):
        files.add(f"schema/{path.name}", path.read_bytes())
    files.add(".gitignore", GITIGNORE)
    return files


def _workflow_project(workflow: Path, files: Files) -> None:
    project = load_project(workflow.parent, [workflow])
    [loaded] = project.workflows
    files.add(
        workflow.name, with_schema_line(_local_comments(workflow.read_text(encoding="utf-8")), "workflow", 0)
    )
    starts = [name for name, _ in workflow_agents(loaded.spec) if name in project.agents]
    agents = sorted(reachable_agents(starts, project))
    tools: set[str] = set()
    for name in agents:
        agent = project.agent_layers[name][0]
        _add_manifest(files, agent.source.path, "agents.d")
        _add_prompts(files, project.agents[name], project)
        _add_schema(files, project.agents[name], project)
        tools |= {tool for _, tool, _ in tool_entries(agent.spec)}
        _add_skills(files, agent.spec, project)
    core = builtin_root().resolve()
    for name in sorted(tools):
        tool = project.tools.get(name)
        if tool is not None and tool.root.resolve() != core:
            _add_manifest(files, tool.source.path, "tools.d")
    for rel in loaded.spec.workspace.copy_paths:
        source = workflow.parent / rel
        if source.exists() and rel.rstrip("/") != "corpus":  # corpus: the shipped one is found anyway
            _add_tree(files, source, rel.rstrip("/"))


def _add_manifest(files: Files, path: Path, folder: str) -> None:
    text = path.read_text(encoding="utf-8")
    if path.suffix in (".yaml", ".yml"):
        text = with_schema_line(text, KIND_OF_FOLDER[folder], 1)
    files.add(f"{folder}/{path.name}", text)


def _add_prompts(files: Files, agent: Loaded[AgentManifest], project: Project) -> None:
    """The agent's prompt file and every template it includes, from the folder it is read from."""
    path = find_agent_prompt(agent, project)
    if path is None:
        return
    todo, folder = [path], path.parent
    while todo:
        current = todo.pop()
        rel = current.relative_to(folder).as_posix()
        if f"prompts/{rel}" in files.texts:
            continue
        text = current.read_text(encoding="utf-8")
        files.add(f"prompts/{rel}", text)
        todo += [folder / inc for inc in analyse(text).includes if (folder / inc).is_file()]


def _add_schema(files: Files, agent: Loaded[AgentManifest], project: Project) -> None:
    """The agent's output schema file, at the same place under the project's schemas/."""
    path = schema_file(agent, project)
    if path is None:
        return
    for root in project.roots:
        folder = (root / SCHEMAS_DIR).resolve()
        if path.is_relative_to(folder):
            files.add(f"{SCHEMAS_DIR}/{path.relative_to(folder).as_posix()}", path.read_bytes())
            return


def _add_skills(files: Files, agent: AgentManifest, project: Project) -> None:
    """The skills the agent's skill tools name (or, without a list, the project's own)."""
    from flowrun.tools.skills import INDEX_FILE, find_skills

    for _, name, config in tool_entries(agent):
        tool = project.tools.get(name)
        if tool is None or getattr(tool.spec.implementation, "python", None) not in SKILL_FUNCTIONS:
            continue
        effective = {**tool.spec.defaults, **config}
        for skill in find_skills(project.roots, effective).values():
            library = skill.document.parent.parent if skill.folder is not None else skill.document.parent
            if skill.folder is not None:
                _add_tree(files, skill.folder, f"skills/{skill.folder.name}")
            else:
                files.add(
                    f"skills/{skill.document.relative_to(library).as_posix()}", skill.document.read_bytes()
                )
            _add_index_entry(files, library / INDEX_FILE, skill.name)


def _add_index_entry(files: Files, index: Path, name: str) -> None:
    """The skill's entry of its library's skills.json, into the project's index."""
    import json

    if not index.is_file():
        return
    entries = json.loads(index.read_text(encoding="utf-8")).get("skills", {})
    if name not in entries:
        return
    current = json.loads(files.texts.get("skills/skills.json", b'{"skills": {}}'))
    current["skills"][name] = entries[name]
    files.texts["skills/skills.json"] = (json.dumps(current, indent=2, ensure_ascii=False) + "\n").encode()


def _add_tree(files: Files, source: Path, rel: str) -> None:
    if source.is_file():
        files.add(rel, source.read_bytes())
        return
    for path in sorted(source.rglob("*")):
        inner = path.relative_to(source)
        if path.is_file() and not SKIPPED & set(inner.parts):
            files.add(f"{rel}/{inner.as_posix()}", path.read_bytes())


def _copy_folder(folder: Path, files: Files) -> None:
    """An example folder as it is (third-party files verbatim), its manifests' schema lines
    pointing at the project's schema/."""
    for path in sorted(folder.rglob("*")):
        inner = path.relative_to(folder)
        if not path.is_file() or SKIPPED & set(inner.parts):
            continue
        rel = inner.as_posix()
        kind = KIND_OF_FOLDER.get(inner.parts[0]) if len(inner.parts) == 2 else None
        if path.suffix in (".yaml", ".yml") and (kind or len(inner.parts) == 1):
            text = _local_comments(path.read_text(encoding="utf-8"))
            files.add(rel, with_schema_line(text, kind or "workflow", len(inner.parts) - 1))
        else:
            files.add(rel, path.read_bytes())


def with_schema_line(text: str, kind: str, depth: int) -> str:
    """`text` starting with the yaml-language-server line for `kind`, relative to a file
    `depth` folders below the project's root (its own line replaced)."""
    line = f"# yaml-language-server: $schema={'../' * depth}schema/{kind}.schema.json\n"
    return line + SCHEMA_LINE.sub("", text, count=1)


def _local_comments(text: str) -> str:
    """The example's comments as they read in a project of its own (`flowrun research.yaml`,
    not `flowrun examples/research.yaml`)."""

    def local(line: str) -> str:
        line = line.replace(" in examples/corpus/", " shipped with flowrun")
        return re.sub(r"examples/(claude_code/)?", "", line)

    return "\n".join(local(line) if line.lstrip().startswith("#") else line for line in text.split("\n"))


def write_new(target: Path, files: Files) -> list[str]:
    """Write `files` into `target`, which must be empty or missing (UsageError naming what is
    in the way); the paths written."""
    if target.exists() and not target.is_dir():
        raise UsageError(f"{target} is a file, not a folder", "give a new or empty folder")
    if target.is_dir() and (present := sorted(p.name for p in target.iterdir())):
        raise UsageError(
            f"{target} is not empty (it holds {present[0]}{' and more' if len(present) > 1 else ''})",
            "flowrun init writes only into a new or empty folder: give another DIR",
        )
    return write_files(target, files)


def write_files(root: Path, files: Files) -> list[str]:
    """Write `files` under `root`, each created new (a file that appeared meanwhile is not
    replaced: UsageError naming it); the paths written."""
    for rel, content in sorted(files.texts.items()):
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        try:
            with path.open("xb") as f:
                f.write(content)
        except FileExistsError:
            raise UsageError(
                f"{path} already exists", "flowrun never overwrites it: pick another name"
            ) from None
    return sorted(files.texts)


# ---------------------------------------------------------------- flowrun new


def new_files(kind: str, name: str, root: Path) -> Files:
    """The file(s) of a new agent, tool or skill named `name` in the project folder `root`."""
    makers = {"agent": _new_agent, "tool": _new_tool, "skill": _new_skill}
    files = makers[kind](name, root)
    for rel in files.texts:
        if (root / rel).exists() or (root / rel).is_symlink():
            raise UsageError(
                f"{root / rel} already exists", "flowrun new never overwrites: pick another name"
            )
    return files


def _check_name(name: str, what: str) -> None:
    if not re.fullmatch(NAME, name):
        raise UsageError(
            f"'{name}' is not {what} name",
            "letters, digits, '_' and '-', starting with a letter, at most 64",
        )


def _schema_line(root: Path, kind: str, depth: int) -> str:
    """The yaml-language-server line when the project has its schema/ copy, else nothing."""
    if (root / "schema" / f"{kind}.schema.json").is_file():
        return f"# yaml-language-server: $schema={'../' * depth}schema/{kind}.schema.json\n"
    return ""


def _new_agent(name: str, root: Path) -> Files:
    _check_name(name, "an agent")
    project = load_project(root, [])
    files = Files()
    head = _schema_line(root, "agent", 1) + "version: 1\nkind: agent\n"
    existing = project.agents.get(name)
    if existing is not None and existing.builtin:
        prompt = f"prompts/{existing.spec.prompt_file}" if existing.spec.prompt_file else "its own"
        files.add(
            f"agents.d/{name}.yaml",
            head
            + f"name: {name}\n"
            + f"# the built-in '{name}', changed for this project: each key set below replaces its own;\n"
            + f"# its prompt is {prompt}: this project's copy when it has one\n"
            + f"extends: {name}\n",
        )
        return files
    files.add(
        f"agents.d/{name}.yaml",
        head
        + f"name: {name}\n"
        + f"description: What {name} does, in one line; callers read it when {name} is offered as a tool.\n"
        + "prompt: |\n"
        + f"  You are {name}. Say here what you do, how, and what your answer must contain.\n"
        + "  Today is {{ date }}.\n"
        + "max_steps: 20\n"
        + "tools:  # the allowlist: built-in tools, tools.d/ tools, MCP servers and other agents\n"
        + "  - read_file\n"
        + "  - list_directory\n"
        + f'  - write_file: {{write_paths: ["{name}/**"]}}\n',
    )
    return files


def _new_tool(name: str, root: Path) -> Files:
    _check_name(name, "a tool")
    function = name.replace("-", "_")
    files = Files()
    files.add(
        f"tools.d/{name}.yaml",
        _schema_line(root, "tool", 1)
        + "version: 1\nkind: tool\n"
        + f"name: {name}\n"
        + "description: >-\n"
        + "  Count the lines, words and characters of a text file in the agents' folder (replace\n"
        + f"  this with what {name} does: the model reads it to decide when to call the tool).\n"
        + "parameters:\n"
        + "  type: object\n"
        + "  properties:\n"
        + '    path: {type: string, description: "A text file, relative to the working folder."}\n'
        + "  required: [path]\n"
        + "  additionalProperties: false\n"
        + "implementation:\n"
        + f"  python: tools.{function}:{function}  # tools/{function}.py next to the workflow\n"
        + "files: read  # it reads the file it is given (a dry run gives it one that exists)\n",
    )
    files.add(f"tools/{function}.py", TOOL_MODULE.replace("NAME", name).replace("FUNCTION", function))
    return files


TOOL_MODULE = '''"""The NAME tool (tools.d/NAME.yaml): an async function that gets the tool context and the
model's arguments and returns a ToolResult (what the model reads, and data for the event log).
Errors are results too: the model reads them and can correct itself."""

from __future__ import annotations

from flowrun.tools.base import ToolContext
from flowrun.types import ToolResult


async def FUNCTION(ctx: ToolContext, path: str) -> ToolResult:
    """Count the lines, words and characters of a text file under the agents' folder."""
    target = (ctx.cwd / path).resolve()
    if not target.is_relative_to(ctx.workspace.resolve()):
        return ToolResult.fail("ACCESS_DENIED", f"{path} is outside the agents' folder")
    try:
        text = target.read_text(encoding="utf-8")
    except FileNotFoundError:
        return ToolResult.fail("NOT_FOUND", f"{path} does not exist")
    except (OSError, UnicodeDecodeError) as e:
        return ToolResult.fail("INVALID_PARAM", f"cannot read {path} as text: {e}")
    lines, words = len(text.splitlines()), len(text.split())
    summary = f"{path}: {lines} lines, {words} words, {len(text)} characters"
    return ToolResult.ok(summary, lines=lines, words=words, characters=len(text))
'''


def skill_name_warning(name: str) -> str | None:
    """What `validate` warns of a skill name flowrun uses but other agents may not (the seeds'
    snake_case `report_style`); None for a portable name."""
    if PORTABLE_SKILL.fullmatch(name) and len(name) <= 64:
        return None
    suggestion = re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-") or "my-skill"
    return (
        f"'{name}' is not a portable skill name (a-z, 0-9 and single hyphens, at most 64): "
        f"flowrun uses it, other agents may not (e.g. {suggestion})"
    )


def _new_skill(name: str, root: Path) -> Files:
    if not USABLE_SKILL.fullmatch(name) or len(name) > 64:
        suggestion = re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-") or "my-skill"
        raise UsageError(
            f"'{name}' cannot name a skill (lowercase letters, digits, - and _, at most 64)",
            f"e.g. flowrun new skill {suggestion}",
        )
    files = Files()
    files.add(
        f"skills/{name}/SKILL.md",
        "---\n"
        + f"name: {name}\n"
        + f"description: What {name} teaches and when to read it (the model chooses skills by this line).\n"
        + "---\n\n"
        + f"# {name}\n\n"
        + "The steps, rules and checks an agent follows for this kind of work. Put templates in\n"
        + "`templates/`, finished examples in `examples/` and checklists in `sop/` next to this\n"
        + "file: `use_skill` includes the small ones with this guide and lists the rest.\n",
    )
    return files
