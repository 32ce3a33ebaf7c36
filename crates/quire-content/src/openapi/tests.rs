use super::*;
use serde_json::json;

const MINIMAL_30: &str = "openapi: 3.0.3\ninfo:\n  title: Pets\n  version: '1'\npaths:\n  /pets:\n    get:\n      responses:\n        200:\n          description: OK\n          content:\n            application/json:\n              schema:\n                $ref: '#/components/schemas/Pet'\ncomponents:\n  schemas:\n    Pet:\n      type: object\n      properties:\n        id: { type: integer }\n        parent: { $ref: '#/components/schemas/Pet' }\n";

#[test]
fn yaml_reads_into_json_types() {
    let v =
        parse_text("a: 1\nb: 1.5\nc: true\nd: ~\ne: '1'\nf: hello\n200: x\ng: [1, two]\n").unwrap();
    assert_eq!(
        v,
        json!({"a": 1, "b": 1.5, "c": true, "d": null, "e": "1", "f": "hello", "200": "x", "g": [1, "two"]})
    );
}

#[test]
fn a_yaml_30_document_with_a_cycle_passes() {
    let checked = process(MINIMAL_30).unwrap();
    assert_eq!(checked.version, "3.0.3");
    assert_eq!(
        checked.document["paths"]["/pets"]["get"]["responses"]["200"]["description"],
        "OK"
    );
}

#[test]
fn json_documents_pass_and_swagger_is_refused_with_its_code() {
    let doc = r#"{"openapi":"3.1.0","info":{"title":"T","version":"1"},"components":{}}"#;
    assert_eq!(process(doc).unwrap().version, "3.1.0");
    let swagger = r#"{"swagger":"2.0","info":{"title":"T","version":"1"},"paths":{}}"#;
    assert_eq!(process(swagger).unwrap_err().code, "SWAGGER_2_UNSUPPORTED");
}

#[test]
fn broken_refs_and_bad_shapes_are_named() {
    let broken = MINIMAL_30.replace(
        "'#/components/schemas/Pet'\ncomp",
        "'#/components/schemas/Cat'\ncomp",
    );
    let err = process(&broken).unwrap_err();
    assert_eq!(err.code, "BROKEN_REF", "{err}");
    assert!(err.message.contains("#/components/schemas/Cat"));
    assert_eq!(
        process("openapi: 3.0.0\n").unwrap_err().code,
        "INVALID_SPEC"
    );
    assert_eq!(
        process("openapi: 2.5.0\ninfo: {title: a, version: b}\npaths: {}")
            .unwrap_err()
            .code,
        "UNSUPPORTED_VERSION"
    );
    assert_eq!(process("{\"a\": ").unwrap_err().code, "INVALID_JSON");
    assert_eq!(process("a: [1, 2").unwrap_err().code, "INVALID_YAML");
    assert_eq!(process("- 1\n- 2\n").unwrap_err().code, "INVALID_SPEC");
}

#[test]
fn an_alias_bomb_stops_early() {
    let mut yaml = String::from("a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n");
    for i in 1..30 {
        let p = i - 1;
        yaml.push_str(&format!(
            "a{i}: &a{i} [*a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}]\n"
        ));
    }
    let started = std::time::Instant::now();
    let err = parse_text(&yaml).unwrap_err();
    assert_eq!(err.code, "INVALID_YAML");
    assert!(err.message.contains("aliases"), "{err}");
    assert!(started.elapsed() < std::time::Duration::from_secs(5));
}

#[test]
fn deep_documents_are_refused_without_overflowing() {
    let depth = 100_000;
    let yaml = format!("{}1{}", "[".repeat(depth), "]".repeat(depth));
    // Flow collections would read as JSON; make it YAML by a leading key.
    let yaml = format!("a: {yaml}");
    let err = parse_text(&yaml).unwrap_err();
    assert_eq!(err.code, "INVALID_YAML", "{err}");
    let block: String = (0..5000)
        .map(|i| format!("{}k:\n", " ".repeat(i)))
        .collect();
    assert!(parse_text(&block).is_err());
    let json = format!("{}1{}", "{\"a\":".repeat(depth), "}".repeat(depth));
    assert_eq!(parse_text(&json).unwrap_err().code, "INVALID_JSON");
}

#[test]
fn unknown_aliases_and_recursive_anchors_are_errors() {
    assert!(parse_text("a: *nope\n").is_err());
    assert!(parse_text("a: &x\n  b: *x\n").is_err());
}

