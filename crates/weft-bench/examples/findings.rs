//! Prints a histogram of finding codes on the layered graph (debug aid).
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a panic here is a test or tool failure with a message"
)]
fn main() {
    let v = weft_bench::layered(10, 1000, 100_000);
    let f = weft_ags::validate::validate(&v);
    let mut h = std::collections::BTreeMap::new();
    for x in &f {
        *h.entry(x.code.as_str()).or_insert(0) += 1;
    }
    println!("{h:?}");
    if let Some(x) = f.iter().find(|x| x.code.as_str() != "WF901") {
        println!("{x:?}");
    }
}
