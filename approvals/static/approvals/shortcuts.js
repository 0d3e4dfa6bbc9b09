// Keyboard shortcuts on the case page: c claim, a approve, r reject, m more documents,
// / focus the reason, ? help. They press the page's own buttons (the server decides as
// for a click) and never fire while the reviewer types in a field.
(function () {
  "use strict";
  var help = document.getElementById("shortcuts-help");
  if (!help) return;

  function press(selector) {
    var button = document.querySelector(selector);
    if (button && !button.disabled) button.click();
  }

  function toggleHelp(show) {
    help.hidden = !show;
    if (show) help.querySelector("[data-close-shortcuts]").focus();
  }

  help.addEventListener("click", function (event) {
    if (event.target === help || event.target.hasAttribute("data-close-shortcuts")) toggleHelp(false);
  });

  document.addEventListener("keydown", function (event) {
    if (event.ctrlKey || event.metaKey || event.altKey) return;
    if (event.key === "Escape") { toggleHelp(false); return; }
    var target = event.target;
    if (target && (target.isContentEditable || /^(INPUT|TEXTAREA|SELECT)$/.test(target.tagName))) return;
    var actions = {
      "c": function () { press("form[action$='/claim/'] button[type=submit]"); },
      "a": function () { press("button[name=outcome][value=approve]"); },
      "r": function () { press("button[name=outcome][value=reject]"); },
      "m": function () { press("button[name=outcome][value=more_documents]"); },
      "/": function () { var reason = document.getElementById("reason"); if (reason) reason.focus(); },
      "?": function () { toggleHelp(help.hidden); }
    };
    if (actions[event.key]) { event.preventDefault(); actions[event.key](); }
  });
})();
