// A small Markdown renderer that builds DOM nodes (never markup from the text): headings,
// paragraphs, fenced code, lists, quotes, rules, pipe tables; inline code, bold, italics and
// links. Raw HTML in the text stays text. Links keep only http(s), mailto and relative
// targets; images become links (a report opens offline and loads nothing).
import { h } from "./dom.js";

// underscores only emphasise at word edges: snake_case_names stay as they are
const INLINE = /(`+)([\s\S]*?[^`])\1(?!`)|\*\*([^*]+)\*\*|(?<!\w)__([^_]+)__(?!\w)|\*([^*\s][^*]*)\*|(?<!\w)_([^_\s][^_]*)_(?!\w)|!?\[([^\]]*)\]\(([^)\s]*)(?:\s+"[^"]*")?\)|<(https?:\/\/[^>\s]+)>/;

export function safeHref(url) {
  const u = String(url || "").trim();
  if (/^(https?:|mailto:)/i.test(u)) return u;
  if (/^[a-z][a-z0-9+.-]*:/i.test(u) || u.startsWith("//")) return null; // javascript:, data:, ...
  return u || null;
}

function link(text, url) {
  const href = safeHref(url);
  if (!href) return document.createTextNode(text);
  return h("a", { href, rel: "noopener noreferrer nofollow", target: "_blank" }, text);
}

export function inline(text) {
  const out = [];
  let rest = String(text);
  while (rest) {
    const m = INLINE.exec(rest);
    if (!m) {
      out.push(rest);
      break;
    }
    if (m.index) out.push(rest.slice(0, m.index));
    if (m[1]) out.push(h("code", {}, m[2]));
    else if (m[3] || m[4]) out.push(h("strong", {}, ...inline(m[3] || m[4])));
    else if (m[5] || m[6]) out.push(h("em", {}, ...inline(m[5] || m[6])));
    else if (m[7] !== undefined) out.push(link(m[7] || m[8], m[8]));
    else if (m[9]) out.push(link(m[9], m[9]));
    rest = rest.slice(m.index + m[0].length);
  }
  return out;
}

function tableRow(line) {
  return line.replace(/^\s*\|/, "").replace(/\|\s*$/, "").split("|").map((c) => c.trim());
}

const BLOCK_START = /^(#{1,6}\s|```|~~~|>\s?|\s*[-*+]\s|\s*\d+[.)]\s|\s*([-*_])(\s*\2){2,}\s*$)/;

export function renderMarkdown(source) {
  const lines = String(source ?? "").replace(/\r\n?/g, "\n").split("\n");
  const root = h("div", { class: "markdown" });
  let i = 0;
  while (i < lines.length) {
    const line = lines[i];
    if (!line.trim()) {
      i++;
      continue;
    }
    const fence = line.match(/^(```|~~~)\s*([\w+-]*)/);
    if (fence) {
      const body = [];
      i++;
      while (i < lines.length && !lines[i].startsWith(fence[1])) body.push(lines[i++]);
      i++;
      root.appendChild(h("pre", { class: "code" }, h("code", fence[2] ? { "data-lang": fence[2] } : {}, body.join("\n"))));
      continue;
    }
    const heading = line.match(/^(#{1,6})\s+(.*?)\s*#*\s*$/);
    if (heading) {
      root.appendChild(h("h" + heading[1].length, {}, ...inline(heading[2])));
      i++;
      continue;
    }
    if (/^\s*([-*_])(\s*\1){2,}\s*$/.test(line)) {
      root.appendChild(h("hr"));
      i++;
      continue;
    }
    if (/^>\s?/.test(line)) {
      const body = [];
      while (i < lines.length && /^>\s?/.test(lines[i])) body.push(lines[i++].replace(/^>\s?/, ""));
      root.appendChild(h("blockquote", {}, renderMarkdown(body.join("\n"))));
      continue;
    }
    const bullet = /^\s*[-*+]\s+/;
    const numbered = /^\s*\d+[.)]\s+/;
    if (bullet.test(line) || numbered.test(line)) {
      const marker = bullet.test(line) ? bullet : numbered;
      const list = h(marker === bullet ? "ul" : "ol");
      while (i < lines.length && marker.test(lines[i])) {
        let item = lines[i++].replace(marker, "");
        while (i < lines.length && /^\s{2,}\S/.test(lines[i]) && !marker.test(lines[i])) item += " " + lines[i++].trim();
        list.appendChild(h("li", {}, ...inline(item)));
      }
      root.appendChild(list);
      continue;
    }
    if (line.includes("|") && i + 1 < lines.length && /^\s*\|?\s*:?-{3,}/.test(lines[i + 1])) {
      const head = tableRow(line);
      i += 2;
      const rows = [];
      while (i < lines.length && lines[i].includes("|") && lines[i].trim()) rows.push(tableRow(lines[i++]));
      root.appendChild(
        h("table", { class: "md-table" }, h("thead", {}, h("tr", {}, head.map((c) => h("th", {}, ...inline(c))))), h("tbody", {}, rows.map((r) => h("tr", {}, r.map((c) => h("td", {}, ...inline(c))))))),
      );
      continue;
    }
    const para = [];
    while (i < lines.length && lines[i].trim() && !(para.length && BLOCK_START.test(lines[i]))) para.push(lines[i++]);
    root.appendChild(h("p", {}, ...inline(para.join("\n"))));
  }
  return root;
}
