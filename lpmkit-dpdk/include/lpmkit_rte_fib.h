/* lpmkit_rte_fib.h: DPDK's rte_fib / rte_fib6 API served by lpmkit.
 *
 * liblpmkit_rte_fib.so exports every function of DPDK 22.11's rte_fib.h and rte_fib6.h
 * with DPDK's prototypes and symbol version (DPDK_23). An application written for DPDK
 * needs no change and no rebuild to use it:
 *
 *   LD_PRELOAD=liblpmkit_rte_fib.so ./app ...      (the preloaded library answers first)
 *
 * or, linked in place of librte_fib: `pkg-config --libs lpmkit-rte-fib` before DPDK's
 * libraries on the link line, or a copy named librte_fib.so.23 earlier in the library
 * path. Include DPDK's own <rte_fib.h> and <rte_fib6.h> for the API; this header adds
 * what lpmkit guarantees beyond them, what differs, and two functions of lpmkit's own.
 *
 * WHICH LOOKUP SCHEME
 *   Each table is served by one of lpmkit's schemes, chosen at its first lookup (or at
 *   lpmkit_rte_fib_sync), from the routes it holds then. By default ("auto"):
 *   - while the table is only looked up (routes added before the first lookup, as
 *     l3fwd does), the scheme whose lookups are fastest at DPDK's bursts: dir24-8 for
 *     IPv4, spider16w for IPv6;
 *   - from the first change made once lookups have begun, the scheme lpmkit chooses for
 *     a table that changes, updated in place: for IPv4 DXR (d16r below 2^19 routes, d18r
 *     below 1,500,000, d20r above), for IPv6 poptrie16. That first change waits for one
 *     build (tens to hundreds of milliseconds for a full table); every later change is
 *     a patch, visible when the call returns.
 *   LPMKIT_FIB_SCHEME=<name> (IPv4) and LPMKIT_FIB6_SCHEME=<name> (IPv6), read by
 *   rte_fib_create / rte_fib6_create, name one scheme for the table's life (`lpmkit
 *   schemes` lists them); an unknown name fails the create with EINVAL, a scheme that
 *   cannot hold the table gives way to auto. Each choice is logged once, through DPDK's
 *   log (type lib.lpmkit) or standard error.
 *
 * BETTER THAN DPDK WHERE DPDK IS WEAK
 *   - Updates under lookups. rte_fib_add / rte_fib_delete (and the rte_fib6 ones) may be
 *     called while other threads run rte_fib_lookup_bulk on the same table: lookups
 *     never lock and never wait, and each key's answer is the table's before or after
 *     each change, never a mix of them. DPDK requires the application to stop lookups or
 *     serialise them around every change. Adds and deletes may come from any threads
 *     (lpmkit serialises them). Schemes updated in place (auto's choice for a table that
 *     changes, and DXR, Poptrie, SAIL, OBMA, ...) make a change visible when the call
 *     returns, as DPDK does; schemes named by LPMKIT_FIB_SCHEME that are rebuilt on
 *     change (dir24-8, spider, planb, the trie) publish the rebuilt table with one
 *     pointer swap once a change has waited LPMKIT_FIB_HOLD_MS (default 10)
 *     milliseconds, on a thread of the table's own; lpmkit_rte_fib_sync() publishes now.
 *   - No huge pages, no num_tbl8. Memory comes from the process's heap and grows with the
 *     table; the tbl8 pool that DPDK sizes at create time, and whose exhaustion fails
 *     rte_fib_add with -ENOSPC, does not exist. max_routes is the only limit.
 *   - Routes added before the first lookup are loaded in one build at that lookup (that
 *     one call waits for the build: tens to hundreds of milliseconds for a full table),
 *     not one table update per route.
 *
 * SAME AS DPDK
 *   Prototypes, struct layouts (checked against the installed headers when the library
 *   is built), return values and rte_errno: EINVAL for a NULL name or configuration, a
 *   negative or zero max_routes, a type past the enum, an nh_sz the type lacks, num_tbl8
 *   of 0 or too large for nh_sz, a default_nh, next hop or depth out of range; EEXIST for
 *   a name a table of either family has; ENOENT from find_existing and delete; host bits
 *   of a prefix cleared; next hops of (8 << nh_sz) - 1 bits (RTE_FIB_DUMMY and
 *   RTE_FIB6_DUMMY tables: any 64-bit value); select_lookup -EINVAL for DUMMY tables.
 *
 * WHAT DIFFERS
 *   - max_routes counts routes: the table holds exactly max_routes, and one more fails
 *     with -ENOMEM. DPDK counts the nodes of its RIB (two per route, intermediate nodes
 *     included), so it holds at least max_routes and sometimes more; its error is the
 *     same -ENOMEM.
 *   - Where DPDK 22.11 reads a NULL pointer (a NULL handle for lookup_bulk and
 *     select_lookup, NULL ips or next_hops, a NULL name for find_existing) or a negative
 *     count, lpmkit returns -EINVAL (NULL with rte_errno = EINVAL), as DPDK's debug build
 *     does.
 *   - Names: up to 63 bytes (DPDK's RTE_FIB_NAMESIZE), longer ones ENAMETOOLONG; DPDK
 *     refuses 25 bytes and more (its memory pool names are shorter). Unique per process;
 *     DPDK's are shared with its secondary processes.
 *   - socket_id is accepted and not used (memory is the process's, first touched by the
 *     thread that builds the table).
 *   - select_lookup accepts every lookup type of the enum, AVX-512 included, and changes
 *     nothing: the scheme runs the best path the CPU has (AVX-512, AVX2 or scalar; see
 *     LPMKIT_FORCE_ISA). DPDK refuses AVX-512 unless its SIMD width was raised to 512.
 *   - rte_fib6_add with a next hop too wide for nh_sz is -EINVAL whether the route is new
 *     or not (DPDK 22.11 answers 0 and keeps the old next hop for an existing route).
 *   - get_rib returns NULL with rte_errno = ENOTSUP: there is no rte_rib to hand out.
 *     get_dp returns the handle itself, an opaque pointer (as DPDK's DUMMY tables do).
 *   - Each distinct next-hop value is kept for the table's lifetime (lookups map an id
 *     to it without a lock), so a table's memory grows with the distinct values it ever
 *     held, not only with those its routes hold now.
 *   - rte_fib_free must not race with other calls on the same table (as in DPDK). A
 *     lookup thread holds a small handle per table it looked up, released at its next
 *     lookup after the table is freed, or when the thread exits.
 */
#ifndef LPMKIT_RTE_FIB_H
#define LPMKIT_RTE_FIB_H

#include <rte_fib.h>
#include <rte_fib6.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The name of the lpmkit scheme that serves the table's lookups (building the table
 * first, as its first lookup would, if it has not been looked up yet), valid while the
 * table lives; NULL with rte_errno = EINVAL for a NULL handle. */
const char *lpmkit_rte_fib_scheme(struct rte_fib *fib);
const char *lpmkit_rte_fib6_scheme(struct rte_fib6 *fib);

/* Makes every change made so far visible to lookups when it returns: builds a table not
 * looked up yet, publishes changes a rebuilt scheme holds. 0, or -EINVAL for a NULL
 * handle, -ENOSPC if the scheme cannot hold the routes. */
int lpmkit_rte_fib_sync(struct rte_fib *fib);
int lpmkit_rte_fib6_sync(struct rte_fib6 *fib);

#ifdef __cplusplus
}
#endif

#endif /* LPMKIT_RTE_FIB_H */
