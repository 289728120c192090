/* The lzip codec (codecs/lzip.c) on files made by the real lzip and plzip: the scan's bytes
 * against `lzip -dc`, its checkpoints against the member trailers and against index_blocks,
 * decoders at every checkpoint in pieces of random sizes, walk mode (trailing data, unknown
 * size), and damaged copies: truncated, flipped bytes in data, trailers and headers.  Never a
 * wrong byte: whatever the codec returns must be a prefix of the real data.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codecs/codec.h"
#include "common/log.h"
#include "common/source.h"
#include "testutil.h"

#define MAXCK 4096

struct res {
	uint8_t *out;
	size_t len, cap;
	ssize_t rc;
	uint64_t verified;
	struct codec_ckpt cks[MAXCK];
	size_t ncks;
};

static int sink_fn(void *opaque, const struct codec_ckpt *c, const void *aux, size_t auxlen)
{
	struct res *r = opaque;

	CHECK(aux == NULL && auxlen == 0);
	/* scan: before the read that returns its first byte; index_blocks: contiguous */
	CHECK(r->cap ? c->uoff >= r->len : c->uoff == r->len);
	CHECK(!r->ncks || c->uoff > r->cks[r->ncks - 1].uoff);
	if (!r->cap) /* index_blocks: no bytes, ulen set */
		r->len += c->ulen;
	if (r->ncks < MAXCK)
		r->cks[r->ncks++] = *c;
	return 0;
}

static void quiet_log(int level, const char *msg, void *opaque)
{
	if (getenv("TEST_VERBOSE"))
		fprintf(stderr, "log %d: %s\n", level, msg);
}

/* The whole scan of f, in reads of `step` bytes. */
static void scan_src(struct src *in, unsigned threads, size_t step, struct res *r)
{
	struct codec_opts o = {.spacing = 1 << 20, .threads = threads};
	struct codec_sink sink = {.checkpoint = sink_fn, .opaque = r};
	struct codec_scan *s = NULL;

	memset(r, 0, sizeof(*r));
	r->rc = codec_lzip.scan_new(in, &o, &sink, &s);
	if (r->rc)
		return;
	for (;;) {
		if (r->len + step > r->cap) {
			r->cap = (r->len + step) * 2;
			r->out = realloc(r->out, r->cap);
		}
		ssize_t n = codec_lzip.scan_read(s, r->out + r->len, step);
		if (n <= 0) {
			r->rc = n;
			break;
		}
		r->len += (size_t)n;
	}
	r->verified = codec_lzip.scan_verified(s);
	codec_lzip.scan_free(s);
}

static void scan(const uint8_t *f, size_t flen, unsigned threads, size_t step, struct res *r)
{
	struct src *in = src_from_mem(f, flen);
	scan_src(in, threads, step, r);
	src_free(in);
}

/* A decoder at checkpoint k reads in random pieces up to `upto` bytes from its start; every
 * byte must match want.  Returns the bytes read; *rc the last result. */
static size_t decode(const uint8_t *f, size_t flen, const struct codec_ckpt *ck, const uint8_t *want,
		     size_t wantlen, size_t upto, uint32_t seed, ssize_t *rc)
{
	struct src *in = src_from_mem(f, flen);
	struct codec_dec *d = NULL;
	static uint8_t buf[300000];
	size_t got = 0;
	ssize_t n = codec_lzip.dec_new(in, ck, NULL, 0, &d);

	while (n == 0 || n > 0) {
		if (got >= upto)
			break;
		seed = seed * 1103515245u + 12345u;
		size_t step = 1 + (seed >> 8) % sizeof(buf);
		n = codec_lzip.dec_read(d, buf, step);
		if (n <= 0)
			break;
		CHECK(ck->uoff + got + (size_t)n <= wantlen &&
		      memcmp(buf, want + ck->uoff + got, (size_t)n) == 0);
		got += (size_t)n;
	}
	*rc = n;
	codec_lzip.dec_free(d);
	src_free(in);
	return got;
}

static uint8_t *make_data(size_t len, uint32_t seed)
{
	uint8_t *d = malloc(len ? len : 1);
	tu_fill(d, len / 2, seed, 1);
	tu_fill(d + len / 2, len - len / 2, seed + 1, 0);
	return d;
}

