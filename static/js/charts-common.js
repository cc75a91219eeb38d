/* Helpers shared by the page scripts: number formats, binary byte ticks, UTC time axes, a
   slow-start marker and a shaded band for Chart.js.
   Loaded before the page's own script; everything hangs off window.QP. */
(function () {
  "use strict";

  function scaled(v, scale) {
    var x = v / scale;
    return Math.abs(x) < 10 ? x.toFixed(2) : x.toFixed(1);
  }

  function bps(v) {
    if (v === null || v === undefined) return "–";
    var units = [[1e12, "Tbit/s"], [1e9, "Gbit/s"], [1e6, "Mbit/s"], [1e3, "kbit/s"]];
    for (var i = 0; i < units.length; i++) {
      if (Math.abs(v) >= units[i][0]) return scaled(v, units[i][0]) + " " + units[i][1];
    }
    return Math.round(v) + " bit/s";
  }

  function bytes(v) {
    if (v === null || v === undefined) return "–";
    var units = [[1073741824, "GiB"], [1048576, "MiB"], [1024, "KiB"]];
    for (var i = 0; i < units.length; i++) {
      if (Math.abs(v) >= units[i][0]) return scaled(v, units[i][0]) + " " + units[i][1];
    }
    return Math.round(v) + " B";
  }

  // A tick label for a round byte count: 256 KiB, 1.5 MiB, 2 MiB (no trailing zeros).
  function bytesTick(v) {
    var units = [[1073741824, "GiB"], [1048576, "MiB"], [1024, "KiB"]];
    for (var i = 0; i < units.length; i++) {
      if (Math.abs(v) >= units[i][0]) return String(Number((v / units[i][0]).toFixed(3))) + " " + units[i][1];
    }
    return Math.round(v) + " B";
  }

  // Ticks for a byte axis at multiples of a power of two (Chart.js's decimal steps gave
  // 488.3 KiB, 976.6 KiB, 1.43 MiB): the step is the power of two that gives 4 to 8 ticks.
  // Use as a scale's afterBuildTicks.
  function binaryTicks(scale) {
    var max = scale.max, min = Math.max(0, scale.min);
    if (!(max > min)) return;
    var step = Math.pow(2, Math.ceil(Math.log2((max - min) / 8)));
    var ticks = [];
    for (var v = Math.ceil(min / step) * step; v <= max + step * 1e-9; v += step) ticks.push({ value: v });
    scale.ticks = ticks;
  }

  // Chart.js's time axis (chartjs-adapter-date-fns) formats in the browser's zone. The portal
  // speaks UTC everywhere (tables, admin, CSV), so time axes are fed instants shifted by the
  // zone's offset at that instant: the browser's local fields then read the UTC time, in any
  // zone. (A UTC time that does not exist locally, inside a DST jump, reads an hour off; the
  // tooltip, from utcText, is always exact.)
  function utcShift(ms) {
    return ms + new Date(ms).getTimezoneOffset() * 60000;
  }

  function pad(n) { return (n < 10 ? "0" : "") + n; }

  // "2026-11-26 18:30 UTC" for an instant in ms since the epoch.
  function utcText(ms) {
    var d = new Date(ms);
    return d.getUTCFullYear() + "-" + pad(d.getUTCMonth() + 1) + "-" + pad(d.getUTCDate()) + " " +
           pad(d.getUTCHours()) + ":" + pad(d.getUTCMinutes()) + " UTC";
  }

  // A time axis in UTC, 24-hour, the zone in its title.
  function utcTimeAxis(title) {
    return {
      type: "time",
      time: { displayFormats: { millisecond: "HH:mm:ss.SSS", second: "HH:mm:ss", minute: "HH:mm", hour: "HH:mm",
                                day: "MMM d", week: "MMM d", month: "MMM yyyy", quarter: "MMM yyyy", year: "yyyy" } },
      // Major ticks (midnight UTC) take the day's format, so hours are never without their date.
      ticks: { major: { enabled: true }, font: function (ctx) { return ctx.tick && ctx.tick.major ? { weight: "bold" } : {}; } },
      title: { display: true, text: title + " (UTC)" }
    };
  }

  // Draws a dashed vertical line at options.plugins.marker.x (data units) with a label.
  var markerPlugin = {
    id: "marker",
    afterDatasetsDraw: function (chart, args, opts) {
      if (opts === undefined || opts.x === null || opts.x === undefined) return;
      var xScale = chart.scales.x;
      var px = xScale.getPixelForValue(opts.x);
      if (px < chart.chartArea.left || px > chart.chartArea.right) return;
      var ctx = chart.ctx;
      ctx.save();
      ctx.strokeStyle = opts.color || "#b42318";
      ctx.setLineDash([6, 4]);
      ctx.lineWidth = 1.5;
      ctx.beginPath();
      ctx.moveTo(px, chart.chartArea.top);
      ctx.lineTo(px, chart.chartArea.bottom);
      ctx.stroke();
      ctx.setLineDash([]);
      ctx.fillStyle = opts.color || "#b42318";
      ctx.font = "12px system-ui, sans-serif";
      ctx.fillText(opts.label || "", px + 4, chart.chartArea.top + 12);
      ctx.restore();
    }
  };

  var palette = ["#1f5fbf", "#d9480f", "#2b8a3e", "#862e9c", "#c2255c", "#0b7285", "#5f3dc4", "#e67700",
                 "#495057", "#364fc7", "#a61e4d", "#087f5b", "#5c940d", "#9c36b5", "#1864ab", "#d6336c"];

  function readJSON(id) {
    var el = document.getElementById(id);
    return el ? JSON.parse(el.textContent) : null;
  }

  // Shades options.plugins.band.from..to (data units on x) behind the lines, with a label.
  var bandPlugin = {
    id: "band",
    beforeDatasetsDraw: function (chart, args, opts) {
      if (!opts || opts.from === null || opts.from === undefined) return;
      var x = chart.scales.x, area = chart.chartArea, ctx = chart.ctx;
      var x0 = Math.max(area.left, x.getPixelForValue(opts.from));
      var x1 = Math.min(area.right, x.getPixelForValue(opts.to));
      if (x1 <= x0) return;
      ctx.save();
      ctx.fillStyle = opts.color || "rgba(31, 95, 191, 0.10)";
      ctx.fillRect(x0, area.top, x1 - x0, area.bottom - area.top);
      ctx.fillStyle = "#1f5fbf";
      ctx.font = "12px system-ui, sans-serif";
      ctx.fillText(opts.label || "", x0 + 4, area.bottom - 6);
      ctx.restore();
    }
  };

  window.QP = { bps: bps, bytes: bytes, bytesTick: bytesTick, binaryTicks: binaryTicks, utcShift: utcShift,
                utcText: utcText, utcTimeAxis: utcTimeAxis, markerPlugin: markerPlugin, bandPlugin: bandPlugin,
                palette: palette, readJSON: readJSON };
})();
