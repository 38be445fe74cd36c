//! One module per subcommand.

pub mod audit;
pub mod cancel;
pub mod config;
pub mod convert;
pub mod decide;
pub mod digest;
pub mod dry_run;
pub mod events;
pub mod explain;
pub mod follow;
pub mod generate;
pub mod init;
pub mod memory;
pub mod plan;
pub mod policy;
pub mod record;
pub mod resume;
pub mod routing;
pub mod run;
pub mod runs;
pub mod sandbox;
pub mod schema;
pub mod status;
pub mod status_watch;
pub mod validate;
pub mod waiting;
