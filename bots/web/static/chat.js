// Live updates of the web chat: when the thread changes, its messages are fetched again
// (rendered and escaped by the server).
(function () {
  "use strict";
  var source = document.getElementById("chat-source");
  if (!source || !window.EventSource) return;
  var timer = null;
  var feed = new EventSource(source.dataset.feed);

  // A form a server asked for, being filled in, is not redrawn under the person's hands
  // (the thread catches up once it is sent).
  var filling = false;
  document.addEventListener("input", function (e) {
    if (e.target.closest && e.target.closest(".form-ask form")) filling = true;
  });

  function busy() {
    var at = document.activeElement;
    return filling || !!(at && at.closest && at.closest(".form-ask form"));
  }

  function refresh() {
    timer = null;
    if (busy()) {
      timer = setTimeout(refresh, 1000);
      return;
    }
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
