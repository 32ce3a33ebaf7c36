//! OpenAPI specifications: reading a document (JSON or YAML), checking that it is an
//! OpenAPI 3.0 or 3.1 description whose local references all resolve, and rendering one of
//! its operations for a page ([`render`]).
//!
//! Every walk here is iterative or bounded: documents come from anyone with an API token,
//! and references may form cycles.

pub mod computed;
mod parse;
pub mod render;

pub use parse::{parse_text, parse_text_within, MAX_SPEC_BYTES, MAX_SPEC_DEPTH, MAX_SPEC_NODES};

use serde_json::Value;

/// Most `$ref`s a specification may hold.
pub const MAX_REFS: usize = 200_000;

/// Why a specification was refused: a stable code and a readable message.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct SpecError {
    /// Stable code (`INVALID_YAML`, `SWAGGER_2_UNSUPPORTED`, `BROKEN_REF`...).
    pub code: &'static str,
    /// What is wrong, naming the place in the document when there is one.
    pub message: String,
}

impl SpecError {
    /// An error with its code and message.
    pub fn new(code: &'static str, message: impl Into<String>) -> SpecError {
        SpecError {
            code,
            message: message.into(),
        }
    }
}

/// A specification that passed every check.
#[derive(Debug)]
pub struct Checked {
    /// The document.
    pub document: Value,
    /// Its `openapi` version (`3.0.3`, `3.1.0`...).
    pub version: String,
}

/// Reads and checks a specification's text.
pub fn process(text: &str) -> Result<Checked, SpecError> {
    let document = parse_text(text)?;
    let version = check(&document)?;
    Ok(Checked { document, version })
}

/// Checks the shape of an OpenAPI 3.0 or 3.1 document and that its local references
/// resolve; returns its version. Swagger 2.0 is refused with its own code.
pub fn check(doc: &Value) -> Result<String, SpecError> {
    let invalid = |msg: String| SpecError::new("INVALID_SPEC", msg);
    let Some(root) = doc.as_object() else {
        return Err(invalid(
            "The specification must be an object at its top level.".into(),
        ));
    };
    if let Some(swagger) = root.get("swagger") {
        return Err(SpecError::new(
            "SWAGGER_2_UNSUPPORTED",
            format!(
                "Swagger {} documents are not supported: convert the specification to OpenAPI 3.0 or 3.1.",
                shown(&swagger.as_str().map_or_else(|| swagger.to_string(), str::to_string))
            ),
        ));
    }
    let version = match root.get("openapi") {
        None => {
            return Err(invalid(
                "The specification lacks the `openapi` field naming its version.".into(),
            ))
        }
        Some(Value::String(v)) => v.clone(),
        Some(other) => {
            return Err(invalid(format!(
                "`openapi` must be a version string such as \"3.1.0\", not {}.",
                shown(&other.to_string())
            )))
        }
    };
    let v31 = version.starts_with("3.1.") || version == "3.1";
    let v30 = version.starts_with("3.0.") || version == "3.0";
    if !v30 && !v31 {
        return Err(SpecError::new(
            "UNSUPPORTED_VERSION",
            format!(
                "OpenAPI version `{}` is not supported: use 3.0 or 3.1.",
                shown(&version)
            ),
        ));
    }
    match root.get("info") {
        Some(Value::Object(info)) => {
            if !info.get("title").is_some_and(Value::is_string) {
                return Err(invalid("`info.title` must be a string.".into()));
            }
            if !info.get("version").is_some_and(Value::is_string) {
                return Err(invalid("`info.version` must be a string.".into()));
            }
        }
        _ => return Err(invalid("`info` must be an object.".into())),
    }
    for field in ["paths", "components", "webhooks"] {
        if root.get(field).is_some_and(|v| !v.is_object()) {
            return Err(invalid(format!("`{field}` must be an object.")));
        }
    }
    if v30 && !root.contains_key("paths") {
        return Err(invalid("An OpenAPI 3.0 document needs `paths`.".into()));
    }
    if v31
        && !["paths", "components", "webhooks"]
            .iter()
            .any(|f| root.contains_key(*f))
    {
        return Err(invalid(
            "An OpenAPI 3.1 document needs `paths`, `components` or `webhooks`.".into(),
        ));
    }
    if let Some(Value::Object(paths)) = root.get("paths") {
        for (path, item) in paths {
            if !path.starts_with('/') && !path.starts_with("x-") {
                return Err(invalid(format!(
                    "`paths`: `{}` must start with `/`.",
                    shown(path)
                )));
            }
            if !item.is_object() {
                return Err(invalid(format!(
                    "`paths.{}` must be an object.",
                    shown(path)
                )));
            }
        }
    }
    check_refs(doc)?;
    Ok(version)
}

