/* Unit tests of bzip2_block.c, our bzip2 block decoder, against libbz2.
 *
 * Blocks are found by the bzip2 codec's scan run with TARSEEK_BZIP2=libbz2 (so every span is
 * one libbz2 decoded with a matching CRC), and each is decoded with bzb and compared with
 * what libbz2 gives for the whole file: in several read sizes, alone and with two decoders
 * holding a block each.  Damaged blocks must fail with -EIO or give exactly the right bytes.
 *
 *   test_bzip2_block            the built-in inputs (bzip2 made at test time)
 *   test_bzip2_block FILE.bz2.. every block of each file against libbz2 (bench/bzip2-blocks.sh)
 */
#include "codecs/bzip2/bzip2_block.h"
#include "codecs/codec.h"
#include "common/log.h"
#include "common/source.h"
#include "testutil.h"

#include <bzlib.h>
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <string.h>

struct span {
	uint64_t uoff, ulen, coff, clen;
	unsigned bits, level;
};

struct spans {
	struct span *v;
	size_t n, cap;
};

static int on_ckpt(void *opaque, const struct codec_ckpt *ck, const void *aux, size_t auxlen)
{
	struct spans *s = opaque;

	(void)aux;
	(void)auxlen;
	if (s->n == s->cap) {
		s->cap = s->cap ? 2 * s->cap : 64;
		s->v = realloc(s->v, s->cap * sizeof(*s->v));
	}
	s->v[s->n++] = (struct span){ck->uoff, ck->ulen, ck->coff, ck->clen, ck->bits,
				     (unsigned)ck->extra};
	return 0;
}

/* The blocks of bz[0..len), as libbz2 decodes them. */
static struct spans find_blocks(const uint8_t *bz, size_t len)
{
	struct spans sp = {0};
	struct src *in = src_from_mem(bz, len);
	struct codec_opts o = {.threads = 2};
	struct codec_sink sk = {on_ckpt, &sp};
	struct codec_scan *s;
	static uint8_t buf[1 << 20];
	ssize_t n;

	setenv("TARSEEK_BZIP2", "libbz2", 1);
	CHECK_EQ(codec_bzip2.scan_new(in, &o, &sk, &s), 0);
	while ((n = codec_bzip2.scan_read(s, buf, sizeof(buf))) > 0)
		;
	CHECK_EQ(n, 0);
	codec_bzip2.scan_free(s);
	src_free(in);
	unsetenv("TARSEEK_BZIP2");
	return sp;
}

/* libbz2's decode of a whole file, read in order (streams one after the other). */
struct ref {
	bz_stream z;
	const uint8_t *in;
	size_t len, pos;
	bool live;
};

static void ref_init(struct ref *r, const uint8_t *in, size_t len)
{
	memset(r, 0, sizeof(*r));
	r->in = in;
	r->len = len;
}

/* The next n bytes into out; false if libbz2 gives fewer. */
static bool ref_next(struct ref *r, uint8_t *out, size_t n)
{
	while (n) {
		if (!r->live) {
			if (r->pos >= r->len)
				return false;
			memset(&r->z, 0, sizeof(r->z));
			if (BZ2_bzDecompressInit(&r->z, 0, 0) != BZ_OK)
				return false;
			r->live = true;
			r->z.next_in = (char *)r->in + r->pos;
			r->z.avail_in = (unsigned)(r->len - r->pos < (1u << 30) ? r->len - r->pos
									 : 1u << 30);
		}
		size_t before = r->z.avail_in;
		r->z.next_out = (char *)out;
		r->z.avail_out = (unsigned)(n < (1u << 30) ? n : 1u << 30);
		int rc = BZ2_bzDecompress(&r->z);
		size_t got = (size_t)((uint8_t *)r->z.next_out - out);
		r->pos += before - r->z.avail_in;
		out += got;
		n -= got;
		if (rc == BZ_STREAM_END) {
			BZ2_bzDecompressEnd(&r->z);
			r->live = false;
		} else if (rc != BZ_OK || (got == 0 && r->z.avail_in == 0 &&
					   r->pos == r->len)) {
			return false;
		} else if (r->z.avail_in == 0) {
			r->z.avail_in = (unsigned)(r->len - r->pos < (1u << 30) ? r->len - r->pos
									 : 1u << 30);
		}
	}
	return true;
}

static void ref_end(struct ref *r)
{
	if (r->live)
		BZ2_bzDecompressEnd(&r->z);
}

