// Live parts of a page: an element with data-live (an SSE URL) and data-src (its own HTML) is
// fetched again each time the stream says "changed"; one fetch at a time, the next after it.
// What arrives is patched in, not swapped: a table row (keyed by data-job) is replaced only when
// its data-sig changed, and other parts only when their HTML did, so a page under hundreds of
// changes a second redraws the few rows that changed. The counts part refreshes at most every
// COUNTS_EVERY ms (with a last refresh after the burst).
(function () {
  "use strict";
  var COUNTS_EVERY = 2000;
  function each(list, fn) { Array.prototype.forEach.call(list, fn); }
  function carryChecked(from, to) {
    var was = from.querySelector("input[type=checkbox][name=sel]"), now = to.querySelector("input[type=checkbox][name=sel]");
    if (was && now && was.checked) now.checked = true;
  }
  function keepChecked(el, html) {
    var checked = {};
    el.querySelectorAll("input[type=checkbox][name=sel]:checked").forEach(function (c) { checked[c.value] = true; });
    el.innerHTML = html;
    el.querySelectorAll("input[type=checkbox][name=sel]").forEach(function (c) { if (checked[c.value]) c.checked = true; });
  }
  function keyed(body) {
    for (var i = 0; i < body.children.length; i++) if (!body.children[i].dataset.job) return false;
    return true;
  }
  // Rows in the new order; an unchanged row stays the node it was (only its age text follows).
  function patchRows(body, fresh) {
    var old = {}, kept = new Set();
    each(body.children, function (r) { old[r.dataset.job] = r; });
    var want = Array.prototype.map.call(fresh.children, function (r) {
      var o = old[r.dataset.job];
      if (o && o.dataset.sig === r.dataset.sig) {
        var a = o.querySelector("[data-age]"), b = r.querySelector("[data-age]");
        if (a && b && a.textContent !== b.textContent) a.textContent = b.textContent;
        kept.add(o);
        return o;
      }
      if (o) carryChecked(o, r);
      return r;
    });
    each(Array.prototype.slice.call(body.children), function (r) { if (!kept.has(r)) r.remove(); });
    want.forEach(function (r, i) { if (body.children[i] !== r) body.insertBefore(r, body.children[i] || null); });
  }
  // Each top-level part of the fresh HTML against the same part on the page; false when the
  // two do not line up (then the whole element is swapped).
  function patch(el, html) {
    var t = document.createElement("template");
    t.innerHTML = html;
    var now = t.content.children, had = el.children;
    if (now.length !== had.length) return false;
    for (var i = 0; i < now.length; i++) if (now[i].tagName !== had[i].tagName || now[i].id !== had[i].id) return false;
    for (i = 0; i < now.length; i++) {
      var part = had[i], fresh = now[i];
      if (part.id === "counts") continue;  // refreshed on its own clock
      var body = part.querySelector("tbody"), freshBody = fresh.querySelector("tbody");
      if (body && freshBody && keyed(body) && keyed(freshBody) && body.children.length && freshBody.children.length) {
        var rest = fresh.cloneNode(true), mine = part.cloneNode(true);
        rest.querySelector("tbody").innerHTML = "";
        mine.querySelector("tbody").innerHTML = "";
        if (rest.outerHTML !== mine.outerHTML) return false;
        patchRows(body, freshBody);
      } else if (part.outerHTML !== fresh.outerHTML) {
        carryChecked(part, fresh);
        part.replaceWith(fresh.cloneNode(true));
        if (window.htmx) window.htmx.process(el.children[i]);
      }
    }
    return true;
  }
  function countsClock(el) {
    // At most one fetch in flight and one every COUNTS_EVERY ms; a change told while one is in
    // flight asks again after it, so the last change is always counted (the rev tells the
    // server's cache which changes the answer must include).
    var last = 0, timer = null, busy = false, again = false;
    function schedule() {
      if (timer) return;
      timer = setTimeout(run, Math.max(0, last + COUNTS_EVERY - Date.now()));
    }
    function run() {
      var part = el.querySelector("#counts[hx-get]");
      timer = null;
      if (!part) return;
      if (busy) { again = true; return; }
      busy = true;
      last = Date.now();
      var url = part.getAttribute("hx-get");
      url += (url.indexOf("?") < 0 ? "?" : "&") + "rev=" + encodeURIComponent(el.dataset.rev || "0");
      fetch(url, { credentials: "same-origin", headers: { "HX-Request": "true" } })
        .then(function (r) { return r.ok ? r.text() : null; })
        .then(function (html) { if (html !== null && part.innerHTML !== html) part.innerHTML = html; })
        .finally(function () { busy = false; if (again) { again = false; schedule(); } });
    }
    return schedule;
  }
  // The stream: "ready" once the dashboard's watch runs, "changed" after changes, "gone" when the
  // watch ended (the hub was busy or restarting, the token was revoked). After "gone" or a broken
  // connection the page waits FIRST_WAIT ms, doubling up to MOST_WAIT, fetches its part again and
  // resumes from the revision that fetch returned: never a loop of requests while the hub is busy.
  var FIRST_WAIT = 1000, MOST_WAIT = 30000;
  function follow(el) {
    var busy = false, again = false, source = null, counts = countsClock(el), wait = 0, after = [];
    function refresh(then) {
      if (then) after.push(then);
      if (busy) { again = true; return; }
      busy = true;
      fetch(el.dataset.src, { credentials: "same-origin", headers: { "HX-Request": "true" } })
        .then(function (r) {
          var rev = r.headers.get("X-Revision");
          if (r.ok && rev && /^[0-9]{1,18}$/.test(rev)) el.dataset.rev = rev;
          return r.ok ? r.text() : null;
        })
        .then(function (html) {
          if (html === null) return;
          if (!patch(el, html)) { keepChecked(el, html); if (window.htmx) window.htmx.process(el); }
          el.dataset.refreshed = String(Number(el.dataset.refreshed || 0) + 1);
          counts();
        })
        .finally(function () {
          busy = false;
          if (again) { again = false; refresh(); return; }
          var todo = after; after = [];
          todo.forEach(function (fn) { fn(); });
        });
    }
    function later(why) {
      if (source) { source.close(); source = null; }
      el.dataset.state = "waiting";
      if (why) el.dataset.gone = why;
      wait = Math.min(wait ? wait * 2 : FIRST_WAIT, MOST_WAIT);
      var told = Number(el.dataset.retry || 0);
      setTimeout(function () { refresh(open); }, Math.max(told, wait * (0.75 + Math.random() / 2)));
    }
    function open() {
      var url = el.dataset.live.replace(/rev=\d*/, "rev=" + (el.dataset.rev || ""));
      source = new EventSource(url, { withCredentials: true });
      source.addEventListener("ready", function () { wait = 0; el.dataset.state = "live"; el.dataset.connected = "yes"; });
      source.addEventListener("changed", function (e) { el.dataset.rev = e.data; refresh(); });
      source.addEventListener("gone", function (e) {
        var told = {}; try { told = JSON.parse(e.data); } catch (err) { told = {}; }
        el.dataset.retry = String(Number(told.retry_ms) || 0);
        later(String(told.reason || ""));
      });
      source.onerror = function () { later(""); };
    }
    open();
  }
  document.addEventListener("DOMContentLoaded", function () {
    document.querySelectorAll("[data-live]").forEach(follow);
    // Delegated, so forms inside refreshed parts ask too.
    document.addEventListener("submit", function (e) {
      var form = e.target;
      if (form.dataset && form.dataset.confirm && !window.confirm(form.dataset.confirm)) e.preventDefault();
    });
    // Delegated: the select-all box may be a part patched in since.
    document.addEventListener("change", function (e) {
      if (e.target.id !== "select-all") return;
      document.querySelectorAll("input[name=sel]").forEach(function (c) { c.checked = e.target.checked; });
    });
  });
})();
