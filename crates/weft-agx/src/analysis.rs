//! Static analysis for the validator: which names an expression reads ([`references`]) and
//! whether its calls name real functions with the right number of arguments
//! ([`check_calls`]). The validator maps these to AG201–AG206.

use serde_json::Value;

use crate::ast::{Expr, Span};
pub use crate::error::{StaticError, StaticErrorKind};
use crate::functions::{arity_message, signature, unknown_function_message};

/// How a reference was written.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum RefKind {
    /// A dotted path such as `nodes.build.outputs.log`.
    Path,
    /// `output("id", "name")`.
    OutputCall,
    /// `succeeded("id")`, `failed("id")` or `skipped("id")`.
    StateCall,
}

/// A name an expression reads.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Reference {
    /// The path, root first. For calls with a non-literal node id (or the wrong number of
    /// arguments) only `["nodes"]`: the target is dynamic and cannot be checked statically.
    pub path: Vec<String>,
    /// Where it is written.
    pub span: Span,
    /// How it is written.
    pub kind: RefKind,
}

/// Every name `expr` reads, in source order (a call before its arguments).
pub fn references(expr: &Expr) -> Vec<Reference> {
    let mut out = Vec::new();
    collect_references(expr, &mut out);
    out
}

fn string_literal(expr: &Expr) -> Option<&str> {
    match expr {
        Expr::Literal {
            value: Value::String(s),
            ..
        } => Some(s),
        _ => None,
    }
}

fn collect_references(expr: &Expr, out: &mut Vec<Reference>) {
    match expr {
        Expr::Literal { .. } => {}
        Expr::Path { segments, span } => out.push(Reference {
            path: segments.clone(),
            span: *span,
            kind: RefKind::Path,
        }),
        Expr::Array { items, .. } => {
            for item in items {
                collect_references(item, out);
            }
        }
        Expr::Call {
            name, args, span, ..
        } => {
            let dynamic = || vec!["nodes".to_string()];
            match name.as_str() {
                "output" => {
                    let path = match args.as_slice() {
                        [id, name] => match (string_literal(id), string_literal(name)) {
                            (Some(id), Some(name)) => vec![
                                "nodes".to_string(),
                                id.to_string(),
                                "outputs".to_string(),
                                name.to_string(),
                            ],
                            _ => dynamic(),
                        },
                        _ => dynamic(),
                    };
                    out.push(Reference {
                        path,
                        span: *span,
                        kind: RefKind::OutputCall,
                    });
                }
                "succeeded" | "failed" | "skipped" => {
                    let path = match args.as_slice() {
                        [id] => match string_literal(id) {
                            Some(id) => {
                                vec!["nodes".to_string(), id.to_string(), "status".to_string()]
                            }
                            None => dynamic(),
                        },
                        _ => dynamic(),
                    };
                    out.push(Reference {
                        path,
                        span: *span,
                        kind: RefKind::StateCall,
                    });
                }
                _ => {}
            }
            for arg in args {
                collect_references(arg, out);
            }
        }
        Expr::Unary { operand, .. } => collect_references(operand, out),
        Expr::Binary { left, right, .. } => {
            collect_references(left, out);
            collect_references(right, out);
        }
    }
}

/// Unknown function names and wrong argument counts, in source order. Messages follow the
/// reference validator: `unknown function 'now'`, `len() takes 1 arguments, got 2`,
/// `get() takes 2-3 arguments, got 1`.
pub fn check_calls(expr: &Expr) -> Vec<StaticError> {
    let mut out = Vec::new();
    collect_call_errors(expr, &mut out);
    out
}

