//! Adaptive content: the JSON Schema of a site's visitor claims, checked with a JSON Schema
//! library, and the conditions suggested from it.

use serde_json::{json, Map, Value};

use crate::error::{ApiError, ApiResult};

/// Most claims one schema declares.
pub const MAX_CLAIMS: usize = 100;

/// The shape Quire accepts: boolean claims, optionally grouped under `unsigned`.
fn shape() -> Value {
    json!({
        "type": "object",
        "required": ["type", "properties", "additionalProperties"],
        "additionalProperties": false,
        "properties": {
            "$schema": { "const": "http://json-schema.org/draft-07/schema#" },
            "type": { "const": "object" },
            "description": { "type": "string" },
            "required": { "type": "array", "items": { "type": "string" } },
            "additionalProperties": { "const": false },
            "properties": {
                "type": "object",
                "maxProperties": MAX_CLAIMS,
                "properties": { "unsigned": { "$ref": "#/definitions/unsigned" } },
                "additionalProperties": { "$ref": "#/definitions/claim" }
            }
        },
        "definitions": {
            "claim": {
                "type": "object",
                "required": ["type"],
                "additionalProperties": false,
                "properties": {
                    "type": { "const": "boolean" },
                    "description": { "type": "string", "maxLength": 500 }
                }
            },
            "unsigned": {
                "type": "object",
                "required": ["type", "properties", "description", "additionalProperties"],
                "additionalProperties": false,
                "properties": {
                    "type": { "const": "object" },
                    "description": { "const": "Unsigned claims of the site visitor." },
                    "additionalProperties": { "const": false },
                    "required": { "type": "array", "items": { "type": "string" } },
                    "properties": {
                        "type": "object",
                        "maxProperties": MAX_CLAIMS,
                        "additionalProperties": { "$ref": "#/definitions/claim" }
                    }
                }
            }
        }
    })
}

/// Fills in what the official schema requires and a caller may leave out:
/// `additionalProperties: false` at the top and in `unsigned`, `unsigned`'s fixed
/// description, and each claim's description.
fn complete(schema: &mut Value) {
    let Some(top) = schema.as_object_mut() else {
        return;
    };
    top.entry("additionalProperties").or_insert(json!(false));
    let Some(props) = top.get_mut("properties").and_then(Value::as_object_mut) else {
        return;
    };
    describe_claims(props);
    if let Some(unsigned) = props.get_mut("unsigned").and_then(Value::as_object_mut) {
        unsigned
            .entry("additionalProperties")
            .or_insert(json!(false));
        unsigned
            .entry("description")
            .or_insert(json!("Unsigned claims of the site visitor."));
        if let Some(inner) = unsigned
            .get_mut("properties")
            .and_then(Value::as_object_mut)
        {
            describe_claims(inner);
        }
    }
}

/// Every claim carries a description (the official schema requires one): its name, when
/// none was given.
fn describe_claims(props: &mut Map<String, Value>) {
    for (name, claim) in props.iter_mut() {
        if name == "unsigned" {
            continue;
        }
        if let Some(claim) = claim.as_object_mut() {
            claim
                .entry("description")
                .or_insert_with(|| json!(name.clone()));
        }
    }
}

/// Checks (and completes) a site's adaptive schema: a valid draft-07 JSON Schema whose
/// properties are boolean claims, optionally under `unsigned`. 400 names what is wrong.
pub fn check_schema(schema: &mut Value) -> ApiResult<()> {
    complete(schema);
    let mut schemas = boon::Schemas::new();
    // Compiling checks the schema against the draft-07 meta-schema.
    compile(&mut schemas, "urn:quire:site-schema", schema.clone()).map_err(|why| {
        ApiError::bad_request(format!(
            "`jsonSchema` is not a valid JSON Schema (draft-07): {why}."
        ))
    })?;
    let shape = compile(&mut schemas, "urn:quire:adaptive-shape", shape())
        .map_err(|why| ApiError::internal(anyhow::anyhow!("adaptive schema shape: {why}")))?;
    if let Err(e) = schemas.validate(schema, shape) {
        let (at, what) = innermost(&e);
        return Err(ApiError::bad_request(format!(
            "`jsonSchema{at}`: {what}; the schema must describe boolean claims, optionally under `unsigned`."
        )));
    }
    Ok(())
}

/// Compiles a draft-07 schema that can load nothing: a `$ref` may only point inside it.
/// The error says what is wrong, and where.
fn compile(
    schemas: &mut boon::Schemas,
    url: &str,
    schema: Value,
) -> Result<boon::SchemaIndex, String> {
    struct Nothing;
    impl boon::UrlLoader for Nothing {
        fn load(&self, url: &str) -> Result<Value, Box<dyn std::error::Error>> {
            Err(format!("`{url}` is outside the schema; references must stay inside it").into())
        }
    }
    let mut compiler = boon::Compiler::new();
    compiler.set_default_draft(boon::Draft::V7);
    compiler.use_loader(Box::new(Nothing));
    let why = |e: boon::CompileError| match e {
        boon::CompileError::ValidationError { src, .. } => {
            let (at, what) = innermost(&src);
            format!("{what} at `{at}`")
        }
        other => other.to_string(),
    };
    compiler.add_resource(url, schema).map_err(why)?;
    compiler.compile(url, schemas).map_err(why)
}

/// The first innermost error (what a person can act on): where, and what.
fn innermost(e: &boon::ValidationError<'_, '_>) -> (String, String) {
    let mut e = e;
    while let Some(cause) = e.causes.first() {
        e = cause;
    }
    (e.instance_location.to_string(), e.kind.to_string())
}

/// How a claim is read in a condition: `visitor.claims.beta` or `visitor.claims["my-claim"]`.
fn member(base: &str, name: &str) -> String {
    let ident = name
        .chars()
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_' || c == '$')
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '$');
    if ident {
        format!("{base}.{name}")
    } else {
        format!("{base}[{}]", Value::String(name.to_string()))
    }
}

/// One suggested condition per claim of a checked schema: `(description, condition)`.
pub fn template_conditions(schema: &Value) -> Vec<(String, String)> {
    let empty = Map::new();
    let props = schema
        .get("properties")
        .and_then(Value::as_object)
        .unwrap_or(&empty);
    let mut out = Vec::new();
    for (name, claim) in props {
        if name == "unsigned" {
            let inner = claim
                .get("properties")
                .and_then(Value::as_object)
                .unwrap_or(&empty);
            for (inner_name, _) in inner {
                out.push((
                    format!("Show to visitors whose unsigned claim `{inner_name}` is true"),
                    format!("{} === true", member("visitor.claims.unsigned", inner_name)),
                ));
            }
        } else {
            out.push((
                format!("Show to visitors whose claim `{name}` is true"),
                format!("{} === true", member("visitor.claims", name)),
            ));
        }
    }
    out
}
