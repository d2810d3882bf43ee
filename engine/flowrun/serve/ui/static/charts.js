// Small SVG charts: horizontal bars of tokens (input and output stacked) and cost per agent and
// per model, and a line of cost over time (the batch page).
import { s, h, fmtTokens, fmtCost, fmtDuration } from "./dom.js";

const CHART_LABEL_W = 150;
const CHART_BAR_H = 16;

// rows: [{key, input, output, cost, calls}]; `measure` "tokens" or "cost"
export function barChart(title, rows, measure, width = 460) {
  const value = (r) => (measure === "cost" ? r.cost || 0 : r.input + r.output);
  const max = Math.max(...rows.map(value), 1e-12);
  const plot = width - CHART_LABEL_W - 80;
  const height = rows.length * (CHART_BAR_H + 6) + 6;
  const svg = s("svg", { class: "chart chart-" + measure, width, height, viewBox: `0 0 ${width} ${height}`, role: "img", "aria-label": title });
  rows.forEach((r, i) => {
    const y = 4 + i * (CHART_BAR_H + 6);
    svg.appendChild(s("text", { class: "chart-label", x: 0, y: y + CHART_BAR_H - 4 }, r.key, s("title", {}, r.key)));
    if (measure === "cost") {
      const w = ((r.cost || 0) / max) * plot;
      svg.appendChild(s("rect", { class: "chart-bar cost", x: CHART_LABEL_W, y, width: Math.max(w, 1), height: CHART_BAR_H }));
      svg.appendChild(s("text", { class: "chart-value", x: CHART_LABEL_W + w + 4, y: y + CHART_BAR_H - 4 }, fmtCost(r.cost)));
    } else {
      const wi = (r.input / max) * plot;
      const wo = (r.output / max) * plot;
      svg.appendChild(s("rect", { class: "chart-bar input", x: CHART_LABEL_W, y, width: Math.max(wi, 1), height: CHART_BAR_H }, s("title", {}, `input ${r.input}`)));
      svg.appendChild(s("rect", { class: "chart-bar output", x: CHART_LABEL_W + wi, y, width: Math.max(wo, 1), height: CHART_BAR_H }, s("title", {}, `output ${r.output}`)));
      svg.appendChild(s("text", { class: "chart-value", x: CHART_LABEL_W + wi + wo + 4, y: y + CHART_BAR_H - 4 }, fmtTokens(r.input + r.output)));
    }
  });
  return h("figure", { class: "chart-box" }, h("figcaption", {}, title), rows.length ? svg : h("p", { class: "muted" }, "no model call yet"));
}

// points: [[t, value], ...] (t epoch seconds), a step line from the first point
export function lineChart(title, points, width = 620, height = 180) {
  const svg = s("svg", { class: "chart chart-line", width, height, viewBox: `0 0 ${width} ${height}`, role: "img", "aria-label": title });
  if (points.length) {
    const t0 = points[0][0];
    const span = Math.max(points[points.length - 1][0] - t0, 1e-3);
    const max = Math.max(...points.map((p) => p[1]), 1e-12);
    const px = (t) => 50 + ((t - t0) / span) * (width - 60);
    const py = (v) => height - 20 - (v / max) * (height - 40);
    let d = `M ${px(points[0][0])} ${py(0)}`;
    for (const [t, v] of points) d += ` L ${px(t)} ${py(v)}`;
    svg.appendChild(s("path", { class: "line", d }));
    svg.appendChild(s("text", { class: "chart-value", x: 2, y: 14 }, fmtCost(max)));
    svg.appendChild(s("text", { class: "chart-value", x: 50, y: height - 4 }, "0"));
    svg.appendChild(s("text", { class: "chart-value", x: width - 60, y: height - 4 }, fmtDuration(span)));
  }
  return h("figure", { class: "chart-box" }, h("figcaption", {}, title), svg);
}
