// A queued or computing release's page (templates/releases/detail.html): polls the
// status URL named by the progress card, shows "worker lost, resuming" while the
// heartbeat is silent, and reloads the page once the worker is done.
(function () {
  "use strict";

  const card = document.getElementById("progress-card");
  if (!card || !card.dataset.statusUrl) return;
  const url = card.dataset.statusUrl;
  const bar = document.getElementById("progress");
  const label = document.getElementById("status-label");
  const lost = document.getElementById("worker-lost");

  async function poll() {
    try {
      const res = await fetch(url, { credentials: "same-origin", headers: { Accept: "application/json" } });
      const s = await res.json();
      bar.value = s.progress;
      label.textContent = s.status_label;
      if (lost) lost.hidden = !s.worker_lost;
      if (s.status !== "queued" && s.status !== "computing") {
        window.location.reload();
        return;
      }
    } catch (e) {
      // a network hiccup: try again at the next tick
    }
    setTimeout(poll, 1500);
  }
  setTimeout(poll, 1500);
})();
