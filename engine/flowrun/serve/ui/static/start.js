// Start a run (/new): a form built from GET /v1/workflows (each input by its type: text,
// number, a yes/no box, a choice), a few options, POST /v1/runs, then the new run's page.
import { h, replaceContent } from "./dom.js";
import { getJSON, postJSON } from "./api.js";

function inputField(name, spec) {
  const id = "input-" + name;
  let field;
  if (spec.choices && spec.choices.length) field = h("select", { id, name }, spec.choices.map((c) => h("option", { value: String(c) }, String(c))));
  else if (spec.type === "boolean") field = h("input", { id, name, type: "checkbox", checked: spec.default === true });
  else if (spec.type === "integer" || spec.type === "number") field = h("input", { id, name, type: "number", step: spec.type === "integer" ? "1" : "any" });
  else field = h("textarea", { id, name, rows: 3 });
  if (spec.default !== null && spec.default !== undefined && spec.type !== "boolean") field.value = String(spec.default);
  field.dataset.type = spec.type || "string";
  return h("div", { class: "field" }, h("label", { for: id }, name, spec.required ? " *" : ""), field, spec.description ? h("div", { class: "muted" }, spec.description) : null);
}

function readValue(field) {
  if (field.type === "checkbox") return field.checked;
  if (field.value === "") return undefined;
  if (field.dataset.type === "integer") return parseInt(field.value, 10);
  if (field.dataset.type === "number") return Number(field.value);
  return field.value;
}

export async function startPage(main) {
  replaceContent(main, h("h1", {}, "Start a run"));
  let workflows;
  try {
    workflows = (await getJSON("/v1/workflows")).workflows || [];
  } catch (e) {
    main.appendChild(h("p", { class: "error" }, String(e.message || e)));
    return;
  }
  if (!workflows.length) {
    main.appendChild(h("p", { class: "muted" }, "this server serves no workflow: start it with WORKFLOW.yaml files"));
    return;
  }
  const choose = h("select", { name: "workflow", class: "workflow-choice" }, workflows.map((w) => h("option", { value: w.name }, w.name)));
  const fields = h("div", { class: "fields" });
  const dry = h("input", { type: "checkbox", name: "dry_run" });
  const model = h("input", { name: "model", placeholder: "model for every agent (optional)" });
  const message = h("p", { class: "form-message" });
  const show = () => {
    const wf = workflows.find((w) => w.name === choose.value);
    replaceContent(fields, wf.description ? h("p", { class: "muted" }, wf.description) : null, Object.entries(wf.inputs || {}).map(([n, spec]) => inputField(n, spec)));
  };
  choose.addEventListener("change", show);
  const submit = async (e) => {
    e.preventDefault();
    const inputs = {};
    for (const field of fields.querySelectorAll("[name]")) {
      const value = readValue(field);
      if (value !== undefined) inputs[field.name] = value;
    }
    const options = { dry_run: dry.checked };
    if (model.value.trim()) options.model = model.value.trim();
    try {
      const made = await postJSON("/v1/runs", { workflow: choose.value, inputs, options });
      location.assign("/runs/" + encodeURIComponent(made.id));
    } catch (err) {
      message.textContent = String(err.message || err);
    }
  };
  main.appendChild(
    h(
      "form",
      { class: "start-form", onsubmit: submit },
      h("div", { class: "field" }, h("label", {}, "workflow"), choose),
      fields,
      h("div", { class: "field" }, h("label", {}, dry, " dry run (the offline test model)")),
      h("div", { class: "field" }, model),
      h("button", { type: "submit", class: "start-btn" }, "Start"),
      message,
    ),
  );
  show();
}