static void check_good(const char *what, const uint8_t *f, size_t flen, const uint8_t *data,
		       size_t len, size_t want_members)
{
	struct res r;
	uint64_t usize = 0;

	for (unsigned th = 1; th <= 2; th++) {
		scan(f, flen, th, th == 1 ? 65536 : 1000003, &r);
		CHECK_EQ(r.rc, 0);
		CHECK_EQ(r.len, len);
		CHECK(r.len == len && memcmp(r.out, data, len) == 0);
		CHECK_EQ(r.verified, len);
		if (want_members && r.ncks) {
			size_t members = 0;
			for (size_t i = 0; i < r.ncks; i++)
				members += r.cks[i].bits;
			CHECK_EQ(members, want_members);
		}
		free(r.out);
	}
	scan(f, flen, 2, 65536, &r);
	/* index_blocks: the same checkpoints, with ulen */
	struct res f2;
	memset(&f2, 0, sizeof(f2));
	struct codec_sink fs = {.checkpoint = sink_fn, .opaque = &f2};
	struct src *in = src_from_mem(f, flen);
	int err = codec_lzip.index_blocks(in, NULL, &fs, &usize);
	src_free(in);
	CHECK_EQ(err, 0);
	CHECK_EQ(usize, len);
	CHECK_EQ(f2.ncks, r.ncks);
	for (size_t i = 0; i < r.ncks && i < f2.ncks; i++) {
		CHECK_EQ(f2.cks[i].uoff, r.cks[i].uoff);
		CHECK_EQ(f2.cks[i].coff, r.cks[i].coff);
		CHECK_EQ(f2.cks[i].bits, r.cks[i].bits);
		uint64_t next = i + 1 < f2.ncks ? f2.cks[i + 1].uoff : usize;
		CHECK_EQ(f2.cks[i].ulen, next - f2.cks[i].uoff);
	}
	/* decoders at every checkpoint: their chunk and on to the end */
	for (size_t i = 0; i < f2.ncks; i++) {
		ssize_t rc;
		size_t got = decode(f, flen, &f2.cks[i], data, len, SIZE_MAX, (uint32_t)i, &rc);
		CHECK_EQ(rc, 0);
		CHECK_EQ(got, len - f2.cks[i].uoff);
	}
	if (tu_failures)
		fprintf(stderr, "  (in %s)\n", what);
	free(r.out);
}

/* Damaged copies: the scan and a decoder from the start return a prefix of the data, then
 * -EIO; none of them crashes or returns a wrong byte. */
static void check_bad(const char *what, const uint8_t *f, size_t flen, const uint8_t *data,
		      size_t len, bool must_fail)
{
	struct res r;
	ssize_t rc;

	scan(f, flen, 2, 77777, &r);
	CHECK(r.len <= len && memcmp(r.out, data, r.len) == 0);
	CHECK(r.verified <= r.len);
	if (must_fail)
		CHECK(r.rc == -EIO || r.rc == -ENOTSUP);
	if (r.ncks) {
		(void)decode(f, flen, &r.cks[0], data, len, SIZE_MAX, 7, &rc);
		CHECK(rc <= 0);
	}
	/* index_blocks refuses or lists; decoders of what it lists never return a wrong byte */
	struct res f2;
	uint64_t usize;
	memset(&f2, 0, sizeof(f2));
	struct codec_sink fs = {.checkpoint = sink_fn, .opaque = &f2};
	struct src *in = src_from_mem(f, flen);
	if (codec_lzip.index_blocks(in, NULL, &fs, &usize) == 0)
		for (size_t i = 0; i < f2.ncks; i++)
			if (f2.cks[i].uoff < len)
				(void)decode(f, flen, &f2.cks[i], data, len, SIZE_MAX, 3, &rc);
	src_free(in);
	if (tu_failures)
		fprintf(stderr, "  (in %s)\n", what);
	free(r.out);
}

static void test_probe(void)
{
	CHECK(codec_lzip.probe((const uint8_t *)"LZIP\x01\x0c", 6));
	CHECK(!codec_lzip.probe((const uint8_t *)"LZIP\x00\x0c", 6));
	CHECK(!codec_lzip.probe((const uint8_t *)"LZI", 3));
	CHECK(codec_probe((const uint8_t *)"LZIP\x01\x0c", 6) == &codec_lzip);
}

