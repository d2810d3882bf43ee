// The Details panel of the run page: the step a timeline bar, a tree node or j/k selected. A
// model call: its answer, the request as sent (the system prompt, the messages before it, the
// tools offered), tokens, latency, cost, retries and fallbacks. A tool call: its arguments, its
// result whole, the decision taken on it and the agents it ran. A wait: what it waited for and
// who decided, when and why. An agent: its task, state and totals. What an instance was asked
// comes from `source.agent(agentId)` (GET /v1/runs/ID/agent, or the report's embedded copy).
import { h, replaceContent, fmtCost, fmtTokens, fmtDuration, fmtTime, statusBadge, jsonText, folded, argsNode, factList, timeNode } from "./dom.js";
import { barLabel } from "./timeline.js";

const SHOWN_MESSAGES = 6; // the latest messages of a request shown open; earlier ones folded

function took(a, b) {
  return a !== null && a !== undefined && b !== null && b !== undefined ? fmtDuration(b - a) : "still going";
}

function section(title, ...body) {
  return h("section", { class: "detail-part" }, h("h4", {}, title), ...body);
}

function messageNode(turn) {
  const role = turn.role === "user" ? { task: "task", engine: "from flowrun", message: "user" }[turn.kind] || "user" : turn.role;
  const calls = (turn.calls || []).map((c) => h("div", { class: "msg-call" }, h("span", { class: "tool-name" }, "→ " + c.name), argsNode(c.arguments)));
  const results = (turn.calls || []).filter((c) => c.result).map((c) => h("div", { class: "msg-result result-" + c.result.status }, h("div", { class: "role" }, `tool result · ${c.name} · ${c.result.status}`), folded(c.result.text, 8, 800)));
  return h("li", { class: "msg msg-" + turn.role }, h("div", { class: "role" }, role + (turn.step ? ` · step ${turn.step}` : "")), turn.text ? folded(turn.text, 12, 1500) : null, calls, results);
}

// the turns the model had read when it was asked for `step`: those before its answer (from the
// last reset or compaction on), the system prompt apart
function requestTurns(instance, step) {
  const turns = instance.turns || [];
  let end = turns.findIndex((t) => t.role === "assistant" && t.step === step);
  if (end < 0) end = turns.length;
  let from = 0;
  for (let i = 0; i < end; i++) if (turns[i].role === "note" && (turns[i].kind === "reset" || turns[i].kind === "compacted")) from = i;
  return { before: turns.slice(from, end).filter((t) => t.role !== "system"), answer: turns[end] || null };
}

function promptAt(instance, step) {
  let found = null;
  for (const p of instance.prompts || []) if (p.from_step <= step) found = p;
  return found || (instance.prompts || [])[0] || null;
}

function toolsNode(tools) {
  if (!tools || !tools.length) return h("p", { class: "muted" }, "no tools");
  return h(
    "ul",
    { class: "tools-offered" },
    tools.map((t) => h("li", {}, h("details", {}, h("summary", {}, h("span", { class: "tool-name" }, t.name), t.description ? h("span", { class: "muted" }, " — " + String(t.description).split("\n")[0]) : null), t.description ? h("p", {}, t.description) : null, h("pre", { class: "text" }, jsonText(t.parameters ?? t.input_schema ?? {}))))),
  );
}

function findCall(instance, callId) {
  for (const turn of instance?.turns || []) for (const call of turn.calls || []) if (call.id === callId) return call;
  return null;
}

// what was decided, in the server's words (Decision.verdict of runtime/durable/decisions.py)
export function decisionText(d) {
  return d ? d.said || null : null;
}

export function decisionFacts(d) {
  return factList([
    ["decision", decisionText(d)],
    ["by", d.by + (d.user ? ` (${d.user})` : "")],
    ["when", d.at ? timeNode(d.at) : null],
    ["reason", d.reason || null],
  ]);
}

export class DetailsPanel {
  constructor(node, model, source, { onSelectSpan, onSelectInvocation, onConversation } = {}) {
    this.node = node;
    this.model = model;
    this.source = source;
    this.onSelectSpan = onSelectSpan || (() => {});
    this.onSelectInvocation = onSelectInvocation || (() => {});
    this.onConversation = onConversation || (() => {});
    this.current = null;
    this.instances = new Map(); // agent id -> {seq, promise}
    this.empty();
  }

  empty() {
    this.current = null;
    replaceContent(this.node, h("p", { class: "muted" }, "Select a bar of the timeline or a node of the tree (or press j and k) to see that step here: the request as sent, the answer, tool arguments and results."));
  }

