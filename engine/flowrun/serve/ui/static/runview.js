// The run page's body, the same for the live page and the report: a header of facts, the
// decisions it waits for, the timeline, the tree of agents and tool calls, token and cost
// charts, the conversations, the output files and, when a replay exists, the replay's steps
// next to the recording's. `source` says where data comes from (the server, or the report's
// embedded JSON) and whether decisions can be taken here.
import { h, replaceContent, fmtCost, fmtTokens, fmtDuration, fmtTime, statusBadge, jsonText, folded } from "./dom.js";
import { drawTimeline, timelineLegend } from "./timeline.js";
import { barChart } from "./charts.js";
import { conversationsNode } from "./conversation.js";
import { renderMarkdown } from "./markdown.js";
import { replayDiffNode } from "./replaydiff.js";

// the tree of invocations, as `flowrun show` draws it: each agent with its tool calls, the
// agents a call ran under it, notes and loop iterations in order
function treeItems(model, items, calls) {
  return (items || []).map((item) => {
    if (item.agent !== undefined) return h("li", {}, treeNode(model, model.invocations[item.agent]));
    if (item.call !== undefined) return treeCall(model, calls[item.call]);
    if (item.group) {
      const g = item.group;
      return h("li", { class: "tree-group", "data-kind": g.kind }, h("span", { class: "muted" }, g.label + (g.outcome ? " · " + g.outcome : "")), h("ul", {}, treeItems(model, g.items, calls)));
    }
    return h("li", { class: "tree-note note-" + item.note.level }, item.note.text);
  });
}

function treeCall(model, call) {
  if (!call) return null;
  const took = call.end !== null ? fmtDuration(call.end - call.start) : "…";
  const agents = call.agents.map((i) => h("li", {}, treeNode(model, model.invocations[i])));
  return h(
    "li",
    { class: "tree-call", "data-tool": call.tool },
    h("span", { class: "tool-name" }, call.tool),
    " ",
    statusBadge(call.status || (model.status === "running" ? "running" : "no result")),
    h("span", { class: "muted" }, " " + took + (call.error ? " · " + call.error : "")),
    agents.length ? h("ul", {}, agents) : null,
  );
}

function treeNode(model, inv) {
  const took = inv.end && inv.start ? ` · ${fmtDuration(inv.end - inv.start)}` : "";
  const head = h(
    "div",
    { class: "tree-agent" },
    h("strong", {}, inv.agent),
    " ",
    statusBadge(inv.status),
    h("span", { class: "muted" }, ` ${inv.model || ""} · ${inv.steps} step(s) · ${fmtTokens(inv.total_tokens)} tokens · ${fmtCost(inv.cost_usd)}${took}`),
  );
  return h("div", { class: "tree-node", "data-agent-id": inv.agent_id, "data-index": String(inv.index) }, head, h("ul", {}, treeItems(model, inv.items, inv.calls)));
}

export function treeView(model) {
  const tree = model.summary?.tree || [];
  if (!tree.length) return h("p", { class: "muted" }, "no agent has started yet");
  const notes = (model.summary?.notes || []).map((n) => h("li", { class: "tree-note note-" + n.level }, n.text));
  return h("div", { class: "tree" }, h("ul", {}, treeItems(model, tree, {}), notes));
}

function decisionForm(p, source, onDone) {
  const reason = h("input", { type: "text", class: "reason", placeholder: "reason (optional)" });
  const status = h("span", { class: "decision-status" });
  const send = async (body) => {
    status.textContent = "sending…";
    try {
      await source.decide({ call: p.ref || (p.agent_id ? `${p.agent_id}/${p.call_id}` : p.call_id), reason: reason.value || null, continue: true, ...body });
      status.textContent = "sent";
      onDone();
    } catch (e) {
      status.textContent = String(e.message || e);
    }
  };
  let what;
  let buttons;
  if (p.kind === "question") {
    const answer = h("textarea", { class: "answer", rows: 2, placeholder: "your answer" });
    what = h("div", {}, h("strong", {}, p.agent || "?"), " asks: ", h("q", {}, p.question || ""));
    buttons = [answer, h("button", { class: "answer-btn", onclick: () => send({ answer: answer.value }) }, "Answer")];
  } else {
    const label = p.kind === "budget" ? `more budget: ${p.limit} (${p.message || ""})` : `${p.agent || "?"} wants to call ${p.tool}`;
    what = h("div", {}, h("strong", {}, label), p.arguments ? h("pre", { class: "text args" }, jsonText(p.arguments)) : null);
    buttons = [
      reason,
      h("button", { class: "allow-btn", onclick: () => send({ allow: true }) }, "Allow"),
      h("button", { class: "deny-btn", onclick: () => send({ allow: false }) }, "Deny"),
    ];
  }
  const deadline = p.deadline ? h("div", { class: "muted" }, "denied at " + fmtTime(p.deadline) + " if nobody decides") : null;
  return h("div", { class: "decision", "data-call-id": p.call_id, "data-kind": p.kind }, what, h("div", { class: "muted" }, p.agent_id || ""), deadline, source.canDecide ? h("div", { class: "decision-buttons" }, buttons, status) : null);
}

