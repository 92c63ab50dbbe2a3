//! Memory handed back once heavy work ends. The server allocates through mimalloc
//! (src/main.rs), which keeps each thread's freed pages for that thread's next
//! allocations. A thread that parsed a large upload may sit idle in tokio's blocking
//! pool afterwards, holding what it freed: measured, a long-running server's resident
//! memory grew by 100–180 MiB per 1M-row request log until it was a few hundred MiB
//! before the next upload began. Heavy blocking work therefore runs through
//! [`spawn_blocking`], which collects the thread's heap when the work returns.

/// mimalloc's `mi_option_purge_delay` (its place in `mi_option_e` of mimalloc.h, v2, the
/// version libmimalloc-sys builds by default; the crate names no constant for it).
const MI_OPTION_PURGE_DELAY: libmimalloc_sys::mi_option_t = 15;

/// Pages mimalloc frees go back to the system after 2 ms (20 ms for an arena's)
/// instead of its default 10 ms (100 ms). An upload frees buffers on other threads than
/// those that made them, at hundreds of MB/s: with the default delays, a trace upload on
/// a disk slowed to 150 MB/s peaked at 271–308 MiB, against 203–228 MiB purging at once
/// (measured before huge pages were turned off, below). Purging at once made every
/// buffer the next upload chunk needed fault in afresh: for a 1M-row request log, 2.58
/// CPU-s of the server against 2.29 with 2 ms, at 162 against 181–204 MiB peak. Call
/// first thing in `main`.
pub fn purge_freed_pages_soon() {
    // SAFETY: mi_option_set only stores an integer option; it may be called at any time.
    unsafe { libmimalloc_sys::mi_option_set(MI_OPTION_PURGE_DELAY, PURGE_DELAY_MS) }
}

/// See [`purge_freed_pages_soon`].
const PURGE_DELAY_MS: std::ffi::c_long = 2;

/// Transparent huge pages off for this process. mimalloc asks the kernel for huge
/// pages on its segments, and purging freed pages at once (above) hands them back: the
/// next touch of any byte in such a range then faults in, and clears, a whole 2 MiB
/// page. In a profile of a 1M-row request-log upload that clearing took 15–20 % of the
/// server's CPU, most of it for memory the touch did not need. Call first thing in
/// `main`; a no-op where the kernel has no such switch.
pub fn no_transparent_huge_pages() {
    // SAFETY: PR_SET_THP_DISABLE takes plain integers and only sets a flag of the
    // calling process; it fails harmlessly on kernels without it.
    unsafe {
        libc::prctl(libc::PR_SET_THP_DISABLE, 1, 0, 0, 0);
    }
}

/// Returns the memory this thread's heap holds free (and abandoned heaps' free pages)
/// to the system. Cheap when there is little to return; a no-op in processes whose
/// global allocator is not mimalloc (the tests).
pub fn release_thread_heap() {
    // SAFETY: mi_collect only walks mimalloc's own structures for this thread; it has no
    // preconditions and may be called at any time.
    unsafe { libmimalloc_sys::mi_collect(true) }
}

/// `tokio::task::spawn_blocking` for heavy work (parsing, hashing, compressing,
/// statistics over many rows): the thread's freed memory is handed back when `f` returns.
pub fn spawn_blocking<F, R>(f: F) -> tokio::task::JoinHandle<R>
where
    F: FnOnce() -> R + Send + 'static,
    R: Send + 'static,
{
    tokio::task::spawn_blocking(move || {
        let out = f();
        release_thread_heap();
        out
    })
}