  // an instance as asked, fetched again when the run wrote more since (it may still go on)
  instance(agentId) {
    const seq = this.model.lastSeq;
    const kept = this.instances.get(agentId);
    if (kept && (kept.seq === seq || kept.done)) return kept.promise;
    const inv = this.model.invocationOf(agentId);
    const promise = this.source.agent ? this.source.agent(agentId) : Promise.resolve(null);
    this.instances.set(agentId, { seq, promise, done: Boolean(inv && inv.end !== null && !this.model.live) });
    return promise;
  }

  show(selection) {
    this.current = selection;
    this.draw();
  }

  // the summary changed: draw the selection again (a bar that was open may have ended)
  refresh() {
    if (this.current) this.draw();
  }

  draw() {
    const sel = this.current;
    if (sel.type === "invocation") return this.drawInvocation(this.model.invocations[sel.index]);
    const span = this.model.spanByKey(sel.key);
    if (!span) return this.empty();
    if (span.kind === "model") return this.drawModel(span);
    if (span.kind === "wait") return this.drawWait(span);
    return this.drawTool(span);
  }

  head(title, status, inv) {
    return h(
      "header",
      { class: "detail-head" },
      h("h3", {}, title, " ", statusBadge(status)),
      inv ? h("button", { type: "button", class: "link-btn", onclick: () => this.onSelectInvocation(inv.index) }, inv.agent_id) : null,
    );
  }

  later(agentId, fill) {
    const slot = h("div", { class: "detail-later" }, h("p", { class: "muted" }, "loading what it was asked…"));
    this.instance(agentId).then(
      (instance) => {
        if (slot.isConnected) replaceContent(slot, instance ? fill(instance) : h("p", { class: "muted" }, "its conversation is not recorded"));
      },
      (e) => replaceContent(slot, h("p", { class: "error" }, String(e.message || e))),
    );
    return slot;
  }

  drawModel(span) {
    const inv = this.model.invocations[span.lane];
    const agentId = span.agent_id || inv?.agent_id;
    const facts = factList([
      ["model", span.model || inv?.model],
      ["started", fmtTime(span.start)],
      ["latency", span.latency_ms !== null && span.latency_ms !== undefined ? fmtDuration(span.latency_ms / 1000) : took(span.start, span.end)],
      ["tokens", span.tokens !== null && span.tokens !== undefined ? `${fmtTokens(span.tokens)} (${fmtTokens(span.input_tokens)} in, ${fmtTokens(span.output_tokens)} out)` : null],
      ["cost", span.cost_usd !== null && span.cost_usd !== undefined ? fmtCost(span.cost_usd) : null],
      ["retries", span.retries?.length ? h("ul", {}, span.retries.map((r) => h("li", {}, r))) : "none"],
      ["fallbacks", span.fallbacks?.length ? h("ul", {}, span.fallbacks.map((r) => h("li", {}, r))) : null],
    ]);
    const body = this.later(agentId, (instance) => {
      const { before, answer } = requestTurns(instance, span.step);
      const prompt = promptAt(instance, span.step);
      const early = before.slice(0, Math.max(0, before.length - SHOWN_MESSAGES));
      const late = before.slice(early.length);
      const calls = (answer?.calls || []).map((c) =>
        h(
          "li",
          {},
          h("button", { type: "button", class: "link-btn tool-name", onclick: () => this.selectCall(agentId, c.id) }, c.name),
          argsNode(c.arguments),
        ),
      );
      return [
        section(
          "Answer",
          answer?.thinking ? h("details", { class: "thinking" }, h("summary", {}, "thinking"), folded(answer.thinking)) : null,
          answer ? (answer.text ? folded(answer.text, 20, 3000) : calls.length ? null : h("p", { class: "muted" }, "(no text)")) : h("p", { class: "muted" }, span.end === null ? "waiting for the model" : "no answer recorded"),
          calls.length ? h("div", {}, h("div", { class: "role" }, "tool calls it asked for"), h("ul", { class: "asked-calls" }, calls)) : null,
        ),
        section(
          "Request as sent",
          h("details", { class: "system-prompt", open: true }, h("summary", {}, "system prompt"), prompt ? h("pre", { class: "text prompt-text" }, prompt.system) : h("p", { class: "muted" }, "not recorded")),
          h(
            "details",
            { class: "messages", open: true },
            h("summary", {}, `messages (${before.length})`),
            early.length ? h("details", { class: "earlier" }, h("summary", {}, `${early.length} earlier message(s)`), h("ol", { class: "msgs" }, early.map(messageNode))) : null,
            h("ol", { class: "msgs" }, late.map(messageNode)),
          ),
          h("details", { class: "tools" }, h("summary", {}, `tools offered (${prompt?.tools?.length ?? 0})`), toolsNode(prompt?.tools)),
        ),
      ];
    });
    replaceContent(this.node, this.head(`${inv?.agent || "?"} · ${barLabel(span)}`, span.outcome, inv), facts, this.conversationButton(agentId), body);
  }

