// The declaration page (templates/datasets/declare.html): the chosen kind's inputs, and
// "Fill in from profile".
//
// Each column shows the inputs of the kind chosen for it only (containers marked
// data-kind="categorical", "numeric", "date", or several kinds); without this script
// every input shows, and the server reads only those of the kind posted.
//
// "Fill in from profile" copies the private profile's suggestions into a column's
// inputs and marks them data-derived: the hidden field derived-<key> lists the parts
// filled in ("categories", "bounds"), the badge shows those that the chosen kind
// uses and the confirmation box appears. It also sets the kind the profile suggests
// (numeric for numbers and for text holding mostly numbers; categorical for a few
// frequent values) and fills in only what that kind uses. The server records the
// mark and refuses it unconfirmed. "Use the value labels" also fills the category
// labels (code = label lines). Data comes from json_script only; DOM APIs and
// .value / .textContent only, never markup.
(function () {
  "use strict";
  var source = document.getElementById("profile-fills");
  var form = document.getElementById("declare-form");
  if (!source || !form) {
    return;
  }
  var fills = JSON.parse(source.textContent);
  var wordsNode = document.getElementById("derived-words");
  var WORDS = wordsNode ? JSON.parse(wordsNode.textContent) : {};
  // the part of a declaration each kind takes from the profile
  var PART = { categorical: "categories", numeric: "bounds" };

  function chosenKind(key) {
    var checked = form.querySelector('input[name="kind-' + key + '"]:checked');
    return checked ? checked.value : "";
  }

  function marked(key) {
    var field = form.elements["derived-" + key];
    return field.value.split(/\s+/).filter(function (p) { return p; });
  }

  // Show the chosen kind's inputs, and the badge for what of them came from the data.
  function refresh(key) {
    var fieldset = document.getElementById("column-" + key);
    if (!fieldset) {
      return;
    }
    var kind = chosenKind(key);
    fieldset.querySelectorAll("[data-kind]").forEach(function (node) {
      var kinds = node.getAttribute("data-kind").split(/\s+/).filter(function (k) { return k; });
      node.hidden = kinds.indexOf(kind) < 0;
    });
    var parts = marked(key).filter(function (p) { return p === PART[kind]; });
    var badge = document.getElementById("derived-badge-" + key);
    badge.querySelector(".derived-parts").textContent = parts
      .map(function (p) { return WORDS[p] || p; })
      .join(WORDS.separator || ", ");
    badge.hidden = parts.length === 0;
    document.getElementById("derived-confirm-" + key).hidden = parts.length === 0;
  }

  function markDerived(key, part) {
    var parts = marked(key);
    if (parts.indexOf(part) < 0) {
      parts.push(part);
    }
    form.elements["derived-" + key].value = parts.join(" ");
    form.elements["confirm-derived-" + key].checked = false; // new values: confirm them again
  }

  document.querySelectorAll("button[data-fill]").forEach(function (button) {
    button.addEventListener("click", function () {
      var key = button.getAttribute("data-fill");
      var fill = fills[key];
      if (fill && button.getAttribute("data-fill-from") === "labels") {
        fill = fill.labels;
      }
      if (!fill) {
        return;
      }
      if (fill.kind) {
        form.querySelectorAll('input[name="kind-' + key + '"]').forEach(function (radio) {
          radio.checked = radio.value === fill.kind;
        });
      }
      var kind = chosenKind(key);
      if (fill.categories && (!kind || kind === "categorical")) {
        form.elements["categories-" + key].value = fill.categories;
        markDerived(key, "categories");
      }
      if (fill.label_lines) {
        // a file's value labels: Chinese ones in the Chinese box, the others in English
        form.elements["labels-" + key].value = fill.label_lines.en || "";
        form.elements["labels-zh-" + key].value = fill.label_lines.zh || "";
      }
      if (fill.range && fill.range[0] !== "" && (!kind || kind === "numeric")) {
        form.elements["lower-" + key].value = fill.range[0];
        form.elements["upper-" + key].value = fill.range[1];
        markDerived(key, "bounds");
      }
      refresh(key);
    });
  });

  form.querySelectorAll('input[type="radio"][name^="kind-"]').forEach(function (radio) {
    radio.addEventListener("change", function () {
      refresh(radio.name.slice("kind-".length));
    });
  });
  Object.keys(fills).forEach(refresh);
})();
