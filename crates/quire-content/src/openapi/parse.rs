//! Reading an OpenAPI document's text (JSON or YAML) into a JSON value, with every walk
//! bounded: nesting by [`MAX_SPEC_DEPTH`], and what YAML aliases expand to by
//! [`MAX_SPEC_NODES`] values and [`MAX_SPEC_BYTES`] bytes.

use serde_json::{Map, Number, Value};

use super::SpecError;

/// Deepest nesting of objects and arrays in a specification. serde_json refuses JSON deeper
/// than 128 on its own; YAML is held to the same bound here.
pub const MAX_SPEC_DEPTH: usize = 128;

/// Most values a specification may hold once YAML aliases are expanded. The official
/// GitBook API description (about 1 MB of JSON) holds about 70 000.
pub const MAX_SPEC_NODES: usize = 2_000_000;

/// Most bytes a YAML specification may grow to once its aliases are expanded, counted as
/// its compact JSON text (every string with its quotes and escapes and every key, each
/// time an alias repeats it). A value count alone lets one long anchored string, repeated
/// by a few thousand aliases, fill gigabytes. The official GitBook API description is
/// about 1 MB of JSON: 32 MiB leaves room for thirty times that, and for any YAML within
/// the server's default 16 MiB source limit, while what is built from a document (its
/// copy in memory, the stored JSON, a rendered operation) stays a few times that at most.
pub const MAX_SPEC_BYTES: usize = 32 * 1024 * 1024;

/// Parses `text` as JSON when it starts with `{`, as YAML otherwise, with the whole
/// [`MAX_SPEC_BYTES`] budget.
pub fn parse_text(text: &str) -> Result<Value, SpecError> {
    parse_text_within(text, MAX_SPEC_BYTES).map(|(value, _)| value)
}

/// Parses `text` like [`parse_text`], refusing YAML that expands past `max_bytes` (as
/// JSON); returns the value and the bytes it counts for. JSON cannot expand: it counts its
/// text's length, which the caller already bounds, and is never refused for it.
pub fn parse_text_within(text: &str, max_bytes: usize) -> Result<(Value, usize), SpecError> {
    let trimmed = text.trim_start_matches('\u{feff}').trim_start();
    if trimmed.is_empty() {
        return Err(SpecError::new("EMPTY", "The specification is empty."));
    }
    if trimmed.starts_with('{') {
        // serde_json stops at 128 levels of nesting with an error, never overflowing.
        let value = serde_json::from_str(trimmed).map_err(|e| {
            SpecError::new(
                "INVALID_JSON",
                format!(
                    "The specification is not valid JSON (line {}, column {}): {e}",
                    e.line(),
                    e.column()
                ),
            )
        })?;
        Ok((value, trimmed.len()))
    } else {
        parse_yaml(trimmed, max_bytes)
    }
}

fn yaml_error(line: usize, col: usize, what: impl std::fmt::Display) -> SpecError {
    SpecError::new(
        "INVALID_YAML",
        format!("The specification is not valid YAML (line {line}, column {col}): {what}"),
    )
}

/// What values cost once built: how many there are, and their length as compact JSON
/// (each with one byte for the comma or colon after it).
#[derive(Clone, Copy, Default)]
struct Cost {
    nodes: usize,
    bytes: usize,
}

impl Cost {
    fn add(self, other: Cost) -> Cost {
        Cost {
            nodes: self.nodes.saturating_add(other.nodes),
            bytes: self.bytes.saturating_add(other.bytes),
        }
    }

    /// One scalar: its JSON text and the separator after it. Numbers are counted with
    /// quotes, which they get as keys.
    fn of_scalar(v: &Value) -> Cost {
        let text = match v {
            Value::String(s) => json_string_len(s),
            Value::Number(n) => n.to_string().len() + 2,
            Value::Bool(true) | Value::Null => 4,
            Value::Bool(false) => 5,
            // Collections are counted as their values arrive.
            Value::Array(_) | Value::Object(_) => 2,
        };
        Cost {
            nodes: 1,
            bytes: text + 1,
        }
    }

