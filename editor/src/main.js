// The Quire editor, loaded by the editing screen alone. The screen's form works without
// script; this layers on it:
// - a source editor (CodeMirror 6) for the markdown dialect: its `{% %}` blocks, frontmatter
//   and inline forms highlighted, blocks folded, an insert menu (the toolbar, or `/` at the
//   start of a line) that writes each block correctly, links to pages picked after `](`;
// - the live preview, rendered by the server as the page will show;
// - the text kept in this browser until the server confirms a save: a reload, a closed tab
//   or a lost connection loses nothing.
// No inline script, no eval (the app's Content-Security-Policy); CodeMirror's styles are
// constructed style sheets, which that policy allows.
import { EditorState, Prec } from "@codemirror/state";
import {
  Decoration,
  EditorView,
  MatchDecorator,
  ViewPlugin,
  drawSelection,
  highlightActiveLine,
  keymap,
  lineNumbers,
} from "@codemirror/view";
import { defaultKeymap, history, historyKeymap, indentWithTab } from "@codemirror/commands";
import { commonmarkLanguage, markdownKeymap, pasteURLAsLink } from "@codemirror/lang-markdown";
import {
  LanguageSupport,
  bracketMatching,
  foldGutter,
  foldKeymap,
  foldService,
  syntaxHighlighting,
  syntaxTree,
} from "@codemirror/language";
import { highlightSelectionMatches, searchKeymap } from "@codemirror/search";
import { classHighlighter } from "@lezer/highlight";
import { completion, match } from "./complete.js";

const form = document.getElementById("editor");
const textarea = document.getElementById("markdown");
const title = document.getElementById("page-title");
const seen = form?.querySelector("input[name=parent]");
const csrf = form?.querySelector("input[name=csrf]");
const preview = document.getElementById("preview");
const status = document.getElementById("draft-status");

/** Blocks of the dialect the insert menu writes: a label, and the text (`|` is the cursor). */
export const BLOCKS = [
  ["Heading", "## |\n"],
  ["Hint", '{% hint style="info" %}\n|\n{% endhint %}\n'],
  ["Tabs", '{% tabs %}\n{% tab title="First" %}\n|\n{% endtab %}\n\n{% tab title="Second" %}\n\n{% endtab %}\n{% endtabs %}\n'],
  ["Stepper", "{% stepper %}\n{% step %}\n### |\n\n{% endstep %}\n{% endstepper %}\n"],
  ["Code", '{% code title="example" %}\n```\n|\n```\n{% endcode %}\n'],
  ["Embed", '{% embed url="https://|" %}\n'],
  ["Page reference", '{% content-ref url="|" %}\n\n{% endcontent-ref %}\n'],
  ["Columns", '{% columns %}\n{% column %}\n|\n{% endcolumn %}\n\n{% column %}\n\n{% endcolumn %}\n{% endcolumns %}\n'],
  ["Condition", "{% if visitor.claims.unsigned.| %}\n\n{% endif %}\n"],
  ["Updates", '{% updates format="full" %}\n{% update date="2026-01-01" %}\n## |\n\n{% endupdate %}\n{% endupdates %}\n'],
  ["Expandable", "<details>\n\n<summary>|</summary>\n\n\n\n</details>\n"],
  ["Table", "| | |\n| - | - |\n| | |\n"],
  ["Quote", "> |\n"],
  ["Math", "$$\n|\n$$\n"],
  ["Divider", "***\n|"],
];

/**
 * Writes the block `template` on a line of its own: in place of `range` (the `/command`
 * typed at the start of a line) when given, else after the selection's line (on it, when
 * it is empty). The cursor lands at the template's `|`.
 */
function insertBlock(view, template, range) {
  const { state } = view;
  let from;
  let to;
  let lead = "";
  if (range) {
    ({ from, to } = range);
  } else {
    const line = state.doc.lineAt(state.selection.main.head);
    from = to = line.length === 0 ? line.from : line.to;
    if (line.length > 0) lead = "\n";
  }
  const text = lead + template.replace("|", "");
  const cursor = from + lead.length + template.indexOf("|");
  view.dispatch({ changes: { from, to, insert: text }, selection: { anchor: cursor }, scrollIntoView: true });
  view.focus();
}

