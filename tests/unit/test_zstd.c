/* Unit tests of the zstd codec (codecs/zstd/) on good files, made in memory by the zstd tools
 * (zstd, pzstd) and by libzstd itself: frames with and without content size and checksum,
 * skippable frames, and the seekable format (frames plus a seek table in a final skippable
 * frame, written here from its specification).
 *
 * Every good file is scanned whole with 1, 2, 3 and 8 threads (bytes and checkpoints must not
 * depend on it), compared with the original and, where the test knows the frames, with the
 * checkpoints the chunk rule gives; then every checkpoint is decoded, the first and last bytes
 * are read through decoders, and index_blocks must give the scan's checkpoints and size where the
 * file allows it (-ENOTSUP where it does not).  Damaged files: test_zstd_damage.c.
 */
#include "zstd_fixtures.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zstd.h>

/* ---- the tests ---- */

static void test_probe(void)
{
	static const uint8_t frame[] = {0x28, 0xB5, 0x2F, 0xFD, 0x04, 0x58};
	uint8_t head[512];

	CHECK(codec_zstd.probe(frame, sizeof(frame)));
	CHECK(codec_zstd.probe(frame, 4));
	CHECK(!codec_zstd.probe(frame, 3));
	CHECK(!codec_zstd.probe((const uint8_t *)"", 0));
	CHECK(!codec_zstd.probe((const uint8_t *)"\x1f\x8b\x08", 3));
	CHECK(codec_probe(frame, sizeof(frame)) == &codec_zstd);

	/* a skippable frame, then a frame (pzstd) */
	memset(head, 0, sizeof(head));
	put_le32(head, 0x184D2A50);
	put_le32(head + 4, 4);
	memcpy(head + 12, frame, sizeof(frame));
	CHECK(codec_zstd.probe(head, 18));
	CHECK(codec_zstd.probe(head, sizeof(head)));
	CHECK(codec_probe(head, 18) == &codec_zstd);
	/* only skippable frames (a small file): not zstd data */
	CHECK(!codec_zstd.probe(head, 12));
	put_le32(head + 12, 0x184D2A5F);
	put_le32(head + 16, 0);
	CHECK(!codec_zstd.probe(head, 20));
	/* a skippable frame, then something else */
	put_le32(head + 12, 0x12345678);
	CHECK(!codec_zstd.probe(head, 40));
	/* a skippable frame longer than the head of a longer file: cannot tell, taken as zstd */
	put_le32(head + 4, 100000);
	CHECK(codec_zstd.probe(head, sizeof(head)));
	CHECK(!codec_zstd.probe(head, 100)); /* ... but a short file is only that */
}

static void test_single_frame(const uint8_t *data, size_t len)
{
	static const struct {
		const char *cmd;
		int ib;
	} cmds[] = {
	    {"zstd -q -c -3", 0},     /* from a pipe: no content size */
	    {"zstd -q -c -3 -T0", 0}, /* one frame too */
	    {"zstd -q -c -3 --rsyncable", 0},
	    {"zstd -q -c -1 --no-check", 0},	    /* no checksum */
	    {"zstd -q -c -3 --stream-size=%zu", 1}, /* content size and checksum */
	    {"zstd -q -c -3 --no-check --stream-size=%zu", 0},
	    {"zstd -q -c --fast=3 --stream-size=%zu", 1},
	};

	for (size_t i = 0; i < sizeof(cmds) / sizeof(cmds[0]); i++) {
		char cmd[128];
		uint8_t *z;
		size_t zlen;

		snprintf(cmd, sizeof(cmd), cmds[i].cmd, len);
		z = run(cmd, data, len, &zlen);
		CHECK_EQ(check_good(cmd, z, zlen, data, len, NULL, cmds[i].ib), 1);
		free(z);
	}
}

