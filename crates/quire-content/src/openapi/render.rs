//! Rendering one operation of a specification as safe HTML: method and path, summary and
//! description, parameters, request body and responses with their schemas, and examples.
//!
//! Every text of the specification is escaped; nothing it holds becomes markup, a link or a
//! script. Schemas are walked to a fixed depth with a budget of rendered items (properties,
//! parameters, responses, media types), a reference already open on the way down is shown
//! as recursive instead of followed, and the document's text shown has a budget of bytes,
//! so a cyclic or explosive specification renders small and fast. Examples are written
//! from borrowed parts of the document into a capped buffer: a large example is neither
//! copied nor written out whole.

use serde::ser::{Serialize, SerializeMap, SerializeSeq, Serializer};
use serde_json::{Map, Value};

use crate::html::escape_text;

/// Deepest schema nesting shown.
const MAX_SCHEMA_DEPTH: usize = 6;
/// Most schema properties (and parameters) shown in one operation.
const MAX_ITEMS: usize = 400;
/// Longest example shown, in bytes.
const MAX_EXAMPLE_BYTES: usize = 8 * 1024;
/// Most `$ref` hops followed to reach a definition.
const MAX_REF_HOPS: usize = 16;
/// Most bytes of the document's text (names, descriptions, examples) shown in one
/// operation; past it, texts are cut. With the item budget, this bounds the HTML's size.
const MAX_TEXT_BYTES: usize = 96 * 1024;
/// Longest single text shown (a description, a name): one cannot spend the whole budget.
const MAX_PIECE_BYTES: usize = 16 * 1024;
/// Longest `$ref` followed: a real one is a short pointer, and following one reads it whole.
const MAX_REF_BYTES: usize = 1024;
/// Longest type, format or reference name shown in a label, in bytes.
const MAX_LABEL_BYTES: usize = 120;
/// Most parts of an `allOf`, types of a type list, and `required` names read per schema.
const MAX_PARTS: usize = 32;
const MAX_REQUIRED: usize = 1000;

const METHODS: &[&str] = &[
    "get", "put", "post", "delete", "options", "head", "patch", "trace",
];

/// The operation `method path` of `doc` as HTML, or `None` when the specification has no
/// such operation.
pub fn operation(doc: &Value, path: &str, method: &str) -> Option<String> {
    let method = method.to_ascii_lowercase();
    if !METHODS.contains(&method.as_str()) {
        return None;
    }
    let item = resolve(doc, doc.get("paths")?.get(path)?)?;
    let op = resolve(doc, item.get(&method)?)?.as_object()?;
    let mut r = Renderer {
        doc,
        budget: MAX_ITEMS,
        text_budget: MAX_TEXT_BYTES,
        out: String::new(),
    };
    r.out.push_str("<div class=\"openapi openapi-operation\">");
    r.out.push_str(&format!(
        "<div class=\"openapi-head\"><span class=\"openapi-method method-{method}\">{}</span> <code class=\"openapi-path\">",
        method.to_ascii_uppercase(),
    ));
    r.text(path);
    r.out.push_str("</code></div>");
    if op.get("deprecated") == Some(&Value::Bool(true)) {
        r.out
            .push_str("<p class=\"openapi-deprecated\">Deprecated</p>");
    }
    for (key, class) in [
        ("summary", "openapi-summary"),
        ("description", "openapi-description"),
    ] {
        if let Some(text) = op.get(key).and_then(Value::as_str) {
            r.paragraph(class, text);
        }
    }
    if let Some(url) = first_server(doc, item, op) {
        r.out.push_str("<p class=\"openapi-server\"><code>");
        r.text(url);
        r.out.push_str("</code></p>");
    }
    r.parameters(item, op);
    if let Some(body) = op.get("requestBody").and_then(|b| resolve(doc, b)) {
        r.out
            .push_str("<section class=\"openapi-request\"><h4>Request body</h4>");
        if body.get("required") == Some(&Value::Bool(true)) {
            r.out.push_str("<p class=\"openapi-required\">Required</p>");
        }
        if let Some(text) = body.get("description").and_then(Value::as_str) {
            r.paragraph("openapi-description", text);
        }
        r.media(body.get("content"));
        r.out.push_str("</section>");
    }
    if let Some(Value::Object(responses)) = op.get("responses") {
        r.out
            .push_str("<section class=\"openapi-responses\"><h4>Responses</h4>");
        for (status, response) in responses {
            if r.budget == 0 {
                break;
            }
            r.budget -= 1;
            let Some(response) = resolve(doc, response) else {
                continue;
            };
            r.out.push_str(
                "<details class=\"openapi-response\"><summary><span class=\"openapi-status\">",
            );
            r.text(status);
            r.out.push_str("</span> ");
            let description = response
                .get("description")
                .and_then(Value::as_str)
                .unwrap_or("");
            r.text(description);
            r.out.push_str("</summary>");
            r.media(response.get("content"));
            r.out.push_str("</details>");
        }
        r.out.push_str("</section>");
    }
    r.out.push_str("</div>");
    Some(r.out)
}

