// The editor's completion popup (the insert menu after `/`, pages after `](`): what the
// editor used of @codemirror/autocomplete, at a fraction of its bytes (that package and the
// tooltips of @codemirror/view it draws with were 12 KB of the gzipped bundle). Its markup,
// classes and keys are @codemirror/autocomplete's: a `cm-tooltip-autocomplete` holding a
// `role="listbox"` of `role="option"` items, the chosen one `aria-selected`, the editor's
// content naming the list (`aria-controls`) and the chosen option (`aria-activedescendant`)
// while it is open. It opens as text is typed (or on Ctrl-Space); ArrowUp/ArrowDown and
// PageUp/PageDown move, Enter or Tab (or a click) accepts, Escape closes it, as do moving
// the cursor and leaving the editor.
import { Prec, StateEffect, StateField } from "@codemirror/state";
import { EditorView, ViewPlugin, keymap } from "@codemirror/view";
import elt from "crelt";

/**
 * Where `query` occurs in `label`, case aside: `[score, [from, to, …]]` (0 at its start, -1
 * further on; with `fuzzy`, -2 for its letters in order, from three of them on), or null.
 */
export function match(label, query, fuzzy) {
  const text = label.toLowerCase();
  const q = query.toLowerCase();
  let at = text.indexOf(q);
  if (at >= 0) return [at ? -1 : 0, q ? [at, at + q.length] : []];
  if (!fuzzy || q.length < 3) return null;
  const marks = [];
  at = 0;
  for (const ch of q) {
    at = text.indexOf(ch, at);
    if (at < 0) return null;
    marks.push(at, ++at);
  }
  return [-2, marks];
}

/**
 * At most this many options are in the list at once: a window that follows the chosen one,
 * so that the list never scrolls (a scrolling region the keyboard cannot focus, as the
 * focus stays in the editor); each option says its place among all (`aria-posinset`).
 */
const SHOWN = 8;

/**
 * The popup for `source(state, pos)`: null, or `{ from, options }` where each option is
 * `{ label, detail?, type?, marks?, apply?(view, from, to) }` (`marks`: the `[from, to, …]`
 * of `label` to underline; without `apply` the option's label replaces from `from` to the
 * cursor).
 */
