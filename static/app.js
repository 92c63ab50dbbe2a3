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
