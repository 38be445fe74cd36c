//! Profiles compiling the embedded AGS JSON Schema (the fixed cost of a `weft validate`
//! process), with the engine weft uses and the alternatives.
#![allow(clippy::unwrap_used, reason = "a tool")]
use std::time::Instant;
fn main() {
    let schema: serde_json::Value = serde_json::from_str(weft_ags::validate::GRAPH_SCHEMA).unwrap();
    let n = 50;
    for (name, regex) in [("fancy-regex", false), ("regex", true)] {
        let t = Instant::now();
        for _ in 0..n {
            let mut o = jsonschema::options()
                .with_draft(jsonschema::Draft::Draft202012)
                .should_validate_formats(true);
            if regex {
                o = o.with_pattern_options(jsonschema::PatternOptions::regex());
            }
            std::hint::black_box(o.build(&schema).unwrap());
        }
        println!(
            "{name}: {:.3} ms per compile",
            t.elapsed().as_secs_f64() * 1e3 / n as f64
        );
    }
}
