//! Server-side syntax highlighting of code blocks into class-based spans.
//!
//! Highlighting uses `syntect` (Sublime Text grammars): its grammars and themes are built into
//! the binary and it emits CSS classes instead of inline styles, so light and dark themes are
//! plain CSS. Its regexes run on Oniguruma (`regex-onig`, built from source by `cc`), not
//! `fancy-regex`: a grammar's first use compiles its patterns, and measured on the built-in
//! grammars Oniguruma does that about ten times faster in a sixth of the memory (Rust:
//! 2 ms and 1 MB against 25 ms and 7 MB), which is what a first page render after a restart
//! waits on.

use std::collections::HashMap;
use std::fmt::Write;
use std::sync::OnceLock;

use syntect::html::{css_for_theme_with_class_style, ClassStyle};
use syntect::parsing::{ParseState, Scope, ScopeStack, SyntaxSet};

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

/// Highlights `lines` (without their line ends) as `lang`: one HTML string per line.
///
/// Tokens get flat spans, not the grammar's nested scopes: each run of text has one span
/// with the first atoms of its innermost meaningful scope (`meta.*`, `source.*`, `text.*`
/// and `punctuation.*` scopes group tokens and seldom carry a colour of their own: a
/// string's quotes take the string's), without the language atom, and neighbouring runs
/// with the same classes share it. Nested scopes re-opened on every line made the HTML
/// some forty times the size of the code; this keeps it near ten for dense code.
/// A theme's single-scope rules still match, since every atom is a class.
///
/// `None` when the language is unknown, the code too large, or the grammar fails; the
/// caller then writes the lines as escaped text.
pub(super) fn highlight_lines(lang: &str, lines: &[String]) -> Option<Vec<String>> {
    let total: usize = lines.iter().map(|l| l.len() + 1).sum();
    if total > MAX_HIGHLIGHT_BYTES || lines.iter().any(|l| l.len() > MAX_HIGHLIGHT_LINE) {
        return None;
    }
    let set = syntaxes();
    let syntax = find_syntax(set, lang)?;
    let language = syntax.scope.build_string();
    let language = language.rsplit('.').next().unwrap_or("").to_string();
    let mut classes: HashMap<Scope, Option<String>> = HashMap::new();
    let mut state = ParseState::new(syntax);
    let mut stack = ScopeStack::new();
    let mut out = Vec::with_capacity(lines.len());
    let mut line_buf = String::new();
    for line in lines {
        line_buf.clear();
        line_buf.push_str(line);
        line_buf.push('\n');
        let ops = state.parse_line(&line_buf, set).ok()?;
        let mut html = String::with_capacity(line.len() * 3);
        let mut open: Option<String> = None;
        let mut at = 0;
        let emit =
            |html: &mut String, open: &mut Option<String>, class: Option<String>, text: &str| {
                if *open != class {
                    if open.is_some() {
                        html.push_str("</span>");
                    }
                    if let Some(c) = &class {
                        html.push_str("<span class=\"");
                        html.push_str(c);
                        html.push_str("\">");
                    }
                    *open = class;
                }
                escape_text_into(html, text);
            };
        for (pos, op) in &ops {
            let pos = (*pos).min(line.len());
            if pos > at {
                let class = token_class(&stack, &mut classes, &language);
                emit(&mut html, &mut open, class, line.get(at..pos)?);
                at = pos;
            }
            stack.apply(op).ok()?;
        }
        if at < line.len() {
            let class = token_class(&stack, &mut classes, &language);
            emit(&mut html, &mut open, class, line.get(at..)?);
        }
        if open.is_some() {
            html.push_str("</span>");
        }
        out.push(html);
    }
    Some(out)
}

/// The classes of text under `stack`: its innermost scope that is not `meta`, `source` or
/// `text`, as prefixed atoms without the language; `None` for uncoloured text.
fn token_class(
    stack: &ScopeStack,
    cache: &mut HashMap<Scope, Option<String>>,
    language: &str,
) -> Option<String> {
    for scope in stack.as_slice().iter().rev() {
        let class = cache
            .entry(*scope)
            .or_insert_with(|| scope_class(*scope, language));
        if class.is_some() {
            return class.clone();
        }
    }
    None
}

fn scope_class(scope: Scope, language: &str) -> Option<String> {
    let name = scope.build_string();
    let mut atoms: Vec<&str> = name.split('.').collect();
    if matches!(
        atoms.first(),
        Some(&"meta" | &"source" | &"text" | &"punctuation")
    ) {
        return None;
    }
    if atoms.len() > 1 && atoms.last() == Some(&language) {
        atoms.pop();
    }
    // Themes select on the first atoms; deeper ones only lengthen every span.
    atoms.truncate(3);
    let mut class = String::new();
    for (i, atom) in atoms.iter().enumerate() {
        if i > 0 {
            class.push(' ');
        }
        class.push_str(CLASS_PREFIX);
        // Atoms come from the built-in grammars; escaped all the same.
        escape_text_into(&mut class, atom);
    }
    Some(class)
}

