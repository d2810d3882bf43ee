// The runs list (/): one page of runs at a time from GET /v1/runs (the runs folder's and the
// batches' beside it), filtered by status, workflow, start time and text by the server (its
// index keeps thousands of runs fast). The filters live in the address, so a saved view is a
// link. Each row shows the run's inputs; two ticked rows can be compared.
import { h, replaceContent, fmtCost, fmtTokens, fmtDuration, statusBadge, timeNode } from "./dom.js";
import { getJSON } from "./api.js";

const PAGE = 50;
// the start-time filter: its value in the address, and how far back it reaches
const SINCE = [
  ["", "any time", 0],
  ["1h", "last hour", 3600],
  ["24h", "last 24 hours", 86400],
  ["7d", "last 7 days", 7 * 86400],
  ["30d", "last 30 days", 30 * 86400],
];

function inputsText(inputs) {
  return Object.entries(inputs || {})
    .map(([k, v]) => `${k}: ${typeof v === "string" ? v : JSON.stringify(v)}`)
    .join(" · ");
}

function labelled(label, control) {
  return h("label", { class: "filter" }, h("span", { class: "filter-label" }, label), control);
}

function runRow(r, picked, onPick) {
  const id = r.id;
  const box = h("input", { type: "checkbox", class: "pick", "aria-label": `select ${id} to compare`, checked: picked.has(id) });
  box.addEventListener("change", () => onPick(id, box.checked));
  const inputs = inputsText(r.inputs);
  return h(
    "tr",
    { class: "run-row", "data-id": id, "data-status": r.status },
    h("td", { class: "pick-cell" }, box),
    h("td", { "data-label": "run" }, h("a", { href: "/runs/" + encodeURIComponent(id) }, id), r.pending ? h("span", { class: "tag tag-pending", title: "it waits for a decision" }, "needs a decision") : null, r.batch ? h("span", { class: "tag" }, "batch " + r.batch) : null),
    h("td", { "data-label": "status" }, statusBadge(r.status)),
    h("td", { "data-label": "workflow" }, r.workflow || "", r.dry_run ? h("span", { class: "tag" }, "dry") : null),
    h("td", { "data-label": "inputs", class: "inputs-cell", title: inputs }, inputs.length > 90 ? inputs.slice(0, 89) + "…" : inputs),
    h("td", { "data-label": "cost", class: "num" }, fmtCost(r.cost_usd)),
    h("td", { "data-label": "tokens", class: "num" }, fmtTokens(r.total_tokens)),
    h("td", { "data-label": "took", class: "num" }, fmtDuration(r.duration_s)),
    h("td", { "data-label": "started" }, timeNode(r.started)),
  );
}