/// The first server of the operation, its path or the document.
fn first_server<'a>(
    doc: &'a Value,
    item: &'a Value,
    op: &'a Map<String, Value>,
) -> Option<&'a str> {
    [op.get("servers"), item.get("servers"), doc.get("servers")]
        .into_iter()
        .flatten()
        .find_map(|s| s.get(0)?.get("url")?.as_str())
}

/// Follows `$ref`s (local ones only, to [`MAX_REF_BYTES`]) to the value they name.
fn resolve<'a>(doc: &'a Value, mut v: &'a Value) -> Option<&'a Value> {
    for _ in 0..MAX_REF_HOPS {
        match v.get("$ref").and_then(Value::as_str) {
            Some(r) if r.len() > MAX_REF_BYTES => return None,
            Some(r) => v = super::resolve_pointer(doc, r.strip_prefix('#')?)?,
            None => return Some(v),
        }
    }
    None
}

/// The last segment of a `$ref` (`#/components/schemas/Pet` → `Pet`), cut to a label's length.
fn ref_name(r: &str) -> &str {
    clip(r.rsplit('/').next().unwrap_or(r), MAX_LABEL_BYTES)
}

/// The start of `s`, at most `max` bytes, cut at a character boundary.
pub(crate) fn clip(s: &str, max: usize) -> &str {
    if s.len() <= max {
        return s;
    }
    let mut cut = max;
    while !s.is_char_boundary(cut) {
        cut -= 1;
    }
    &s[..cut]
}

struct Renderer<'a> {
    doc: &'a Value,
    /// Items (properties, parameters, alternatives, responses, media types) left to show.
    budget: usize,
    /// Bytes of the document's text left to show.
    text_budget: usize,
    out: String,
}

impl<'a> Renderer<'a> {
    /// Appends `s` escaped, cut (with `…`) to [`MAX_PIECE_BYTES`] and to what is left of
    /// the text budget.
    fn text(&mut self, s: &str) {
        let shown = clip(s, self.text_budget.min(MAX_PIECE_BYTES));
        self.text_budget -= shown.len();
        crate::html::escape_text_into(&mut self.out, shown);
        if shown.len() < s.len() {
            self.out.push('…');
        }
    }

    fn paragraph(&mut self, class: &str, text: &str) {
        self.out.push_str(&format!("<p class=\"{class}\">"));
        self.text(text);
        self.out.push_str("</p>");
    }

    /// The parameters of the path item, overridden by the operation's own (same name and
    /// location).
    fn parameters(&mut self, item: &'a Value, op: &'a Map<String, Value>) {
        let mut params: Vec<&Value> = Vec::new();
        for list in [item.get("parameters"), op.get("parameters")]
            .into_iter()
            .flatten()
        {
            // No more than can be shown: the overriding below compares every pair.
            for p in list.as_array().into_iter().flatten().take(MAX_ITEMS) {
                let Some(p) = resolve(self.doc, p) else {
                    continue;
                };
                let key = (p.get("name"), p.get("in"));
                params.retain(|q| (q.get("name"), q.get("in")) != key);
                params.push(p);
            }
        }
        if params.is_empty() {
            return;
        }
        self.out.push_str("<section class=\"openapi-parameters\"><h4>Parameters</h4><table><thead><tr><th>Name</th><th>In</th><th>Type</th><th>Description</th></tr></thead><tbody>");
        for p in params {
            if self.budget == 0 {
                break;
            }
            self.budget -= 1;
            let name = p.get("name").and_then(Value::as_str).unwrap_or("");
            let place = p.get("in").and_then(Value::as_str).unwrap_or("");
            let required = p.get("required") == Some(&Value::Bool(true));
            let ty = p
                .get("schema")
                .map(|s| self.type_label(s))
                .unwrap_or_default();
            self.out.push_str("<tr><td><code>");
            self.text(name);
            self.out.push_str("</code>");
            if required {
                self.out
                    .push_str(" <span class=\"openapi-required\">required</span>");
            }
            self.out.push_str("</td><td>");
            self.text(place);
            self.out.push_str("</td><td><span class=\"openapi-type\">");
            self.text(&ty);
            self.out.push_str("</span></td><td>");
            self.text(p.get("description").and_then(Value::as_str).unwrap_or(""));
            self.out.push_str("</td></tr>");
        }
        self.out.push_str("</tbody></table></section>");
    }

