//! Helpers shared by the integration tests of weft-ags.

#![allow(dead_code, reason = "each test binary uses a subset")]

use serde_json::Value;
use std::path::PathBuf;

/// A shipped AGS example, loaded: the repository's copy in `examples/`, else the originals
/// in `../shared/ags/examples` next to the checkout.
pub fn example(name: &str) -> Value {
    let manifest = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let candidates: [PathBuf; 2] = [
        manifest.join("../../examples"),
        manifest.join("../../../shared/ags/examples"),
    ];
    let dir = candidates
        .iter()
        .find(|d| d.join(name).is_file())
        .unwrap_or_else(|| panic!("example {name} not found in {candidates:?}"));
    // `read_file` is the crate's one sanctioned reader; it picks the format from the extension.
    weft_ags::load::read_file(&dir.join(name), &Default::default())
        .unwrap_or_else(|e| panic!("{name}: {e}"))
        .document
        .unwrap_or_else(|| panic!("{name} loads"))
        .value
}
