/* Site history: throughput and RTT over time (quick and full runs apart) and the
   time-of-day profile, all from json_script blocks rendered by the view. */
(function () {
  "use strict";
  var QP = window.QP;

  function timeOptions(yTitle, yFormat) {
    return {
      animation: false, parsing: false, normalized: true, maintainAspectRatio: false,
      scales: {
        x: { type: "time", time: { tooltipFormat: "yyyy-MM-dd HH:mm" }, title: { display: true, text: "date" } },
        y: { beginAtZero: true, title: { display: true, text: yTitle }, ticks: { callback: yFormat } }
      },
      plugins: { tooltip: { callbacks: { label: function (c) { return c.dataset.label + ": " + yFormat(c.parsed.y); } } } },
      onClick: function (evt, elements, chart) {
        // Each point is a stored measurement: clicking opens its permalink.
        if (!elements.length) return;
        var p = chart.data.datasets[elements[0].datasetIndex].data[elements[0].index];
        if (p && p.slug) window.location.href = "/m/" + encodeURIComponent(p.slug) + "/";
      }
    };
  }

  function scatter(label, data, color, style) {
    return { label: label, data: data, borderColor: color, backgroundColor: color, showLine: false,
             pointRadius: 2.5, pointStyle: style || "circle" };
  }

  document.addEventListener("DOMContentLoaded", function () {
    var data = QP.readJSON("history-data");
    var profile = QP.readJSON("profile-data");
    if (data) {
      new Chart(document.getElementById("chart-throughput"), {
        type: "scatter",
        data: { datasets: [scatter("quick", data.quick, QP.palette[0]),
                           scatter("full / validate", data.full, QP.palette[1], "triangle")] },
        options: timeOptions("bit/s", QP.bps)
      });
      new Chart(document.getElementById("chart-rtt"), {
        type: "scatter",
        data: { datasets: [scatter("smoothed RTT", data.rtt_ms, QP.palette[2])] },
        options: timeOptions("ms", function (v) { return Number(v).toFixed(2) + " ms"; })
      });
    }
    if (profile) {
      var labels = [];
      for (var h = 0; h < 24; h++) labels.push((h < 10 ? "0" : "") + h + ":00");
      new Chart(document.getElementById("chart-profile"), {
        type: "bar",
        data: { labels: labels, datasets: [{ label: profile.stat + " throughput", data: profile.bps,
                                              backgroundColor: QP.palette[0] }] },
        options: {
          animation: false, maintainAspectRatio: false,
          scales: { y: { beginAtZero: true, ticks: { callback: QP.bps } } },
          plugins: { tooltip: { callbacks: { label: function (c) {
            return profile.stat + " " + QP.bps(c.parsed.y) + " over " + profile.n[c.dataIndex] + " tests";
          } } } }
        }
      });
    }
  });
})();
