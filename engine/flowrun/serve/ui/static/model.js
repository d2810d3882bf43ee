// A run as the pages draw it, folded from its events (the lines of events.jsonl, in order):
// the agent instances and their tool calls (the tree), the bars of the timeline (one lane per
// instance: model calls from model_request to model_response, tool calls from tool_call to
// tool_result), token and cost totals per agent and per model, each instance's conversation
// (as `flowrun show --messages` folds it: cli/views/messages_view.py) and the decisions it waits for.
// The live page feeds it event by event from the server; the report feeds it the embedded log.

const CONTINUE_TEXT = "Continue. Call a finish tool when the task is done.";

function repairText(problem) {
  return (
    `Your final answer does not match the required JSON Schema: ${problem}. ` +
    "Answer again with only the corrected JSON value."
  );
}

export function resultText(result) {
  if (!result) return "";
  if (result.status === "error" && result.error) return `[error ${result.error.code}] ${result.text ?? ""}`;
  if (result.status === "partial") return `[partial] ${result.text ?? ""}`;
  return result.text ?? "";
}

function addUsage(table, key, usage, cost) {
  let row = table.get(key);
  if (!row) table.set(key, (row = { key, input: 0, output: 0, cacheRead: 0, calls: 0, cost: null }));
  row.input += usage.input_tokens || 0;
  row.output += usage.output_tokens || 0;
  row.cacheRead += usage.cache_read_tokens || 0;
  row.calls += 1;
  if (cost !== null && cost !== undefined) row.cost = (row.cost || 0) + cost;
}

export class RunModel {
  constructor() {
    this.events = [];
    this.lastSeq = 0;
    this.status = "running";
    this.workflow = "";
    this.inputs = {};
    this.message = "";
    this.start = null;
    this.end = null; // the last run_end's time (a resumed run goes on after it)
    this.lastT = null;
    this.instances = new Map(); // agent_id -> instance
    this.order = []; // agent ids in the order they started
    this.bars = []; // timeline bars, in the order they began
    this.modelBars = new Map(); // "agent_id|step|purpose" -> bar
    this.toolBars = new Map(); // "agent_id|call_id" -> bar
    this.byAgent = new Map();
    this.byModel = new Map();
    this.pending = new Map(); // "agent_id/call_id" -> decision_pending event
    this.decisions = [];
    this.conv = new Conversations();
  }

  feed(e) {
    if (typeof e.seq === "number") {
      if (e.seq <= this.lastSeq) return false; // a repeat (a reconnect): already folded
      this.lastSeq = e.seq;
    }
    this.events.push(e);
    if (e.t) {
      if (this.start === null) this.start = e.t;
      this.lastT = e.t;
    }
    this.conv.feed(e);
    const handler = HANDLERS[e.type];
    if (handler) handler(this, e);
    return true;
  }

  instance(agentId, agent) {
    let inst = this.instances.get(agentId);
    if (!inst) {
      inst = { agent: agent || agentId, agent_id: agentId, parent: null, model: "", start: null, end: null, status: "running", steps: 0, calls: [], children: [], tokens: 0, cost: null, task: "" };
      this.instances.set(agentId, inst);
    }
    return inst;
  }

  pendingList() {
    return [...this.pending.values()];
  }

  // the root instances (no parent, or a parent never seen), in start order
  roots() {
    return this.order.map((id) => this.instances.get(id)).filter((i) => !i.parent || !this.instances.has(i.parent));
  }

  // the lanes of the timeline: instances depth-first, each under its caller
  lanes() {
    const out = [];
    const walk = (inst, depth) => {
      out.push({ inst, depth });
      for (const child of inst.children) walk(this.instances.get(child), depth + 1);
    };
    for (const root of this.roots()) walk(root, 0);
    return out;
  }

  closeOpen(t, outcome) {
    for (const bar of this.bars) {
      if (bar.end === null) {
        bar.end = t;
        bar.outcome = outcome;
      }
    }
  }
}