    /// The media types of a request or response, each with its schema and example.
    fn media(&mut self, content: Option<&'a Value>) {
        let Some(Value::Object(content)) = content else {
            return;
        };
        for (media_type, media) in content {
            if self.budget == 0 {
                break;
            }
            self.budget -= 1;
            self.out.push_str("<div class=\"openapi-media\"><p><code>");
            self.text(media_type);
            self.out.push_str("</code></p>");
            if let Some(schema) = media.get("schema") {
                let mut open = Vec::new();
                self.schema(schema, 0, &mut open);
            }
            let example = media
                .get("example")
                .map(Example::Doc)
                .or_else(|| {
                    media
                        .get("examples")?
                        .as_object()?
                        .values()
                        .take(MAX_PARTS)
                        .find_map(|e| resolve(self.doc, e)?.get("value").map(Example::Doc))
                })
                .or_else(|| {
                    let mut open = Vec::new();
                    media.get("schema").map(|s| self.example(s, 0, &mut open))
                });
            if let Some(example) = example {
                let max = MAX_EXAMPLE_BYTES.min(self.text_budget);
                let (text, cut) = capped_json(&example, max, true);
                self.text_budget -= text.len();
                self.out.push_str("<pre class=\"openapi-example\"><code>");
                crate::html::escape_text_into(&mut self.out, &text);
                if cut {
                    self.out.push_str("\n…");
                }
                self.out.push_str("</code></pre>");
            }
            self.out.push_str("</div>");
        }
    }

    /// A short label of a schema's type: `string (uuid)`, `array of Pet`, `Pet`, `integer | null`.
    fn type_label(&self, schema: &Value) -> String {
        let mut label = String::new();
        let mut s = schema;
        // Arrays of arrays, unrolled to a few levels: no recursion.
        for _ in 0..MAX_SCHEMA_DEPTH {
            match s.get("items") {
                Some(items) if s.get("type").and_then(Value::as_str) == Some("array") => {
                    label.push_str("array of ");
                    s = items;
                }
                _ => break,
            }
        }
        label.push_str(&single_label(s));
        label
    }

