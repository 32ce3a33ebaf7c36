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
