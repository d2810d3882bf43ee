// Each agent's conversation (`flowrun show --messages` as a page): the system prompt, the task,
// the model's answers with their tool calls (arguments) and the results it read (as logged:
// redacted), long texts folded; a sub-agent's conversation nested under the call that ran it.
import { h, folded, jsonText, statusBadge } from "./dom.js";

function turnNode(turn) {
  if (turn.role === "system") {
    const label = turn.kind === "updated" ? "system (re-rendered: more tools bound)" : "system prompt";
    return h("details", { class: "turn turn-system" }, h("summary", {}, label), folded(turn.text));
  }
  if (turn.role === "user") {
    const label = { task: "task", engine: "from flowrun", message: "user" }[turn.kind] || "user";
    return h("div", { class: "turn turn-user" }, h("div", { class: "role" }, label), folded(turn.text));
  }
  if (turn.role === "note") {
    const [first, ...rest] = String(turn.text).split("\n");
    return h("div", { class: "turn turn-note note-" + turn.kind }, h("span", {}, first), rest.length ? folded(rest.join("\n")) : null);
  }
  return answerNode(turn);
}

function answerNode(turn) {
  const box = h("div", { class: "turn turn-assistant" }, h("div", { class: "role" }, "assistant"));
  if (turn.thinking) box.appendChild(h("details", { class: "thinking" }, h("summary", {}, "thinking"), folded(turn.thinking)));
  if (turn.text || !turn.calls.length) box.appendChild(h("div", { class: "answer-text" }, folded(turn.text || "(no text)")));
  for (const call of turn.calls) box.appendChild(callNode(call));
  return box;
}

function callNode(call) {
  const node = h(
    "div",
    { class: "call", "data-tool": call.name, "data-call-id": call.id },
    h("div", { class: "call-head" }, h("span", { class: "arrow" }, "→ "), h("span", { class: "tool-name" }, call.name), h("span", { class: "call-id" }, " [" + call.id + "]")),
    h("div", { class: "call-args" }, folded(jsonText(call.arguments), 12, 1200)),
  );
  for (const seg of call.segments) node.appendChild(h("div", { class: "nested" }, segmentNode(seg)));
  const r = call.result;
  node.appendChild(
    r
      ? h("div", { class: "call-result result-" + r.status }, h("div", { class: "role" }, "result: ", statusBadge(r.status)), folded(r.text))
      : h("div", { class: "call-result result-none" }, "no result yet"),
  );
  return node;
}

export function segmentNode(seg) {
  const facts = [seg.agent_id, "model " + (seg.model || "?")].concat(seg.session ? ["session " + seg.session] : []);
  return h(
    "section",
    { class: "segment", "data-agent": seg.agent, "data-agent-id": seg.agent_id },
    h("h4", {}, seg.agent, h("span", { class: "muted" }, " · " + facts.join(" · "))),
    seg.ongoing ? h("p", { class: "muted" }, "(its conversation goes on from its earlier call)") : null,
    seg.turns.map(turnNode),
  );
}

// `conversations`: GET /v1/runs/ID/conversations (runtime/summary/conversations.py)
export function conversationsNode(conversations) {
  if (!conversations.length) return h("p", { class: "muted" }, "no conversation yet");
  return h("div", { class: "conversations" }, conversations.map((item) => (item.role ? turnNode({ calls: [], ...item }) : segmentNode(item))));
}
