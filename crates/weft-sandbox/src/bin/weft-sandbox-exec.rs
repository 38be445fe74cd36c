//! `weft-sandbox-exec --policy JSON -- CMD…`: the sandbox helper as a standalone binary (the
//! `weft` CLI has the same entry point as its hidden `sandbox-exec` subcommand).

fn main() -> std::process::ExitCode {
    let code = weft_sandbox::helper::main(std::env::args_os().skip(1).collect());
    std::process::ExitCode::from(u8::try_from(code).unwrap_or(1))
}
