//! The generated graphs at full size: the clean ones validate clean, and every fault
//! injected into the faulty one is reported in a single pass, each exactly once.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a panic here is a test or tool failure with a message"
)]

use weft_ags::Code;
use weft_ags::load::{Format, Limits, load_str};

fn findings(text: &str, format: Format) -> Vec<weft_ags::Finding> {
    let limits = Limits {
        max_bytes: 64 << 20,
        ..Limits::default()
    };
    let loaded = load_str("gen", text, format, &limits);
    let mut all = loaded.findings;
    all.extend(weft_ags::validate::validate(
        &loaded.document.expect("loads").value,
    ));
    all
}

#[test]
fn chain_of_10k_is_clean_and_plans_in_order() {
    let value = weft_bench::chain(10_000);
    let text = serde_json::to_string(&value).unwrap();
    let found: Vec<_> = findings(&text, Format::Json)
        .into_iter()
        .filter(|f| f.severity != weft_ags::Severity::Info)
        .collect();
    assert!(found.is_empty(), "{:?}", &found[..found.len().min(5)]);
    let plan = weft_ags::plan::plan(value.as_object().unwrap());
    assert_eq!(plan.worst_case_executions, 10_000);
}

#[test]
fn layered_graph_has_the_requested_edges_and_is_clean() {
    let value = weft_bench::layered(10, 1000, 100_000);
    let edges: usize = value["nodes"]
        .as_object()
        .unwrap()
        .values()
        .map(|n| {
            n.get("depends_on")
                .and_then(|d| d.as_array())
                .map_or(0, Vec::len)
        })
        .sum();
    assert_eq!(edges, 100_000);
    let text = serde_json::to_string(&value).unwrap();
    let errors: Vec<_> = findings(&text, Format::Json)
        .into_iter()
        .filter(|f| f.is_error())
        .collect();
    assert!(errors.is_empty(), "{:?}", &errors[..errors.len().min(5)]);
}

#[test]
fn every_injected_fault_is_reported_in_one_pass() {
    let (text, faults) = weft_bench::faulty(10_000);
    let found = findings(&text, Format::Yaml);
    let count = |code: Code| found.iter().filter(|f| f.code == code).count();
    assert_eq!(count(Code::AG114), faults.dangling_dependencies);
    assert_eq!(count(Code::AG113), faults.unknown_edge_targets);
    assert_eq!(count(Code::AG203), faults.unknown_node_reads);
    assert_eq!(count(Code::AG005), faults.duplicate_keys);
    assert_eq!(count(Code::AG111), faults.cycles);
    assert_eq!(faults.cycles, 3);
    assert!(faults.duplicate_keys > 0 && faults.dangling_dependencies > 0);
}
