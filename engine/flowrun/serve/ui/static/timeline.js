// The timeline: one lane per agent invocation (callers above the agents they called), model calls
// as bars on the lane's upper row and tool calls and waits for a person below (overlapping ones
// stacked, so parallel branches and parallel tool calls are visibly parallel), on one time axis,
// coloured by outcome. The bars are the summary's spans (runtime/summary/fold.py).
import { s, fmtDuration, fmtTokens, fmtCost } from "./dom.js";

const LABEL_W = 200;
const ROW_H = 12;
const LANE_PAD = 6;
const AXIS_H = 22;

function niceStep(span, target) {
  const raw = span / target;
  const power = Math.pow(10, Math.floor(Math.log10(raw)));
  for (const m of [1, 2, 5, 10]) if (m * power >= raw) return m * power;
  return 10 * power;
}

// greedy rows: a tool bar goes to the first row whose last bar ended before it starts
function stackRows(bars, now) {
  const ends = [];
  for (const bar of bars) {
    const end = bar.end ?? now;
    let row = ends.findIndex((e) => e <= bar.start);
    if (row < 0) row = ends.push(0) - 1;
    ends[row] = end;
    bar.row = row;
  }
  return Math.max(1, ends.length);
}

function barTitle(bar) {
  const took = bar.end !== null ? fmtDuration(bar.end - bar.start) : "running";
  if (bar.kind === "model") {
    const extra = bar.tokens !== null ? ` · ${fmtTokens(bar.tokens)} tokens · ${fmtCost(bar.cost_usd)}` : "";
    const calls = bar.tool_calls && bar.tool_calls.length ? ` → ${bar.tool_calls.join(", ")}` : "";
    return `model call ${bar.label} (${bar.model || "?"}) · ${took}${extra}${calls}`;
  }
  if (bar.kind === "wait") return `${bar.label} · ${bar.outcome} · ${took}`;
  return `tool ${bar.tool} [${bar.call_id}] · ${bar.outcome} · ${took}`;
}

// a click on a lane's name: that instance's conversation, scrolled into view
function showConversation(agentId) {
  const target = [...document.querySelectorAll("section.segment")].find((n) => n.dataset.agentId === agentId);
  if (target) target.scrollIntoView({ behavior: "smooth", block: "start" });
}

// the timeline of `model` as an <svg>; `now` is the time open bars reach to (live: the clock)
export function drawTimeline(model, { width = 960, now = null } = {}) {
  const lanes = model.lanes();
  const t0 = model.start ?? 0;
  const last = Math.max(model.lastT ?? t0, now ?? 0);
  const span = Math.max(last - t0, 0.001);
  const plotW = Math.max(width - LABEL_W - 12, 100);
  const x = (t) => LABEL_W + ((t - t0) / span) * plotW;
  const byLane = new Map();
  for (const bar of model.spans) {
    if (!byLane.has(bar.lane)) byLane.set(bar.lane, []);
    byLane.get(bar.lane).push(bar);
  }
  let y = AXIS_H;
  const laneNodes = [];
  for (const { inst, depth } of lanes) {
    const bars = byLane.get(inst.index) || [];
    const tools = bars.filter((b) => b.kind !== "model");
    const rows = stackRows(tools, last);
    const height = LANE_PAD * 2 + ROW_H * (1 + rows);
    const group = s("g", { class: "lane", "data-agent-id": inst.agent_id });
    group.appendChild(s("rect", { class: "lane-bg", x: 0, y, width, height }));
    const name = inst.agent + (inst.task ? ": " + inst.task.split("\n")[0].slice(0, 40) : "");
    group.appendChild(
      s(
        "text",
        { class: "lane-label status-" + inst.status, x: 4 + depth * 12, y: y + LANE_PAD + ROW_H - 2, onclick: () => showConversation(inst.agent_id) },
        name,
        s("title", {}, `${inst.agent_id}: ${inst.task || ""} (click: its conversation)`),
      ),
    );
    if (inst.start !== null) {
      const life = s("line", { class: "lifeline", x1: x(inst.start), x2: x(inst.end ?? last), y1: y + height / 2, y2: y + height / 2 });
      group.appendChild(life);
    }
    for (const bar of bars) {
      const end = bar.end ?? last;
      const bx = x(bar.start);
      const bw = Math.max(x(end) - bx, 2);
      const by = bar.kind === "model" ? y + LANE_PAD : y + LANE_PAD + ROW_H * (1 + bar.row);
      group.appendChild(
        s(
          "rect",
          { class: `bar bar-${bar.kind} outcome-${bar.outcome}`, x: bx, y: by + 1, width: bw, height: ROW_H - 2, rx: 2, "data-kind": bar.kind, "data-outcome": bar.outcome },
          s("title", {}, barTitle(bar)),
        ),
      );
    }
    laneNodes.push(group);
    y += height;
  }
  const axis = s("g", { class: "axis" });
  const step = niceStep(span, 8);
  for (let t = 0; t <= span + 1e-9; t += step) {
    const tx = x(t0 + t);
    axis.appendChild(s("line", { class: "tick", x1: tx, x2: tx, y1: AXIS_H - 4, y2: y }));
    axis.appendChild(s("text", { class: "tick-label", x: tx + 2, y: AXIS_H - 8 }, fmtDuration(t)));
  }
  const svg = s("svg", { class: "timeline", width, height: y + 4, viewBox: `0 0 ${width} ${y + 4}`, role: "img", "aria-label": "timeline of the run" });
  svg.appendChild(axis);
  for (const node of laneNodes) svg.appendChild(node);
  if (!lanes.length) svg.appendChild(s("text", { class: "empty", x: 8, y: AXIS_H + 14 }, "no agent has started yet"));
  return svg;
}

export function timelineLegend() {
  const items = [
    ["model", "ok", "model call"],
    ["tool", "success", "tool: success"],
    ["tool", "partial", "partial"],
    ["tool", "error", "error"],
    ["tool", "waiting", "waiting for a decision"],
    ["tool", "running", "running"],
    ["wait", "waiting", "waiting for a person"],
    ["tool", "interrupted", "interrupted"],
  ];
  const svg = s("svg", { class: "legend", width: 760, height: 18 });
  let lx = 0;
  for (const [kind, outcome, label] of items) {
    svg.appendChild(s("rect", { class: `bar bar-${kind} outcome-${outcome}`, x: lx, y: 4, width: 14, height: 10, rx: 2 }));
    svg.appendChild(s("text", { x: lx + 18, y: 13, class: "legend-label" }, label));
    lx += 26 + label.length * 6.5;
  }
  return svg;
}
