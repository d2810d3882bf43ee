// The Memory region of the run page: for each agent of the run's team (GET /v1/runs/ID/team: each
// agent's `memory`, its name, scope and who writes it, or null), the files of the memory it keeps
// as they are now (path, size, when modified, each one's text behind a button) and the writes this
// run made there, from GET /v1/runs/ID/memory (api/memory.py's run_memory: the memories by name,
// the writes with their calls' outcomes). An agent without `memory:` says so. Nothing is folded
// here: the server says what the files hold and how each write ended.
import { h, statusBadge, timeNode } from "./dom.js";

let memoryIds = 0; // (ids for the buttons' aria-controls, unique on the page)

function memoryBytes(n) {
  if (n === null || n === undefined) return "–";
  if (n < 1024) return `${n} byte${n === 1 ? "" : "s"}`;
  return n < 1 << 20 ? (n / 1024).toFixed(1) + " KiB" : (n / (1 << 20)).toFixed(1) + " MiB";
}

// a file's row and, below it, its text behind a Show button (kept open across redraws: `opened`)
function fileRows(file, key, opened) {
  const id = `memory-file-${++memoryIds}`;
  const text =
    file.text === null || file.text === undefined
      ? h("p", { class: "muted" }, "not shown: not UTF-8 text, or over 1 MiB")
      : h("pre", { class: "text memory-text" }, file.text);
  const shown = h("div", { class: "memory-file-text", id, role: "region", "aria-label": file.path }, text);
  const row = h("tr", { class: "memory-text-row" }, h("td", { colspan: 4 }, shown));
  const button = h("button", { type: "button", class: "link-btn", "aria-controls": id, "aria-label": `Show ${file.path}` }, "Show");
  const set = (open) => {
    row.hidden = !open;
    button.setAttribute("aria-expanded", String(open));
    button.textContent = open ? "Hide" : "Show";
    button.setAttribute("aria-label", `${open ? "Hide" : "Show"} ${file.path}`);
    if (open) opened.add(key);
    else opened.delete(key);
  };
  button.addEventListener("click", () => set(row.hidden));
  set(opened.has(key));
  return [
    h("tr", { "data-path": file.path }, h("td", { class: "path" }, file.path), h("td", { class: "num" }, memoryBytes(file.size)), h("td", {}, timeNode(file.modified)), h("td", {}, button)),
    row,
  ];
}

function filesNode(files, agent, opened) {
  if (!files.length) return h("p", { class: "muted" }, "no files");
  return h(
    "div",
    { class: "table-box" },
    h(
      "table",
      { class: "compact memory-files" },
      h("caption", { class: "sr-only" }, `the files of ${agent}'s memory`),
      h("thead", {}, h("tr", {}, h("th", { scope: "col" }, "path"), h("th", { scope: "col" }, "size"), h("th", { scope: "col" }, "modified"), h("th", { scope: "col" }, h("span", { class: "sr-only" }, "text")))),
      h("tbody", {}, files.map((f) => fileRows(f, `${agent}|${f.path}`, opened))),
    ),
  );
}

function writesNode(writes) {
  if (!writes.length) return h("p", { class: "muted" }, "this run wrote nothing here");
  return h(
    "ol",
    { class: "memory-writes" },
    writes.map((w) =>
      h(
        "li",
        { "data-path": w.path },
        h("span", { class: "tool-name" }, w.command),
        " ",
        h("code", {}, w.path + (w.to ? " → " + w.to : "")),
        h("span", { class: "muted" }, ` by ${w.agent} `),
        statusBadge(w.status),
        " ",
        timeNode(w.t),
      ),
    ),
  );
}

function memoryAgentNode(agent, memory, team, opened) {
  const id = `memory-agent-${++memoryIds}`;
  const head = h("h3", { id }, agent.name);
  const part = (...body) => h("section", { class: "memory-agent", "aria-labelledby": id, "data-agent": agent.name }, head, ...body);
  const kept = agent.memory;
  if (!kept) return part(h("p", { class: "muted" }, "no memory: it declares no ", h("code", {}, "memory:")));
  const state = memory?.memories?.[kept.name] || null;
  const sharing = team.agents.filter((a) => a.name !== agent.name && a.memory?.name === kept.name).map((a) => a.name);
  const writer = { agent: "the agent", reflect: "a reflection at the end of a run", none: "nobody (read-only)" }[kept.writes] || null;
  return part(
    h(
      "p",
      { class: "memory-facts" },
      `memory ${kept.name} · ${kept.scope}` + (writer ? ` · written by ${writer}` : ""),
      sharing.length ? ` · shared with ${sharing.join(", ")}` : "",
      state ? h("br") : null,
      state ? h("code", { class: "muted" }, state.copy ? `${state.copy} (this dry run's copy of ${state.folder})` : state.folder) : null,
    ),
    h("h4", {}, "Files"),
    state ? filesNode(state.now || [], agent.name, opened) : h("p", { class: "muted" }, "this run recorded no state of it"),
    h("h4", {}, "Writes in this run"),
    writesNode((memory?.writes || []).filter((w) => w.memory === kept.name)),
  );
}

// `team`: the run's team (null when its files no longer load: then the memories by name);
// `memory`: the run's memories (null while loading); `opened`: the files whose text is shown
export function memoryNode(team, memory, opened, problem = null) {
  if (problem) return h("p", { class: "error" }, problem);
  if (!memory) return h("p", { class: "muted" }, "loading the memory…");
  const agents = team
    ? team.agents
    : Object.entries(memory.memories || {}).map(([name, state]) => ({ name, memory: { name, scope: state.scope, writes: null } }));
  if (!agents.length) return h("p", { class: "muted" }, "no agent of this run keeps a memory");
  return h("div", { class: "memory" }, agents.map((a) => memoryAgentNode(a, memory, { agents }, opened)));
}
