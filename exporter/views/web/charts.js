// The status page's charts of one run, drawn with uPlot (vendored beside this file) from
// the run's timeline (GET api/v1/runs/{namespace}/{pod}/timeline, exporter/views/charts.py).
// Everything that decides what is honest to draw (the loss axis's range, the state band,
// the notice over a stalled run's chart) comes from the exporter; this file only draws.
// Redrawn from fresh data every 5 s. No external assets: clusters are often offline.
(function () {
  "use strict";
  // The exporter's duration format (exporter/core/humanize.py duration, the one definition;
  // tests/test_statuspage.py holds this copy to it value by value).
  function duration(s) {
    if (s == null || isNaN(s)) return "-";
    if (s >= 1000 * 86400) return ">999d";
    s = Math.max(0, Math.floor(s));
    const two = (n) => String(n).padStart(2, "0");
    if (s < 60) return s + "s";
    if (s < 600 && s % 60) return Math.floor(s / 60) + "m" + two(s % 60) + "s";
    if (s < 3600) return Math.floor(s / 60) + "m";
    if (s < 86400) return Math.floor(s / 3600) + "h" + two(Math.floor(s % 3600 / 60)) + "m";
    return Math.floor(s / 86400) + "d" + two(Math.floor(s % 86400 / 3600)) + "h";
  }
  window.tpeDuration = duration;

  const section = document.getElementById("charts");
  if (!section || typeof uPlot === "undefined") return;
  const url = new URL(section.dataset.timeline, location.href);
  const charts = {};
  // Ticks of a duration axis at round durations (s): 50 s, 1m40s and 2m30s are no ticks.
  const DURATION_TICKS = [1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200,
    10800, 21600, 43200, 86400, 172800, 432000, 864000, 2592000];
  // Room under the time axis for the state band, in CSS pixels: the band is drawn there,
  // below the axis's labels, so it never covers a series.
  const BAND = 8, BAND_ROOM = 14;

  function width() {
    const fig = section.querySelector("figure");
    return Math.max(320, (fig ? fig.clientWidth : 600) - 20);
  }

  // The state band: each state's span as a strip at the bottom of the chart, below the
  // time axis's labels (the room BAND_ROOM keeps); a stalled run's stall shaded over the
  // plot from its last step (the legend under the charts names both).
  function stateBand(doc) {
    return (u) => {
      const ctx = u.ctx, b = u.bbox, h = Math.round(BAND * devicePixelRatio);
      const y = ctx.canvas.height - h - Math.round(2 * devicePixelRatio);
      ctx.save();
      for (const seg of doc.states) {
        const x0 = Math.max(b.left, u.valToPos(seg.from, "x", true));
        const x1 = Math.min(b.left + b.width, u.valToPos(seg.to, "x", true));
        if (x1 <= x0) continue;
        ctx.fillStyle = seg.color;
        ctx.fillRect(x0, y, Math.max(1, x1 - x0), h);
      }
      if (doc.state === "stalled" && doc.last_step_timestamp_seconds != null) {
        const x0 = Math.max(b.left, u.valToPos(doc.last_step_timestamp_seconds, "x", true));
        ctx.fillStyle = "rgba(207, 34, 46, 0.08)";
        ctx.fillRect(x0, b.top, b.left + b.width - x0, b.height);
      }
      ctx.restore();
      u.root.dataset.bandGap = String(Math.round((y - (b.top + b.height)) / devicePixelRatio));
    };
  }

  // A notice (why there is no line, or that the run is stalled) sits between the caption
  // and the chart, never over the plot.
  function notice(fig, text) {
    let el = fig.querySelector(".notice");
    if (!text) { if (el) el.remove(); return; }
    if (!el) {
      el = document.createElement("div");
      el.className = "notice";
      fig.insertBefore(el, fig.querySelector("figcaption").nextSibling);
    }
    el.textContent = text;
  }

  function overlaps(a, b) {
    return a.left < b.right && b.left < a.right && a.top < b.bottom && b.top < a.bottom;
  }

  // How many text boxes of the chart section (notices, captions, legends, other charts'
  // labels) lie over a plot area: 0 on an honest page. Measured by the browser after each
  // draw, for the tests to read (data-text-over-plot).
  function textOverPlot() {
    const plots = [...section.querySelectorAll(".u-over")].map((el) => el.getBoundingClientRect());
    const texts = [...section.querySelectorAll(".notice, figcaption, .u-legend")];
    let n = 0;
    for (const t of texts) {
      const r = t.getBoundingClientRect();
      if (r.width && r.height && plots.some((p) => overlaps(r, p))) n++;
    }
    return n;
  }

  function draw(id, opts, data, text) {
    const fig = document.getElementById(id);
    if (charts[id]) charts[id].destroy();
    notice(fig, text);
    charts[id] = new uPlot(Object.assign({ width: width(), height: 260 }, opts), data, fig);
  }

  // Loss and eval loss against the step: the newest value at each step (a resumed
  // attempt redoes steps), eval losses as points on the same axis.
  function lossData(doc) {
    const at = new Map();
    const r = doc.rows;
    for (let i = 0; i < r.time.length; i++) {
      if (r.step[i] == null || r.loss[i] == null) continue;
      at.set(r.step[i], [r.loss[i], (at.get(r.step[i]) || [null, null])[1]]);
    }
    const e = doc.evals;
    for (let i = 0; i < e.time.length; i++) {
      if (e.step[i] == null || e.eval_loss[i] == null) continue;
      at.set(e.step[i], [(at.get(e.step[i]) || [null, null])[0], e.eval_loss[i]]);
    }
    const steps = [...at.keys()].sort((a, b) => a - b);
    return [steps, steps.map((s) => at.get(s)[0]), steps.map((s) => at.get(s)[1])];
  }

  function render(doc) {
    const r = doc.rows;
    const band = stateBand(doc);
    const time = r.time;
    const loss = lossData(doc);
    const range = doc.loss_range;
    const points = loss[0].length;
    draw("chart-loss", {
      scales: { x: { time: false }, y: { range: range ? () => range : undefined } },
      axes: [{ label: "step" }, { label: "loss", size: 60 }],
      series: [
        { label: "step" },
        { label: "loss", stroke: "#0969da", width: 1.5, spanGaps: true },
        // Measured at a few steps: drawn at those steps only, not joined into a line.
        { label: "eval loss", stroke: "#bc4c00", width: 1.5, paths: () => null,
          points: { show: true, size: 7, fill: "#bc4c00" } },
      ],
    }, loss, points < 2 ? (doc.notice || "Not enough losses reported yet to draw a line.") : "");
    const pct = r.progress.map((p) => (p == null ? null : p * 100));
    draw("chart-progress", {
      scales: { x: { time: true }, pct: { range: [0, 100] }, eta: { range: (u, lo, hi) => [0, Math.max(60, hi || 0) * 1.05] } },
      padding: [null, null, BAND_ROOM, null],
      axes: [
        { label: "time" },
        { scale: "pct", label: "progress %", values: (u, v) => v.map((x) => x + "%"), size: 60 },
        { scale: "eta", side: 1, label: "ETA", incrs: DURATION_TICKS, values: (u, v) => v.map(duration), grid: { show: false }, size: 80 },
      ],
      series: [
        { label: "time" },
        { label: "progress", scale: "pct", stroke: "#1a7f37", width: 2, value: (u, v) => (v == null ? "-" : v.toFixed(1) + "%") },
        { label: "ETA", scale: "eta", stroke: "#8250df", width: 1.5, value: (u, v) => duration(v) },
        { label: "ETA lower", scale: "eta", stroke: "rgba(130,80,223,.35)", dash: [4, 4], value: (u, v) => duration(v) },
        { label: "ETA upper", scale: "eta", stroke: "rgba(130,80,223,.35)", dash: [4, 4], value: (u, v) => duration(v) },
      ],
      bands: [{ series: [4, 3], fill: "rgba(130,80,223,.12)" }],
      hooks: { draw: [band] },
    }, [time, pct, r.eta_seconds, r.eta_lower_seconds, r.eta_upper_seconds], doc.notice);
    draw("chart-throughput", {
      scales: { x: { time: true }, y: { range: (u, lo, hi) => [0, Math.max(hi || 0, 1e-9) * 1.15] } },
      padding: [null, null, BAND_ROOM, null],
      axes: [{ label: "time" }, { label: "steps/s", size: 60 }],
      series: [
        { label: "time" },
        { label: "steps/s", stroke: "#0969da", width: 1.5 },
        { label: "typical", stroke: "#6e7781", dash: [6, 4], width: 1.5 },
      ],
      hooks: { draw: [band] },
    }, [time, r.steps_per_second, r.typical_steps_per_second], doc.notice);
    section.dataset.drawn = String(doc.time);
    section.dataset.state = doc.state;
    section.dataset.textOverPlot = String(textOverPlot());
  }

  async function refresh() {
    try {
      const resp = await fetch(url, { headers: { Accept: "application/json" } });
      if (!resp.ok) return;
      render(await resp.json());
    } catch (e) { /* the exporter restarting: try again next time */ }
  }
  refresh();
  setInterval(refresh, 5000);
})();
