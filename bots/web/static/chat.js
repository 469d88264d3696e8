// Live updates of the web chat: when the thread changes, its messages are fetched again
// (rendered and escaped by the server).
(function () {
  "use strict";
  var source = document.getElementById("chat-source");
  if (!source || !window.EventSource) return;
  var timer = null;
  var feed = new EventSource(source.dataset.feed);

  function refresh() {
    timer = null;
    fetch(window.location.href, { cache: "no-store", credentials: "same-origin" })
      .then(function (r) { return r.ok ? r.text() : null; })
      .then(function (html) {
        if (!html) return;
        var fresh = new DOMParser().parseFromString(html, "text/html");
        ["chat-head", "messages"].forEach(function (id) {
          var old = document.getElementById(id), now = fresh.getElementById(id);
          if (old && now) old.replaceWith(document.adoptNode(now));
        });
      })
      .catch(function () {});
  }

  feed.addEventListener("change", function () {
    if (!timer) timer = setTimeout(refresh, 250);
  });
})();
