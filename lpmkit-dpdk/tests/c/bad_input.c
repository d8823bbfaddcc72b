/* Bad input through the rte_fib / rte_fib6 C API, and the answers DPDK gives.
 *
 * Built twice by tests/bad_input.rs, from DPDK's own headers:
 *   - against DPDK's librte_fib, with -DREF_DPDK: the program initialises DPDK's EAL (no
 *     huge pages) and checks that DPDK answers every case the way this file says;
 *   - against liblpmkit_rte_fib.so (run as it is and under valgrind): the same cases, the
 *     same answers, plus the cases where DPDK would crash (NULL handles and arrays, a
 *     negative count), which lpmkit refuses with EINVAL, and the few where lpmkit answers
 *     otherwise on purpose (each marked DIFFERS, with DPDK's answer beside it).
 * One line per failed check on stderr; exit status 1 if any failed. */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <rte_errno.h>
#include <rte_fib.h>
#include <rte_fib6.h>
#ifdef REF_DPDK
#include <rte_eal.h>
#else
/* lpmkit's header (its additions: proof that lpmkit answers). */
#include <lpmkit_rte_fib.h>
#endif

static int failed;
static int checked;

#define CHECK(cond, ...)                                                                   \
	do {                                                                               \
		checked++;                                                                 \
		if (!(cond)) {                                                             \
			failed++;                                                          \
			fprintf(stderr, "%s:%d: ", __FILE__, __LINE__);                    \
			fprintf(stderr, __VA_ARGS__);                                      \
			fprintf(stderr, "\n");                                             \
		}                                                                          \
	} while (0)

