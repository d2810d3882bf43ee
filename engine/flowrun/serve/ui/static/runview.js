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

function treeNode(model, inst) {
  const head = h(
    "div",
    { class: "tree-agent" },
    h("strong", {}, inst.agent),
    " ",
    statusBadge(inst.status),
    h("span", { class: "muted" }, ` ${inst.model || ""} · ${fmtTokens(inst.tokens)} tokens · ${fmtCost(inst.cost)}` + (inst.end && inst.start ? ` · ${fmtDuration(inst.end - inst.start)}` : "")),
  );
  const calls = inst.calls.map((call) => {
    const bar = call.bar;
    const took = bar.end !== null ? fmtDuration(bar.end - bar.start) : "…";
    const sub = call.agent_id && model.instances.get(call.agent_id);
    return h(
      "li",
      { class: "tree-call", "data-tool": call.tool },
      h("span", { class: "tool-name" }, call.tool),
      " ",
      statusBadge(bar.outcome),
      h("span", { class: "muted" }, " " + took),
      sub ? h("ul", {}, h("li", {}, treeNode(model, sub))) : null,
    );
  });
  const orphans = inst.children
    .filter((id) => !inst.calls.some((c) => c.agent_id === id))
    .map((id) => h("li", {}, treeNode(model, model.instances.get(id))));
  return h("div", { class: "tree-node", "data-agent-id": inst.agent_id }, head, h("ul", {}, calls, orphans));
}

export function treeView(model) {
  const roots = model.roots();
  if (!roots.length) return h("p", { class: "muted" }, "no agent has started yet");
  return h("div", { class: "tree" }, roots.map((r) => treeNode(model, r)));
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

function factsNode(model, summary) {
  const usage = summary?.usage || model.usage || {};
  // while the run goes, usage.json lags behind the log: the larger of the two is the latest
  const counted = [...model.byAgent.values()].reduce((a, r) => a + r.input + r.output, 0);
  const tokens = Math.max(summary?.total_tokens ?? usage.total_tokens ?? 0, counted);
  const priced = [...model.byAgent.values()].filter((r) => r.cost !== null);
  const spent = priced.length ? priced.reduce((a, r) => a + r.cost, 0) : null;
  const recorded = summary?.cost_usd ?? usage.total_cost_usd ?? null;
  const cost = recorded === null ? spent : Math.max(recorded, spent ?? 0);
  const started = summary?.started ?? model.start;
  const ended = model.status === "running" ? null : summary?.ended ?? model.end;
  const status = summary?.status || model.status;
  return h(
    "div",
    { class: "facts" },
    h("span", { class: "fact" }, statusBadge(status)),
    h("span", { class: "fact" }, "workflow ", h("strong", {}, summary?.workflow || model.workflow || "?")),
    h("span", { class: "fact" }, "tokens ", h("strong", { class: "total-tokens" }, fmtTokens(tokens))),
    h("span", { class: "fact" }, "cost ", h("strong", {}, fmtCost(cost))),
    h("span", { class: "fact" }, "started ", fmtTime(started)),
    h("span", { class: "fact" }, "duration ", fmtDuration(ended && started ? ended - started : model.lastT && started ? model.lastT - started : null)),
    model.message ? h("div", { class: "message" }, model.message) : null,
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
    this.convCount = -1;
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
  }

  setFiles(files) {
    this.files = files;
    replaceContent(this.sections.outputs.body, files.length ? files.map((f) => outputNode(f, files.length <= 3)) : h("p", { class: "muted" }, "no output file yet"));
  }

  setReplay(recorded, replayed, name) {
    this.sections.replay.section.hidden = false;
    replaceContent(this.sections.replay.body, replayDiffNode(recorded, replayed, name));
  }

  pending() {
    const listed = this.summary && Array.isArray(this.summary.pending) ? this.summary.pending : null;
    return listed ?? this.model.pendingList();
  }

  render(now = null) {
    const m = this.model;
    replaceContent(this.sections.facts.body, factsNode(m, this.summary));
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
        barChart("tokens per agent", [...m.byAgent.values()], "tokens"),
        barChart("tokens per model", [...m.byModel.values()], "tokens"),
        [...m.byModel.values()].some((r) => r.cost !== null)
          ? [barChart("cost per agent", [...m.byAgent.values()], "cost"), barChart("cost per model", [...m.byModel.values()], "cost")]
          : h("p", { class: "muted" }, "no model of this run has a price: no cost to draw"),
      ),
    );
    // the conversations are rebuilt only when they change, so folds a reader opened stay open
    const count = m.events.filter((e) => e.type !== "model_request").length;
    if (count !== this.convCount) {
      this.convCount = count;
      const opened = new Set([...this.sections.conversations.body.querySelectorAll("details[open]")].map(detailsKey));
      replaceContent(this.sections.conversations.body, conversationsNode(m.conv));
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

