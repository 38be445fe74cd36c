//! Capabilities (Linux): a job runs with none and no way to regain any, whoever starts weft.
//! The bounding set is emptied (so an `execve` — of a setuid-root program, or by a root
//! process — can never grant a capability back), then the ambient set, and the effective,
//! permitted and inheritable sets are cleared. Emptying the bounding set needs
//! `CAP_SETPCAP` in the process's user namespace: root has it, and so does the supervisor
//! of a non-root weft right after it made its user namespace; the supervisor empties it
//! before it starts the job, so the confining helper inherits an empty one.

use rustix::thread::{
    CapabilitySet, CapabilitySets, capabilities, capability_is_in_bounding_set,
    clear_ambient_capability_set, remove_capability_from_bounding_set, set_capabilities,
};

/// Why the capabilities could not be dropped.
#[derive(Debug, thiserror::Error)]
pub(crate) enum CapsError {
    /// A step of the drop failed.
    #[error("cannot drop capabilities ({0}): {1}")]
    Drop(&'static str, std::io::Error),
    /// Some are still held after the drop.
    #[error("capabilities remain after the drop: {0}")]
    Remain(String),
}

/// The highest capability number this kernel knows (`/proc/sys/kernel/cap_last_cap`; 40 on
/// Linux 5.9+ when unreadable). At most 63: the sets are 64-bit.
fn last_cap() -> u32 {
    std::fs::read_to_string("/proc/sys/kernel/cap_last_cap")
        .ok()
        .and_then(|s| s.trim().parse::<u32>().ok())
        .unwrap_or(40)
        .min(63)
}

fn cap(n: u32) -> CapabilitySet {
    CapabilitySet::from_bits_retain(1u64 << n)
}

/// Drops every capability of the calling thread (see the module docs) and checks that none
/// is left in any set.
pub(crate) fn drop_all() -> Result<(), CapsError> {
    drop_all_but(CapabilitySet::empty())
}

/// [`drop_all`], keeping `keep` in the effective and permitted sets only (the bounding,
/// ambient and inheritable sets are emptied all the same, so no `execve` passes them on): a
/// root supervisor keeps `CAP_SETUID` and `CAP_SETGID` until it has started the job under
/// its unprivileged identity, then drops them too.
pub(crate) fn drop_all_but(keep: CapabilitySet) -> Result<(), CapsError> {
    let last = last_cap();
    for n in 0..=last {
        if capability_is_in_bounding_set(cap(n)).unwrap_or(false) {
            remove_capability_from_bounding_set(cap(n))
                .map_err(|e| CapsError::Drop("bounding set", e.into()))?;
        }
    }
    clear_ambient_capability_set().map_err(|e| CapsError::Drop("ambient set", e.into()))?;
    set_capabilities(
        None,
        CapabilitySets {
            effective: keep,
            permitted: keep,
            inheritable: CapabilitySet::empty(),
        },
    )
    .map_err(|e| CapsError::Drop("capset", e.into()))?;
    verify(last, keep)
}

/// Fails unless every set is empty (the effective and permitted ones but for `keep`).
fn verify(last: u32, keep: CapabilitySet) -> Result<(), CapsError> {
    let sets = capabilities(None).map_err(|e| CapsError::Drop("capget", e.into()))?;
    let mut left = Vec::new();
    for (name, set) in [
        ("effective", sets.effective - keep),
        ("permitted", sets.permitted - keep),
        ("inheritable", sets.inheritable),
    ] {
        if !set.is_empty() {
            left.push(format!("{name} {:#x}", set.bits()));
        }
    }
    let bounding: Vec<u32> = (0..=last)
        .filter(|&n| capability_is_in_bounding_set(cap(n)).unwrap_or(true))
        .collect();
    if !bounding.is_empty() {
        left.push(format!("bounding {bounding:?}"));
    }
    let ambient: Vec<u32> = (0..=last)
        .filter(|&n| rustix::thread::capability_is_in_ambient_set(cap(n)).unwrap_or(false))
        .collect();
    if !ambient.is_empty() {
        left.push(format!("ambient {ambient:?}"));
    }
    if left.is_empty() {
        Ok(())
    } else {
        Err(CapsError::Remain(left.join(", ")))
    }
}
