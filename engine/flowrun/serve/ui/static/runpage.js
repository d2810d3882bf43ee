// The live run page (/runs/ID): the run's summary from the server (GET /v1/runs/ID: the one
// `flowrun show` draws), drawn again whenever its log gains events (followed over server-sent
// events; at most one summary request in flight, and one more if events came meanwhile); while
// it runs, open bars grow with the clock. After a decision, a Resume or a Stop, the page follows
// the run on. The Memory region is asked for again when the run writes a memory or ends. A mistyped id or a missing token is a page of its own (session.js).
import { h, replaceContent } from "./dom.js";
import { RunModel } from "./model.js";
import { RunView } from "./runview.js";
import { getJSON, getText, postJSON, followEvents } from "./api.js";
import { gate } from "./session.js";
import { RunControls } from "./controls.js";

const SHOWN_FILE_BYTES = 200000;

export async function runPage(main, runId) {
  if (!(await gate(main, { runs: [runId] }))) return;
  const model = new RunModel();
  const enc = encodeURIComponent(runId);
  let following = false;
  let resuming = 0; // after a decision or a Resume: how many more times to look for the run going on
  let before = null; // the run's state when it was decided or resumed
  let lastSeq = 0;
  let streamSeq = null; // the last event the event stream delivered (from lastSeq when it began)
  // the browser's clock minus the server's, so that running bars grow to the server's now
  let skew = 0;
  const serverNow = () => Date.now() / 1000 - skew;
  document.title = `flowrun · ${runId}`;
  const goesOn = () => {
    resuming = 20; // the server resumes the run: follow it
    before = model.status;
    return refresh().then(follow);
  };
  const source = {
    canDecide: true,
    decide: (body) => postJSON(`/v1/runs/${enc}/decisions`, { ...body, via: "ui" }),
    decided: goesOn,
    agent: (agentId) => getJSON(`/v1/runs/${enc}/agent?agent_id=${encodeURIComponent(agentId)}`),
    conversations: () => getJSON(`/v1/runs/${enc}/conversations`).then((t) => t.conversations || []),
  };
  replaceContent(main, h("h1", { class: "run-title" }, h("span", { class: "muted" }, "run "), h("span", { class: "run-id" }, runId)));
  const root = h("div", { class: "run-view" });
  main.appendChild(root);
  const view = new RunView(root, model, source);
  const controls = new RunControls(view, runId, { goesOn, refresh: () => refresh() });
  let queued = false;
  const draw = () => {
    if (queued) return;
    queued = true;
    requestAnimationFrame(() => {
      queued = false;
      view.render(model.live ? serverNow() : null);
      controls.update(model);
      root.dataset.status = model.status;
      root.dataset.events = String(view.summary?.events ?? 0);
    });
  };

  let asking = null;
  let again = false;
  let shownFiles = null;
  let shownStatus = null;
  // the summary again (once at a time; once more if asked meanwhile)
  async function refresh() {
    if (asking) {
      again = true;
      return asking;
    }
    asking = (async () => {
      do {
        again = false;
        try {
          const summary = await getJSON(`/v1/runs/${enc}`);
          if (typeof summary.now === "number") skew = Date.now() / 1000 - summary.now;
          view.setSummary(summary);
          lastSeq = Math.max(lastSeq, summary.last_seq || 0);
        } catch (e) {
          root.dataset.error = String(e.message || e);
        }
        draw();
      } while (again);
      // the output files again when the files named, or the run's state, changed
      const filesKey = JSON.stringify([view.summary?.status, view.summary?.output, view.summary?.output_files]);
      if (filesKey !== shownFiles) {
        shownFiles = filesKey;
        loadFiles();
      }
      if (view.summary?.status !== shownStatus) {
        shownStatus = view.summary?.status;
        loadMemory();
      }
    })();
    try {
      await asking;
    } finally {
      asking = null;
    }
  }

  async function loadFiles() {
    let listed = [];
    try {
      listed = (await getJSON(`/v1/runs/${enc}/files`)).files || [];
    } catch (e) {
      return;
    }
    const mainFile = view.summary?.output || null;
    const wanted = new Set(view.summary?.output_files || []);
    const files = [];
    for (const f of listed) {
      if (!wanted.has(f.path)) continue;
      const file = { path: f.path, main: f.path === mainFile, content: null };
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

  // the run's memories (GET /v1/runs/ID/memory): one request at a time, one more if asked meanwhile
  let memoryAsked = null;
  let memoryAgain = false;
  async function loadMemory() {
    if (memoryAsked) {
      memoryAgain = true;
      return;
    }
    memoryAsked = (async () => {
      do {
        memoryAgain = false;
        try {
          view.setMemory(await getJSON(`/v1/runs/${enc}/memory`));
        } catch (e) {
          view.setMemory(null, String(e.message || e));
        }
      } while (memoryAgain);
    })();
    try {
      await memoryAsked;
    } finally {
      memoryAsked = null;
    }
  }

  async function follow() {
    if (following) return;
    following = true;
    root.dataset.following = "true"; // (a test waits for the page to stop following a run that waits)
    try {
      for (;;) {
        // the stream's own place: a summary fetched meanwhile may already count an event the
        // stream delivers next, whose own effect (a memory written) must still be seen
        if (streamSeq === null) streamSeq = lastSeq;
        const end = await followEvents(runId, streamSeq, (e) => {
          if (typeof e.seq === "number" && e.seq > streamSeq) {
            streamSeq = e.seq;
            lastSeq = Math.max(lastSeq, e.seq);
            refresh();
            if (e.type === "memory_write" || (e.type === "tool_result" && e.tool === "memory")) loadMemory();
          }
        });
        await refresh();
        const status = view.summary?.status || end?.status;
        const pending = view.pending().length;
        const starting = resuming > 0 && !pending && status === before; // (not begun again yet)
        if (status !== "running" && !starting) break;
        if (status === "running") resuming = 0;
        else resuming -= 1; // decided or resumed, but the run has not begun again yet
        await new Promise((done) => setTimeout(done, status === "running" && end ? 0 : 300));
      }
    } catch (e) {
      root.dataset.error = String(e.message || e);
    } finally {
      following = false;
      root.dataset.following = "false";
    }
  }

  const clock = setInterval(() => {
    if (model.live) draw();
  }, 1000);
  window.addEventListener("pagehide", () => clearInterval(clock));
  await refresh();
  getJSON(`/v1/runs/${enc}/team`).then(
    (t) => view.setTeam(t.team, t.problem),
    (e) => view.setTeam(null, String(e.message || e)),
  );
  if (view.summary?.replay) getJSON(`/v1/runs/${enc}/replay`).then((r) => view.setReplay(r), () => {});
  await follow();
}
