/* Charts of grouped statistics and quantiles on a published release (issue 14).
 *
 * Loaded before public-release.js, which calls window.DPStatsCharts.draw() for the
 * layouts it handles ("grouped", "quantiles") and .update() after every change of
 * the reader's options. Every number and string comes from the page's embedded
 * JSON, computed and formatted on the server; nothing is recomputed here.
 *
 * - grouped: bars with error bars per group; with two grouping columns, one bar
 *   per value of the second column inside each group of the first (grouped bars,
 *   not a heatmap);
 * - quantiles: a quantile plot (percent on x, value on y); the rank-error band is
 *   drawn in percentile points only when the release holds a noisy count of the
 *   same rows, else it is given in ranks (table and hover text).
 * Strings from the data go through esc() before Plotly reads them as pseudo-HTML;
 * tables and sentences are filled with textContent.
 */
(function () {
  "use strict";

  var COLORS = ["#1f5fbf", "#d9822b", "#2e8540", "#8e44ad", "#b03a2e", "#5d6d7e"];

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
      about: "in the data's units about {low} to {high} (an estimate)",
      about_range: "about {low} to {high}",
      ci: "true value between {low} and {high}",
      ci_range: "{low} to {high}",
    };
    return node ? JSON.parse(node.textContent) : fallback;
  })();

  function phrase(key, values) {
    return PHRASES[key].replace(/\{(\w+)\}/g, function (whole, name) {
      return name in (values || {}) ? String(values[name]) : whole;
    });
  }

  function chosen(stat, st) {
    return {
      iv: stat.intervals[st.confidence][st.intervals],
      text: stat.text[st.confidence],
      ends: stat.text[st.confidence][st.intervals],
    };
  }

  // A cell its kind flagged uninformative: no bar, no error bar, the words instead.
  function hidden(stat, i) {
    return Boolean(stat.uninformative_cells && stat.uninformative_cells[i]);
  }

  function barValue(stat, i) {
    return hidden(stat, i) ? null : stat.values[i];
  }

  // Error bars of cells `idx`: symmetric half-widths, or the asymmetric interval ends.
  function errorBars(stat, st, idx) {
    var c = chosen(stat, st);
    var symmetric = idx.every(function (i) { return hidden(stat, i) || c.iv.halfwidths[i] != null; });
    if (symmetric) {
      return { type: "data", symmetric: true, visible: true,
               array: idx.map(function (i) { return hidden(stat, i) ? null : c.iv.halfwidths[i]; }) };
    }
    return {
      type: "data", symmetric: false, visible: true,
      array: idx.map(function (i) { return hidden(stat, i) ? null : c.iv.upper[i] - stat.values[i]; }),
      arrayminus: idx.map(function (i) { return hidden(stat, i) ? null : stat.values[i] - c.iv.lower[i]; }),
    };
  }

  function hover(stat, st, i, name) {
    var c = chosen(stat, st);
    if (hidden(stat, i)) {
      return esc(name) + ": " + esc(c.text.value[i]);
    }
    return esc(name) + ": " + c.text.value[i] + "<br>" +
      phrase("interval", { lower: esc(c.ends.lower[i]), upper: esc(c.ends.upper[i]) });
  }

  // Where a missing bar would stand, the words "too few records to estimate", upright,
  // from the zero line: at category i, or in a group of `cols` bars, at bar c of group r
  // (Plotly's grouped bars share 1 - bargap of a category's width).
  var BARGAP = 0.2;

  function missingBarNotes(stat) {
    var out = [];
    var cols = stat.shape ? stat.shape[1] : 1;
    stat.values.forEach(function (_, i) {
      if (!hidden(stat, i)) {
        return;
      }
      var r = Math.floor(i / cols);
      var c = i % cols;
      var width = (1 - BARGAP) / cols;
      out.push({
        x: stat.shape ? r - (1 - BARGAP) / 2 + (c + 0.5) * width : i,
        y: 0, xref: "x", yref: "y", showarrow: false, textangle: -90,
        xanchor: "center", yanchor: "bottom", font: { size: 11, color: "#555" },
        text: esc(phrase("too_few")),
      });
    });
    return out;
  }

  function groupedTraces(stat, st) {
    var idx;
    if (!stat.shape) {
      idx = stat.values.map(function (_, i) { return i; });
      return [{
        type: "bar", x: stat.cells.map(esc), y: idx.map(function (i) { return barValue(stat, i); }),
        error_y: errorBars(stat, st, idx), marker: { color: COLORS[0] },
        hovertext: idx.map(function (i) { return hover(stat, st, i, stat.cells[i]); }),
        hoverinfo: "text", name: esc(stat.label),
      }];
    }
    var rows = stat.shape[0];
    var cols = stat.shape[1];
    var traces = [];
    for (var c = 0; c < cols; c++) {
      idx = [];
      for (var r = 0; r < rows; r++) {
        idx.push(r * cols + c);
      }
      traces.push({
        type: "bar",
        name: esc(stat.col_labels[c]),
        x: stat.row_labels.map(esc),
        y: idx.map(function (i) { return barValue(stat, i); }),
        error_y: errorBars(stat, st, idx),
        marker: { color: COLORS[c % COLORS.length] },
        hovertext: idx.map(function (i) { return hover(stat, st, i, stat.cells[i]); }),
        hoverinfo: "text",
      });
    }
    return traces;
  }

  function quantileTrace(stat, st) {
    var q = stat.quantile_chart;
    var band = q.bands[st.confidence][st.intervals];
    var text = stat.text[st.confidence];
    var trace = {
      type: "scatter",
      mode: "lines+markers",
      x: q.percents.slice(),
      y: stat.values.slice(),
      marker: { size: 10, color: COLORS[0] },
      line: { color: COLORS[0] },
      hovertext: stat.cells.map(function (name, i) {
        var line = esc(name) + ": " + text.value[i] + "<br>" + phrase("rank_error", { ranks: esc(band.ranks_text[i]) });
        if (band.ci_low_text && band.ci_low_text[i]) {
          line += "<br>" + esc(phrase("ci", { low: band.ci_low_text[i], high: band.ci_high_text[i] }));
        } else if (band.about_low_text && band.about_low_text[i]) {
          line += "<br>" + esc(phrase("about", { low: band.about_low_text[i], high: band.about_high_text[i] }));
        }
        return line;
      }),
      hoverinfo: "text",
      name: esc(stat.label),
    };
    // the released confidence interval, in the data's units, as the error bar
    if (band.ci_low && band.ci_low.every(function (x) { return x != null; })) {
      var values = stat.values;
      trace.error_y = {
        type: "data", symmetric: false, visible: true, thickness: 2, width: 6,
        array: values.map(function (v, i) { return Math.max(0, band.ci_high[i] - v); }),
        arrayminus: values.map(function (v, i) { return Math.max(0, v - band.ci_low[i]); }),
      };
    }
    if (band.low.every(function (x) { return x != null; })) {
      trace.error_x = {
        type: "data", symmetric: false, visible: true, thickness: 2, width: 6,
        array: q.percents.map(function (p, i) { return band.high[i] - p; }),
        arrayminus: q.percents.map(function (p, i) { return p - band.low[i]; }),
      };
    }
    return trace;
  }

  function draw(node, stat, st) {
    var layout = {
      margin: { t: 20, r: 20, b: 60, l: 70 },
      height: 280, // a small multiple: two charts side by side
      paper_bgcolor: "#fff",
      plot_bgcolor: "#fff",
      // axis numbers in the reader's separators: decimal mark, then thousands separator
      separators: PHRASES.separators || ".,",
    };
    var traces;
    if (stat.layout === "grouped_bars" || stat.layout === "bars") {
      traces = groupedTraces(stat, st);
      layout.barmode = "group";
      layout.bargap = BARGAP;
      layout.annotations = missingBarNotes(stat);
      layout.xaxis = {
        type: "category", categoryorder: "array", automargin: true,
        categoryarray: (stat.shape ? stat.row_labels : stat.cells).map(esc),
        title: { text: esc(stat.row_title || "") },
      };
      layout.yaxis = { title: { text: esc(stat.value_title) }, zeroline: true };
      layout.showlegend = Boolean(stat.shape);
      if (stat.shape) {
        layout.legend = { title: { text: esc(stat.col_title || "") } };
      }
    } else if (stat.layout === "quantiles") {
      traces = [quantileTrace(stat, st)];
      layout.xaxis = { title: { text: esc(phrase("quantile_axis")) }, range: [0, 100], ticksuffix: " %" };
      layout.yaxis = { title: { text: esc(stat.value_title) } };
    } else {
      return false;
    }
    window.Plotly.react(node, traces, layout, { displaylogo: false, responsive: true });
    return true;
  }

  // Sentences and the quantiles' table at the chosen options (strings from the server).
  function update(stat, st) {
    var box = document.getElementById("stat-" + stat.position);
    if (!box || !stat.text || !stat.text[st.confidence]) {
      return;
    }
    var text = stat.text[st.confidence];
    var band = stat.quantile_chart ? stat.quantile_chart.bands[st.confidence].per_cell : null;
    box.querySelectorAll("[data-fill][data-index]").forEach(function (el) {
      var i = Number(el.getAttribute("data-index"));
      var what = el.getAttribute("data-fill");
      if (what === "cell-value") el.textContent = text.value[i];
      else if (what === "cell-lower") el.textContent = text.per_cell.lower[i];
      else if (what === "cell-upper") el.textContent = text.per_cell.upper[i];
      else if (band && what === "rank-error") el.textContent = band.ranks_text[i];
      else if (band && what === "band-low") el.textContent = band.low_text[i];
      else if (band && what === "band-high") el.textContent = band.high_text[i];
      else if (band && what === "about-low") el.textContent = band.about_low_text[i];
      else if (band && what === "about-high") el.textContent = band.about_high_text[i];
      else if (band && what === "ci-low") el.textContent = band.ci_low_text[i] || "\u2014";
      else if (band && what === "ci-high") el.textContent = band.ci_high_text[i] || "\u2014";
    });
    var body = document.getElementById("quantile-body-" + stat.position);
    if (body && stat.quantile_chart) {
      var q = stat.quantile_chart;
      var chosenBand = q.bands[st.confidence][st.intervals];
      body.querySelectorAll("tr").forEach(function (tr, i) {
        var cells = tr.querySelectorAll("td");
        cells[0].textContent = text.value[i];
        cells[1].textContent = "\u00b1 " + chosenBand.ranks_text[i];
        var about = tr.querySelector("td[data-q=about]");
        if (about && q.released_intervals) {
          about.textContent = chosenBand.ci_low_text[i]
            ? phrase("ci_range", { low: chosenBand.ci_low_text[i], high: chosenBand.ci_high_text[i] })
            : "\u2014";
        } else if (about && chosenBand.about_low_text) {
          about.textContent = chosenBand.about_low_text[i]
            ? phrase("about_range", { low: chosenBand.about_low_text[i], high: chosenBand.about_high_text[i] })
            : "\u2014";
        }
        if (cells[3]) cells[3].textContent = phrase("between", { low: chosenBand.low_text[i], high: chosenBand.high_text[i] });
      });
    }
  }

  window.DPStatsCharts = {
    // issue-14 kinds drawn as (grouped) bars or a quantile plot; a single spread
    // ("figure") is drawn by public-release.js, whose figure takes asymmetric intervals
    handles: function (stat) {
      return Boolean(stat.quantile_chart) || (stat.group_columns && stat.group_columns.length > 0 &&
        (stat.layout === "grouped_bars" || stat.layout === "bars"));
    },
    draw: draw,
    update: update,
  };
})();
