/* Charts of a published release, drawn with the locally served plotly.js.
 *
 * Every number comes from the page's embedded JSON (#release-data): the noisy
 * values and, for the page's confidence level (release.levels) and each interval
 * kind, the intervals the server computed from the stored noise parameters, and the same numbers as text
 * (stat.text), formatted once on the server by dpportal/formatting.py. The
 * controls only switch between those precomputed public numbers and strings;
 * nothing is recomputed or formatted here.
 *
 * Plotly reads its strings as pseudo-HTML (<a href>, <b>, <br>...): every string
 * from the data (labels, titles) goes through esc() before Plotly sees it, so
 * markup in a category renders as text. Tables are filled with textContent.
 */
(function () {
  "use strict";

  var dataNode = document.getElementById("release-data");
  if (!dataNode) {
    return;
  }
  var release = JSON.parse(dataNode.textContent);
  var form = document.getElementById("interval-controls");

  // Plotly's pseudo-HTML decodes these entities back for display, and only these
  // three characters can start markup or an entity.
  function esc(value) {
    return String(value).replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;");
  }

  // Words around the numbers in hover text and axis titles, translated on the server
  // (json_script "chart-text"); {name} is replaced by the given, already escaped value.
  var PHRASES = (function () {
    var node = document.getElementById("chart-text");
    var fallback = {
      interval: "interval {lower} to {upper}",
      rank_error: "rank error \u00b1 {ranks} values",
      quantile_axis: "percent of the values below",
      between: "{low} and {high}",
      too_few: "too few records to estimate",
    };
    return node ? JSON.parse(node.textContent) : fallback;
  })();

  function phrase(key, values) {
    return PHRASES[key].replace(/\{(\w+)\}/g, function (whole, name) {
      return name in (values || {}) ? String(values[name]) : whole;
    });
  }

  function escAll(values) {
    return values.map(esc);
  }

  // What dpportal's own cells ("(Other)", "(Missing)": stat.cell_buckets, written apart
  // from the declared categories by the server) hold, under their hover text. (No <i> on
  // the axis: Plotly draws it as an inline style, which the page's CSP refuses.)
  function bucketNote(stat, i) {
    var mark = (stat.cell_buckets || [])[i];
    var notes = stat.bucket_notes || {};
    return mark && notes[mark] ? "<br>" + esc(notes[mark]) : "";
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
  // The value drawn for cell i: in the rounded display a cross-tabulation's whole
  // number that keeps its tables adding up (when it has one), else the clamped count.
  function shown(stat, value, st, i) {
    if (st.display === "rounded" && stat.clampable) {
      if (stat.display_values && i !== undefined) {
        return stat.display_values[i];
      }
      return Math.max(0, Math.round(value));
    }
    return value;
  }

  function interval(stat, st) {
    return stat.intervals[st.confidence][st.intervals];
  }

  // The strings people read at the chosen options (formatted by the server).
  function texts(stat, st) {
    var level = stat.text[st.confidence];
    var chosen = level[st.intervals];
    var rounded = st.display === "rounded" && stat.clampable;
    // rounded counts come with their own interval, clamped the same way (kinds.base)
    return {
      value: rounded ? stat.text.rounded : level.value,
      lower: rounded ? chosen.rounded_lower : chosen.lower,
      upper: rounded ? chosen.rounded_upper : chosen.upper,
      halfwidth: chosen.halfwidth,
      perCell: level.per_cell,
      simultaneous: level.simultaneous,
    };
  }

  // A cell its kind flagged uninformative: no bar or point, the words instead.
  function hidden(stat, i) {
    return Boolean(stat.uninformative_cells && stat.uninformative_cells[i]);
  }

  function hoverLine(name, t, i) {
    var line = esc(name) + ": " + t.value[i] + "<br>" +
      phrase("interval", { lower: esc(t.lower[i]), upper: esc(t.upper[i]) });
    return t.halfwidth[i] ? line + " (\u00b1 " + t.halfwidth[i] + ")" : line;
  }

  function categoryAxis(labels, title) {
    // 'category' whatever the labels look like: "0%", "1e3" or "007" stay labels
    return {
      type: "category",
      categoryorder: "array",
      categoryarray: labels,
      title: { text: esc(title || "") },
      automargin: true,
    };
  }

  function barTrace(stat, st) {
    var iv = interval(stat, st);
    var t = texts(stat, st);
    var ys = stat.values.map(function (v, i) { return shown(stat, v, st, i); });
    var errorY;
    if (st.display === "raw" || !stat.clampable) {
      // symmetric bars of exactly the half-width around the noisy value
      errorY = { type: "data", symmetric: true, array: iv.halfwidths.slice(), visible: true };
    } else {
      // the interval of the value shown, clamped at zero the same way (kinds.base)
      errorY = {
        type: "data",
        symmetric: false,
        array: iv.rounded_upper.map(function (u, i) { return u - ys[i]; }),
        arrayminus: iv.rounded_lower.map(function (l, i) { return ys[i] - l; }),
        visible: true,
      };
    }
    return {
      type: "bar",
      x: escAll(stat.cells),
      y: ys,
      error_y: errorY,
      marker: { color: "#1f5fbf" },
      hovertext: stat.cells.map(function (cell, i) {
        return hoverLine(cell, t, i) + bucketNote(stat, i);
      }),
      hoverinfo: "text",
      name: esc(stat.label),
    };
  }

  function heatmapTrace(stat, st) {
    var t = texts(stat, st);
    var rows = stat.shape[0];
    var cols = stat.shape[1];
    var z = [];
    var text = [];
    for (var r = 0; r < rows; r++) {
      var zr = [];
      var tr = [];
      for (var c = 0; c < cols; c++) {
        var i = r * cols + c;
        zr.push(shown(stat, stat.values[i], st, i));
        tr.push(hoverLine(stat.row_labels[r] + " / " + stat.col_labels[c], t, i));
      }
      z.push(zr);
      text.push(tr);
    }
    return {
      type: "heatmap",
      z: z,
      x: escAll(stat.col_labels),
      y: escAll(stat.row_labels),
      hovertext: text,
      hoverinfo: "text",
      colorscale: "Blues",
      reversescale: true,
      xgap: 1,
      ygap: 1,
    };
  }

  function figureTrace(stat, st) {
    var iv = interval(stat, st);
    var t = texts(stat, st);
    var v = stat.values[0];
    if (hidden(stat, 0)) {
      // too few records: no point and no line, the words where they would be
      return {
        type: "scatter", mode: "text", x: [0], y: [esc(stat.label)],
        text: [esc(phrase("too_few"))], textposition: "middle center",
        hovertext: [esc(stat.label) + ": " + esc(t.value[0])], hoverinfo: "text",
      };
    }
    return {
      type: "scatter",
      mode: "markers",
      x: [v],
      y: [esc(stat.label)],
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
      hovertext: [hoverLine(stat.label, t, 0)],
      hoverinfo: "text",
    };
  }

  // The height a chart is drawn at; its box is reserved at this height before it is drawn.
  function chartHeight(stat) {
    // small multiples: two charts side by side on a wide window
    if (stat.layout === "heatmap") {
      return Math.max(260, 80 + 36 * stat.shape[0]);
    }
    return stat.layout === "figure" ? 150 : 280;
  }

  function draw(stat, st) {
    var node = document.getElementById("chart-" + stat.position);
    if (!node || !window.Plotly) {
      return;
    }
    var trace;
    var layout = {
      margin: { t: 20, r: 20, b: 60, l: 70 },
      height: chartHeight(stat),
      paper_bgcolor: "#fff",
      plot_bgcolor: "#fff",
      // axis numbers in the reader's separators: decimal mark, then thousands separator
      separators: PHRASES.separators || ".,",
    };
    if (stat.layout === "crosstabs") {
      drawTables(stat, st, layout);
      node.setAttribute("data-drawn", "1");
      return;
    }
    if (window.DPStatsCharts && window.DPStatsCharts.handles(stat)) {
      window.DPStatsCharts.draw(node, stat, st); // grouped statistics, quantile plots
      node.setAttribute("data-drawn", "1");
      return;
    }
    if (stat.layout === "bars") {
      trace = barTrace(stat, st);
      layout.xaxis = categoryAxis(escAll(stat.cells), "");
      layout.yaxis = { title: { text: esc(stat.value_title) }, zeroline: true };
    } else if (stat.layout === "heatmap") {
      trace = heatmapTrace(stat, st);
      layout.xaxis = categoryAxis(escAll(stat.col_labels), stat.col_title);
      layout.yaxis = categoryAxis(escAll(stat.row_labels), stat.row_title);
      layout.yaxis.autorange = "reversed"; // first row on top, as in the table
    } else if (stat.layout === "figure") {
      trace = figureTrace(stat, st);
      layout.xaxis = { title: { text: esc(stat.value_title) }, zeroline: false };
      layout.yaxis = { type: "category", automargin: true, showticklabels: false };
      if (hidden(stat, 0)) {
        // no value: no axis to read it on, the words alone
        layout.xaxis.visible = false;
        layout.yaxis.visible = false;
      }
    } else {
      return;
    }
    window.Plotly.react(node, [trace], layout, { displaylogo: false, responsive: true });
    node.setAttribute("data-drawn", "1");
  }

  // One table of a cross-tabulation (or one grid of a three-column table: `part`) as a
  // statistic of its own: every per-cell list of `stat` (values, texts, intervals) cut
  // to its cells; a one-column table as bars, a grid as a heatmap with its two columns
  // as axes.
  function tableStat(stat, table, part) {
    var n = stat.values.length;
    var last = table.shape.length;
    var one = last === 1;
    var size = one ? table.shape[0] : table.shape[last - 2] * table.shape[last - 1];
    var start = table.start + (part || 0) * size;
    function cut(value) {
      if (Array.isArray(value)) {
        return value.length === n ? value.slice(start, start + size) : value;
      }
      if (value && typeof value === "object") {
        var out = {};
        Object.keys(value).forEach(function (key) {
          out[key] = cut(value[key]);
        });
        return out;
      }
      return value;
    }
    var cells = {
      values: cut(stat.values),
      text: cut(stat.text),
      intervals: cut(stat.intervals),
      uninformative_cells: cut(stat.uninformative_cells),
      display_values: cut(stat.display_values),
    };
    if (one) {
      return Object.assign({}, stat, cells, {
        layout: "bars",
        cells: table.labels[0],
        shape: null,
        cell_buckets: [],
        row_title: table.columns[0],
      });
    }
    return Object.assign({}, stat, cells, {
      layout: "heatmap",
      shape: table.shape.slice(last - 2),
      row_labels: table.labels[last - 2],
      col_labels: table.labels[last - 1],
      row_title: table.columns[last - 2],
      col_title: table.columns[last - 1],
    });
  }

  function drawTable(node, sub, st, base) {
    var layout = Object.assign({}, base, { height: chartHeight(sub) });
    var trace;
    if (sub.layout === "bars") {
      trace = barTrace(sub, st);
      layout.xaxis = categoryAxis(escAll(sub.cells), sub.row_title);
      layout.yaxis = { title: { text: esc(sub.value_title) }, zeroline: true };
    } else {
      trace = heatmapTrace(sub, st);
      layout.xaxis = categoryAxis(escAll(sub.col_labels), sub.col_title);
      layout.yaxis = categoryAxis(escAll(sub.row_labels), sub.row_title);
      layout.yaxis.autorange = "reversed"; // first row on top, as in the table
    }
    window.Plotly.react(node, [trace], layout, { displaylogo: false, responsive: true });
    node.setAttribute("data-drawn", "1");
  }

  // A cross-tabulation: the charts the page marked: bars above a one-column table, a
  // heatmap above a two-column one and above each grid of a three-column one.
  function drawTables(stat, st, base) {
    var id = "chart-" + stat.position + "-";
    (stat.tables || []).forEach(function (table, k) {
      var node = document.getElementById(id + k);
      if (node && table.columns.length <= 2) {
        drawTable(node, tableStat(stat, table), st, base);
      }
      if (table.columns.length === 3) {
        var grids = table.shape[0];
        for (var b = 0; b < grids; b++) {
          var part = document.getElementById(id + k + "-" + b);
          if (part) {
            drawTable(part, tableStat(stat, table, b), st, base);
          }
        }
      }
    });
  }

  function updateTable(stat, st) {
    if (stat.layout === "statement" || stat.layout === "keys") {
      return;
    }
    var t = texts(stat, st);
    var body = document.getElementById("table-body-" + stat.position);
    if (body) {
      body.querySelectorAll("tr").forEach(function (tr, i) {
        var cells = tr.querySelectorAll("td");
        if (cells.length < 4) {
          return;
        }
        cells[0].textContent = t.value[i];
        cells[1].textContent = t.lower[i];
        cells[2].textContent = t.upper[i];
        cells[3].textContent = t.halfwidth[i] ? "\u00b1 " + t.halfwidth[i] : "";
      });
    }
    var grid = document.getElementById("crosstab-" + stat.position);
    if (grid) {
      grid.querySelectorAll("[data-value-of]").forEach(function (td) {
        td.textContent = t.value[Number(td.getAttribute("data-value-of"))];
      });
      // a cross-tabulation: each table's half-width, read at its first cell
      grid.querySelectorAll("[data-halfwidth-of]").forEach(function (span) {
        span.textContent = t.halfwidth[Number(span.getAttribute("data-halfwidth-of"))];
      });
    }
  }

  function updateText(stat, st) {
    var box = document.getElementById("stat-" + stat.position);
    if (!box || stat.layout === "statement" || stat.layout === "keys") {
      return;
    }
    var t = texts(stat, st);
    // the statistic's card and its line in the summary at the top of the page
    var fills = Array.prototype.slice.call(box.querySelectorAll("[data-fill]"));
    var line = document.getElementById("summary-" + stat.position);
    if (line) {
      fills = fills.concat(Array.prototype.slice.call(line.querySelectorAll("[data-fill]")));
    }
    fills.forEach(function (el) {
      var what = el.getAttribute("data-fill");
      if (what === "confidence") {
        el.textContent = release.confidence_labels[st.confidence];
      } else if (what === "halfwidth") {
        el.textContent = t.perCell.halfwidth[0];
      } else if (what === "simultaneous-halfwidth") {
        el.textContent = t.simultaneous.halfwidth[0];
      } else if (what === "lower") {
        el.textContent = t.perCell.lower[0];
      } else if (what === "upper") {
        el.textContent = t.perCell.upper[0];
      }
    });
  }

  // Charts are drawn lazily: those in (or near) the window first, the others when they
  // scroll into view, so a first visit evaluates plotly.js and draws one or two charts
  // instead of all of them before the page settles. The tables and texts above hold every
  // number without Plotly. A drawn chart follows the controls at once; a chart not drawn
  // yet is drawn with whatever the controls say when it comes into view.
  var charts = release.statistics.filter(function (stat) {
    return document.getElementById("chart-" + stat.position);
  });
  var drawn = {};

  function drawNow(stat) {
    drawn[stat.position] = true;
    draw(stat, state());
  }

  // A chart this close to the window (in px) is drawn before it is in view.
  var MARGIN = 200;

  function nearWindow(node) {
    var box = node.getBoundingClientRect();
    return box.bottom > -MARGIN && box.top < window.innerHeight + MARGIN;
  }

  function watchCharts() {
    var nodes = charts.map(function (stat) {
      var node = document.getElementById("chart-" + stat.position);
      node.style.minHeight = chartHeight(stat) + "px"; // its box before it is drawn
      return node;
    });
    var lazy = "IntersectionObserver" in window;
    // measure every box first (one layout), then draw the charts in the first window now
    var near = nodes.map(function (node) {
      return !lazy || nearWindow(node);
    });
    var later = [];
    charts.forEach(function (stat, i) {
      if (near[i]) {
        drawNow(stat);
      } else {
        later.push(i);
      }
    });
    // every chart in the first window is drawn (benches and tests wait for this)
    document.body.setAttribute("data-charts-ready", "1");
    if (!later.length) {
      return;
    }
    var observer = new IntersectionObserver(
      function (entries) {
        entries.forEach(function (entry) {
          if (entry.isIntersecting) {
            observer.unobserve(entry.target);
            drawNow(charts[nodes.indexOf(entry.target)]);
          }
        });
      },
      { rootMargin: MARGIN + "px 0px" }
    );
    later.forEach(function (i) {
      observer.observe(nodes[i]);
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
    document.querySelectorAll("[data-show-when-raw]").forEach(function (el) {
      el.hidden = st.display === "rounded";
    });
    document.querySelectorAll("a[data-download]").forEach(function (a) {
      a.href = a.getAttribute("data-base") + "?confidence=" + st.confidence;
    });
    release.statistics.forEach(function (stat) {
      if (drawn[stat.position]) {
        draw(stat, st);
      }
      updateTable(stat, st);
      updateText(stat, st);
      if (window.DPStatsCharts) {
        window.DPStatsCharts.update(stat, st);
      }
    });
  }

  // The page carries one confidence level's numbers (the server computes each level's
  // intervals on demand): choosing another one asks the server for that page.
  function onChange() {
    var st = state();
    if ((release.levels || []).indexOf(st.confidence) === -1) {
      form.submit();
      return;
    }
    render();
  }

  if (form) {
    form.addEventListener("change", onChange);
    form.addEventListener("submit", function (event) {
      event.preventDefault();
      render();
    });
    var apply = form.querySelector("button[type=submit]");
    if (apply) {
      apply.hidden = true;
    }
  }
  // Printing opens every explanation and table (the print stylesheet lays them out);
  // the ones the reader had closed close again afterwards.
  var closedForPrint = [];
  window.addEventListener("beforeprint", function () {
    closedForPrint = Array.prototype.filter.call(document.querySelectorAll("main details"), function (d) {
      return !d.open;
    });
    closedForPrint.forEach(function (d) { d.open = true; });
    charts.forEach(function (stat) {
      if (!drawn[stat.position]) {
        drawNow(stat);
      }
    });
  });
  window.addEventListener("afterprint", function () {
    closedForPrint.forEach(function (d) { d.open = false; });
    closedForPrint = [];
  });
  var printButton = document.querySelector("[data-print]");
  if (printButton) {
    printButton.hidden = false;
    printButton.addEventListener("click", function () { window.print(); });
  }

  render();
  watchCharts();
})();
