// The runs list (/): one page of runs at a time from GET /v1/runs, filtered by status and
// workflow and searched by the server (its index keeps thousands of runs fast); the filters
// live in the address, so a filtered list can be shared and reloaded.
import { h, replaceContent, fmtCost, fmtTokens, fmtDuration, fmtTime, statusBadge } from "./dom.js";
import { getJSON } from "./api.js";

const PAGE = 50;

export async function runsPage(main) {
  const params = new URLSearchParams(location.search);
  // the states come with the list (flowrun/states.py): the first answer fills the choice
  const status = h("select", { name: "status", class: "filter-status" }, h("option", { value: "" }, "any status"));
  if (params.get("status")) status.appendChild(h("option", { value: params.get("status") }, params.get("status")));
  status.value = params.get("status") || "";
  const workflow = h("input", { name: "workflow", class: "filter-workflow", placeholder: "workflow", list: "workflow-names", value: params.get("workflow") || "" });
  const names = h("datalist", { id: "workflow-names" });
  const q = h("input", { type: "search", name: "q", class: "filter-q", placeholder: "search id, workflow, inputs", value: params.get("q") || "" });
  const info = h("span", { class: "runs-total muted" });
  const prev = h("button", { class: "prev" }, "← newer");
  const next = h("button", { class: "next" }, "older →");
  const body = h("tbody");
  const table = h(
    "table",
    { class: "runs" },
    h("thead", {}, h("tr", {}, ["run", "status", "workflow", "cost", "tokens", "duration", "started"].map((c) => h("th", {}, c)))),
    body,
  );
  replaceContent(main, h("h1", {}, "Runs"), h("form", { class: "filters", onsubmit: (e) => e.preventDefault() }, status, workflow, names, q, info), table, h("div", { class: "pager" }, prev, next));
  let offset = Number(params.get("offset") || 0);
  let asked = 0;

  async function load() {
    const ask = ++asked;
    const query = new URLSearchParams();
    if (status.value) query.set("status", status.value);
    if (workflow.value.trim()) query.set("workflow", workflow.value.trim());
    if (q.value.trim()) query.set("q", q.value.trim());
    if (offset) query.set("offset", String(offset));
    history.replaceState(null, "", "/" + (query.toString() ? "?" + query : ""));
    query.set("limit", String(PAGE));
    let page;
    try {
      page = await getJSON("/v1/runs?" + query);
    } catch (e) {
      if (ask === asked) replaceContent(body, h("tr", {}, h("td", { colspan: 7, class: "error" }, String(e.message || e))));
      return;
    }
    if (ask !== asked) return; // a newer filter was typed meanwhile
    for (const state of page.states || []) {
      if (![...status.options].some((o) => o.value === state)) status.appendChild(h("option", { value: state }, state));
    }
    replaceContent(
      body,
      page.runs.map((r) =>
        h(
          "tr",
          { class: "run-row", "data-id": r.id, "data-status": r.status },
          h("td", {}, h("a", { href: "/runs/" + encodeURIComponent(r.id) }, r.id), r.pending ? h("span", { class: "pending-mark", title: "waiting for a decision" }, " ⏸") : null),
          h("td", {}, statusBadge(r.status)),
          h("td", {}, r.workflow || ""),
          h("td", { class: "num" }, fmtCost(r.cost_usd)),
          h("td", { class: "num" }, fmtTokens(r.total_tokens)),
          h("td", { class: "num" }, fmtDuration(r.duration_s)),
          h("td", {}, fmtTime(r.started)),
        ),
      ),
    );
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
