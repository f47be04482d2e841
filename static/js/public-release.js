/* Charts of a published release, drawn with the locally served plotly.js.
 *
 * Every number comes from the page's embedded JSON (#release-data): the noisy
 * values and, for each confidence level and interval kind, the intervals the
 * server computed from the stored noise parameters. The controls only switch
 * between those precomputed public numbers; nothing is recomputed here.
 */
(function () {
  "use strict";

  var dataNode = document.getElementById("release-data");
  if (!dataNode) {
    return;
  }
  var release = JSON.parse(dataNode.textContent);
  var form = document.getElementById("interval-controls");

  function fmt(x) {
    if (x === null || x === undefined) {
      return "";
    }
    var a = Math.abs(x);
    if (a !== 0 && (a >= 1e7 || a < 1e-3)) {
      return x.toPrecision(4);
    }
    var digits = a >= 100 ? 1 : a >= 1 ? 2 : 4;
    return Number(x.toFixed(digits)).toLocaleString("en-US", { maximumFractionDigits: digits });
  }

  function state() {
    var s = { confidence: release.default_confidence, intervals: "per_cell", display: "raw" };
    if (!form) {
      return s;
    }
    var c = form.querySelector("[name=confidence]:checked") || form.querySelector("[name=confidence]");
    if (c && c.value) {
      s.confidence = c.value;
    }
    var m = form.querySelector("[name=intervals]:checked");
    if (m) {
      s.intervals = m.value;
    }
    var d = form.querySelector("[name=display]");
    if (d && d.type === "checkbox") {
      s.display = d.checked ? "rounded" : "raw";
    }
    return s;
  }

  // The value shown: the noisy value, or (counts only) rounded and clamped at zero.
  function shown(stat, value, st) {
    if (st.display === "rounded" && stat.clampable) {
      return Math.max(0, Math.round(value));
    }
    return value;
  }

  function interval(stat, st) {
    return stat.intervals[st.confidence][st.intervals];
  }

  function barTrace(stat, st) {
    var iv = interval(stat, st);
    var ys = stat.values.map(function (v) { return shown(stat, v, st); });
    var errorY;
    if (st.display === "raw" || !stat.clampable) {
      // symmetric bars of exactly the half-width around the noisy value
      errorY = { type: "data", symmetric: true, array: iv.halfwidths.slice(), visible: true };
    } else {
      // the interval still describes the unclamped noisy value: draw it where it is
      errorY = {
        type: "data",
        symmetric: false,
        array: iv.upper.map(function (u, i) { return u - ys[i]; }),
        arrayminus: iv.lower.map(function (l, i) { return ys[i] - l; }),
        visible: true,
      };
    }
    var text = stat.cells.map(function (cell, i) {
      return cell + ": " + fmt(ys[i]) + " (" + fmt(iv.lower[i]) + " to " + fmt(iv.upper[i]) + ")";
    });
    return {
      type: "bar",
      x: stat.cells,
      y: ys,
      error_y: errorY,
      marker: { color: "#1f5fbf" },
      hovertext: text,
      hoverinfo: "text",
      name: stat.label,
    };
  }

  function heatmapTrace(stat, st) {
    var iv = interval(stat, st);
    var rows = stat.shape[0];
    var cols = stat.shape[1];
    var z = [];
    var text = [];
    for (var r = 0; r < rows; r++) {
      var zr = [];
      var tr = [];
      for (var c = 0; c < cols; c++) {
        var i = r * cols + c;
        var y = shown(stat, stat.values[i], st);
        zr.push(y);
        tr.push(
          stat.row_labels[r] + " / " + stat.col_labels[c] + ": " + fmt(y) +
          "<br>interval " + fmt(iv.lower[i]) + " to " + fmt(iv.upper[i]) +
          " (\u00b1 " + fmt(iv.halfwidths[i]) + ")"
        );
      }
      z.push(zr);
      text.push(tr);
    }
    return {
      type: "heatmap",
      z: z,
      x: stat.col_labels,
      y: stat.row_labels,
      text: text,
      hoverinfo: "text",
      colorscale: "Blues",
      reversescale: true,
      customdata: stat.cells,
    };
  }

  function figureTrace(stat, st) {
    var iv = interval(stat, st);
    var v = stat.values[0];
    return {
      type: "scatter",
      mode: "markers",
      x: [v],
      y: [stat.label],
      marker: { size: 12, color: "#1f5fbf" },
      error_x: {
        type: "data",
        symmetric: false,
        array: [iv.upper[0] - v],
        arrayminus: [v - iv.lower[0]],
        visible: true,
        thickness: 2,
        width: 8,
      },
      hovertext: [fmt(v) + " (" + fmt(iv.lower[0]) + " to " + fmt(iv.upper[0]) + ")"],
      hoverinfo: "text",
    };
  }

  function draw(stat, st) {
    var node = document.getElementById("chart-" + stat.position);
    if (!node || !window.Plotly) {
      return;
    }
    var trace;
    var layout = {
      margin: { t: 20, r: 20, b: 60, l: 70 },
      height: 340,
      paper_bgcolor: "#fff",
      plot_bgcolor: "#fff",
    };
    if (stat.layout === "bars") {
      trace = barTrace(stat, st);
      layout.yaxis = { title: { text: stat.value_title }, zeroline: true };
    } else if (stat.layout === "heatmap") {
      trace = heatmapTrace(stat, st);
      layout.xaxis = { title: { text: stat.col_title } };
      layout.yaxis = { title: { text: stat.row_title }, automargin: true };
      layout.height = Math.max(300, 60 + 40 * stat.shape[0]);
    } else if (stat.layout === "figure") {
      trace = figureTrace(stat, st);
      layout.height = 180;
      layout.xaxis = { title: { text: stat.value_title }, zeroline: false };
      layout.yaxis = { automargin: true, showticklabels: false };
    } else {
      return;
    }
    window.Plotly.react(node, [trace], layout, { displaylogo: false, responsive: true });
  }

  function updateTable(stat, st) {
    var body = document.getElementById("table-body-" + stat.position);
    if (!body || stat.layout === "statement") {
      return;
    }
    var iv = interval(stat, st);
    var rowsHtml = body.querySelectorAll("tr");
    rowsHtml.forEach(function (tr, i) {
      var cells = tr.querySelectorAll("td");
      if (cells.length < 4) {
        return;
      }
      cells[0].textContent = fmt(shown(stat, stat.values[i], st));
      cells[1].textContent = fmt(iv.lower[i]);
      cells[2].textContent = fmt(iv.upper[i]);
      cells[3].textContent = iv.halfwidths[i] === null ? "" : "\u00b1 " + fmt(iv.halfwidths[i]);
    });
  }

  function updateText(stat, st) {
    var box = document.getElementById("stat-" + stat.position);
    if (!box) {
      return;
    }
    var perCell = stat.intervals[st.confidence].per_cell;
    var simultaneous = stat.intervals[st.confidence].simultaneous;
    box.querySelectorAll("[data-fill]").forEach(function (el) {
      var what = el.getAttribute("data-fill");
      if (what === "confidence") {
        el.textContent = release.confidence_labels[st.confidence];
      } else if (what === "halfwidth") {
        el.textContent = fmt(perCell.halfwidths[0]);
      } else if (what === "simultaneous-halfwidth") {
        el.textContent = fmt(simultaneous.halfwidths[0]);
      } else if (what === "lower") {
        el.textContent = fmt(perCell.lower[0]);
      } else if (what === "upper") {
        el.textContent = fmt(perCell.upper[0]);
      }
    });
  }

  function render() {
    var st = state();
    document.querySelectorAll("[data-fill=confidence-global]").forEach(function (el) {
      el.textContent = release.confidence_labels[st.confidence];
    });
    document.querySelectorAll("[data-show-when-rounded]").forEach(function (el) {
      el.hidden = st.display !== "rounded";
    });
    document.querySelectorAll("a[data-download]").forEach(function (a) {
      a.href = a.getAttribute("data-base") + "?confidence=" + st.confidence;
    });
    release.statistics.forEach(function (stat) {
      draw(stat, st);
      updateTable(stat, st);
      updateText(stat, st);
    });
    document.body.setAttribute("data-charts-ready", "1");
  }

  if (form) {
    form.addEventListener("change", render);
    form.addEventListener("submit", function (event) {
      event.preventDefault();
      render();
    });
    var apply = form.querySelector("button[type=submit]");
    if (apply) {
      apply.hidden = true;
    }
  }
  render();
})();
