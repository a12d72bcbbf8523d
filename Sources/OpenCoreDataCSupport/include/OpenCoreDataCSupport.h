#ifndef OPENCOREDATA_CSUPPORT_H
#define OPENCOREDATA_CSUPPORT_H

/// Asks the processor to bring the cache line holding `address` into its caches
/// ahead of a read (a hint: no fault, nothing happens on a bad address). A save
/// walks its rows in order, and each row's values live in an array of their own,
/// long out of the cache in a large save: asking for the rows a few places ahead
/// overlaps their cache misses with the work on the current row.
static inline void ocd_prefetch(const void *address) {
#if defined(__GNUC__) || defined(__clang__)
    __builtin_prefetch(address, 0, 3);
#else
    (void)address;
#endif
}

/// Reads the 8-byte word at `address` atomically (relaxed), after an acquire
/// fence. For memory another thread or process writes without a lock Swift can
/// name: the write-ahead log's index header in SQLite's shared memory, which
/// SQLite's writers change while readers compare it. A plain load there is a data
/// race; SQLite itself reads the header under memory barriers and checks its two
/// copies against each other, as the held read does.
static inline unsigned long long ocd_load_shared_word(const void *address) {
#if defined(__GNUC__) || defined(__clang__)
    __atomic_thread_fence(__ATOMIC_ACQUIRE);
    return __atomic_load_n((const unsigned long long *)address, __ATOMIC_RELAXED);
#else
    return *(const volatile unsigned long long *)address;
#endif
}

#endif
