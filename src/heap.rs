//! Giving freed memory back to the system when a turn is over. glibc keeps the pages of freed blocks in its
//! heap for reuse, so a search over a big tree or a long streamed answer left the agent several megabytes larger
//! for as long as it ran; trimming once per turn returns them (the allocator's settings are in `main.rs`).
//!
//! Owns that one call. Must not be called on a hot path: it walks the allocator's free lists under its lock.

/// Return the free pages of the heap to the system (glibc); elsewhere nothing to do.
pub fn release_free_memory() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: `malloc_trim` only releases memory the allocator holds free; it is safe to call at any time.
    unsafe {
        libc::malloc_trim(0);
    }
}
