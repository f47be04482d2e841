// The declaration page (templates/datasets/declare.html): "Fill in from profile".
//
// Copies the private profile's suggestions into a column's inputs and marks them
// data-derived: the hidden field derived-<key> lists the parts filled in
// ("categories", "bounds"), the badge shows it and the confirmation box appears.
// "Use the value labels" also fills the category labels (code = label lines).
// It also sets the kind the profile suggests (numeric for numbers and for text
// holding mostly numbers; categorical for a few frequent values).
// The server records the mark and refuses it unconfirmed. Data comes from
// json_script only; DOM APIs and .value / .textContent only, never markup.
(function () {
  "use strict";
  var source = document.getElementById("profile-fills");
  var form = document.getElementById("declare-form");
  if (!source || !form) {
    return;
  }
  var fills = JSON.parse(source.textContent);
  var LABELS = { categories: "the categories", bounds: "the bounds" };

  function markDerived(key, part) {
    var field = form.elements["derived-" + key];
    var parts = field.value.split(/\s+/).filter(function (p) { return p; });
    if (parts.indexOf(part) < 0) {
      parts.push(part);
    }
    field.value = parts.join(" ");
    var badge = document.getElementById("derived-badge-" + key);
    var text = badge.querySelector(".derived-parts");
    text.textContent = parts.map(function (p) { return LABELS[p] || p; }).join(" and ");
    badge.hidden = false;
    var confirm = document.getElementById("derived-confirm-" + key);
    confirm.hidden = false;
    var box = form.elements["confirm-derived-" + key];
    box.checked = false; // new values from the data: confirm them again
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
        var radios = form.querySelectorAll('input[name="kind-' + key + '"]');
        radios.forEach(function (radio) {
          radio.checked = radio.value === fill.kind;
        });
      }
      if (fill.categories) {
        form.elements["categories-" + key].value = fill.categories;
        markDerived(key, "categories");
      }
      if (fill.label_lines) {
        // a file's value labels: Chinese ones in the Chinese box, the others in English
        form.elements["labels-" + key].value = fill.label_lines.en || "";
        form.elements["labels-zh-" + key].value = fill.label_lines.zh || "";
      }
      if (fill.range && fill.range[0] !== "") {
        form.elements["lower-" + key].value = fill.range[0];
        form.elements["upper-" + key].value = fill.range[1];
        markDerived(key, "bounds");
      }
    });
  });
})();
