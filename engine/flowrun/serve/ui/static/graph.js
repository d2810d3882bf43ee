// The team of a workflow (GET /v1/workflows/NAME/team or /v1/runs/ID/team: serve/team_graph.py):
// its steps in order (a loop, parallel branches, a foreach, an `if:`) and the agents drawn as a
// graph of who may call whom, layered from the agents the steps start. During a run each agent
// shows its state (running and waiting first), after it its counts: runs, model calls, tokens,
// cost. Drawn as SVG by this module: a layered graph of a few dozen agents needs no library.
import { h, s, fmtCost, fmtTokens } from "./dom.js";

const G_W = 176;
const G_H = 58;
const G_GAP_X = 28;
const G_GAP_Y = 46;

function stateOf(states, name) {
  return states ? states.get(name) || null : null;
}

// its state, and how much it did: "completed · 7 steps", "2 runs · 5.1k tokens · $0.01"
function stateWords(row, live) {
  if (!row) return live === null ? "" : "not started";
  return `${row.status.replace(/_/g, " ")} · ${row.steps} step${row.steps === 1 ? "" : "s"}`;
}

function countWords(row) {
  if (!row) return "";
  const runs = row.runs > 1 ? `${row.runs} runs · ` : "";
  return runs + `${fmtTokens(row.total_tokens)} tokens` + (row.cost_usd !== null ? " · " + fmtCost(row.cost_usd) : "");
}

// the steps, nested as the workflow writes them
function stepNode(step, states) {
  const cond = step.if ? h("div", { class: "step-if" }, "if " + step.if) : null;
  if (step.kind === "agent" || !step.steps?.length) {
    const chips = (step.agents.length ? step.agents : [step.label]).map((name) => {
      const row = stateOf(states, name);
      return h("span", { class: "step-chip state-" + (row ? row.status : states ? "not_started" : "none") }, name);
    });
    return h("div", { class: "step step-" + step.kind }, cond, chips);
  }
  const times = step.repeats === null ? "each item" : step.repeats > 1 ? `×${step.repeats}` : "";
  const head = [step.kind, times, step.until ? "until " + step.until : ""].filter(Boolean).join(" · ");
  const inner = step.kind === "parallel" ? h("div", { class: "step-branches" }, step.steps.map((c) => stepNode(c, states))) : sequence(step.steps, states);
  return h("div", { class: "step step-frame step-" + step.kind }, cond, h("div", { class: "step-head", title: head }, head), inner);
}

function sequence(steps, states) {
  const out = [];
  steps.forEach((step, i) => {
    if (i) out.push(h("span", { class: "step-arrow", "aria-hidden": "true" }, "→"));
    out.push(stepNode(step, states));
  });
  return h("div", { class: "step-seq" }, out);
}

// layers of agents: those the steps start, then whom they may call (breadth first)
function layers(team) {
  const byName = new Map(team.agents.map((a) => [a.name, a]));
  const roots = [];
  const visit = (steps) => {
    for (const step of steps || []) {
      for (const name of step.agents || []) if (byName.has(name) && !roots.includes(name)) roots.push(name);
      visit(step.steps);
    }
  };
  visit(team.steps);
  const depth = new Map(roots.map((n) => [n, 0]));
  const queue = [...roots];
  while (queue.length) {
    const name = queue.shift();
    for (const callee of byName.get(name)?.calls || []) {
      if (!depth.has(callee) && byName.has(callee)) {
        depth.set(callee, depth.get(name) + 1);
        queue.push(callee);
      }
    }
  }
  for (const a of team.agents) if (!depth.has(a.name)) depth.set(a.name, 0);
  const out = [];
  for (const [name, d] of depth) (out[d] ||= []).push(name);
  return { rows: out, byName };
}

