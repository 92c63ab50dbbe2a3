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