export async function runsPage(main) {
  const params = new URLSearchParams(location.search);
  // the states come with the list (flowrun/states.py): the first answer fills the choice
  const status = h("select", { name: "status", class: "filter-status" }, h("option", { value: "" }, "any status"));
  if (params.get("status")) status.appendChild(h("option", { value: params.get("status") }, params.get("status")));
  status.value = params.get("status") || "";
  const workflow = h("input", { name: "workflow", class: "filter-workflow", list: "workflow-names", value: params.get("workflow") || "" });
  const names = h("datalist", { id: "workflow-names" });
  const since = h("select", { name: "since", class: "filter-since" }, SINCE.map(([v, label]) => h("option", { value: v }, label)));
  since.value = SINCE.some(([v]) => v === params.get("since")) ? params.get("since") : "";
  const q = h("input", { type: "search", name: "q", class: "filter-q", value: params.get("q") || "" });
  const info = h("span", { class: "runs-total muted", role: "status" });
  const prev = h("button", { type: "button", class: "prev" }, "Newer");
  const next = h("button", { type: "button", class: "next" }, "Older");
  const picked = new Set();
  const compare = h("button", { type: "button", class: "compare-btn", disabled: true }, "Compare");
  const body = h("tbody");
  const table = h(
    "table",
    { class: "runs" },
    h("thead", {}, h("tr", {}, h("th", { class: "pick-cell" }, h("span", { class: "sr-only" }, "pick")), ["run", "status", "workflow", "inputs", "cost", "tokens", "took", "started"].map((c) => h("th", { scope: "col" }, c)))),
    body,
  );
  replaceContent(
    main,
    h("div", { class: "page-head" }, h("h1", {}, "Runs"), h("a", { class: "button-link primary", href: "/new" }, "Start a run")),
    h("form", { class: "filters", role: "search", onsubmit: (e) => e.preventDefault() }, labelled("Status", status), labelled("Workflow", workflow), names, labelled("Started", since), labelled("Search", q), info),
    h("div", { class: "table-box" }, table),
    h("div", { class: "pager" }, prev, next, compare),
  );
  let offset = Number(params.get("offset") || 0);
  let asked = 0;
  const onPick = (id, on) => {
    if (on) picked.add(id);
    else picked.delete(id);
    compare.disabled = picked.size !== 2;
  };
  compare.addEventListener("click", () => {
    const [a, b] = [...picked];
    location.assign(`/compare?a=${encodeURIComponent(a)}&b=${encodeURIComponent(b)}`);
  });

  async function load() {
    const ask = ++asked;
    const query = new URLSearchParams();
    if (status.value) query.set("status", status.value);
    if (workflow.value.trim()) query.set("workflow", workflow.value.trim());
    if (since.value) query.set("since", since.value);
    if (q.value.trim()) query.set("q", q.value.trim());
    if (offset) query.set("offset", String(offset));
    history.replaceState(null, "", "/" + (query.toString() ? "?" + query : ""));
    const back = SINCE.find(([v]) => v === since.value)?.[2] || 0;
    if (back) query.set("since", String(Math.floor(Date.now() / 1000 - back)));
    query.set("limit", String(PAGE));
    let page;
    try {
      page = await getJSON("/v1/runs?" + query);
    } catch (e) {
      if (ask === asked) replaceContent(body, h("tr", {}, h("td", { colspan: 9, class: "error" }, String(e.message || e))));
      return;
    }
    if (ask !== asked) return; // a newer filter was typed meanwhile
    for (const state of page.states || []) {
      if (![...status.options].some((o) => o.value === state)) status.appendChild(h("option", { value: state }, state.replace(/_/g, " ")));
    }
    replaceContent(body, page.runs.length ? page.runs.map((r) => runRow(r, picked, onPick)) : h("tr", {}, h("td", { colspan: 9, class: "muted empty-row" }, "no run matches")));
    const last = Math.min(page.offset + page.runs.length, page.total);
    info.textContent = page.total ? `${page.offset + 1}–${last} of ${page.total}` : "no run matches";
    info.dataset.total = String(page.total);
    prev.disabled = page.offset <= 0;
    next.disabled = last >= page.total;
    main.dataset.loaded = String(ask);
  }

  let timer = null;
  const later = () => {
    offset = 0;
    clearTimeout(timer);
    timer = setTimeout(load, 120);
  };
  status.addEventListener("change", later);
  since.addEventListener("change", later);
  workflow.addEventListener("input", later);
  q.addEventListener("input", later);
  prev.addEventListener("click", () => {
    offset = Math.max(0, offset - PAGE);
    load();
  });
  next.addEventListener("click", () => {
    offset += PAGE;
    load();
  });
  // while a listed run goes on, the list is read again now and then (a visible tab only)
  setInterval(() => {
    if (document.visibilityState === "visible" && body.querySelector("tr[data-status='running']")) load();
  }, 5000);
  getJSON("/v1/workflows")
    .then((w) => replaceContent(names, (w.workflows || []).map((x) => h("option", { value: x.name }))))
    .catch(() => {});
  await load();
}
