// The entry of `flowrun show RUN --html`: the run page drawn from the JSON the file embeds
// (events, summary, output files; redacted when written), with nothing to fetch.
import { RunModel } from "./model.js";
import { RunView } from "./runview.js";

const embedded = JSON.parse(document.getElementById("flowrun-data").textContent);
const reportModel = new RunModel();
for (const e of embedded.events) reportModel.feed(e);
const reportRoot = document.getElementById("main");
const reportView = new RunView(reportRoot, reportModel, { canDecide: false });
reportView.setSummary(embedded.summary);
reportView.setFiles(embedded.files || []);
if (embedded.replay) reportView.setReplay(embedded.events, embedded.replay.events, embedded.replay.name);
reportView.render(null);
reportRoot.dataset.status = reportModel.status;
reportRoot.dataset.events = String(reportModel.events.length);
