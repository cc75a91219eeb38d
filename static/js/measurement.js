/* Measurement permalink: copy-link button, live chart while the test runs (fed by the htmx
   poll's json_script), and the paper-style trace charts once it is stored. */
(function () {
  "use strict";
  var QP = window.QP;

  function points(xs, ys, f) {
    var out = [];
    for (var i = 0; i < xs.length; i++) {
      var y = ys[i];
      if (y !== null && y !== undefined) out.push({ x: xs[i], y: f ? f(y) : y });
    }
    return out;
  }

  function line(label, data, color, extra) {
    var ds = { label: label, data: data, borderColor: color, backgroundColor: color,
               borderWidth: 1.5, pointRadius: 0, tension: 0 };
    for (var k in extra || {}) ds[k] = extra[k];
    return ds;
  }

  function baseOptions(yTitle, yFormat, marker) {
    return {
      animation: false, parsing: false, normalized: true, maintainAspectRatio: false,
      interaction: { mode: "nearest", axis: "x", intersect: false },
      scales: {
        x: { type: "linear", title: { display: true, text: "time since first byte (s)" } },
        y: { beginAtZero: true, title: { display: true, text: yTitle }, ticks: { callback: yFormat } }
      },
      plugins: {
        decimation: { enabled: true, algorithm: "lttb", samples: 600 },
        marker: marker,
        tooltip: { callbacks: { label: function (c) { return c.dataset.label + ": " + yFormat(c.parsed.y); } } }
      }
    };
  }

  function chart(id, datasets, options, plugins) {
    var el = document.getElementById(id);
    if (!el) return null;
    return new Chart(el, { type: "line", data: { datasets: datasets }, options: options,
                           plugins: [QP.markerPlugin, QP.bandPlugin].concat(plugins || []) });
  }

  // A byte axis ticked at round binary steps (256 KiB, 512 KiB, 768 KiB, 1 MiB).
  function binaryAxis(axis) {
    axis.afterBuildTicks = QP.binaryTicks;
    axis.ticks = { callback: QP.bytesTick };
    return axis;
  }

  // The top of a rate axis: the measured rates' peak plus a tenth, rounded up to a step of
  // 1, 2 or 5 in its decade, so a spike of BBR's estimate does not squash them to the bottom.
  function rateCeiling(values) {
    var peak = 0;
    values.forEach(function (v) { if (v !== null && v !== undefined && v > peak) peak = v; });
    if (!(peak > 0)) return undefined;
    var target = peak * 1.1, decade = Math.pow(10, Math.floor(Math.log10(target)));
    var steps = [1, 1.2, 1.5, 2, 2.5, 3, 4, 5, 6, 8, 10];
    for (var i = 0; i < steps.length; i++) if (steps[i] * decade >= target) return steps[i] * decade;
    return 10 * decade;
  }

  // The window the quick estimate measured, shaded on the time charts (null: not known).
  function quickBand(trace) {
    var w = trace.quick_window;
    return w ? { from: w[0], to: w[1], label: "quick window" } : undefined;
  }

  // BBR's mode over time (the first BBR stream's, from TCP_CC_INFO) shades the cwnd chart, so a
  // PROBE_RTT dip or a DRAIN is seen for what it is.
  var BBR_MODES = [["startup", "rgba(217, 72, 15, 0.13)"], ["drain", "rgba(134, 46, 156, 0.16)"],
                   ["probe_bw", "rgba(43, 138, 62, 0.10)"], ["probe_rtt", "rgba(180, 35, 24, 0.24)"]];
  var bbrBands = {
    id: "bbrBands",
    beforeDatasetsDraw: function (chart, args, opts) {
      if (!opts || !opts.modes) return;
      var x = chart.scales.x, area = chart.chartArea, ctx = chart.ctx, t = opts.t, modes = opts.modes;
      var colours = {};
      BBR_MODES.forEach(function (m) { colours[m[0]] = m[1]; });
      ctx.save();
      var start = 0;
      for (var i = 1; i <= t.length; i++) {
        if (i < t.length && modes[i] === modes[start]) continue;
        var colour = colours[modes[start]];
        if (colour) {
          var x0 = Math.max(area.left, x.getPixelForValue(t[start]));
          var x1 = Math.min(area.right, x.getPixelForValue(t[Math.min(i, t.length - 1)]));
          ctx.fillStyle = colour;
          ctx.fillRect(x0, area.top, Math.max(1, x1 - x0), area.bottom - area.top);
        }
        start = i;
      }
      ctx.restore();
    }
  };

  // The first stream running BBR, with its number n (1..N: iperf3's ids skip numbers).
  function bbrStream(streams) {
    for (var i = 0; i < streams.length; i++) {
      var modes = streams[i].bbr_mode || [];
      for (var j = 0; j < modes.length; j++) if (modes[j]) return { n: i + 1, stream: streams[i] };
    }
    return null;
  }

  function bbrLegend(id, bbr) {
    var stream = bbr.stream;
    var el = document.getElementById(id);
    if (!el) return;
    var seen = {};
    stream.bbr_mode.forEach(function (m) { if (m) seen[m] = true; });
    var legend = document.createElement("p");
    legend.className = "small muted bbr-legend";
    legend.appendChild(document.createTextNode("Background: BBR mode of stream " + bbr.n + ": "));
    BBR_MODES.forEach(function (m) {
      if (!seen[m[0]]) return;
      var swatch = document.createElement("span");
      swatch.className = "swatch";
      swatch.style.background = m[1];
      legend.appendChild(swatch);
      legend.appendChild(document.createTextNode(" " + m[0] + " "));
    });
    el.closest("figure").appendChild(legend);
  }

  // The time axis spans the run, 0 to its elapsed time (the charts' data-elapsed-s), not to the
  // next round tick: a 10 s run drawn to 12 s reads as a run that stopped early. Without the
  // figure, the last sample's time.
  function runEnd(t) {
    var box = document.querySelector(".charts[data-elapsed-s]");
    var end = box ? parseFloat(box.getAttribute("data-elapsed-s")) : NaN;
    if (!(end > 0) && t.length) end = t[t.length - 1];
    return end > 0 ? end : undefined;
  }

  function endAxisAt(options, end) {
    if (end === undefined) return options;
    options.scales.x.min = 0;
    options.scales.x.max = end;
    // No extra tick for the end itself (10.03 beside 10): the axis simply stops there.
    options.scales.x.ticks = { includeBounds: false };
    return options;
  }

  function drawTrace(trace) {
    var t = trace.t;
    var end = runEnd(t);
    var marker = { x: trace.slow_start_end_s, label: "slow-start end" };
    var streams = trace.streams || [];
    var ms = function (v) { return v / 1000; };
    var cwnd = [];
    if (streams.length === 1) {
      cwnd.push(line("cwnd", points(t, streams[0].cwnd_bytes), QP.palette[0]));
      cwnd.push(line("ssthresh", points(t, streams[0].ssthresh_bytes), QP.palette[1], { borderDash: [4, 3] }));
    } else {
      cwnd.push(line("cwnd, all streams", points(t, trace.cwnd_bytes), QP.palette[0]));
    }
    var bbr = bbrStream(streams);
    var band = quickBand(trace);
    var cwndOptions = endAxisAt(baseOptions("congestion window", QP.bytes, marker), end);
    binaryAxis(cwndOptions.scales.y);
    cwndOptions.plugins.band = band;
    if (bbr) {
      cwndOptions.plugins.bbrBands = { t: t, modes: bbr.stream.bbr_mode };
      bbrLegend("chart-cwnd", bbr);
    }
    chart("chart-cwnd", cwnd, cwndOptions, [bbrBands]);
    var bw = [line("InstBW", points(t, trace.inst_bps), QP.palette[0]),
              line("CumuBW", points(t, trace.cumu_bps), QP.palette[1])];
    var bwOptions = endAxisAt(baseOptions("throughput (bit/s)", QP.bps, marker), end);
    // The axis fits InstBW and CumuBW; BBR's estimate can spike far above them, and is clipped.
    bwOptions.scales.y.max = rateCeiling(trace.inst_bps.concat(trace.cumu_bps));
    bwOptions.plugins.band = band;
    if (bbr) {
      var estimate = bbr.stream.bbr_bw_bps || [];
      var clipped = bwOptions.scales.y.max !== undefined &&
                    estimate.some(function (v) { return v !== null && v > bwOptions.scales.y.max; });
      bw.push(line("BBR bw estimate (stream " + bbr.n + (clipped ? "; clipped at the top" : "") + ")",
                   points(t, estimate), QP.palette[2], { borderDash: [2, 2] }));
    }
    chart("chart-bw", bw, bwOptions);
    var streamOptions = endAxisAt(baseOptions("congestion window", QP.bytes, marker), end);
    binaryAxis(streamOptions.scales.y);
    streamOptions.plugins.band = band;
    // Streams are numbered 1..N (iperf3's own ids, 1, 3, 4, 5, read as if streams were missing).
    chart("chart-streams", streams.map(function (s, i) {
      return line("stream " + (i + 1), points(t, s.cwnd_bytes), QP.palette[i % QP.palette.length]);
    }), streamOptions);
    chart("chart-rtt", streams.map(function (s, i) {
      return line(streams.length === 1 ? "smoothed RTT" : "stream " + (i + 1), points(t, s.rtt_us, ms),
                  QP.palette[i % QP.palette.length]);
    }), endAxisAt(baseOptions("round-trip time (ms)", function (v) { return Number(v).toFixed(2) + " ms"; }, marker), end));
  }

  var live = null;

  function updateLive() {
    var samples = QP.readJSON("live-samples");
    var el = document.getElementById("chart-live");
    if (!samples || !el) return;
    var t = samples.map(function (s) { return s.t; });
    var inst = points(t, samples.map(function (s) { return s.inst_bps; }));
    var cumu = points(t, samples.map(function (s) { return s.cumu_bps; }));
    var cwnd = points(t, samples.map(function (s) { return s.cwnd_bytes; }));
    if (live === null) {
      var opts = baseOptions("throughput (bit/s)", QP.bps, undefined);
      opts.scales.cwnd = binaryAxis({ position: "right", beginAtZero: true, grid: { drawOnChartArea: false },
                                      title: { display: true, text: "congestion window" } });
      emptyAxes(opts.scales, !inst.length);
      live = chart("chart-live", [
        line("InstBW", inst, QP.palette[0]),
        line("CumuBW", cumu, QP.palette[1]),
        line("cwnd", cwnd, QP.palette[2], { yAxisID: "cwnd" })
      ], opts);
      return;
    }
    live.data.datasets[0].data = inst;
    live.data.datasets[1].data = cumu;
    live.data.datasets[2].data = cwnd;
    emptyAxes(live.options.scales, !inst.length);
    live.update("none");
  }

  // With no sample yet (a queued test) Chart.js spans 0 to 1, which read "0 bit/s ... 1 bit/s":
  // until the first sample the axes show a plausible range instead.
  function emptyAxes(scales, empty) {
    scales.y.suggestedMax = empty ? 1e9 : undefined;
    scales.cwnd.suggestedMax = empty ? 1048576 : undefined;
  }

  function copyLink() {
    var button = document.getElementById("copy-link");
    var status = document.getElementById("copy-status");
    if (!button) return;
    button.addEventListener("click", function () {
      var url = button.getAttribute("data-url");
      var done = function () { status.textContent = "Link copied"; };
      if (navigator.clipboard && window.isSecureContext) {
        navigator.clipboard.writeText(url).then(done, function () { fallbackCopy(url, done); });
      } else {
        fallbackCopy(url, done);
      }
    });
  }

  // Plain-http deployments have no Clipboard API; a selected text field still copies.
  function fallbackCopy(url, done) {
    var input = document.createElement("input");
    input.value = url;
    document.body.appendChild(input);
    input.select();
    try { if (document.execCommand("copy")) done(); } finally { document.body.removeChild(input); }
  }

  document.addEventListener("DOMContentLoaded", function () {
    copyLink();
    var trace = QP.readJSON("trace-data");
    if (trace) drawTrace(trace);
    updateLive();
    document.body.addEventListener("htmx:afterSettle", updateLive);
  });
})();
