//! Reading an OpenAPI document's text (JSON or YAML) into a JSON value, with every walk
//! bounded: nesting by [`MAX_SPEC_DEPTH`], values (aliases expanded) by [`MAX_SPEC_NODES`].

use serde_json::{Map, Number, Value};

use super::SpecError;

/// Deepest nesting of objects and arrays in a specification. serde_json refuses JSON deeper
/// than 128 on its own; YAML is held to the same bound here.
pub const MAX_SPEC_DEPTH: usize = 128;

/// Most values a specification may hold once YAML aliases are expanded. The official
/// GitBook API description (about 1 MB of JSON) holds about 70 000.
pub const MAX_SPEC_NODES: usize = 2_000_000;

/// Parses `text` as JSON when it starts with `{`, as YAML otherwise.
pub fn parse_text(text: &str) -> Result<Value, SpecError> {
    let trimmed = text.trim_start_matches('\u{feff}').trim_start();
    if trimmed.is_empty() {
        return Err(SpecError::new("EMPTY", "The specification is empty."));
    }
    if trimmed.starts_with('{') {
        // serde_json stops at 128 levels of nesting with an error, never overflowing.
        serde_json::from_str(trimmed).map_err(|e| {
            SpecError::new(
                "INVALID_JSON",
                format!(
                    "The specification is not valid JSON (line {}, column {}): {e}",
                    e.line(),
                    e.column()
                ),
            )
        })
    } else {
        parse_yaml(trimmed)
    }
}

fn yaml_error(line: usize, col: usize, what: impl std::fmt::Display) -> SpecError {
    SpecError::new(
        "INVALID_YAML",
        format!("The specification is not valid YAML (line {line}, column {col}): {what}"),
    )
}

/// Builds a JSON value from YAML events, iteratively: nesting is bounded by
/// [`MAX_SPEC_DEPTH`] and the values produced, aliases expanded, by [`MAX_SPEC_NODES`], so
/// an alias bomb stops early with an error instead of filling memory.
fn parse_yaml(src: &str) -> Result<Value, SpecError> {
    use saphyr_parser::{Event, Parser, ScalarStyle};
    let mut stack: Vec<Open> = Vec::new();
    let mut anchors: std::collections::HashMap<usize, (Value, usize)> = Default::default();
    let mut nodes = 0usize;
    let mut root: Option<Value> = None;
    let mut documents = 0;
    // Values produced under each open collection, so an anchored one knows its own size.
    let mut sizes: Vec<usize> = Vec::new();
    for item in Parser::new_from_str(src) {
        let (event, span) =
            item.map_err(|e| yaml_error(e.marker().line(), e.marker().col() + 1, e.info()))?;
        let (line, col) = (span.start.line(), span.start.col() + 1);
        let (value, size) = match event {
            Event::DocumentStart(_) => {
                documents += 1;
                if documents > 1 {
                    return Err(yaml_error(line, col, "only one YAML document is allowed"));
                }
                continue;
            }
            Event::Scalar(text, style, anchor, tag) => {
                let as_string = !matches!(style, ScalarStyle::Plain)
                    || tag.as_ref().is_some_and(|t| t.suffix == "str");
                let v = if as_string {
                    Value::String(text.into_owned())
                } else {
                    plain_scalar(&text)
                };
                if anchor > 0 {
                    anchors.insert(anchor, (v.clone(), 1));
                }
                (v, 1)
            }
            Event::Alias(id) => {
                let (v, size) = anchors
                    .get(&id)
                    .ok_or_else(|| yaml_error(line, col, "an alias names no anchor"))?;
                // Counted before cloning: an expansion past the bound is never made.
                if nodes + size > MAX_SPEC_NODES {
                    return Err(too_many(line, col));
                }
                (v.clone(), *size)
            }
            Event::MappingStart(anchor, _) | Event::SequenceStart(anchor, _) => {
                if stack.len() >= MAX_SPEC_DEPTH {
                    return Err(yaml_error(
                        line,
                        col,
                        format!("values are nested more than {MAX_SPEC_DEPTH} levels deep"),
                    ));
                }
                stack.push(match event {
                    Event::MappingStart(..) => Open::Map(Map::new(), None, anchor),
                    _ => Open::List(Vec::new(), anchor),
                });
                sizes.push(0);
                continue;
            }
            Event::MappingEnd | Event::SequenceEnd => {
                let inner = sizes.pop().unwrap_or(0) + 1;
                let (v, anchor) = match stack.pop() {
                    Some(Open::Map(m, _, anchor)) => (Value::Object(m), anchor),
                    Some(Open::List(l, anchor)) => (Value::Array(l), anchor),
                    None => continue,
                };
                if anchor > 0 {
                    // Keeping a copy costs as much as the values copied: anchors nested in
                    // anchors would otherwise copy one large value once per level.
                    nodes += inner;
                    if nodes > MAX_SPEC_NODES {
                        return Err(too_many(line, col));
                    }
                    anchors.insert(anchor, (v.clone(), inner));
                }
                // Its values were counted as they came; only the collection itself is new.
                nodes += 1;
                if let Some(parent) = sizes.last_mut() {
                    *parent += inner;
                }
                attach(&mut stack, &mut root, v, line, col)?;
                continue;
            }
            _ => continue,
        };
        nodes += size;
        if nodes > MAX_SPEC_NODES {
            return Err(too_many(line, col));
        }
        if let Some(parent) = sizes.last_mut() {
            *parent += size;
        }
        attach(&mut stack, &mut root, value, line, col)?;
    }
    root.ok_or_else(|| SpecError::new("EMPTY", "The specification is empty."))
}