/* Reads the whole loaded block from b in pieces of `piece` bytes; its length, or -errno. */
static ssize_t read_all(struct bzb *b, uint8_t *out, size_t cap, size_t piece)
{
	size_t got = 0;

	for (;;) {
		size_t want = cap - got < piece ? cap - got : piece;
		ssize_t n = bzb_read(b, out + got, want);
		if (n < 0)
			return n;
		if (n == 0)
			return (ssize_t)got;
		got += (size_t)n;
		if (got == cap) { /* the caller's room is the block's size: nothing may follow */
			n = bzb_read(b, out, 1);
			return n == 0 ? (ssize_t)got : n < 0 ? n : -EOVERFLOW;
		}
	}
}

/* A copy of bz with BZB_PAD bytes after it (bzb_load's contract). */
static uint8_t *padded(const uint8_t *bz, size_t len)
{
	uint8_t *p = malloc(len + BZB_PAD);

	memcpy(p, bz, len);
	memset(p + len, 0xa5, BZB_PAD); /* not zeros: the values must not matter */
	return p;
}

/* Every block of bz, decoded by bzb (in read pieces cycling through `pieces`; with pairs, two
 * decoders each load a block before either is read), equals libbz2's output.  Returns the
 * number of blocks. */
static size_t check_file(const uint8_t *bz0, size_t len, bool pairs)
{
	static const size_t pieces[] = {SIZE_MAX, 1, 4097, 65539, 1 << 20};
	uint8_t *bz = padded(bz0, len);
	struct spans sp = find_blocks(bz, len);
	struct bzb *b[2] = {bzb_new(), bzb_new()};
	struct ref r;
	uint8_t *want[2] = {NULL, NULL}, *got = NULL;
	size_t cap = 0, fails = 0;

	ref_init(&r, bz, len);
	for (size_t i = 0; i < sp.n; i++) {
		if (sp.v[i].ulen + 1 > cap) {
			cap = (size_t)sp.v[i].ulen + 1;
			for (int k = 0; k < 2; k++)
				want[k] = realloc(want[k], cap);
			got = realloc(got, cap);
		}
	}
	for (size_t i = 0; i < sp.n; i++) {
		const struct span *s = &sp.v[i];
		size_t ulen = (size_t)s->ulen;
		bool two = pairs && i + 1 < sp.n;
		if (!ref_next(&r, want[0], ulen)) {
			CHECK(!"libbz2 ends before the blocks do");
			break;
		}
		int rc = bzb_load(b[0], bz + s->coff, s->bits, s->clen, s->level);
		CHECK_EQ(rc, 0);
		if (rc)
			continue;
		if (two) {
			const struct span *t = &sp.v[i + 1];
			CHECK(ref_next(&r, want[1], (size_t)t->ulen));
			CHECK_EQ(bzb_load(b[1], bz + t->coff, t->bits, t->clen, t->level), 0);
		}
		for (int k = 0; k < (two ? 2 : 1); k++) {
			const struct span *x = &sp.v[i + (size_t)k];
			ssize_t n = read_all(b[k], got, (size_t)x->ulen,
					     pieces[(i + (size_t)k) % (sizeof(pieces) / sizeof(pieces[0]))]);
			if (n != (ssize_t)x->ulen || memcmp(got, want[k], (size_t)x->ulen) != 0) {
				if (fails++ < 5)
					fprintf(stderr, "block %zu (byte %" PRIu64 " bit %u): bzb %zd, libbz2 %" PRIu64 " bytes, or different bytes\n",
						i + (size_t)k, x->coff, x->bits, n, x->ulen);
				CHECK(!"a block decodes differently from libbz2");
			}
		}
		if (two)
			i++;
	}
	/* libbz2 has nothing after the last block */
	uint8_t one;
	CHECK(!ref_next(&r, &one, 1));
	ref_end(&r);
	size_t n = sp.n;
	free(sp.v);
	free(want[0]);
	free(want[1]);
	free(got);
	bzb_free(b[0]);
	bzb_free(b[1]);
	free(bz);
	return n;
}

static uint8_t *bzip2(const char *opt, const uint8_t *data, size_t len, size_t *bzlen)
{
	char cmd[64];
	uint8_t *out;

	snprintf(cmd, sizeof(cmd), "bzip2 -c %s", opt);
	out = tu_pipe(cmd, data, len, bzlen);
	CHECK(out != NULL);
	return out;
}

