//! The allocator settings of a process that trains.

/// Keeps freed memory in the process instead of returning it to the OS after every step.
///
/// glibc's malloc trims the heap top and unmaps large blocks as soon as they are freed, so a
/// training step that frees and reallocates the same large activations page-faults them back
/// in every time: on the benchmark's medium MLP that costs over half the run. Raising the trim
/// threshold and the top pad keeps those pages mapped. This changes the whole process, which
/// is why only [`main`] (the generated `cli()`, which owns the process) calls it; a library
/// user of `Fit` keeps their allocator as it is, and can call this themselves.
pub fn tune_allocator() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: mallopt only adjusts allocator parameters; it is called before any training
    // thread starts and takes no pointers.
    unsafe {
        libc::mallopt(libc::M_TRIM_THRESHOLD, 1_000_000_000);
        libc::mallopt(libc::M_TOP_PAD, 256 << 20);
        libc::mallopt(libc::M_MMAP_THRESHOLD, 256 << 20);
    }
}
