//! Loads the 10k chain as YAML in a loop, for profiling the YAML loader.
#![allow(clippy::unwrap_used, reason = "a tool")]
fn main() {
    let text = weft_ags::load::to_yaml(&weft_bench::chain(10_000));
    let limits = weft_ags::load::Limits {
        max_bytes: 64 << 20,
        ..Default::default()
    };
    let mut n = 0;
    for _ in 0..20 {
        let l = weft_ags::load::load_str("c", &text, weft_ags::load::Format::Yaml, &limits);
        n += l
            .document
            .map_or(0, |d| d.value.as_object().map_or(0, |o| o.len()));
    }
    println!("{n}");
}
