// Talking to the runs API (HTTP_CONTRACT.md): the bearer token from the address's fragment
// (`#token=...`, as `flowrun ui` prints it) kept for the tab in sessionStorage, JSON requests,
// and the events of a run as server-sent events read through fetch (so the token goes in a
// header, and every event type arrives, whatever its name).

const TOKEN_KEY = "flowrun-token";

export function setToken(token) {
  sessionStorage.setItem(TOKEN_KEY, token);
}

export function apiToken() {
  const m = location.hash.match(/token=([^&]+)/);
  if (m) {
    sessionStorage.setItem(TOKEN_KEY, decodeURIComponent(m[1]));
    history.replaceState(null, "", location.pathname + location.search);
  }
  return sessionStorage.getItem(TOKEN_KEY);
}

function headers(extra) {
  const out = { Accept: "application/json", ...(extra || {}) };
  const t = apiToken();
  if (t) out.Authorization = "Bearer " + t;
  return out;
}

async function failure(resp) {
  let text = `${resp.status} ${resp.statusText}`;
  try {
    const body = await resp.json();
    if (body.error) text = body.error + (body.hint ? ` (${body.hint})` : "");
  } catch (e) {
    // not JSON: the status says it
  }
  const err = new Error(text);
  err.status = resp.status;
  return err;
}

export async function getJSON(path) {
  const resp = await fetch(path, { headers: headers() });
  if (!resp.ok) throw await failure(resp);
  return resp.json();
}

export async function getText(path) {
  const resp = await fetch(path, { headers: headers({ Accept: "*/*" }) });
  if (!resp.ok) throw await failure(resp);
  return resp.text();
}

export async function postJSON(path, body) {
  const resp = await fetch(path, { method: "POST", headers: headers({ "Content-Type": "application/json" }), body: JSON.stringify(body ?? {}) });
  if (!resp.ok) throw await failure(resp);
  return resp.json();
}

// Follow a run's events after `after` (its last seq seen): `onEvent(event)` for each line of
// the log, until the server's `end` event (resolves with its data) or the stream closes.
export async function followEvents(runId, after, onEvent, signal) {
  const resp = await fetch(`/v1/runs/${encodeURIComponent(runId)}/events`, {
    headers: headers({ Accept: "text/event-stream", "Last-Event-ID": String(after || 0) }),
    signal,
  });
  if (!resp.ok) throw await failure(resp);
  const reader = resp.body.getReader();
  const decoder = new TextDecoder();
  let buffer = "";
  for (;;) {
    const { value, done } = await reader.read();
    if (done) return null;
    buffer += decoder.decode(value, { stream: true }).replace(/\r\n?/g, "\n");
    let cut;
    while ((cut = buffer.indexOf("\n\n")) >= 0) {
      const block = buffer.slice(0, cut);
      buffer = buffer.slice(cut + 2);
      let type = "message";
      const data = [];
      for (const line of block.split("\n")) {
        if (line.startsWith("event:")) type = line.slice(6).trim();
        else if (line.startsWith("data:")) data.push(line.slice(5).replace(/^ /, ""));
      }
      if (!data.length) continue;
      const parsed = JSON.parse(data.join("\n"));
      if (type === "end") {
        reader.cancel().catch(() => {});
        return parsed;
      }
      onEvent(parsed);
    }
  }
}