int main(void)
{
	size_t len = 2u << 20, flen, plen;
	uint8_t *data, *f, *p;

	if (!tu_have("lzip") || !tu_have("plzip"))
		return 77;
	tfs_log_set_sink(quiet_log, NULL);
	test_probe();
	data = make_data(len, 5);

	/* one member (lzip's default); many members (plzip, lzip -b); tiny and empty files */
	f = tu_pipe("lzip -6 -c", data, len, &flen);
	CHECK(f != NULL);
	check_good("lzip -6", f, flen, data, len, 1);
	p = tu_pipe("plzip -0 -B 200KiB -c", data, len, &plen);
	CHECK(p != NULL);
	check_good("plzip -B 200KiB", p, plen, data, len, (len + 204799) / 204800);
	uint8_t *q;
	size_t qlen;
	q = tu_pipe("lzip -0 -b 40KiB -c", data, 1u << 20, &qlen); /* ~tiny members */
	CHECK(q != NULL);
	check_good("lzip -b", q, qlen, data, 1u << 20, 0);
	free(q);
	for (size_t n = 0; n < 3; n++) {
		q = tu_pipe("lzip -c", data, n, &qlen);
		CHECK(q != NULL);
		check_good("tiny", q, qlen, data, n, 1);
		free(q);
	}

	/* concatenated files: their data continues */
	uint8_t *cat = malloc(plen + flen), *both = malloc(2 * len);
	memcpy(cat, p, plen);
	memcpy(cat + plen, f, flen);
	memcpy(both, data, len);
	memcpy(both + len, data, len);
	check_good("plzip + lzip", cat, plen + flen, both, 2 * len, 0);

	/* trailing data: walk mode finds the same bytes (zeros silently, garbage with a note) */
	struct res r;
	uint8_t *tr = malloc(plen + 100);
	memcpy(tr, p, plen);
	memset(tr + plen, 0, 100);
	scan(tr, plen + 100, 2, 65536, &r);
	CHECK_EQ(r.rc, 0);
	CHECK(r.len == len && memcmp(r.out, data, len) == 0);
	CHECK_EQ(r.ncks, (len + 204799) / 204800); /* walk mode: one per member */
	free(r.out);
	memcpy(tr + plen, "trailing garbage", 16);
	scan(tr, plen + 100, 2, 65536, &r);
	CHECK_EQ(r.rc, 0);
	CHECK_EQ(r.len, len);
	free(r.out);
	/* "LZIP" then a bad header after the members: damage */
	memcpy(tr + plen, "LZIP\x07", 5);
	scan(tr, plen + 100, 2, 65536, &r);
	CHECK_EQ(r.rc, -EIO);
	CHECK(r.len == len && memcmp(r.out, data, len) == 0);
	free(r.out);

	/* truncated at many points: a prefix, then -EIO */
	for (size_t cut = 1; cut < plen; cut += plen / 11 + 1)
		check_bad("truncated plzip", p, cut, data, len, true);
	for (size_t cut = 1; cut < flen; cut += flen / 9 + 1)
		check_bad("truncated lzip", f, cut, data, len, true);
	/* a flipped byte in data, in a trailer's CRC or sizes, in a header */
	uint8_t *bad = malloc(plen);
	for (size_t k = 0; k < 24; k++) {
		size_t at = k < 18 ? (plen * (k + 1)) / 19 : plen - 1 - (k - 18) * 2;
		memcpy(bad, p, plen);
		bad[at] ^= 0x20;
		check_bad("flipped plzip", bad, plen, data, len, false);
	}
	/* the CRC of the last member: the scan fails, and the last byte is never returned */
	memcpy(bad, p, plen);
	bad[plen - 20] ^= 1;
	scan(bad, plen, 1, 65536, &r);
	CHECK_EQ(r.rc, -EIO);
	CHECK(r.len < len && memcmp(r.out, data, r.len) == 0);
	CHECK(r.verified < len);
	free(r.out);

	free(bad);
	free(tr);
	free(cat);
	free(both);
	free(p);
	free(f);
	free(data);
	return tu_exit();
}
