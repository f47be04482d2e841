// The release builder (templates/releases/builder.html): rows of statistics, the live
// preview, the JSON payload posted on "Save draft".
//
// Every string here may come from data (column names, category labels, the owner's
// own values): it only ever reaches the page as textContent, an option's text or an
// input's value, never as markup. The page's data arrives through json_script.
(function () {
  "use strict";

  const form = document.getElementById("builder");
  if (!form) return;
  const datasets = JSON.parse(document.getElementById("datasets-data").textContent) || [];
  const initial = JSON.parse(document.getElementById("initial-data").textContent) || {};
  const previewUrl = form.dataset.previewUrl;
  const tbody = document.querySelector("#stats tbody");
  const byId = (id) => document.getElementById(id);
  const csrf = form.querySelector("input[name=csrfmiddlewaretoken]").value;
  const KINDS = [
    ["count", "Count"],
    ["histogram", "Histogram"],
    ["sum", "Clipped sum"],
    ["mean", "Mean"],
    ["argmax", "Most common category"],
  ];

  /** An element with text content and attributes; `children` are appended as they are. */
  function el(tag, attrs, children) {
    const node = document.createElement(tag);
    for (const [name, value] of Object.entries(attrs || {})) {
      if (value === false || value == null) continue;
      if (name === "text") node.textContent = String(value);
      else if (name === "value") node.value = String(value);
      else if (value === true) node.setAttribute(name, "");
      else node.setAttribute(name, String(value));
    }
    for (const child of children || []) node.append(child);
    return node;
  }

  function columns() {
    const d = datasets.find((x) => String(x.id) === byId("f-dataset").value);
    return d ? d.columns : [];
  }

  /** A <select> of [value, label] pairs, with an optional blank first choice. */
  function select(field, list, selected, blank) {
    const node = el("select", { "data-f": field });
    if (blank) node.append(el("option", { value: "", text: blank }));
    for (const [value, label] of list) node.append(el("option", { value: value, text: label }));
    node.value = selected == null ? "" : String(selected);
    if (node.selectedIndex < 0) node.selectedIndex = 0;
    return node;
  }

  function input(field, value, attrs) {
    return el("input", { "data-f": field, value: value == null ? "" : value, ...(attrs || {}) });
  }

  function cell(...children) {
    const td = el("td");
    children.forEach((child, i) => {
      if (i > 0) td.append(" ");
      td.append(child);
    });
    return td;
  }

  function addRow(s) {
    s = s || { kind: "count" };
    const cols = columns().map((c) => [c.name, c.name + " (" + c.kind + ")"]);
    const hold = el("input", { type: "checkbox", "data-f": "hold" });
    hold.checked = Boolean(s.hold);
    const tr = el("tr", {}, [
      cell(select("kind", KINDS, s.kind)),
      cell(select("column", cols, s.column || "", "(all rows)")),
      cell(
        select("column2", cols, s.column2 || "", "(none)"),
        input("category", s.category, { size: 8, placeholder: "category" })
      ),
      cell(
        input("lower", s.lower, { size: 5, placeholder: "lo" }),
        input("upper", s.upper, { size: 5, placeholder: "hi" })
      ),
      cell(input("n_guess", s.n_guess, { size: 7 })),
      cell(input("weight", s.weight || "1", { size: 3 })),
      cell(hold, input("epsilon", s.epsilon, { size: 5 })),
      cell(input("target_halfwidth", s.target_halfwidth, { size: 5 })),
      cell(el("button", { type: "button", class: "secondary", "data-remove": true, text: "Remove" })),
    ]);
    tbody.append(tr);
  }

  function payload() {
    const stats = [];
    for (const tr of tbody.querySelectorAll("tr")) {
      const s = {};
      for (const field of tr.querySelectorAll("[data-f]")) {
        s[field.dataset.f] = field.type === "checkbox" ? field.checked : field.value;
      }
      stats.push(s);
    }
    return {
      title: byId("f-title").value,
      dataset: byId("f-dataset").value,
      mechanism: byId("f-mechanism").value,
      confidence: byId("f-confidence").value,
      epsilon: byId("f-epsilon").value,
      delta: byId("f-delta").value,
      statistics: stats,
    };
  }

  function fmt(x) {
    if (x == null) return "";
    return Math.abs(x) >= 1000 ? Number(x).toFixed(0) : Number(x).toPrecision(4);
  }

  function previewError(message) {
    return el("p", { class: "messages" }, [el("span", { class: "error", text: message })]);
  }

  function previewTable(p) {
    const head = el("tr", {}, [
      el("th", { text: "Statistic" }),
      ...["epsilon", "delta", "cells", "± per cell", "± all cells at once"].map((t) =>
        el("th", { class: "num", text: t })
      ),
    ]);
    const body = el("tbody");
    for (const s of p.statistics) {
      body.append(
        el("tr", {}, [
          el("td", { text: s.label }),
          el("td", { class: "num", text: s.epsilon }),
          el("td", { class: "num", text: s.delta }),
          el("td", { class: "num", text: s.cells }),
          el("td", { class: "num", text: fmt(s.halfwidth) }),
          el("td", { class: "num", text: fmt(s.halfwidth_simultaneous) }),
        ])
      );
    }
    const cost = el("p", {}, [
      "Total cost: epsilon ",
      el("strong", { text: p.cost.epsilon }),
      ", delta ",
      el("strong", { text: p.cost.delta }),
      ". Remaining in the project: epsilon " +
        p.budget.epsilon_remaining +
        ", delta " +
        p.budget.delta_remaining,
    ]);
    if (p.fits) cost.append(".");
    else {
      cost.append(
        " — ",
        el("strong", { class: "error", text: "this release does not fit the remaining budget" }),
        "."
      );
    }
    return [el("table", {}, [el("thead", {}, [head]), body]), cost];
  }

  let timer = null;
  let seq = 0;
  function refresh() {
    byId("delta-row").hidden = byId("f-mechanism").value !== "gaussian";
    clearTimeout(timer);
    timer = setTimeout(async () => {
      const mine = ++seq;
      let data;
      try {
        const res = await fetch(previewUrl, {
          method: "POST",
          credentials: "same-origin",
          headers: { "Content-Type": "application/json", "X-CSRFToken": csrf },
          body: JSON.stringify(payload()),
        });
        data = await res.json();
      } catch (e) {
        data = { ok: false, error: "The preview could not be computed: try again." };
      }
      if (mine !== seq) return;
      const box = byId("preview");
      box.replaceChildren(...(data.ok ? previewTable(data.preview) : [previewError(data.error)]));
    }, 250);
  }

  byId("add-stat").addEventListener("click", () => {
    addRow();
    refresh();
  });
  tbody.addEventListener("click", (e) => {
    if (e.target.matches("[data-remove]")) {
      e.target.closest("tr").remove();
      refresh();
    }
  });
  form.addEventListener("input", refresh);
  form.addEventListener("change", refresh);
  byId("f-dataset").addEventListener("change", () => {
    tbody.replaceChildren();
    addRow();
  });
  form.addEventListener("submit", () => {
    byId("payload").value = JSON.stringify(payload());
  });
  for (const s of initial.statistics || []) addRow(s);
  if (!tbody.children.length) addRow();
  refresh();
})();
