// The web chat in the page: live updates (when the thread changes, it is fetched again,
// rendered and escaped by the server), Enter sends (Shift+Enter: a new line), times in
// the reader's own clock.
(function () {
  "use strict";

  function localTimes(root) {
    root.querySelectorAll("time[datetime]").forEach(function (t) {
      var at = new Date(t.getAttribute("datetime"));
      if (isNaN(at)) return;
      t.textContent = at.toLocaleTimeString([], { hour: "2-digit", minute: "2-digit" });
      t.title = at.toLocaleString();
    });
  }
  localTimes(document);

  // Enter sends a message or a request; Shift+Enter is a new line.
  document.addEventListener("keydown", function (e) {
    var box = e.target;
    if (e.key !== "Enter" || e.shiftKey || e.isComposing) return;
    if (!box.matches || !box.matches("form.say textarea, form.ask textarea")) return;
    e.preventDefault();
    if (box.value.trim()) box.form.requestSubmit();
  });

  var source = document.getElementById("chat-source");
  if (!source || !window.EventSource) return;
  var timer = null;
  var feed = new EventSource(source.dataset.feed);

  // A form inside the thread being filled in (a server's form, a denial's reason) is not
  // redrawn under the person's hands (the thread catches up once it is sent).
  var filling = false;
  document.addEventListener("input", function (e) {
    if (e.target.closest && e.target.closest("#messages form")) filling = true;
  });

  function busy() {
    var at = document.activeElement;
    return filling || !!(at && at.closest && at.closest("#messages form"));
  }

  function nearBottom() {
    var s = document.scrollingElement;
    return s.scrollHeight - s.scrollTop - window.innerHeight < 120;
  }

  function refresh() {
    timer = null;
    if (busy()) {
      timer = setTimeout(refresh, 1000);
      return;
    }
    var follow = nearBottom();
    fetch(window.location.href, { cache: "no-store", credentials: "same-origin" })
      .then(function (r) { return r.ok ? r.text() : null; })
      .then(function (html) {
        if (!html) return;
        var fresh = new DOMParser().parseFromString(html, "text/html");
        // Open <details> stay open across the redraw.
        var open = {};
        document.querySelectorAll("#messages li[id] details[open]").forEach(function (d) {
          var li = d.closest("li[id]");
          open[li.id + ":" + Array.prototype.indexOf.call(li.querySelectorAll("details"), d)] = true;
        });
        ["chat-head", "messages", "past"].forEach(function (id) {
          var old = document.getElementById(id), now = fresh.getElementById(id);
          if (old && now) old.replaceWith(document.adoptNode(now));
        });
        document.querySelectorAll("#messages li[id]").forEach(function (li) {
          li.querySelectorAll("details").forEach(function (d, i) {
            if (open[li.id + ":" + i]) d.open = true;
          });
        });
        var say = fresh.querySelector("form.say textarea"), mine = document.querySelector("form.say textarea");
        if (say && mine) mine.placeholder = say.placeholder;
        localTimes(document);
        if (follow) window.scrollTo(0, document.scrollingElement.scrollHeight);
      })
      .catch(function () {});
  }

  feed.addEventListener("change", function () {
    if (!timer) timer = setTimeout(refresh, 250);
  });
  // A chat opens at its newest message.
  if (!window.location.hash) window.scrollTo(0, document.scrollingElement.scrollHeight);
})();
