//! Property tests: the parsers never panic, the printer round-trips, evaluation never
//! panics, and the static type of an expression always admits the value it evaluates to.

use proptest::prelude::*;
use serde_json::{Number, Value, json};
use weft_agx::{
    BinaryOp, Context, Expr, Lookup, MapContext, Span, Ty, TypeEnv, UnaryOp, check_calls,
    check_condition, eval, eval_bool, function_names, has_interpolation, infer, parse,
    parse_template, references, render, stringify,
};

fn context() -> MapContext {
    MapContext::from_value(json!({
        "params": {
            "n": 3, "neg": -4, "f": 2.5, "s": "hello", "e": "", "b": true, "z": null,
            "l": [1, "a", [2], true], "o": {"k": 1, "in": "x"}, "big": i64::MAX,
        },
        "nodes": {
            "a": {"status": "succeeded", "outputs": {"log": "ok", "n": 1}},
            "in": {"status": "failed", "outputs": {}},
        },
        "loop": {"iteration": 2, "index": 1},
    }))
    .with_state("b", "skipped")
}

/// Types as the validator would give them: the type of the value in the context, else Any.
struct ContextTypes(MapContext);

impl TypeEnv for ContextTypes {
    fn type_of(&self, path: &[&str]) -> Ty {
        match self.0.lookup(path) {
            Lookup::Value(v) => Ty::of_value(&v),
            _ => Ty::Any,
        }
    }
}

fn admits(ty: Ty, value: &Value) -> bool {
    let actual = Ty::of_value(value);
    ty == Ty::Any || ty == actual || (ty == Ty::Number && actual == Ty::Integer)
}

const TOKENS: &[&str] = &[
    "(",
    ")",
    "[",
    "]",
    ",",
    ".",
    "a",
    "params",
    "nodes",
    "loop",
    "n",
    "s",
    "l",
    "o",
    "in",
    "not",
    "and",
    "or",
    "true",
    "false",
    "null",
    "0",
    "1",
    "2.5",
    "1e3",
    "9223372036854775807",
    "'s'",
    "\"x\"",
    "'\\u00e9'",
    "'",
    "\"",
    "\\",
    "==",
    "!=",
    "<",
    "<=",
    ">",
    ">=",
    "+",
    "-",
    "*",
    "/",
    "%",
    "!",
    "&&",
    "||",
    "=",
    "&",
    "|",
    "${{",
    "}}",
    "$${{",
    "$",
    "{",
    "}",
    " ",
    "len",
    "get",
    "matches",
    "output",
    "succeeded",
    "default",
    "int",
    "json",
    "now",
    "é",
    ".5",
    "1.",
    "\n",
];

fn token_soup() -> impl Strategy<Value = String> {
    prop::collection::vec(prop::sample::select(TOKENS), 0..40).prop_map(|parts| parts.concat())
}

const KEYWORDS: &[&str] = &["true", "false", "null", "and", "or", "not", "in"];

fn ident() -> impl Strategy<Value = String> {
    "[a-z_][a-z0-9_]{0,4}".prop_filter("not a keyword", |s| !KEYWORDS.contains(&s.as_str()))
}

fn segment() -> impl Strategy<Value = String> {
    prop_oneof![
        4 => ident(),
        1 => prop::sample::select(KEYWORDS).prop_map(str::to_string),
        2 => prop::sample::select(&["params", "nodes", "n", "s", "l", "o", "a", "outputs", "log"][..])
            .prop_map(str::to_string),
    ]
}

fn literal() -> impl Strategy<Value = Value> {
    prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        (0..=i64::MAX).prop_map(Value::from),
        (0..1000_i64).prop_map(Value::from),
        (0.0..1e300_f64).prop_map(|f| Number::from_f64(f).map_or(Value::Null, Value::Number)),
        any::<String>().prop_map(Value::String),
        "[a-z ]{0,6}".prop_map(Value::String),
    ]
}

fn span() -> Span {
    Span::default()
}

const BINARY: &[BinaryOp] = &[
    BinaryOp::Or,
    BinaryOp::And,
    BinaryOp::In,
    BinaryOp::Eq,
    BinaryOp::Ne,
    BinaryOp::Lt,
    BinaryOp::Le,
    BinaryOp::Gt,
    BinaryOp::Ge,
    BinaryOp::Add,
    BinaryOp::Sub,
    BinaryOp::Mul,
    BinaryOp::Div,
    BinaryOp::Rem,
];

