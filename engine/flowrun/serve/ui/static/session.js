// What a page checks before it draws (GET /v1/session, answered without the token and always
// with 200, so a wrong token or a mistyped id is a page of its own, not a failed request):
// whether the server wants a token and this tab holds the right one, and whether the runs and
// batches or evals the address names exist.
import { h, replaceContent } from "./dom.js";
import { getJSON, setToken, apiToken } from "./api.js";

function tokenPage(main, held) {
  const input = h("input", { type: "password", id: "token-input", autocomplete: "off", required: true });
  const use = (e) => {
    e.preventDefault();
    setToken(input.value.trim());
    location.reload();
  };
  document.title = "flowrun · token needed";
  replaceContent(
    main,
    h(
      "section",
      { class: "notice", role: "alert", "data-page": "token" },
      h("h1", {}, held ? "This token is not the server's" : "This server needs its token"),
      h("p", {}, held ? "The token this tab holds was refused. " : "", "Open the address ", h("code", {}, "flowrun ui"), " printed (it carries the token after ", h("code", {}, "#token="), "), or paste the token here. It is kept for this tab only."),
      h("form", { class: "token-form", onsubmit: use }, h("label", { for: "token-input" }, "Token"), input, h("button", { type: "submit", class: "primary" }, "Use this token")),
    ),
  );
}

export function missingPage(main, what, name, back) {
  document.title = `flowrun · no ${what} ${name}`;
  replaceContent(
    main,
    h(
      "section",
      { class: "notice", role: "alert", "data-page": "missing" },
      h("h1", {}, `No ${what} `, h("code", {}, name)),
      h("p", {}, `This server's runs folder has no ${what} of that name: the address may be mistyped, or the ${what} was removed.`),
      h("p", {}, h("a", { href: back[0] }, back[1])),
    ),
  );
}

// the session, or null once a page saying why nothing can be drawn is drawn instead
export async function gate(main, { runs = [], batches = [], evals = [] } = {}) {
  const query = new URLSearchParams();
  for (const r of runs) query.append("run", r);
  for (const b of batches) query.append("batch", b);
  for (const e of evals) query.append("eval", e);
  const session = await getJSON("/v1/session" + (query.toString() ? "?" + query : ""));
  if (!session.authorized) {
    tokenPage(main, Boolean(apiToken()));
    return null;
  }
  for (const r of runs) {
    if (!session.runs?.[r]) {
      missingPage(main, "run", r, ["/", "See all runs"]);
      return null;
    }
  }
  for (const b of batches) {
    if (!session.batches?.[b]) {
      missingPage(main, "batch", b, ["/batches", "See all batches"]);
      return null;
    }
  }
  for (const e of evals) {
    if (!session.evals?.[e]) {
      missingPage(main, "eval", e, ["/evals", "See all evals"]);
      return null;
    }
  }
  return session;
}
