// Gregor console. The pages work without this script; it only adds the
// message browser's Stop button (window.stop() ends the page load, which
// cancels the request and so the scan on the broker) and removes the
// "Scanning…" line once the page has loaded.
(function () {
  "use strict";
  document.addEventListener("click", function (e) {
    var button = e.target.closest && e.target.closest("[data-stop-scan]");
    if (!button) {
      return;
    }
    window.stop();
    var status = document.getElementById("scan-status");
    if (status) {
      status.textContent = "Scan stopped.";
      status.className = "note";
    }
  });
  document.addEventListener("DOMContentLoaded", function () {
    var status = document.getElementById("scan-status");
    if (status && status.classList.contains("scanning")) {
      status.remove();
    }
  });
})();
