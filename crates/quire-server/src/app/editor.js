// The Quire editor's script, loaded by the editing screen alone. The form works without it;
// this adds the live preview (rendered by the server, as the page will show) and keeps the
// text in this browser until the server confirms a save: a reload, a closed tab or a lost
// connection loses nothing. No inline script, no eval (the app's Content-Security-Policy).
"use strict";
(() => {
  const form = document.getElementById("editor");
  const source = document.getElementById("markdown");
  const title = document.getElementById("page-title");
  const seen = form?.querySelector("input[name=parent]");
  const csrf = form?.querySelector("input[name=csrf]");
  const preview = document.getElementById("preview");
  const status = document.getElementById("draft-status");
  if (!form || !source || !title || !seen || !csrf || !preview || !status) return;
  const key = form.dataset.draft;

  const say = (text) => {
    status.textContent = text;
  };

  // Text not yet saved, as kept in this browser: { title, body, parent }.
  const kept = () => {
    try {
      return JSON.parse(localStorage.getItem(key) ?? "null");
    } catch {
      return null;
    }
  };
  const keep = () => {
    try {
      localStorage.setItem(key, JSON.stringify({ title: title.value, body: source.value, parent: seen.value }));
      say("Not saved yet: your text is kept in this browser.");
    } catch {
      say("Not saved yet (this browser cannot keep it: save soon).");
    }
  };

  // Restore what was typed and not saved; it was written against the revision it saw,
  // which the server merges from.
  const draft = kept();
  if (draft && (draft.body !== source.value || draft.title !== title.value)) {
    source.value = draft.body;
    title.value = draft.title;
    if (draft.parent) seen.value = draft.parent;
    say("Restored text you had not saved (kept in this browser).");
  }

  // The preview follows the text: the server renders it, the newest answer wins.
  let asked = 0;
  let timer;
  const refresh = async () => {
    const n = ++asked;
    const body = new URLSearchParams({ csrf: csrf.value, body: source.value });
    try {
      const res = await fetch(form.dataset.preview, { method: "POST", body, redirect: "manual" });
      if (!res.ok || res.headers.get("X-Quire-Fragment") !== "preview") throw new Error(`preview ${res.status}`);
      const html = await res.text();
      if (n === asked) preview.innerHTML = html;
    } catch {
      if (n === asked) say("The preview could not be updated; your text is kept in this browser.");
    }
  };
  const changed = () => {
    keep();
    clearTimeout(timer);
    timer = setTimeout(refresh, 200);
  };
  source.addEventListener("input", changed);
  title.addEventListener("input", keep);
  if (draft) refresh();

  // The editor's API for the source editor layered on the text area.
  window.quireEditor = { changed };
})();
