//! Closing the descriptors a job inherited (Linux). Whatever started weft may have left
//! descriptors open without `FD_CLOEXEC` (a file opened for writing outside the workspace, a
//! connected socket); they pass through weft into the helper, and a command could use them
//! around every path and port rule. The supervisor closes every descriptor above 2 before it
//! starts anything, and the confining helper does it again before it `execve`s the command, so
//! a job holds exactly stdin, stdout and stderr.
//!
//! One of the crate's two `unsafe` calls (the other: `mount_setattr(2)` in `identity`):
//! rustix wraps no `close_range(2)`, and closing a raw
//! descriptor number is `unsafe` in Rust because an owner elsewhere in the process could
//! still use it.
#![allow(
    unsafe_code,
    reason = "close_range(2) has no safe wrapper; see the SAFETY comment"
)]

/// Closes every descriptor from 3 up. Call it only where no Rust value owns such a
/// descriptor (the helper's single thread, before it opens anything of its own).
pub(crate) fn close_inherited() -> std::io::Result<()> {
    // SAFETY: close_range(2) takes plain integers and touches no memory. The helper calls
    // this on its only thread before it creates any descriptor it keeps (argument parsing
    // and serde open none), so no `OwnedFd`, `File` or socket of this process refers to a
    // descriptor being closed: the ones closed were all inherited.
    let r = unsafe { libc::syscall(libc::SYS_close_range, 3u32, u32::MAX, 0u32) };
    if r == 0 {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error())
    }
}
