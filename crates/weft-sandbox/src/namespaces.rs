//! The one call that makes namespaces (`unshare(2)`), for the supervisor (`supervise`), the
//! step user's setup (`identity`) and the mount namespace (`protect`) alike, below all three.

use rustix::thread::UnshareFlags;

#[allow(
    deprecated,
    reason = "rustix deprecated the safe `unshare` because CLONE_FILES can break other threads' \
              file descriptors; this single-threaded helper never passes CLONE_FILES, and the \
              workspace forbids `unsafe`"
)]
pub(crate) fn unshare(flags: UnshareFlags) -> rustix::io::Result<()> {
    rustix::thread::unshare(flags)
}
