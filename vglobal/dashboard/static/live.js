// Live parts of a page: an element with data-live (an SSE URL) and data-src (its own HTML) is
// fetched again each time the stream says "changed"; one fetch at a time, the next after it.
(function () {
  "use strict";
  function keepChecked(el, html) {
    var checked = {};
    el.querySelectorAll("input[type=checkbox][name=sel]:checked").forEach(function (c) { checked[c.value] = true; });
    el.innerHTML = html;
    el.querySelectorAll("input[type=checkbox][name=sel]").forEach(function (c) { if (checked[c.value]) c.checked = true; });
  }
  function follow(el) {
    var busy = false, again = false, source = null;
    function refresh() {
      if (busy) { again = true; return; }
      busy = true;
      fetch(el.dataset.src, { credentials: "same-origin", headers: { "HX-Request": "true" } })
        .then(function (r) { return r.ok ? r.text() : null; })
        .then(function (html) {
          if (html !== null) { keepChecked(el, html); if (window.htmx) window.htmx.process(el); el.dataset.refreshed = String(Number(el.dataset.refreshed || 0) + 1); }
        })
        .finally(function () { busy = false; if (again) { again = false; refresh(); } });
    }
    function open(rev) {
      var url = el.dataset.live.replace(/rev=\d*/, "rev=" + rev);
      source = new EventSource(url, { withCredentials: true });
      source.addEventListener("changed", function (e) { el.dataset.rev = e.data; refresh(); });
      source.addEventListener("gone", function () { source.close(); refresh(); setTimeout(function () { open(0); }, 1000); });
      source.onopen = function () { el.dataset.connected = "yes"; };
    }
    open(el.dataset.rev || 0);
  }
  document.addEventListener("DOMContentLoaded", function () {
    document.querySelectorAll("[data-live]").forEach(follow);
    // Delegated, so forms inside refreshed parts ask too.
    document.addEventListener("submit", function (e) {
      var form = e.target;
      if (form.dataset && form.dataset.confirm && !window.confirm(form.dataset.confirm)) e.preventDefault();
    });
    var all = document.getElementById("select-all");
    if (all) all.addEventListener("change", function () {
      document.querySelectorAll("input[name=sel]").forEach(function (c) { c.checked = all.checked; });
    });
  });
})();