const HANDLERS = {
  run_start(m, e) {
    m.workflow = e.workflow || m.workflow;
    m.inputs = e.inputs || {};
    m.status = "running";
  },
  run_resumed(m) {
    m.status = "running";
  },
  agent_start(m, e) {
    const inst = m.instance(e.agent_id, e.agent);
    const fresh = inst.start === null;
    inst.agent = e.agent;
    inst.model = e.model || inst.model;
    inst.task = e.task || inst.task;
    inst.status = "running";
    inst.end = null;
    if (fresh) {
      inst.start = e.t;
      inst.parent = e.parent || null;
      m.order.push(e.agent_id);
      const parent = inst.parent && m.instances.get(inst.parent);
      if (parent && !parent.children.includes(e.agent_id)) parent.children.push(e.agent_id);
      const via = parent && parent.calls.find((c) => e.agent_id.endsWith("@" + c.call_id));
      if (via) via.agent_id = e.agent_id;
    }
  },
  agent_end(m, e) {
    const inst = m.instance(e.agent_id, e.agent);
    inst.end = e.t;
    inst.status = e.status;
    inst.steps = e.steps ?? inst.steps;
    inst.error = e.error || null;
    inst.outputFiles = e.output_files || [];
  },
  model_request(m, e) {
    const key = `${e.agent_id}|${e.step}|${e.purpose || ""}`;
    const bar = { kind: "model", lane: e.agent_id, start: e.t, end: null, outcome: "running", label: `${e.agent} step ${e.step}`, model: e.model_id || e.model, step: e.step, seq: e.seq };
    m.modelBars.set(key, bar);
    m.bars.push(bar);
    m.instance(e.agent_id, e.agent).model ||= e.model;
  },
  model_response(m, e) {
    const key = `${e.agent_id}|${e.step}|${e.purpose || ""}`;
    const r = e.response || {};
    const usage = r.usage || {};
    let bar = m.modelBars.get(key);
    if (!bar) {
      bar = { kind: "model", lane: e.agent_id, start: e.t - (e.latency_ms || 0) / 1000, end: null, label: `${e.agent} step ${e.step}`, step: e.step };
      m.bars.push(bar);
    }
    bar.end = e.t;
    bar.outcome = e.replayed ? "replayed" : "ok";
    bar.tokens = (usage.input_tokens || 0) + (usage.output_tokens || 0);
    bar.cost = e.cost_usd ?? null;
    bar.model = e.served_by || r.model || bar.model;
    bar.toolCalls = (r.tool_calls || []).map((c) => c.name);
    const inst = m.instance(e.agent_id, e.agent);
    inst.tokens += bar.tokens;
    if (e.cost_usd !== null && e.cost_usd !== undefined) inst.cost = (inst.cost || 0) + e.cost_usd;
    addUsage(m.byAgent, e.agent, usage, e.cost_usd);
    addUsage(m.byModel, bar.model || "?", usage, e.cost_usd);
  },
  tool_call(m, e) {
    const key = `${e.agent_id}|${e.call_id}`;
    if (m.toolBars.has(key)) return; // re-dispatched after a resume
    const bar = { kind: "tool", lane: e.agent_id, start: e.t, end: null, outcome: "running", label: e.tool, tool: e.tool, call_id: e.call_id, arguments: e.arguments, seq: e.seq };
    m.toolBars.set(key, bar);
    m.bars.push(bar);
    m.instance(e.agent_id, e.agent).calls.push({ call_id: e.call_id, tool: e.tool, arguments: e.arguments, result: null, agent_id: null, bar });
  },
  tool_result(m, e) {
    const bar = m.toolBars.get(`${e.agent_id}|${e.call_id}`);
    const status = (e.result && e.result.status) || "success";
    if (bar) {
      bar.end = e.t;
      bar.outcome = status;
      bar.result = e.result;
    }
    const call = m.instance(e.agent_id, e.agent).calls.find((c) => c.call_id === e.call_id);
    if (call) call.result = e.result;
  },
  decision_pending(m, e) {
    m.pending.set(`${e.agent_id}/${e.call_id}`, e);
    const bar = m.toolBars.get(`${e.agent_id}|${e.call_id}`);
    if (bar && bar.end === null) bar.outcome = "waiting";
  },
  decision(m, e) {
    m.pending.delete(`${e.agent_id}/${e.call_id}`);
    m.decisions.push(e);
  },
  error(m, e) {
    if (!e.agent_id) return;
    for (const bar of m.bars) if (bar.lane === e.agent_id && bar.end === null && bar.kind === "model") {
      bar.end = e.t;
      bar.outcome = "error";
    }
  },
  run_end(m, e) {
    m.status = e.status;
    m.message = e.message || "";
    m.end = e.t;
    m.usage = e.usage || m.usage;
    m.closeOpen(e.t, e.status === "waiting" ? "waiting" : "interrupted");
    for (const inst of m.instances.values()) if (inst.end === null) inst.status = e.status === "waiting" ? "waiting" : "interrupted";
  },
};

// ------------------------------------------------------------------ conversations

// Instances and the segments of their conversations, as cli/views/messages_view.py folds them: a
// sub-agent's conversation sits under the call that ran it.
export class Conversations {
  constructor() {
    this.instances = new Map();
    this.roots = []; // top-level segments, and iteration notes between them
  }

  feed(e) {
    switch (e.type) {
      case "agent_prompt": return this.prompt(e);
      case "agent_start": return this.start(e);
      case "agent_end": return this.endSegment(e);
      case "model_request": return this.request(e);
      case "model_response": return this.response(e);
      case "tool_call": return this.toolCall(e);
      case "tool_result": return this.toolResult(e);
      case "user_message": return this.add(e.agent_id, { role: "user", kind: "message", text: e.text });
      case "output_invalid": return this.add(e.agent_id, { role: "user", kind: "engine", text: repairText(e.problem) });
      case "context_reset":
        return this.add(e.agent_id, { role: "note", kind: "reset", text: `context reset: ${e.messages_before} → ${e.messages_after} messages` });
      case "context_compacted":
        return this.add(e.agent_id, { role: "note", kind: "compacted", text: `context compacted: ${e.messages_before} → ${e.messages_after} messages\n${e.transcript}` });
      case "error":
        if (e.agent_id) this.add(e.agent_id, { role: "note", kind: "error", text: `error (${e.where}): ${e.message}` });
        return;
      case "iteration_start":
        this.roots.push({ role: "note", kind: "iteration", text: `iteration ${e.iteration} of ${e.loop}` });
        return;
      default:
        return;
    }
  }