    /// A schema as a nested list of its properties, to [`MAX_SCHEMA_DEPTH`]; `open` holds
    /// the references being expanded above (a reference met again is recursive).
    fn schema(&mut self, schema: &'a Value, depth: usize, open: &mut Vec<&'a str>) {
        let (schema, name) = match schema.get("$ref").and_then(Value::as_str) {
            Some(r) => {
                if open.contains(&r) {
                    self.out.push_str(&format!(
                        "<p class=\"openapi-recursive\">{} (recursive)</p>",
                        escape_text(ref_name(r))
                    ));
                    return;
                }
                match resolve(self.doc, schema) {
                    Some(s) => (s, Some(r)),
                    None => return,
                }
            }
            None => (schema, None),
        };
        if depth >= MAX_SCHEMA_DEPTH || self.budget == 0 {
            return;
        }
        if let Some(r) = name {
            open.push(r);
        }
        // Read no more than can be shown: a schema may be visited through many references.
        let mut properties: Vec<(&'a String, &'a Value)> = Vec::new();
        let mut required: Vec<&'a str> = Vec::new();
        let parts: Vec<&'a Value> = match schema.get("allOf").and_then(Value::as_array) {
            Some(all) => all
                .iter()
                .take(MAX_PARTS)
                .filter_map(|s| resolve(self.doc, s))
                .chain([schema])
                .collect(),
            None => vec![schema],
        };
        for part in parts {
            if let Some(Value::Object(props)) = part.get("properties") {
                let room = (self.budget + 1).saturating_sub(properties.len());
                properties.extend(props.iter().take(room));
            }
            if let Some(Value::Array(req)) = part.get("required") {
                let room = MAX_REQUIRED.saturating_sub(required.len());
                required.extend(req.iter().take(room).filter_map(Value::as_str));
            }
        }
        if let Some(items) = schema.get("items") {
            if properties.is_empty() && schema.get("type").and_then(Value::as_str) == Some("array")
            {
                self.schema(items, depth + 1, open);
            }
        }
        for key in ["oneOf", "anyOf"] {
            if let Some(Value::Array(alternatives)) = schema.get(key) {
                self.out.push_str(&format!(
                    "<ul class=\"openapi-alternatives\" data-kind=\"{}\">",
                    if key == "oneOf" { "one-of" } else { "any-of" }
                ));
                for alternative in alternatives {
                    if self.budget == 0 {
                        break;
                    }
                    self.budget -= 1;
                    self.out.push_str("<li><span class=\"openapi-type\">");
                    let label = self.type_label(alternative);
                    self.text(&label);
                    self.out.push_str("</span>");
                    self.schema(alternative, depth + 1, open);
                    self.out.push_str("</li>");
                }
                self.out.push_str("</ul>");
            }
        }
        if !properties.is_empty() {
            self.out.push_str("<ul class=\"openapi-schema\">");
            for (prop, value) in properties {
                if self.budget == 0 {
                    self.out.push_str("<li>…</li>");
                    break;
                }
                self.budget -= 1;
                self.out.push_str("<li><code>");
                self.text(prop);
                self.out.push_str("</code> <span class=\"openapi-type\">");
                let label = self.type_label(value);
                self.text(&label);
                self.out.push_str("</span>");
                if required.contains(&prop.as_str()) {
                    self.out
                        .push_str(" <span class=\"openapi-required\">required</span>");
                }
                let shown = resolve(self.doc, value).unwrap_or(value);
                if let Some(Value::Array(values)) = shown.get("enum") {
                    let list: Vec<String> = values
                        .iter()
                        .take(20)
                        .map(|v| {
                            let (text, cut) = capped_json(&Example::Doc(v), MAX_LABEL_BYTES, false);
                            if cut {
                                text + "…"
                            } else {
                                text
                            }
                        })
                        .collect();
                    self.out.push_str(" <span class=\"openapi-enum\">");
                    self.text(&list.join(", "));
                    self.out.push_str("</span>");
                }
                if let Some(text) = value.get("description").and_then(Value::as_str) {
                    self.out.push_str(" <span class=\"openapi-description\">");
                    self.text(text);
                    self.out.push_str("</span>");
                }
                self.schema(value, depth + 1, open);
                self.out.push_str("</li>");
            }
            self.out.push_str("</ul>");
        }
        if name.is_some() {
            open.pop();
        }
    }

    /// An example value made from a schema (its own `example`, a default, the first enum
    /// value, or a value of its type), to [`MAX_SCHEMA_DEPTH`]; the document's values in
    /// it are borrowed, not copied.
    fn example(&mut self, schema: &'a Value, depth: usize, open: &mut Vec<&'a str>) -> Example<'a> {
        let reference = schema.get("$ref").and_then(Value::as_str);
        if let Some(r) = reference {
            if open.contains(&r) {
                return Example::Made(Value::Null);
            }
        }
        let Some(schema) = resolve(self.doc, schema) else {
            return Example::Made(Value::Null);
        };
        for key in ["example", "default"] {
            if let Some(v) = schema.get(key) {
                return Example::Doc(v);
            }
        }
        if let Some(Value::Array(values)) = schema.get("enum") {
            return values
                .first()
                .map_or(Example::Made(Value::Null), Example::Doc);
        }
        if depth >= MAX_SCHEMA_DEPTH || self.budget == 0 {
            return Example::Made(Value::Null);
        }
        self.budget -= 1;
        if let Some(r) = reference {
            open.push(r);
        }
        let ty = match schema.get("type") {
            Some(Value::String(t)) => t.as_str(),
            Some(Value::Array(ts)) => ts
                .iter()
                .filter_map(Value::as_str)
                .find(|t| *t != "null")
                .unwrap_or("null"),
            _ if schema.get("properties").is_some() || schema.get("allOf").is_some() => "object",
            _ => "",
        };
        let value = match ty {
            "object" => {
                let mut out: Vec<(&'a str, Example<'a>)> = Vec::new();
                let parts: Vec<&'a Value> = match schema.get("allOf").and_then(Value::as_array) {
                    Some(all) => all.iter().take(MAX_PARTS).chain([schema]).collect(),
                    None => vec![schema],
                };
                for part in parts {
                    let part = resolve(self.doc, part).unwrap_or(part);
                    if let Some(Value::Object(props)) = part.get("properties") {
                        for (k, v) in props {
                            if self.budget == 0 {
                                break;
                            }
                            // Each property is an item, even one whose example is given.
                            self.budget -= 1;
                            let example = self.example(v, depth + 1, open);
                            // A later part's property replaces an earlier one, as in a map.
                            out.retain(|(key, _)| *key != k.as_str());
                            out.push((k.as_str(), example));
                        }
                    }
                }
                Example::Object(out)
            }
            "array" => match schema.get("items") {
                Some(items) => Example::Array(vec![self.example(items, depth + 1, open)]),
                None => Example::Array(Vec::new()),
            },
            "string" => Example::Made(Value::String(
                match schema.get("format").and_then(Value::as_str) {
                    Some("date-time") => "2024-01-01T00:00:00Z".into(),
                    Some("date") => "2024-01-01".into(),
                    Some("uuid") => "00000000-0000-0000-0000-000000000000".into(),
                    Some("email") => "name@example.com".into(),
                    Some("uri") | Some("url") => "https://example.com".into(),
                    _ => "text".into(),
                },
            )),
            "integer" => Example::Made(Value::from(0)),
            "number" => Example::Made(Value::from(0.0)),
            "boolean" => Example::Made(Value::Bool(true)),
            _ => match schema
                .get("oneOf")
                .or_else(|| schema.get("anyOf"))
                .and_then(|a| a.get(0))
            {
                Some(first) => self.example(first, depth + 1, open),
                None => Example::Made(Value::Null),
            },
        };
        if reference.is_some() {
            open.pop();
        }
        value
    }
}

