// Batches (/batches and /batches/NAME): progress (items by status out of all) and the cost
// spent over time, drawn from GET /v1/batches/NAME; each item links to its run (BATCH:ITEM).
import { h, s, replaceContent, fmtCost, fmtTokens, fmtDuration, statusBadge } from "./dom.js";
import { lineChart } from "./charts.js";
import { getJSON } from "./api.js";
import { gate } from "./session.js";

// `order`: the run states (flowrun/states.py, sent with the batch), ended ones first
function progressBar(counts, total, states) {
  const order = [...states.filter((s) => s !== "running"), ...Object.keys(counts).filter((s) => !states.includes(s)), "running"];
  const width = 620;
  const svg = s("svg", { class: "progress", width, height: 20, viewBox: `0 0 ${width} 20`, preserveAspectRatio: "none", role: "img", "aria-label": "progress" });
  let x = 0;
  for (const status of order) {
    const n = counts[status] || 0;
    if (!n) continue;
    const w = (n / Math.max(total, 1)) * width;
    svg.appendChild(s("rect", { class: "seg status-" + status, x, y: 0, width: w, height: 20 }, s("title", {}, `${status}: ${n}`)));
    x += w;
  }
  svg.appendChild(s("rect", { class: "seg rest", x, y: 0, width: Math.max(width - x, 0), height: 20 }));
  return svg;
}

export async function batchesPage(main) {
  if (!(await gate(main))) return;
  replaceContent(main, h("h1", {}, "Batches"));
  try {
    const { batches } = await getJSON("/v1/batches");
    main.appendChild(
      batches.length
        ? h("ul", { class: "batches" }, batches.map((b) => h("li", {}, h("a", { href: "/batches/" + encodeURIComponent(b.name) }, b.name), ` · ${workflowOf(b)} · ${b.ended ?? 0}/${totalOf(b)} · ${fmtCost(b.cost_usd)}`)))
        : h("p", { class: "muted" }, "no batch yet"),
    );
  } catch (e) {
    main.appendChild(h("p", { class: "error" }, String(e.message || e)));
  }
}

// The runs API's batch shapes (serve/workflow_info.py): `items` is the count in the list and the
// results in a batch's own answer; the workflow is named by its file; the cost curve is points.
const totalOf = (b) => b.total ?? (Array.isArray(b.items) ? b.items.length : b.items ?? 0);
const workflowOf = (b) => b.workflow || String(b.workflow_file || "").split("/").pop().replace(/\.ya?ml$/, "");
const curveOf = (b) => (b.cost_over_time || []).map((p) => (Array.isArray(p) ? p : [p.t, p.cost_usd]));

export async function batchPage(main, name) {
  if (!(await gate(main, { batches: [name] }))) return;
  replaceContent(main, h("h1", {}, "batch ", name));
  let b;
  try {
    b = await getJSON("/v1/batches/" + encodeURIComponent(name));
  } catch (e) {
    main.appendChild(h("p", { class: "error" }, String(e.message || e)));
    return;
  }
  const done = b.ended ?? 0; // (serve/workflow_info.py counts them)
  main.appendChild(
    h(
      "div",
      { class: "batch" },
      h("p", { class: "batch-facts", "data-done": String(done), "data-total": String(totalOf(b)) }, `${done} of ${totalOf(b)} items ended · ${fmtCost(b.cost_usd)}`, " ", Object.entries(b.counts || {}).map(([k, n]) => h("span", { class: "fact" }, statusBadge(k), " " + n))),
      progressBar(b.counts || {}, totalOf(b), b.states || []),
      lineChart("cost over time", curveOf(b)),
      h(
        "table",
        { class: "runs batch-items" },
        h("thead", {}, h("tr", {}, ["item", "status", "tokens", "cost", "took", "error"].map((c) => h("th", { scope: "col" }, c)))),
        h(
          "tbody",
          {},
          (b.items || []).map((it) =>
            h(
              "tr",
              { class: "run-row", "data-id": it.id, "data-status": it.status },
              // each item's run, read through the runs API as BATCH:ITEM
              h("td", { "data-label": "item" }, h("a", { href: "/runs/" + encodeURIComponent(`${name}:${it.id}`) }, it.id)),
              h("td", { "data-label": "status" }, statusBadge(it.status)),
              h("td", { "data-label": "tokens", class: "num" }, fmtTokens(it.total_tokens)),
              h("td", { "data-label": "cost", class: "num" }, fmtCost(it.cost_usd)),
              h("td", { "data-label": "took", class: "num" }, fmtDuration(it.duration_s)),
              h("td", { "data-label": "error" }, it.error || ""),
            ),
          ),
        ),
      ),
    ),
  );
}
