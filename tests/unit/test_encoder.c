/* Unit tests of the encoders (convert/enc_*.c), in memory.
 *
 * For each form (zstd, xz, gzip as one member, gzip as a member per block) a stream of text-like
 * data and noise is cut into blocks of uneven sizes (one of 17 bytes, one empty), compressed,
 * and written with the encoder's head and tail.  Then:
 *   - the codec's own scan decodes the file to the original bytes, and for zstd and xz places
 *     exactly the checkpoints commit() returned;
 *   - a decoder started at every checkpoint commit() returned (with its aux blob) reads that
 *     chunk's bytes;
 *   - the format's own tool (zstd -dc, xz -dc, gzip -dc) decodes the file, if installed;
 *   - a flipped byte inside a block makes the scan fail with -EIO, never return other bytes.
 * Levels out of range are refused.
 */
#include "codecs/codec.h"
#include "convert/encoder.h"
#include "common/log.h"
#include "testutil.h"

#include <errno.h>
#include <string.h>

#define KIB ((size_t)1 << 10)
#define MIB ((size_t)1 << 20)
#define MAXCK 64

struct ck {
	struct codec_ckpt c;
	uint8_t *aux;
	size_t auxlen;
};

struct file {
	uint8_t *buf;
	size_t len, cap;
	struct ck ck[MAXCK];
	size_t nck;
};

static void put(struct file *f, const uint8_t *p, size_t n)
{
	if (!n) /* a head or tail of nothing may be NULL */
		return;
	if (f->len + n > f->cap) {
		f->cap = (f->len + n) * 2;
		f->buf = realloc(f->buf, f->cap);
	}
	memcpy(f->buf + f->len, p, n);
	f->len += n;
}

static void file_free(struct file *f)
{
	for (size_t i = 0; i < f->nck; i++)
		free(f->ck[i].aux);
	free(f->buf);
}

/* Encodes data[0..len) cut at cuts[] (block ends, the last = len) into f. */
static int encode(const struct encoder *enc, const struct enc_opts *o, const uint8_t *data,
		  size_t len, const size_t *cuts, size_t ncuts, struct file *f)
{
	struct enc *e = NULL;
	uint8_t *p = NULL;
	size_t n = 0, start = 0;
	int err = enc->init(o, &e);

	if (err)
		return err;
	CHECK_EQ(enc->head(e, &p, &n), 0);
	put(f, p, n);
	free(p);
	for (size_t i = 0; i < ncuts; i++) {
		size_t blen = cuts[i] - start, dl = start < ENC_DICT_MAX ? start : ENC_DICT_MAX;
		size_t cap = enc->bound(e, blen);
		struct enc_block b = {.in = data + start, .len = blen, .dict = data + start - dl,
				      .dict_len = dl, .last = i + 1 == ncuts, .out = malloc(cap),
				      .out_cap = cap};
		struct codec_ckpt ck;
		uint8_t *aux = NULL;
		size_t auxlen = 0;

		CHECK_EQ(enc->compress(e, &b), 0);
		int has = enc->commit(e, &b, start, f->len, &ck, &aux, &auxlen);
		CHECK(has == 0 || has == 1);
		/* zstd groups frames into chunks of at least 1 MiB (zstd.c): a frame may start none */
		if (strcmp(enc->codec, "zstd") != 0)
			CHECK_EQ(has, blen > 0);
		else if (!blen)
			CHECK_EQ(has, 0);
		if (has == 1 && f->nck < MAXCK)
			f->ck[f->nck++] = (struct ck){.c = ck, .aux = aux, .auxlen = auxlen};
		else
			free(aux);
		put(f, b.out, b.out_len);
		free(b.out);
		start = cuts[i];
	}
	CHECK_EQ(start, len);
	CHECK_EQ(enc->tail(e, &p, &n), 0);
	put(f, p, n);
	free(p);
	enc->free(e);
	return 0;
}

struct scanned {
	struct ck ck[MAXCK];
	size_t nck;
};

static int on_ck(void *opaque, const struct codec_ckpt *ck, const void *aux, size_t auxlen)
{
	struct scanned *s = opaque;

	(void)aux;
	(void)auxlen;
	if (s->nck < MAXCK)
		s->ck[s->nck++].c = *ck;
	return 0;
}

/* Scans f whole: its decoded bytes into *out (malloc'd); the scan's result. */
static ssize_t scan(const struct codec *c, const struct file *f, uint8_t **out,
		    struct scanned *sc)
{
	struct src *in = src_from_mem(f->buf, f->len);
	struct codec_sink sink = {.checkpoint = on_ck, .opaque = sc};
	struct codec_opts co = {.spacing = 4 * MIB, .threads = 2};
	struct codec_scan *s = NULL;
	size_t cap = 16 * MIB, len = 0;
	ssize_t n = 0;

