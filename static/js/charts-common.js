/* Helpers shared by the page scripts: number formats and a slow-start marker for Chart.js.
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

  window.QP = { bps: bps, bytes: bytes, markerPlugin: markerPlugin, palette: palette, readJSON: readJSON };
})();
