// The timeline: one lane per agent invocation (callers above the agents they called), named by
// the agent and what it was asked; its model calls on the lane's first row and its tool calls
// and waits for a person below (overlapping ones stacked, so parallel calls are visibly
// parallel), on one time axis. A stretch where nothing ran (a wait for a person, a stopped
// run) is cut out of the axis and labelled with its length, so seconds of work stay visible
// beside minutes of waiting. Each bar is a button named by what it shows: a click, Enter or the
// arrow keys select it (the run page shows it in Details). Zoom with the buttons, + and -, or
// Ctrl and the wheel; pan by scrolling or dragging. The bars are the summary's spans
// (runtime/summary/fold.py).
import { h, s, fmtDuration } from "./dom.js";

const TL_ROW_H = 18;
const TL_PAD = 4;
const TL_AXIS_H = 26;
const TL_BREAK_W = 64; // the width of a stretch cut out of the axis
const TL_MIN_BAR = 3; // the narrowest bar drawn
const TL_MIN_HIT = 12; // the narrowest bar one can hit
const TL_MAX_ZOOM = 256;

function niceSeconds(raw) {
  const power = Math.pow(10, Math.floor(Math.log10(raw)));
  for (const m of [1, 2, 5, 10]) if (m * power >= raw) return m * power;
  return 10 * power;
}

// the merged stretches in which something ran: model calls and tool calls that did work (not
// a call that waited for a person, nor one whose bar holds the agents it ran)
function busyStretches(model, end) {
  const waited = new Set(model.spans.filter((b) => b.kind === "wait").map((b) => `${b.agent_id || ""}|${b.call_id}`));
  const found = [];
  for (const b of model.spans) {
    if (b.kind === "wait" || model.isContainer(b) || (b.kind === "tool" && waited.has(`${b.agent_id || ""}|${b.call_id}`))) continue;
    found.push([b.start, b.end ?? end]);
  }
  found.sort((a, b) => a[0] - b[0]);
  const merged = [];
  for (const [a, b] of found) {
    const last = merged[merged.length - 1];
    if (last && a <= last[1]) last[1] = Math.max(last[1], b);
    else merged.push([a, b]);
  }
  return merged;
}

// the axis: time to x, with the idle stretches cut to TL_BREAK_W each
export function timeAxis(model, t0, t1, width) {
  const busy = busyStretches(model, t1);
  const active = busy.reduce((sum, [a, b]) => sum + Math.max(0, Math.min(b, t1) - Math.max(a, t0)), 0);
  const minGap = Math.max(2, 0.1 * active);
  const gaps = [];
  let cursor = t0;
  for (const [a, b] of busy) {
    if (a - cursor >= minGap) gaps.push([cursor, a]);
    cursor = Math.max(cursor, b);
  }
  if (busy.length && t1 - cursor >= minGap) gaps.push([cursor, t1]);
  const cut = gaps.reduce((sum, [a, b]) => sum + (b - a), 0);
  const real = Math.max(t1 - t0 - cut, 0.001);
  const pxReal = Math.max(width - gaps.length * TL_BREAK_W, width * 0.4);
  const perSecond = pxReal / real;
  const segments = [];
  let x = 0;
  let t = t0;
  for (const [a, b] of gaps) {
    if (a > t) segments.push({ t0: t, t1: a, x0: x, x1: (x += (a - t) * perSecond), gap: false });
    const waited = model.spans.some((w) => w.kind === "wait" && w.start <= a + 1e-3 && (w.end ?? t1) >= b - 1e-3);
    segments.push({ t0: a, t1: b, x0: x, x1: (x += TL_BREAK_W), gap: true, why: waited ? "waiting for a person" : "nothing ran" });
    t = b;
  }
  segments.push({ t0: t, t1: Math.max(t1, t + 0.001), x0: x, x1: x + (Math.max(t1, t + 0.001) - t) * perSecond, gap: false });
  const at = (time) => {
    let seg = segments[0];
    for (const candidate of segments) if (time >= candidate.t0) seg = candidate;
    const f = seg.t1 > seg.t0 ? (time - seg.t0) / (seg.t1 - seg.t0) : 0;
    return seg.x0 + Math.max(0, Math.min(1, f)) * (seg.x1 - seg.x0);
  };
  return { x: at, segments, perSecond, width: segments[segments.length - 1].x1 };
}

// greedy rows: a bar goes to the first row whose last bar ended before it starts
function stackRows(bars, end) {
  const ends = [];
  for (const bar of bars) {
    let row = ends.findIndex((e) => e <= bar.start);
    if (row < 0) row = ends.push(0) - 1;
    ends[row] = bar.end ?? end;
    bar.row = row;
  }
  return Math.max(1, ends.length);
}

