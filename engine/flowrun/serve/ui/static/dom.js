// Building DOM and SVG nodes from text. Everything a run holds (model text, tool arguments, file
// names) is untrusted: it only ever becomes a text node or an attribute value, never markup.
// No module of these pages hands a string to an HTML parser (a test greps for the sinks).

const SVG_NS = "http://www.w3.org/2000/svg";

function appendChildren(node, children) {
  for (const child of children.flat(Infinity)) {
    if (child === null || child === undefined || child === false) continue;
    node.appendChild(child instanceof Node ? child : document.createTextNode(String(child)));
  }
}

function setAttributes(node, attrs) {
  for (const [name, value] of Object.entries(attrs || {})) {
    if (value === null || value === undefined || value === false) continue;
    if (name.startsWith("on") && typeof value === "function") {
      node.addEventListener(name.slice(2), value);
    } else if (name === "style") {
      node.style.cssText = String(value); // (through the CSSOM: the pages' policy forbids style attributes)
    } else if (name === "dataset") {
      Object.assign(node.dataset, value);
    } else if (name.startsWith("on")) {
      continue; // an inline handler from data is never set
    } else {
      node.setAttribute(name, value === true ? "" : String(value));
    }
  }
}

// h("div", {class: "x"}, "text", child...): an element whose texts are text nodes
export function h(tag, attrs, ...children) {
  const node = document.createElement(tag);
  setAttributes(node, attrs);
  appendChildren(node, children);
  return node;
}

export function s(tag, attrs, ...children) {
  const node = document.createElementNS(SVG_NS, tag);
  setAttributes(node, attrs);
  appendChildren(node, children);
  return node;
}

export function clear(node) {
  while (node.firstChild) node.removeChild(node.firstChild);
  return node;
}

export function replaceContent(node, ...children) {
  clear(node);
  appendChildren(node, children);
  return node;
}

export function fmtTokens(n) {
  if (n === null || n === undefined) return "–";
  if (n >= 1e6) return (n / 1e6).toFixed(2) + "M";
  if (n >= 1e4) return (n / 1e3).toFixed(1) + "k";
  return String(n);
}

export function fmtCost(usd) {
  if (usd === null || usd === undefined) return "–";
  if (usd === 0) return "$0";
  return usd < 0.01 ? "$" + usd.toFixed(4) : "$" + usd.toFixed(2);
}

export function fmtDuration(seconds) {
  if (seconds === null || seconds === undefined || isNaN(seconds)) return "–";
  if (seconds < 1) return Math.round(seconds * 1000) + " ms";
  if (seconds < 60) return seconds.toFixed(1) + " s";
  const m = Math.floor(seconds / 60);
  if (m < 60) return m + " m " + Math.round(seconds - m * 60) + " s";
  return Math.floor(m / 60) + " h " + (m % 60) + " m";
}

export function fmtTime(epoch) {
  if (!epoch) return "–";
  const d = new Date(epoch * 1000);
  const pad = (n) => String(n).padStart(2, "0");
  return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())} ${pad(d.getHours())}:${pad(d.getMinutes())}:${pad(d.getSeconds())}`;
}

// a state's badge: its name in words, a shape beside it (drawn by the stylesheet) and a colour,
// so that it reads without colour too
export function statusBadge(status) {
  const name = String(status || "unknown").replace(/[^a-z_]/g, "");
  return h("span", { class: "status status-" + name, "data-status": name }, h("span", { class: "status-mark", "aria-hidden": "true" }), (status || "?").replace(/_/g, " "));
}

// "3 min ago" (or "in 5 s"), the absolute time on hover
export function fmtAgo(epoch, now = Date.now() / 1000) {
  if (!epoch) return "–";
  const d = now - epoch;
  const a = Math.abs(d);
  const said = a < 45 ? Math.round(a) + " s" : a < 2700 ? Math.round(a / 60) + " min" : a < 64800 ? Math.round(a / 3600) + " h" : Math.round(a / 86400) + " d";
  if (a < 5) return "just now";
  return d >= 0 ? said + " ago" : "in " + said;
}

export function timeNode(epoch, now) {
  if (!epoch) return h("span", { class: "muted" }, "–");
  const iso = new Date(epoch * 1000).toISOString();
  return h("time", { datetime: iso, title: fmtTime(epoch), "data-epoch": String(epoch) }, fmtAgo(epoch, now));
}

// a tool call's arguments as a person reads them: each key on its line, a text with its line
// breaks as line breaks (not \n), anything else as indented JSON
export function argsNode(args) {
  if (args === null || args === undefined || typeof args !== "object" || Array.isArray(args)) return h("pre", { class: "text args" }, jsonText(args));
  const keys = Object.keys(args);
  if (!keys.length) return h("p", { class: "muted" }, "(no arguments)");
  return h(
    "dl",
    { class: "args" },
    keys.map((k) => {
      const v = args[k];
      const text = typeof v === "string" ? v : jsonText(v);
      return [h("dt", {}, k), h("dd", {}, text.length > 600 || text.includes("\n") ? folded(text, 12, 1200) : h("span", { class: "arg-value" }, text))];
    }),
  );
}

// a definition list of facts, the empty ones left out
export function factList(rows) {
  return h(
    "dl",
    { class: "fact-list" },
    rows.filter((r) => r && r[1] !== null && r[1] !== undefined && r[1] !== "").map(([k, v]) => [h("dt", {}, k), h("dd", {}, v)]),
  );
}

export function jsonText(value) {
  if (typeof value === "string") return value;
  try {
    return JSON.stringify(value, null, 2);
  } catch (e) {
    return String(value);
  }
}

// a long text folded: its first lines, and the rest behind a <details>
export function folded(text, lines = 20, chars = 2000) {
  const all = String(text ?? "");
  const split = all.split("\n");
  let head = split.slice(0, lines).join("\n");
  if (head.length > chars) head = head.slice(0, chars);
  if (head.length >= all.length) return h("pre", { class: "text" }, all);
  const more = all.length - head.length;
  return h(
    "div",
    { class: "folded" },
    h("pre", { class: "text" }, head + "…"),
    h("details", {}, h("summary", {}, `show all (${more} more characters)`), h("pre", { class: "text" }, all)),
  );
}