  drawTool(span) {
    const inv = this.model.invocations[span.lane];
    const agentId = span.agent_id || inv?.agent_id;
    const call = inv?.calls?.[span.call_id] || null;
    const decision = this.model.decisionFor(agentId, span.call_id);
    const ran = (call?.agents || []).map((i) => this.model.invocations[i]).filter(Boolean);
    const facts = factList([
      ["call id", span.call_id],
      ["started", fmtTime(span.start)],
      ["took", took(span.start, span.end)],
      ["error", call?.error || null],
    ]);
    const body = this.later(agentId, (instance) => {
      const found = findCall(instance, span.call_id);
      const result = found?.result;
      return section(
        "Result",
        result
          ? [
              factList([
                ["status", statusBadge(result.status)],
                ["error", result.error ? `${result.error.code}: ${result.error.message}` : null],
                ["time", result.stats?.time_ms !== undefined ? fmtDuration(result.stats.time_ms / 1000) : null],
                ["path", result.context?.path_resolved || null],
              ]),
              h("pre", { class: "text result-text" }, result.text),
            ]
          : h("p", { class: "muted" }, span.end === null ? "no result yet" : "no result recorded"),
      );
    });
    replaceContent(
      this.node,
      this.head(`${span.tool} · ${inv?.agent || "?"}`, call?.status || span.outcome, inv),
      facts,
      section("Arguments", argsNode(call ? call.arguments : {})),
      body,
      decision ? section("Decision", decisionFacts(decision)) : null,
      ran.length ? section("Agents it ran", h("ul", {}, ran.map((i) => h("li", {}, h("button", { type: "button", class: "link-btn", onclick: () => this.onSelectInvocation(i.index) }, `${i.agent} (${i.status})`))))) : null,
    );
  }

  drawWait(span) {
    const inv = this.model.invocations[span.lane];
    const decision = this.model.decisionFor(span.agent_id || "", span.call_id);
    const pending = (this.model.pendingList() || []).find((p) => p.call_id === span.call_id);
    replaceContent(
      this.node,
      this.head(span.label, span.outcome, span.agent_id ? inv : null),
      factList([
        ["since", fmtTime(span.start)],
        ["waited", took(span.start, span.end ?? (this.model.live ? this.model.now : null))],
        ["tool", span.tool || null],
      ]),
      pending?.arguments ? section("Arguments", argsNode(pending.arguments)) : null,
      pending?.question ? section("Question", h("p", {}, pending.question)) : null,
      decision ? section("Decision", decisionFacts(decision)) : h("p", { class: "muted" }, pending ? "nobody has decided yet" : "no decision recorded"),
      span.tool && span.agent_id ? h("button", { type: "button", class: "link-btn", onclick: () => this.selectCall(span.agent_id, span.call_id) }, "the tool call") : null,
    );
  }

  drawInvocation(inv) {
    if (!inv) return this.empty();
    const first = this.model.modelSpan(inv.agent_id, 1);
    replaceContent(
      this.node,
      this.head(inv.agent, inv.status, null),
      factList([
        ["instance", inv.agent_id],
        ["model", inv.model],
        ["started", fmtTime(inv.start)],
        ["took", took(inv.start, inv.end)],
        ["steps", String(inv.steps)],
        ["tokens", `${fmtTokens(inv.total_tokens)} own · ${fmtTokens(inv.subtree_tokens)} with the agents it ran`],
        ["cost", `${fmtCost(inv.cost_usd)} own · ${fmtCost(inv.subtree_cost_usd)} with the agents it ran`],
        ["budget", inv.budget ? Object.entries(inv.budget).map(([k, v]) => `${k} ${v}`).join(", ") : null],
        ["error", inv.error],
        ["files", inv.output_files?.length ? inv.output_files.join(", ") : null],
      ]),
      section("Task", inv.task ? folded(inv.task, 20, 3000) : h("p", { class: "muted" }, "(none)")),
      first ? h("button", { type: "button", class: "link-btn", onclick: () => this.onSelectSpan(this.model.spanKey(first)) }, "its first model call") : null,
      this.conversationButton(inv.agent_id),
    );
  }

  conversationButton(agentId) {
    return h("button", { type: "button", class: "link-btn", onclick: () => this.onConversation(agentId) }, "Show its conversation");
  }

  selectCall(agentId, callId) {
    const span = this.model.toolSpan(agentId, callId);
    if (span) this.onSelectSpan(this.model.spanKey(span));
  }
}