fn too_many(line: usize, col: usize) -> SpecError {
    yaml_error(
        line,
        col,
        format!("more than {MAX_SPEC_NODES} values once aliases are expanded"),
    )
}

/// A collection being read: a map (with the key waiting for its value) or a list, each
/// with its anchor id (0: none).
enum Open {
    Map(Map<String, Value>, Option<String>, usize),
    List(Vec<Value>, usize),
}

/// Puts a finished value in its parent (or makes it the root).
fn attach(
    stack: &mut [Open],
    root: &mut Option<Value>,
    value: Value,
    line: usize,
    col: usize,
) -> Result<(), SpecError> {
    match stack.last_mut() {
        None => *root = Some(value),
        Some(Open::List(l, _)) => l.push(value),
        Some(Open::Map(m, key, _)) => match key.take() {
            None => {
                *key = Some(match value {
                    Value::String(s) => s,
                    Value::Number(n) => n.to_string(),
                    Value::Bool(b) => b.to_string(),
                    Value::Null => "null".to_string(),
                    _ => return Err(yaml_error(line, col, "keys must be plain values")),
                });
            }
            Some(k) => {
                m.insert(k, value);
            }
        },
    }
    Ok(())
}

/// A plain (unquoted, untagged) scalar under the YAML 1.2 core schema: null, booleans,
/// integers and floats; anything else is a string.
fn plain_scalar(text: &str) -> Value {
    match text {
        "" | "~" | "null" | "Null" | "NULL" => return Value::Null,
        "true" | "True" | "TRUE" => return Value::Bool(true),
        "false" | "False" | "FALSE" => return Value::Bool(false),
        _ => {}
    }
    let digits = text.strip_prefix(['-', '+']).unwrap_or(text);
    if !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit()) {
        if let Ok(n) = text.trim_start_matches('+').parse::<i64>() {
            return Value::Number(n.into());
        }
    }
    if let Some(hex) = text.strip_prefix("0x") {
        if let Ok(n) = i64::from_str_radix(hex, 16) {
            return Value::Number(n.into());
        }
    }
    if let Some(oct) = text.strip_prefix("0o") {
        if let Ok(n) = i64::from_str_radix(oct, 8) {
            return Value::Number(n.into());
        }
    }
    let looks_float = digits.bytes().any(|b| b.is_ascii_digit())
        && digits
            .bytes()
            .all(|b| b.is_ascii_digit() || matches!(b, b'.' | b'e' | b'E' | b'-' | b'+'))
        && digits.starts_with(|c: char| c.is_ascii_digit() || c == '.');
    if looks_float {
        if let Some(n) = text.parse::<f64>().ok().and_then(Number::from_f64) {
            return Value::Number(n);
        }
    }
    Value::String(text.to_string())
}
