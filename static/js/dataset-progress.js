// A dataset being ingested (templates/datasets/detail.html): polls the status URL named
// by the progress card and reloads the page once the file is ready or refused.
(function () {
  "use strict";

  const card = document.getElementById("ingest-progress");
  if (!card || !card.dataset.statusUrl) return;
  const url = card.dataset.statusUrl;
  const bar = document.getElementById("ingest-bar");
  const percent = document.getElementById("ingest-percent");
  const label = document.getElementById("dataset-status");
  const timer = setInterval(function () {
    fetch(url, { credentials: "same-origin", headers: { Accept: "application/json" } })
      .then(function (r) {
        return r.ok ? r.json() : null;
      })
      .then(function (s) {
        if (!s) return;
        bar.value = s.progress;
        percent.textContent = Math.round(s.progress * 100) + "%";
        label.textContent = s.status_display;
        if (s.status === "ready" || s.status === "failed") {
          clearInterval(timer);
          window.location.reload();
        }
      })
      .catch(function () {});
  }, 1000);
})();