// `{% tag %}` and `{% endtag %}` marked; frontmatter lines marked.
const tagMarks = new MatchDecorator({
  regexp: /\{%-?\s*(end)?[a-z][a-z-]*\b[^%\n]*%\}/g,
  decoration: (m) => Decoration.mark({ class: m[1] ? "cm-gb-tag cm-gb-end" : "cm-gb-tag" }),
});
const dialect = ViewPlugin.fromClass(
  class {
    constructor(view) {
      this.decorations = tagMarks.createDeco(view);
    }
    update(update) {
      this.decorations = tagMarks.updateDeco(update, this.decorations);
    }
  },
  { decorations: (v) => v.decorations },
);
const frontmatterLine = Decoration.line({ class: "cm-gb-frontmatter" });
const frontmatter = ViewPlugin.fromClass(
  class {
    constructor(view) {
      this.decorations = this.build(view.state);
    }
    update(update) {
      if (update.docChanged) this.decorations = this.build(update.state);
    }
    build(state) {
      const doc = state.doc;
      if (doc.lines < 2 || doc.line(1).text !== "---") return Decoration.none;
      // At most 200 lines of frontmatter are looked at.
      for (let n = 2; n <= Math.min(doc.lines, 200); n++) {
        if (doc.line(n).text === "---") {
          const marks = [];
          for (let i = 1; i <= n; i++) marks.push(frontmatterLine.range(doc.line(i).from));
          return Decoration.set(marks);
        }
      }
      return Decoration.none;
    }
  },
  { decorations: (v) => v.decorations },
);

