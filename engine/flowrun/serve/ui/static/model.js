// A run as the pages draw it: the server's summary of it (GET /v1/runs/ID: runtime/summary/ in
// Python, the one `flowrun show`, `flowrun runs` and the HTTP API read) and its conversations
// (GET /v1/runs/ID/conversations), indexed for drawing. Nothing here folds events: what a run
// is, its state, tokens and cost, is said once, by the server.

export class RunModel {
  constructor(summary = null, conversations = []) {
    this.set(summary, conversations);
  }

  set(summary, conversations = this.conversations) {
    this.summary = summary;
    this.conversations = conversations || [];
    const s = summary || {};
    this.status = s.status || "running";
    this.invocations = s.invocations || [];
    this.spans = s.spans || [];
    this.start = s.started ?? null;
    // the axis reaches the last event (or the server's now, while the run goes on)
    this.lastT = Math.max(s.started ?? 0, ...this.spans.map((b) => b.end ?? b.start), ...this.invocations.map((i) => i.end ?? i.start));
    this.now = s.now ?? null;
    this.lastSeq = s.last_seq || 0;
    this.keyed = null;
  }

  // whether open bars grow to the clock: the run goes on, or waits for a person
  get live() {
    return this.status === "running" || this.status === "waiting";
  }

  // the lanes of the timeline: invocations in the order the tree shows them, each under its
  // caller, with its depth
  lanes() {
    const out = [];
    const seen = new Set();
    const walkItems = (items, depth) => {
      for (const item of items || []) {
        if (item.agent !== undefined) walk(this.invocations[item.agent], depth);
        else if (item.call !== undefined) continue;
        else if (item.group) walkItems(item.group.items, depth);
      }
    };
    const walk = (inv, depth) => {
      if (!inv || seen.has(inv.index)) return;
      seen.add(inv.index);
      out.push({ inst: inv, depth });
      for (const item of inv.items) {
        if (item.agent !== undefined) walk(this.invocations[item.agent], depth + 1);
        else if (item.call !== undefined) for (const i of inv.calls[item.call]?.agents || []) walk(this.invocations[i], depth + 1);
      }
    };
    walkItems(this.summary?.tree, 0);
    for (const inv of this.invocations) walk(inv, 0); // (none should be left: a damaged log)
    return out;
  }

  // a lane's name: the agent and what it was asked (a foreach item, a task), and its number
  // among lanes that would read the same
  laneNames() {
    const names = new Map();
    const counts = new Map();
    for (const { inst } of this.lanes()) {
      const task = String(inst.task || "").split("\n").find((line) => line.trim()) || "";
      const base = inst.agent + (task ? " · " + task.trim() : "");
      const n = (counts.get(base) || 0) + 1;
      counts.set(base, n);
      names.set(inst.index, n > 1 ? `${base} (#${n})` : base);
    }
    return names;
  }

  // a span's key, stable across refreshes of the summary
  spanKey(span) {
    return [span.kind, span.agent_id || this.invocations[span.lane]?.agent_id || span.lane, span.step ?? "", span.call_id ?? "", span.purpose ?? "", span.start].join("|");
  }

  spanByKey(key) {
    if (!this.keyed) this.keyed = new Map(this.spans.map((s) => [this.spanKey(s), s]));
    return this.keyed.get(key) || null;
  }

  // every bar in the order it began (what j and k walk through)
  ordered() {
    return [...this.spans].sort((a, b) => a.start - b.start || a.lane - b.lane);
  }

  invocationOf(agentId) {
    let found = null;
    for (const inv of this.invocations) if (inv.agent_id === agentId) found = inv;
    return found;
  }

  call(agentId, callId) {
    return this.invocationOf(agentId)?.calls?.[callId] || null;
  }

  // the tool bar of a call, and the model bar of a step
  toolSpan(agentId, callId) {
    return this.spans.find((s) => s.kind === "tool" && s.call_id === callId && (s.agent_id || this.invocations[s.lane]?.agent_id) === agentId) || null;
  }

  modelSpan(agentId, step) {
    return this.spans.find((s) => s.kind === "model" && s.step === step && !s.purpose && (s.agent_id || this.invocations[s.lane]?.agent_id) === agentId) || null;
  }

  decisionFor(agentId, callId) {
    return (this.summary?.decisions || []).find((d) => d.call_id === callId && (d.agent_id || "") === (agentId || "")) || null;
  }

  // a call of an agent instance that ran other agents (its bar holds theirs)
  isContainer(span) {
    if (span.kind !== "tool") return false;
    const inv = this.invocations[span.lane];
    return Boolean(inv?.calls?.[span.call_id]?.agents?.length);
  }

  // per agent name, the summary's row (runtime/summary/per_agent.py): its state, runs,
  // steps, tokens, cost and first invocation
  agentRows() {
    return new Map((this.summary?.agents || []).map((row) => [row.agent, row]));
  }

  // usage per agent or per model (`field`), as the summary sums it, shaped for the charts
  usageBy(field) {
    return (this.summary?.usage?.["by_" + field] || []).map((r) => ({
      key: r[field],
      input: r.usage.input_tokens || 0,
      output: r.usage.output_tokens || 0,
      calls: r.calls || 0,
      cost: r.cost_usd ?? null,
    }));
  }

  pendingList() {
    return this.summary?.pending || [];
  }
}