/* Frames written by the zstd tool, concatenated. */
static void test_concatenated(const uint8_t *data, size_t len)
{
	static const size_t cuts[] = {300000, 800000, 1500, 0, 2100000, 1200000};
	struct zfile f = {0};
	size_t off = 0, total = 0;
	uint8_t *big = malloc(5 * len), *want;

	/* the pieces repeat data so that several chunks form */
	for (size_t i = 0; i < 5; i++)
		memcpy(big + i * len, data, len);
	for (size_t i = 0; i < sizeof(cuts) / sizeof(cuts[0]); i++)
		total += cuts[i];
	CHECK(total <= 5 * len);
	want = big;
	for (size_t i = 0; i < sizeof(cuts) / sizeof(cuts[0]); i++) {
		char cmd[64];
		size_t zlen;
		uint8_t *z;

		snprintf(cmd, sizeof(cmd), "zstd -q -c -%zu --stream-size=%zu", 1 + i % 3, cuts[i]);
		z = run(cmd, big + off, cuts[i], &zlen);
		f.fr[f.nfr++] = (struct tframe){f.len, zlen, cuts[i], true, 0};
		zf_put(&f, z, zlen);
		off += cuts[i];
		free(z);
	}
	/* a checkpoint per frame but the 1500-byte one's successor, 1500 bytes after it */
	CHECK_EQ(check_good("concatenated zstd outputs", f.p, f.len, want, total, &f, 1), 4);

	/* the same from a pipe: no content sizes, so no index from the headers */
	struct zfile g = {0};
	off = 0;
	for (size_t i = 0; i < sizeof(cuts) / sizeof(cuts[0]); i++) {
		size_t zlen;
		uint8_t *z = run("zstd -q -c -1", big + off, cuts[i], &zlen);

		g.fr[g.nfr++] = (struct tframe){g.len, zlen, cuts[i], true, 0};
		zf_put(&g, z, zlen);
		off += cuts[i];
		free(z);
	}
	check_good("concatenated zstd outputs without sizes", g.p, g.len, want, total, &g, 0);
	free(g.p);
	free(f.p);
	free(big);
}

/* Frames written here through libzstd: with and without content size and checksum, tiny and
 * empty ones, merged into chunks. */
static void test_lib_frames(const uint8_t *data, size_t len)
{
	struct zfile f = {0};
	size_t off = 0, k = 0;

	/* 1.5 KiB .. 40 KiB frames: chunks of many frames */
	while (off < len) {
		size_t n = 1500 + (k * 7919) % 40000;

		if (n > len - off)
			n = len - off;
		zf_frame(&f, data + off, n, true, true);
		if (k % 17 == 3)
			zf_frame(&f, data, 0, true, true); /* an empty frame */
		off += n;
		k++;
	}
	CHECK(f.nfr > 40);
	size_t n = check_good("many small frames", f.p, f.len, data, len, &f, 1);
	CHECK(n >= 1 && n <= len / CHUNK_MIN + 1);

	/* one frame without content size: no index from the headers, the scan still works */
	struct zfile g = {0};
	zf_frame(&g, data, len / 3, true, true);
	zf_frame(&g, data + len / 3, len / 3, false, true);
	zf_frame(&g, data + 2 * (len / 3), len - 2 * (len / 3), true, true);
	check_good("a frame without content size", g.p, g.len, data, len, &g, 0);
	free(g.p);

	/* one frame without checksum */
	struct zfile h = {0};
	zf_frame(&h, data, len / 2, true, true);
	zf_frame(&h, data + len / 2, len - len / 2, true, false);
	check_good("a frame without checksum", h.p, h.len, data, len, &h, 0);
	free(h.p);

	/* empty frames first and last */
	struct zfile e = {0};
	zf_frame(&e, data, 0, true, true);
	zf_frame(&e, data, 0, true, false);
	zf_frame(&e, data, 0, true, true);
	zf_frame(&e, data, len, true, true);
	zf_frame(&e, data, 0, true, true);
	CHECK_EQ(check_good("empty frames around", e.p, e.len, data, len, &e, 0), 1);
	free(e.p);
	memset(&e, 0, sizeof(e));
	zf_frame(&e, data, 0, true, true);
	zf_frame(&e, data, len, true, true);
	zf_frame(&e, data, 0, true, true);
	CHECK_EQ(check_good("empty frames around, all checked", e.p, e.len, data, len, &e, 1), 1);
	free(e.p);
	free(f.p);
}