#[test]
fn an_operation_renders_escaped_with_its_parts() {
    let doc = process(MINIMAL_30).unwrap().document;
    assert!(render::operation(&doc, "/pets", "post").is_none());
    assert!(render::operation(&doc, "/nope", "get").is_none());
    let html = render::operation(&doc, "/pets", "GET").unwrap();
    assert!(
        html.contains("<span class=\"openapi-method method-get\">GET</span>"),
        "{html}"
    );
    assert!(
        html.contains("<span class=\"openapi-status\">200</span> OK"),
        "{html}"
    );
    assert!(
        html.contains("<code>parent</code> <span class=\"openapi-type\">Pet</span>"),
        "{html}"
    );
    assert!(html.contains("Pet (recursive)"), "{html}");
    assert!(html.contains("openapi-example"), "{html}");

    let hostile = json!({
        "openapi": "3.1.0",
        "info": { "title": "x", "version": "1" },
        "paths": { "/a<script>": { "get": {
            "summary": "<script>alert(1)</script>",
            "parameters": [{ "name": "<img src=x onerror=alert(1)>", "in": "query", "schema": { "type": "string" } }],
            "responses": { "200": { "description": "<b>ok</b>", "content": { "application/json": {
                "example": { "html": "</code></pre><script>alert(2)</script>" } } } } }
        } } }
    });
    check(&hostile).unwrap();
    let html = render::operation(&hostile, "/a<script>", "get").unwrap();
    assert!(!html.contains("<script"), "{html}");
    assert!(!html.contains("<img"), "{html}");
    assert!(!html.contains("<b>"), "{html}");
}

#[test]
fn explosive_schemas_render_small() {
    // Each schema has 30 properties referring to the next: 30^6 paths, cut by the budget.
    let mut schemas = serde_json::Map::new();
    for i in 0..10 {
        let props: serde_json::Map<String, serde_json::Value> = (0..30)
            .map(|p| {
                (
                    format!("p{p}"),
                    json!({ "$ref": format!("#/components/schemas/S{}", (i + 1) % 10) }),
                )
            })
            .collect();
        schemas.insert(
            format!("S{i}"),
            json!({ "type": "object", "properties": props }),
        );
    }
    let doc = json!({
        "openapi": "3.0.0", "info": { "title": "x", "version": "1" },
        "paths": { "/x": { "get": { "responses": { "200": { "description": "ok",
            "content": { "application/json": { "schema": { "$ref": "#/components/schemas/S0" } } } } } } } },
        "components": { "schemas": schemas }
    });
    check(&doc).unwrap();
    let started = std::time::Instant::now();
    let html = render::operation(&doc, "/x", "get").unwrap();
    assert!(html.len() < 200_000, "{}", html.len());
    assert!(started.elapsed() < std::time::Duration::from_secs(2));
}

#[test]
fn nested_anchors_count_their_copies() {
    // 100 anchored lists, each inside the next, around 30,000 values: a copy per level
    // would be 3,000,000 values.
    let mut yaml = String::from("a: ");
    for i in 0..100 {
        yaml.push_str(&format!("&l{i} ["));
    }
    yaml.push_str(&vec!["1"; 30_000].join(", "));
    yaml.push_str(&"]".repeat(100));
    let err = parse_text(&yaml).unwrap_err();
    assert!(err.message.contains("values"), "{err}");
    // A few anchors on small values are fine.
    assert!(parse_text("a: &x {b: 1}\nc: *x\nd: *x\n").is_ok());
}

/// A spec whose `x-big` holds a `len`-byte string, repeated by `aliases` aliases in `x-list`.
fn long_string_bomb(len: usize, aliases: usize) -> String {
    let mut yaml = format!(
        "openapi: 3.0.0\ninfo: {{title: t, version: '1'}}\npaths: {{}}\nx-big: &a \"{}\"\nx-list: [",
        "x".repeat(len)
    );
    yaml.push_str(&vec!["*a"; aliases].join(", "));
    yaml.push_str("]\n");
    yaml
}

#[test]
fn aliases_of_a_long_string_are_counted_by_their_bytes() {
    // 2 MiB repeated 5,000 times would be 10 GB: refused at the alias that first passes
    // the bound, so at most the bound is ever built.
    let yaml = long_string_bomb(2 * 1024 * 1024, 5_000);
    let err = parse_text(&yaml).unwrap_err();
    assert_eq!(err.code, "TOO_LARGE", "{err}");
    assert!(
        err.message
            .contains(&format!("{MAX_SPEC_BYTES} bytes (as JSON)")),
        "{err}"
    );
    // The line of `x-list`, and a column within its first aliases (each takes four).
    let column: usize = err
        .message
        .split("column ")
        .nth(1)
        .unwrap()
        .trim_end_matches(").")
        .parse()
        .unwrap();
    let allowed = MAX_SPEC_BYTES / (2 * 1024 * 1024);
    assert!(err.message.contains("line 5,"), "{err}");
    assert!(column <= "x-list: [".len() + 4 * allowed, "{err}");

    // A budget given by the caller (what a bundle has left) is held to the same way.
    let small = long_string_bomb(1000, 50);
    assert!(parse_text(&small).is_ok());
    let err = parse_text_within(&small, 20_000).unwrap_err();
    assert_eq!(err.code, "TOO_LARGE", "{err}");
    let (_, used) = parse_text_within(&small, 60_000).unwrap();
    assert!((51_000..60_000).contains(&used), "{used}");
}

