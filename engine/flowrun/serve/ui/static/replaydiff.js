// `replay --diff` as a page: the model steps of a run and of its replay (the folder
// RUN-replay) side by side, paired by agent instance and step, as the server compares them
// (GET /v1/runs/ID/replay: runtime/summary/folder.py replay_steps); the first step that differs
// is where the replay diverged.
import { h } from "./dom.js";

function side(text) {
  if (text === null || text === undefined) return h("td", { class: "missing" }, "(no such step)");
  return h("td", {}, h("pre", { class: "text" }, String(text).replace(/^\n/, "") || "(no answer)"));
}

// `sides`: the two columns' names (the recording and its replay, or two runs compared)
export function replayDiffNode(replay, sides = ["recorded", "replayed"]) {
  const first = replay.first_difference;
  const rows = replay.steps.map((row) => h("tr", { class: row.same ? "same" : "differs", "data-step": row.step }, h("th", {}, row.step), side(row.recorded), side(row.replayed)));
  return h(
    "div",
    { class: "replay-diff" },
    sides[0] === "recorded" ? h("p", {}, first === null ? `the replay ${replay.name} took the same steps` : `the replay ${replay.name} first differs at ${first}`) : null,
    h("div", { class: "table-box" }, h("table", { class: "diff" }, h("thead", {}, h("tr", {}, h("th", { scope: "col" }, "step"), h("th", { scope: "col" }, sides[0]), h("th", { scope: "col" }, sides[1]))), h("tbody", {}, rows))),
  );
}