/* The seekable format: sizes cycle through fsizes; own: frames keep their checksums; sums:
 * the seek table has checksums; skip: a skippable frame after every skip-th frame (0: none). */

static void test_seekable(const uint8_t *data, size_t len)
{
	static const size_t big[] = {256 << 10, 128 << 10, 384 << 10}; /* a frame at 1 MiB */
	/* sizes around XXH64's 32-byte stripes, for the checksums computed by the codec */
	static const size_t small[] = {0,  1,  3,  4,  7,  8,	9,    31,
				       32, 33, 63, 64, 65, 100, 1000, 70000};
	struct zfile f;
	struct scan_res r;
	size_t n;

	for (int own = 0; own < 2; own++) {
		for (int sums = 0; sums < 2; sums++) {
			char what[96];

			snprintf(what, sizeof(what),
				 "seekable, %s frame checksums, %s table checksums",
				 own ? "with" : "without", sums ? "with" : "without");
			make_seekable(&f, data, len, big, 3, own, sums, 3);
			n = check_good(what, f.p, f.len, data, len, &f, own || sums ? 1 : 0);
			CHECK(n >= 2);
			/* aux carries the table's entries when they have checksums */
			CHECK_EQ(scan(f.p, f.len, 2, 1 << 20, &r), 0);
			for (size_t i = 0; i < r.ncks; i++)
				CHECK_EQ(r.cks[i].c.bits, sums ? CK_TABLE : 0);
			res_free(&r);
			free(f.p);
		}
	}

	/* tiny frames: checksums computed here for every size class, many frames per chunk */
	make_seekable(&f, data, len, small, sizeof(small) / sizeof(small[0]), false, true, 5);
	n = check_good("seekable, tiny frames, checksums only in the table", f.p, f.len, data, len,
		       &f, 1);
	CHECK(n >= 1);
	free(f.p);
}

/* A source of unknown size over a buffer. */
struct usrc {
	const uint8_t *buf;
	size_t len;
};

static ssize_t usrc_pread(void *opaque, void *buf, size_t len, uint64_t off)
{
	struct usrc *u = opaque;

	if (off >= u->len)
		return 0;
	if (len > u->len - off)
		len = u->len - off;
	memcpy(buf, u->buf + off, len);
	return (ssize_t)len;
}

static const struct src_ops usrc_ops = {.pread = usrc_pread};

static void test_unknown_size(const uint8_t *data, size_t len)
{
	static const size_t sizes[] = {256 << 10, 300000, 700000};
	struct zfile f;
	struct scan_res ref, r;

	make_seekable(&f, data, len, sizes, 3, false, true, 2);
	CHECK_EQ(scan(f.p, f.len, 2, 1 << 20, &ref), 0);
	for (unsigned t = 1; t <= 3; t++) {
		struct usrc u = {f.p, f.len};
		struct src *in = src_new(&usrc_ops, &u, SRC_SIZE_UNKNOWN);

		log_reset();
		CHECK_EQ(scan_src(in, t, 100000, 0, &r), 0);
		CHECK(r.len == len && memcmp(r.out, data, len) == 0);
		CHECK_EQ(r.ncks, ref.ncks);
		/* the same places, without the table's entries */
		for (size_t i = 0; i < r.ncks && i < ref.ncks; i++) {
			CHECK_EQ(r.cks[i].c.uoff, ref.cks[i].c.uoff);
			CHECK_EQ(r.cks[i].c.coff, ref.cks[i].c.coff);
			CHECK_EQ(r.cks[i].c.flags, ref.cks[i].c.flags);
			CHECK_EQ(r.cks[i].c.bits, 0);
			CHECK_EQ(r.cks[i].auxlen, 0);
		}
		CHECK_EQ(nlog[TFS_LOG_ERR] + nlog[TFS_LOG_WARNING], 0);
		res_free(&r);
		src_free(in);
	}
	res_free(&ref);
	free(f.p);
}

