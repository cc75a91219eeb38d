/* A path's page: throughput (quick estimates with their error bars) and RTT over time,
   throughput against window per streams count, time of day per setting in the site's time
   zone, and quick vs full (the paper's Figure 7). All data comes from json_script blocks. */
(function () {
  "use strict";
  var QP = window.QP;

  // Draws a vertical bar of y * (1 +- ci_pct / 100) through every point that has ci_pct.
  var errorBars = {
    id: "errorBars",
    afterDatasetsDraw: function (chart) {
      var ctx = chart.ctx;
      chart.data.datasets.forEach(function (ds, i) {
        if (!ds.errorBars || !chart.isDatasetVisible(i)) return;
        var y = chart.scales.y;
        ctx.save();
        ctx.strokeStyle = ds.borderColor;
        ctx.lineWidth = 1.2;
        chart.getDatasetMeta(i).data.forEach(function (el, j) {
          var p = ds.data[j];
          if (!p || p.ci_pct === undefined || p.ci_pct === null) return;
          var top = y.getPixelForValue(p.y * (1 + p.ci_pct / 100));
          var bottom = y.getPixelForValue(p.y * (1 - p.ci_pct / 100));
          ctx.beginPath();
          ctx.moveTo(el.x, top); ctx.lineTo(el.x, bottom);
          ctx.moveTo(el.x - 3, top); ctx.lineTo(el.x + 3, top);
          ctx.moveTo(el.x - 3, bottom); ctx.lineTo(el.x + 3, bottom);
          ctx.stroke();
        });
        ctx.restore();
      });
    }
  };

  function openPermalink(evt, elements, chart) {
    // Each point is a stored measurement: clicking opens its permalink.
    if (!elements.length) return;
    var p = chart.data.datasets[elements[0].datasetIndex].data[elements[0].index];
    if (p && p.slug) window.location.href = "/m/" + encodeURIComponent(p.slug) + "/";
  }

  function pointLabel(c, yFormat) {
    var p = c.raw, text = c.dataset.label + ": " + yFormat(c.parsed.y);
    if (p && p.ci_pct !== undefined && p.ci_pct !== null) text += " ± " + p.ci_pct.toFixed(1) + " %";
    if (p && p.converged === false) text += " (not converged)";
    if (p && p.limited) text += " (window-limited)";
    return text;
  }

  // Time axes read UTC, like the tables (QP.utcShift); each point keeps its instant in `at`.
  function inUtc(points) {
    return points.map(function (p) { return Object.assign({}, p, { x: QP.utcShift(p.x), at: p.x }); });
  }

  function timeOptions(yTitle, yFormat) {
    return {
      animation: false, parsing: false, normalized: true, maintainAspectRatio: false,
      scales: {
        x: QP.utcTimeAxis("time of the test"),
        y: { beginAtZero: true, title: { display: true, text: yTitle }, ticks: { callback: yFormat } }
      },
      plugins: { tooltip: { callbacks: {
        title: function (items) { return items.length ? QP.utcText(items[0].raw.at) : ""; },
        label: function (c) { return pointLabel(c, yFormat); }
      } } },
      onClick: openPermalink
    };
  }

  function scatter(label, data, color, style, extra) {
    var ds = { label: label, data: data, borderColor: color, backgroundColor: color, showLine: false,
               pointRadius: 2.5, pointStyle: style || "circle" };
    return Object.assign(ds, extra || {});
  }

  // Quick estimates with their error bars, split by convergence: one that did not converge
  // was never shown as a plain number, so it is its own, marked dataset (null when none).
  function quickSets(points, label, unsettledLabel, radius) {
    var unsettled = points.filter(function (p) { return p.converged === false; });
    return {
      settled: scatter(label, points.filter(function (p) { return p.converged !== false; }), QP.palette[0],
                       "circle", { errorBars: true, pointRadius: radius }),
      unsettled: unsettled.length ? scatter(unsettledLabel, unsettled, QP.palette[4], "crossRot",
                                            { errorBars: true, pointRadius: 4 }) : null
    };
  }

  function throughputChart(data) {
    var quick = quickSets(inUtc(data.quick), "quick", "quick, not converged", 2.5);
    var datasets = [quick.settled,
                    scatter("full", inUtc(data.full), QP.palette[1], "triangle"),
                    scatter("validate", inUtc(data.validate), QP.palette[3], "rectRot")];
    if (quick.unsettled) datasets.push(quick.unsettled);
    new Chart(document.getElementById("chart-throughput"), {
      type: "scatter", data: { datasets: datasets }, options: timeOptions("throughput (bit/s)", QP.bps),
      plugins: [errorBars]
    });
    new Chart(document.getElementById("chart-rtt"), {
      type: "scatter",
      data: { datasets: [scatter("smoothed RTT", inUtc(data.rtt_ms), QP.palette[2])] },
      options: timeOptions("round-trip time (ms)", function (v) { return Number(v).toFixed(2) + " ms"; })
    });
  }

  function windowCharts(tables, stat) {
    document.querySelectorAll("canvas.window-chart").forEach(function (canvas) {
      var table = tables[Number(canvas.dataset.index)];
      var datasets = table.lines.map(function (line, i) {
        return { label: line.streams + " stream" + (line.streams === 1 ? "" : "s"), data: line.points,
                 borderColor: QP.palette[i % QP.palette.length], backgroundColor: QP.palette[i % QP.palette.length],
                 pointRadius: 3, showLine: true, tension: 0 };
      });
      new Chart(canvas, {
        type: "scatter", data: { datasets: datasets },
        options: {
          animation: false, parsing: false, maintainAspectRatio: false,
          scales: {
            // Windows are powers of two: label only those ticks (a log axis adds 2..9 x 10^n).
            x: { type: "logarithmic", title: { display: true, text: "window (-w)" },
                 ticks: { callback: function (v) { return Math.log2(v) % 1 === 0 ? QP.bytesTick(v) : ""; } } },
            y: { beginAtZero: true, title: { display: true, text: stat + " throughput (bit/s)" },
                 ticks: { callback: QP.bps } }
          },
          plugins: { tooltip: { callbacks: { label: function (c) {
            return c.dataset.label + ", " + QP.bytes(c.parsed.x) + ": " + QP.bps(c.parsed.y) + " (" + c.raw.n + " tests)";
          } } } }
        }
      });
    });
  }

  function profileChart(profile, minRuns) {
    var labels = [];
    for (var h = 0; h < 24; h++) labels.push((h < 10 ? "0" : "") + h + ":00");
    // An hour with fewer than minRuns runs has no statistic to show (too few runs): a gap.
    var datasets = profile.settings.map(function (s, i) {
      var data = s.bps.map(function (v, h) { return s.n[h] >= minRuns ? v : null; });
      return { label: s.label, data: data, borderColor: QP.palette[i], backgroundColor: QP.palette[i],
               spanGaps: false, pointRadius: 3 };
    });
    new Chart(document.getElementById("chart-profile"), {
      type: "line", data: { labels: labels, datasets: datasets },
      options: {
        animation: false, maintainAspectRatio: false,
        scales: { x: { title: { display: true, text: "hour (" + profile.time_zone + ")" } },
                  y: { beginAtZero: true, title: { display: true, text: profile.stat + " throughput (bit/s)" },
                       ticks: { callback: QP.bps } } },
        plugins: { tooltip: { callbacks: { label: function (c) {
          return c.dataset.label + ": " + profile.stat + " " + QP.bps(c.parsed.y) + " over " +
                 profile.settings[c.datasetIndex].n[c.dataIndex] + " tests";
        } } } }
      }
    });
  }

  function fig7Chart(points) {
    var max = 0;
    points.forEach(function (p) { max = Math.max(max, p.x, p.y * (1 + (p.ci_pct || 0) / 100)); });
    // An estimate that did not converge was never the result (the full run was): drawn apart.
    var runs = quickSets(points, "validate run", "validate run, not converged (full run reported)", 3.5);
    var datasets = [
      runs.settled,
      { label: "quick = full", data: [{ x: 0, y: 0 }, { x: max, y: max }], showLine: true, pointRadius: 0,
        borderColor: "#868e96", borderDash: [5, 4], borderWidth: 1 }
    ];
    if (runs.unsettled) datasets.push(runs.unsettled);
    new Chart(document.getElementById("chart-fig7"), {
      type: "scatter",
      data: { datasets: datasets },
      options: {
        animation: false, parsing: false, maintainAspectRatio: false,
        scales: {
          x: { beginAtZero: true, max: max, title: { display: true, text: "full run of the same connection (bit/s)" }, ticks: { callback: QP.bps } },
          y: { beginAtZero: true, max: max, title: { display: true, text: "quick estimate (bit/s)" }, ticks: { callback: QP.bps } }
        },
        plugins: { tooltip: { callbacks: { label: function (c) {
          var p = c.raw;
          if (p.error_pct === undefined) return c.dataset.label;
          return "full " + QP.bps(p.x) + ", quick " + QP.bps(p.y) + " (" + (p.error_pct >= 0 ? "+" : "") +
                 p.error_pct.toFixed(1) + " %)";
        } } } },
        onClick: openPermalink
      },
      plugins: [errorBars]
    });
  }

  document.addEventListener("DOMContentLoaded", function () {
    var data = QP.readJSON("history-data");
    if (data) throughputChart(data);
    var profile = QP.readJSON("profile-data");
    var minRuns = QP.readJSON("min-runs") || 1;
    var tables = QP.readJSON("window-data");
    if (tables) windowCharts(tables, profile ? profile.stat : "median");
    if (profile && profile.settings.length) profileChart(profile, minRuns);
    var fig7 = QP.readJSON("fig7-data");
    if (fig7 && document.getElementById("chart-fig7")) fig7Chart(fig7);
  });
})();
