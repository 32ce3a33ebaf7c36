//! Rendering one operation of a specification as safe HTML: method and path, summary and
//! description, parameters, request body and responses with their schemas, and examples.
//!
//! Every text of the specification is escaped; nothing it holds becomes markup, a link or a
//! script. Schemas are walked to a fixed depth with a budget of rendered properties, and a
//! reference already open on the way down is shown as recursive instead of followed, so a
//! cyclic or explosive specification renders small and fast.

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
        out: String::new(),
    };
    r.out.push_str("<div class=\"openapi openapi-operation\">");
    r.out.push_str(&format!(
        "<div class=\"openapi-head\"><span class=\"openapi-method method-{method}\">{}</span> <code class=\"openapi-path\">{}</code></div>",
        method.to_ascii_uppercase(),
        escape_text(path)
    ));
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
        r.out.push_str(&format!(
            "<p class=\"openapi-server\"><code>{}</code></p>",
            escape_text(url)
        ));
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
            let Some(response) = resolve(doc, response) else {
                continue;
            };
            r.out.push_str(&format!(
                "<details class=\"openapi-response\"><summary><span class=\"openapi-status\">{}</span> ",
                escape_text(status)
            ));
            let description = response
                .get("description")
                .and_then(Value::as_str)
                .unwrap_or("");
            r.out.push_str(&escape_text(description));
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

/// Follows `$ref`s (local ones only) to the value they name.
fn resolve<'a>(doc: &'a Value, mut v: &'a Value) -> Option<&'a Value> {
    for _ in 0..MAX_REF_HOPS {
        match v.get("$ref").and_then(Value::as_str) {
            Some(r) => v = super::resolve_pointer(doc, r.strip_prefix('#')?)?,
            None => return Some(v),
        }
    }
    None
}

/// The last segment of a `$ref` (`#/components/schemas/Pet` → `Pet`).
fn ref_name(r: &str) -> &str {
    r.rsplit('/').next().unwrap_or(r)
}

struct Renderer<'a> {
    doc: &'a Value,
    budget: usize,
    out: String,
}

impl<'a> Renderer<'a> {
    fn paragraph(&mut self, class: &str, text: &str) {
        self.out.push_str(&format!("<p class=\"{class}\">"));
        self.out.push_str(&escape_text(text));
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
            for p in list.as_array().into_iter().flatten() {
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
            self.out.push_str(&format!(
                "<tr><td><code>{}</code>{}</td><td>{}</td><td><span class=\"openapi-type\">{}</span></td><td>{}</td></tr>",
                escape_text(name),
                if required { " <span class=\"openapi-required\">required</span>" } else { "" },
                escape_text(place),
                escape_text(&ty),
                escape_text(p.get("description").and_then(Value::as_str).unwrap_or(""))
            ));
        }
        self.out.push_str("</tbody></table></section>");
    }