/* A call that returns a status: the expected return value. */
#define STATUS(call, want)                                                                 \
	do {                                                                               \
		int got_ = (call);                                                         \
		CHECK(got_ == (want), "%s = %d, expected %d", #call, got_, (want));        \
	} while (0)

/* A create/find that must fail with `err` in rte_errno. */
#define NO_TABLE(call, err)                                                                \
	do {                                                                               \
		rte_errno = 0;                                                             \
		void *got_ = (void *)(call);                                               \
		CHECK(got_ == NULL && rte_errno == (err), "%s = %p, rte_errno %d, expected NULL " \
		      "and %d", #call, got_, rte_errno, (err));                            \
	} while (0)

#ifdef REF_DPDK
/* What DPDK answers where lpmkit answers otherwise on purpose. */
#define DIFFERS(lpmkit, dpdk) (dpdk)
#else
#define DIFFERS(lpmkit, dpdk) (lpmkit)
#endif

static struct rte_fib_conf conf4(enum rte_fib_type type, enum rte_fib_dir24_8_nh_sz nh_sz,
				 int max_routes)
{
	struct rte_fib_conf c;
	memset(&c, 0, sizeof(c));
	c.type = type;
	c.default_nh = 0;
	c.max_routes = max_routes;
	c.dir24_8.nh_sz = nh_sz;
	c.dir24_8.num_tbl8 = 64;
	return c;
}

static struct rte_fib6_conf conf6(enum rte_fib6_type type, enum rte_fib_trie_nh_sz nh_sz,
				  int max_routes)
{
	struct rte_fib6_conf c;
	memset(&c, 0, sizeof(c));
	c.type = type;
	c.default_nh = 0;
	c.max_routes = max_routes;
	c.trie.nh_sz = nh_sz;
	c.trie.num_tbl8 = 64;
	return c;
}

static void creation(void)
{
	struct rte_fib_conf c = conf4(RTE_FIB_DIR24_8, RTE_FIB_DIR24_8_1B, 16);
	struct rte_fib6_conf c6 = conf6(RTE_FIB6_TRIE, RTE_FIB6_TRIE_2B, 16);

	NO_TABLE(rte_fib_create(NULL, 0, &c), EINVAL);
	NO_TABLE(rte_fib_create("c-null-conf", 0, NULL), EINVAL);
	NO_TABLE(rte_fib6_create(NULL, 0, &c6), EINVAL);
	NO_TABLE(rte_fib6_create("c-null-conf", 0, NULL), EINVAL);

	struct rte_fib_conf bad = c;
	bad.max_routes = -1;
	NO_TABLE(rte_fib_create("c-bad", 0, &bad), EINVAL);
	bad.max_routes = 0;
	NO_TABLE(rte_fib_create("c-bad", 0, &bad), EINVAL);
	bad = c;
	bad.type = (enum rte_fib_type)2;
	NO_TABLE(rte_fib_create("c-bad", 0, &bad), EINVAL);
	bad.type = (enum rte_fib_type)-1;
	NO_TABLE(rte_fib_create("c-bad", 0, &bad), EINVAL);
	bad = c;
	bad.dir24_8.nh_sz = (enum rte_fib_dir24_8_nh_sz)4;
	NO_TABLE(rte_fib_create("c-bad", 0, &bad), EINVAL);
	bad.dir24_8.nh_sz = (enum rte_fib_dir24_8_nh_sz)-1;
	NO_TABLE(rte_fib_create("c-bad", 0, &bad), EINVAL);
	bad = c;
	bad.dir24_8.num_tbl8 = 0;
	NO_TABLE(rte_fib_create("c-bad", 0, &bad), EINVAL);
	bad.dir24_8.num_tbl8 = 128; /* more than a 1-byte entry can index */
	NO_TABLE(rte_fib_create("c-bad", 0, &bad), EINVAL);
	bad = c;
	bad.default_nh = 128; /* too wide for 1-byte entries */
	NO_TABLE(rte_fib_create("c-bad", 0, &bad), EINVAL);

	struct rte_fib6_conf bad6 = c6;
	bad6.trie.nh_sz = (enum rte_fib_trie_nh_sz)0; /* the trie has no 1-byte entries */
	NO_TABLE(rte_fib6_create("c-bad", 0, &bad6), EINVAL);
	bad6 = c6;
	bad6.default_nh = 32768;
	NO_TABLE(rte_fib6_create("c-bad", 0, &bad6), EINVAL);
	bad6 = c6;
	bad6.max_routes = 0;
	NO_TABLE(rte_fib6_create("c-bad", 0, &bad6), EINVAL);
	bad6 = c6;
	bad6.type = (enum rte_fib6_type)2;
	NO_TABLE(rte_fib6_create("c-bad", 0, &bad6), EINVAL);

	/* A zero-length name is a name like any other, and like any other taken once. */
	struct rte_fib *empty = rte_fib_create("", 0, &c);
	CHECK(empty != NULL, "rte_fib_create(\"\") failed: rte_errno %d", rte_errno);
	NO_TABLE(rte_fib_create("", 0, &c), EEXIST);
	NO_TABLE(rte_fib6_create("", 0, &c6), EEXIST);
	CHECK(rte_fib_find_existing("") == empty, "find_existing(\"\")");
	rte_fib_free(empty);

	/* A name used twice, in either family. */
	struct rte_fib *dup = rte_fib_create("c-dup", 0, &c);
	CHECK(dup != NULL, "rte_fib_create(c-dup) failed: rte_errno %d", rte_errno);
	NO_TABLE(rte_fib_create("c-dup", 0, &c), EEXIST);
	NO_TABLE(rte_fib6_create("c-dup", 0, &c6), EEXIST);
	CHECK(rte_fib_find_existing("c-dup") == dup, "find_existing(c-dup)");
	NO_TABLE(rte_fib6_find_existing("c-dup"), ENOENT);
	NO_TABLE(rte_fib_find_existing("c-none"), ENOENT);
	NO_TABLE(rte_fib6_find_existing("c-none"), ENOENT);
	rte_fib_free(dup);
	NO_TABLE(rte_fib_find_existing("c-dup"), ENOENT);
	/* Freed, the name is free again. */
	dup = rte_fib_create("c-dup", 0, &c);
	CHECK(dup != NULL, "rte_fib_create(c-dup) again failed: rte_errno %d", rte_errno);
	rte_fib_free(dup);

	/* Names: DPDK refuses 25 characters and more (its RIB's memory pool name must fit
	 * 32 bytes with a prefix); lpmkit takes what fits DPDK's 64-byte FIB name field. */
	char name[80];
	memset(name, 'n', sizeof(name));
	name[63] = 0;
	struct rte_fib *longest = rte_fib_create(name, 0, &c);
	CHECK((longest != NULL) == DIFFERS(1, 0), "rte_fib_create(63 characters) = %p",
	      (void *)longest);
	rte_fib_free(longest);
	name[64] = 0;
	name[63] = 'n';
	NO_TABLE(rte_fib_create(name, 0, &c), ENAMETOOLONG);
	NO_TABLE(rte_fib6_create(name, 0, &c6), ENAMETOOLONG);

#ifndef REF_DPDK
	/* DPDK reads these NULL pointers (a crash); lpmkit refuses them. */
	NO_TABLE(rte_fib_find_existing(NULL), EINVAL);
	NO_TABLE(rte_fib6_find_existing(NULL), EINVAL);
#endif
	rte_fib_free(NULL);
	rte_fib6_free(NULL);
}

static void updates4(void)
{
	struct rte_fib_conf c = conf4(RTE_FIB_DIR24_8, RTE_FIB_DIR24_8_1B, 4);
	struct rte_fib *f = rte_fib_create("c-upd4", 0, &c);
	CHECK(f != NULL, "rte_fib_create(c-upd4): rte_errno %d", rte_errno);
	if (f == NULL)
		return;
	const uint32_t net10 = 10u << 24;

	STATUS(rte_fib_add(NULL, net10, 8, 1), -EINVAL);
	STATUS(rte_fib_delete(NULL, net10, 8), -EINVAL);
	STATUS(rte_fib_add(f, net10, 33, 1), -EINVAL);
	STATUS(rte_fib_add(f, net10, 255, 1), -EINVAL);
	STATUS(rte_fib_delete(f, net10, 33), -EINVAL);
	STATUS(rte_fib_add(f, net10, 8, 128), -EINVAL); /* 1-byte entries: at most 127 */
	STATUS(rte_fib_add(f, net10, 8, UINT64_MAX), -EINVAL);
	STATUS(rte_fib_delete(f, net10, 8), -ENOENT);

	/* max_routes = 4: four /24s in 10.0.0.0/22, then a fifth is one too many. */
	for (uint32_t i = 0; i < 4; i++)
		STATUS(rte_fib_add(f, net10 | i << 8, 24, 1 + i), 0);
	STATUS(rte_fib_add(f, net10 | 4u << 8, 24, 9), -ENOMEM);
	STATUS(rte_fib_add(f, net10 | 2u << 8, 24, 3), 0); /* a route it has: no change */
	STATUS(rte_fib_add(f, net10 | 2u << 8 | 77, 24, 127), 0); /* host bits cleared */
	STATUS(rte_fib_delete(f, net10 | 3u << 8, 24), 0);
	STATUS(rte_fib_delete(f, net10 | 3u << 8, 24), -ENOENT);
	STATUS(rte_fib_add(f, net10 | 4u << 8, 24, 9), 0);

	uint32_t ips[5] = {net10 | 1, net10 | 1u << 8 | 1, net10 | 2u << 8 | 200,
			   net10 | 3u << 8 | 1, net10 | 4u << 8 | 255};
	uint64_t nh[5] = {0};
	uint64_t want[5] = {1, 2, 127, 0, 9};
	STATUS(rte_fib_lookup_bulk(f, ips, nh, 5), 0);
#ifndef REF_DPDK
	CHECK(lpmkit_rte_fib_scheme(f) != NULL, "lpmkit_rte_fib_scheme: rte_errno %d", rte_errno);
#endif
	for (int i = 0; i < 5; i++)
		CHECK(nh[i] == want[i], "lookup %d: %llu, expected %llu", i,
		      (unsigned long long)nh[i], (unsigned long long)want[i]);
	STATUS(rte_fib_lookup_bulk(f, NULL, NULL, 0), 0);
#ifndef REF_DPDK
	/* DPDK reads these (a crash); lpmkit refuses them. */
	STATUS(rte_fib_lookup_bulk(NULL, ips, nh, 5), -EINVAL);
	STATUS(rte_fib_lookup_bulk(f, NULL, nh, 5), -EINVAL);
	STATUS(rte_fib_lookup_bulk(f, ips, NULL, 5), -EINVAL);
	STATUS(rte_fib_lookup_bulk(f, ips, nh, -1), -EINVAL);
	STATUS(rte_fib_select_lookup(NULL, RTE_FIB_LOOKUP_DEFAULT), -EINVAL);
#endif

	/* Every scalar lookup type is accepted; AVX-512 too by lpmkit (which picks its own
	 * path), by DPDK only when its SIMD width allows it (not by default). */
	STATUS(rte_fib_select_lookup(f, RTE_FIB_LOOKUP_DEFAULT), 0);
	STATUS(rte_fib_select_lookup(f, RTE_FIB_LOOKUP_DIR24_8_SCALAR_MACRO), 0);
	STATUS(rte_fib_select_lookup(f, RTE_FIB_LOOKUP_DIR24_8_SCALAR_INLINE), 0);
	STATUS(rte_fib_select_lookup(f, RTE_FIB_LOOKUP_DIR24_8_SCALAR_UNI), 0);
	STATUS(rte_fib_select_lookup(f, RTE_FIB_LOOKUP_DIR24_8_VECTOR_AVX512),
	       DIFFERS(0, -EINVAL));
	STATUS(rte_fib_select_lookup(f, (enum rte_fib_lookup_type)5), -EINVAL);
	STATUS(rte_fib_select_lookup(f, (enum rte_fib_lookup_type)-1), -EINVAL);
	STATUS(rte_fib_lookup_bulk(f, ips, nh, 5), 0);
	CHECK(nh[4] == 9, "lookup after select_lookup: %llu", (unsigned long long)nh[4]);

	CHECK(rte_fib_get_dp(NULL) == NULL, "get_dp(NULL)");
	CHECK(rte_fib_get_rib(NULL) == NULL, "get_rib(NULL)");
	CHECK(rte_fib_get_dp(f) != NULL, "get_dp");
#ifndef REF_DPDK
	NO_TABLE(rte_fib_get_rib(f), ENOTSUP); /* DPDK hands out its rte_rib */
#endif
	rte_fib_free(f);

	/* Wider entries: the largest next hop of each fits, one more does not. */
	const enum rte_fib_dir24_8_nh_sz sizes[3] = {RTE_FIB_DIR24_8_2B, RTE_FIB_DIR24_8_4B,
						     RTE_FIB_DIR24_8_8B};
	for (int i = 0; i < 3; i++) {
		c = conf4(RTE_FIB_DIR24_8, sizes[i], 16);
		f = rte_fib_create("c-wide4", 0, &c);
		CHECK(f != NULL, "rte_fib_create(c-wide4): rte_errno %d", rte_errno);
		if (f == NULL)
			continue;
		uint64_t max = (1ull << ((8u << sizes[i]) - 1)) - 1;
		STATUS(rte_fib_add(f, net10, 8, max), 0);
		STATUS(rte_fib_add(f, net10 | 1u << 16, 16, max + 1), -EINVAL);
		uint32_t ip = net10 | 5;
		uint64_t got = 0;
		STATUS(rte_fib_lookup_bulk(f, &ip, &got, 1), 0);
		CHECK(got == max, "lookup: %llu, expected %llu", (unsigned long long)got,
		      (unsigned long long)max);
		rte_fib_free(f);
	}

	/* The RIB-only type takes any 64-bit next hop and no lookup type. */
	c = conf4(RTE_FIB_DUMMY, RTE_FIB_DIR24_8_1B, 16);
	f = rte_fib_create("c-dummy4", 0, &c);
	CHECK(f != NULL, "rte_fib_create(c-dummy4): rte_errno %d", rte_errno);
	if (f != NULL) {
		STATUS(rte_fib_add(f, 0, 0, UINT64_MAX), 0);
		STATUS(rte_fib_select_lookup(f, RTE_FIB_LOOKUP_DEFAULT), -EINVAL);
		uint32_t ip = 12345;
		uint64_t got = 0;
		STATUS(rte_fib_lookup_bulk(f, &ip, &got, 1), 0);
		CHECK(got == UINT64_MAX, "dummy lookup: %llu", (unsigned long long)got);
		rte_fib_free(f);
	}
}

static void updates6(void)
{
	struct rte_fib6_conf c = conf6(RTE_FIB6_TRIE, RTE_FIB6_TRIE_2B, 4);
	struct rte_fib6 *f = rte_fib6_create("c-upd6", 0, &c);
	CHECK(f != NULL, "rte_fib6_create(c-upd6): rte_errno %d", rte_errno);
	if (f == NULL)
		return;
	uint8_t ip[16] = {0x20, 0x01, 0x0d, 0xb8};

	STATUS(rte_fib6_add(NULL, ip, 32, 1), -EINVAL);
	STATUS(rte_fib6_delete(NULL, ip, 32), -EINVAL);
	STATUS(rte_fib6_add(f, NULL, 32, 1), -EINVAL);
	STATUS(rte_fib6_delete(f, NULL, 32), -EINVAL);
	STATUS(rte_fib6_add(f, ip, 129, 1), -EINVAL);
	STATUS(rte_fib6_delete(f, ip, 129), -EINVAL);
	STATUS(rte_fib6_add(f, ip, 32, 32768), -EINVAL); /* 2-byte entries: at most 32767 */
	STATUS(rte_fib6_delete(f, ip, 32), -ENOENT);

	/* max_routes = 4: four /48s in 2001:db8::/46, then a fifth is one too many. */
	for (int i = 0; i < 4; i++) {
		ip[5] = i;
		STATUS(rte_fib6_add(f, ip, 48, 1 + i), 0);
	}
	ip[5] = 4;
	STATUS(rte_fib6_add(f, ip, 48, 9), -ENOMEM);
	ip[5] = 2;
	STATUS(rte_fib6_add(f, ip, 48, 3), 0);
	ip[5] = 3;
	STATUS(rte_fib6_delete(f, ip, 48), 0);
	STATUS(rte_fib6_delete(f, ip, 48), -ENOENT);
	ip[5] = 4;
	STATUS(rte_fib6_add(f, ip, 48, 9), 0);

	uint8_t ips[4][16];
	memset(ips, 0, sizeof(ips));
	for (int i = 0; i < 4; i++) {
		memcpy(ips[i], ip, 4);
		ips[i][5] = i + 1;
		ips[i][15] = 7;
	}
	uint64_t nh[4] = {0};
	uint64_t want[4] = {2, 3, 0, 9};
	STATUS(rte_fib6_lookup_bulk(f, ips, nh, 4), 0);
	for (int i = 0; i < 4; i++)
		CHECK(nh[i] == want[i], "lookup6 %d: %llu, expected %llu", i,
		      (unsigned long long)nh[i], (unsigned long long)want[i]);
	STATUS(rte_fib6_lookup_bulk(f, NULL, NULL, 0), 0);
#ifndef REF_DPDK
	STATUS(rte_fib6_lookup_bulk(NULL, ips, nh, 4), -EINVAL);
	STATUS(rte_fib6_lookup_bulk(f, NULL, nh, 4), -EINVAL);
	STATUS(rte_fib6_lookup_bulk(f, ips, NULL, 4), -EINVAL);
	STATUS(rte_fib6_lookup_bulk(f, ips, nh, -7), -EINVAL);
	STATUS(rte_fib6_select_lookup(NULL, RTE_FIB6_LOOKUP_DEFAULT), -EINVAL);
	NO_TABLE(rte_fib6_get_rib(f), ENOTSUP);
#endif
	STATUS(rte_fib6_select_lookup(f, RTE_FIB6_LOOKUP_DEFAULT), 0);
	STATUS(rte_fib6_select_lookup(f, RTE_FIB6_LOOKUP_TRIE_SCALAR), 0);
	STATUS(rte_fib6_select_lookup(f, RTE_FIB6_LOOKUP_TRIE_VECTOR_AVX512),
	       DIFFERS(0, -EINVAL));
	STATUS(rte_fib6_select_lookup(f, (enum rte_fib6_lookup_type)3), -EINVAL);
	CHECK(rte_fib6_get_dp(NULL) == NULL, "get_dp(NULL)");
	CHECK(rte_fib6_get_rib(NULL) == NULL, "get_rib(NULL)");
	rte_fib6_free(f);

	c = conf6(RTE_FIB6_DUMMY, RTE_FIB6_TRIE_2B, 16);
	f = rte_fib6_create("c-dummy6", 0, &c);
	CHECK(f != NULL, "rte_fib6_create(c-dummy6): rte_errno %d", rte_errno);
	if (f != NULL) {
		STATUS(rte_fib6_add(f, ip, 0, UINT64_MAX - 1), 0);
		STATUS(rte_fib6_select_lookup(f, RTE_FIB6_LOOKUP_DEFAULT), -EINVAL);
		uint64_t got = 0;
		STATUS(rte_fib6_lookup_bulk(f, ips, &got, 1), 0);
		CHECK(got == UINT64_MAX - 1, "dummy6 lookup: %llu", (unsigned long long)got);
		rte_fib6_free(f);
	}
}

int main(int argc, char **argv)
{
	(void)argc;
	(void)argv;
#ifdef REF_DPDK
	char *eal[] = {"bad_input", "--no-huge", "-m", "256", "--no-pci", "--no-shconf",
		       "--log-level=1", NULL};
	if (rte_eal_init(7, eal) < 0) {
		fprintf(stderr, "rte_eal_init failed\n");
		return 2;
	}
#endif
	creation();
	updates4();
	updates6();
	printf("%d checks, %d failed\n", checked, failed);
	return failed ? 1 : 0;
}