#[test]
fn aliases_of_collections_are_counted_by_their_bytes() {
    // A list of 64 strings of 64 KiB (4 MiB), aliased 100 times: few values, 400 MiB.
    let item = format!("\"{}\"", "y".repeat(64 * 1024));
    let mut yaml = format!("x-big: &l [{}]\nx-list: [", vec![item; 64].join(", "));
    yaml.push_str(&vec!["*l"; 100].join(", "));
    yaml.push_str("]\n");
    let err = parse_text(&yaml).unwrap_err();
    assert_eq!(err.code, "TOO_LARGE", "{err}");
    // Keys count too: a map with one long key, aliased.
    let key = "k".repeat(1024 * 1024);
    let mut yaml = format!("x-big: &m {{{key}: 1}}\nx-list: [");
    yaml.push_str(&vec!["*m"; 40].join(", "));
    yaml.push_str("]\n");
    assert_eq!(parse_text(&yaml).unwrap_err().code, "TOO_LARGE");
}

#[test]
fn the_byte_count_is_the_documents_json_length() {
    let yaml =
        "a: &s \"q\\\"\\\\\\n\\u0001é\"\nb: [*s, 12, -1.5, true, null, {c: *s}]\nd: {1: x}\n";
    let (value, used) = parse_text_within(yaml, MAX_SPEC_BYTES).unwrap();
    let json = serde_json::to_string(&value).unwrap();
    // Counted generously (separators, the anchor's copy, numbers as quoted keys), never less.
    assert!(used >= json.len(), "{used} < {} for {json}", json.len());
    assert!(used < json.len() * 2, "{used} for {json}");
}

#[test]
fn a_spec_with_a_few_aliases_still_parses() {
    let yaml = "openapi: 3.0.3
info: {title: Pets, version: '1'}
paths:
  /pets:
    get:
      parameters:
        - &limit {name: limit, in: query, schema: {type: integer}}
      responses:
        200: &ok
          description: OK
          content:
            application/json:
              schema: {type: array, items: {type: string}}
  /cats:
    get:
      parameters: [*limit]
      responses:
        200: *ok
        201: *ok
";
    let checked = process(yaml).unwrap();
    let doc = checked.document;
    assert_eq!(
        doc["paths"]["/cats"]["get"]["responses"]["201"],
        doc["paths"]["/pets"]["get"]["responses"]["200"]
    );
    assert_eq!(
        doc["paths"]["/cats"]["get"]["parameters"][0]["name"],
        "limit"
    );
}

#[test]
fn error_messages_quote_the_document_briefly() {
    let target = format!("#/components/schemas/{}", "z".repeat(100_000));
    let doc = json!({
        "openapi": "3.1.0", "info": { "title": "x", "version": "1" },
        "components": { "schemas": { "A": { "$ref": target } } }
    });
    let err = check(&doc).unwrap_err();
    assert_eq!(err.code, "BROKEN_REF");
    assert!(err.message.len() < 1000, "{}", err.message.len());
}

#[test]
fn large_documents_render_small() {
    // One long description reached from 300 properties through a reference, long names,
    // and 100,000 parameters on another operation.
    let big = "d".repeat(1024 * 1024);
    let props: serde_json::Map<String, serde_json::Value> = (0..300)
        .map(|p| {
            (
                format!("p{p}"),
                json!({ "$ref": "#/components/schemas/Big" }),
            )
        })
        .collect();
    let params: Vec<serde_json::Value> = (0..100_000)
        .map(|i| json!({ "name": format!("q{i}"), "in": "query", "description": "x" }))
        .collect();
    let example: Vec<String> = (0..100_000).map(|i| format!("value {i}")).collect();
    let doc = json!({
        "openapi": "3.0.0", "info": { "title": "x", "version": "1" },
        "paths": {
            "/x": { "get": { "description": big, "responses": { "200": { "description": "ok",
                "content": { "application/json": { "schema": { "type": "object", "properties": props } } } } } } },
            "/y": { "get": { "parameters": params, "responses": {} } },
            "/z": { "get": { "responses": { "200": { "description": "ok",
                "content": { "application/json": { "example": example } } } } } }
        },
        "components": { "schemas": { "Big": {
            "type": "object", "description": big,
            "format": "f".repeat(10_000), "enum": [{ "a": "e".repeat(100_000) }]
        } } }
    });
    check(&doc).unwrap();
    for path in ["/x", "/y", "/z"] {
        let html = render::operation(&doc, path, "get").unwrap();
        assert!(html.len() < 1024 * 1024, "{path}: {}", html.len());
    }
    let html = render::operation(&doc, "/z", "get").unwrap();
    assert!(html.contains("value 0"), "the example is shown, cut");
    assert!(!html.contains("value 99999"));
}