  inst(agent, agentId) {
    let inst = this.instances.get(agentId);
    if (!inst) this.instances.set(agentId, (inst = { agent, agent_id: agentId, parent: null, model: "", session: null, segments: [], pending: [] }));
    return inst;
  }

  segment(agentId) {
    const inst = this.instances.get(agentId || "");
    return inst && inst.segments.length ? inst.segments[inst.segments.length - 1] : null;
  }

  add(agentId, turn) {
    const seg = this.segment(agentId);
    if (seg) seg.turns.push({ calls: [], ...turn });
  }

  prompt(e) {
    const inst = this.inst(e.agent, e.agent_id);
    inst.model = e.model || inst.model;
    inst.tools = e.tools || [];
    const seg = this.segment(e.agent_id);
    if (seg && seg.open) seg.turns.push({ role: "system", kind: "updated", text: e.system, calls: [] });
    else inst.pending = [{ role: "system", kind: "", text: e.system, calls: [] }];
  }

  start(e) {
    const inst = this.inst(e.agent, e.agent_id);
    inst.parent = e.parent || null;
    inst.session = e.session || inst.session;
    const seg = { instance: inst, turns: [...inst.pending, { role: "user", kind: "task", text: e.task || "", calls: [] }], model: e.model || inst.model, ongoing: inst.segments.length > 0, open: true };
    inst.pending = [];
    inst.segments.push(seg);
    const call = this.calling(e);
    if (call) call.segments.push(seg);
    else this.roots.push(seg);
  }

  calling(e) {
    const parent = this.segment(e.parent);
    if (!parent) return null;
    const open = parent.turns.filter((t) => t.role === "assistant").flatMap((t) => t.calls).filter((c) => !c.result);
    const byId = open.find((c) => e.agent_id.endsWith("@" + c.id));
    if (byId) return byId;
    const named = open.filter((c) => c.name === e.agent);
    const fresh = named.filter((c) => !c.segments.some((s) => s.instance.agent_id === e.agent_id));
    return fresh[0] || named[0] || null;
  }

  endSegment(e) {
    const seg = this.segment(e.agent_id);
    if (!seg) return;
    const steps = e.steps !== null && e.steps !== undefined ? ` after ${e.steps} step(s)` : "";
    seg.turns.push({ role: "note", kind: "end", text: `${e.status}${steps}` + (e.error ? `: ${e.error}` : ""), calls: [] });
    seg.open = false;
  }

  request(e) {
    const seg = this.segment(e.agent_id);
    if (!seg || e.purpose || !seg.turns.length) return;
    const last = seg.turns[seg.turns.length - 1];
    if (last.role === "assistant" && !last.calls.length) seg.turns.push({ role: "user", kind: "engine", text: CONTINUE_TEXT, calls: [] });
  }

  response(e) {
    if (e.purpose) return;
    const r = e.response || {};
    const calls = (r.tool_calls || []).map((c) => ({ id: c.id, name: c.name, arguments: c.arguments ?? c.raw_arguments ?? {}, dispatched: false, result: null, segments: [] }));
    const thinking = (r.thinking || []).map((b) => b.thinking || "").filter(Boolean).join("\n");
    this.add(e.agent_id, { role: "assistant", text: r.text || "", calls, thinking });
  }

  lastCalls(agentId) {
    const seg = this.segment(agentId);
    if (!seg) return [];
    for (let i = seg.turns.length - 1; i >= 0; i--) if (seg.turns[i].role === "assistant") return seg.turns[i].calls;
    return [];
  }

  toolCall(e) {
    const calls = this.lastCalls(e.agent_id);
    let call = calls.find((c) => c.id === e.call_id) || calls.find((c) => c.name === e.tool && !c.dispatched);
    if (!call) {
      const seg = this.segment(e.agent_id);
      if (!seg) return;
      call = { id: e.call_id, name: e.tool, arguments: e.arguments, dispatched: true, result: null, segments: [] };
      seg.turns.push({ role: "assistant", text: "", calls: [call] });
    }
    call.id = e.call_id;
    call.arguments = e.arguments;
    call.dispatched = true;
  }

  toolResult(e) {
    const seg = this.segment(e.agent_id);
    if (!seg) return;
    for (let i = seg.turns.length - 1; i >= 0; i--) {
      for (const call of seg.turns[i].calls) {
        if (call.id === e.call_id && !call.result) {
          call.result = e.result;
          return;
        }
      }
    }
  }
}
