//! Memory handed back once heavy work ends. The server allocates through mimalloc
//! (src/main.rs), which keeps each thread's freed pages for that thread's next
//! allocations. A thread that parsed a large upload may sit idle in tokio's blocking
//! pool afterwards, holding what it freed: measured, a long-running server's resident
//! memory grew by 100–180 MiB per 1M-row request log until it was a few hundred MiB
//! before the next upload began. Heavy blocking work therefore runs through
//! [`spawn_blocking`], which collects the thread's heap when the work returns.

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
