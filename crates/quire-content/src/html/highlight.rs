//! Server-side syntax highlighting of code blocks into class-based spans.
//!
//! Highlighting uses `syntect` (Sublime Text grammars): its grammars and themes are built into
//! the binary, it runs on pure-Rust regexes (`fancy-regex`, no C toolchain) and emits CSS
//! classes instead of inline styles, so light and dark themes are plain CSS.

use std::sync::OnceLock;

use syntect::html::{css_for_theme_with_class_style, ClassStyle};
use syntect::parsing::{BasicScopeStackOp, ParseState, Scope, ScopeStack, SyntaxSet};

use super::escape_text_into;

/// Prefix of every highlight class, so that grammar scope names cannot clash with the
/// page's own classes.
const CLASS_PREFIX: &str = "hl-";

/// Code longer than this (bytes) is not highlighted: grammars run regexes per line and the
/// work must stay bounded for hostile input.
pub const MAX_HIGHLIGHT_BYTES: usize = 256 * 1024;

/// A line longer than this (bytes) turns highlighting off for its block: some grammars are
/// quadratic in the length of a line.
const MAX_HIGHLIGHT_LINE: usize = 16 * 1024;

/// The grammars, decoded once, on first use.
fn syntaxes() -> &'static SyntaxSet {
    static SET: OnceLock<SyntaxSet> = OnceLock::new();
    SET.get_or_init(SyntaxSet::load_defaults_newlines)
}

/// The grammar for a code block's `syntax` (a name or a file extension, any case).
fn find_syntax(
    set: &'static SyntaxSet,
    lang: &str,
) -> Option<&'static syntect::parsing::SyntaxReference> {
    let lang = lang.trim();
    if lang.is_empty() {
        return None;
    }
    let lower = lang.to_ascii_lowercase();
    // Common names the built-in grammars know under another token.
    let token = match lower.as_str() {
        "sh" | "shell" | "zsh" | "console" => "bash",
        "javascript" | "jsx" | "ts" | "typescript" | "tsx" | "json5" => "js",
        "python3" => "py",
        "c++" | "cplusplus" => "cpp",
        "golang" => "go",
        other => other,
    };
    set.find_syntax_by_token(token)
}

/// Highlights `lines` (without their line ends) as `lang`: one HTML string per line, every
/// span opened on a line closed on it (so that lines can be wrapped on their own).
/// `None` when the language is unknown, the code too large, or the grammar fails; the
/// caller then writes the lines as escaped text.
pub(super) fn highlight_lines(lang: &str, lines: &[String]) -> Option<Vec<String>> {
    let total: usize = lines.iter().map(|l| l.len() + 1).sum();
    if total > MAX_HIGHLIGHT_BYTES || lines.iter().any(|l| l.len() > MAX_HIGHLIGHT_LINE) {
        return None;
    }
    let set = syntaxes();
    let syntax = find_syntax(set, lang)?;
    let mut state = ParseState::new(syntax);
    let mut stack = ScopeStack::new();
    let mut out = Vec::with_capacity(lines.len());
    let mut line_buf = String::new();
    for line in lines {
        line_buf.clear();
        line_buf.push_str(line);
        line_buf.push('\n');
        let ops = state.parse_line(&line_buf, set).ok()?;
        let mut html = String::with_capacity(line.len() * 2);
        // Spans still open from the previous line are opened again.
        // Where each open span starts and where its opening tag ends.
        let mut spans: Vec<(usize, usize)> = Vec::new();
        for scope in stack.as_slice() {
            let start = html.len();
            open_span(&mut html, *scope);
            spans.push((start, html.len()));
        }
        let mut at = 0;
        for (pos, op) in &ops {
            let pos = (*pos).min(line.len());
            if pos > at {
                escape_text_into(&mut html, line.get(at..pos)?);
                at = pos;
            }
            let mut failed = false;
            stack
                .apply_with_hook(op, |basic, _| match basic {
                    BasicScopeStackOp::Push(scope) => {
                        let start = html.len();
                        open_span(&mut html, scope);
                        spans.push((start, html.len()));
                    }
                    BasicScopeStackOp::Pop => match spans.pop() {
                        // A span with nothing in it is dropped.
                        Some((start, end)) if html.len() == end => html.truncate(start),
                        Some(_) => html.push_str("</span>"),
                        None => failed = true,
                    },
                })
                .ok()?;
            if failed {
                return None;
            }
        }
        if at < line.len() {
            escape_text_into(&mut html, line.get(at..)?);
        }
        while let Some((start, end)) = spans.pop() {
            if html.len() == end {
                html.truncate(start);
            } else {
                html.push_str("</span>");
            }
        }
        out.push(html);
    }
    Some(out)
}

fn open_span(html: &mut String, scope: Scope) {
    html.push_str("<span class=\"");
    let name = scope.build_string();
    for (i, atom) in name.split('.').enumerate() {
        if i > 0 {
            html.push(' ');
        }
        html.push_str(CLASS_PREFIX);
        // Atoms come from the built-in grammars; escaped all the same.
        escape_text_into(html, atom);
    }
    html.push_str("\">");
}

/// The CSS of the highlight classes: a light theme, and a dark one under
/// `prefers-color-scheme: dark`. Computed once.
pub fn highlight_css() -> &'static str {
    static CSS: OnceLock<String> = OnceLock::new();
    CSS.get_or_init(|| {
        let themes = syntect::highlighting::ThemeSet::load_defaults();
        let style = ClassStyle::SpacedPrefixed {
            prefix: CLASS_PREFIX,
        };
        let css = |name: &str| {
            themes
                .themes
                .get(name)
                .and_then(|t| css_for_theme_with_class_style(t, style).ok())
                .map(|css| without_comments(&css))
                .unwrap_or_default()
        };
        let light = css("InspiredGitHub");
        let dark = css("base16-ocean.dark");
        format!("{light}\n@media (prefers-color-scheme: dark) {{\n{dark}\n}}\n")
    })
}

/// CSS without its comments (the generator's banner).
fn without_comments(css: &str) -> String {
    let mut out = String::with_capacity(css.len());
    let mut rest = css;
    while let Some(i) = rest.find("/*") {
        out.push_str(&rest[..i]);
        match rest[i..].find("*/") {
            Some(j) => rest = &rest[i + j + 2..],
            None => rest = "",
        }
    }
    out.push_str(rest);
    out.trim_start().to_string()
}
