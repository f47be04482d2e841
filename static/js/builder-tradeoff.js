// The builder's accuracy-versus-epsilon chart (Plotly) and its table, from the server's
// numbers (releases/services/tradeoff.py); static/js/builder.js calls draw() after each
// preview. Labels come from data: they reach the page as textContent, and Plotly (which
// reads strings as pseudo-HTML) gets them escaped.
(function () {
  "use strict";

  /** The accuracy-versus-epsilon chart (Plotly) and its table, from the server's numbers. */
  function draw(t, el, T, fill) {
    const summary = document.getElementById("tradeoff-summary");
    const chart = document.getElementById("tradeoff-chart");
    const tableBox = document.getElementById("tradeoff-table");
    if (!t) {
      summary.textContent = T.chart_failed;
      chart.replaceChildren();
      tableBox.replaceChildren();
      return;
    }
    summary.replaceChildren(
      fill(T.this_total, { epsilon: t.current_text }) + " ",
      t.remaining === null
        ? el("strong", { class: "error", text: T.no_total_fits })
        : el("span", {
            id: "tradeoff-remaining",
            "data-exact": t.remaining,
            text: fill(t.remaining_at_limit ? T.largest_at_least : T.largest, {
              epsilon: t.remaining_text,
            }),
          })
    );
    const xs = t.epsilons.map(Number);
    if (window.Plotly) {
      const traces = t.series.map((s) => ({
        type: "scatter",
        mode: "lines+markers",
        name: esc(s.legend || s.label),
        x: xs,
        // a zero half-width has no place on a log axis: left out (the table shows it)
        y: s.halfwidth.map((h) => (h === null || h <= 0 ? null : h)),
        hovertext: s.halfwidth_text.map(
          (h, i) =>
            esc(fill(T.hover, { label: s.label, halfwidth: h, epsilon: t.epsilons_text[i] }))
        ),
        hoverinfo: "text",
      }));
      const line = (x, color, dash) => ({
        type: "line", xref: "x", yref: "paper", x0: x, x1: x, y0: 0, y1: 1,
        line: { color: color, width: 2, dash: dash },
      });
      const shapes = [line(Number(t.current), "#1d2433", "dash")];
      const annotations = [{ x: Math.log10(Number(t.current)), y: 1, xref: "x", yref: "paper",
        text: esc(T.this_release), showarrow: false, yanchor: "bottom" }];
      if (t.remaining !== null) {
        shapes.push(line(Number(t.remaining), "#b3261e", "solid"));
        annotations.push({ x: Math.log10(Number(t.remaining)), y: 0.92, xref: "x", yref: "paper",
          text: esc(T.fits_up_to), showarrow: false, xanchor: "right",
          font: { color: "#b3261e" } });
      }
      window.Plotly.react(
        chart,
        traces,
        {
          height: 360,
          margin: { t: 30, r: 20, b: 50, l: 70 },
          xaxis: { type: "log", title: { text: esc(T.x_axis) } },
          yaxis: { type: "log", title: { text: esc(T.y_axis) } },
          shapes: shapes,
          annotations: annotations,
          legend: { orientation: "h", y: -0.25 },
          paper_bgcolor: "#fff",
          plot_bgcolor: "#fff",
        },
        { displaylogo: false, responsive: true }
      );
    }
    const head = el("tr", {}, [
      el("th", { scope: "col", text: T.total_epsilon }),
      el("th", { scope: "col", text: T.fits_column }),
      ...t.series.map((s) =>
        el("th", { scope: "col", class: "num", text: "± " + (s.legend || s.label) })
      ),
    ]);
    const rows = t.epsilons.map((e, i) =>
      el("tr", {}, [
        el("td", { class: "num", text: t.epsilons_text[i] }),
        el("td", { text: t.remaining !== null && Number(e) <= Number(t.remaining) ? T.yes : T.no }),
        ...t.series.map((s) => el("td", { class: "num", text: s.halfwidth_text[i] })),
      ])
    );
    tableBox.replaceChildren(
      el("table", { id: "tradeoff-numbers" }, [el("thead", {}, [head]), el("tbody", {}, rows)])
    );
  }

  // Plotly reads strings as pseudo-HTML: labels from the data are escaped first.
  function esc(value) {
    return String(value).replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;");
  }

  window.DPBuilderTradeoff = { draw: draw };
})();
