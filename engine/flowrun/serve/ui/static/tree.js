// The tree of agents and tool calls, as `flowrun show` draws it: each agent with its tool calls,
// the agents a call ran under it, notes and loop iterations in order. An agent and a call are
// buttons: they select that invocation or that call (the run page shows it in Details).
import { h, fmtCost, fmtTokens, fmtDuration, statusBadge } from "./dom.js";

function treeItems(ctx, items, calls, depth) {
  return (items || []).map((item) => {
    if (item.agent !== undefined) return h("li", {}, treeNode(ctx, ctx.model.invocations[item.agent], depth));
    if (item.call !== undefined) return treeCall(ctx, calls[item.call], depth);
    if (item.group) {
      const g = item.group;
      return h("li", { class: "tree-group", "data-kind": g.kind }, h("span", { class: "group-label" }, g.label + (g.outcome ? " · " + g.outcome : "")), h("ul", {}, treeItems(ctx, g.items, calls, depth)));
    }
    return h("li", { class: "tree-note note-" + item.note.level }, item.note.text);
  });
}

function treeCall(ctx, call, depth) {
  if (!call) return null;
  const inv = ctx.owner(call);
  const spent = call.end !== null ? fmtDuration(call.end - call.start) : "…";
  const agents = call.agents.map((i) => h("li", {}, treeNode(ctx, ctx.model.invocations[i], depth + 1)));
  return h(
    "li",
    { class: "tree-call", "data-tool": call.tool },
    h(
      "button",
      { type: "button", class: "tree-btn", "aria-label": `${call.tool} call, ${call.status}`, onclick: () => ctx.onCall(inv, call) },
      h("span", { class: "tool-name" }, call.tool),
      " ",
      statusBadge(call.status),
      h("span", { class: "muted" }, " " + spent + (call.error ? " · " + call.error : "")),
    ),
    agents.length ? h("ul", {}, agents) : null,
  );
}

function treeNode(ctx, inv, depth) {
  if (!inv) return null;
  const spent = inv.end && inv.start ? ` · ${fmtDuration(inv.end - inv.start)}` : "";
  const head = h(
    "button",
    { type: "button", class: "tree-btn tree-agent", "aria-label": `${inv.agent}, ${inv.status}`, onclick: (e) => (e.preventDefault(), ctx.onInvocation(inv)) },
    h("strong", {}, inv.agent),
    " ",
    statusBadge(inv.status),
    h("span", { class: "muted" }, ` ${inv.model || ""} · ${inv.steps} step(s) · ${fmtTokens(inv.total_tokens)} tokens · ${fmtCost(inv.cost_usd)}${spent}`),
  );
  const body = h("ul", {}, treeItems(ctx, inv.items, inv.calls, depth));
  // deep and long trees start folded below the second level: the page stays a page (a click on
  // the agent selects it; the marker beside it folds it)
  const open = depth < 2 || inv.items.length <= 12;
  return h("details", { class: "tree-node", open, "data-agent-id": inv.agent_id, "data-index": String(inv.index) }, h("summary", {}, head), body);
}

// `onInvocation(inv)` and `onCall(inv, call)`: what a click on a node selects
export function treeView(model, { onInvocation = () => {}, onCall = () => {} } = {}) {
  const tree = model.summary?.tree || [];
  if (!tree.length) return h("p", { class: "muted" }, "no agent has started yet");
  const owners = new Map();
  for (const inv of model.invocations) for (const id of Object.keys(inv.calls || {})) owners.set(inv.calls[id], inv);
  const ctx = { model, onInvocation, onCall, owner: (call) => owners.get(call) };
  const notes = (model.summary?.notes || []).map((n) => h("li", { class: "tree-note note-" + n.level }, n.text));
  return h("div", { class: "tree" }, h("ul", {}, treeItems(ctx, tree, {}, 0), notes));
}