	*out = malloc(cap);
	if (c->scan_new(in, &co, &sink, &s)) {
		src_free(in);
		return -1;
	}
	while (len < cap && (n = c->scan_read(s, *out + len, cap - len)) > 0)
		len += (size_t)n;
	c->scan_free(s);
	src_free(in);
	return n < 0 ? n : (ssize_t)len;
}

static void check_decoders(const struct codec *c, const struct file *f, const uint8_t *data,
			   size_t len)
{
	struct src *in = src_from_mem(f->buf, f->len);
	uint8_t *got = malloc(4 * MIB);

	for (size_t i = 0; i < f->nck; i++) {
		struct codec_ckpt ck = f->ck[i].c;
		struct codec_dec *d = NULL;
		size_t have = 0;
		ssize_t n;

		ck.ulen = (i + 1 < f->nck ? f->ck[i + 1].c.uoff : len) - ck.uoff;
		CHECK_EQ(c->dec_new(in, &ck, f->ck[i].aux, f->ck[i].auxlen, &d), 0);
		if (!d)
			continue;
		while (have < ck.ulen && (n = c->dec_read(d, got + have, ck.ulen - have)) > 0)
			have += (size_t)n;
		CHECK_EQ(have, ck.ulen);
		CHECK(memcmp(got, data + ck.uoff, have) == 0);
		c->dec_free(d);
	}
	free(got);
	src_free(in);
}

static unsigned long nerr;

static void log_sink(int level, const char *msg, void *opaque)
{
	(void)msg;
	(void)opaque;
	if (level == TFS_LOG_ERR)
		nerr++;
}

/* Encodes 7 MiB + 12345 bytes cut at cuts (the last is the length) with enc at level, and
 * checks the checkpoints (nck of them), the codec's own scan and decoders, the real tool, and
 * that a flipped byte is found. */
static void test_cuts(const struct encoder *enc, bool members, int level, const char *tool,
		      const size_t *cuts, size_t ncuts, size_t nck)
{
	size_t len = cuts[ncuts - 1];
	uint8_t *data = malloc(len), *dec = NULL;
	struct enc_opts o = {.level = level, .members = members, .block = 2 * MIB};
	const struct codec *c = codec_by_name(enc->codec);
	struct file f = {0};
	struct scanned sc = {0};

	fprintf(stderr, "%s%s, level %d\n", enc->codec, members ? " (members)" : "", level);
	/* text, then a MiB of noise from 3 MiB, then text (as much of it as len holds) */
	tu_fill(data, len < 3 * MIB ? len : 3 * MIB, 1, 1);
	if (len > 3 * MIB)
		tu_fill(data + 3 * MIB, len < 4 * MIB ? len - 3 * MIB : MIB, 2, 0);
	if (len > 4 * MIB)
		tu_fill(data + 4 * MIB, len - 4 * MIB, 3, 1);
	CHECK(c != NULL);
	if (enc->whole_blocks)
		o.block = MIB + MIB / 4;
	CHECK_EQ(encode(enc, &o, data, len, cuts, ncuts, &f), 0);
	CHECK_EQ(f.nck, nck);
	CHECK_EQ(f.ck[0].c.uoff, 0);
	/* xz: after the block header; lzo: after the file header */
	CHECK_EQ(f.ck[0].c.coff, !strcmp(enc->codec, "xz") ? 12 : !strcmp(enc->codec, "lzo") ? 38 : 0);

	ssize_t n = scan(c, &f, &dec, &sc);
	CHECK_EQ(n, (ssize_t)len);
	CHECK(n == (ssize_t)len && memcmp(dec, data, len) == 0);
	free(dec);
	if (strcmp(enc->codec, "gzip") != 0) { /* gzip's scan places its own */
		CHECK_EQ(sc.nck, f.nck);
		for (size_t i = 0; i < sc.nck && i < f.nck; i++) {
			CHECK_EQ(sc.ck[i].c.uoff, f.ck[i].c.uoff);
			CHECK_EQ(sc.ck[i].c.coff, f.ck[i].c.coff);
			CHECK_EQ(sc.ck[i].c.clen, f.ck[i].c.clen);
			CHECK_EQ(sc.ck[i].c.extra, f.ck[i].c.extra);
			CHECK_EQ(sc.ck[i].c.bits, f.ck[i].c.bits);
			CHECK_EQ(sc.ck[i].c.flags, f.ck[i].c.flags);
		}
	}
	check_decoders(c, &f, data, len);

	if (tu_have(tool)) {
		char cmd[64];
		size_t olen = 0;
		snprintf(cmd, sizeof(cmd), "%s -dc", tool);
		uint8_t *out = tu_pipe(cmd, f.buf, f.len, &olen);
		CHECK(out && olen == len && memcmp(out, data, len) == 0);
		free(out);
	}

	/* a flipped byte in the middle of the chunk before the last */
	struct scanned sc2 = {0};
	size_t k = f.nck - 2, at = f.ck[k].c.coff + (f.ck[k + 1].c.coff - f.ck[k].c.coff) / 2;
	f.buf[at] ^= 0x55;
	tfs_log_set_sink(log_sink, NULL);
	nerr = 0;
	n = scan(c, &f, &dec, &sc2);
	tfs_log_set_sink(NULL, NULL);
	CHECK_EQ(n, -EIO);
	CHECK(nerr >= 1);
	free(dec);
	file_free(&f);
	free(data);
}

