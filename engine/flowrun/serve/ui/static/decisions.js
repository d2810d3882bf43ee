// Decisions on the run page: a form for each one the run waits for (Allow or Deny a call, with
// its arguments as a person reads them and a reason; Answer a question; grant more budget or
// refuse it), and afterwards the record of each one taken: what, who, when and why, and the
// amount a budget was granted. `source.decide(body)` sends one (the server's `ref` names it).
import { h, fmtTime, argsNode, timeNode } from "./dom.js";
import { decisionText } from "./details.js";

function field(label, control) {
  return h("label", { class: "field-inline" }, h("span", { class: "field-label" }, label), control);
}

export function decisionForm(p, source, onDone) {
  const reason = h("input", { type: "text", class: "reason", placeholder: "optional" });
  const status = h("span", { class: "decision-status", role: "status" });
  const send = async (body, button) => {
    status.textContent = "sending…";
    button.disabled = true;
    try {
      await source.decide({ call: p.ref || (p.agent_id ? `${p.agent_id}/${p.call_id}` : p.call_id), reason: reason.value || null, continue: true, ...body });
      status.textContent = "sent: the run goes on";
      onDone();
    } catch (e) {
      status.textContent = String(e.message || e);
      button.disabled = false;
    }
  };
  const button = (label, cls, body) => {
    const b = h("button", { type: "button", class: cls }, label);
    b.addEventListener("click", () => send(typeof body === "function" ? body() : body, b));
    return b;
  };
  let what;
  let controls;
  if (p.kind === "question") {
    const answer = h("textarea", { class: "answer", rows: 2 });
    what = [h("div", { class: "decision-what" }, h("strong", {}, p.agent || "?"), " asks"), h("blockquote", { class: "question" }, p.question || "")];
    controls = [field("Your answer", answer), button("Answer", "answer-btn primary", () => ({ answer: answer.value }))];
  } else if (p.kind === "budget") {
    const amount = h("input", { type: "number", class: "grant", step: "any", min: "0", value: p.amount ?? "" });
    what = [h("div", { class: "decision-what" }, h("strong", {}, "More budget"), ` for ${p.limit}`), p.message ? h("p", {}, p.message) : null];
    controls = [
      field("Grant", amount),
      field("Reason", reason),
      button("Allow", "allow-btn primary", () => (amount.value ? { allow: true, grant: Number(amount.value) } : { allow: true })),
      button("Deny", "deny-btn danger", { allow: false }),
    ];
  } else {
    what = [h("div", { class: "decision-what" }, h("strong", {}, p.agent || "?"), " wants to call ", h("span", { class: "tool-name" }, p.tool || "?")), argsNode(p.arguments || {})];
    controls = [field("Reason", reason), button("Allow", "allow-btn primary", { allow: true }), button("Deny", "deny-btn danger", { allow: false })];
  }
  const deadline = p.deadline ? h("p", { class: "muted" }, "taken by its deadline at " + fmtTime(p.deadline) + " if nobody decides") : null;
  return h(
    "div",
    { class: "decision", role: "group", "aria-label": `decision: ${p.kind} of ${p.agent || "the run"}`, "data-call-id": p.call_id, "data-kind": p.kind },
    what,
    h("div", { class: "muted small" }, p.agent_id || ""),
    deadline,
    source.canDecide ? h("div", { class: "decision-buttons" }, controls, status) : h("p", { class: "muted" }, "decided where the run lives (flowrun approve, answer, the web UI)"),
  );
}

// what each decision was about: the call's tool (and the question) from the run's invocations
function subject(model, d) {
  if (d.kind === "budget") return `more ${d.limit || "budget"}`;
  const call = model.call(d.agent_id, d.call_id);
  if (d.kind === "question") return `${call?.arguments?.question ? "“" + call.arguments.question + "”" : "a question"}`;
  return call ? call.tool : d.call_id;
}

export function decisionsTable(model) {
  const taken = model.summary?.decisions || [];
  if (!taken.length) return null;
  return h(
    "table",
    { class: "decisions-table" },
    h("thead", {}, h("tr", {}, ["when", "agent", "what", "decision", "by", "reason"].map((c) => h("th", { scope: "col" }, c)))),
    h(
      "tbody",
      {},
      taken.map((d) =>
        h(
          "tr",
          { "data-kind": d.kind, "data-by": d.by },
          h("td", {}, d.at ? timeNode(d.at) : "–"),
          h("td", {}, model.invocationOf(d.agent_id)?.agent || (d.agent_id ? d.agent_id : "the run")),
          h("td", {}, d.kind + ": ", subject(model, d)),
          h("td", {}, decisionText(d)),
          h("td", {}, d.by + (d.user ? ` (${d.user})` : "")),
          h("td", {}, d.reason || ""),
        ),
      ),
    ),
  );
}
