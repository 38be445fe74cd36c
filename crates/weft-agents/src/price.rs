//! What a model costs: vocabulary the model agent (`agent`) and the coding-agent CLIs
//! (`cli`, for a CLI that reports no cost) both price their tokens with, below both.

/// Prices of one model, in US dollars per million tokens.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Price {
    pub input_per_million: f64,
    pub output_per_million: f64,
}
