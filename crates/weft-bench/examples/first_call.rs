//! Times the first validation in a process (which compiles the embedded JSON Schema)
//! against later ones: the fixed cost every `weft validate` process pays once.
#![allow(clippy::unwrap_used, reason = "a tool")]
use std::time::Instant;
fn main() {
    let text = std::fs::read_to_string("examples/minimal.agraph.yaml").unwrap();
    let doc = weft_ags::load::load_str(
        "m",
        &text,
        weft_ags::load::Format::Yaml,
        &Default::default(),
    )
    .document
    .unwrap();
    for i in 0..3 {
        let t = Instant::now();
        let n = weft_ags::validate::validate(&doc.value).len();
        println!(
            "validate #{i}: {:.3} ms ({n} findings)",
            t.elapsed().as_secs_f64() * 1e3
        );
    }
}