export function completion(source) {
  const id = `cm-ac-${Math.floor(Math.random() * 2e6).toString(36)}`;
  // An option's index to choose it, null to close, true to open (Ctrl-Space).
  const act = StateEffect.define();
  // Asks `source`; keeps the chosen option chosen if it is still offered.
  const ask = (state, prev) => {
    const pos = state.selection.main.head;
    const found = source(state, pos);
    if (!found?.options.length) return null;
    const { from, options } = found;
    const was = prev?.selected && prev.options[prev.selected].label;
    return {
      from,
      to: pos,
      options,
      selected: Math.max(0, options.findIndex((o) => o.label === was)),
      time: prev ? prev.time : Date.now(),
    };
  };
  const field = StateField.define({
    create: () => null,
    update(open, tr) {
      for (const e of tr.effects) {
        if (!e.is(act)) continue;
        if (e.value === true) return ask(tr.state, open);
        if (e.value === null) return null;
        if (open) open = { ...open, selected: e.value };
      }
      if (tr.isUserEvent("input.type") || (open && tr.isUserEvent("delete.backward"))) return ask(tr.state, open);
      // Moving the cursor, or a change to the text completed, closes it.
      if (!open || tr.selection || tr.changes.touchesRange(open.from, open.to)) return null;
      return tr.docChanged ? { ...open, from: tr.changes.mapPos(open.from), to: tr.changes.mapPos(open.to, 1) } : open;
    },
    provide: (f) => [
      EditorView.contentAttributes.from(f, (open) =>
        open
          ? {
              "aria-autocomplete": "list",
              "aria-haspopup": "listbox",
              "aria-controls": id,
              "aria-activedescendant": `${id}-${open.selected}`,
            }
          : { "aria-autocomplete": "list" },
      ),
    ],
  });

  const accept = (view, i) => {
    const { from, to, options } = view.state.field(field);
    const option = options[i];
    if (option.apply) option.apply(view, from, to);
    else
      view.dispatch({
        changes: { from, to, insert: option.label },
        selection: { anchor: from + option.label.length },
        scrollIntoView: true,
        userEvent: "input.complete",
      });
    return true;
  };

  // The list, in the editor's element: built for each new answer of the source (SHOWN
  // options of it, around the chosen one), its chosen option marked and scrolled to.
  const popup = ViewPlugin.define((view) => {
    const list = elt("ul", { id, role: "listbox", "aria-expanded": "true", "aria-label": "Completions" });
    // Where the window is among all the options, for the eye (the options say it to
    // assistive technology).
    const count = elt("div", { class: "cm-completionCount", "aria-hidden": "true" });
    const dom = elt("div", { class: "cm-tooltip cm-tooltip-autocomplete" }, list, count);
    let shown;
    let first;
    // Like a tooltip of @codemirror/view: at the start of the text it completes, below its
    // line or above it when the window has no room below, within the window's width; hidden
    // while that text is scrolled out of the editor.
    const place = {
      read() {
        const open = view.state.field(field);
        const at = open && view.coordsAtPos(open.from);
        const [box, seen] = [view.dom, view.scrollDOM].map((e) => e.getBoundingClientRect());
        const high = dom.offsetHeight;
        if (!at || at.bottom <= seen.top || at.top >= seen.bottom) return null;
        return {
          left: Math.max(0, Math.min(at.left, innerWidth - dom.offsetWidth)) - box.left - view.dom.clientLeft,
          top: (at.bottom + high > innerHeight && at.top > high ? at.top - high : at.bottom) - box.top - view.dom.clientTop,
        };
      },
      write(pos) {
        dom.style.cssText = pos ? `left:${pos.left}px;top:${pos.top}px` : "visibility:hidden";
      },
    };
    const draw = (open) => {
      if (!open) return dom.remove();
      const { options, selected } = open;
      if (!dom.isConnected) view.dom.append(dom);
      if (options !== shown || selected < first || selected >= first + SHOWN) {
        first = options !== shown ? Math.max(0, Math.min(selected, options.length - SHOWN)) : selected < first ? selected : selected - SHOWN + 1;
        shown = options;
        count.textContent = options.length > SHOWN ? `${first + 1}–${Math.min(first + SHOWN, options.length)} of ${options.length}` : "";
        list.replaceChildren(
          ...options.slice(first, first + SHOWN).map((o, n) => {
            const { label, marks = [] } = o;
            const parts = [];
            let at = 0;
            for (let i = 0; i < marks.length; i += 2)
              parts.push(label.slice(at, marks[i]), elt("span", { class: "cm-completionMatchedText" }, label.slice(marks[i], (at = marks[i + 1]))));
            parts.push(label.slice(at));
            return elt(
              "li",
              { id: `${id}-${first + n}`, role: "option", "aria-posinset": String(first + n + 1), "aria-setsize": String(options.length) },
              elt("div", { class: o.type ? `cm-completionIcon cm-completionIcon-${o.type}` : "cm-completionIcon", "aria-hidden": "true" }),
              elt("span", { class: "cm-completionLabel" }, parts),
              o.detail ? elt("span", { class: "cm-completionDetail" }, o.detail) : null,
            );
          }),
        );
      }
      for (const item of list.children)
        if (item.id !== `${id}-${selected}`) item.removeAttribute("aria-selected");
        else item.setAttribute("aria-selected", "true");
      view.requestMeasure(place);
    };
    // A click chooses; the editor keeps the focus.
    dom.addEventListener("mousedown", (e) => {
      e.preventDefault();
      const item = e.target.closest("li");
      if (item) accept(view, +item.id.slice(id.length + 1));
    });
    // The text scrolls under it: it follows.
    view.scrollDOM.addEventListener("scroll", () => view.state.field(field) && view.requestMeasure(place));
    return {
      update(u) {
        const open = u.state.field(field);
        if (open !== u.startState.field(field)) draw(open);
        else if (open && u.geometryChanged) view.requestMeasure(place);
      },
      destroy: () => dom.remove(),
    };
  });

  // Keys act on the list after its first 75 ms (an Enter typed right after `/` is not a choice).
  const when = (run) => (view) => {
    const open = view.state.field(field);
    return !!open && Date.now() - open.time >= 75 && run(view, open);
  };
  const move = (by, page) =>
    when((view, { options, selected }) => {
      const last = options.length - 1;
      let to = selected + by;
      if (page) to = Math.min(Math.max(to, 0), last);
      else to = to < 0 ? last : to > last ? 0 : to;
      view.dispatch({ effects: act.of(to) });
      return true;
    });
  const start = (view) => {
    view.dispatch({ effects: act.of(true) });
    return true;
  };
  const choose = when((view, open) => accept(view, open.selected));
  return [
    field,
    popup,
    Prec.highest(
      keymap.of([
        { key: "Ctrl-Space", run: start },
        { mac: "Alt-`", run: start },
        { mac: "Alt-i", run: start },
        { key: "Escape", run: (view) => !!view.state.field(field) && (view.dispatch({ effects: act.of(null) }), true) },
        { key: "ArrowDown", run: move(1) },
        { key: "ArrowUp", run: move(-1) },
        { key: "PageDown", run: move(6, true) },
        { key: "PageUp", run: move(-6, true) },
        { key: "Enter", run: choose },
        { key: "Tab", run: choose },
      ]),
    ),
    EditorView.domEventHandlers({
      blur(_e, view) {
        if (view.state.field(field)) setTimeout(() => view.dispatch({ effects: act.of(null) }), 10);
      },
    }),
    // The look of @codemirror/autocomplete's list; the app's stylesheet colours the tooltip
    // and the chosen option.
    EditorView.baseTheme({
      ".cm-tooltip-autocomplete": { position: "absolute" },
      ".cm-tooltip-autocomplete > ul": {
        fontFamily: "monospace",
        whiteSpace: "nowrap",
        overflow: "hidden",
        maxWidth: "min(700px, 95vw)",
        minWidth: "250px",
        listStyle: "none",
        margin: 0,
        padding: 0,
        "& > li": { padding: "1px 3px", lineHeight: 1.2, overflowX: "hidden", textOverflow: "ellipsis", cursor: "pointer" },
      },
      ".cm-completionMatchedText": { textDecoration: "underline" },
      ".cm-completionCount": { fontSize: "80%", padding: "0 3px", opacity: 0.7 },
      ".cm-completionCount:empty": { display: "none" },
      ".cm-completionDetail": { marginLeft: "0.5em", fontStyle: "italic" },
      ".cm-completionIcon": {
        fontSize: "90%",
        width: ".8em",
        display: "inline-block",
        textAlign: "center",
        paddingRight: ".6em",
        opacity: "0.6",
        boxSizing: "content-box",
      },
      ".cm-completionIcon-text:after": { content: "'abc'", fontSize: "50%", verticalAlign: "middle" },
    }),
  ];
}