fn collect_call_errors(expr: &Expr, out: &mut Vec<StaticError>) {
    match expr {
        Expr::Literal { .. } | Expr::Path { .. } => {}
        Expr::Array { items, .. } => {
            for item in items {
                collect_call_errors(item, out);
            }
        }
        Expr::Call {
            name,
            args,
            span,
            name_span,
        } => {
            match signature(name) {
                None => out.push(StaticError {
                    kind: StaticErrorKind::UnknownFunction,
                    message: unknown_function_message(name),
                    span: *name_span,
                }),
                Some(sig) if args.len() < sig.min || args.len() > sig.max => {
                    out.push(StaticError {
                        kind: StaticErrorKind::Arity,
                        message: arity_message(sig, args.len()),
                        span: *span,
                    });
                }
                Some(_) => {}
            }
            for arg in args {
                collect_call_errors(arg, out);
            }
        }
        Expr::Unary { operand, .. } => collect_call_errors(operand, out),
        Expr::Binary { left, right, .. } => {
            collect_call_errors(left, out);
            collect_call_errors(right, out);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::parse;

    fn refs(src: &str) -> Vec<(Vec<String>, RefKind, Span)> {
        references(&parse(src).unwrap())
            .into_iter()
            .map(|r| (r.path, r.kind, r.span))
            .collect()
    }

    fn p(parts: &[&str]) -> Vec<String> {
        parts.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn path_references() {
        assert_eq!(
            refs("nodes.build.outputs.log == params.x"),
            vec![
                (
                    p(&["nodes", "build", "outputs", "log"]),
                    RefKind::Path,
                    Span::new(0, 23)
                ),
                (p(&["params", "x"]), RefKind::Path, Span::new(27, 35)),
            ]
        );
        assert_eq!(
            refs("nodes.in.outputs.not"),
            vec![(
                p(&["nodes", "in", "outputs", "not"]),
                RefKind::Path,
                Span::new(0, 20)
            )]
        );
        assert!(refs("1 + 'a'").is_empty());
        // Paths inside arrays, unary operands and call arguments are found too.
        assert_eq!(refs("[a, !b, len(c)]").len(), 3);
    }

    #[test]
    fn output_calls() {
        assert_eq!(
            refs("output('my-a', 'o')"),
            vec![(
                p(&["nodes", "my-a", "outputs", "o"]),
                RefKind::OutputCall,
                Span::new(0, 19)
            )]
        );
        // A dynamic id: only the root, followed by the argument's own reference.
        assert_eq!(
            refs("output(params.id, 'o')"),
            vec![
                (p(&["nodes"]), RefKind::OutputCall, Span::new(0, 22)),
                (p(&["params", "id"]), RefKind::Path, Span::new(7, 16)),
            ]
        );
        assert_eq!(refs("output('a', 'b' + 'c')")[0].0, p(&["nodes"]));
        assert_eq!(refs("output('a')")[0].0, p(&["nodes"]));
    }

    #[test]
    fn state_calls() {
        assert_eq!(
            refs("succeeded('a') && failed(\"b\") || skipped('c')")
                .into_iter()
                .map(|r| (r.0, r.1))
                .collect::<Vec<_>>(),
            vec![
                (p(&["nodes", "a", "status"]), RefKind::StateCall),
                (p(&["nodes", "b", "status"]), RefKind::StateCall),
                (p(&["nodes", "c", "status"]), RefKind::StateCall),
            ]
        );
        assert_eq!(refs("failed(x)")[0].0, p(&["nodes"]));
        assert_eq!(refs("failed(x)")[1].0, p(&["x"]));
        assert_eq!(refs("failed('a', 'b')")[0].0, p(&["nodes"]));
        // Other calls are not references themselves.
        assert!(refs("len('x')").is_empty());
    }

    fn calls(src: &str) -> Vec<(StaticErrorKind, String)> {
        check_calls(&parse(src).unwrap())
            .into_iter()
            .map(|e| (e.kind, e.message))
            .collect()
    }

    #[test]
    fn unknown_functions() {
        assert_eq!(
            calls("now() > 0"),
            vec![(
                StaticErrorKind::UnknownFunction,
                "unknown function 'now'".to_string()
            )]
        );
        let e = check_calls(&parse("1 + now()").unwrap());
        assert_eq!(e[0].span, Span::new(4, 7));
        // Nested calls are checked too.
        assert_eq!(calls("len(foo(1))").len(), 1);
        assert!(calls("len('a') + count([]) > 0 && matches('a', 'b')").is_empty());
    }

    #[test]
    fn arity() {
        assert!(calls("get(a, 'b')").is_empty());
        assert!(calls("get(a, 'b', 1)").is_empty());
        assert_eq!(
            calls("get(a)"),
            vec![(
                StaticErrorKind::Arity,
                "get() takes 2-3 arguments, got 1".to_string()
            )]
        );
        assert_eq!(
            calls("get(a, 'b', 1, 2)")[0].1,
            "get() takes 2-3 arguments, got 4"
        );
        assert_eq!(calls("len()")[0].1, "len() takes 1 arguments, got 0");
        assert_eq!(
            calls("output('a', 'b', 'c')")[0].1,
            "output() takes 2 arguments, got 3"
        );
        let e = check_calls(&parse("x && default(1)").unwrap());
        assert_eq!(e[0].span, Span::new(5, 15));
    }

    #[test]
    fn every_function_is_known_with_its_arity() {
        let cases = [
            ("len", 1),
            ("count", 1),
            ("contains", 2),
            ("startswith", 2),
            ("endswith", 2),
            ("lower", 1),
            ("upper", 1),
            ("trim", 1),
            ("matches", 2),
            ("split", 2),
            ("join", 2),
            ("int", 1),
            ("float", 1),
            ("bool", 1),
            ("str", 1),
            ("json", 1),
            ("get", 2),
            ("default", 2),
            ("any", 1),
            ("all", 1),
            ("succeeded", 1),
            ("failed", 1),
            ("skipped", 1),
            ("output", 2),
        ];
        assert_eq!(crate::function_names().count(), cases.len());
        for (name, n) in cases {
            let args = vec!["x"; n].join(", ");
            assert!(calls(&format!("{name}({args})")).is_empty(), "{name}");
            let more = vec!["x"; n + 2].join(", ");
            assert_eq!(
                calls(&format!("{name}({more})"))[0].0,
                StaticErrorKind::Arity
            );
        }
    }
}
