//! Fidelity over an external folder of pages written by GitBook's Git Sync (for example a
//! checkout of a public documentation repository): every page must come back unchanged
//! from markdown → document → markdown.
//!
//! Ignored by default; run with
//! `QUIRE_FIDELITY_DIR=path cargo test -p quire-content --test fidelity_external -- --ignored --nocapture`
//! (set `QUIRE_FIDELITY_OUT` to a folder to get the input and output of each changed page).

use quire_content::frontmatter::split_page_markdown;
use quire_content::markdown::{document_to_markdown, try_markdown_to_document};

fn pages(dir: &std::path::Path, out: &mut Vec<std::path::PathBuf>) {
    for e in std::fs::read_dir(dir).expect("readable folder") {
        let p = e.expect("entry").path();
        if p.is_dir() {
            pages(&p, out);
        } else if p.extension().is_some_and(|x| x == "md")
            && !p.ends_with("SUMMARY.md")
            && !p.ends_with("AGENTS.md")
            // Attachments and repository files are not pages.
            && !p.to_string_lossy().contains("/.gitbook/assets/")
            && !p.to_string_lossy().contains("/.github/")
        {
            out.push(p);
        }
    }
}

#[test]
#[ignore = "needs QUIRE_FIDELITY_DIR"]
fn external_pages_survive_a_round_trip() {
    let dir = std::env::var("QUIRE_FIDELITY_DIR").expect("QUIRE_FIDELITY_DIR");
    let out = std::env::var("QUIRE_FIDELITY_OUT").ok();
    let mut files = Vec::new();
    pages(std::path::Path::new(&dir), &mut files);
    files.sort();
    let (mut intact, mut refused) = (0, 0);
    // What the parser kept raw (not understood), by the start of its first line.
    let mut raw: std::collections::BTreeMap<String, usize> = Default::default();
    for f in &files {
        let src = std::fs::read_to_string(f).expect("utf-8 page");
        let name = f
            .strip_prefix(&dir)
            .unwrap_or(f)
            .to_string_lossy()
            .to_string();
        let page = match split_page_markdown(&src) {
            Ok(p) => p,
            Err(e) => {
                refused += 1;
                println!("refused {name}: {e}");
                continue;
            }
        };
        let doc = match try_markdown_to_document(&page.body) {
            Ok(d) => d,
            Err(e) => {
                refused += 1;
                println!("refused {name}: {e}");
                continue;
            }
        };
        let value = serde_json::to_value(&doc).expect("documents serialise");
        let mut stack = vec![&value];
        while let Some(v) = stack.pop() {
            match v {
                serde_json::Value::Object(o) => {
                    if o.get("meta").and_then(|m| m.get("raw")) == Some(&serde_json::json!(true)) {
                        let text = o["nodes"][0]["leaves"][0]["text"].as_str().unwrap_or("");
                        let key: String = text.chars().take(24).collect();
                        *raw.entry(key).or_default() += 1;
                    }
                    stack.extend(o.values());
                }
                serde_json::Value::Array(a) => stack.extend(a.iter()),
                _ => {}
            }
        }
        let body = page.body.trim_end_matches('\n');
        let back = document_to_markdown(&doc);
        let back = back.trim_end_matches('\n');
        if back == body {
            intact += 1;
            continue;
        }
        let a: Vec<&str> = body.lines().collect();
        let b: Vec<&str> = back.lines().collect();
        let i = a
            .iter()
            .zip(b.iter())
            .position(|(x, y)| x != y)
            .unwrap_or(a.len().min(b.len()));
        let show = |l: Option<&&str>| l.map(|s| s.chars().take(160).collect::<String>());
        println!(
            "changed {name}:{}\n  - {:?}\n  + {:?}",
            i + 1,
            show(a.get(i)),
            show(b.get(i))
        );
        if let Some(out) = &out {
            let flat = name.replace('/', "__");
            std::fs::create_dir_all(out).expect("output folder");
            std::fs::write(format!("{out}/{flat}.in"), body).expect("write");
            std::fs::write(format!("{out}/{flat}.out"), back).expect("write");
        }
    }
    let mut raw: Vec<(String, usize)> = raw.into_iter().collect();
    raw.sort_by_key(|r| std::cmp::Reverse(r.1));
    println!(
        "raw blocks: {} ({} kinds); most frequent:",
        raw.iter().map(|r| r.1).sum::<usize>(),
        raw.len()
    );
    for (k, n) in raw.iter().take(40) {
        println!("  {n:5} {k:?}");
    }
    println!(
        "fidelity: {intact} / {} pages intact ({refused} refused)",
        files.len()
    );
}
