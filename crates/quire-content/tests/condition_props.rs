//! Property tests of the visibility-condition language:
//!
//! * printing and parsing round-trip: `parse(&expr.to_string()) == Ok(expr)` for random
//!   canonical trees, and printing is idempotent;
//! * evaluation is total: any expression against any JSON context returns (and agrees
//!   with JavaScript on a few operators whose results are easy to state);
//! * parsing is total: any string yields a tree or an error whose position lies within
//!   the input (or one past its end), and every tree parsed prints back to itself.

use proptest::prelude::*;
use quire_content::condition::{
    evaluate, evaluate_value, parse, parse_condition, CompareOp, Expr, Link, LogicalOp, Method,
    Root, Step, MAX_CONDITION_LEN,
};
use serde_json::{json, Value as Json};

// ---------------------------------------------------------------------------------------
// Random canonical trees.

/// Property names: identifiers, indexes, and names that need brackets.
fn key() -> impl Strategy<Value = String> {
    prop_oneof![
        4 => "[a-z]{1,4}",
        1 => Just("length".to_string()),
        2 => "[0-9]{1,3}",
        1 => prop::sample::select(vec!["new-ui", "é", "in", "", "01", "-0", "1.5", "4294967295", "a b", "\"", "$_"])
            .prop_map(str::to_string),
        1 => prop::collection::vec(any::<char>(), 0..4).prop_map(String::from_iter),
    ]
}

fn text() -> impl Strategy<Value = String> {
    prop_oneof![
        3 => "[a-c]{0,4}",
        2 => "[\"'\\\\\n\t\r\u{8}\u{c}\u{1}\u{7f}\u{2028} é😀a-c]{0,6}",
        1 => prop::collection::vec(any::<char>(), 0..6).prop_map(String::from_iter),
    ]
}

fn number() -> impl Strategy<Value = f64> {
    prop_oneof![
        4 => (-100i32..100).prop_map(f64::from),
        2 => any::<f64>().prop_filter("finite", |x| x.is_finite()),
        1 => prop::sample::select(vec![-0.0, 0.5, 1e21, 1e-7, 5e-324, f64::MAX, -1.5e300]),
    ]
}

fn root() -> impl Strategy<Value = Root> {
    prop::sample::select(vec![Root::Visitor, Root::Space, Root::Page])
}

fn leaf() -> impl Strategy<Value = Expr> {
    prop_oneof![
        1 => Just(Expr::Undefined),
        1 => Just(Expr::Null),
        1 => any::<bool>().prop_map(Expr::Bool),
        2 => number().prop_map(Expr::Number),
        2 => text().prop_map(Expr::String),
        4 => root().prop_map(Expr::Root),
    ]
}

/// A computed key in canonical form: literal strings and numbers are plain keys.
fn index_step(key: Expr) -> Step {
    match key {
        Expr::String(s) => Step::Key(s),
        // Matches -0 too: its key is "0".
        Expr::Number(0.0) => Step::Key("0".into()),
        Expr::Number(n) => Step::Key(Expr::Number(n).to_string()),
        other => Step::Index(Box::new(other)),
    }
}

/// A chain in canonical form: a base chain without `?.` merges into the new one.
fn chain(base: Expr, mut links: Vec<Link>) -> Expr {
    match base {
        Expr::Chain {
            base,
            links: mut first,
        } if !first.iter().any(|l| l.optional) => {
            first.append(&mut links);
            Expr::Chain { base, links: first }
        }
        base => Expr::Chain {
            base: Box::new(base),
            links,
        },
    }
}

/// `&&`, `||` or `??` in canonical form: operands of the same operator are spliced in.
fn logical(op: LogicalOp, operands: Vec<Expr>) -> Expr {
    let mut flat = Vec::new();
    for operand in operands {
        match operand {
            Expr::Logical {
                op: inner,
                operands,
            } if inner == op => flat.extend(operands),
            other => flat.push(other),
        }
    }
    Expr::Logical { op, operands: flat }
}

fn link(inner: BoxedStrategy<Expr>) -> impl Strategy<Value = Link> {
    let method = prop::sample::select(vec![Method::Includes, Method::StartsWith, Method::EndsWith]);
    let step = prop_oneof![
        3 => key().prop_map(Step::Key),
        1 => inner.clone().prop_map(index_step),
        2 => (method, inner).prop_map(|(method, argument)| Step::Call {
            method,
            argument: Box::new(argument),
        }),
    ];
    (prop::bool::weighted(0.3), step).prop_map(|(optional, step)| Link { optional, step })
}

