// The run page's controls (the live page only): Stop a running run (it ends cancelled, and
// stays resumable), Resume a stopped one, Re-run it with the same inputs or with changed ones
// (the start form, filled in), Compare it with another run, and Replay with edits: change an
// agent's prompt or any manifest value, replay the recorded run offline with it, see the first
// step that changed, and, if asked, run it for real from there (a new run: POST .../fork).
import { h, replaceContent } from "./dom.js";
import { postJSON } from "./api.js";

const EDIT_EXAMPLE = "agents.writer.max_steps=5";

export class RunControls {
  constructor(view, runId, { goesOn, refresh }) {
    this.view = view;
    this.runId = runId;
    this.enc = encodeURIComponent(runId);
    this.goesOn = goesOn;
    this.refresh = refresh;
    this.said = h("span", { class: "control-status", role: "status", "aria-live": "polite" });
    const act = (label, cls, run) => {
      const b = h("button", { type: "button", class: cls }, label);
      b.addEventListener("click", async () => {
        b.disabled = true;
        try {
          await run();
        } catch (e) {
          this.say(String(e.message || e), true);
        } finally {
          b.disabled = false;
        }
      });
      return b;
    };
    this.stop = act("Stop", "danger", () => this.post("cancel", "stopping…").then(() => this.refresh()));
    this.resume = act("Resume", "primary", () => this.post("resume", "resuming…").then(() => this.goesOn()));
    this.rerun = act("Re-run", "", async () => {
      const made = await postJSON(`/v1/runs/${this.enc}/rerun`, {});
      location.assign("/runs/" + encodeURIComponent(made.id));
    });
    this.changed = h("a", { class: "button-link", href: "/new?rerun=" + this.enc }, "Re-run with changed inputs");
    this.compare = h("a", { class: "button-link", href: "/compare?a=" + this.enc }, "Compare");
    this.editToggle = h("button", { type: "button", "aria-expanded": "false", "aria-controls": "replay-edits" }, "Replay with edits");
    this.editToggle.addEventListener("click", () => this.toggleEdits());
    this.editPanel = h("section", { class: "panel replay-edits", id: "replay-edits", "aria-label": "Replay with edits", hidden: true });
    view.onTeam = () => {
      if (!this.editPanel.hidden) this.drawEdits();
    };
    replaceContent(view.controls, h("div", { class: "control-row" }, this.stop, this.resume, this.rerun, this.changed, this.editToggle, this.compare, this.said), this.editPanel);
  }

  say(text, error = false) {
    this.said.textContent = text;
    this.said.classList.toggle("error", error);
  }

  async post(what, saying) {
    this.say(saying);
    await postJSON(`/v1/runs/${this.enc}/${what}`, {});
    this.say("");
  }

  // which controls a run in this state has
  update(model) {
    const s = model.summary || {};
    const running = model.status === "running";
    this.stop.hidden = !running;
    this.resume.hidden = running || model.status === "waiting" || !s.resumable;
    const ended = !running;
    this.rerun.hidden = !ended;
    this.changed.hidden = !ended;
    this.editToggle.hidden = !ended;
    if (running && !this.editPanel.hidden) this.toggleEdits();
  }

  toggleEdits() {
    const open = this.editPanel.hidden;
    this.editPanel.hidden = !open;
    this.editToggle.setAttribute("aria-expanded", String(open));
    if (open) this.drawEdits();
  }

  drawEdits() {
    const team = this.view.team;
    if (!this.view.teamKnown) {
      replaceContent(this.editPanel, h("p", { class: "muted" }, "loading the run's workflow…"));
      return;
    }
    if (!team) {
      replaceContent(this.editPanel, h("p", { class: "muted" }, this.view.teamProblem || "the run's workflow is needed to replay it"));
      return;
    }
    const agents = team.agents.filter((a) => a.prompt && a.prompt.text !== null);
    const choose = h("select", { id: "edit-agent" }, h("option", { value: "" }, "(no prompt change)"), agents.map((a) => h("option", { value: a.name }, a.name)));
    const prompt = h("textarea", { id: "edit-prompt", rows: 10, class: "mono", disabled: true });
    const values = h("textarea", { id: "edit-values", rows: 2, class: "mono", placeholder: EDIT_EXAMPLE });
    const result = h("div", { class: "edit-result", role: "status", "aria-live": "polite" });
    choose.addEventListener("change", () => {
      const agent = agents.find((a) => a.name === choose.value);
      prompt.disabled = !agent;
      prompt.value = agent ? agent.prompt.text : "";
    });
    const edits = () => {
      const body = {};
      const agent = agents.find((a) => a.name === choose.value);
      if (agent && prompt.value !== agent.prompt.text) body.prompts = { [agent.name]: prompt.value };
      const lines = values.value.split("\n").map((l) => l.trim()).filter(Boolean);
      if (lines.length) body.set = lines;
      return body;
    };
    const submit = async (e) => {
      e.preventDefault();
      replaceContent(result, h("p", { class: "muted" }, "replaying offline…"));
      try {
        const body = edits();
        const answer = await postJSON(`/v1/runs/${this.enc}/replay`, body);
        replaceContent(result, this.replayed(answer, body));
      } catch (err) {
        replaceContent(result, h("p", { class: "error" }, String(err.message || err)));
      }
    };
    replaceContent(
      this.editPanel,
      h("h2", {}, "Replay with edits"),
      h("p", { class: "muted" }, "The recorded run is replayed offline with your changes (no model is asked: the recording answers) up to the first step they change. Nothing is written beside the run."),
      h(
        "form",
        { class: "edit-form", onsubmit: submit },
        h("div", { class: "field" }, h("label", { for: "edit-agent" }, "Agent whose prompt to change"), choose),
        h("div", { class: "field" }, h("label", { for: "edit-prompt" }, "Prompt"), prompt),
        h("div", { class: "field" }, h("label", { for: "edit-values" }, "Manifest values (one PATH=VALUE a line, as --set)"), values),
        h("button", { type: "submit", class: "primary" }, "Replay offline"),
      ),
      result,
    );
  }

  replayed(answer, body) {
    const d = answer.divergence;
    if (!d) return h("p", { class: "edit-same", "data-changed": "none" }, `No step changed: the replay took the recorded steps (it ended ${answer.status}).`);
    const step = d.step ? `${d.agent} · step ${d.step}` : d.agent_id;
    const span = d.step ? this.view.model.modelSpan(d.agent_id, d.step) : null;
    const fork = h("button", { type: "button", class: "primary" }, "Run from there");
    fork.addEventListener("click", async () => {
      fork.disabled = true;
      this.say("starting the new run…");
      try {
        const made = await postJSON(`/v1/runs/${this.enc}/fork`, body);
        location.assign("/runs/" + encodeURIComponent(made.id));
      } catch (e) {
        this.say(String(e.message || e), true);
        fork.disabled = false;
      }
    });
    return h(
      "div",
      { class: "edit-changed", "data-agent": d.agent, "data-step": String(d.step) },
      h("p", {}, h("strong", {}, "First changed step: "), h("span", { class: "first-changed" }, step), h("span", { class: "muted" }, ` (${d.agent_id})`)),
      h("p", {}, d.message),
      answer.differences?.length ? h("pre", { class: "text diff-lines" }, answer.differences.join("\n")) : null,
      h(
        "div",
        { class: "control-row" },
        span ? h("button", { type: "button", onclick: () => this.view.selectSpan(this.view.model.spanKey(span), { scroll: true }) }, "Show this step") : null,
        fork,
        h("span", { class: "muted" }, "a new run: the recording up to this step, then live with your edits"),
      ),
    );
  }
}