// A `{% tag %}` line folds to its `{% endtag %}` (nested ones of the same tag skipped);
// the search looks at most 5,000 lines ahead.
const blockFolding = foldService.of((state, lineStart) => {
  const line = state.doc.lineAt(lineStart);
  const open = /^\s*\{%-?\s*([a-z][a-z-]*)\b/.exec(line.text);
  if (!open || open[1].startsWith("end")) return null;
  const tag = open[1];
  const opens = new RegExp(`^\\s*\\{%-?\\s*${tag}\\b`);
  const ends = new RegExp(`^\\s*\\{%-?\\s*end${tag}\\b`);
  let depth = 1;
  const last = Math.min(state.doc.lines, line.number + 5000);
  for (let n = line.number + 1; n <= last; n++) {
    const text = state.doc.line(n).text;
    if (opens.test(text)) depth++;
    else if (ends.test(text) && --depth === 0) {
      const end = state.doc.line(n - 1);
      return end.to > line.to ? { from: line.to, to: end.to } : null;
    }
  }
  return null;
});

// The markdown language as `markdown()` of @codemirror/lang-markdown makes it (CommonMark,
// its keymap, a URL pasted over a selection made a link, a heading folding its section),
// built from its parts: `markdown()` also parses HTML in markdown with @codemirror/lang-html,
// which bundles the HTML, CSS and JavaScript grammars (most of the editor's bytes) for what
// the dialect writes as `{% %}` blocks, and offers HTML tags to complete, which the editor's
// completion never asks for. HTML and fenced code stay unhighlighted.
const headingLevel = (node) => {
  const m = /^(?:ATX|Setext)Heading(\d)$/.exec(node.name);
  return m ? Number(m[1]) : null;
};
const headingFolding = foldService.of((state, start, end) => {
  for (let node = syntaxTree(state).resolveInner(end, -1); node; node = node.parent) {
    if (node.from < start) break;
    const level = headingLevel(node);
    if (level == null) continue;
    // The section runs to the next heading of the same level or above.
    let last = node;
    for (let next = last.nextSibling; next; next = next.nextSibling) {
      const heading = headingLevel(next);
      if (heading != null && heading <= level) break;
      last = next;
    }
    if (last.to > end) return { from: end, to: last.to };
  }
  return null;
});
const markdownSupport = () =>
  new LanguageSupport(commonmarkLanguage, [headingFolding, pasteURLAsLink, Prec.high(keymap.of(markdownKeymap))]);

/** Pages of the change request, for links: [{ id, title }]. */
function pages() {
  try {
    return JSON.parse(form.dataset.pages ?? "[]");
  } catch {
    return [];
  }
}

// `/` at the start of a line offers the blocks, best match of what follows first (then in
// alphabetical order); `](` offers the pages to link to, in the space's order, those whose
// address or title holds what follows.
function completions(state, pos) {
  const line = state.doc.lineAt(pos);
  const before = line.text.slice(0, pos - line.from);
  if (/^\/\w*$/.test(before)) {
    const options = [];
    for (const [name, template] of BLOCKS) {
      const label = `/${name.toLowerCase()}`;
      const found = match(label, before, true);
      if (found)
        options.push({
          label,
          detail: name,
          score: found[0],
          marks: found[1],
          apply: (view, from, to) => insertBlock(view, template, { from, to }),
        });
    }
    options.sort((a, b) => b.score - a.score || a.label.localeCompare(b.label));
    return { from: line.from, options };
  }
  const link = /\]\(([^()\s]*)$/.exec(before);
  if (link) {
    const typed = link[1];
    const options = [];
    for (const p of pages()) {
      const label = `/pages/${p.id}`;
      const found = match(label, typed);
      if (found || match(p.title ?? "", typed)) options.push({ label, detail: p.title, type: "text", marks: found?.[1] });
    }
    return { from: pos - typed.length, options };
  }
  return null;
}

/**
 * Uploads `files` (pasted or dropped) into the change request and writes the block that
 * shows each where `at` is; the text is kept meanwhile like any other edit.
 */
async function uploadFiles(view, files, at, say) {
  let pos = at;
  for (const file of files) {
    say(`Uploading ${file.name || "a file"}…`);
    try {
      const url = `${form.dataset.upload}?name=${encodeURIComponent(file.name || "pasted")}`;
      const res = await fetch(url, {
        method: "POST",
        body: file,
        headers: { "X-Quire-CSRF": csrf.value },
        redirect: "manual",
      });
      if (!res.ok) throw new Error(`upload ${res.status}`);
      const made = await res.json();
      const line = view.state.doc.lineAt(Math.min(pos, view.state.doc.length));
      const lead = line.length === 0 ? "" : "\n";
      const from = line.length === 0 ? line.from : line.to;
      const insert = lead + made.markdown;
      view.dispatch({ changes: { from, insert }, selection: { anchor: from + insert.length } });
      pos = from + insert.length;
      say(`${made.name} is a file of this change request.`);
    } catch {
      say(`${file.name || "The file"} could not be uploaded; nothing else was lost.`);
    }
  }
}

function toolbar(view) {
  const bar = document.createElement("div");
  bar.className = "insert-menu";
  bar.setAttribute("role", "toolbar");
  bar.setAttribute("aria-label", "Insert a block");
  for (const [label, template] of BLOCKS) {
    const b = document.createElement("button");
    b.type = "button";
    b.textContent = label;
    b.addEventListener("click", () => insertBlock(view, template));
    bar.append(b);
  }
  // Arrow keys move along the toolbar; Tab leaves it.
  bar.addEventListener("keydown", (e) => {
    if (e.key !== "ArrowRight" && e.key !== "ArrowLeft") return;
    const all = [...bar.querySelectorAll("button")];
    const at = all.indexOf(document.activeElement);
    if (at < 0) return;
    e.preventDefault();
    all[(at + (e.key === "ArrowRight" ? 1 : all.length - 1)) % all.length].focus();
  });
  return bar;
}

if (form && textarea && title && seen && csrf && preview && status) {
  const key = form.dataset.draft;
  const say = (text) => {
    status.textContent = text;
  };
  const kept = () => {
    try {
      return JSON.parse(localStorage.getItem(key) ?? "null");
    } catch {
      return null;
    }
  };
  const keep = (body) => {
    try {
      localStorage.setItem(key, JSON.stringify({ title: title.value, body, parent: seen.value }));
      say("Not saved yet: your text is kept in this browser.");
    } catch {
      say("Not saved yet (this browser cannot keep it: save soon).");
    }
  };

  // Restore what was typed and not saved; it was written against the revision it saw,
  // which the server merges from.
  const draft = kept();
  if (draft && (draft.body !== textarea.value || draft.title !== title.value)) {
    textarea.value = draft.body;
    title.value = draft.title;
    if (draft.parent) seen.value = draft.parent;
    say("Restored text you had not saved (kept in this browser).");
  }

  // The preview follows the text: the server renders it. One request at a time: a change
  // while one is out is sent when it comes back (the newest text then), so an idle editor
  // asks at once and a fast typist never queues requests.
  let inflight = false;
  let pending = false;
  const refresh = async () => {
    if (inflight) {
      pending = true;
      return;
    }
    inflight = true;
    pending = false;
    const body = new URLSearchParams({ csrf: csrf.value, body: textarea.value });
    try {
      const res = await fetch(form.dataset.preview, { method: "POST", body, redirect: "manual" });
      if (!res.ok || res.headers.get("X-Quire-Fragment") !== "preview") throw new Error(`preview ${res.status}`);
      const html = await res.text();
      if (!pending) preview.innerHTML = html;
    } catch {
      say("The preview could not be updated; your text is kept in this browser.");
    } finally {
      inflight = false;
      if (pending) refresh();
    }
  };

  const view = new EditorView({
    state: EditorState.create({
      doc: textarea.value,
      extensions: [
        lineNumbers(),
        foldGutter(),
        history(),
        drawSelection(),
        highlightActiveLine(),
        bracketMatching(),
        highlightSelectionMatches(),
        markdownSupport(),
        // Tokens get `tok-*` classes, coloured by the app's stylesheet for light and dark.
        syntaxHighlighting(classHighlighter),
        dialect,
        frontmatter,
        blockFolding,
        completion(completions),
        EditorView.domEventHandlers({
          paste(event, view) {
            const files = [...(event.clipboardData?.files ?? [])];
            if (!files.length) return false;
            event.preventDefault();
            uploadFiles(view, files, view.state.selection.main.head, say);
            return true;
          },
          drop(event, view) {
            const files = [...(event.dataTransfer?.files ?? [])];
            if (!files.length) return false;
            event.preventDefault();
            const at = view.posAtCoords({ x: event.clientX, y: event.clientY }) ?? view.state.selection.main.head;
            uploadFiles(view, files, at, say);
            return true;
          },
        }),
        EditorView.lineWrapping,
        // The screen's Content-Security-Policy allows the editor's style element by nonce.
        EditorView.cspNonce.of(form.dataset.nonce ?? ""),
        EditorView.contentAttributes.of({ "aria-label": "Markdown of the page", "aria-describedby": "draft-status" }),
        keymap.of([...defaultKeymap, ...historyKeymap, ...foldKeymap, ...searchKeymap, indentWithTab]),
        EditorView.updateListener.of((u) => {
          if (!u.docChanged) return;
          const text = u.state.doc.toString();
          // The form sends the text area: it always holds the editor's text.
          textarea.value = text;
          keep(text);
          refresh();
        }),
      ],
    }),
  });
  textarea.hidden = true;
  textarea.after(toolbar(view), view.dom);
  textarea.labels?.forEach((l) => l.addEventListener("click", () => view.focus()));
  title.addEventListener("input", () => keep(textarea.value));
  if (draft) refresh();
  // Opened at a line (`?line=N`, from a comment on the page): that line is selected, in view.
  const wanted = Number(new URL(location.href).searchParams.get("line"));
  if (Number.isInteger(wanted) && wanted >= 1 && wanted <= view.state.doc.lines) {
    const line = view.state.doc.line(wanted);
    view.dispatch({ selection: { anchor: line.from, head: line.to }, scrollIntoView: true });
    view.focus();
  }
  // For tests and tools: the editor's view.
  form.quireEditor = view;
}