/* data compressed with opt: every block as libbz2 decodes it, at least min_blocks of them */
static void check_data(const char *what, const char *opt, const uint8_t *data, size_t len,
		       size_t min_blocks)
{
	size_t bzlen, n;
	uint8_t *bz = bzip2(opt, data, len, &bzlen);

	if (!bz)
		return;
	n = check_file(bz, bzlen, false);
	CHECK(n >= min_blocks);
	n = check_file(bz, bzlen, true);
	if (n < min_blocks)
		fprintf(stderr, "%s (%s): %zu blocks, wanted >= %zu\n", what, opt, n, min_blocks);
	free(bz);
}

/* Runs of every length 1..300 of random bytes: RLE1's counts, and runs split by counts of 4. */
static uint8_t *runs_data(size_t len)
{
	uint8_t *d = malloc(len);
	uint32_t x = 12345;
	size_t i = 0, r = 1;

	while (i < len) {
		x = x * 1103515245u + 12345u;
		uint8_t c = (uint8_t)(x >> 16) & 0x0f; /* few distinct bytes: runs meet */
		for (size_t k = 0; k < r && i < len; k++)
			d[i++] = c;
		r = r % 300 + 1;
	}
	return d;
}

static void test_inputs(void)
{
	size_t len = 2u << 20, n;
	uint8_t *data = malloc(len), *self;

	tu_fill(data, len, 7, 1);
	for (size_t off = 0; off + 40000 < len; off += 500000)
		tu_fill(data + off, 40000, (uint32_t)off, 0);
	check_data("text", "-9", data, len, 3);
	check_data("text", "-1", data, len, 20);
	check_data("text", "-5", data, len, 5);
	/* text with the other 128 byte values once per 64 KiB: symbols met once in a block get
	 * the longest codes (bzip2 writes up to 17 bits; the lookup table holds 10) */
	tu_fill(data, len, 8, 1);
	for (size_t off = 0; off + 65536 <= len; off += 65536)
		for (unsigned k = 0; k < 128; k++)
			data[off + k * 509] = (uint8_t)(128 + k);
	check_data("rare bytes", "-9", data, len, 3);
	tu_fill(data, len, 9, 0);
	check_data("noise", "-9", data, len, 3);
	memset(data, 0, len);
	check_data("zeros", "-9", data, len, 1);
	free(data);
	data = runs_data(len);
	check_data("runs", "-9", data, len, 1);
	check_data("runs", "-1", data, len, 1);
	free(data);
	static const char *const tiny[] = {"a", "ab", "aaaa", "aaaaa", "aaaab", "abababab"};
	for (size_t i = 0; i < sizeof(tiny) / sizeof(tiny[0]); i++)
		check_data("tiny", "-9", (const uint8_t *)tiny[i], strlen(tiny[i]), 1);
	/* a real binary: this test */
	self = tu_read_file("/proc/self/exe", &n);
	CHECK(self != NULL);
	if (self) {
		check_data("binary", "-1", self, n, 1);
		free(self);
	}
}

/* The 32 bits after the magic of the block at bit `bits` of p. */
static uint32_t stored_crc(const uint8_t *p, unsigned bits)
{
	uint32_t v = 0;

	for (unsigned k = 0; k < 32; k++) {
		unsigned bit = bits + 48 + k;
		v = v << 1 | ((p[bit / 8] >> (7 - bit % 8)) & 1);
	}
	return v;
}

/* Damage: every bit of a block's first 4000 flipped in turn, and random flips over it; a load
 * and read must give -EIO or exactly the original bytes (a flip of the stored CRC, for one,
 * must be caught), and wrong spans and levels are refused. */