static void test_form(const struct encoder *enc, bool members, const char *tool)
{
	size_t len = 7 * MIB + 12345;
	/* uneven blocks: 1 MiB, 17 bytes, 300 KiB, empty, 2 MiB, ... */
	size_t cuts[] = {MIB, MIB + 17, MIB + 17 + 300 * KIB, MIB + 17 + 300 * KIB,
			 3 * MIB + 17 + 300 * KIB, 5 * MIB, 6 * MIB + 5, len};
	size_t ncuts = sizeof(cuts) / sizeof(cuts[0]);

	/* zstd: the 300 KiB frame starts 17 bytes after the 17-byte one, less than zstd.c's
	 * 64 KiB: no chunk of its own; the others: every block but the empty one */
	test_cuts(enc, members, ENC_LEVEL_DEFAULT, tool, cuts, ncuts,
		  strcmp(enc->codec, "zstd") == 0 ? ncuts - 2 : ncuts - 1);
}

#if HAVE_LZO
/* lzo's blocks (whole_blocks): from 1 MiB to under 1.25 MiB, the last shorter; each one is
 * one group of the scan's, whatever is left over 1 MiB, also none, and at every level kind. */
static void test_lzo(const struct encoder *lz)
{
	size_t cuts[] = {MIB,
			 2 * MIB + 17,
			 3 * MIB + 17 + MIB / 4 - 512,
			 4 * MIB + MIB / 4,
			 5 * MIB + MIB / 4 + 200 * KIB,
			 6 * MIB + MIB / 4 + 200 * KIB + 100 * KIB,
			 7 * MIB + 12345};
	size_t ncuts = sizeof(cuts) / sizeof(cuts[0]);
	size_t last[] = {MIB, 2 * MIB + 200 * KIB}; /* a last block of 1 MiB, and over it */

	CHECK(lz->whole_blocks);
	for (int level = 1; level <= 9; level += 4)
		test_cuts(lz, false, level, "lzop", cuts, ncuts, ncuts);
	test_cuts(lz, false, ENC_LEVEL_DEFAULT, "lzop", last, 2, 2);
}
#endif

static void test_levels(const struct encoder *enc, int bad)
{
	struct enc_opts o = {.level = bad};
	struct enc *e = NULL;

	tfs_log_set_sink(log_sink, NULL);
	nerr = 0;
	CHECK_EQ(enc->init(&o, &e), -EINVAL);
	CHECK(e == NULL);
	CHECK_EQ(nerr, 1);
	tfs_log_set_sink(NULL, NULL);
}

int main(void)
{
	const struct encoder *xz = enc_for_path("a.tar.xz"), *gz = enc_for_path("a.tgz");

	CHECK(xz && strcmp(xz->codec, "xz") == 0);
	CHECK(gz && strcmp(gz->codec, "gzip") == 0);
	CHECK(enc_for_path("a.tar.bz2") == NULL);
	CHECK(enc_for_path("xz") == NULL);
	test_form(xz, false, "xz");
	test_form(gz, false, "gzip");
	test_form(gz, true, "gzip");
	test_levels(xz, 10);
	test_levels(gz, 0);
#if HAVE_ZSTD
	const struct encoder *zs = enc_for_path("a.tar.zst");
	CHECK(zs && strcmp(zs->codec, "zstd") == 0);
	test_form(zs, false, "zstd");
	test_levels(zs, 99);
#endif
#if HAVE_LZO
	const struct encoder *lz = enc_for_path("a.tar.lzo");
	CHECK(lz && strcmp(lz->codec, "lzo") == 0 && enc_for_path("a.tzo") == lz);
	test_lzo(lz);
	test_levels(lz, 10);
	test_levels(lz, 0);
#endif
	return tu_exit();
}
