// `replay --diff` as a page: the model steps of a run and of its replay (the folder
// RUN-replay) side by side, paired by agent instance and step; a step whose answer, tool calls
// or request digest differ is marked, and the first one is where the replay diverged.
import { h, jsonText } from "./dom.js";

function steps(events) {
  const out = new Map();
  for (const e of events) {
    if (e.type !== "model_request" && e.type !== "model_response") continue;
    const key = `${e.agent_id}#${e.step}${e.purpose ? "/" + e.purpose : ""}`;
    const row = out.get(key) || { key, agent_id: e.agent_id, step: e.step };
    if (e.type === "model_request") row.digest = `${e.digest}/${e.system_digest || ""}/${e.tools_digest || ""}`;
    else row.answer = (e.response?.text || "") + (e.response?.tool_calls || []).map((c) => `\n→ ${c.name} ${jsonText(c.arguments)}`).join("");
    out.set(key, row);
  }
  return out;
}

function side(row) {
  if (!row) return h("td", { class: "missing" }, "(no such step)");
  return h("td", {}, h("pre", { class: "text" }, row.answer ?? "(no answer)"));
}

export function replayDiffNode(recorded, replayed, name) {
  const a = steps(recorded);
  const b = steps(replayed);
  const keys = [...new Set([...a.keys(), ...b.keys()])];
  let first = null;
  const rows = keys.map((key) => {
    const x = a.get(key);
    const y = b.get(key);
    const same = x && y && x.answer === y.answer && x.digest === y.digest;
    if (!same && first === null) first = key;
    return h("tr", { class: same ? "same" : "differs", "data-step": key }, h("th", {}, key), side(x), side(y));
  });
  return h(
    "div",
    { class: "replay-diff" },
    h("p", {}, first === null ? `the replay ${name} took the same steps` : `the replay ${name} first differs at ${first}`),
    h("table", { class: "diff" }, h("thead", {}, h("tr", {}, h("th", {}, "step"), h("th", {}, "recorded"), h("th", {}, "replayed"))), h("tbody", {}, rows)),
  );
}
