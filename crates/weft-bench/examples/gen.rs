//! Writes the benchmark documents into the directory given as argv[1] (used by
//! `bench/validator-vs-reference.sh`): the same generators the criterion bench uses.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a panic here is a test or tool failure with a message"
)]
use std::path::PathBuf;
use weft_ags::load::{to_json_pretty, to_yaml};

fn main() -> std::io::Result<()> {
    let Some(dir) = std::env::args_os().nth(1).map(PathBuf::from) else {
        eprintln!("usage: gen <output-dir>");
        std::process::exit(2);
    };
    std::fs::create_dir_all(&dir)?;
    let chain = weft_bench::chain(10_000);
    std::fs::write(dir.join("chain-10k.agraph.json"), to_json_pretty(&chain))?;
    std::fs::write(dir.join("chain-10k.agraph.yaml"), to_yaml(&chain))?;
    let layered = weft_bench::layered(10, 1000, 100_000);
    std::fs::write(
        dir.join("layered-100k.agraph.json"),
        to_json_pretty(&layered),
    )?;
    let (faulty, faults) = weft_bench::faulty(10_000);
    std::fs::write(dir.join("faulty-10k.agraph.yaml"), faulty)?;
    // Issue 12's held-out shapes: one line of minified JSON with one advisory per node
    // (WF901), and the layered graph on one line (WF906 on each of its 9,000 merges).
    std::fs::write(
        dir.join("short-briefs-10k.min.agraph.json"),
        weft_bench::minified(&weft_bench::chain_short_briefs(10_000)),
    )?;
    std::fs::write(
        dir.join("layered-100k.min.agraph.json"),
        weft_bench::minified(&layered),
    )?;
    println!(
        "wrote 6 documents to {}; faults injected in faulty-10k: {faults:?}",
        dir.display()
    );
    Ok(())
}
