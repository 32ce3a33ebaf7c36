// Quire's published sites: optional enhancements; every page works without this script.
(function () {
  "use strict";
  // Tabs in content: the renderer writes every tab's panel; show one at a time.
  document.querySelectorAll(".content .tabs").forEach(function (group) {
    var buttons = group.querySelectorAll("[role=tab]");
    function select(button) {
      buttons.forEach(function (b) {
        var on = b === button;
        b.setAttribute("aria-selected", on ? "true" : "false");
        var panel = document.getElementById(b.getAttribute("aria-controls") || "");
        if (panel) { panel.hidden = !on; }
      });
    }
    buttons.forEach(function (button, i) {
      button.addEventListener("click", function (e) {
        e.preventDefault();
        select(button);
      });
      // Left and Right move to the previous and next tab, Home and End to the ends.
      button.addEventListener("keydown", function (e) {
        var to = { ArrowLeft: i - 1, ArrowRight: i + 1, Home: 0, End: buttons.length - 1 }[e.key];
        if (to === undefined) { return; }
        e.preventDefault();
        var next = buttons[(to + buttons.length) % buttons.length];
        select(next);
        next.focus();
      });
    });
    if (buttons.length) {
      // The panels' own titles repeat the tabs: only for readers without this script.
      group.classList.add("tabs-live");
      select(group.querySelector("[aria-selected=true]") || buttons[0]);
    }
  });
  // On a phone the page tree starts folded behind its Menu button (it is open without
  // this script, so that it is never out of reach).
  var sidebar = document.querySelector("details.sidebar");
  if (sidebar && window.matchMedia && window.matchMedia("(max-width: 48rem)").matches) {
    sidebar.open = false;
  }
  // Section menus: one open at a time, closed by Escape.
  var menus = document.querySelectorAll(".section-tabs details");
  menus.forEach(function (menu) {
    menu.addEventListener("toggle", function () {
      if (menu.open) { menus.forEach(function (m) { if (m !== menu) { m.open = false; } }); }
    });
  });
  document.addEventListener("keydown", function (e) {
    if (e.key === "Escape") { menus.forEach(function (m) { m.open = false; }); }
  });
  // Insights: the page's view, the visitor's searches and clicks on links out of the site,
  // sent to the site's own `~insights` path. Nothing of the visitor goes with them: no
  // cookie, no identifier, no user agent, language or referrer.
  var body = document.body;
  var endpoint = body && body.getAttribute("data-insights");
  var lastQuery = "";
  function track(type, extra) {
    if (!endpoint || !window.fetch) { return; }
    var d = function (name) { return body.getAttribute("data-" + name) || null; };
    var event = {
      type: type,
      session: {
        visitorId: "", sessionId: "", cookies: {}, userAgent: "", language: null, referrer: null
      },
      location: {
        url: (location.origin + location.pathname).slice(0, 2000),
        siteSection: d("site-section"), siteSpace: d("site-space"), siteShareKey: null,
        space: d("space"), revision: null, page: d("page")
      }
    };
    Object.keys(extra || {}).forEach(function (k) { event[k] = extra[k]; });
    fetch(endpoint, {
      method: "POST",
      keepalive: true,
      credentials: "omit",
      headers: { "Content-Type": "application/json" },
      body: JSON.stringify({ events: [event] })
    }).catch(function () {});
  }
  function trackQuery(q) {
    q = (q || "").trim().slice(0, 200);
    if (q.length < 2 || q === lastQuery) { return; }
    lastQuery = q;
    track("search_type_query", { query: q });
  }
  if (body && body.getAttribute("data-page")) { track("page_view"); }
  if (/~search$/.test(location.pathname) && window.URLSearchParams) {
    trackQuery(new URLSearchParams(location.search).get("q"));
  }
  document.addEventListener("click", function (e) {
    var a = e.target && e.target.closest ? e.target.closest("a[href]") : null;
    if (!a || !/^https?:$/.test(a.protocol) || a.host === location.host) { return; }
    var position = a.closest("header") ? "header"
      : a.closest("footer") ? "footer"
      : a.closest(".sidebar") ? "sidebar" : "content";
    track("link_click", { link: { target: { kind: "url", url: a.href.slice(0, 2000) }, position: position } });
  });
  // Instant search: results as the visitor types, from the site's JSON search. Answers
  // become text nodes only: nothing from them is ever parsed as HTML.
  var form = document.querySelector("form.search");
  var input = form && form.querySelector("input[name=q]");
  if (!form || !input || !window.fetch) { return; }
  var list = document.createElement("ul");
  list.className = "instant";
  list.id = "search-instant";
  list.hidden = true;
  form.appendChild(list);
  var status = document.createElement("p");
  status.className = "skip";
  status.setAttribute("role", "status");
  form.appendChild(status);
  input.setAttribute("aria-controls", list.id);
  var timer = 0;
  var asked = 0;
  function clear() {
    list.textContent = "";
    list.hidden = true;
  }
  function links() { return Array.prototype.slice.call(list.querySelectorAll("a")); }
  // A query counts once the visitor pauses on it.
  var settled = 0;
  input.addEventListener("input", function () {
    clearTimeout(settled);
    settled = setTimeout(function () { trackQuery(input.value); }, 1500);
  });
  input.addEventListener("input", function () {
    clearTimeout(timer);
    timer = setTimeout(function () {
      var q = input.value.trim();
      var ask = ++asked;
      if (q.length < 2) { clear(); status.textContent = ""; return; }
      fetch(form.action + "?format=json&q=" + encodeURIComponent(q), { credentials: "same-origin" })
        .then(function (r) { return r.ok ? r.json() : { items: [] }; })
        .then(function (data) {
          if (ask !== asked) { return; } // an older answer arriving late
          clear();
          var items = Array.isArray(data.items) ? data.items.slice(0, 8) : [];
          items.forEach(function (item) {
            var li = document.createElement("li");
            var a = document.createElement("a");
            a.href = String(item.url || "");
            var title = document.createElement("strong");
            title.textContent = String(item.title || "");
            a.appendChild(title);
            if (item.excerpt) {
              var small = document.createElement("small");
              small.textContent = String(item.excerpt);
              a.appendChild(small);
            }
            li.appendChild(a);
            list.appendChild(li);
          });
          list.hidden = items.length === 0;
          status.textContent = items.length ? items.length + " results" : "No results";
        })
        .catch(function () {});
    }, 150);
  });
  // Keys: Down from the box goes into the results, Up and Down move among them, Escape
  // closes them and returns to the box. Tab reaches them too, as ordinary links.
  form.addEventListener("keydown", function (e) {
    var all = links();
    var at = all.indexOf(document.activeElement);
    if (e.key === "ArrowDown" && all.length) {
      e.preventDefault();
      all[Math.min(at + 1, all.length - 1)].focus();
    } else if (e.key === "ArrowUp" && at >= 0) {
      e.preventDefault();
      if (at === 0) { input.focus(); } else { all[at - 1].focus(); }
    } else if (e.key === "Escape" && !list.hidden) {
      clear();
      input.focus();
    }
  });
})();
