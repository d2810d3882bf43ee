// The run page's body, the same for the live page and the report: the facts, the decisions it
// waits for, then the timeline and the tree beside the Details panel (what a bar, a node or
// j/k selected), the team, the decisions taken, tokens and cost, the conversations (folded
// until opened), the output files and, when a replay exists, the replay's steps. `source` says
// where data comes from (the server, or the report's embedded JSON) and what can be done here.
import { h, replaceContent, fmtCost, fmtTokens, fmtDuration, statusBadge, folded, timeNode } from "./dom.js";
import { Timeline } from "./timeline.js";
import { barChart } from "./charts.js";
import { conversationsNode } from "./conversation.js";
import { renderMarkdown } from "./markdown.js";
import { replayDiffNode } from "./replaydiff.js";
import { DetailsPanel } from "./details.js";
import { treeView } from "./tree.js";
import { teamView } from "./graph.js";
import { memoryNode } from "./memory.js";
import { decisionForm, decisionsTable } from "./decisions.js";

function factsNode(model) {
  const summary = model.summary || {};
  const status = summary.status || model.status;
  const spent = summary.duration_s ?? (model.lastT && summary.started ? model.lastT - summary.started : null);
  const inputs = Object.entries(summary.inputs || {});
  return h(
    "div",
    { class: "facts" },
    h("span", { class: "fact fact-status" }, statusBadge(status)),
    h("span", { class: "fact" }, h("span", { class: "fact-k" }, "workflow"), h("strong", {}, summary.workflow || "?"), summary.dry_run ? h("span", { class: "tag" }, "dry run") : null),
    h("span", { class: "fact" }, h("span", { class: "fact-k" }, "tokens"), h("strong", { class: "total-tokens", "data-value": String(summary.total_tokens ?? 0) }, fmtTokens(summary.total_tokens ?? 0))),
    h("span", { class: "fact" }, h("span", { class: "fact-k" }, "cost"), h("strong", { class: "total-cost", "data-value": String(summary.cost_usd ?? "") }, fmtCost(summary.cost_usd ?? null))),
    h("span", { class: "fact" }, h("span", { class: "fact-k" }, "model calls"), h("strong", {}, String(summary.steps ?? 0))),
    h("span", { class: "fact" }, h("span", { class: "fact-k" }, "started"), timeNode(summary.started)),
    h("span", { class: "fact" }, h("span", { class: "fact-k" }, "took"), fmtDuration(spent)),
    summary.batch ? h("span", { class: "fact" }, h("span", { class: "fact-k" }, "batch"), h("a", { href: "/batches/" + encodeURIComponent(summary.batch) }, summary.batch)) : null,
    inputs.length ? h("div", { class: "fact-inputs" }, inputs.map(([k, v]) => h("span", { class: "input-chip", title: typeof v === "string" ? v : JSON.stringify(v) }, h("span", { class: "fact-k" }, k), short(v)))) : null,
    summary.message && status !== "waiting" ? h("div", { class: "message" }, folded(summary.message, 4, 400)) : null,
  );
}

