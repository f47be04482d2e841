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
  // Every word a person reads, in the page's language (releases/builder_text.py).
  const T = JSON.parse(document.getElementById("builder-text").textContent);
  const KINDS = T.kinds;
  // Options of the issue-14 kinds, shown only for the kinds that use them.
  const GROUPED = ["grouped_sum", "grouped_mean", "stddev", "variance"];
  const PRESETS = T.presets;

  /** A translated sentence with its {name} placeholders filled in (as text, never markup). */
  function fill(template, values) {
    return template.replace(/\{(\w+)\}/g, (whole, name) =>
      Object.prototype.hasOwnProperty.call(values, name) ? String(values[name]) : whole
    );
  }

  function kindText(kind) {
    return T.column_kinds[kind] || kind;
  }

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

  /** Columns a statistic can be grouped by: declared categories, or numeric with bin edges. */
  function groupColumns() {
    return columns()
      .filter((c) => (c.kind === "categorical" && c.categories.length) || c.bin_edges.length >= 2)
      .map((c) => [c.name, c.name + " (" + kindText(c.kind) + ")"]);
  }

  /** The kind-specific options: the histogram's 2nd column and the count's category (old
   * kinds); grouping columns, or quantiles with presets and the grid step (issue 14). */
  function optionsCell(s, cols) {
    const groups = groupColumns();
    const grouping = el("span", { "data-kinds": GROUPED.join(" ") }, [
      el("label", {}, [T.group_by + " ", select("group_by", groups, s.group_by || "", T.none)]),
      " ",
      el("label", {}, [T.then_by + " ", select("group_by2", groups, s.group_by2 || "", T.none)]),
    ]);
    const quantiles = input("quantiles", [].concat(s.quantiles || []).join(", "), {
      size: 14,
      placeholder: "0.25, 0.5, 0.75",
      "aria-label": T.quantiles_label,
    });
    const preset = el("select", { "aria-label": T.presets_label, "data-preset": true });
    for (const [value, label] of PRESETS) preset.append(el("option", { value: value, text: label }));
    const step = input("step", s.step, {
      size: 6,
      placeholder: T.bin_edges,
      "aria-label": T.step_label,
    });
    const quantileBox = el("span", { "data-kinds": "quantiles" }, [
      el("label", {}, [T.quantiles + " ", quantiles]),
      " ",
      preset,
      " ",
      el("label", {}, [T.grid_step + " ", step]),
    ]);
    const classic = el("span", { "data-kinds": "count histogram sum mean argmax" }, [
      select("column2", cols, s.column2 || "", T.none),
      " ",
      input("category", s.category, { size: 8, placeholder: T.category }),
    ]);
    return cell(
      classic,
      grouping,
      quantileBox,
      crosstabBox(s, groups),
      keysBox(s),
      rowsBox(s),
      boundsBox(s)
    );
  }

  /** Private bounds' options: the ends searched, the values allowed beyond each bound and
   * the public search grid (start point, smallest step, largest distance), with help. */
  function boundsBox(s) {
    const field = (name, value, placeholder, label) =>
      el("label", {}, [label + " ", input(name, value, { size: 6, placeholder: placeholder })]);
    return el("span", { "data-kinds": "bounds" }, [
      el("label", {}, [T.bounds_ends + " ", select("ends", T.bounds_end_choices, s.ends || "both")]),
      " ",
      field("outside", s.outside == null ? "" : s.outside, "5", T.bounds_outside),
      " ",
      el("label", {}, [T.bounds_tail + " ", select("tail", T.bounds_tail_choices, s.tail || "")]),
      " ",
      field("centre", s.centre, "0", T.bounds_centre),
      " ",
      field("unit", s.unit, "1", T.bounds_unit),
      " ",
      field("limit", s.limit, "1e12", T.bounds_limit),
      el("small", { class: "muted help", text: T.bounds_help }),
    ]);
  }

  /** Categories found in the data: keys counted per person, counts or keys only, the cap. */
  function keysBox(s) {
    const counts = el("input", { type: "checkbox", "data-f": "with_counts" });
    counts.checked = s.with_counts == null ? true : Boolean(s.with_counts);
    return el("span", { "data-kinds": "keys" }, [
      el("label", {}, [T.keys_per_person + " ", input("keys_per_person", s.keys_per_person || "1", { size: 3 })]),
      " ",
      el("label", {}, [counts, " " + T.keys_with_counts]),
      " ",
      el("label", {}, [T.keys_max + " ", input("max_keys", s.max_keys, { size: 5 })]),
    ]);
  }

  /** Rows per person: the most rows per person the buckets resolve. */
  function rowsBox(s) {
    const cap = input("cap", s.cap != null ? s.cap : s.kind === "rows_per_person" ? s.upper : "", {
      size: 7,
      placeholder: "1000",
      "aria-label": T.rows_cap_label,
    });
    return el("span", { "data-kinds": "rows_per_person" }, [el("label", {}, [T.rows_cap + " ", cap])]);
  }

  /** A cross-tabulation's options: its columns (those a histogram accepts), the tables to
   * publish (every table of up to K of them, or a typed list "a × b; c") and the total. */
  function crosstabBox(s, groups) {
    const chosen = [].concat(s.columns || []).map(String);
    const picker = el("select", {
      "data-f": "columns",
      multiple: true,
      size: Math.min(5, Math.max(2, groups.length)),
      "aria-label": T.crosstab_columns,
    });
    for (const [value, label] of groups) {
      const option = el("option", { value: value, text: label });
      option.selected = chosen.includes(value);
      picker.append(option);
    }
    const way = select("way", T.crosstab_ways, s.way == null ? "2" : s.way);
    const listed = [].concat(s.marginals || []).map((m) => [].concat(m).join(" × "));
    const tables = input("marginals", typeof s.marginals === "string" ? s.marginals : listed.join("; "), {
      size: 16,
      placeholder: T.crosstab_placeholder,
      "aria-label": T.crosstab_tables,
    });
    const total = el("input", { type: "checkbox", "data-f": "total" });
    total.checked = Boolean(s.total);
    return el("span", { "data-kinds": "crosstab" }, [
      el("label", {}, [T.crosstab_columns + " ", picker]),
      " ",
      el("label", {}, [T.crosstab_publish + " ", way]),
      " ",
      el("label", { "data-tables": true, hidden: way.value !== "" }, [tables]),
      " ",
      el("label", {}, [total, " " + T.crosstab_total]),
    ]);
  }

  /** The count's category picker: the chosen column's declared codes, each with its
   * label in the page's language (a datalist: the field still takes the code). */
  let categoryLists = 0;
  function categoryChoices(tr) {
    const field = tr.querySelector("[data-f=category]");
    const name = tr.querySelector("[data-f=column]").value;
    const column = columns().find((c) => c.name === name);
    let list = tr.querySelector("datalist");
    if (!list) {
      categoryLists += 1;
      list = el("datalist", { id: "category-choices-" + categoryLists });
      field.after(list);
      field.setAttribute("list", list.id);
    }
    const names = (column && column.category_names) || {};
    list.replaceChildren(
      ...((column && column.kind === "categorical" && column.categories) || []).map((code) =>
        el("option", { value: code, label: names[code] ? code + " = " + names[code] : code })
      )
    );
  }

  /** Show only the options of the row's kind (hidden fields are not sent). */
  function showOptions(tr) {
    const kind = tr.querySelector("[data-f=kind]").value;
    for (const box of tr.querySelectorAll("[data-kinds]")) {
      box.hidden = !box.dataset.kinds.split(" ").includes(kind);
    }
  }

  // each language named in itself, as the language switch names them
  const LANGUAGE_NAMES = { en: "English", "zh-hans": "简体中文" };

  /** The statistic's label in both languages, its description in both behind a toggle
   * (an empty English label: the server names the statistic from its kind and columns). */
  function textCell(s) {
    const text = (field, lang, tag, label, attrs) =>
      el(tag, {
        "data-f": field,
        lang: lang,
        "aria-label": label,
        value: s[field] == null ? "" : s[field],
        ...(attrs || {}),
      });
    const description = el("details", { class: "stat-description" }, [
      el("summary", { text: T.description }),
      text("description", "en", "textarea", T.description_en, { rows: 2, placeholder: LANGUAGE_NAMES.en }),
      text("description_zh", "zh-hans", "textarea", T.description_zh, {
        rows: 2,
        placeholder: LANGUAGE_NAMES["zh-hans"],
      }),
    ]);
    if (s.description || s.description_zh) description.open = true;
    return el("td", { class: "stat-text" }, [
      text("label", "en", "input", T.label_en, { placeholder: LANGUAGE_NAMES.en, maxlength: 200 }),
      text("label_zh", "zh-hans", "input", T.label_zh, {
        placeholder: LANGUAGE_NAMES["zh-hans"],
        maxlength: 200,
      }),
      description,
    ]);
  }

  function addRow(s) {
    s = s || { kind: "count" };
    const cols = columns().map((c) => [c.name, c.name + " (" + kindText(c.kind) + ")"]);
    const hold = el("input", { type: "checkbox", "data-f": "hold" });
    hold.checked = Boolean(s.hold);
    const tr = el("tr", {}, [
      cell(select("kind", KINDS, s.kind)),
      textCell(s),
      cell(select("column", cols, s.column || "", T.all_rows)),
      optionsCell(s, cols),
      cell(
        input("lower", s.lower, { size: 5, placeholder: T.low }),
        input("upper", s.upper, { size: 5, placeholder: T.high })
      ),
      cell(input("n_guess", s.n_guess, { size: 7 })),
      cell(input("weight", s.weight || "1", { size: 3 })),
      cell(hold, input("epsilon", s.epsilon, { size: 5 })),
      cell(input("target_halfwidth", s.target_halfwidth, { size: 5 })),
      cell(el("button", { type: "button", class: "secondary", "data-remove": true, text: T.remove })),
    ]);
    tbody.append(tr);
    showOptions(tr);
    categoryChoices(tr);
  }

  function payload() {
    const stats = [];
    for (const tr of tbody.querySelectorAll("tr")) {
      const s = {};
      for (const field of tr.querySelectorAll("[data-f]")) {
        if (field.closest("[hidden]")) continue; // another kind's options
        if (field.multiple) s[field.dataset.f] = [...field.selectedOptions].map((o) => o.value);
        else s[field.dataset.f] = field.type === "checkbox" ? field.checked : field.value;
      }
      stats.push(s);
    }
    return {
      title: byId("f-title").value,
      title_zh: byId("f-title-zh").value,
      description: byId("f-description").value,
      description_zh: byId("f-description-zh").value,
      dataset: byId("f-dataset").value,
      mechanism: byId("f-mechanism").value,
      confidence: byId("f-confidence").value,
      epsilon: byId("f-epsilon").value,
      delta: byId("f-delta").value,
      statistics: stats,
    };
  }

  function rankText(text) {
    return text ? fill(T.rank, { n: text }) : "";
  }

  function previewError(message) {
    return el("p", { class: "messages" }, [el("span", { class: "error", text: message })]);
  }

  function previewTable(p) {
    const head = el("tr", {}, [
      el("th", { text: T.statistic }),
      ...[T.epsilon, T.delta, T.cells, T.per_cell, T.all_cells].map((t) =>
        el("th", { class: "num", text: t })
      ),
    ]);
    const body = el("tbody");
    for (const s of p.statistics) {
      // quantiles: a planning figure in the data's units beside the rank error (how many
      // values may lie between the released value and the true quantile), in words
      // from the server (releases/kinds/quantiles.py)
      const ranks = s.rank_error != null;
      // private bounds: their accuracy statement in words (releases/kinds/bounds.py)
      const one = s.accuracy_text || (ranks ? rankText(s.rank_error_text) : s.halfwidth_text);
      let all =
        s.accuracy_simultaneous_text ||
        (ranks ? rankText(s.rank_error_simultaneous_text) : s.halfwidth_simultaneous_text);
      const needed = s.persons_for_probability_text;
      if (needed) all = fill(T.keys_needed, { p50: needed["0.5"], p95: needed["0.95"] });
      body.append(
        el("tr", { "data-kind": s.kind }, [
          el("td", { text: s.label }),
          el("td", { class: "num", text: s.epsilon_text }),
          el("td", { class: "num", text: s.delta_text }),
          el("td", { class: "num", text: s.cells_text }),
          el("td", { class: "num", text: one }),
          el("td", { class: "num", text: all }),
        ])
      );
    }
    // the remaining budget is the one spend figure (tight at the cap's delta), the
    // basic sums beside it when they differ (texts formatted by the server)
    const cost = el("p", { id: "preview-cost" }, [
      fill(T.cost, {
        epsilon: p.cost.epsilon_text || p.cost.epsilon,
        delta: p.cost.delta_text || p.cost.delta,
      }),
    ]);
    if (p.budget) {
      cost.append(
        " ",
        el("span", {
          id: "preview-remaining",
          text: fill(T.remaining, {
            epsilon_remaining: p.budget.epsilon_remaining_text,
            epsilon_remaining_after: p.budget.epsilon_remaining_after_text,
          }),
        })
      );
      const basic = p.budget.basic;
      if (basic && basic.epsilon_remaining_after !== p.budget.epsilon_remaining_after) {
        const text = fill(T.basic_remaining, { epsilon: basic.epsilon_remaining_after_text });
        cost.append(" ", el("span", { class: "muted", id: "preview-basic", text: text }));
      }
    }
    if (!p.fits) cost.append(" ", el("strong", { class: "error", text: T.no_fit }));
    // the release's cells beside the limit the server refuses it over (translated there)
    const cells = el("p", { class: "muted", id: "preview-cells", text: p.cells_text || "" });
    return [el("table", {}, [el("thead", {}, [head]), body]), cost, cells, ...spendBlock(p.spend)];
  }

  /** The project's privacy loss before and after, tight and basic (texts from the server). */
  function spendBlock(spend) {
    if (spend === undefined) return [];
    if (spend === null) {
      return [el("p", { class: "muted", text: T.untight })];
    }
    const row = (label, key, cap, param) =>
      el("tr", {}, [
        el("th", { scope: "row", text: label }),
        el("td", { class: "num", text: cap }),
        el("td", { class: "num", "data-param": param + "-before", text: spend.before[key] }),
        el("td", { class: "num", "data-param": param + "-after", text: spend.after[key] }),
      ]);
    const head = el("tr", {}, [
      el("th", { text: "" }),
      ...[T.project_cap, T.committed_now, T.after_release].map((t) =>
        el("th", { class: "num", scope: "col", text: t })
      ),
    ]);
    const table = el("table", { id: "spend" }, [
      el("caption", { text: fill(T.loss_caption, { delta: spend.delta_cap_text }) }),
      el("thead", {}, [head]),
      el("tbody", {}, [
        row(T.tight, "epsilon_text", spend.epsilon_cap_text, "tight"),
        row(T.basic_epsilon, "basic_epsilon_text", spend.epsilon_cap_text, "basic"),
        row(T.basic_delta, "basic_delta_text", spend.delta_cap_text, "basic-delta"),
      ]),
    ]);
    const fit = el("p", { id: "spend-fit" });
    if (spend.fit !== null && spend.within) {
      fit.append(fill(spend.fit === 1 ? T.fits_one : T.fits, { n: spend.fit_text }));
    } else {
      fit.append(el("strong", { class: "error", text: T.no_bound_fit }));
    }
    return [table, fit];
  }

  let timer = null;
  let seq = 0;
  function refresh() {
    byId("delta-row").hidden = byId("f-mechanism").value !== "gaussian";
    clearTimeout(timer);
    timer = setTimeout(async () => {
      const mine = ++seq;
      const data = await postPreview(previewUrl, T.preview_failed);
      if (mine !== seq) return;
      const box = byId("preview");
      box.replaceChildren(...(data.ok ? previewTable(data.preview) : [previewError(data.error)]));
      if (data.ok) refreshChart(mine);
    }, 250);
  }

  // The chart takes a sweep of the planning functions: asked for after the preview,
  // and dropped when the form changed meanwhile.
  async function refreshChart(mine) {
    const data = await postPreview(previewUrl + "?chart=1", "");
    if (mine !== seq) return;
    window.DPBuilderTradeoff.draw(data.ok ? data.preview.tradeoff : null, el, T, fill);
  }

  // The form's payload posted to the preview endpoint; a failed request is an error answer.
  async function postPreview(url, error) {
    try {
      const res = await fetch(url, {
        method: "POST",
        credentials: "same-origin",
        headers: { "Content-Type": "application/json", "X-CSRFToken": csrf },
        body: JSON.stringify(payload()),
      });
      return await res.json();
    } catch (e) {
      return { ok: false, error: error };
    }
  }

  /** The owner's private check: true values, shown here once and kept nowhere. */
  const checkUrl = form.dataset.checkUrl;
  const checkBox = byId("private-check-result");
  byId("private-check").addEventListener("click", async () => {
    checkBox.replaceChildren();
    const data = await postPreview(checkUrl, T.check_failed);
    if (!data.ok) {
      checkBox.append(previewError(data.error || T.check_failed));
      return;
    }
    const c = data.check;
    const items = [el("p", { class: "notice", text: T.check_private }), el("p", { text: fill(T.check_rows, c) })];
    if (c.persons) items.push(el("p", { "data-check": "persons", text: fill(T.check_persons, c.persons) }));
    const list = el("ul", { "data-check": "bounds" });
    for (const s of c.statistics) list.append(el("li", { text: (s.position + 1) + ". " + s.label + ": " + s.text }));
    items.push(c.statistics.length ? list : el("p", { class: "muted", text: T.check_none }));
    checkBox.append(...items);
  });

  byId("add-stat").addEventListener("click", () => {
    addRow();
    refresh();
  });
  tbody.addEventListener("change", (e) => {
    const tr = e.target.closest("tr");
    if (e.target.matches("[data-f=kind]")) showOptions(tr);
    if (e.target.matches("[data-f=column]")) categoryChoices(tr);
    if (e.target.matches("[data-f=way]")) tr.querySelector("[data-tables]").hidden = e.target.value !== "";
    if (e.target.matches("[data-preset]") && e.target.value) {
      tr.querySelector("[data-f=quantiles]").value = e.target.value;
      e.target.value = "";
    }
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

  // A language switch reloads the page: the form in progress goes to this tab's
  // sessionStorage just before, and comes back once (public parameters only, as typed).
  const STORE = "dpportal.builder:" + location.pathname;
  let lastField = null; // the field last edited: [row index or -1, field key]
  form.addEventListener("focusin", (e) => {
    const tr = e.target.closest("#stats tbody tr");
    const key = e.target.dataset.f || e.target.id;
    if (key) lastField = [tr ? [...tbody.children].indexOf(tr) : -1, key];
  });
  const switcher = document.querySelector("form.languages");
  if (switcher) {
    switcher.addEventListener("submit", () => {
      try {
        sessionStorage.setItem(STORE, JSON.stringify({ form: payload(), field: lastField }));
      } catch (e) {
        // storage full or refused: the switch still happens, the form is not kept
      }
    });
  }

  function takeSaved() {
    try {
      const saved = JSON.parse(sessionStorage.getItem(STORE) || "null");
      sessionStorage.removeItem(STORE);
      return saved && typeof saved.form === "object" ? saved : null;
    } catch (e) {
      return null;
    }
  }

  const TOP = {
    "f-title": "title",
    "f-title-zh": "title_zh",
    "f-description": "description",
    "f-description-zh": "description_zh",
    "f-mechanism": "mechanism",
    "f-confidence": "confidence",
    "f-epsilon": "epsilon",
    "f-delta": "delta",
  };

  /** The form as `state` says (a saved one, or the page's initial values). */
  function restore(state) {
    // a select takes only a value it offers (the page's own choice stays otherwise)
    const put = (node, value) => {
      if (value == null || !node) return;
      const text = String(value);
      if (node.tagName !== "SELECT") node.value = text;
      else if ([...node.options].some((o) => o.value === text && !o.disabled)) node.value = text;
    };
    put(byId("f-dataset"), state.dataset);
    for (const [id, key] of Object.entries(TOP)) put(byId(id), state[key]);
    for (const s of state.statistics || []) addRow(s);
  }

  /** Focus the field the owner was editing before the switch, in view. */
  function refocus(field) {
    if (!Array.isArray(field)) return;
    const [row, key] = field;
    const scope = row >= 0 ? tbody.children[row] : form;
    const target =
      scope && (row >= 0 ? scope.querySelector(`[data-f="${CSS.escape(key)}"]`) : byId(key));
    if (!target) return;
    if (target.closest("details")) target.closest("details").open = true;
    target.focus();
    target.scrollIntoView({ block: "center" });
  }

  const saved = takeSaved();
  restore(saved ? saved.form : initial);
  if (!tbody.children.length) addRow();
  if (saved) refocus(saved.field);
  refresh();
  // the form holds its values now: what a reader types from here on stays
  form.setAttribute("data-ready", "1");
})();