/// The label of one schema, not looking inside arrays; the document's names in it are cut
/// to [`MAX_LABEL_BYTES`] each.
fn single_label(schema: &Value) -> String {
    if let Some(r) = schema.get("$ref").and_then(Value::as_str) {
        return ref_name(r).to_string();
    }
    let mut label = match schema.get("type") {
        Some(Value::String(t)) => clip(t, MAX_LABEL_BYTES).to_string(),
        Some(Value::Array(ts)) => ts
            .iter()
            .take(MAX_PARTS)
            .filter_map(Value::as_str)
            .map(|t| clip(t, MAX_LABEL_BYTES))
            .collect::<Vec<_>>()
            .join(" | "),
        _ if schema.get("oneOf").is_some() => "one of".into(),
        _ if schema.get("anyOf").is_some() => "any of".into(),
        _ if schema.get("allOf").is_some() || schema.get("properties").is_some() => "object".into(),
        _ => String::new(),
    };
    if let Some(f) = schema.get("format").and_then(Value::as_str) {
        label.push_str(&format!(" ({})", clip(f, MAX_LABEL_BYTES)));
    }
    if schema.get("nullable") == Some(&Value::Bool(true)) {
        label.push_str(" | null");
    }
    label
}

/// An example: a value of the document (borrowed), a value made here, or an object or list
/// made around such values.
enum Example<'a> {
    Doc(&'a Value),
    Made(Value),
    Object(Vec<(&'a str, Example<'a>)>),
    Array(Vec<Example<'a>>),
}

impl Serialize for Example<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Example::Doc(v) => v.serialize(s),
            Example::Made(v) => v.serialize(s),
            Example::Object(entries) => {
                let mut map = s.serialize_map(Some(entries.len()))?;
                for (k, v) in entries {
                    map.serialize_entry(k, v)?;
                }
                map.end()
            }
            Example::Array(items) => {
                let mut seq = s.serialize_seq(Some(items.len()))?;
                for v in items {
                    seq.serialize_element(v)?;
                }
                seq.end()
            }
        }
    }
}

/// A buffer that takes at most `max` bytes, then refuses: the serialiser writing into it
/// stops there, however large the value.
struct Capped {
    bytes: Vec<u8>,
    max: usize,
}

impl std::io::Write for Capped {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let room = self.max - self.bytes.len();
        if room == 0 {
            return Err(std::io::Error::other("full"));
        }
        let n = buf.len().min(room);
        self.bytes.extend_from_slice(&buf[..n]);
        Ok(n)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// `value` as JSON (pretty or compact), at most `max` bytes of it, and whether it was cut.
/// Serialising stops once the buffer is full, so the cost follows `max`, not the value.
fn capped_json(value: &Example<'_>, max: usize, pretty: bool) -> (String, bool) {
    // One byte more than shown tells a value that fits exactly from one that was cut.
    let mut buf = Capped {
        bytes: Vec::new(),
        max: max + 1,
    };
    let _ = if pretty {
        serde_json::to_writer_pretty(&mut buf, value)
    } else {
        serde_json::to_writer(&mut buf, value)
    };
    let mut bytes = buf.bytes;
    let cut = bytes.len() > max;
    bytes.truncate(max);
    // The cut may fall inside a character: keep the whole ones.
    let text = match String::from_utf8(bytes) {
        Ok(text) => text,
        Err(e) => {
            let valid = e.utf8_error().valid_up_to();
            let mut bytes = e.into_bytes();
            bytes.truncate(valid);
            String::from_utf8(bytes).unwrap_or_default()
        }
    };
    (text, cut)
}
