// The live run page (/runs/ID): the run's summary, then its events followed over server-sent
// events, each folded into the model and drawn (at most once a frame); while it runs, open
// bars grow with the clock. After a decision is sent the page follows the resumed run.
import { h, replaceContent } from "./dom.js";
import { RunModel } from "./model.js";
import { RunView } from "./runview.js";
import { getJSON, getText, postJSON, followEvents } from "./api.js";

const SHOWN_FILE_BYTES = 200000;

export async function runPage(main, runId) {
  const model = new RunModel();
  const enc = encodeURIComponent(runId);
  let following = false;
  let resuming = 0; // after a decision: how many more times to look for the resumed run
  // the browser's clock minus the server's (at most: an event's delay in transit), so that
  // running bars grow to the server's now, not to a clock set differently
  let skew = Infinity;
  const serverNow = () => Date.now() / 1000 - (Number.isFinite(skew) ? skew : 0);
  document.title = `flowrun · ${runId}`;
  const source = {
    canDecide: true,
    decide: (body) => postJSON(`/v1/runs/${enc}/decisions`, { ...body, via: "ui" }),
    decided: () => {
      resuming = 20; // the server resumes the run once nothing is pending: follow it
      return refresh().then(follow);
    },
  };
  replaceContent(main, h("h1", {}, "run ", h("span", { class: "run-id" }, runId)));
  const root = h("div", { class: "run-view" });
  main.appendChild(root);
  const view = new RunView(root, model, source);
  let queued = false;
  const draw = () => {
    if (queued) return;
    queued = true;
    requestAnimationFrame(() => {
      queued = false;
      view.render(model.status === "running" ? serverNow() : null);
      root.dataset.status = view.summary?.status || model.status;
      root.dataset.events = String(model.events.length);
    });
  };

  async function refresh() {
    try {
      view.setSummary(await getJSON(`/v1/runs/${enc}`));
    } catch (e) {
      view.setSummary(null);
      if (e.status === 404) root.dataset.missing = "1";
    }
    draw();
    loadFiles();
  }

  async function loadFiles() {
    let listed = [];
    try {
      listed = (await getJSON(`/v1/runs/${enc}/files`)).files || [];
    } catch (e) {
      return;
    }
    const main_ = view.summary?.output || null;
    const wanted = new Set(model.instances.size ? [...model.instances.values()].flatMap((i) => i.outputFiles || []) : []);
    if (main_) wanted.add(main_);
    const files = [];
    for (const f of listed) {
      if (!wanted.has(f.path)) continue;
      const file = { path: f.path, main: f.path === main_, content: null };
      if (f.size > SHOWN_FILE_BYTES) file.note = `${f.size} bytes: too large to show here`;
      else {
        try {
          file.content = await getText(`/v1/runs/${enc}/files/${f.path.split("/").map(encodeURIComponent).join("/")}`);
        } catch (e) {
          file.note = String(e.message || e);
        }
      }
      files.push(file);
    }
    view.setFiles(files);
  }

  async function follow() {
    if (following) return;
    following = true;
    try {
      for (;;) {
        const end = await followEvents(runId, model.lastSeq, (e) => {
          if (e.t) skew = Math.min(skew, Date.now() / 1000 - e.t);
          if (model.feed(e)) draw();
        });
        await refresh();
        const status = view.summary?.status || end?.status;
        const pending = view.pending().length;
        if (status !== "running" && !(resuming > 0 && !pending && status === "waiting")) break;
        if (status === "running") resuming = 0;
        else resuming -= 1; // decided, but the resumed run has not begun yet
        await new Promise((done) => setTimeout(done, status === "running" && end ? 0 : 300));
      }
    } catch (e) {
      root.dataset.error = String(e.message || e);
    } finally {
      following = false;
    }
  }

  const clock = setInterval(() => {
    if (model.status === "running") draw();
  }, 1000);
  window.addEventListener("pagehide", () => clearInterval(clock));
  await refresh();
  loadReplay(view, runId);
  await follow();
}

async function loadReplay(view, runId) {
  const name = runId + "-replay";
  try {
    const [a, b] = await Promise.all([
      getJSON(`/v1/runs/${encodeURIComponent(runId)}/events?format=json`),
      getJSON(`/v1/runs/${encodeURIComponent(name)}/events?format=json`),
    ]);
    view.setReplay(a.events, b.events, name);
  } catch (e) {
    // no replay of this run: nothing to compare
  }
}
