/* Unit tests of the bzip2 codec: streams made by the real bzip2 at levels 1 and 9, several
 * blocks, multi-stream files, a block decoding to far more than 900 kB, empty streams, chance
 * magics inside blocks, damage (flipped bytes, a wrong stream CRC, truncation, trailing data),
 * the decoders of every checkpoint, and the same result with 1, 2 and 3 threads. */
#include "codecs/codec.h"
#include "common/log.h"
#include "common/source.h"
#include "testutil.h"

#include <errno.h>
#include <stdbool.h>
#include <string.h>

#define MAGIC_BLOCK 0x314159265359ULL
#define MAGIC_EOS 0x177245385090ULL

static const struct codec *C = &codec_bzip2;

struct ckpts {
	struct codec_ckpt *v;
	size_t n, cap;
	int fail_at; /* return -ENOSPC for checkpoint number fail_at (1-based), 0: never */
};

static int on_ckpt(void *opaque, const struct codec_ckpt *ck, const void *aux, size_t auxlen)
{
	struct ckpts *c = opaque;

	CHECK(aux == NULL && auxlen == 0);
	if (c->n == c->cap) {
		c->cap = c->cap ? 2 * c->cap : 64;
		c->v = realloc(c->v, c->cap * sizeof(*c->v));
	}
	c->v[c->n++] = *ck;
	if (c->fail_at && (int)c->n == c->fail_at)
		return -ENOSPC;
	return 0;
}

struct result {
	int rc;	      /* 0, or the error scan_read returned */
	uint8_t *out; /* everything scan_read returned before the end or the error */
	size_t outlen;
	uint64_t verified;
	struct ckpts ck;
};

static void result_free(struct result *r)
{
	free(r->out);
	free(r->ck.v);
	memset(r, 0, sizeof(*r));
}

/* Scans buf with `threads` workers, reading rdsz bytes at a time. */
static struct result scan(const uint8_t *buf, size_t len, unsigned threads, size_t rdsz,
			  int fail_at)
{
	struct result r = {0};
	struct src *in = src_from_mem(buf, len);
	struct codec_opts opts = {.spacing = 1 << 20, .threads = threads};
	struct codec_sink sink = {.checkpoint = on_ckpt, .opaque = &r.ck};
	struct codec_scan *s;
	size_t cap = 1 << 16;
	uint8_t *tmp = malloc(rdsz);

	r.ck.fail_at = fail_at;
	r.out = malloc(cap);
	r.rc = C->scan_new(in, &opts, &sink, &s);
	CHECK_EQ(r.rc, 0);
	for (;;) {
		ssize_t n = C->scan_read(s, tmp, rdsz);
		if (n < 0) {
			r.rc = (int)n;
			CHECK_EQ(C->scan_read(s, tmp, rdsz), n); /* sticky */
			break;
		}
		if (n == 0)
			break;
		CHECK((size_t)n <= rdsz);
		if (r.outlen + (size_t)n > cap) {
			while (r.outlen + (size_t)n > cap)
				cap *= 2;
			r.out = realloc(r.out, cap);
		}
		memcpy(r.out + r.outlen, tmp, (size_t)n);
		r.outlen += (size_t)n;
	}
	r.verified = C->scan_verified(s);
	CHECK(C->scan_name == NULL);
	C->scan_free(s);
	src_free(in);
	free(tmp);
	return r;
}

