//! Runs only validation of the 10k chain in a loop, for profiling.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a panic here is a test or tool failure with a message"
)]
fn main() {
    let which = std::env::args().nth(1).unwrap_or_default();
    let v = if which == "layered" {
        weft_bench::layered(10, 1000, 100_000)
    } else {
        weft_bench::chain(10_000)
    };
    let mut n = 0;
    for _ in 0..20 {
        n += weft_ags::validate::validate(&v).len();
        if which == "plan" || which == "layered" {
            n += v
                .as_object()
                .map(weft_ags::plan::plan)
                .map_or(0, |p| p.worst_case_executions as usize);
        }
    }
    println!("{n}");
}