// what a bar shows: "step 3 · read_file", "read_file", "waiting to allow write_file"
export function barLabel(bar) {
  if (bar.kind === "model") {
    const did = bar.tool_calls && bar.tool_calls.length ? bar.tool_calls.join(", ") : bar.end === null ? "…" : "answer";
    return `step ${bar.step ?? "?"}${bar.purpose ? " (" + bar.purpose + ")" : ""} · ${did}`;
  }
  if (bar.kind === "wait") return bar.outcome === "waiting" ? bar.label : `${bar.label} · ${bar.outcome}`;
  return bar.tool || bar.label;
}

function barName(bar, lane, until) {
  const took = fmtDuration((bar.end ?? until) - bar.start);
  const what = { model: "model call", tool: "tool call", wait: "wait" }[bar.kind] || bar.kind;
  return `${barLabel(bar)}, ${lane}, ${what} ${bar.outcome}, ${took}`;
}

function ticks(axis, t0) {
  const step = niceSeconds(110 / axis.perSecond);
  const out = [];
  for (const seg of axis.segments) {
    if (seg.gap) continue;
    const first = Math.ceil((seg.t0 - t0) / step - 1e-9) * step;
    for (let e = first; t0 + e <= seg.t1 + 1e-9 && out.length < 5000; e += step) out.push([axis.x(t0 + e), e]);
  }
  return out;
}

export class Timeline {
  constructor(root, model, { onSelect, onLane } = {}) {
    this.model = model;
    this.onSelect = onSelect || (() => {});
    this.onLane = onLane || (() => {});
    this.zoom = 1;
    this.selected = null;
    this.bars = []; // [{key, node, lane, start}] in drawing order
    const button = (label, title, act) => h("button", { type: "button", class: "tool-btn", title, onclick: act }, label);
    this.toolbar = h(
      "div",
      { class: "tl-toolbar" },
      button("Zoom out", "Zoom out (-)", () => this.zoomBy(0.5)),
      button("Zoom in", "Zoom in (+)", () => this.zoomBy(2)),
      button("Fit", "The whole run in view", () => this.setZoom(1)),
      legend(),
    );
    this.names = h("div", { class: "tl-names" });
    this.plot = h("div", { class: "tl-plot" });
    this.body = h("div", { class: "tl-body" }, this.names, this.plot);
    root.append(this.toolbar, this.body);
    this.plot.addEventListener("wheel", (e) => this.wheel(e), { passive: false });
    this.plot.addEventListener("pointerdown", (e) => this.drag(e));
    this.plot.addEventListener("keydown", (e) => this.key(e));
  }

  setZoom(zoom, anchor = null) {
    const old = this.zoom;
    this.zoom = Math.max(1, Math.min(TL_MAX_ZOOM, zoom));
    const view = this.plot.clientWidth || 1;
    const at = anchor ?? view / 2;
    const keep = (this.plot.scrollLeft + at) / old; // the time under the anchor stays there
    this.render(this.now);
    this.plot.scrollLeft = keep * this.zoom - at;
  }

  zoomBy(factor, anchor = null) {
    this.setZoom(this.zoom * factor, anchor);
  }

  wheel(e) {
    if (!(e.ctrlKey || e.metaKey)) return;
    e.preventDefault();
    const box = this.plot.getBoundingClientRect();
    this.zoomBy(e.deltaY < 0 ? 1.25 : 0.8, e.clientX - box.left);
  }

  drag(e) {
    if (e.button !== 0 || e.target.closest(".bar-g")) return;
    const x0 = e.clientX;
    const left = this.plot.scrollLeft;
    const move = (m) => (this.plot.scrollLeft = left - (m.clientX - x0));
    const up = () => {
      window.removeEventListener("pointermove", move);
      window.removeEventListener("pointerup", up);
    };
    window.addEventListener("pointermove", move);
    window.addEventListener("pointerup", up);
  }

  key(e) {
    if (e.key === "+" || e.key === "=") this.zoomBy(2);
    else if (e.key === "-") this.zoomBy(0.5);
    else if (["ArrowRight", "ArrowLeft", "ArrowUp", "ArrowDown", "Home", "End"].includes(e.key)) {
      const next = this.neighbour(e.key);
      if (next) this.select(next.key, { focus: true, notify: true });
    } else return;
    e.preventDefault();
  }

