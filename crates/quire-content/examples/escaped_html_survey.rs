//! Renders every markdown page under a directory and reports the HTML tags that show as
//! escaped text outside code: `cargo run -p quire-content --example escaped_html_survey -- DIR`.

use std::path::{Path, PathBuf};

use quire_content::frontmatter::split_page_markdown;
use quire_content::html::{render_document, NoLinks};
use quire_content::markdown::{
    markdown_to_document_with, normalize_markdown, LinkResolver, LinkTarget,
};
use quire_content::model::ContentRef;

/// Destinations as an import reads them: the space's assets are files, other relative
/// paths are pages.
struct ImportLinks;

impl LinkResolver for ImportLinks {
    fn resolve(&self, href: &str) -> Option<LinkTarget> {
        if href.contains(':') || href.starts_with('#') || href.starts_with('/') {
            return None;
        }
        let (path, anchor) = match href.split_once('#') {
            Some((p, a)) => (p, Some(a)),
            None => (href, None),
        };
        let id: String = path
            .chars()
            .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
            .collect();
        Some(LinkTarget::Ref(if path.contains(".gitbook/assets/") {
            ContentRef::File { file: id }
        } else {
            match anchor {
                Some(a) => ContentRef::Anchor {
                    anchor: a.into(),
                    page: Some(id),
                    space: None,
                },
                None => ContentRef::Page {
                    page: id,
                    space: None,
                },
            }
        }))
    }
}

fn pages(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    let mut entries: Vec<_> = entries.flatten().map(|e| e.path()).collect();
    entries.sort();
    for p in entries {
        if p.is_dir() {
            pages(&p, out);
        } else if p.extension().is_some_and(|e| e == "md") {
            out.push(p);
        }
    }
}

/// The HTML with `<pre>…</pre>` and `<code>…</code>` taken out.
fn outside_code(html: &str) -> String {
    let mut out = String::new();
    let mut rest = html;
    loop {
        let next = ["<pre", "<code"]
            .iter()
            .filter_map(|t| rest.find(t).map(|i| (i, *t)))
            .min();
        let Some((at, tag)) = next else {
            out.push_str(rest);
            return out;
        };
        out.push_str(&rest[..at]);
        let close = if tag == "<pre" { "</pre>" } else { "</code>" };
        match rest[at..].find(close) {
            Some(end) => rest = &rest[at + end + close.len()..],
            None => return out,
        }
    }
}

/// Prints the text of every raw paragraph (content kept verbatim) under `nodes`.
fn print_raw(nodes: &[quire_content::document::Node], print: bool) -> usize {
    let mut n_raw = 0;
    use quire_content::document::Node;
    for n in nodes {
        if let Node::Block(e) | Node::Inline(e) = n {
            let raw = e.meta.as_ref().and_then(|m| m.get("raw")).is_some();
            if raw {
                n_raw += 1;
            }
            if raw && print {
                let t = n.plain_text();
                let end = (0..=t.len().min(400))
                    .rev()
                    .find(|i| t.is_char_boundary(*i))
                    .unwrap();
                println!("  RAW: {}", &t[..end]);
            }
            n_raw += print_raw(e.children(), print);
            for f in e.fragments.iter().flatten() {
                n_raw += print_raw(&f.nodes, print);
            }
        }
    }
    n_raw
}

fn main() {
    let dir = std::env::args().nth(1).expect("a directory");
    let mut files = Vec::new();
    pages(Path::new(&dir), &mut files);
    let mut bad = 0;
    let mut lossy = 0;
    let mut raw_pages = 0;
    for f in &files {
        let md = std::fs::read_to_string(f).expect("readable");
        let body = match split_page_markdown(&md) {
            Ok(s) => s.body,
            Err(_) => md.clone(),
        };
        if normalize_markdown(&body) != body {
            lossy += 1;
            println!("{}: the round trip changes the text", f.display());
            if let Ok(dir) = std::env::var("DIFF_DIR") {
                let name = f.display().to_string().replace('/', "_");
                std::fs::write(format!("{dir}/{name}.in"), &body).expect("written");
                std::fs::write(format!("{dir}/{name}.out"), normalize_markdown(&body))
                    .expect("written");
            }
        }
        let doc = markdown_to_document_with(&body, &ImportLinks);
        let html = render_document(&doc, &NoLinks).html;
        if std::env::var("SHOW").is_ok_and(|w| f.display().to_string().contains(&w)) {
            println!("{html}");
        }
        let n_raw = print_raw(&doc.nodes, false);
        if n_raw > 0 {
            raw_pages += 1;
            println!("{}: {n_raw} raw blocks", f.display());
            if std::env::var("RAW").is_ok() {
                print_raw(&doc.nodes, true);
            }
        }
        let text = outside_code(&html);
        let mut hits = Vec::new();
        let mut from = 0;
        while let Some(i) = text[from..].find("&lt;") {
            let at = from + i + 4;
            let after = text[at..].trim_start_matches('/');
            let name: String = after
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric())
                .collect();
            if name.chars().next().is_some_and(|c| c.is_ascii_alphabetic()) {
                let end = (at + 60).min(text.len());
                let end = (end..=text.len())
                    .find(|e| text.is_char_boundary(*e))
                    .unwrap();
                hits.push(format!("<{name}> …{}", &text[at - 4..end]));
            }
            from = at;
        }
        if !hits.is_empty() {
            bad += 1;
            println!("{} ({} hits)", f.display(), hits.len());
            for h in hits.iter().take(if std::env::var("ALL").is_ok() {
                1000
            } else {
                5
            }) {
                println!("    {h}");
            }
        }
    }
    println!("{lossy} of {} pages change in the round trip", files.len());
    println!("{raw_pages} of {} pages hold raw blocks", files.len());
    println!(
        "{bad} of {} pages show escaped tags outside code",
        files.len()
    );
}
