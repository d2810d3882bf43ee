// The entry of `flowrun show RUN --html`: the run page drawn from the JSON the file embeds
// (the run's summary, conversations and output files, as the server would send them; redacted
// when written), with nothing to fetch.
import { RunModel } from "./model.js";
import { RunView } from "./runview.js";

const embedded = JSON.parse(document.getElementById("flowrun-data").textContent);
const reportRoot = document.getElementById("main");
const reportView = new RunView(reportRoot, new RunModel(), { canDecide: false });
reportView.setSummary(embedded.summary);
reportView.setConversations(embedded.conversations || []);
reportView.setFiles(embedded.files || []);
if (embedded.replay) reportView.setReplay(embedded.replay);
reportView.render(null);
reportRoot.dataset.status = embedded.summary.status;
reportRoot.dataset.events = String(embedded.summary.events);
