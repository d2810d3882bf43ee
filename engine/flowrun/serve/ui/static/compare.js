// Two runs side by side (/compare?a=RUN&b=RUN, GET /v1/compare: serve/compare.py): state,
// inputs, cost, tokens and time of each, the same per agent, and their model steps paired by
// agent instance and step with the first whose answers differ. Without two runs named, a form
// to name them (the runs list's Compare fills it in) and the evals whose variants can be paired.
import { h, replaceContent, fmtCost, fmtTokens, fmtDuration, statusBadge, timeNode } from "./dom.js";
import { getJSON } from "./api.js";
import { gate } from "./session.js";
import { replayDiffNode } from "./replaydiff.js";
import { evalList } from "./evals.js";

function pickForm(a, b, recent) {
  const list = h("datalist", { id: "recent-runs" }, recent.map((r) => h("option", { value: r.id }, `${r.workflow} · ${r.status}`)));
  const first = h("input", { id: "compare-a", name: "a", list: "recent-runs", value: a || "", required: true });
  const second = h("input", { id: "compare-b", name: "b", list: "recent-runs", value: b || "", required: true });
  return h(
    "form",
    { class: "panel compare-form", method: "get", action: "/compare" },
    h("div", { class: "field" }, h("label", { for: "compare-a" }, "First run"), first),
    h("div", { class: "field" }, h("label", { for: "compare-b" }, "Second run"), second),
    list,
    h("button", { type: "submit", class: "primary" }, "Compare"),
  );
}

function runSide(run) {
  const inputs = Object.entries(run.inputs || {}).map(([k, v]) => `${k}: ${typeof v === "string" ? v : JSON.stringify(v)}`);
  return h(
    "section",
    { class: "panel compare-side", "aria-label": "run " + run.id },
    h("h2", {}, h("a", { href: "/runs/" + encodeURIComponent(run.id) }, run.id), " ", statusBadge(run.status)),
    h(
      "dl",
      { class: "fact-list" },
      [
        ["workflow", run.workflow],
        ["inputs", inputs.join(" · ") || "–"],
        ["cost", fmtCost(run.cost_usd)],
        ["tokens", fmtTokens(run.total_tokens)],
        ["model calls", String(run.steps)],
        ["tool calls", `${run.tool_calls} (${run.tool_errors} errors)`],
        ["took", fmtDuration(run.duration_s)],
        ["started", timeNode(run.started)],
      ].map(([k, v]) => [h("dt", {}, k), h("dd", {}, v)]),
    ),
  );
}

function cell(row, key, fmt) {
  return h("td", { class: "num" }, row ? fmt(row[key]) : "–");
}

// "total_tokens" reads "tokens", "cost_usd" "cost", "time_s" "time"
const colName = (key) => key.replace("total_", "").replace("_usd", "").replace("_s", "");

function agentsTable(rows) {
  const cols = [
    ["runs", String],
    ["steps", String],
    ["total_tokens", fmtTokens],
    ["cost_usd", fmtCost],
    ["time_s", fmtDuration],
  ];
  return h(
    "table",
    { class: "compact compare-agents" },
    h("thead", {}, h("tr", {}, h("th", { scope: "col" }, "agent"), cols.map(([k]) => [h("th", { scope: "col" }, colName(k) + " A"), h("th", { scope: "col" }, colName(k) + " B")]))),
    h("tbody", {}, rows.map((r) => h("tr", {}, h("th", { scope: "row" }, r.agent), cols.map(([k, fmt]) => [cell(r.a, k, fmt), cell(r.b, k, fmt)])))),
  );
}

export async function comparePage(main) {
  const params = new URLSearchParams(location.search);
  const a = params.get("a");
  const b = params.get("b");
  const named = [a, b].filter(Boolean);
  if (!(await gate(main, { runs: named }))) return;
  document.title = "flowrun · compare";
  replaceContent(main, h("h1", {}, "Compare two runs"));
  if (!a || !b || a === b) {
    const recent = (await getJSON("/v1/runs?limit=100")).runs || [];
    main.appendChild(pickForm(a, b, recent));
    const { evals } = await getJSON("/v1/evals");
    if (evals.length) main.append(h("h2", {}, "An eval's variants"), evalList(evals));
    return;
  }
  const found = await getJSON(`/v1/compare?a=${encodeURIComponent(a)}&b=${encodeURIComponent(b)}`);
  const steps = { name: b, first_difference: found.first_difference, steps: found.steps };
  main.append(
    h("div", { class: "compare-grid" }, runSide(found.a), runSide(found.b)),
    h("section", { class: "panel", "aria-labelledby": "per-agent" }, h("h2", { id: "per-agent" }, "Per agent"), agentsTable(found.agents)),
    h(
      "section",
      { class: "panel compare-steps", "aria-labelledby": "compare-steps" },
      h("h2", { id: "compare-steps" }, "Model steps"),
      h("p", { class: "first-difference" }, found.first_difference === null ? "Every model step answered the same." : ["First differing step: ", h("code", {}, found.first_difference)]),
      found.first_difference === null ? null : replayDiffNode({ ...steps, steps: found.steps.filter((r) => r.step === found.first_difference) }, ["A: " + a, "B: " + b]),
      h("details", { class: "all-steps" }, h("summary", {}, `all ${found.steps.length} model steps side by side`), replayDiffNode(steps, ["A: " + a, "B: " + b])),
    ),
  );
}
