// The run's page without a full reload: the filter applies as soon as a choice changes
// (the form's button does the same without script); on a running run, new timeline rows
// arrive from the server's events (rendered and escaped by the server; rows the filter
// leaves out are skipped), then the other sections are fetched again, keeping open
// sections open.
(function () {
  "use strict";
  var filter = document.getElementById("filter");
  if (filter) {
    Array.prototype.forEach.call(filter.querySelectorAll("select"), function (s) {
      s.addEventListener("change", function () { filter.submit(); });
    });
  }
  var source = document.getElementById("live-source");
  if (!source || !window.EventSource) return;
  var list = document.getElementById("timeline-list");
  var sections = ["summary", "result", "plan", "waterfall", "agents", "questions", "files"];
  var timer = null;
  var events = new EventSource(source.dataset.events);

  function chosen(name) {
    var field = filter && filter.elements[name];
    return field ? field.value : "";
  }

  function kept(row) {
    var kind = chosen("kind"), agent = chosen("agent");
    if (kind && row.dataset.cat !== kind) return false;
    return !agent || (row.dataset.agents || "").split(" ").indexOf(agent) >= 0;
  }

  function add(html) {
    var holder = document.createElement("template");
    holder.innerHTML = html;
    var row = holder.content.firstElementChild;
    if (!row || !kept(row)) return;
    var empty = document.getElementById("timeline-empty");
    if (empty) empty.remove();
    list.appendChild(row);
  }

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
    if (data.html) add(data.html);
    if (!timer) timer = setTimeout(refresh, 1000);
  });
  events.addEventListener("end", function () {
    events.close();
    document.getElementById("live").textContent = "finished";
    refresh();
  });
})();