  neighbour(key) {
    const i = this.bars.findIndex((b) => b.key === this.selected);
    const here = this.bars[i];
    if (key === "Home") return this.bars[0];
    if (key === "End") return this.bars[this.bars.length - 1];
    if (!here) return this.bars[0];
    const lane = this.bars.filter((b) => b.lane === here.lane).sort((a, b) => a.start - b.start);
    const j = lane.indexOf(here);
    if (key === "ArrowRight") return lane[j + 1] || here;
    if (key === "ArrowLeft") return lane[j - 1] || here;
    const lanes = [...new Set(this.bars.map((b) => b.lane))];
    const other = lanes[lanes.indexOf(here.lane) + (key === "ArrowDown" ? 1 : -1)];
    if (other === undefined) return here;
    const there = this.bars.filter((b) => b.lane === other);
    return there.reduce((best, b) => (Math.abs(b.start - here.start) < Math.abs(best.start - here.start) ? b : best), there[0]);
  }

  // mark `key` selected (the one bar in the tab order); `focus` moves the keyboard to it
  select(key, { focus = false, notify = false, scroll = false } = {}) {
    this.selected = key;
    let target = null;
    for (const bar of this.bars) {
      const on = bar.key === key;
      bar.node.classList.toggle("selected", on);
      bar.node.setAttribute("tabindex", on ? "0" : "-1");
      bar.node.setAttribute("aria-pressed", on ? "true" : "false");
      if (on) target = bar.node;
    }
    if (!target && this.bars.length) this.bars[0].node.setAttribute("tabindex", "0");
    if (target && focus) target.focus({ preventScroll: true });
    if (target && (focus || scroll)) target.scrollIntoView({ block: "nearest", inline: "nearest" });
    if (notify) this.onSelect(key);
  }

  render(now = null) {
    this.now = now;
    const m = this.model;
    const hadFocus = this.plot.contains(document.activeElement);
    const lanes = m.lanes();
    const names = m.laneNames();
    const t0 = m.start ?? 0;
    const until = Math.max(m.lastT ?? t0, m.live && now ? now : 0, t0 + 0.001);
    const view = Math.max(this.plot.clientWidth - 2, 120);
    const axis = timeAxis(m, t0, until, view * this.zoom - 8);
    const width = axis.width + 8;
    const byLane = new Map();
    for (const bar of m.spans) {
      if (!byLane.has(bar.lane)) byLane.set(bar.lane, []);
      byLane.get(bar.lane).push(bar);
    }
    const svg = s("svg", { class: "timeline", width, role: "group", "aria-label": "bars of the run's model calls, tool calls and waits" });
    svg.appendChild(hatchDefs());
    const laneNodes = [];
    const nameNodes = [h("div", { class: "tl-axis-spacer", style: `height:${TL_AXIS_H}px` })];
    this.bars = [];
    let y = TL_AXIS_H;
    for (const { inst, depth } of lanes) {
      const bars = (byLane.get(inst.index) || []).slice().sort((a, b) => a.start - b.start);
      const below = bars.filter((b) => b.kind !== "model");
      const rows = stackRows(below, until);
      const height = TL_PAD * 2 + TL_ROW_H * (1 + rows);
      const name = names.get(inst.index) || inst.agent;
      nameNodes.push(
        h(
          "button",
          { type: "button", class: "lane-name status-" + inst.status, style: `height:${height}px;padding-left:${6 + depth * 12}px`, title: `${inst.agent_id}\n${inst.task || ""}`, "data-agent-id": inst.agent_id, onclick: () => this.onLane(inst) },
          h("span", { class: "lane-agent" }, inst.agent),
          name.length > inst.agent.length ? h("span", { class: "lane-task" }, name.slice(inst.agent.length)) : null,
        ),
      );
      const group = s("g", { class: "lane", "data-agent-id": inst.agent_id });
      group.appendChild(s("rect", { class: "lane-bg", x: 0, y, width, height }));
      if (inst.start !== null) {
        const x0 = axis.x(inst.start);
        group.appendChild(s("rect", { class: "life", x: x0, y: y + 1, width: Math.max(axis.x(inst.end ?? until) - x0, 1), height: height - 2 }));
      }
      for (const bar of bars) group.appendChild(this.barNode(bar, axis, y, name, until));
      laneNodes.push(group);
      y += height;
    }
    svg.appendChild(axisNode(axis, t0, y));
    for (const node of laneNodes) svg.appendChild(node);
    if (m.live && now) {
      const nx = axis.x(now);
      svg.appendChild(s("g", { class: "now" }, s("line", { x1: nx, x2: nx, y1: TL_AXIS_H - 6, y2: y }), s("text", { x: nx - 3, y: TL_AXIS_H - 8, "text-anchor": "end" }, "now")));
    }
    if (!lanes.length) svg.appendChild(s("text", { class: "empty", x: 8, y: TL_AXIS_H + 16 }, "no agent has started yet"));
    svg.setAttribute("height", String(y + 4));
    this.names.replaceChildren(...nameNodes);
    this.plot.replaceChildren(svg);
    this.select(this.selected, { focus: hadFocus });
  }