function factsNode(model) {
  const summary = model.summary || {};
  const status = summary.status || model.status;
  return h(
    "div",
    { class: "facts" },
    h("span", { class: "fact" }, statusBadge(status)),
    h("span", { class: "fact" }, "workflow ", h("strong", {}, summary.workflow || "?")),
    h("span", { class: "fact" }, "tokens ", h("strong", { class: "total-tokens", "data-value": String(summary.total_tokens ?? 0) }, fmtTokens(summary.total_tokens ?? 0))),
    h("span", { class: "fact" }, "cost ", h("strong", { class: "total-cost", "data-value": String(summary.cost_usd ?? "") }, fmtCost(summary.cost_usd ?? null))),
    h("span", { class: "fact" }, "started ", fmtTime(summary.started)),
    h("span", { class: "fact" }, "duration ", fmtDuration(summary.duration_s ?? (model.lastT && summary.started ? model.lastT - summary.started : null))),
    summary.message ? h("div", { class: "message" }, summary.message) : null,
  );
}

function outputNode(file, open) {
  const body =
    file.content === null || file.content === undefined
      ? h("p", { class: "muted" }, file.note || "not shown")
      : /\.(md|markdown)$/i.test(file.path)
        ? renderMarkdown(file.content)
        : folded(file.content, 60, 20000);
  return h("details", { class: "output", open: file.main || open ? true : null, "data-path": file.path }, h("summary", {}, file.path + (file.main ? " (the workflow's output)" : "")), body);
}

export class RunView {
  constructor(root, model, source) {
    this.root = root;
    this.model = model;
    this.source = source;
    this.summary = null;
    this.files = [];
    this.sections = {};
    this.convKey = null;
    for (const [name, title] of [
      ["facts", null],
      ["decisions", "Waiting for a decision"],
      ["timeline", "Timeline"],
      ["tree", "Agents and tool calls"],
      ["charts", "Tokens and cost"],
      ["conversations", "Conversations"],
      ["outputs", "Output files"],
      ["replay", "Replay differences"],
    ]) {
      const body = h("div", { class: "section-body" });
      const section = h("section", { class: "panel panel-" + name, id: name }, title ? h("h2", {}, title) : null, body);
      this.sections[name] = { section, body };
      root.appendChild(section);
    }
    this.sections.replay.section.hidden = true;
  }

  setSummary(summary) {
    this.summary = summary;
    this.model.set(summary);
  }

  setConversations(conversations) {
    this.model.set(this.summary, conversations);
    this.convKey = null;
  }

  setFiles(files) {
    this.files = files;
    replaceContent(this.sections.outputs.body, files.length ? files.map((f) => outputNode(f, files.length <= 3)) : h("p", { class: "muted" }, "no output file yet"));
  }

  setReplay(replay) {
    this.sections.replay.section.hidden = false;
    replaceContent(this.sections.replay.body, replayDiffNode(replay));
  }

  pending() {
    return this.model.pendingList();
  }

  render(now = null) {
    const m = this.model;
    replaceContent(this.sections.facts.body, factsNode(m));
    const pending = this.pending();
    this.sections.decisions.section.hidden = !pending.length;
    // the forms are made again only when what is pending changes: a render while someone types
    // an answer or a reason must not wipe it
    const key = JSON.stringify(pending.map((p) => p.ref || `${p.agent_id}/${p.call_id}`));
    if (key !== this.pendingKey) {
      this.pendingKey = key;
      replaceContent(this.sections.decisions.body, pending.map((p) => decisionForm(p, this.source, () => this.source.decided && this.source.decided())));
    }
    const width = Math.max(this.sections.timeline.body.clientWidth - 4, 640);
    replaceContent(this.sections.timeline.body, timelineLegend(), h("div", { class: "timeline-box" }, drawTimeline(m, { width, now })));
    replaceContent(this.sections.tree.body, treeView(m));
    replaceContent(
      this.sections.charts.body,
      h(
        "div",
        { class: "charts" },
        barChart("tokens per agent", m.usageBy("agent"), "tokens"),
        barChart("tokens per model", m.usageBy("model"), "tokens"),
        m.usageBy("model").some((r) => r.cost !== null)
          ? [barChart("cost per agent", m.usageBy("agent"), "cost"), barChart("cost per model", m.usageBy("model"), "cost")]
          : h("p", { class: "muted" }, "no model of this run has a price: no cost to draw"),
      ),
    );
    // the conversations are rebuilt only when they change, so folds a reader opened stay open
    if (this.convKey !== m.conversations) {
      this.convKey = m.conversations;
      const opened = new Set([...this.sections.conversations.body.querySelectorAll("details[open]")].map(detailsKey));
      replaceContent(this.sections.conversations.body, conversationsNode(m.conversations));
      for (const d of this.sections.conversations.body.querySelectorAll("details")) if (opened.has(detailsKey(d))) d.open = true;
    }
  }
}

function detailsKey(node) {
  const seg = node.closest("[data-agent-id]");
  const call = node.closest("[data-call-id]");
  const all = seg ? [...seg.querySelectorAll("details")].indexOf(node) : -1;
  return `${seg?.dataset.agentId}|${call?.dataset.callId}|${all}`;
}

