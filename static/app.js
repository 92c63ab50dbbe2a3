// Small progressive enhancements; every page works without this file.
(function () {
  "use strict";
  // Select a freshly shown secret on click so it can be copied in one gesture.
  document.addEventListener("click", function (ev) {
    var el = ev.target;
    if (el && el.classList && el.classList.contains("secret")) {
      var range = document.createRange();
      range.selectNodeContents(el);
      var sel = window.getSelection();
      sel.removeAllRanges();
      sel.addRange(range);
    }
  });
})();
// Load a chosen file's text into the textarea named by data-target (config.json boxes).
document.addEventListener("change", function (ev) {
  var input = ev.target;
  if (!input || !input.classList || !input.classList.contains("load-file") || !input.files.length) return;
  var target = document.getElementById(input.getAttribute("data-target"));
  if (!target) return;
  input.files[0].text().then(function (text) {
    target.value = text;
    target.dispatchEvent(new Event("input", { bubbles: true }));
  });
});
// Uploads: show progress while htmx sends the file, and accept files dropped on the zone.
document.addEventListener("htmx:xhr:progress", function (ev) {
  var form = ev.target.closest ? ev.target.closest("form.upload") : null;
  if (!form || !ev.detail.lengthComputable) return;
  var bar = form.querySelector(".upload-progress");
  bar.hidden = false;
  bar.value = Math.round((ev.detail.loaded / ev.detail.total) * 100);
});
document.addEventListener("dragover", function (ev) {
  var zone = ev.target.closest ? ev.target.closest(".dropzone") : null;
  if (!zone) return;
  ev.preventDefault();
  zone.classList.add("dragging");
});
document.addEventListener("dragleave", function (ev) {
  var zone = ev.target.closest ? ev.target.closest(".dropzone") : null;
  if (zone) zone.classList.remove("dragging");
});
document.addEventListener("drop", function (ev) {
  var zone = ev.target.closest ? ev.target.closest(".dropzone") : null;
  if (!zone || !ev.dataTransfer || !ev.dataTransfer.files.length) return;
  ev.preventDefault();
  zone.classList.remove("dragging");
  var form = zone.closest("form");
  form.querySelector("input[type=file]").files = ev.dataTransfer.files;
  form.requestSubmit();
});
// Narrow screens: the areas collapse behind the Menu button (the CSS hides them only
// once this script has marked the page, so without it they simply wrap).
document.documentElement.classList.add("js");
document.addEventListener("click", function (ev) {
  var button = ev.target.closest ? ev.target.closest(".nav-toggle") : null;
  if (!button) return;
  var open = button.getAttribute("aria-expanded") !== "true";
  button.setAttribute("aria-expanded", open ? "true" : "false");
  document.getElementById(button.getAttribute("aria-controls")).classList.toggle("open", open);
});
// Step 1: a metric brings its own unit (an ITL is in ms, a throughput in tok/s), and a
// throughput or a cost has no percentile; the server refuses a unit that cannot
// measure the metric either way.
function syncMetric(select, resetUnit) {
  var form = select.form;
  var chosen = select.options[select.selectedIndex];
  if (!form || !chosen) return;
  var percentile = form.querySelector("select[name=percentile]");
  if (percentile) {
    var none = chosen.getAttribute("data-percentile") === "no";
    if (none) percentile.value = "";
    percentile.disabled = none;
  }
  var unit = form.querySelector("input[name=unit]");
  if (resetUnit && unit && chosen.getAttribute("data-unit")) unit.value = chosen.getAttribute("data-unit");
}
document.addEventListener("change", function (ev) {
  var select = ev.target;
  if (select && select.id === "f-metric") syncMetric(select, true);
});
function syncMetrics() {
  var select = document.getElementById("f-metric");
  if (select) syncMetric(select, false);
}
document.addEventListener("DOMContentLoaded", syncMetrics);
document.addEventListener("htmx:afterSettle", syncMetrics);
