// An eval's variants side by side (/evals and /evals/NAME, GET /v1/evals[/NAME]:
// serve/eval_folders.py): each case's run in each variant, and a Compare link that opens the
// run of two variants on one case in the compare page (ids EVAL:VARIANT:RUN).
import { h, replaceContent, fmtCost, statusBadge } from "./dom.js";
import { getJSON } from "./api.js";
import { gate } from "./session.js";

export function evalList(evals) {
  return h("ul", { class: "batches evals" }, evals.map((e) => h("li", {}, h("a", { href: "/evals/" + encodeURIComponent(e.name) }, e.name), ` · variants: ${e.variants.join(", ")}`)));
}

export async function evalsPage(main) {
  if (!(await gate(main))) return;
  document.title = "flowrun · evals";
  replaceContent(main, h("h1", {}, "Evals"));
  const { evals } = await getJSON("/v1/evals");
  main.appendChild(evals.length ? evalList(evals) : h("p", { class: "muted" }, "no eval folder beside the runs folder (flowrun eval writes evals/NAME-TIME)"));
}

function runCell(run) {
  if (!run) return h("td", { class: "muted" }, "–");
  return h("td", {}, h("a", { href: "/runs/" + encodeURIComponent(run.id) }, statusBadge(run.status)), " ", h("span", { class: "muted" }, fmtCost(run.cost_usd)));
}

function variantChoice(id, label, variants, value) {
  const select = h("select", { id }, variants.map((v) => h("option", { value: v }, v)));
  select.value = value;
  return [h("label", { for: id }, label), select];
}

export async function evalPage(main, name) {
  if (!(await gate(main, { evals: [name] }))) return;
  document.title = "flowrun · eval " + name;
  replaceContent(main, h("h1", {}, "eval ", name));
  const found = await getJSON("/v1/evals/" + encodeURIComponent(name));
  const variants = found.variants;
  const [pickA, a] = variantChoice("variant-a", "Variant A", variants, variants[0]);
  const [pickB, b] = variantChoice("variant-b", "Variant B", variants, variants[1] || variants[0]);
  const body = h("tbody", {});
  const draw = () => {
    replaceContent(
      body,
      found.runs.map((row) => {
        const [ra, rb] = [row.variants[a.value], row.variants[b.value]];
        const compare = ra && rb && a.value !== b.value ? h("a", { href: `/compare?a=${encodeURIComponent(ra.id)}&b=${encodeURIComponent(rb.id)}`, "aria-label": `Compare ${row.run}` }, "Compare") : h("span", { class: "muted" }, "–");
        return h("tr", { class: "run-row", "data-id": row.run }, h("th", { scope: "row" }, row.run), variants.map((v) => runCell(row.variants[v])), h("td", {}, compare));
      }),
    );
  };
  a.addEventListener("change", draw);
  b.addEventListener("change", draw);
  draw();
  main.append(
    h("form", { class: "filters", onsubmit: (e) => e.preventDefault() }, h("span", { class: "filter" }, pickA, a), h("span", { class: "filter" }, pickB, b)),
    h("table", { class: "runs eval-runs" }, h("thead", {}, h("tr", {}, h("th", { scope: "col" }, "case run"), variants.map((v) => h("th", { scope: "col" }, v)), h("th", { scope: "col" }, h("span", { class: "sr-only" }, "compare")))), body),
  );
}