fn expr() -> impl Strategy<Value = Expr> {
    let leaf = prop_oneof![
        literal().prop_map(|value| Expr::Literal {
            value,
            span: span()
        }),
        (
            prop_oneof![
                ident(),
                prop::sample::select(&["params", "nodes", "loop"][..]).prop_map(str::to_string)
            ],
            prop::collection::vec(segment(), 0..3)
        )
            .prop_map(|(first, rest)| {
                let mut segments = vec![first];
                segments.extend(rest);
                Expr::Path {
                    segments,
                    span: span(),
                }
            }),
    ];
    let names: Vec<&'static str> = function_names().chain(["now", "x_fn"]).collect();
    leaf.prop_recursive(6, 48, 4, move |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(|items| Expr::Array {
                items,
                span: span()
            }),
            (
                prop::sample::select(names.clone()),
                prop::collection::vec(inner.clone(), 0..4)
            )
                .prop_map(|(name, args)| Expr::Call {
                    name: name.to_string(),
                    args,
                    span: span(),
                    name_span: span(),
                }),
            (
                prop::sample::select(&[UnaryOp::Not, UnaryOp::Neg][..]),
                inner.clone()
            )
                .prop_map(|(op, operand)| Expr::Unary {
                    op,
                    operand: Box::new(operand),
                    span: span()
                }),
            (prop::sample::select(BINARY), inner.clone(), inner).prop_map(|(op, l, r)| {
                Expr::Binary {
                    op,
                    left: Box::new(l),
                    right: Box::new(r),
                    span: span(),
                }
            }),
        ]
    })
}

/// Runs every entry point on `src`; the point is that none of them panics.
fn exercise(src: &str) {
    let ctx = context();
    let _ = has_interpolation(src);
    if let Ok(t) = parse_template(src) {
        let _ = render(&t, &ctx);
    }
    if let Ok(e) = parse(src) {
        let _ = eval(&e, &ctx);
        let _ = eval_bool(&e, &ctx);
        let _ = references(&e);
        let _ = check_calls(&e);
        let _ = check_condition(&e, &ContextTypes(ctx.clone()));
        // Whatever parses prints to something that parses to the same tree.
        let printed = e.to_string();
        let again = parse(&printed).unwrap_or_else(|err| panic!("{src} -> {printed}: {err}"));
        assert!(again.eq_ignoring_spans(&e), "{src} -> {printed}");
        // Spans stay inside the source.
        assert!(e.span().end <= src.len());
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(400))]

    #[test]
    fn arbitrary_strings_never_panic(src in any::<String>()) {
        exercise(&src);
    }

    #[test]
    fn token_soup_never_panics(src in token_soup()) {
        exercise(&src);
    }

    #[test]
    fn parse_errors_point_inside_the_source(src in token_soup()) {
        if let Err(e) = parse(&src) {
            prop_assert!(e.offset <= src.len());
            let suffix = format!("at offset {}", e.offset);
            prop_assert!(e.message.ends_with(&suffix), "{}", e.message);
        }
        if let Err(e) = parse_template(&src) {
            prop_assert!(e.offset <= src.len());
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]

    #[test]
    fn printer_round_trips(e in expr()) {
        let printed = e.to_string();
        match parse(&printed) {
            Ok(back) => prop_assert!(back.eq_ignoring_spans(&e), "{printed}"),
            // The only legitimate refusal is a tree deeper than the limit, which the
            // generator's depth keeps well clear of.
            Err(err) => prop_assert!(false, "{printed}: {err}"),
        }
    }

    #[test]
    fn evaluation_never_panics_and_types_are_sound(e in expr()) {
        let ctx = context();
        let printed = e.to_string();
        let parsed = parse(&printed).unwrap();
        let result = eval(&parsed, &ctx);
        let (ty, _) = infer(&parsed, &ContextTypes(ctx.clone()));
        if let Ok(value) = &result {
            prop_assert!(admits(ty, value), "{printed}: {ty:?} does not admit {value}");
            // Every result can be interpolated.
            let _ = stringify(value);
        }
        let _ = references(&parsed);
        let _ = check_calls(&parsed);
    }

    #[test]
    fn template_holes_render_like_expressions(e in expr(), before in "([a-z $]{0,3}[a-z ])?", after in "[a-z ]{0,4}") {
        // `before` never ends in `$`: that would turn the hole into the `$${{` escape.
        let printed = e.to_string();
        prop_assume!(!printed.contains("}}") && !printed.contains("${{"));
        let src = format!("{before}${{{{ {printed} }}}}{after}");
        let template = parse_template(&src).unwrap();
        prop_assert_eq!(has_interpolation(&src), Some(before.len()));
        let ctx = context();
        let expected = eval(&e, &ctx).map(|v| stringify(&v));
        let got = render(&template, &ctx);
        match (expected, got) {
            (Ok(want), Ok(got)) => {
                prop_assert_eq!(got, format!("{before}{want}{after}"));
            }
            (Err(a), Err(b)) => prop_assert_eq!(a.message, b.message),
            (a, b) => prop_assert!(false, "{a:?} vs {b:?}"),
        }
    }
}
