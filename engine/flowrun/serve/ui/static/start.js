// Start a run (/new): a form built from GET /v1/workflows (each input by its type: text,
// number, a yes/no box, a choice), a few options, POST /v1/runs, then the new run's page.
// Beside it, the workflow's team (GET /v1/workflows/NAME/team) and its cost preview (GET
// .../cost: what `flowrun cost` prints). /new?rerun=ID fills the form with that run's workflow
// and inputs and starts it again with its options (POST /v1/runs/ID/rerun).
import { h, replaceContent, fmtCost, fmtDuration } from "./dom.js";
import { getJSON, postJSON } from "./api.js";
import { teamView } from "./graph.js";
import { gate } from "./session.js";

function inputField(name, spec, given) {
  const id = "input-" + name;
  let field;
  if (spec.choices && spec.choices.length) field = h("select", { id, name }, spec.choices.map((c) => h("option", { value: String(c) }, String(c))));
  else if (spec.type === "boolean") field = h("input", { id, name, type: "checkbox", checked: spec.default === true });
  else if (spec.type === "integer" || spec.type === "number") field = h("input", { id, name, type: "number", step: spec.type === "integer" ? "1" : "any" });
  else field = h("textarea", { id, name, rows: 3 });
  const value = given !== undefined ? given : spec.default;
  if (value !== null && value !== undefined) {
    if (spec.type === "boolean") field.checked = value === true;
    else field.value = typeof value === "string" ? value : String(value);
  }
  field.dataset.type = spec.type || "string";
  return h("div", { class: "field" }, h("label", { for: id }, name, spec.required ? " (required)" : ""), field, spec.description ? h("div", { class: "muted small" }, spec.description) : null);
}

function readValue(field) {
  if (field.type === "checkbox") return field.checked;
  if (field.value === "") return undefined;
  if (field.dataset.type === "integer") return parseInt(field.value, 10);
  if (field.dataset.type === "number") return Number(field.value);
  return field.value;
}

function money(usd) {
  return usd === null || usd === undefined ? "unbounded" : fmtCost(usd);
}

// `flowrun cost` as a table: per agent its worst case, then the run's, and earlier runs' spread
function costNode(c) {
  const rows = Object.entries(c.agents || {}).map(([name, a]) =>
    h("tr", {}, h("td", {}, name), h("td", { class: "num" }, a.own.calls === null ? "unbounded" : String(a.own.calls)), h("td", { class: "num" }, money(a.own.usd)), h("td", { class: "num" }, a.subcalls?.length ? money(a.tree.usd) : "–")),
  );
  const hist = c.history || {};
  return h(
    "div",
    { class: "cost-preview" },
    h("table", { class: "compact" }, h("thead", {}, h("tr", {}, ["agent", "model calls at most", "its own cost at most", "with its sub-agents"].map((t) => h("th", { scope: "col" }, t)))), h("tbody", {}, rows)),
    h("p", {}, h("strong", {}, "The run at most: "), `${c.capped.calls === null ? "unbounded" : c.capped.calls} model calls, ${money(c.capped.usd)}`, Object.keys(c.limits || {}).length ? h("span", { class: "muted" }, " (under its limits: " + Object.entries(c.limits).map(([k, v]) => `${k} ${v}`).join(", ") + ")") : h("span", { class: "muted" }, " (no limit caps it)")),
    h("p", { class: "muted" }, hist.runs ? `Earlier runs: ${hist.runs}; cost median ${money(hist.cost_median)}, 90th percentile ${money(hist.cost_p90)}; took median ${fmtDuration(hist.duration_median_s)}` : "No earlier run of it in this runs folder."),
  );
}

