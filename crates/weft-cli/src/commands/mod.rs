//! One module per subcommand.

pub mod audit;
pub mod convert;
pub mod digest;
pub mod explain;
pub mod plan;
pub mod schema;
pub mod validate;
