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

  // usage per agent and per model, from the summary's rows per agent and model
  usageBy(field) {
    const rows = new Map();
    for (const r of this.summary?.usage?.by_agent_model || []) {
      const key = r[field];
      let row = rows.get(key);
      if (!row) rows.set(key, (row = { key, input: 0, output: 0, calls: 0, cost: null }));
      row.input += r.usage.input_tokens || 0;
      row.output += r.usage.output_tokens || 0;
      row.calls += r.calls || 0;
      if (r.cost_usd !== null && r.cost_usd !== undefined) row.cost = (row.cost || 0) + r.cost_usd;
    }
    return [...rows.values()];
  }

  pendingList() {
    return this.summary?.pending || [];
  }
}
