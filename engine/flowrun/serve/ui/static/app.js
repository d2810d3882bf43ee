// The pages' entry: which page the address asks for.
import { h } from "./dom.js";
import { apiToken } from "./api.js";
import { runsPage } from "./runs.js";
import { runPage } from "./runpage.js";
import { startPage } from "./start.js";
import { batchesPage, batchPage } from "./batch.js";
import { comparePage } from "./compare.js";
import { evalsPage, evalPage } from "./evals.js";

apiToken(); // take the token from the address before anything is requested
const main = document.getElementById("main");
const path = decodeURIComponent(location.pathname);
for (const link of document.querySelectorAll("header.top nav a")) {
  const here = link.getAttribute("href") === "/" ? path === "/" || path.startsWith("/runs/") : path.startsWith(link.getAttribute("href"));
  if (here) link.setAttribute("aria-current", "page");
}
let page;
if (path.startsWith("/runs/")) page = runPage(main, path.slice(6));
else if (path === "/new") page = startPage(main);
else if (path === "/compare") page = comparePage(main);
else if (path === "/batches") page = batchesPage(main);
else if (path.startsWith("/batches/")) page = batchPage(main, path.slice(9));
else if (path === "/evals") page = evalsPage(main);
else if (path.startsWith("/evals/")) page = evalPage(main, path.slice(7));
else page = runsPage(main);
page.catch((e) => main.appendChild(h("p", { class: "error", role: "alert" }, String(e.message || e))));
