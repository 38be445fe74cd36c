//! Fuzz target: every AGX entry point must survive arbitrary input without panicking.
//!
//! Valid UTF-8 input is parsed as an expression and as a template; whatever parses is
//! statically checked, printed and re-parsed, evaluated against an empty context and
//! rendered. Errors are expected and ignored; only a panic (or a stack overflow) is a bug.

#![no_main]

use libfuzzer_sys::fuzz_target;
use weft_agx::{
    AnyEnv, MapContext, check_calls, check_condition, eval, eval_bool, has_interpolation, parse,
    parse_template, references, render,
};

fuzz_target!(|data: &[u8]| {
    let Ok(src) = std::str::from_utf8(data) else {
        return;
    };
    let ctx = MapContext::new();
    let _ = has_interpolation(src);
    if let Ok(expr) = parse(src) {
        let _ = references(&expr);
        let _ = check_calls(&expr);
        let _ = check_condition(&expr, &AnyEnv);
        let _ = eval(&expr, &ctx);
        let _ = eval_bool(&expr, &ctx);
        // The canonical printer must produce something that parses back to the same tree.
        let printed = expr.to_string();
        match parse(&printed) {
            Ok(again) => assert!(again.eq_ignoring_spans(&expr), "{src:?} -> {printed:?}"),
            Err(e) => panic!("{src:?} printed as {printed:?}, which does not parse: {e}"),
        }
    }
    if let Ok(template) = parse_template(src) {
        let _ = render(&template, &ctx);
    }
});
