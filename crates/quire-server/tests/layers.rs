//! The server's layers point down only, and API families never import each other: checked
//! over the source text, so that a new import that breaks the shape fails the suite.
//! ARCHITECTURE.md explains the layers.

use std::path::Path;

/// Each top-level module's layer; a module may import only modules of lower layers.
const LAYERS: &[(&str, u8)] = &[
    ("error", 0),
    ("clock", 0),
    ("ids", 0),
    ("config", 0),
    ("values", 0),
    ("fetch", 0),
    ("metrics", 1),
    ("encoding", 1),
    ("per_thread", 0),
    ("rate", 0),
    ("revision_cache", 0),
    ("turns", 0),
    ("passwords", 0),
    ("scopes", 0),
    ("validate", 1),
    ("db", 1),
    ("keys", 2),
    ("blobs", 3),
    ("store", 4),
    ("cache", 5),
    ("hosts", 5),
    ("state", 7),
    ("domain", 8),
    ("http", 9),
    ("web", 10),
    ("app", 10),
    ("git", 10),
    ("api", 11),
    ("server", 12),
    ("admin", 12),
];

fn layer(module: &str) -> Option<u8> {
    LAYERS.iter().find(|(m, _)| *m == module).map(|(_, l)| *l)
}

/// Every `crate::a::b` path in `text`, outside comments, as `(a, b)`.
fn crate_paths(text: &str) -> Vec<(String, String)> {
    let mut out = Vec::new();
    for line in text.lines() {
        let code = line.split("//").next().unwrap_or("");
        let mut rest = code;
        while let Some(at) = rest.find("crate::") {
            rest = &rest[at + "crate::".len()..];
            let mut parts = rest.split("::").map(|p| {
                p.chars()
                    .take_while(|c| c.is_alphanumeric() || *c == '_')
                    .collect::<String>()
            });
            let first = parts.next().unwrap_or_default();
            let second = parts.next().unwrap_or_default();
            out.push((first, second));
        }
    }
    out
}

fn rust_files(dir: &Path, out: &mut Vec<std::path::PathBuf>) {
    for entry in std::fs::read_dir(dir).expect("source folder") {
        let path = entry.expect("entry").path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

#[test]
fn layers_point_down_and_families_stand_alone() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    let mut problems = Vec::new();
    for file in &files {
        let rel = file.strip_prefix(&src).unwrap();
        let parts: Vec<String> = rel
            .components()
            .map(|c| {
                c.as_os_str()
                    .to_string_lossy()
                    .trim_end_matches(".rs")
                    .to_string()
            })
            .collect();
        let top = parts[0].as_str();
        if top == "lib" {
            continue;
        }
        let Some(own) = layer(top) else {
            problems.push(format!("{}: module `{top}` has no layer", rel.display()));
            continue;
        };
        let family = (top == "api" && parts.len() > 2).then(|| parts[1].as_str());
        let text = std::fs::read_to_string(file).unwrap();
        for (first, second) in crate_paths(&text) {
            if first == top {
                if let Some(family) = family {
                    if !second.is_empty() && second != family && second != "views" {
                        problems.push(format!(
                            "{}: the `{family}` family imports the `{second}` family",
                            rel.display()
                        ));
                    }
                }
                continue;
            }
            match layer(&first) {
                None => problems.push(format!("{}: unknown module `{first}`", rel.display())),
                Some(l) if l >= own => problems.push(format!(
                    "{}: `{top}` (layer {own}) imports `{first}` (layer {l})",
                    rel.display()
                )),
                Some(_) => {}
            }
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[test]
fn every_layer_names_a_module() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let stale: Vec<&str> = LAYERS
        .iter()
        .map(|(m, _)| *m)
        .filter(|m| !src.join(format!("{m}.rs")).is_file() && !src.join(m).is_dir())
        .collect();
    assert!(stale.is_empty(), "layers of no module: {stale:?}");
}

/// The job runner knows no kind of job: each owner defines its `JobKind` and the server
/// registers them, so the runner imports none of the modules whose work it runs.
#[test]
fn the_job_runner_imports_no_owner() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/domain/jobs.rs");
    let text = std::fs::read_to_string(src).unwrap();
    let owners: Vec<String> = crate_paths(&text)
        .into_iter()
        .filter(|(first, _)| first == "domain")
        .map(|(_, second)| second)
        .collect();
    assert!(owners.is_empty(), "domain/jobs.rs imports {owners:?}");
}

#[test]
fn the_checker_sees_imports() {
    let found = crate_paths(
        "use crate::store::spaces; // crate::api::x\nlet a = crate::domain::content::load;",
    );
    assert_eq!(
        found,
        vec![
            ("store".to_string(), "spaces".to_string()),
            ("domain".to_string(), "content".to_string())
        ]
    );
}
