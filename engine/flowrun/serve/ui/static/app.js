// The pages' entry: which page the address asks for.
import { h } from "./dom.js";
import { apiToken } from "./api.js";
import { runsPage } from "./runs.js";
import { runPage } from "./runpage.js";
import { startPage } from "./start.js";
import { batchesPage, batchPage } from "./batch.js";

apiToken(); // take the token from the address before anything is requested
const main = document.getElementById("main");
const path = decodeURIComponent(location.pathname);
let page;
if (path.startsWith("/runs/")) page = runPage(main, path.slice(6));
else if (path === "/new") page = startPage(main);
else if (path === "/batches") page = batchesPage(main);
else if (path.startsWith("/batches/")) page = batchPage(main, path.slice(9));
else page = runsPage(main);
page.catch((e) => main.appendChild(h("p", { class: "error" }, String(e.message || e))));
