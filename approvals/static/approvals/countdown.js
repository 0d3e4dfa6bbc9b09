// Keeps every SLA countdown (<time class="sla" datetime="...">) current without a reload,
// in the page's language (the templates are on <html data-due-text data-overdue-text>).
(function () {
  var root = document.documentElement;
  function say(template, text) { return (template || "%(span)s").replace("%(span)s", text); }
  function span(seconds) {
    seconds = Math.floor(Math.abs(seconds));
    var d = Math.floor(seconds / 86400), h = Math.floor((seconds % 86400) / 3600),
        m = Math.floor((seconds % 3600) / 60);
    if (d) return d + "d " + h + "h";
    if (h) return h + "h " + m + "m";
    return m + "m";
  }
  function tick() {
    var now = Date.now();
    document.querySelectorAll("time.sla[datetime]").forEach(function (el) {
      var left = (Date.parse(el.getAttribute("datetime")) - now) / 1000;
      if (isNaN(left)) return;
      el.textContent = say(left <= 0 ? root.dataset.overdueText : root.dataset.dueText, span(left));
      el.className = "sla " + (left <= 0 ? "overdue" : left < 8 * 3600 ? "soon" : "ok");
    });
  }
  setInterval(tick, 30000);
})();