/// Every `$ref` of the document: local ones (`#/...`) must name something that exists;
/// others (other files, URLs) are left as they are. Iterative: no cycle or depth can make
/// it recurse.
fn check_refs(doc: &Value) -> Result<(), SpecError> {
    let mut stack = vec![doc];
    let mut refs = 0usize;
    while let Some(v) = stack.pop() {
        match v {
            Value::Object(map) => {
                if let Some(Value::String(target)) = map.get("$ref") {
                    refs += 1;
                    if refs > MAX_REFS {
                        return Err(SpecError::new(
                            "TOO_MANY_REFS",
                            format!("The specification holds more than {MAX_REFS} `$ref`s."),
                        ));
                    }
                    if let Some(pointer) = target.strip_prefix('#') {
                        if resolve_pointer(doc, pointer).is_none() {
                            return Err(SpecError::new(
                                "BROKEN_REF",
                                format!(
                                    "`$ref` `{}` points to nothing in the document.",
                                    shown(target)
                                ),
                            ));
                        }
                    }
                }
                stack.extend(map.values());
            }
            Value::Array(items) => stack.extend(items.iter()),
            _ => {}
        }
    }
    Ok(())
}

/// Longest piece of a document quoted in an error message, in characters.
const MAX_SHOWN: usize = 200;

/// `text` as an error message quotes it: cut to [`MAX_SHOWN`] characters, since a message
/// is stored and shown again while the document may hold megabytes in one string.
pub fn shown(text: &str) -> String {
    match text.char_indices().nth(MAX_SHOWN) {
        Some((cut, _)) => format!("{}…", &text[..cut]),
        None => text.to_string(),
    }
}

/// Where [`bundle`] puts the other files of a specification, by number.
pub const BUNDLED: &str = "x-quire-files";

/// The other files a document's `$ref`s name (the part before `#`), in order, without
/// repeats. Iterative; a set keeps the repeats check linear in the references.
pub fn external_refs(doc: &Value) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let mut seen: std::collections::HashSet<&str> = std::collections::HashSet::new();
    let mut stack = vec![doc];
    while let Some(v) = stack.pop() {
        match v {
            Value::Object(map) => {
                if let Some(Value::String(target)) = map.get("$ref") {
                    let file = target.split('#').next().unwrap_or("");
                    if !file.is_empty() && seen.insert(file) {
                        out.push(file.to_string());
                    }
                }
                stack.extend(map.values());
            }
            Value::Array(items) => stack.extend(items.iter()),
            _ => {}
        }
    }
    out
}

/// Rewrites every `$ref` of `doc` with `rewrite(file, fragment)` (file: the part before `#`,
/// empty for a local reference); `None` leaves the reference as it is. Iterative.
pub fn rewrite_refs(doc: &mut Value, rewrite: &dyn Fn(&str, &str) -> Option<String>) {
    let mut stack = vec![doc];
    while let Some(v) = stack.pop() {
        match v {
            Value::Object(map) => {
                if let Some(Value::String(target)) = map.get_mut("$ref") {
                    let (file, fragment) = target.split_once('#').unwrap_or((target.as_str(), ""));
                    if let Some(new) = rewrite(file, fragment) {
                        *target = new;
                    }
                }
                stack.extend(map.values_mut());
            }
            Value::Array(items) => stack.extend(items.iter_mut()),
            _ => {}
        }
    }
}

/// Puts other files into the main document under [`BUNDLED`] (`files[i]` at
/// `#/x-quire-files/i`); each file's references must already point into the bundle.
pub fn bundle(doc: &mut Value, files: Vec<Value>) {
    if files.is_empty() {
        return;
    }
    if let Value::Object(root) = doc {
        root.insert(BUNDLED.to_string(), Value::Array(files));
    }
}

/// Follows a JSON pointer (the part of a `$ref` after `#`, percent-encoding allowed).
pub fn resolve_pointer<'a>(doc: &'a Value, pointer: &str) -> Option<&'a Value> {
    if pointer.is_empty() {
        return Some(doc);
    }
    let decoded = percent_decode(pointer)?;
    doc.pointer(&decoded)
}

fn percent_decode(text: &str) -> Option<String> {
    if !text.contains('%') {
        return Some(text.to_string());
    }
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = text.get(i + 1..i + 3)?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).ok()
}

#[cfg(test)]
mod tests;
