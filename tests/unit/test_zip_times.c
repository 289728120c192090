/* The zip container's mtime from the local header (containers/zip.c, local_time): an entry
 * whose directory record has no time but the DOS one takes the local header's extended
 * timestamp (0x5455), as unzip, bsdtar and 7-Zip do; the directory's own timestamp wins over
 * the local one; a local timestamp without its mtime bit, a local header that is not one, or
 * an extra field that does not fit leaves the DOS time; the search stops after 8 local headers
 * in a row without one (so a zip made by a tool that writes none costs 8 reads) and starts
 * again at each one found.  Hand-made archives (zip_fixtures.c's hz_build), parsed from
 * memory.  The mount test with a real zip is tests/mount/test_attrs.py.
 */
#include "containers/container.h"
#include "common/log.h"
#include "testutil.h"
#include "zip_fixtures.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const uint8_t data[] = "x";

/* An extended timestamp record: flags, then mtime (and atime, as local headers hold). */
static void ut(uint8_t *p, unsigned flags, uint32_t mtime, uint32_t atime)
{
	p[0] = 0x55;
	p[1] = 0x54;
	p[2] = 9;
	p[3] = 0;
	p[4] = (uint8_t)flags;
	set32(p + 5, mtime);
	set32(p + 9, atime);
}

static void test_local_only(void)
{
	struct rec r = {0};
	struct cont_stats st;
	uint8_t lx[13], lx_atime[13], cx[13], pad[600];
	ut(lx, 3, 1234567891, 1);
	ut(lx_atime, 2, 1234567891, 1); /* atime only */
	ut(cx, 1, 1000000001, 0);
	cx[2] = 5;			/* the directory's: the mtime alone */
	memset(pad, 'n', sizeof(pad)); /* a long name: the extra field past the first read */
	struct hent e[] = {
	    {.name = "local", .data = data, .len = 1, .lextra = lx, .lextra_len = 13},
	    {.name = "both", .data = data, .len = 1, .lextra = lx, .lextra_len = 13,
	     .cextra = cx, .cextra_len = 9},
	    {.name = "atime only", .data = data, .len = 1, .lextra = lx_atime, .lextra_len = 13},
	    {.name = (const char *)pad, .name_len = sizeof(pad), .data = data, .len = 1,
	     .lextra = lx, .lextra_len = 13},
	    {.name = "bad local", .data = data, .len = 1, .lextra = lx, .lextra_len = 13},
	    {.name = "short", .data = data, .len = 1, .lextra = lx, .lextra_len = 13},
	};
	struct hzip z = hz_build(e, 6, 0, 0);
	z.p[z.lho[4]] ^= 0xff;		 /* not a local header: the DOS time (its read fails) */
	set16(z.p + z.lho[5] + 28, 12); /* the extra field one byte short of its UT record */
	CHECK_EQ(parse(z.p, z.len, &r, &st), 0);
	CHECK_EQ(r.nm, 6);
	if (r.nm == 6) {
		CHECK(r.m[0].mtime == 1234567891 && !r.m[0].dos_time);
		CHECK(r.m[1].mtime == 1000000001 && !r.m[1].dos_time);
		CHECK(r.m[2].dos_time);
		CHECK(r.m[3].mtime == 1234567891 && !r.m[3].dos_time);
		CHECK(r.m[4].dos_time);
		CHECK(r.m[5].dos_time);
	}
	free(z.p);
	rec_free(&r);
}

/* 8 local headers in a row without a timestamp end the search; one found starts it again. */
static void test_give_up(void)
{
	struct rec r = {0};
	struct cont_stats st;
	uint8_t lx[13];
	struct hent e[16];
	char names[16][16];

	ut(lx, 1, 1234567891, 0);
	for (int run = 0; run < 2; run++) {
		/* run 0: a timestamp in 0 and 8 (7 misses between), 9 and 15 found too;
		 * run 1: none in 0..7, then one in 8..15: never looked for */
		memset(e, 0, sizeof(e));
		for (int i = 0; i < 16; i++) {
			snprintf(names[i], sizeof(names[i]), "f%02d", i);
			e[i].name = names[i];
			e[i].data = data;
			e[i].len = 1;
			bool has = run == 0 ? (i == 0 || i >= 8) : i >= 8;
			if (has) {
				e[i].lextra = lx;
				e[i].lextra_len = 13;
			}
		}
		struct hzip z = hz_build(e, 16, 0, 0);
		CHECK_EQ(parse(z.p, z.len, &r, &st), 0);
		CHECK_EQ(r.nm, 16);
		for (size_t i = 0; i < r.nm && r.nm == 16; i++) {
			bool want = run == 0 ? (i == 0 || i >= 8) : false;
			CHECK(r.m[i].dos_time == !want);
			if (want)
				CHECK_EQ(r.m[i].mtime, 1234567891);
		}
		free(z.p);
	}
	rec_free(&r);
}

int main(void)
{
	tfs_log_level = getenv("TEST_VERBOSE") ? TFS_LOG_DEBUG : 0;
	test_local_only();
	test_give_up();
	return tu_exit();
}
