/* Unit tests of fs/dirplus.c: which listed entries go bare.  No session: the invalidations it
 * would send are only counted by what dp_before_walk reports. */
#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>

#include "fs/dirplus.h"
#include "testutil.h"

/* A listing of a folder gets DP_BARE_MAX bare entries at most, over all its replies, and as
 * many again when it starts over. */
static void test_room(void)
{
	struct dirplus *dp = dp_new();

	CHECK(dp);
	CHECK_EQ(dp_bare_room(dp, 100, 5, true), DP_BARE_MAX);
	dp_listed_bare(dp, 5, 1000);
	CHECK_EQ(dp_bare_room(dp, 100, 5, false), DP_BARE_MAX - 1000);
	dp_listed_bare(dp, 5, DP_BARE_MAX - 1000);
	CHECK_EQ(dp_bare_room(dp, 100, 5, false), 0);
	dp_listed_bare(dp, 5, 7); /* a reply may overshoot (entries sent twice): no wrap */
	CHECK_EQ(dp_bare_room(dp, 100, 5, false), 0);
	CHECK_EQ(dp_bare_room(dp, 100, 6, false), DP_BARE_MAX); /* another folder */
	CHECK_EQ(dp_bare_room(dp, 100, 5, true), DP_BARE_MAX);	 /* listed anew */
	CHECK(!dp_all_attrs(dp));
	dp_free(dp);
}

/* The walker's listings carry every attribute; once it is gone, its thread id is nobody's. */
static void test_walker(void)
{
	struct dirplus *dp = dp_new();

	dp_set_walker(dp, 4242);
	CHECK_EQ(dp_bare_room(dp, 4242, 1, true), 0);
	dp_listed_bare(dp, 1, DP_BARE_MAX); /* while it walks, no limit for the others */
	CHECK_EQ(dp_bare_room(dp, 4243, 1, false), UINT_MAX);
	dp_set_walker(dp, 0);
	CHECK_EQ(dp_bare_room(dp, 4243, 1, false), 0);
	CHECK_EQ(dp_bare_room(dp, 4242, 1, true), DP_BARE_MAX);
	CHECK_EQ(dp_bare_room(dp, 0, 1, true), DP_BARE_MAX); /* a request with no pid */
	dp_free(dp);
}

/* Folder lookups never switch; the DP_FLIP-th lookup of a non-folder does, for good, and
 * forgets the folders listed bare (they were invalidated: no walker needs to drop them). */
static void test_flip(void)
{
	struct dirplus *dp = dp_new();

	dp_listed_bare(dp, 9, 10);
	dp_listed_bare(dp, 10, 10);
	for (int i = 0; i < 100; i++)
		dp_looked_up(dp, NULL, true);
	CHECK(!dp_all_attrs(dp));
	for (int i = 0; i < DP_FLIP - 1; i++)
		dp_looked_up(dp, NULL, false);
	CHECK(!dp_all_attrs(dp));
	CHECK(dp_before_walk(dp, NULL, 10)); /* still remembered, now taken */
	CHECK(!dp_before_walk(dp, NULL, 10));
	dp_looked_up(dp, NULL, false);
	CHECK(dp_all_attrs(dp));
	CHECK_EQ(dp_bare_room(dp, 100, 9, true), 0);
	CHECK(!dp_before_walk(dp, NULL, 9));
	dp_listed_bare(dp, 11, 1); /* a reply made before the switch, counted after it */
	CHECK(!dp_before_walk(dp, NULL, 11));
	for (int i = 0; i < 100; i++)
		dp_looked_up(dp, NULL, false);
	CHECK(dp_all_attrs(dp));
	dp_free(dp);
}

/* The table under many folders, taken in a random order: each is reported exactly once, and
 * the ones still there keep their counts (deletion keeps every probe run whole). */
static void test_table(void)
{
	enum { N = 20000 };
	struct dirplus *dp = dp_new();
	uint64_t *ino = malloc(N * sizeof(*ino));
	bool *taken = calloc(N, sizeof(*taken));
	uint64_t x = 88172645463325252ull;

	CHECK(ino && taken);
	for (size_t i = 0; i < N; i++) {
		/* clustered numbers, as the index gives folders, plus some far apart */
		ino[i] = i % 3 ? 2 + i : ((uint64_t)1 << 40) + i * 4096;
		dp_listed_bare(dp, ino[i], (unsigned)(i % DP_BARE_MAX));
	}
	for (size_t k = 0; k < N / 2; k++) {
		x ^= x << 13, x ^= x >> 7, x ^= x << 17;
		size_t i = (size_t)(x % N);
		CHECK_EQ(dp_before_walk(dp, NULL, ino[i]), !taken[i]);
		taken[i] = true;
	}
	for (size_t i = 0; i < N; i++) {
		if (!taken[i])
			CHECK_EQ(dp_bare_room(dp, 1, ino[i], false), DP_BARE_MAX - i % DP_BARE_MAX);
		CHECK_EQ(dp_before_walk(dp, NULL, ino[i]), !taken[i]);
		CHECK(!dp_before_walk(dp, NULL, ino[i]));
	}
	free(ino);
	free(taken);
	dp_free(dp);
}

int main(void)
{
	test_room();
	test_walker();
	test_flip();
	test_table();
	return tu_exit();
}