fn expr() -> impl Strategy<Value = Expr> {
    let compare = prop::sample::select(vec![
        CompareOp::StrictEq,
        CompareOp::StrictNe,
        CompareOp::LooseEq,
        CompareOp::LooseNe,
        CompareOp::Lt,
        CompareOp::Le,
        CompareOp::Gt,
        CompareOp::Ge,
        CompareOp::In,
    ]);
    let logical_op = prop::sample::select(vec![LogicalOp::And, LogicalOp::Or, LogicalOp::Coalesce]);
    leaf().prop_recursive(4, 40, 3, move |inner| {
        prop_oneof![
            1 => prop::collection::vec(inner.clone(), 0..3).prop_map(Expr::Array),
            3 => (inner.clone(), prop::collection::vec(link(inner.clone()), 1..4))
                .prop_map(|(base, links)| chain(base, links)),
            1 => inner.clone().prop_map(|e| Expr::Not(Box::new(e))),
            2 => (compare.clone(), inner.clone(), inner.clone()).prop_map(|(op, l, r)| Expr::Compare {
                op,
                left: Box::new(l),
                right: Box::new(r),
            }),
            2 => (logical_op.clone(), prop::collection::vec(inner.clone(), 2..4))
                .prop_map(|(op, operands)| logical(op, operands)),
            1 => (inner.clone(), inner.clone(), inner).prop_map(|(t, a, b)| Expr::Conditional {
                test: Box::new(t),
                then: Box::new(a),
                otherwise: Box::new(b),
            }),
        ]
    })
}

// ---------------------------------------------------------------------------------------
// Random contexts.

fn json() -> impl Strategy<Value = Json> {
    let leaf = prop_oneof![
        Just(Json::Null),
        any::<bool>().prop_map(Json::from),
        (-3i64..4).prop_map(Json::from),
        any::<i64>().prop_map(Json::from),
        any::<u64>().prop_map(Json::from),
        any::<f64>().prop_map(Json::from),
        prop::sample::select(vec![1e308, -1e308, 5e-324, 0.5]).prop_map(Json::from),
        text().prop_map(Json::from),
        key().prop_map(Json::from),
    ];
    leaf.prop_recursive(5, 64, 5, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..5).prop_map(Json::Array),
            prop::collection::btree_map(key(), inner, 0..5)
                .prop_map(|m| Json::Object(m.into_iter().collect())),
        ]
    })
}

fn context() -> impl Strategy<Value = Json> {
    prop_oneof![
        4 => (json(), json(), json())
            .prop_map(|(visitor, space, page)| json!({"visitor": visitor, "space": space, "page": page})),
        1 => json(),
    ]
}

// ---------------------------------------------------------------------------------------
// Random source text.

const TOKENS: &[&str] = &[
    "visitor",
    "space",
    "page",
    "claims",
    "a",
    "x",
    "foo",
    ".",
    "?.",
    "?",
    ":",
    "(",
    ")",
    "[",
    "]",
    ",",
    "!",
    "-",
    "&&",
    "||",
    "??",
    "===",
    "!==",
    "==",
    "!=",
    "<",
    "<=",
    ">",
    ">=",
    " in ",
    " ",
    "\"",
    "'",
    "\\",
    "\\u",
    "\\u{",
    "}",
    "0",
    "1",
    "01",
    ".5",
    "1e",
    "e+",
    "1e999",
    "true",
    "false",
    "null",
    "undefined",
    "includes",
    "startsWith",
    "endsWith",
    "length",
    "é",
    "😀",
    "\n",
    "\t",
    "=",
    "&",
    "|",
    "#",
    "\u{0}",
    "\u{feff}",
];

fn token_soup() -> impl Strategy<Value = String> {
    prop::collection::vec(prop::sample::select(TOKENS.to_vec()), 0..40).prop_map(|v| v.concat())
}

fn source() -> impl Strategy<Value = String> {
    let deep = prop::sample::select(vec![
        "(",
        "!",
        "[",
        "!(",
        "visitor.a.includes(",
        "visitor[",
        "true ? ",
        "1 === ",
        "a ?? ",
        "(visitor?.a).b[",
    ]);
    prop_oneof![
        3 => token_soup(),
        1 => "[ -~]{0,80}",
        1 => any::<String>(),
        1 => (deep, 0..1100usize, token_soup()).prop_map(|(t, n, tail)| t.repeat(n) + &tail),
        2 => expr().prop_map(|e| e.to_string()),
    ]
}

