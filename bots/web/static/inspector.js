// Live updates of a run's page: new timeline rows from the server's events (rendered and
// escaped by the server), then the other sections fetched again, keeping open sections open.
(function () {
  "use strict";
  var source = document.getElementById("live-source");
  if (!source || !window.EventSource) return;
  var list = document.getElementById("timeline-list");
  var sections = ["summary", "result", "plan", "agents", "questions", "files"];
  var timer = null;
  var events = new EventSource(source.dataset.events);

  function refresh() {
    timer = null;
    fetch(window.location.href, { cache: "no-store", credentials: "same-origin" })
      .then(function (r) { return r.ok ? r.text() : null; })
      .then(function (html) {
        if (!html) return;
        var fresh = new DOMParser().parseFromString(html, "text/html");
        var open = Array.prototype.map.call(
          document.querySelectorAll("details[open][id]"), function (d) { return d.id; });
        sections.forEach(function (id) {
          var old = document.getElementById(id), now = fresh.getElementById(id);
          if (old && now) old.replaceWith(document.adoptNode(now));
        });
        open.forEach(function (id) {
          var d = document.getElementById(id);
          if (d) d.open = true;
        });
      })
      .catch(function () {});
  }

  events.addEventListener("run", function (e) {
    var data = JSON.parse(e.data);
    if (data.html) list.insertAdjacentHTML("beforeend", data.html);
    if (!timer) timer = setTimeout(refresh, 1000);
  });
  events.addEventListener("end", function () {
    events.close();
    document.getElementById("live").textContent = "finished";
    refresh();
  });
})();
