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

#endif