static void test_damage(void)
{
	/* a damaged level-1 block may decode to up to 100 000 x 51 bytes before its CRC fails */
	size_t len = 200000, bzlen, blen, room = 100000 * 52;
	uint8_t *data = malloc(len), *bz, *p, *got = malloc(room);
	struct bzb *b = bzb_new();
	struct spans sp;
	size_t wrong = 0, decoded = 0;

	tu_fill(data, len, 3, 1);
	bz = bzip2("-1", data, len, &bzlen);
	sp = find_blocks(bz, bzlen);
	CHECK(sp.n >= 2);
	const struct span s = sp.v[0];
	blen = (size_t)((s.bits + s.clen + 7) / 8);
	p = padded(bz + s.coff, blen);
	CHECK_EQ(read_all(b, got, len + 1, 1 << 20), -EINVAL); /* nothing loaded */

	CHECK_EQ(bzb_load(b, p, s.bits, s.clen, s.level), 0);
	CHECK_EQ(read_all(b, got, (size_t)s.ulen, 1 << 20), (ssize_t)s.ulen);
	CHECK(memcmp(got, data, (size_t)s.ulen) == 0);
	CHECK_EQ(bzb_stored_crc(b), stored_crc(p, s.bits));

	/* wrong spans, wrong level */
	CHECK_EQ(bzb_load(b, p, s.bits, s.clen - 1, s.level), -EIO);
	CHECK_EQ(bzb_load(b, p, s.bits, s.clen + 1, s.level), -EIO);
	CHECK_EQ(bzb_load(b, p, s.bits, s.clen - 8, s.level), -EIO);
	CHECK_EQ(bzb_load(b, p, s.bits, 40, s.level), -EIO);
	CHECK_EQ(bzb_load(b, p, s.bits + 1 > 7 ? 0 : s.bits + 1, s.clen, s.level), -EIO);
	CHECK_EQ(bzb_load(b, p, s.bits, s.clen, 0), -EIO);
	CHECK_EQ(bzb_load(b, p, s.bits, s.clen, 10), -EIO);
	CHECK_EQ(read_all(b, got, len + 1, 1 << 20), -EINVAL);

	uint32_t x = 99;
	for (size_t k = 0; k < 4000 + 600; k++) {
		uint64_t bit;
		if (k < 4000) {
			bit = s.bits + k;
		} else {
			x = x * 1103515245u + 12345u;
			bit = s.bits + (x >> 4) % s.clen;
		}
		if (bit >= s.bits + s.clen)
			continue;
		p[bit / 8] ^= (uint8_t)(0x80 >> (bit % 8));
		int rc = bzb_load(b, p, s.bits, s.clen, s.level);
		if (rc == 0) {
			ssize_t n = read_all(b, got, room, 4097);
			if (n >= 0) {
				decoded++;
				if (n != (ssize_t)s.ulen || memcmp(got, data, (size_t)s.ulen) != 0)
					wrong++;
			} else {
				CHECK_EQ(n, -EIO);
			}
		} else if (rc != BZB_RANDOMISED) { /* the flip of bit 80 sets it */
			CHECK_EQ(rc, -EIO);
		} else {
			CHECK_EQ(bit - s.bits, 80);
		}
		p[bit / 8] ^= (uint8_t)(0x80 >> (bit % 8));
	}
	CHECK_EQ(wrong, 0);
	CHECK(decoded < 10); /* nearly every flip is caught; a flip in unused code lengths is not */
	fprintf(stderr, "damage: %zu flipped blocks decoded right\n", decoded);
	free(p);
	free(sp.v);
	free(bz);
	free(got);
	free(data);
	bzb_free(b);
}

static void test_crc(void)
{
	/* CRC-32/BZIP2's check value */
	CHECK_EQ(~bzb_crc_update(0xffffffffu, (const uint8_t *)"123456789", 9), 0xfc891918u);
	uint8_t buf[100];
	for (int i = 0; i < 100; i++)
		buf[i] = (uint8_t)(i * 7);
	/* whole (ISA-L's crc32_ieee where built with it) and in pieces under 64 bytes (the
	 * tables): the same */
	uint32_t a = bzb_crc_update(0xffffffffu, buf, 100);
	uint32_t c = bzb_crc_update(bzb_crc_update(bzb_crc_update(0xffffffffu, buf, 3), buf + 3, 50),
				    buf + 53, 47);
	CHECK_EQ(a, c);
}

int main(int argc, char **argv)
{
	tfs_log_level = TFS_LOG_ERR - 1; /* the damage tests log every block they refuse */
	if (argc > 1) {
		for (int i = 1; i < argc; i++) {
			size_t len, n;
			uint8_t *bz = tu_read_file(argv[i], &len);
			CHECK(bz != NULL);
			if (!bz)
				continue;
			n = check_file(bz, len, i % 2 == 0);
			printf("%s: %zu blocks, each equal to libbz2's output\n", argv[i], n);
			free(bz);
		}
		return tu_exit();
	}
	if (!tu_have("bzip2"))
		return 77;
	test_crc();
	test_inputs();
	test_damage();
	return tu_exit();
}
