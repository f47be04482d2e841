// The declaration page (templates/datasets/declare.html): "Fill in from profile" copies
// a column's private suggestion into its form fields, as values only (never markup).
(function () {
  "use strict";

  const data = document.getElementById("profile-fills");
  const form = document.getElementById("declare-form");
  if (!data || !form) return;
  const fills = JSON.parse(data.textContent) || {};
  document.querySelectorAll("button[data-fill]").forEach(function (button) {
    button.addEventListener("click", function () {
      const key = button.getAttribute("data-fill");
      const fill = fills[key];
      if (!fill) return;
      if (fill.categories) {
        form.elements["categories-" + key].value = fill.categories;
      }
      if (fill.range && fill.range[0] !== "") {
        form.elements["lower-" + key].value = fill.range[0];
        form.elements["upper-" + key].value = fill.range[1];
      }
    });
  });
})();
