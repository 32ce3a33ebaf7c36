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
    buttons.forEach(function (button) {
      button.addEventListener("click", function (e) {
        e.preventDefault();
        select(button);
      });
    });
    if (buttons.length) { select(group.querySelector("[aria-selected=true]") || buttons[0]); }
  });
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
  // Instant search: results as the visitor types, from the site's JSON search.
  var form = document.querySelector("form.search");
  var input = form && form.querySelector("input[name=q]");
  if (!form || !input || !window.fetch) { return; }
  var list = document.createElement("ul");
  list.className = "instant results";
  list.setAttribute("aria-live", "polite");
  form.appendChild(list);
  var timer = 0;
  input.addEventListener("input", function () {
    clearTimeout(timer);
    timer = setTimeout(function () {
      var q = input.value.trim();
      list.textContent = "";
      if (q.length < 2) { return; }
      fetch(form.action + "?format=json&q=" + encodeURIComponent(q))
        .then(function (r) { return r.ok ? r.json() : { items: [] }; })
        .then(function (data) {
          list.textContent = "";
          (data.items || []).slice(0, 8).forEach(function (item) {
            var li = document.createElement("li");
            var a = document.createElement("a");
            a.href = item.url;
            a.textContent = item.title;
            li.appendChild(a);
            list.appendChild(li);
          });
        })
        .catch(function () {});
    }, 150);
  });
})();