/* The checkpoint rules of codec.h, and the bzip2 meaning of the fields. */
static void check_ckpts(const struct result *r, const uint8_t *bz, size_t bzlen)
{
	uint64_t uoff = 0, prev_bit = 0;

	for (size_t i = 0; i < r->ck.n; i++) {
		const struct codec_ckpt *ck = &r->ck.v[i];
		uint64_t bit = ck->coff * 8 + ck->bits;
		CHECK_EQ(ck->uoff, uoff);
		CHECK(ck->ulen > 0);
		CHECK(ck->bits < 8);
		CHECK(ck->extra >= 1 && ck->extra <= 9);
		CHECK_EQ(ck->flags, 0);
		CHECK(i == 0 || bit > prev_bit);
		CHECK(bit + ck->clen <= (uint64_t)bzlen * 8);
		/* the block magic is where the checkpoint says */
		uint64_t m = 0;
		for (unsigned k = 0; k < 48; k++) {
			uint64_t b = bit + k;
			m = m << 1 | ((bz[b / 8] >> (7 - b % 8)) & 1);
		}
		CHECK_EQ(m, MAGIC_BLOCK);
		uoff += ck->ulen;
		prev_bit = bit;
	}
	CHECK_EQ(uoff, r->verified);
}

/* Opens a decoder at every checkpoint and compares its block with the original. */
static void check_decoders(const uint8_t *bz, size_t bzlen, const struct ckpts *ck,
			   const uint8_t *orig, size_t origlen)
{
	struct src *in = src_from_mem(bz, bzlen);
	uint8_t *buf = malloc(1 << 16);

	for (size_t i = 0; i < ck->n; i++) {
		struct codec_dec *d;
		uint64_t got = 0;
		ssize_t n;
		size_t rdsz = i % 2 ? 1 << 16 : 777;

		CHECK_EQ(C->dec_new(in, &ck->v[i], NULL, 0, &d), 0);
		if (!d)
			continue;
		CHECK(C->dec_memory(d) > 0);
		while ((n = C->dec_read(d, buf, rdsz)) > 0) {
			CHECK(ck->v[i].uoff + got + (uint64_t)n <= origlen);
			if (ck->v[i].uoff + got + (uint64_t)n > origlen)
				break;
			CHECK(memcmp(buf, orig + ck->v[i].uoff + got, (size_t)n) == 0);
			if (got == 0) /* the block's first byte */
				CHECK_EQ(buf[0], orig[ck->v[i].uoff]);
			got += (uint64_t)n;
		}
		CHECK_EQ(n, 0);
		CHECK_EQ(got, ck->v[i].ulen);
		CHECK_EQ(C->dec_read(d, buf, rdsz), 0); /* stays at the end */
		C->dec_free(d);
	}
	/* the last byte of the data, from a fresh decoder of the last block */
	if (ck->n) {
		const struct codec_ckpt *last = &ck->v[ck->n - 1];
		struct codec_dec *d;
		uint64_t got = 0;
		ssize_t n;
		uint8_t lastbyte = 0;
		CHECK_EQ(last->uoff + last->ulen, origlen);
		CHECK_EQ(C->dec_new(in, last, NULL, 0, &d), 0);
		while (d && (n = C->dec_read(d, buf, 1 << 16)) > 0) {
			got += (uint64_t)n;
			lastbyte = buf[n - 1];
		}
		CHECK_EQ(got, last->ulen);
		CHECK_EQ(lastbyte, orig[origlen - 1]);
		C->dec_free(d);
	}
	free(buf);
	src_free(in);
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

static uint8_t *cat(const uint8_t *a, size_t alen, const uint8_t *b, size_t blen, size_t *len)
{
	uint8_t *o = malloc(alen + blen + 1);

	memcpy(o, a, alen);
	memcpy(o + alen, b, blen);
	*len = alen + blen;
	return o;
}

/* Scans and decodes bz completely; the data must be orig. */
static struct result full_check(const uint8_t *bz, size_t bzlen, const uint8_t *orig,
				size_t origlen, size_t min_ckpts)
{
	struct result r = scan(bz, bzlen, 2, 1 << 16, 0);

	CHECK_EQ(r.rc, 0);
	CHECK_EQ(r.outlen, origlen);
	CHECK(r.outlen == origlen && memcmp(r.out, orig, origlen) == 0);
	CHECK_EQ(r.verified, origlen);
	CHECK(r.ck.n >= min_ckpts);
	check_ckpts(&r, bz, bzlen);
	check_decoders(bz, bzlen, &r.ck, orig, origlen);
	return r;
}

static void test_probe(const uint8_t *bz, size_t bzlen)
{
	static const uint8_t empty9[] = {'B',  'Z',  'h',  '9', 0x17, 0x72, 0x45,
					 0x38, 0x50, 0x90, 0,	0,    0,    0};
	uint8_t h[16];

	CHECK(C->probe(bz, bzlen < 512 ? bzlen : 512));
	CHECK(C->probe(empty9, sizeof(empty9)));
	CHECK(!C->probe(bz, 9));
	CHECK(!C->probe((const uint8_t *)"BZh9", 4));
	memcpy(h, bz, 16);
	h[3] = '0';
	CHECK(!C->probe(h, 16));
	memcpy(h, bz, 16);
	h[6] ^= 1;
	CHECK(!C->probe(h, 16));
	CHECK(!C->probe((const uint8_t *)"\x1f\x8b\x08\0\0\0\0\0\0\0\0\0", 12));
	CHECK(codec_probe(bz, 16) == C);
}

/* Sizes: several 100k blocks at -1, several 900k blocks at -9. */
static void test_levels(const uint8_t *data, size_t len)
{
	size_t bzlen;
	uint8_t *bz = bzip2("-1", data, len, &bzlen);
	struct result r = full_check(bz, bzlen, data, len, len / 100000);

	for (size_t i = 0; i < r.ck.n; i++)
		CHECK_EQ(r.ck.v[i].extra, 1);
	test_probe(bz, bzlen);

	/* the same checkpoints and bytes whatever the threads and read sizes */
	for (unsigned t = 1; t <= 3; t++) {
		struct result r2 = scan(bz, bzlen, t, t == 1 ? 4097 : 1 << 20, 0);
		CHECK_EQ(r2.rc, 0);
		CHECK_EQ(r2.outlen, len);
		CHECK(r2.outlen == len && memcmp(r2.out, data, len) == 0);
		CHECK_EQ(r2.ck.n, r.ck.n);
		CHECK(r2.ck.n == r.ck.n && memcmp(r2.ck.v, r.ck.v, r.ck.n * sizeof(*r.ck.v)) == 0);
		result_free(&r2);
	}
	result_free(&r);
	free(bz);

	bz = bzip2("-9", data, len, &bzlen);
	r = full_check(bz, bzlen, data, len, len / 900000);
	for (size_t i = 0; i < r.ck.n; i++)
		CHECK_EQ(r.ck.v[i].extra, 9);
	CHECK(r.ck.n >= 3);
	result_free(&r);
	free(bz);
}

/* cat a.bz2 b.bz2 empty.bz2 c.bz2, with different levels. */
static void test_multistream(const uint8_t *data, size_t len)
{
	size_t la, lb, le, lc, l1, l2, l3;
	size_t na = len / 3, nb = len / 5, nc = len - na - nb;
	uint8_t *a = bzip2("-1", data, na, &la);
	uint8_t *b = bzip2("-9", data + na, nb, &lb);
	uint8_t *e = bzip2("-9", NULL, 0, &le);
	uint8_t *c = bzip2("-5", data + na + nb, nc, &lc);
	uint8_t *ab = cat(a, la, b, lb, &l1);
	uint8_t *abe = cat(ab, l1, e, le, &l2);
	uint8_t *all = cat(abe, l2, c, lc, &l3);
	struct result r = full_check(all, l3, data, len, 3);
	unsigned seen[10] = {0};

	for (size_t i = 0; i < r.ck.n; i++)
		if (r.ck.v[i].extra <= 9)
			seen[r.ck.v[i].extra]++;
	CHECK(seen[1] > 0 && seen[9] > 0 && seen[5] > 0);
	CHECK_EQ(seen[1] + seen[9] + seen[5], r.ck.n);
	result_free(&r);

	/* many one-block streams, pbzip2-like */
	size_t ml = 0;
	uint8_t *multi = NULL;
	for (size_t off = 0; off < len; off += 200000) {
		size_t n = len - off < 200000 ? len - off : 200000, sl, tl;
		uint8_t *sbz = bzip2("-9", data + off, n, &sl);
		uint8_t *t = cat(multi ? multi : (uint8_t *)"", ml, sbz, sl, &tl);
		free(multi);
		free(sbz);
		multi = t;
		ml = tl;
	}
	r = full_check(multi, ml, data, len, len / 200000);
	result_free(&r);

	free(multi);
	free(a);
	free(b);
	free(e);
	free(c);
	free(ab);
	free(abe);
	free(all);
}

/* Runs of one byte: the first RLE stage makes a block decode to ~46 MB. */
static void test_repetitive(void)
{
	size_t len = 60u << 20, bzlen;
	uint8_t *data = malloc(len);
	uint8_t *bz;
	struct result r;

	memset(data, 'x', len);
	tu_fill(data + len / 2, 4096, 7, 1); /* something else in the middle */
	bz = bzip2("-9", data, len, &bzlen);
	r = full_check(bz, bzlen, data, len, 1);
	CHECK(r.ck.v[0].ulen > 10 * 900000);
	result_free(&r);
	free(bz);
	free(data);
}

static void test_empty(void)
{
	size_t bzlen;
	uint8_t *bz = bzip2("-9", NULL, 0, &bzlen);
	unsigned long errs = tfs_log_count(TFS_LOG_ERR);
	struct result r;

	CHECK(C->probe(bz, bzlen));
	for (unsigned t = 1; t <= 2; t++) {
		r = scan(bz, bzlen, t, 100, 0);
		CHECK_EQ(r.rc, 0);
		CHECK_EQ(r.outlen, 0);
		CHECK_EQ(r.ck.n, 0);
		CHECK_EQ(r.verified, 0);
		result_free(&r);
	}
	CHECK_EQ(tfs_log_count(TFS_LOG_ERR), errs);

	/* a zero-length file, and a bare header, are not bzip2 streams */
	r = scan(bz, 0, 1, 100, 0);
	CHECK_EQ(r.rc, -EIO);
	CHECK_EQ(r.outlen, 0);
	result_free(&r);
	r = scan(bz, 4, 2, 100, 0);
	CHECK_EQ(r.rc, -EIO);
	result_free(&r);
	r = scan((const uint8_t *)"not bzip2 at all", 16, 1, 100, 0);
	CHECK_EQ(r.rc, -EIO);
	result_free(&r);
	free(bz);
}

/* Occurrences of magic at any bit offset of buf (brute force). */
static size_t count_magic(const uint8_t *buf, size_t len, uint64_t magic)
{
	size_t n = 0;
	uint64_t w = 0;

	for (uint64_t bit = 0; bit < (uint64_t)len * 8; bit++) {
		w = (w << 1 | ((buf[bit / 8] >> (7 - bit % 8)) & 1)) & 0xffffffffffffULL;
		if (bit >= 47 && w == magic)
			n++;
	}
	return n;
}

/* Data whose bytes are exactly {37 + j : bit j of magic is 1}: a block's symbol bitmap (256
 * bits, one per byte value, in order) then holds the magic at bit 37, inside the block header
 * and never at a block boundary.  So every block of the stream carries a chance magic. */
static uint8_t *magic_data(uint64_t magic, size_t len)
{
	uint8_t set[48], *data = malloc(len);
	unsigned nset = 0;
	uint32_t x = 12345;

	for (unsigned j = 0; j < 48; j++)
		if ((magic >> (47 - j)) & 1)
			set[nset++] = (uint8_t)(37 + j);
	for (size_t i = 0; i < len; i++) {
		x ^= x << 13;
		x ^= x >> 17;
		x ^= x << 5;
		data[i] = set[x % nset];
	}
	return data;
}

static void test_chance_magic(void)
{
	static const uint64_t magics[2] = {MAGIC_BLOCK, MAGIC_EOS};

	for (int m = 0; m < 2; m++) {
		size_t len = 450000, bzlen;
		uint8_t *data = magic_data(magics[m], len);
		uint8_t *bz = bzip2("-1", data, len, &bzlen);
		struct result r = full_check(bz, bzlen, data, len, 4);
		size_t nblock = count_magic(bz, bzlen, MAGIC_BLOCK);
		size_t neos = count_magic(bz, bzlen, MAGIC_EOS);

		/* each block holds a chance magic as well as its own */
		if (m == 0) {
			CHECK_EQ(nblock, 2 * r.ck.n);
			CHECK_EQ(neos, 1);
		} else {
			CHECK_EQ(nblock, r.ck.n);
			CHECK_EQ(neos, 1 + r.ck.n);
		}
		for (unsigned t = 1; t <= 3; t += 2) {
			struct result r2 = scan(bz, bzlen, t, 1 << 16, 0);
			CHECK_EQ(r2.rc, 0);
			CHECK(r2.ck.n == r.ck.n &&
			      memcmp(r2.ck.v, r.ck.v, r.ck.n * sizeof(*r.ck.v)) == 0);
			result_free(&r2);
		}
		result_free(&r);
		free(bz);
		free(data);
	}
}

/* Flips byte at off; returns a copy. */
static uint8_t *flipped(const uint8_t *bz, size_t len, size_t off, uint8_t mask)
{
	uint8_t *d = malloc(len);

	memcpy(d, bz, len);
	d[off] ^= mask;
	return d;
}

static void test_damage(const uint8_t *data, size_t len)
{
	size_t bzlen;
	uint8_t *bz = bzip2("-1", data, len, &bzlen);
	struct result good = scan(bz, bzlen, 2, 1 << 16, 0);
	const struct codec_ckpt *ck = good.ck.v;
	size_t n = good.ck.n;
	unsigned long errs;

	CHECK(n >= 4);
	if (n < 4)
		goto out;

	/* a flipped byte in the middle of block 1 */
	size_t off = ck[1].coff + ck[1].clen / 16;
	uint8_t *bad = flipped(bz, bzlen, off, 0x10);
	for (unsigned t = 1; t <= 2; t++) {
		errs = tfs_log_count(TFS_LOG_ERR);
		struct result r = scan(bad, bzlen, t, 1 << 16, 0);
		CHECK_EQ(r.rc, -EIO);
		CHECK_EQ(r.verified, ck[1].uoff);
		CHECK_EQ(r.outlen, ck[1].uoff);
		CHECK(memcmp(r.out, data, r.outlen) == 0);
		CHECK_EQ(r.ck.n, 1);
		CHECK(tfs_log_count(TFS_LOG_ERR) > errs);
		result_free(&r);
	}
	/* decoders: the damaged block fails, the others still decode */
	struct src *in = src_from_mem(bad, bzlen);
	uint8_t *buf = malloc(1 << 16);
	for (size_t i = 0; i < n; i++) {
		struct codec_dec *d;
		ssize_t k = 0;
		uint64_t got = 0;
		CHECK_EQ(C->dec_new(in, &ck[i], NULL, 0, &d), 0);
		while (d && (k = C->dec_read(d, buf, 1 << 16)) > 0) {
			CHECK(memcmp(buf, data + ck[i].uoff + got, (size_t)k) == 0 || i == 1);
			got += (uint64_t)k;
		}
		if (i == 1) {
			CHECK_EQ(k, -EIO);
			CHECK_EQ(C->dec_read(d, buf, 1 << 16), -EIO); /* sticky */
		} else {
			CHECK_EQ(k, 0);
			CHECK_EQ(got, ck[i].ulen);
		}
		C->dec_free(d);
	}
	src_free(in);
	free(bad);

	/* a flipped bit in the stream CRC: all the data, then -EIO */
	uint64_t eos = ck[n - 1].coff * 8 + ck[n - 1].bits + ck[n - 1].clen;
	bad = flipped(bz, bzlen, (size_t)((eos + 60) / 8), (uint8_t)(0x80 >> ((eos + 60) % 8)));
	struct result r = scan(bad, bzlen, 2, 1 << 16, 0);
	CHECK_EQ(r.rc, -EIO);
	CHECK_EQ(r.outlen, len);
	CHECK_EQ(r.verified, len);
	CHECK(r.outlen == len && memcmp(r.out, data, len) == 0);
	result_free(&r);
	free(bad);

	/* a destroyed block magic: the two blocks around it do not decode as one */
	bad = flipped(bz, bzlen, ck[2].coff + 2, 0x01);
	r = scan(bad, bzlen, 2, 1 << 16, 0);
	CHECK_EQ(r.rc, -EIO);
	CHECK_EQ(r.verified, ck[1].uoff);
	result_free(&r);
	free(bad);

	/* dec_new with checkpoints that do not fit the file */
	struct codec_dec *d;
	struct codec_ckpt k = ck[1];
	in = src_from_mem(bz, bzlen);
	k.bits = 8;
	CHECK_EQ(C->dec_new(in, &k, NULL, 0, &d), -EINVAL);
	CHECK(d == NULL);
	k = ck[1];
	k.extra = 0;
	CHECK_EQ(C->dec_new(in, &k, NULL, 0, &d), -EINVAL);
	k = ck[1];
	k.clen = 1ULL << 40;
	CHECK_EQ(C->dec_new(in, &k, NULL, 0, &d), -EINVAL);
	k = ck[1];
	k.coff += 1;
	CHECK_EQ(C->dec_new(in, &k, NULL, 0, &d), -EIO);
	k = ck[n - 1];
	k.clen += 8 * (bzlen - k.coff); /* past the end of the file */
	CHECK_EQ(C->dec_new(in, &k, NULL, 0, &d), -EIO);
	k = ck[1];
	k.clen -= 9; /* ends before the block does */
	CHECK_EQ(C->dec_new(in, &k, NULL, 0, &d), 0);
	{
		ssize_t rc = 0;
		while (d && (rc = C->dec_read(d, buf, 1 << 16)) > 0)
			;
		CHECK_EQ(rc, -EIO);
		C->dec_free(d);
	}
	k = ck[1];
	k.extra = 9; /* another level works: the level only sizes libbz2's buffers */
	CHECK_EQ(C->dec_new(in, &k, NULL, 0, &d), 0);
	C->dec_free(d);
	C->dec_free(NULL);
	C->scan_free(NULL);
	src_free(in);
	free(buf);
out:
	result_free(&good);
	free(bz);
}

/* Truncation at many points: the good blocks before the cut, then -EIO. */
static void test_truncation(const uint8_t *data, size_t len)
{
	size_t bzlen;
	uint8_t *bz = bzip2("-1", data, len, &bzlen);
	struct result good = scan(bz, bzlen, 1, 1 << 16, 0);
	const struct codec_ckpt *ck = good.ck.v;
	size_t n = good.ck.n, ncut = 0, cuts[32];
	uint64_t eos = ck[n - 1].coff * 8 + ck[n - 1].bits + ck[n - 1].clen;

	cuts[ncut++] = 1;
	cuts[ncut++] = 3;
	cuts[ncut++] = 4;
	cuts[ncut++] = 9;
	cuts[ncut++] = 200;
	cuts[ncut++] = ck[1].coff;
	cuts[ncut++] = ck[1].coff + 3;
	cuts[ncut++] = ck[1].coff + 7;
	cuts[ncut++] = ck[2].coff + ck[2].clen / 16;
	cuts[ncut++] = (size_t)(eos / 8);
	cuts[ncut++] = (size_t)(eos / 8) + 4;
	cuts[ncut++] = (size_t)(eos / 8) + 6;
	cuts[ncut++] = (size_t)(eos / 8) + 9;
	cuts[ncut++] = bzlen - 1;
	for (size_t c = 0; c < ncut; c++) {
		uint64_t want = 0;
		for (size_t i = 0; i < n; i++) {
			uint64_t end = ck[i].coff * 8 + ck[i].bits + ck[i].clen;
			if (end + 48 <= (uint64_t)cuts[c] * 8)
				want = ck[i].uoff + ck[i].ulen;
		}
		for (unsigned t = 1; t <= 2; t++) {
			struct result r = scan(bz, cuts[c], t, 1 << 16, 0);
			CHECK_EQ(r.rc, -EIO);
			CHECK_EQ(r.verified, want);
			CHECK_EQ(r.outlen, want);
			CHECK(memcmp(r.out, data, r.outlen) == 0);
			result_free(&r);
		}
	}
	result_free(&good);
	free(bz);
}

/* Bytes after the last stream: a notice, not an error -- unless they start a stream. */
static void test_trailing(const uint8_t *data, size_t len)
{
	size_t bzlen, l2;
	uint8_t *bz = bzip2("-1", data, len, &bzlen);
	static const uint8_t zeros[4096];
	unsigned long errs = tfs_log_count(TFS_LOG_ERR);
	struct result r;
	uint8_t *t;

	t = cat(bz, bzlen, zeros, sizeof(zeros), &l2);
	r = scan(t, l2, 2, 1 << 16, 0);
	CHECK_EQ(r.rc, 0);
	CHECK(r.outlen == len && memcmp(r.out, data, len) == 0);
	result_free(&r);
	free(t);

	t = cat(bz, bzlen, (const uint8_t *)"garbage!", 8, &l2);
	r = scan(t, l2, 1, 1 << 16, 0);
	CHECK_EQ(r.rc, 0);
	CHECK(r.outlen == len && memcmp(r.out, data, len) == 0);
	result_free(&r);
	free(t);

	t = cat(bz, bzlen, (const uint8_t *)"BZ", 2, &l2);
	r = scan(t, l2, 1, 1 << 16, 0);
	CHECK_EQ(r.rc, 0);
	result_free(&r);
	free(t);

	/* trailing data holding real block magics (a stream without its header) */
	t = cat(bz, bzlen, bz + 4, bzlen - 4, &l2);
	r = scan(t, l2, 2, 1 << 16, 0);
	CHECK_EQ(r.rc, 0);
	CHECK(r.outlen == len && memcmp(r.out, data, len) == 0);
	CHECK_EQ(r.ck.n, (size_t)count_magic(bz, bzlen, MAGIC_BLOCK));
	result_free(&r);
	free(t);
	CHECK_EQ(tfs_log_count(TFS_LOG_ERR), errs);

	/* a stream header followed by junk is a damaged second stream */
	t = cat(bz, bzlen, (const uint8_t *)"BZh91AY&SYjunkjunkjunkjunk", 26, &l2);
	r = scan(t, l2, 2, 1 << 16, 0);
	CHECK_EQ(r.rc, -EIO);
	CHECK_EQ(r.verified, len);
	result_free(&r);
	free(t);
	free(bz);
}

static void test_sink_error(const uint8_t *data, size_t len)
{
	size_t bzlen;
	uint8_t *bz = bzip2("-1", data, len, &bzlen);

	for (unsigned t = 1; t <= 2; t++) {
		struct result r = scan(bz, bzlen, t, 1 << 16, 2);
		CHECK_EQ(r.rc, -ENOSPC);
		CHECK_EQ(r.ck.n, 2);
		CHECK(r.outlen == r.ck.v[1].uoff && memcmp(r.out, data, r.outlen) == 0);
		result_free(&r);
	}
	free(bz);
}

/* Random damage: never a crash, and every byte returned is right. */
static void test_fuzz(const uint8_t *data, size_t len)
{
	size_t bzlen;
	uint8_t *bz = bzip2("-1", data, len, &bzlen);
	uint8_t *buf = malloc(bzlen + 64), *tmp = malloc(1 << 16);
	uint32_t x = 99;
	int log_level = tfs_log_level;

	tfs_log_level = TFS_LOG_ERR - 1; /* quiet */
	for (int iter = 0; iter < 120; iter++) {
		size_t l = bzlen;
		memcpy(buf, bz, bzlen);
		for (int k = 0; k < 1 + iter % 3; k++) {
			x ^= x << 13;
			x ^= x >> 17;
			x ^= x << 5;
			size_t pos = iter < 20 ? x % 64 : x % bzlen; /* the headers often */
			buf[pos] ^= (uint8_t)(1u << (x >> 24) % 8);
		}
		if (iter % 5 == 0)
			l = x % bzlen;
		struct result r = scan(buf, l, 1 + iter % 2, 1 << 16, 0);
		CHECK(r.rc == 0 || r.rc == -EIO);
		CHECK(r.outlen <= len && memcmp(r.out, data, r.outlen) == 0);
		CHECK(r.verified == r.outlen);
		/* decoders at the (damaged) file's checkpoints */
		struct src *in = src_from_mem(buf, l);
		for (size_t i = 0; i < r.ck.n; i++) {
			struct codec_dec *d;
			ssize_t n;
			if (C->dec_new(in, &r.ck.v[i], NULL, 0, &d) == 0) {
				while ((n = C->dec_read(d, tmp, 1 << 16)) > 0)
					;
				CHECK(n == 0 || n == -EIO);
				C->dec_free(d);
			}
		}
		src_free(in);
		result_free(&r);
	}
	/* pure noise after a valid header and block magic */
	for (int iter = 0; iter < 30; iter++) {
		size_t l = 100 + (size_t)iter * 997;
		memcpy(buf, "BZh91AY&SY", 10);
		tu_fill(buf + 10, l - 10, (uint32_t)iter, 0);
		struct result r = scan(buf, l, 2, 1 << 16, 0);
		CHECK_EQ(r.rc, -EIO);
		CHECK_EQ(r.outlen, 0);
		result_free(&r);
	}
	/* a file packed with magics, byte-aligned and not: fails fast, without blowing up */
	for (int iter = 0; iter < 4; iter++) {
		size_t l = 4u << 20;
		uint8_t *full = malloc(l);
		memcpy(full, "BZh9", 4);
		for (size_t off = 4; off < l; off++) {
			static const uint8_t mb[6] = {0x31, 0x41, 0x59, 0x26, 0x53, 0x59};
			static const uint8_t me[6] = {0x17, 0x72, 0x45, 0x38, 0x50, 0x90};
			const uint8_t *m = iter & 1 ? me : mb;
			size_t k = (off - 4) % (iter < 2 ? 6 : 7); /* 7: a junk byte between */
			full[off] = k < 6 ? m[k] : 0xa5;
		}
		if (iter & 1)
			memcpy(full + 4, "1AY&SY", 6);
		struct result r = scan(full, l, 1 + iter % 2, 1 << 16, 0);
		CHECK_EQ(r.rc, -EIO);
		CHECK_EQ(r.outlen, 0);
		result_free(&r);
		free(full);
	}
	tfs_log_level = log_level;
	free(tmp);
	free(buf);
	free(bz);
}

int main(void)
{
	size_t len = 3u << 20, small = 450000;
	uint8_t *data;

	if (!tu_have("bzip2"))
		return 77;
	data = malloc(len);
	/* text with stretches of noise, so blocks differ in size and ratio */
	tu_fill(data, len, 1, 1);
	for (size_t off = 0; off + 50000 < len; off += 700000)
		tu_fill(data + off, 50000, (uint32_t)off, 0);

	test_levels(data, len);
	test_multistream(data, len);
	test_repetitive();
	test_empty();
	test_chance_magic();
	test_damage(data, small);
	test_truncation(data, small);
	test_trailing(data, small);
	test_sink_error(data, small);
	test_fuzz(data, 250000);
	free(data);
	return tu_exit();
}