/// The CSS of the highlight classes: a light theme under `prefers-color-scheme: light`
/// (which also holds without any preference), and a dark one under
/// `prefers-color-scheme: dark`, every colour legible on its background. Computed once.
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
        let light = readable(&css("InspiredGitHub"), &LIGHT_BACKGROUNDS, 0);
        let dark = readable(&css("base16-ocean.dark"), &DARK_BACKGROUNDS, 255);
        // Each theme under its own query, so that a token only the light theme colours
        // keeps no light colour in the dark.
        format!(
            "@media (prefers-color-scheme: light) {{\n{light}\n}}\n\
             @media (prefers-color-scheme: dark) {{\n{dark}\n}}\n"
        )
    })
}

/// The backgrounds code is shown on in the light theme: the theme's own and the sites'.
const LIGHT_BACKGROUNDS: [[u8; 3]; 2] = [[0xff, 0xff, 0xff], [0xf5, 0xf6, 0xf8]];

/// The same in the dark theme.
const DARK_BACKGROUNDS: [[u8; 3]; 2] = [[0x2b, 0x30, 0x3b], [0x1e, 0x21, 0x27]];

/// The contrast every token colour keeps with every background: WCAG's 4.5 for text, and a
/// little more for rounding.
const MIN_CONTRAST: f64 = 4.6;

/// WCAG's relative luminance of an sRGB colour.
fn luminance(c: [u8; 3]) -> f64 {
    let channel = |v: u8| {
        let v = f64::from(v) / 255.0;
        if v <= 0.039_28 {
            v / 12.92
        } else {
            ((v + 0.055) / 1.055).powf(2.4)
        }
    };
    0.2126 * channel(c[0]) + 0.7152 * channel(c[1]) + 0.0722 * channel(c[2])
}

/// WCAG's contrast ratio of two colours.
pub(super) fn contrast(a: [u8; 3], b: [u8; 3]) -> f64 {
    let (la, lb) = (luminance(a), luminance(b));
    (la.max(lb) + 0.05) / (la.min(lb) + 0.05)
}

/// `c` moved toward `toward` (0 darkens, 255 lightens) just enough to keep
/// `MIN_CONTRAST` with every one of `backgrounds`.
fn legible(c: [u8; 3], backgrounds: &[[u8; 3]], toward: u8) -> [u8; 3] {
    const STEPS: u16 = 32;
    for step in 0..=STEPS {
        let mix = |v: u8| {
            let (v, t) = (i32::from(v), i32::from(toward));
            u8::try_from(v + (t - v) * i32::from(step) / i32::from(STEPS)).unwrap_or(toward)
        };
        let candidate = [mix(c[0]), mix(c[1]), mix(c[2])];
        if backgrounds
            .iter()
            .all(|&b| contrast(candidate, b) >= MIN_CONTRAST)
        {
            return candidate;
        }
    }
    [toward; 3]
}

/// `#rrggbb` made legible as text on every one of `backgrounds` (as `legible` does), as
/// `#rrggbb`; `None` for anything but `#rrggbb`.
pub fn legible_hex(color: &str, backgrounds: &[[u8; 3]], toward: u8) -> Option<String> {
    let digits = color.strip_prefix('#').filter(|d| d.len() == 6)?;
    let [r, g, b] = legible(hex_color(digits)?, backgrounds, toward);
    Some(format!("#{r:02x}{g:02x}{b:02x}"))
}

/// The theme's CSS with each text colour (`color: #rrggbb[aa]`, not `background-color`)
/// made legible on `backgrounds`; an alpha channel is dropped.
fn readable(css: &str, backgrounds: &[[u8; 3]], toward: u8) -> String {
    const KEY: &str = "color: #";
    let mut out = String::with_capacity(css.len());
    let mut rest = css;
    while let Some(i) = rest.find(KEY) {
        let start = i + KEY.len();
        out.push_str(&rest[..start]);
        let digits = rest[start..]
            .bytes()
            .take_while(u8::is_ascii_hexdigit)
            .count();
        let is_text = !rest[..i].ends_with('-');
        let parsed = (digits == 6 || digits == 8)
            .then(|| hex_color(&rest[start..start + 6]))
            .flatten();
        match parsed.filter(|_| is_text) {
            Some(c) => {
                let [r, g, b] = legible(c, backgrounds, toward);
                let _ = write!(out, "{r:02x}{g:02x}{b:02x}");
            }
            None => out.push_str(&rest[start..start + digits]),
        }
        rest = &rest[start + digits..];
    }
    out.push_str(rest);
    out
}

fn hex_color(s: &str) -> Option<[u8; 3]> {
    let byte = |i: usize| u8::from_str_radix(s.get(i..i + 2)?, 16).ok();
    Some([byte(0)?, byte(2)?, byte(4)?])
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
