//! The allocator of the memory examples (`map_memory`, `node_memory`): the one the `weft`
//! binary ships with (mimalloc; the system allocator with `--no-default-features`), wrapped
//! by `cap::Cap` so the heap in use can be read at any point (`HEAP.allocated()`).

#[cfg(feature = "mimalloc")]
#[global_allocator]
pub static HEAP: cap::Cap<mimalloc::MiMalloc> = cap::Cap::new(mimalloc::MiMalloc, usize::MAX);
#[cfg(not(feature = "mimalloc"))]
#[global_allocator]
pub static HEAP: cap::Cap<std::alloc::System> = cap::Cap::new(std::alloc::System, usize::MAX);