/// `src` parsed, or an error with a position inside it; a parsed tree prints back to
/// itself.
fn check_parse(src: &str) -> Result<(), TestCaseError> {
    let len = src.chars().count();
    match parse(src) {
        Ok(expr) => {
            let printed = expr.to_string();
            if printed.chars().count() <= MAX_CONDITION_LEN {
                prop_assert_eq!(parse(&printed), Ok(expr.clone()), "printed as {}", printed);
            }
            if let Ok(checked) = parse_condition(src) {
                prop_assert_eq!(checked, expr);
            }
        }
        Err(err) => {
            prop_assert!(
                (1..=len + 1).contains(&err.position),
                "position {} outside 1..={} for {:?}: {}",
                err.position,
                len + 1,
                src,
                err
            );
            prop_assert!(!err.message.is_empty());
            let condition_err = parse_condition(src).expect_err("parse_condition refuses it too");
            prop_assert_eq!(condition_err, err);
        }
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn printing_and_parsing_round_trip(expr in expr()) {
        let printed = expr.to_string();
        prop_assume!(printed.chars().count() <= MAX_CONDITION_LEN);
        let parsed = parse(&printed);
        prop_assert_eq!(parsed.as_ref(), Ok(&expr), "printed as {}", printed);
        prop_assert_eq!(parsed.unwrap().to_string(), printed);
    }

    #[test]
    fn evaluation_is_total(expr in expr(), context in context()) {
        let value = evaluate_value(&expr, &context);
        let truth = evaluate(&expr, &context);
        prop_assert_eq!(truth, value.as_ref().is_ok_and(|v| v.truthy()));
        // Evaluation is deterministic.
        prop_assert_eq!(evaluate_value(&expr, &context), value);
    }

    #[test]
    fn and_is_both(a in expr(), b in expr(), context in context()) {
        let both = Expr::Logical { op: LogicalOp::And, operands: vec![a.clone(), b.clone()] };
        prop_assert_eq!(evaluate(&both, &context), evaluate(&a, &context) && evaluate(&b, &context));
    }

    #[test]
    fn number_comparisons_follow_ieee(x in number(), y in number()) {
        let cmp = |op| Expr::Compare { op, left: Box::new(Expr::Number(x)), right: Box::new(Expr::Number(y)) };
        let ctx = Json::Null;
        prop_assert_eq!(evaluate(&cmp(CompareOp::StrictEq), &ctx), x == y);
        prop_assert_eq!(evaluate(&cmp(CompareOp::LooseNe), &ctx), x != y);
        prop_assert_eq!(evaluate(&cmp(CompareOp::Lt), &ctx), x < y);
        prop_assert_eq!(evaluate(&cmp(CompareOp::Ge), &ctx), x >= y);
        // And the same through strings, which `==` converts to numbers.
        let as_string = Expr::Compare {
            op: CompareOp::LooseEq,
            left: Box::new(Expr::String(Expr::Number(x).to_string())),
            right: Box::new(Expr::Number(y)),
        };
        prop_assert_eq!(evaluate(&as_string, &ctx), x == y);
    }

    #[test]
    fn any_text_parses_or_fails_within_bounds(src in source()) {
        check_parse(&src)?;
    }

    #[test]
    fn parsed_text_evaluates(src in token_soup(), context in context()) {
        if let Ok(expr) = parse(&src) {
            let _ = evaluate(&expr, &context);
        }
    }
}

#[test]
fn deeply_nested_context_arrays_throw_instead_of_recursing() {
    let mut deep = json!("x");
    for _ in 0..1000 {
        deep = Json::Array(vec![deep]);
    }
    let context = json!({ "visitor": deep });
    for src in [
        "visitor == 'x'",
        "'x'.includes(visitor)",
        "visitor < 1",
        "visitor in visitor",
        "visitor[visitor] === 1",
    ] {
        let expr = parse_condition(src).unwrap();
        assert!(evaluate_value(&expr, &context).is_err(), "{src}");
        assert!(!evaluate(&expr, &context));
    }
    // Shallow nesting converts as JavaScript does.
    let context = json!({ "visitor": [[["x", null], []], 1] });
    let expr = parse_condition("visitor == 'x,,,1'").unwrap();
    assert!(evaluate(&expr, &context));
}