function short(value) {
  const text = typeof value === "string" ? value : JSON.stringify(value);
  return text.length > 80 ? text.slice(0, 79) + "…" : text;
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

function panel(name, title, { fold = false, open = false } = {}) {
  const body = h("div", { class: "section-body" });
  const id = "panel-" + name;
  const heading = h("h2", { id: id + "-title" }, title);
  const section = fold
    ? h("details", { class: "panel panel-" + name, id, open: open || null }, h("summary", {}, heading), body)
    : h("section", { class: "panel panel-" + name, id, "aria-labelledby": id + "-title" }, heading, body);
  return { section, body };
}

export class RunView {
  constructor(root, model, source) {
    this.root = root;
    this.model = model;
    this.source = source;
    this.summary = null;
    this.files = [];
    this.seen = null; // the summary's last_seq last drawn in full
    this.team = null;
    this.memory = null; // the run's memories (GET /v1/runs/ID/memory), null until they come
    this.memoryProblem = null;
    this.memoryOpened = new Set(); // the memory files whose text is shown
    this.p = {};
    for (const [name, title, opts] of [
      ["facts", null],
      ["decisions", "Waiting for a decision"],
      ["timeline", "Timeline"],
      ["tree", "Agents and tool calls"],
      ["team", "Team"],
      ["memory", "Memory"],
      ["taken", "Decisions taken"],
      ["charts", "Tokens and cost", { fold: true, open: true }],
      ["conversations", "Conversations", { fold: true }],
      ["outputs", "Output files"],
      ["replay", "Replay differences"],
    ])
      this.p[name] = name === "facts" ? { section: h("div", { class: "panel-facts" }), body: null } : panel(name, title, opts);
    this.p.facts.body = this.p.facts.section;
    this.controls = h("div", { class: "run-controls" });
    this.details = h("section", { class: "panel panel-details", "aria-labelledby": "details-title" }, h("h2", { id: "details-title" }, "Details"), h("div", { class: "section-body details-body" }));
    this.detailsPanel = new DetailsPanel(this.details.lastChild, model, source, {
      onSelectSpan: (key) => this.selectSpan(key, { scroll: true }),
      onSelectInvocation: (index) => this.selectInvocation(index),
      onConversation: (agentId) => this.showConversation(agentId),
    });
    this.timeline = new Timeline(this.p.timeline.body, model, {
      onSelect: (key) => this.selectSpan(key, { fromTimeline: true }),
      onLane: (inv) => this.selectInvocation(inv.index),
    });
    const main = h("div", { class: "run-main" }, this.p.timeline.section, this.p.tree.section);
    root.append(this.p.facts.section, this.controls, this.p.decisions.section, h("div", { class: "run-grid" }, main, this.details), this.p.team.section, this.p.memory.section, this.p.taken.section, this.p.charts.section, this.p.conversations.section, this.p.outputs.section, this.p.replay.section);
    this.p.replay.section.hidden = true;
    this.p.taken.section.hidden = true;
    this.p.conversations.section.addEventListener("toggle", () => this.p.conversations.section.open && this.loadConversations());
    document.addEventListener("keydown", (e) => this.keys(e));
  }

  setSummary(summary) {
    this.summary = summary;
    this.model.set(summary, this.model.conversations);
  }

  setConversations(conversations) {
    this.model.conversations = conversations || [];
    this.convKey = null;
    this.drawConversations();
  }

  setTeam(team, problem = null) {
    this.team = team;
    this.teamKnown = true;
    this.teamProblem = problem;
    this.drawTeam();
    this.drawMemory();
    if (this.onTeam) this.onTeam(); // a panel drawn from the team before it came (Replay with edits)
  }

  setMemory(memory, problem = null) {
    this.memory = memory;
    this.memoryProblem = problem;
    this.drawMemory();
  }

  setFiles(files) {
    this.files = files;
    replaceContent(this.p.outputs.body, files.length ? files.map((f) => outputNode(f, files.length <= 3)) : h("p", { class: "muted" }, "no output file yet"));
  }

  setReplay(replay) {
    this.p.replay.section.hidden = false;
    replaceContent(this.p.replay.body, replayDiffNode(replay));
  }

  pending() {
    return this.model.pendingList();
  }

  // ------------------------------------------------------------ selection

  selectSpan(key, { fromTimeline = false, scroll = false } = {}) {
    if (!fromTimeline) this.timeline.select(key, { scroll });
    this.detailsPanel.show({ type: "span", key });
    this.reveal();
  }

  selectInvocation(index) {
    this.timeline.select(null);
    this.detailsPanel.show({ type: "invocation", index });
    this.reveal();
  }

  // on a narrow screen the panel sits below: bring it into view
  reveal() {
    if (window.matchMedia && window.matchMedia("(max-width: 899px)").matches) this.details.scrollIntoView({ block: "start" });
  }

  // j and k: the next and the previous bar in time, wherever the focus is (but in a text box)
  keys(e) {
    if (e.altKey || e.ctrlKey || e.metaKey || !["j", "k"].includes(e.key)) return;
    const where = e.target;
    if (where && (where.isContentEditable || ["INPUT", "TEXTAREA", "SELECT"].includes(where.tagName))) return;
    const order = this.model.ordered().map((b) => this.model.spanKey(b));
    if (!order.length) return;
    const i = order.indexOf(this.timeline.selected);
    const next = order[Math.max(0, Math.min(order.length - 1, i < 0 ? 0 : i + (e.key === "j" ? 1 : -1)))];
    this.timeline.select(next, { focus: true });
    this.detailsPanel.show({ type: "span", key: next });
    e.preventDefault();
  }

  async showConversation(agentId) {
    const conv = this.p.conversations.section;
    conv.open = true;
    await this.loadConversations();
    const target = [...conv.querySelectorAll("section.segment")].find((n) => n.dataset.agentId === agentId);
    if (target) {
      for (let up = target.parentElement; up && up !== conv; up = up.parentElement) if (up.tagName === "DETAILS") up.open = true;
      target.scrollIntoView({ block: "start" });
    }
  }

  async loadConversations() {
    if (this.source.conversations) this.setConversations(await this.source.conversations());
    else this.drawConversations();
  }

  // ------------------------------------------------------------ drawing

  // `now`: the time open bars reach (live: the server's clock); the parts that only change
  // with the summary are drawn again only when it did
  render(now = null) {
    const m = this.model;
    replaceContent(this.p.facts.body, factsNode(m));
    this.timeline.render(now);
    if (this.seen === m.lastSeq && this.seenStatus === m.status) return;
    this.seen = m.lastSeq;
    this.seenStatus = m.status;
    this.drawPending();
    this.drawTree();
    this.drawTeam();
    const table = decisionsTable(m);
    this.p.taken.section.hidden = !table;
    if (table) replaceContent(this.p.taken.body, table);
    this.drawCharts();
    this.detailsPanel.refresh();
    if (this.source.conversations && this.p.conversations.section.open) this.loadConversations();
  }

  drawPending() {
    const pending = this.pending();
    this.p.decisions.section.hidden = !pending.length;
    // the forms are made again only when what is pending changes: a render while someone types
    // an answer or a reason must not wipe it
    const key = JSON.stringify(pending.map((p) => p.ref || `${p.agent_id}/${p.call_id}`));
    if (key !== this.pendingKey) {
      this.pendingKey = key;
      replaceContent(this.p.decisions.body, pending.map((p) => decisionForm(p, this.source, () => this.source.decided && this.source.decided())));
    }
  }

  drawTree() {
    const body = this.p.tree.body;
    const folded = new Set([...body.querySelectorAll("details.tree-node:not([open])")].map((d) => d.dataset.agentId));
    const opened = new Set([...body.querySelectorAll("details.tree-node[open]")].map((d) => d.dataset.agentId));
    const top = body.scrollTop;
    replaceContent(
      body,
      treeView(this.model, {
        onInvocation: (inv) => this.selectInvocation(inv.index),
        onCall: (inv, call) => {
          const span = this.model.toolSpan(inv.agent_id, call.call_id);
          if (span) this.selectSpan(this.model.spanKey(span), { scroll: true });
        },
      }),
    );
    for (const d of body.querySelectorAll("details.tree-node")) {
      if (folded.has(d.dataset.agentId)) d.open = false;
      else if (opened.has(d.dataset.agentId)) d.open = true;
    }
    body.scrollTop = top;
  }

  drawTeam() {
    if (!this.team) {
      replaceContent(this.p.team.body, h("p", { class: "muted" }, this.teamProblem || "loading the team…"));
      return;
    }
    const states = this.model.agentRows();
    replaceContent(
      this.p.team.body,
      teamView(this.team, states, {
        live: this.model.live,
        onAgent: (name, row) => row && this.selectInvocation(row.first),
      }),
    );
  }

  // drawn again only when the team or the memories change, so a file's text a reader opened stays
  // open (and scrolled)
  drawMemory() {
    if (!this.teamKnown && !this.memoryProblem) {
      replaceContent(this.p.memory.body, h("p", { class: "muted" }, "loading the memory…"));
      return;
    }
    const key = JSON.stringify([this.team?.agents?.map((a) => [a.name, a.memory]) ?? null, this.memory, this.memoryProblem]);
    if (key === this.memoryKey) return;
    this.memoryKey = key;
    replaceContent(this.p.memory.body, memoryNode(this.team, this.memory, this.memoryOpened, this.memoryProblem));
  }

  drawCharts() {
    const m = this.model;
    replaceContent(
      this.p.charts.body,
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
  }

  // the conversations are rebuilt only when they change, so folds a reader opened stay open
  drawConversations() {
    const m = this.model;
    const body = this.p.conversations.body;
    if (this.convKey === m.conversations) return;
    this.convKey = m.conversations;
    const opened = new Set([...body.querySelectorAll("details[open]")].map(detailsKey));
    replaceContent(body, conversationsNode(m.conversations));
    for (const d of body.querySelectorAll("details")) if (opened.has(detailsKey(d))) d.open = true;
  }
}

function detailsKey(node) {
  const seg = node.closest("[data-agent-id]");
  const call = node.closest("[data-call-id]");
  const all = seg ? [...seg.querySelectorAll("details")].indexOf(node) : -1;
  return `${seg?.dataset.agentId}|${call?.dataset.callId}|${all}`;
}

