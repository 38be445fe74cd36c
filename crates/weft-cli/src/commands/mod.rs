//! One module per subcommand.

pub mod audit;
pub mod convert;
pub mod digest;
pub mod events;
pub mod explain;
pub mod plan;
pub mod run;
pub mod schema;
pub mod validate;
