// The console page's live updates: the server sends the key's report
// every second (server-sent events), and each cell marked data-path
// takes the value at that path of the report's JSON, as text. Nothing is
// ever written as markup. A path the report no longer has means its
// shape changed (a store went away or came back): the page reloads.
(function () {
  "use strict";
  var usage = document.getElementById("usage");
  var live = document.getElementById("live");
  if (!usage || !window.EventSource) {
    return;
  }
  function at(obj, path) {
    return path.split(".").reduce(function (v, k) {
      return v === undefined || v === null ? undefined : v[k];
    }, obj);
  }
  var source = new EventSource("events?key64=" + encodeURIComponent(usage.dataset.key64));
  source.addEventListener("usage", function (e) {
    var report = JSON.parse(e.data);
    var stale = false;
    document.querySelectorAll("[data-path]").forEach(function (el) {
      var v = at(report, el.dataset.path);
      if (v === undefined) {
        stale = true;
        return;
      }
      if (el.tagName === "METER") {
        el.max = at(report, el.dataset.max);
        el.value = v;
      } else if (el.textContent !== String(v)) {
        el.textContent = String(v);
      }
    });
    if (report.csrf_token) {
      document.querySelectorAll('input[name="csrf_token"]').forEach(function (el) {
        el.value = report.csrf_token;
      });
    }
    if (stale) {
      source.close();
      window.location.reload();
      return;
    }
    live.textContent = "updating every second";
    live.className = "live";
  });
  source.addEventListener("error", function () {
    live.textContent = "reconnecting";
    live.className = "stale";
  });
})();