    /// The error for a total past either bound, naming it.
    fn check(self, max_bytes: usize, line: usize, col: usize) -> Result<(), SpecError> {
        if self.nodes > MAX_SPEC_NODES {
            return Err(yaml_error(
                line,
                col,
                format!("more than {MAX_SPEC_NODES} values once aliases are expanded"),
            ));
        }
        if self.bytes > max_bytes {
            return Err(SpecError::new(
                "TOO_LARGE",
                format!(
                    "The specification grows past {max_bytes} bytes (as JSON) once its YAML aliases are expanded (line {line}, column {col})."
                ),
            ));
        }
        Ok(())
    }
}

/// The length of `s` as a JSON string, quotes and escapes included (as serde_json writes
/// it: `"` and a backslash and the short control escapes take two bytes, other controls six).
fn json_string_len(s: &str) -> usize {
    let extra: usize = s
        .bytes()
        .map(|b| match b {
            b'"' | b'\\' | b'\n' | b'\r' | b'\t' | 0x08 | 0x0c => 1,
            0..=0x1f => 5,
            _ => 0,
        })
        .sum();
    s.len() + extra + 2
}

/// Builds a JSON value from YAML events, iteratively: nesting is bounded by
/// [`MAX_SPEC_DEPTH`] and what is built, aliases expanded, by [`MAX_SPEC_NODES`] values
/// and `max_bytes` bytes. Each alias is counted before it is copied, so a bomb stops at
/// the first alias past a bound, having built no more than the bound.
fn parse_yaml(src: &str, max_bytes: usize) -> Result<(Value, usize), SpecError> {
    use saphyr_parser::{Event, Parser, ScalarStyle};
    let mut stack: Vec<Open> = Vec::new();
    let mut anchors: std::collections::HashMap<usize, (Value, Cost)> = Default::default();
    let mut total = Cost::default();
    let mut root: Option<Value> = None;
    let mut documents = 0;
    // What was built under each open collection, so an anchored one knows its own cost.
    let mut sizes: Vec<Cost> = Vec::new();
    for item in Parser::new_from_str(src) {
        let (event, span) =
            item.map_err(|e| yaml_error(e.marker().line(), e.marker().col() + 1, e.info()))?;
        let (line, col) = (span.start.line(), span.start.col() + 1);
        let (value, cost) = match event {
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
                let cost = Cost::of_scalar(&v);
                if anchor > 0 {
                    // The kept copy costs as much as the value.
                    total = total.add(cost);
                    total.check(max_bytes, line, col)?;
                    anchors.insert(anchor, (v.clone(), cost));
                }
                (v, cost)
            }
            Event::Alias(id) => {
                let (v, cost) = anchors
                    .get(&id)
                    .ok_or_else(|| yaml_error(line, col, "an alias names no anchor"))?;
                // Counted before cloning: an expansion past a bound is never made.
                total.add(*cost).check(max_bytes, line, col)?;
                (v.clone(), *cost)
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
                sizes.push(Cost::default());
                continue;
            }
            Event::MappingEnd | Event::SequenceEnd => {
                // The collection itself: its brackets and the separator after it.
                let own = Cost { nodes: 1, bytes: 3 };
                let inner = sizes.pop().unwrap_or_default().add(own);
                let (v, anchor) = match stack.pop() {
                    Some(Open::Map(m, _, anchor)) => (Value::Object(m), anchor),
                    Some(Open::List(l, anchor)) => (Value::Array(l), anchor),
                    None => continue,
                };
                if anchor > 0 {
                    // Keeping a copy costs as much as the values copied: anchors nested in
                    // anchors would otherwise copy one large value once per level.
                    total = total.add(inner);
                    total.check(max_bytes, line, col)?;
                    anchors.insert(anchor, (v.clone(), inner));
                }
                // Its values were counted as they came; only the collection itself is new.
                total = total.add(own);
                total.check(max_bytes, line, col)?;
                if let Some(parent) = sizes.last_mut() {
                    *parent = parent.add(inner);
                }
                attach(&mut stack, &mut root, v, line, col)?;
                continue;
            }
            _ => continue,
        };
        total = total.add(cost);
        total.check(max_bytes, line, col)?;
        if let Some(parent) = sizes.last_mut() {
            *parent = parent.add(cost);
        }
        attach(&mut stack, &mut root, value, line, col)?;
    }
    let root = root.ok_or_else(|| SpecError::new("EMPTY", "The specification is empty."))?;
    Ok((root, total.bytes))
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
