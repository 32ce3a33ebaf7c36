// The Quire app's script: enhancements only, every screen works without it. Search as one
// types, over results the server renders (this script only swaps them in), and keys to
// reach them; Ctrl+K to the quick find; pages dragged in a change request's page tree; the editor's grid of icons.
// No inline script, no eval: the app's Content-Security-Policy allows neither.
"use strict";
// A save the server confirmed (the editor sends the browser to `#saved:{pageId}` of its
// change request): the text kept in this browser for it is no longer needed.
(() => {
  const saved = location.hash.match(/^#saved:(.+)$/);
  const at = location.pathname.match(/^\/s\/([^/]+)\/~\/changes\/(\d+)$/);
  if (!saved || !at) return;
  try {
    localStorage.removeItem(`quire-draft:${at[1]}:${at[2]}:${decodeURIComponent(saved[1])}`);
  } catch {
    // Nothing was kept.
  }
})();
(() => {
  // "/" anywhere but in a field focuses the page's search box (the main one first).
  const searchBox = () =>
    document.querySelector("main input[type=search]") ?? document.querySelector("input[type=search]");
  for (const box of document.querySelectorAll("input[type=search]")) {
    box.setAttribute("aria-keyshortcuts", "/");
  }
  // The quick find opens ready for typing.
  if (location.pathname === "/find" && !new URLSearchParams(location.search).get("q")) searchBox()?.focus();
  // Ctrl+K (⌘K) anywhere opens the quick find, or focuses its box when already there.
  document.addEventListener("keydown", (e) => {
    if (e.key.toLowerCase() !== "k" || !(e.ctrlKey || e.metaKey) || e.altKey || e.shiftKey) return;
    if (e.defaultPrevented) return;
    e.preventDefault();
    if (location.pathname === "/find") {
      searchBox()?.focus();
    } else {
      location.assign("/find");
    }
  });
  document.addEventListener("keydown", (e) => {
    if (e.key !== "/" || e.ctrlKey || e.metaKey || e.altKey || e.defaultPrevented) return;
    const t = e.target;
    if (t instanceof Element && (t.matches("input, textarea, select") || t.isContentEditable)) return;
    const box = searchBox();
    if (!box) return;
    e.preventDefault();
    box.focus();
    box.select();
  });

  // Search as one types: the screen's form (marked data-live) asks its own screen for the
  // results region only; the answer's parts replace the page's parts of the same id.
  const form = document.querySelector("form[data-live]");
  const input = form?.querySelector("input[name=q]");
  const status = document.getElementById("search-status");
  const results = document.getElementById("search-results");
  if (!input || !status || !results || !window.AbortController) return;

  const hint = document.createElement("p");
  hint.id = "search-hint";
  hint.className = "muted";
  hint.textContent = "Results follow your typing: Down arrow moves through them, Escape comes back here.";
  form.after(hint);
  input.setAttribute("aria-describedby", hint.id);
  input.setAttribute("aria-controls", results.id);

  let shown = input.value.trim(); // the query the results on screen answer
  let asked; // the request in flight: { q, controller, done }
  let timer;

  const fetchRegion = async (q, signal) => {
    const url = new URL(form.action);
    if (q) url.searchParams.set("q", input.value);
    try {
      // A lapsed session is sent to sign in: that page must not be swapped in.
      const res = await fetch(url, { headers: { "X-Quire-Fragment": "results" }, redirect: "manual", signal });
      if (!res.ok || res.headers.get("X-Quire-Fragment") !== "results") throw new Error(`search answered ${res.status}`);
      const parts = document.createElement("template");
      parts.innerHTML = await res.text();
      if (signal.aborted) return;
      const focused = results.contains(document.activeElement);
      for (const here of [status, results]) {
        const part = parts.content.getElementById(here.id);
        if (part) here.replaceChildren(...part.childNodes);
      }
      if (focused) input.focus();
      shown = q;
      // Reload, back and a shared link show the same results.
      history.replaceState(history.state, "", url.pathname + url.search);
    } catch {
      // An older query's answer, or a failure: the results on screen stay, but no longer
      // answer a known query (the same one asked again is fetched again).
      if (signal.aborted) return;
      status.textContent = "The results could not be updated. Press Enter to search.";
      shown = null;
    }
  };

  // Asks for the current query's results, unless they are shown or on their way; any
  // older request is aborted, so that its answer can never replace newer results.
  const update = () => {
    const q = input.value.trim();
    if (asked?.q === q) return asked.done;
    asked?.controller.abort();
    asked = undefined;
    if (q === shown) return Promise.resolve();
    const controller = new AbortController();
    const done = fetchRegion(q, controller.signal).finally(() => {
      if (asked?.controller === controller) asked = undefined;
    });
    asked = { q, controller, done };
    return done;
  };

  input.addEventListener("input", () => {
    clearTimeout(timer);
    timer = setTimeout(update, 150);
  });
  form.addEventListener("submit", () => {
    clearTimeout(timer);
    asked?.controller.abort();
  });

  // Down arrow from the box goes to the first result (once the results are the query's);
  // in the results, the arrows move between their links, Escape comes back to the box.
  const links = () => [...results.querySelectorAll("a[href]")];
  input.addEventListener("keydown", async (e) => {
    if (e.key !== "ArrowDown" || e.altKey || e.ctrlKey || e.metaKey) return;
    e.preventDefault();
    clearTimeout(timer);
    await update();
    links()[0]?.focus();
  });
  results.addEventListener("keydown", (e) => {
    if (e.altKey || e.ctrlKey || e.metaKey || e.shiftKey) return;
    const all = links();
    const at = all.indexOf(document.activeElement);
    if (at < 0) return;
    const to = { ArrowDown: Math.min(at + 1, all.length - 1), ArrowUp: at - 1, Escape: -1 }[e.key];
    if (to === undefined) return;
    e.preventDefault();
    (all[to] ?? input).focus();
  });
})();
(() => {
  // The page tree of a change request: a page dragged onto another goes before it (upper
  // quarter), after it (lower quarter) or into it (between). The drop sends the tree's own
  // form (op=drop); the arrows beside each page do the same from the keyboard.
  const tree = document.querySelector("section.tree");
  const base = tree?.querySelector("form.moves");
  if (!base) return;
  let dragged;
  const rowOf = (e) => e.target instanceof Element && e.target.closest("li[data-page]");
  const placeOf = (row, y) => {
    const handle = row.querySelector(":scope > a, :scope > span") ?? row;
    const r = handle.getBoundingClientRect();
    const at = (y - r.top) / Math.max(r.height, 1);
    return at < 0.25 ? "before" : at > 0.75 ? "after" : "into";
  };
  const clear = () => {
    for (const row of tree.querySelectorAll(".drop-before, .drop-after, .drop-into")) {
      row.classList.remove("drop-before", "drop-after", "drop-into");
    }
  };
  for (const handle of tree.querySelectorAll("li[data-page] > a, li[data-page] > span")) {
    handle.draggable = true;
    handle.classList.add("handle");
  }
  tree.addEventListener("dragstart", (e) => {
    const row = rowOf(e);
    if (!row) return;
    dragged = row.dataset.page;
    e.dataTransfer?.setData("text/plain", dragged);
    if (e.dataTransfer) e.dataTransfer.effectAllowed = "move";
  });
  tree.addEventListener("dragover", (e) => {
    const row = rowOf(e);
    if (!row || !dragged || row.dataset.page === dragged) return;
    e.preventDefault();
    clear();
    row.classList.add(`drop-${placeOf(row, e.clientY)}`);
  });
  tree.addEventListener("dragleave", clear);
  tree.addEventListener("dragend", () => {
    clear();
    dragged = undefined;
  });
  tree.addEventListener("drop", (e) => {
    const row = rowOf(e);
    if (!row || !dragged || row.dataset.page === dragged) return;
    e.preventDefault();
    clear();
    const form = document.createElement("form");
    form.method = "post";
    form.action = base.action;
    form.hidden = true;
    const fields = {
      csrf: base.querySelector("input[name=csrf]").value,
      op: "drop",
      page: dragged,
      item: row.dataset.page,
      place: placeOf(row, e.clientY),
    };
    for (const [name, value] of Object.entries(fields)) {
      const input = document.createElement("input");
      input.type = "hidden";
      input.name = name;
      input.value = value;
      form.append(input);
    }
    document.body.append(form);
    form.submit();
  });
})();
(() => {
  // The editor's icon setting: the offered icons as a grid (rendered hidden, for script to
  // show); a click sets the icon field (again: clears it), the field's value marks its icon.
  const picker = document.querySelector(".icon-picker");
  const field = document.getElementById("page-icon");
  if (!picker || !field) return;
  const mark = () => {
    for (const b of picker.querySelectorAll("button[data-icon]")) {
      b.setAttribute("aria-pressed", String(b.dataset.icon === field.value.trim()));
    }
  };
  picker.hidden = false;
  mark();
  picker.addEventListener("click", (e) => {
    const b = e.target instanceof Element && e.target.closest("button[data-icon]");
    if (!b) return;
    field.value = b.getAttribute("aria-pressed") === "true" ? "" : b.dataset.icon;
    field.dispatchEvent(new Event("input", { bubbles: true }));
    mark();
  });
  field.addEventListener("input", mark);
})();
