// The entry of `flowrun show RUN --html`: the run page drawn from the JSON the file embeds
// (the run's summary, conversations, each agent instance as asked, its team and output files,
// as the server would send them; redacted when written), with nothing to fetch.
import { RunModel } from "./model.js";
import { RunView } from "./runview.js";

const embedded = JSON.parse(document.getElementById("flowrun-data").textContent);
const reportRoot = document.getElementById("main");
const reportView = new RunView(reportRoot, new RunModel(), {
  canDecide: false,
  agent: (agentId) => Promise.resolve((embedded.agents || {})[agentId] || null),
  conversations: () => Promise.resolve(embedded.conversations || []),
});
reportView.setSummary(embedded.summary);
reportView.setTeam(embedded.team || null, embedded.team ? null : "the workflow's files were not at hand when the report was written");
reportView.setFiles(embedded.files || []);
if (embedded.replay) reportView.setReplay(embedded.replay);
reportView.render(null);
reportRoot.dataset.status = embedded.summary.status;
reportRoot.dataset.events = String(embedded.summary.events);
