// The job page's log panel: an element with data-logs (an SSE URL of the job's pod output) shows
// each "line" event as it comes, keeping the last KEEP lines, scrolled to the end unless the
// reader scrolled up; "end" and "gone" close the stream and say why. Choosing a pod reopens it.
(function () {
  "use strict";
  var KEEP = 2000;
  function start(panel) {
    var out = panel.querySelector("[data-log-lines]"), state = panel.querySelector("[data-log-state]");
    var pick = panel.querySelector("select"), es = null;
    function say(text) { state.textContent = text; }
    function append(text) {
      var atEnd = out.scrollTop + out.clientHeight >= out.scrollHeight - 4;
      var line = document.createElement("div");
      line.textContent = text;
      out.appendChild(line);
      while (out.childElementCount > KEEP) out.firstElementChild.remove();
      if (atEnd) out.scrollTop = out.scrollHeight;
    }
    function open() {
      if (es) es.close();
      var pod = pick ? pick.value : "";
      es = new EventSource(panel.dataset.logs + (pod ? "?pod=" + encodeURIComponent(pod) : ""));
      say("connecting");
      // A new connection sends the last lines again: start from an empty panel.
      es.onopen = function () { out.textContent = ""; say("following"); };
      es.addEventListener("line", function (e) {
        var d = JSON.parse(e.data);
        append(pod ? d.text : "[" + d.pod + "] " + d.text);
      });
      es.addEventListener("end", function () { es.close(); say("the output ended"); });
      es.addEventListener("gone", function (e) { es.close(); say(JSON.parse(e.data).reason); });
      es.onerror = function () { if (es.readyState === EventSource.CLOSED) say("not available (reload to try again)"); };
    }
    if (pick) pick.addEventListener("change", open);
    open();
  }
  function init() { document.querySelectorAll("[data-logs]").forEach(start); }
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", init); else init();
})();