export function teamGraph(team, states, { onAgent = null, live = null } = {}) {
  const { rows, byName } = layers(team);
  const pos = new Map();
  const widest = Math.max(1, ...rows.map((r) => r.length));
  const width = widest * (G_W + G_GAP_X) + G_GAP_X;
  rows.forEach((row, d) => {
    if (d > 0) {
      // under their callers, as far as they can be (fewer crossings)
      const centre = (name) => {
        const xs = team.agents.filter((a) => a.calls.includes(name) && pos.has(a.name)).map((a) => pos.get(a.name).x);
        return xs.length ? xs.reduce((a, b) => a + b, 0) / xs.length : 0;
      };
      row.sort((a, b) => centre(a) - centre(b));
    }
    const rowWidth = row.length * (G_W + G_GAP_X) - G_GAP_X;
    row.forEach((name, i) => pos.set(name, { x: (width - rowWidth) / 2 + i * (G_W + G_GAP_X), y: 12 + d * (G_H + G_GAP_Y) }));
  });
  const height = rows.length * (G_H + G_GAP_Y) - G_GAP_Y + 24;
  const svg = s("svg", { class: "team-graph", width, height, viewBox: `0 0 ${width} ${height}`, role: "group", "aria-label": "who may call whom" });
  svg.appendChild(s("defs", {}, s("marker", { id: "team-arrow", viewBox: "0 0 10 10", refX: 9, refY: 5, markerWidth: 7, markerHeight: 7, orient: "auto-start-reverse" }, s("path", { class: "arrow-head", d: "M 0 0 L 10 5 L 0 10 z" }))));
  for (const a of team.agents) {
    const from = pos.get(a.name);
    for (const callee of a.calls) {
      const to = pos.get(callee);
      if (!from || !to) continue;
      const x1 = from.x + G_W / 2;
      const y1 = from.y + G_H;
      const x2 = to.x + G_W / 2;
      const y2 = to.y;
      const d = to.y > from.y ? `M ${x1} ${y1} C ${x1} ${y1 + 24}, ${x2} ${y2 - 24}, ${x2} ${y2 - 2}` : `M ${from.x + G_W} ${from.y + G_H / 2} C ${from.x + G_W + 40} ${from.y}, ${to.x + G_W + 40} ${to.y + G_H}, ${to.x + G_W} ${to.y + G_H / 2}`;
      svg.appendChild(s("path", { class: "call-edge", d, "marker-end": "url(#team-arrow)" }, s("title", {}, `${a.name} may call ${callee}`)));
    }
  }
  for (const [name, p] of pos) svg.appendChild(agentNode(byName.get(name), p, stateOf(states, name), states === null ? null : live, onAgent));
  return svg;
}

function agentNode(agent, p, row, live, onAgent) {
  const words = stateWords(row, live);
  const state = row ? row.status : live === null ? "none" : "not_started";
  const counts = countWords(row);
  const label = `${agent.name}: ${words || "agent"}${counts ? ", " + counts : ""}`;
  const node = s(
    "g",
    { class: "team-node state-" + state, "data-agent": agent.name, "data-state": state, transform: `translate(${p.x},${p.y})`, "aria-label": label },
    s("title", {}, [agent.name, agent.description || "", agent.tools.length ? "tools: " + agent.tools.join(", ") : "", words, counts].filter(Boolean).join("\n")),
    s("rect", { class: "node-box", width: G_W, height: G_H, rx: 6 }),
    s("rect", { class: "node-state", width: 5, height: G_H, rx: 2 }),
    s("text", { class: "node-name", x: 12, y: 18 }, agent.name),
    s("text", { class: "node-words", x: 12, y: 33 }, words || `${agent.model || "?"} · at most ${agent.max_steps} steps`),
    s("text", { class: "node-model", x: 12, y: 48 }, counts || (words ? "" : agent.tools.length + " tools")),
  );
  if (onAgent) {
    node.setAttribute("role", "button");
    node.setAttribute("tabindex", "0");
    node.addEventListener("click", () => onAgent(agent.name, row));
    node.addEventListener("keydown", (e) => {
      if (e.key === "Enter" || e.key === " ") {
        e.preventDefault();
        onAgent(agent.name, row);
      }
    });
  } else node.setAttribute("role", "img");
  return node;
}

// the steps above the graph; `states` (Map of agent name -> its row, RunModel.agentRows: the summary's `agents`) or
// null (a workflow before any run); `live`: whether agents not seen yet may still start
export function teamView(team, states, options = {}) {
  if (!team) return h("p", { class: "muted" }, "the team is not known");
  return h(
    "div",
    { class: "team" },
    h("div", { class: "team-steps" }, h("span", { class: "role" }, "steps"), sequence(team.steps, states)),
    h("div", { class: "team-box" }, teamGraph(team, states, options)),
  );
}