    /// The media types of a request or response, each with its schema and example.
    fn media(&mut self, content: Option<&'a Value>) {
        let Some(Value::Object(content)) = content else {
            return;
        };
        for (media_type, media) in content {
            self.out.push_str(&format!(
                "<div class=\"openapi-media\"><p><code>{}</code></p>",
                escape_text(media_type)
            ));
            if let Some(schema) = media.get("schema") {
                let mut open = Vec::new();
                self.schema(schema, 0, &mut open);
            }
            let example = media
                .get("example")
                .cloned()
                .or_else(|| {
                    media
                        .get("examples")?
                        .as_object()?
                        .values()
                        .find_map(|e| resolve(self.doc, e)?.get("value").cloned())
                })
                .or_else(|| {
                    let mut open = Vec::new();
                    media.get("schema").map(|s| self.example(s, 0, &mut open))
                });
            if let Some(example) = example {
                let mut text = serde_json::to_string_pretty(&example).unwrap_or_default();
                if text.len() > MAX_EXAMPLE_BYTES {
                    let mut cut = MAX_EXAMPLE_BYTES;
                    while !text.is_char_boundary(cut) {
                        cut -= 1;
                    }
                    text.truncate(cut);
                    text.push_str("\n…");
                }
                self.out.push_str("<pre class=\"openapi-example\"><code>");
                self.out.push_str(&escape_text(&text));
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
        let mut properties: Vec<(&'a String, &'a Value)> = Vec::new();
        let mut required: Vec<&'a str> = Vec::new();
        let parts: Vec<&'a Value> = match schema.get("allOf").and_then(Value::as_array) {
            Some(all) => all
                .iter()
                .filter_map(|s| resolve(self.doc, s))
                .chain([schema])
                .collect(),
            None => vec![schema],
        };
        for part in parts {
            if let Some(Value::Object(props)) = part.get("properties") {
                properties.extend(props.iter());
            }
            if let Some(Value::Array(req)) = part.get("required") {
                required.extend(req.iter().filter_map(Value::as_str));
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
                    self.out.push_str(&format!(
                        "<li><span class=\"openapi-type\">{}</span>",
                        escape_text(&self.type_label(alternative))
                    ));
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
                self.out.push_str(&format!(
                    "<li><code>{}</code> <span class=\"openapi-type\">{}</span>",
                    escape_text(prop),
                    escape_text(&self.type_label(value))
                ));
                if required.contains(&prop.as_str()) {
                    self.out
                        .push_str(" <span class=\"openapi-required\">required</span>");
                }
                let shown = resolve(self.doc, value).unwrap_or(value);
                if let Some(Value::Array(values)) = shown.get("enum") {
                    let list: Vec<String> = values.iter().take(20).map(Value::to_string).collect();
                    self.out.push_str(&format!(
                        " <span class=\"openapi-enum\">{}</span>",
                        escape_text(&list.join(", "))
                    ));
                }
                if let Some(text) = value.get("description").and_then(Value::as_str) {
                    self.out.push_str(" <span class=\"openapi-description\">");
                    self.out.push_str(&escape_text(text));
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
    /// value, or a value of its type), to [`MAX_SCHEMA_DEPTH`].
    fn example(&mut self, schema: &'a Value, depth: usize, open: &mut Vec<&'a str>) -> Value {
        let reference = schema.get("$ref").and_then(Value::as_str);
        if let Some(r) = reference {
            if open.contains(&r) {
                return Value::Null;
            }
        }
        let Some(schema) = resolve(self.doc, schema) else {
            return Value::Null;
        };
        for key in ["example", "default"] {
            if let Some(v) = schema.get(key) {
                return v.clone();
            }
        }
        if let Some(Value::Array(values)) = schema.get("enum") {
            return values.first().cloned().unwrap_or(Value::Null);
        }
        if depth >= MAX_SCHEMA_DEPTH || self.budget == 0 {
            return Value::Null;
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
                let mut out = Map::new();
                let parts: Vec<&'a Value> = match schema.get("allOf").and_then(Value::as_array) {
                    Some(all) => all.iter().chain([schema]).collect(),
                    None => vec![schema],
                };
                for part in parts {
                    let part = resolve(self.doc, part).unwrap_or(part);
                    if let Some(Value::Object(props)) = part.get("properties") {
                        for (k, v) in props {
                            if self.budget == 0 {
                                break;
                            }
                            let example = self.example(v, depth + 1, open);
                            out.insert(k.clone(), example);
                        }
                    }
                }
                Value::Object(out)
            }
            "array" => match schema.get("items") {
                Some(items) => Value::Array(vec![self.example(items, depth + 1, open)]),
                None => Value::Array(Vec::new()),
            },
            "string" => Value::String(match schema.get("format").and_then(Value::as_str) {
                Some("date-time") => "2024-01-01T00:00:00Z".into(),
                Some("date") => "2024-01-01".into(),
                Some("uuid") => "00000000-0000-0000-0000-000000000000".into(),
                Some("email") => "name@example.com".into(),
                Some("uri") | Some("url") => "https://example.com".into(),
                _ => "text".into(),
            }),
            "integer" => Value::from(0),
            "number" => Value::from(0.0),
            "boolean" => Value::Bool(true),
            _ => match schema
                .get("oneOf")
                .or_else(|| schema.get("anyOf"))
                .and_then(|a| a.get(0))
            {
                Some(first) => self.example(first, depth + 1, open),
                None => Value::Null,
            },
        };
        if reference.is_some() {
            open.pop();
        }
        value
    }
}

/// The label of one schema, not looking inside arrays.
fn single_label(schema: &Value) -> String {
    if let Some(r) = schema.get("$ref").and_then(Value::as_str) {
        return ref_name(r).to_string();
    }
    let mut label = match schema.get("type") {
        Some(Value::String(t)) => t.clone(),
        Some(Value::Array(ts)) => ts
            .iter()
            .filter_map(Value::as_str)
            .collect::<Vec<_>>()
            .join(" | "),
        _ if schema.get("oneOf").is_some() => "one of".into(),
        _ if schema.get("anyOf").is_some() => "any of".into(),
        _ if schema.get("allOf").is_some() || schema.get("properties").is_some() => "object".into(),
        _ => String::new(),
    };
    if let Some(f) = schema.get("format").and_then(Value::as_str) {
        label.push_str(&format!(" ({f})"));
    }
    if schema.get("nullable") == Some(&Value::Bool(true)) {
        label.push_str(" | null");
    }
    label
}