static void test_skippable(const uint8_t *data, size_t len)
{
	struct zfile f = {0};

	/* skippable frames first, between frames, last */
	zf_skippable(&f, 0, 4);
	zf_skippable(&f, 15, 0);
	zf_frame(&f, data, len / 3, true, true);
	zf_skippable(&f, 7, 1000);
	zf_frame(&f, data + len / 3, len / 3, false, true);
	zf_skippable(&f, 3, 12);
	zf_frame(&f, data + 2 * (len / 3), len - 2 * (len / 3), true, false);
	zf_skippable(&f, 1, 70000);
	check_good("skippable frames first, between and last", f.p, f.len, data, len, &f, 0);
	free(f.p);

	if (!tu_have("pzstd")) {
		fprintf(stderr, "pzstd not installed, skipping its test\n");
		return;
	}
	/* pzstd: a skippable frame with the size of each frame before it */
	size_t zlen, big = 4 * len;
	uint8_t *d = malloc(big), *z;

	for (size_t i = 0; i < 4; i++)
		memcpy(d + i * len, data, len);
	z = run("pzstd -q -c -p 2 -1", d, big, &zlen);
	CHECK(check_good("pzstd -p 2", z, zlen, d, big, NULL, -1) >= 1);
	free(z);
	free(d);
}

static void test_empty(void)
{
	uint8_t *z;
	size_t zlen;
	struct scan_res r;
	struct ib_res ib;

	z = run("zstd -q -c", NULL, 0, &zlen);
	check_good("empty input", z, zlen, (const uint8_t *)"", 0, NULL, -1);
	CHECK_EQ(scan(z, zlen, 2, 4096, &r), 0);
	CHECK_EQ(r.len, 0);
	CHECK_EQ(r.ncks, 0);
	res_free(&r);
	free(z);

	z = lz_frame((const uint8_t *)"", 0, 3, true, true, &zlen);
	CHECK_EQ(index_blocks(z, zlen, &ib), 0);
	CHECK_EQ(ib.usize, 0);
	CHECK_EQ(ib.ncks, 0);
	free_cks(ib.cks, ib.ncks);
	free(z);
}

static void test_threads_memory(void)
{
	/* frames bigger than a job's queue (32 MiB): workers must wait, not deadlock or grow */
	size_t len = 72u << 20, zlen;
	uint8_t *data = malloc(len);
	struct zfile f = {0};
	struct scan_res a, b;

	tu_fill(data, len, 7, 1);
	zf_frame(&f, data, len / 2, true, true);
	zf_frame(&f, data + len / 2, len - len / 2, false, true);
	CHECK_EQ(scan(f.p, f.len, 1, 1 << 20, &a), 0);
	CHECK_EQ(scan(f.p, f.len, 64, 333333, &b), 0);
	CHECK(a.len == len && memcmp(a.out, data, len) == 0);
	CHECK(b.len == len && memcmp(b.out, data, len) == 0);
	CHECK_EQ(a.ncks, 2);
	check_same_cks(a.cks, a.ncks, b.cks, b.ncks);
	res_free(&a);
	res_free(&b);
	free(f.p);

	/* one big frame through one worker */
	uint8_t *z = lz_frame(data, len, 1, false, true, &zlen);
	CHECK_EQ(scan(z, zlen, 2, 1 << 20, &a), 0);
	CHECK(a.len == len && memcmp(a.out, data, len) == 0);
	CHECK_EQ(a.ncks, 1);
	res_free(&a);
	free(z);
	free(data);
}

/* Flips one byte at off of a copy of f; checks the scan with 1 and 3 threads: -EIO, the frames
 * before frame `bad` (0-based among f's entries) verified, one error naming it.  Then the
 * decoders: the chunk holding the frame fails, the others decode. */

static int test(void)
{
	size_t len = 1200000;
	uint8_t *data;

	if (!tu_have("zstd")) {
		fprintf(stderr, "zstd not installed\n");
		return 77;
	}
	tfs_log_set_sink(log_sink, NULL);
	data = make_data(len, 1);
	test_probe();
	test_single_frame(data, len);
	test_concatenated(data, len);
	test_lib_frames(data, len);
	test_seekable(data, len);
	test_unknown_size(data, len);
	test_skippable(data, len);
	test_empty();
	test_threads_memory();
	free(data);
	return tu_exit();
}

int main(void)
{
	return test();
}