export async function startPage(main) {
  const from = new URLSearchParams(location.search).get("rerun");
  if (!(await gate(main, { runs: from ? [from] : [] }))) return;
  replaceContent(main, h("h1", {}, from ? "Re-run with changed inputs" : "Start a run"));
  let workflows;
  let earlier = null;
  try {
    workflows = (await getJSON("/v1/workflows")).workflows || [];
    if (from) earlier = await getJSON("/v1/runs/" + encodeURIComponent(from));
  } catch (e) {
    main.appendChild(h("p", { class: "error" }, String(e.message || e)));
    return;
  }
  if (!workflows.length) {
    main.appendChild(h("p", { class: "muted" }, "this server serves no workflow: start it with WORKFLOW.yaml files"));
    return;
  }
  const choose = h("select", { name: "workflow", id: "workflow-choice", class: "workflow-choice", disabled: Boolean(earlier) }, workflows.map((w) => h("option", { value: w.name }, w.name)));
  if (earlier) choose.value = earlier.workflow;
  const fields = h("div", { class: "fields" });
  const dry = h("input", { type: "checkbox", name: "dry_run", id: "dry-run" });
  const model = h("input", { name: "model", id: "model-all" });
  const message = h("p", { class: "form-message", role: "status" });
  const team = h("section", { class: "panel panel-team", "aria-labelledby": "team-title" }, h("h2", { id: "team-title" }, "Team"), h("div", { class: "section-body" }));
  const cost = h("section", { class: "panel panel-cost", "aria-labelledby": "cost-title" }, h("h2", { id: "cost-title" }, "Cost preview"), h("div", { class: "section-body" }));
  const side = async () => {
    const name = encodeURIComponent(choose.value);
    replaceContent(team.lastChild, h("p", { class: "muted" }, "loading…"));
    replaceContent(cost.lastChild, h("p", { class: "muted" }, "loading…"));
    getJSON(`/v1/workflows/${name}/team`).then(
      (t) => replaceContent(team.lastChild, teamView(t, null)),
      (e) => replaceContent(team.lastChild, h("p", { class: "error" }, String(e.message || e))),
    );
    getJSON(`/v1/workflows/${name}/cost${dry.checked ? "?dry_run=1" : ""}`).then(
      (c) => replaceContent(cost.lastChild, costNode(c)),
      (e) => replaceContent(cost.lastChild, h("p", { class: "error" }, String(e.message || e))),
    );
  };
  const show = () => {
    const wf = workflows.find((w) => w.name === choose.value) || workflows[0];
    const given = earlier && earlier.workflow === wf.name ? earlier.inputs || {} : {};
    replaceContent(fields, wf.description ? h("p", { class: "muted" }, wf.description) : null, Object.entries(wf.inputs || {}).map(([n, spec]) => inputField(n, spec, given[n])));
    side();
  };
  choose.addEventListener("change", show);
  dry.addEventListener("change", side);
  const submit = async (e) => {
    e.preventDefault();
    const inputs = {};
    for (const field of fields.querySelectorAll("[name]")) {
      const value = readValue(field);
      if (value !== undefined) inputs[field.name] = value;
    }
    const options = { dry_run: dry.checked };
    if (model.value.trim()) options.model = model.value.trim();
    message.textContent = "starting…";
    try {
      const made = earlier ? await postJSON(`/v1/runs/${encodeURIComponent(from)}/rerun`, { inputs }) : await postJSON("/v1/runs", { workflow: choose.value, inputs, options });
      location.assign("/runs/" + encodeURIComponent(made.id));
    } catch (err) {
      message.textContent = String(err.message || err);
    }
  };
  const options = earlier
    ? h("p", { class: "muted" }, `With the options of run ${from}: ${earlier.dry_run ? "a dry run" : "its models"}.`)
    : [
        h("div", { class: "field field-check" }, dry, h("label", { for: "dry-run" }, "dry run (the offline test model)")),
        h("div", { class: "field" }, h("label", { for: "model-all" }, "Model for every agent (optional)"), model),
      ];
  main.appendChild(
    h(
      "div",
      { class: "start-grid" },
      h(
        "form",
        { class: "start-form panel", onsubmit: submit },
        h("div", { class: "field" }, h("label", { for: "workflow-choice" }, "Workflow"), choose),
        fields,
        options,
        h("button", { type: "submit", class: "start-btn primary" }, "Start"),
        message,
      ),
      h("div", { class: "start-side" }, cost, team),
    ),
  );
  show();
}