  barNode(bar, axis, laneY, laneName, until) {
    const key = this.model.spanKey(bar);
    const x0 = axis.x(bar.start);
    const w = Math.max(axis.x(bar.end ?? until) - x0, TL_MIN_BAR);
    const y = laneY + TL_PAD + (bar.kind === "model" ? 0 : TL_ROW_H * (1 + bar.row));
    const label = barLabel(bar);
    const hit = Math.max(w, TL_MIN_HIT);
    const node = s(
      "g",
      { class: "bar-g", role: "button", tabindex: "-1", "aria-label": barName(bar, laneName, until), "data-key": key, "data-kind": bar.kind, "data-outcome": bar.outcome },
      s("title", {}, barName(bar, laneName, until)),
      s("rect", { class: "hit", x: x0 - (hit - w) / 2, y, width: hit, height: TL_ROW_H }),
      s("rect", { class: `bar bar-${bar.kind} outcome-${bar.outcome}${this.model.isContainer(bar) ? " container" : ""}`, x: x0, y: y + 2, width: w, height: TL_ROW_H - 4, rx: 2 }),
    );
    const fits = Math.floor((w - 6) / 6.4);
    if (fits >= 3) node.appendChild(s("text", { class: "bar-label", x: x0 + 3, y: y + TL_ROW_H - 5 }, label.length > fits ? label.slice(0, fits - 1) + "…" : label));
    node.addEventListener("click", () => this.select(key, { focus: true, notify: true }));
    node.addEventListener("keydown", (e) => {
      if (e.key === "Enter" || e.key === " ") {
        e.preventDefault();
        this.select(key, { focus: true, notify: true });
      }
    });
    this.bars.push({ key, node, lane: bar.lane, start: bar.start });
    return node;
  }
}

function axisNode(axis, t0, bottom) {
  const g = s("g", { class: "axis" });
  for (const [x, e] of ticks(axis, t0)) {
    g.appendChild(s("line", { class: "tick", x1: x, x2: x, y1: TL_AXIS_H - 6, y2: bottom }));
    g.appendChild(s("text", { class: "tick-label", x: x + 3, y: TL_AXIS_H - 10 }, fmtDuration(e)));
  }
  for (const seg of axis.segments) {
    if (!seg.gap) continue;
    const said = `${fmtDuration(seg.t1 - seg.t0)}`;
    const mid = (seg.x0 + seg.x1) / 2;
    g.appendChild(
      s(
        "g",
        { class: "axis-break" },
        s("title", {}, `${said} cut from the axis: ${seg.why}`),
        s("rect", { class: "break-band", x: seg.x0 + 2, y: TL_AXIS_H - 6, width: seg.x1 - seg.x0 - 4, height: bottom - TL_AXIS_H + 6 }),
        s("path", { class: "break-mark", d: `M ${seg.x0 + 6} ${TL_AXIS_H - 2} l 6 -6 l 6 6 M ${seg.x1 - 18} ${TL_AXIS_H - 2} l 6 -6 l 6 6` }),
        s("text", { class: "break-label", x: mid, y: TL_AXIS_H - 12, "text-anchor": "middle" }, said),
      ),
    );
  }
  return g;
}

function hatchDefs() {
  return s(
    "defs",
    {},
    s("pattern", { id: "tl-hatch", width: 6, height: 6, patternUnits: "userSpaceOnUse", patternTransform: "rotate(45)" }, s("rect", { class: "hatch-bg", width: 6, height: 6 }), s("line", { class: "hatch-line", x1: 0, y1: 0, x2: 0, y2: 6 })),
    s("pattern", { id: "tl-stripes", width: 4, height: 4, patternUnits: "userSpaceOnUse", patternTransform: "rotate(-45)" }, s("rect", { class: "stripe-bg", width: 4, height: 4 }), s("line", { class: "stripe-line", x1: 0, y1: 0, x2: 0, y2: 4 })),
  );
}

export function legend() {
  const items = [
    ["model-ok", "model call"],
    ["tool-success", "tool: success"],
    ["tool-partial", "partial"],
    ["tool-error", "error"],
    ["tool-running", "running"],
    ["wait", "waiting for a person"],
    ["interrupted", "interrupted"],
  ];
  return h(
    "ul",
    { class: "legend", "aria-label": "what the colours mean" },
    items.map(([kind, label]) => h("li", {}, h("span", { class: "swatch sw-" + kind, "aria-hidden": "true" }), label)),
  );
}
