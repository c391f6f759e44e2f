// equeue console: live refresh of [data-live] blocks and select-all boxes.
(function () {
  "use strict";
  var every = parseInt(document.body.getAttribute("data-refresh") || "0", 10);
  var busy = false;
  function tick() {
    if (busy || document.hidden || !document.querySelector("[data-live]")) return;
    busy = true;
    fetch(location.href, { credentials: "same-origin", headers: { "X-Console-Refresh": "1" } })
      .then(function (r) { return r.ok ? r.text() : null; })
      .then(function (html) {
        if (!html) return;
        var doc = new DOMParser().parseFromString(html, "text/html");
        document.querySelectorAll("[data-live]").forEach(function (el) {
          var fresh = el.id && doc.getElementById(el.id);
          if (fresh) el.replaceWith(document.importNode(fresh, true));
        });
        var stamp = document.getElementById("refreshed");
        var fstamp = doc.getElementById("refreshed");
        if (stamp && fstamp) stamp.textContent = fstamp.textContent;
      })
      .catch(function () { /* the next tick tries again */ })
      .then(function () { busy = false; });
  }
  if (every > 0) setInterval(tick, every * 1000);
  document.addEventListener("change", function (ev) {
    var name = ev.target.getAttribute && ev.target.getAttribute("data-select-all");
    if (!name) return;
    var form = ev.target.form || document;
    form.querySelectorAll('input[type=checkbox][name="' + name + '"]').forEach(function (cb) {
      cb.checked = ev.target.checked;
    });
  });
})();
