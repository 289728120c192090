/* Unit tests of the zstd codec (codecs/zstd/), on data made in memory by the zstd tools (zstd,
 * pzstd) and by libzstd itself: frames with and without content size and checksum, skippable
 * frames, and the seekable format (frames plus a seek table in a final skippable frame, written
 * here from its specification).
 *
 * Every good file is scanned whole with 1, 2, 3 and 8 threads (bytes and checkpoints must not
 * depend on it), compared with the original and, where the test knows the frames, with the
 * checkpoints the chunk rule gives; then every checkpoint is decoded, the first and last bytes
 * are read through decoders, and index_blocks must give the scan's checkpoints and size where the
 * file allows it (-ENOTSUP where it does not).  Damaged files (flipped bytes in data, checksums,
 * headers and the seek table; truncations; trailing garbage; hostile headers) must give the
 * original bytes up to scan_verified(), -EIO and one logged error where the damage matters --
 * never anything else, never a crash or a hang.
 */
#include "codecs/codec.h"
#include "common/log.h"
#include "testutil.h"

#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <string.h>
#include <unistd.h>
#include <zstd.h>

#define MIB ((size_t)1 << 20)
#define CHUNK_MIN ((size_t)64 << 10) /* zstd_int.h's ZS_CHUNK_MIN */
#define CK_TABLE 1u /* checkpoint bits: aux holds seek table entries */
#define SEEK_ENTRY 12

/* ---- log capture ---- */

static unsigned long nlog[8];
static char last_err[1024];
static bool quiet; /* hundreds of expected messages */

static void log_sink(int level, const char *msg, void *opaque)
{
	(void)opaque;
	if (level >= 0 && level < 8)
		nlog[level]++;
	if (level == TFS_LOG_ERR)
		snprintf(last_err, sizeof(last_err), "%s", msg);
	if (!quiet)
		fprintf(stderr, "  [log %d] %s\n", level, msg);
}

static void log_reset(void)
{
	memset(nlog, 0, sizeof(nlog));
	last_err[0] = '\0';
}

/* ---- scanning, with checks of the sink contract ---- */

struct ck {
	struct codec_ckpt c;
	uint8_t *aux;
	size_t auxlen;
};

struct scan_res {
	uint8_t *out;
	size_t len;
	ssize_t rc; /* the final scan_read result: 0 or -errno */
	uint64_t verified;
	struct ck *cks;
	size_t ncks;
	pthread_t reader;
	size_t returned;
	int contract_errors;
	int fail_at; /* the sink fails with -ENOSPC at this checkpoint (0: never) */
};

static void add_ck(struct ck **cks, size_t *n, const struct codec_ckpt *c, const void *aux,
		   size_t auxlen)
{
	*cks = realloc(*cks, (*n + 1) * sizeof(**cks));
	(*cks)[*n].c = *c;
	(*cks)[*n].auxlen = auxlen;
	(*cks)[*n].aux = NULL;
	if (auxlen) {
		(*cks)[*n].aux = malloc(auxlen);
		memcpy((*cks)[*n].aux, aux, auxlen);
	}
	(*n)++;
}

static void free_cks(struct ck *cks, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(cks[i].aux);
	free(cks);
}

static int sink_fn(void *opaque, const struct codec_ckpt *c, const void *aux, size_t auxlen)
{
	struct scan_res *r = opaque;

	if (!pthread_equal(pthread_self(), r->reader))
		r->contract_errors++; /* called from another thread */
	if (r->ncks == 0 && c->uoff != 0)
		r->contract_errors++; /* the first at 0 */
	if (r->ncks && c->uoff <= r->cks[r->ncks - 1].c.uoff)
		r->contract_errors++; /* increasing */
	if (c->uoff < r->returned)
		r->contract_errors++; /* before any byte at or after it */
	if ((c->bits & CK_TABLE) ? !aux || !auxlen || auxlen % SEEK_ENTRY : aux || auxlen)
		r->contract_errors++; /* aux only with seek table entries */
	if (r->fail_at && (int)r->ncks + 1 == r->fail_at)
		return -ENOSPC;
	add_ck(&r->cks, &r->ncks, c, aux, auxlen);
	return 0;
}

static void res_free(struct scan_res *r)
{
	free_cks(r->cks, r->ncks);
	free(r->out);
	memset(r, 0, sizeof(*r));
}

/* Scans the source whole in reads of step bytes.  Returns the final scan_read result. */
static ssize_t scan_src(struct src *in, unsigned threads, size_t step, int fail_at,
			struct scan_res *r)
{
	struct codec_opts opts = {.spacing = 1 << 20, .threads = threads};
	struct codec_sink sink = {.checkpoint = sink_fn, .opaque = r};
	struct codec_scan *s;
	size_t cap = 1 << 16;
	ssize_t n;
	int err;

	memset(r, 0, sizeof(*r));
	r->reader = pthread_self();
	r->fail_at = fail_at;
	r->out = malloc(cap);
	err = codec_zstd.scan_new(in, &opts, &sink, &s);
	CHECK_EQ(err, 0);
	if (err)
		return r->rc = err;
	CHECK(codec_zstd.scan_name == NULL);
	for (;;) {
		if (r->len + step > cap) {
			cap = (r->len + step) * 2;
			r->out = realloc(r->out, cap);
		}
		n = codec_zstd.scan_read(s, r->out + r->len, step);
		if (n <= 0)
			break;
		CHECK(n <= (ssize_t)step);
		r->len += (size_t)n;
		r->returned = r->len;
	}
	r->rc = n;
	CHECK_EQ(codec_zstd.scan_read(s, r->out, step), n); /* the end and errors are sticky */
	r->verified = codec_zstd.scan_verified(s);
	CHECK(r->verified <= r->len);
	if (n == 0)
		CHECK_EQ(r->verified, r->len);
	for (size_t i = 0; i < r->ncks; i++)
		CHECK(r->cks[i].c.uoff < r->len); /* every checkpoint starts some returned bytes */
	CHECK_EQ(r->contract_errors, 0);
	codec_zstd.scan_free(s);
	return n;
}

static ssize_t scan(const uint8_t *z, size_t len, unsigned threads, size_t step, struct scan_res *r)
{
	struct src *in = src_from_mem(z, len);
	ssize_t n = scan_src(in, threads, step, 0, r);

	src_free(in);
	return n;
}

static bool same_ck(const struct ck *a, const struct ck *b)
{
	return a->c.uoff == b->c.uoff && a->c.coff == b->c.coff && a->c.clen == b->c.clen &&
	       a->c.extra == b->c.extra && a->c.bits == b->c.bits && a->c.flags == b->c.flags &&
	       a->auxlen == b->auxlen && (!a->auxlen || memcmp(a->aux, b->aux, a->auxlen) == 0);
}

static void check_same_cks(const struct ck *a, size_t na, const struct ck *b, size_t nb)
{
	CHECK_EQ(na, nb);
	for (size_t i = 0; i < na && i < nb; i++)
		CHECK(same_ck(&a[i], &b[i]));
}

/* Decodes checkpoint i's chunk (its length from the next checkpoint, or end) and compares it
 * with want (unless NULL): the first 3000 bytes one at a time, the rest in odd-sized reads.
 * Returns the decoder's final result (0 at the chunk's end). */
static ssize_t decode_chunk(const uint8_t *z, size_t zlen, const struct ck *cks, size_t ncks,
			    size_t i, uint64_t end, const uint8_t *want)
{
	struct src *in = src_from_mem(z, zlen);
	struct codec_ckpt ck = cks[i].c;
	struct codec_dec *d;
	static uint8_t buf[100003];
	uint64_t got = 0;
	ssize_t n;
	int err;

	ck.ulen = (i + 1 < ncks ? cks[i + 1].c.uoff : end) - ck.uoff;
	err = codec_zstd.dec_new(in, &ck, cks[i].aux, cks[i].auxlen, &d);
	if (err) {
		CHECK(d == NULL);
		src_free(in);
		return err;
	}
	CHECK(codec_zstd.dec_memory(d) > 64 << 10);
	while ((n = codec_zstd.dec_read(d, buf, got < 3000 ? 1 : sizeof(buf))) > 0) {
		CHECK(got + (uint64_t)n <= ck.ulen);
		if (want && got + (uint64_t)n <= ck.ulen)
			CHECK(memcmp(buf, want + ck.uoff + got, (size_t)n) == 0);
		got += (uint64_t)n;
	}
	if (n == 0)
		CHECK_EQ(got, ck.ulen);
	CHECK_EQ(codec_zstd.dec_read(d, buf, sizeof(buf)), n); /* sticky */
	codec_zstd.dec_free(d);
	src_free(in);
	return n;
}

/* ---- index_blocks ---- */

struct ib_res {
	struct ck *cks;
	size_t ncks;
	uint64_t usize;
	int rc;
};

static int ib_sink(void *opaque, const struct codec_ckpt *c, const void *aux, size_t auxlen)
{
	struct ib_res *r = opaque;

	add_ck(&r->cks, &r->ncks, c, aux, auxlen);
	return 0;
}

static int index_blocks(const uint8_t *z, size_t zlen, struct ib_res *r)
{
	struct codec_opts opts = {.spacing = 1 << 20, .threads = 2};
	struct codec_sink sink = {.checkpoint = ib_sink, .opaque = r};
	struct src *in = src_from_mem(z, zlen);

	memset(r, 0, sizeof(*r));
	r->usize = 12345;
	r->rc = codec_zstd.index_blocks(in, &opts, &sink, &r->usize);
	src_free(in);
	return r->rc;
}

/* index_blocks gives the scan's checkpoints, with ulen, and its size (want: 1), or -ENOTSUP
 * (want: 0), or either (-1). */
static void check_index_blocks(const uint8_t *z, size_t zlen, const struct scan_res *ref, int want)
{
	struct ib_res ib;
	int rc = index_blocks(z, zlen, &ib);

	if (want == 1)
		CHECK_EQ(rc, 0);
	else if (want == 0)
		CHECK_EQ(rc, -ENOTSUP);
	else
		CHECK(rc == 0 || rc == -ENOTSUP);
	if (rc == 0) {
		CHECK_EQ(ib.usize, ref->len);
		check_same_cks(ib.cks, ib.ncks, ref->cks, ref->ncks);
		for (size_t i = 0; i < ib.ncks; i++)
			CHECK_EQ(ib.cks[i].c.ulen,
				 (i + 1 < ib.ncks ? ib.cks[i + 1].c.uoff : ib.usize) -
				     ib.cks[i].c.uoff);
	} else {
		CHECK_EQ(ib.usize, 0);
	}
	free_cks(ib.cks, ib.ncks);
}

/* ---- making test data ---- */

static uint8_t *make_data(size_t len, uint32_t seed)
{
	uint8_t *b = malloc(len ? len : 1);

	tu_fill(b, len, seed, 1);
	/* stretches of noise, so some blocks are stored raw */
	for (size_t off = 50000; off + 30000 < len; off += 400000)
		tu_fill(b + off, 30000, seed + (uint32_t)off, 0);
	return b;
}

static uint8_t *run(const char *cmd, const void *in, size_t len, size_t *outlen)
{
	uint8_t *out = tu_pipe(cmd, in, len, outlen);

	if (!out) {
		fprintf(stderr, "cannot run: %s\n", cmd);
		exit(1);
	}
	return out;
}

static uint8_t *dup_buf(const uint8_t *b, size_t len, size_t extra)
{
	uint8_t *d = malloc(len + extra + 1);

	memcpy(d, b, len);
	return d;
}

static uint32_t le32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static void put_le32(uint8_t *p, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

/* One frame of in[0..len) by libzstd. */
static uint8_t *lz_frame(const uint8_t *in, size_t len, int level, bool csize, bool sum,
			 size_t *outlen)
{
	ZSTD_CCtx *c = ZSTD_createCCtx();
	size_t cap = ZSTD_compressBound(len) + 64, n;
	uint8_t *out = malloc(cap);

	ZSTD_CCtx_setParameter(c, ZSTD_c_compressionLevel, level);
	ZSTD_CCtx_setParameter(c, ZSTD_c_checksumFlag, sum);
	ZSTD_CCtx_setParameter(c, ZSTD_c_contentSizeFlag, csize);
	n = ZSTD_compress2(c, out, cap, in, len);
	if (ZSTD_isError(n)) {
		fprintf(stderr, "ZSTD_compress2: %s\n", ZSTD_getErrorName(n));
		exit(1);
	}
	ZSTD_freeCCtx(c);
	*outlen = n;
	return out;
}

/* A file being built, and the frames in it. */
struct tframe {
	uint64_t coff, clen, dsize;
	bool zstd;
	uint32_t sum; /* XXH64 low 32 bits of the content */
};

struct zfile {
	uint8_t *p;
	size_t len, cap;
	struct tframe fr[4096];
	size_t nfr;
};

static void zf_put(struct zfile *f, const void *b, size_t n)
{
	if (f->len + n > f->cap) {
		f->cap = (f->len + n) * 2 + 1024;
		f->p = realloc(f->p, f->cap);
	}
	memcpy(f->p + f->len, b, n);
	f->len += n;
}

/* Appends a libzstd frame of data[0..n); own: keep its checksum (else it is stripped: the
 * descriptor's checksum bit cleared, the last four bytes dropped). */
static void zf_frame(struct zfile *f, const uint8_t *data, size_t n, bool csize, bool own)
{
	size_t flen;
	uint8_t *z = lz_frame(data, n, 1, csize, true, &flen);
	struct tframe t = {f->len, 0, n, true, le32(z + flen - 4)};

	if (!own) {
		z[4] &= (uint8_t)~0x04;
		flen -= 4;
	}
	t.clen = flen;
	zf_put(f, z, flen);
	if (f->nfr < 4096)
		f->fr[f->nfr++] = t;
	free(z);
}

static void zf_skippable(struct zfile *f, unsigned variant, uint32_t size)
{
	uint8_t h[8];
	uint8_t *body = malloc(size ? size : 1);
	struct tframe t = {f->len, 8 + size, 0, false, 0};

	put_le32(h, 0x184D2A50u + variant);
	put_le32(h + 4, size);
	memset(body, 0xab, size);
	zf_put(f, h, 8);
	zf_put(f, body, size);
	free(body);
	if (f->nfr < 4096)
		f->fr[f->nfr++] = t;
}

/* Appends the seek table of the frames so far (with checksums if sums). */
static void zf_seek_table(struct zfile *f, bool sums)
{
	unsigned esz = sums ? 12 : 8;
	uint32_t size = (uint32_t)(f->nfr * esz + 9);
	uint8_t b[12];

	put_le32(b, 0x184D2A5Eu);
	put_le32(b + 4, size);
	zf_put(f, b, 8);
	for (size_t i = 0; i < f->nfr; i++) {
		put_le32(b, (uint32_t)f->fr[i].clen);
		put_le32(b + 4, (uint32_t)f->fr[i].dsize);
		put_le32(b + 8, f->fr[i].sum);
		zf_put(f, b, esz);
	}
	put_le32(b, (uint32_t)f->nfr);
	b[4] = sums ? 0x80 : 0;
	put_le32(b + 5, 0x8F92EAB1u);
	zf_put(f, b, 9);
}

/* The checkpoints the chunk rule gives for f's frames: a chunk opens at the first zstd frame
 * that starts CHUNK_MIN or more after the last checkpoint; its checkpoint goes with its first
 * byte. */
static void check_rule(const struct zfile *f, const struct scan_res *r)
{
	uint64_t u = 0, last = 0, number = 0;
	bool have = false, pending = false;
	struct codec_ckpt p = {0};
	size_t k = 0;

	for (size_t i = 0; i < f->nfr; i++) {
		if (!f->fr[i].zstd)
			continue;
		number++;
		if (!pending && (!have || u - last >= CHUNK_MIN)) {
			pending = true;
			p.coff = f->fr[i].coff;
			p.flags = (uint32_t)number;
		}
		if (pending && f->fr[i].dsize) {
			p.uoff = u;
			if (k < r->ncks) {
				CHECK_EQ(r->cks[k].c.uoff, p.uoff);
				CHECK_EQ(r->cks[k].c.coff, p.coff);
				CHECK_EQ(r->cks[k].c.flags, p.flags);
				CHECK_EQ(r->cks[k].c.clen, 0);
				CHECK_EQ(r->cks[k].c.extra, 0);
			}
			k++;
			have = true;
			last = u;
			pending = false;
		}
		u += f->fr[i].dsize;
	}
	CHECK_EQ(r->ncks, k);
}

/* Scans a good file with several thread counts and read sizes, checks the bytes, the
 * checkpoints (against the chunk rule when f is given), every chunk through a decoder, the first
 * and last bytes, and index_blocks (ib as in check_index_blocks).  Returns the checkpoints. */
static size_t check_good(const char *what, const uint8_t *z, size_t zlen, const uint8_t *want,
			 size_t wantlen, const struct zfile *f, int ib)
{
	static const unsigned threads[] = {1, 2, 3, 8};
	static const size_t steps[] = {1 << 20, 4093, 1 << 20, 65536};
	struct scan_res ref, r;

	fprintf(stderr, "good: %s (%zu -> %zu bytes)\n", what, wantlen, zlen);
	log_reset();
	CHECK_EQ(scan(z, zlen, 1, 1 << 20, &ref), 0);
	CHECK_EQ(ref.len, wantlen);
	CHECK(ref.len == wantlen && memcmp(ref.out, want, wantlen) == 0);
	for (size_t t = 1; t < sizeof(threads) / sizeof(threads[0]); t++) {
		CHECK_EQ(scan(z, zlen, threads[t], steps[t], &r), 0);
		CHECK(r.len == ref.len && memcmp(r.out, ref.out, ref.len) == 0);
		check_same_cks(r.cks, r.ncks, ref.cks, ref.ncks);
		res_free(&r);
	}
	CHECK_EQ(nlog[TFS_LOG_ERR] + nlog[TFS_LOG_WARNING] + nlog[TFS_LOG_NOTICE], 0);
	if (f)
		check_rule(f, &ref);

	for (size_t i = 0; i < ref.ncks; i++)
		CHECK_EQ(decode_chunk(z, zlen, ref.cks, ref.ncks, i, wantlen, want), 0);
	/* the first byte and the last byte, through decoders */
	if (ref.ncks) {
		struct src *in = src_from_mem(z, zlen);
		const struct ck *lk = &ref.cks[ref.ncks - 1];
		struct codec_ckpt ck = ref.cks[0].c;
		struct codec_dec *d;
		uint8_t *buf = malloc(wantlen);
		ssize_t n;
		uint64_t got = 0;

		ck.ulen = (ref.ncks > 1 ? ref.cks[1].c.uoff : wantlen) - ck.uoff;
		CHECK_EQ(codec_zstd.dec_new(in, &ck, ref.cks[0].aux, ref.cks[0].auxlen, &d), 0);
		CHECK_EQ(codec_zstd.dec_read(d, buf, 1), 1);
		CHECK_EQ(buf[0], want[0]);
		codec_zstd.dec_free(d);
		ck = lk->c;
		ck.ulen = wantlen - ck.uoff;
		CHECK_EQ(codec_zstd.dec_new(in, &ck, lk->aux, lk->auxlen, &d), 0);
		while ((n = codec_zstd.dec_read(d, buf + got, wantlen - got)) > 0)
			got += (uint64_t)n;
		CHECK_EQ(n, 0);
		CHECK_EQ(ck.uoff + got, wantlen);
		CHECK_EQ(buf[got - 1], want[wantlen - 1]);
		codec_zstd.dec_free(d);
		free(buf);
		src_free(in);
	}
	check_index_blocks(z, zlen, &ref, ib);
	CHECK_EQ(nlog[TFS_LOG_ERR] + nlog[TFS_LOG_WARNING], 0);
	size_t n = ref.ncks;
	res_free(&ref);
	return n;
}

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
static void make_seekable(struct zfile *f, const uint8_t *data, size_t len, const size_t *fsizes,
			  size_t nsizes, bool own, bool sums, size_t skip)
{
	size_t off = 0, k = 0;

	memset(f, 0, sizeof(*f));
	while (off < len) {
		size_t n = fsizes[k % nsizes];

		if (n > len - off)
			n = len - off;
		zf_frame(f, data + off, n, k % 4 != 1, own); /* some without content size */
		if (skip && k % skip == skip - 1)
			zf_skippable(f, (unsigned)k % 16, (uint32_t)(k % 50));
		off += n;
		k++;
	}
	zf_seek_table(f, sums);
}

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
static void check_flip(const char *what, const struct zfile *f, size_t bad, uint64_t off,
		       const uint8_t *data, size_t len, const char *msg)
{
	uint8_t *z = dup_buf(f->p, f->len, 0);
	struct scan_res good, r;
	uint64_t bad_uoff = 0;

	for (size_t i = 0; i < bad; i++)
		bad_uoff += f->fr[i].dsize;
	fprintf(stderr, "damage: %s (frame %zu, offset %llu)\n", what, bad + 1,
		(unsigned long long)off);
	CHECK_EQ(scan(f->p, f->len, 2, 1 << 20, &good), 0);
	z[off] ^= 0x55;
	for (unsigned threads = 1; threads <= 3; threads += 2) {
		log_reset();
		CHECK_EQ(scan(z, f->len, threads, 1 << 20, &r), -EIO);
		CHECK_EQ(r.verified, bad_uoff);
		CHECK(r.len >= r.verified && memcmp(r.out, data, r.verified) == 0);
		for (size_t i = 0; i < r.ncks && i < good.ncks; i++)
			CHECK(same_ck(&r.cks[i], &good.cks[i]));
		CHECK_EQ(nlog[TFS_LOG_ERR], 1);
		CHECK(strstr(last_err, "compressed offset") != NULL);
		if (msg)
			CHECK(strstr(last_err, msg) != NULL);
		res_free(&r);
	}
	for (size_t i = 0; i < good.ncks; i++) {
		uint64_t end = i + 1 < good.ncks ? good.cks[i + 1].c.uoff : len;
		bool holds = bad_uoff >= good.cks[i].c.uoff && bad_uoff < end;
		ssize_t n =
		    decode_chunk(z, f->len, good.cks, good.ncks, i, len, holds ? NULL : data);

		if (holds)
			CHECK_EQ(n, -EIO);
		else
			CHECK_EQ(n, 0);
	}
	res_free(&good);
	free(z);
}

static void test_damage(const uint8_t *data, size_t len)
{
	struct zfile f = {0};
	size_t per = 300000, wlen = 5 * per;
	uint8_t *want = malloc(wlen);

	/* 5 frames of 300000 bytes: frames 1-4 make the first chunk, frame 5 the second */
	for (size_t i = 0; i < 5; i++) {
		memcpy(want + i * per, data + (i * per) % (len - per), per);
		zf_frame(&f, want + i * per, per, true, true);
	}
	const struct tframe *t = &f.fr[2];

	check_flip("data", &f, 2, t->coff + t->clen / 2, want, wlen, "frame 3");
	check_flip("checksum", &f, 2, t->coff + t->clen - 2, want, wlen, "frame 3");
	check_flip("content size", &f, 2, t->coff + 6, want, wlen, "frame 3");
	check_flip("first block header", &f, 2, t->coff + 10, want, wlen, "frame 3");
	check_flip("magic", &f, 2, t->coff + 1, want, wlen, NULL);
	check_flip("first frame", &f, 0, f.fr[0].coff + 100, want, wlen, "frame 1");
	check_flip("last frame", &f, 4, f.fr[4].coff + f.fr[4].clen / 3, want, wlen, "frame 5");
	check_flip("last frame's magic", &f, 4, f.fr[4].coff, want, wlen, NULL);
	free(f.p);
	free(want);

	/* a single frame with a flipped byte: nothing verified */
	uint8_t *z, *bad;
	size_t zlen;
	struct scan_res r;

	z = run("zstd -q -c -3", data, len, &zlen);
	bad = dup_buf(z, zlen, 0);
	bad[zlen / 2] ^= 0x10;
	for (unsigned threads = 1; threads <= 2; threads++) {
		log_reset();
		CHECK_EQ(scan(bad, zlen, threads, 1 << 20, &r), -EIO);
		CHECK_EQ(r.verified, 0);
		CHECK_EQ(r.ncks, 1);
		CHECK_EQ(nlog[TFS_LOG_ERR], 1);
		CHECK(strstr(last_err, "frame 1 at compressed offset 0") != NULL);
		res_free(&r);
	}
	free(bad);
	free(z);
}

static void test_seek_table_damage(const uint8_t *data, size_t len)
{
	static const size_t sizes[] = {150000, 200000}; /* a chunk per frame */
	struct zfile f;
	struct scan_res good, r;
	struct ib_res ib;
	uint8_t *bad;
	size_t entries;

	make_seekable(&f, data, len, sizes, 2, false, true, 0);
	entries = f.len - 9 - f.nfr * 12; /* offset of the first entry */
	CHECK_EQ(scan(f.p, f.len, 2, 1 << 20, &good), 0);
	CHECK_EQ(good.ncks, f.nfr);

	/* a compressed size: the table does not add up, ignored with a warning, frames walked */
	bad = dup_buf(f.p, f.len, 0);
	bad[entries + 12 * 2] ^= 0x01;
	for (unsigned threads = 1; threads <= 2; threads++) {
		log_reset();
		CHECK_EQ(scan(bad, f.len, threads, 1 << 20, &r), 0);
		CHECK(r.len == len && memcmp(r.out, data, len) == 0);
		CHECK_EQ(nlog[TFS_LOG_WARNING], 1);
		CHECK_EQ(nlog[TFS_LOG_ERR], 0);
		res_free(&r);
	}
	CHECK_EQ(index_blocks(bad, f.len, &ib), -ENOTSUP); /* frames without checksums */
	free_cks(ib.cks, ib.ncks);
	free(bad);

	/* a decoded size: frame 3 does not match */
	bad = dup_buf(f.p, f.len, 0);
	bad[entries + 12 * 2 + 4] ^= 0x01;
	for (unsigned threads = 1; threads <= 2; threads++) {
		log_reset();
		CHECK_EQ(scan(bad, f.len, threads, 1 << 20, &r), -EIO);
		CHECK_EQ(r.verified, sizes[0] + sizes[1]);
		CHECK_EQ(nlog[TFS_LOG_ERR], 1);
		CHECK(strstr(last_err, "frame 3") != NULL);
		res_free(&r);
	}
	free(bad);

	/* a checksum: frame 2 fails in the scan and in its decoder (frames have none of their
	 * own) */
	bad = dup_buf(f.p, f.len, 0);
	bad[entries + 12 * 1 + 8] ^= 0x01;
	for (unsigned threads = 1; threads <= 2; threads++) {
		log_reset();
		CHECK_EQ(scan(bad, f.len, threads, 1 << 20, &r), -EIO);
		CHECK_EQ(r.verified, sizes[0]);
		CHECK(memcmp(r.out, data, r.verified) == 0);
		CHECK_EQ(nlog[TFS_LOG_ERR], 1);
		CHECK(strstr(last_err, "checksum mismatch") != NULL);
		res_free(&r);
	}
	/* the good checkpoints' aux is the good table; with the damaged table's entries the
	 * chunk holding frame 2 (the second) fails */
	{
		struct ib_res bib;

		CHECK_EQ(index_blocks(bad, f.len, &bib), 0);
		CHECK_EQ(bib.ncks, good.ncks);
		log_reset();
		CHECK_EQ(decode_chunk(bad, f.len, bib.cks, bib.ncks, 1, len, NULL), -EIO);
		CHECK(strstr(last_err, "checksum mismatch") != NULL);
		for (size_t i = 0; i < bib.ncks; i++)
			if (i != 1)
				CHECK_EQ(decode_chunk(bad, f.len, bib.cks, bib.ncks, i, len, data), 0);
		free_cks(bib.cks, bib.ncks);
	}
	free(bad);

	/* the seekable magic: no table, the frames are walked, silently */
	bad = dup_buf(f.p, f.len, 0);
	bad[f.len - 1] ^= 0x01;
	log_reset();
	CHECK_EQ(scan(bad, f.len, 2, 1 << 20, &r), 0);
	CHECK(r.len == len && memcmp(r.out, data, len) == 0);
	CHECK_EQ(nlog[TFS_LOG_ERR] + nlog[TFS_LOG_WARNING] + nlog[TFS_LOG_NOTICE], 0);
	res_free(&r);
	free(bad);

	/* a hostile frame count: ignored */
	bad = dup_buf(f.p, f.len, 0);
	put_le32(bad + f.len - 9, 0xFFFFFFFF);
	log_reset();
	CHECK_EQ(scan(bad, f.len, 2, 1 << 20, &r), 0);
	CHECK(r.len == len && memcmp(r.out, data, len) == 0);
	CHECK_EQ(nlog[TFS_LOG_WARNING], 1);
	res_free(&r);
	free(bad);

	/* reserved bits in the descriptor: ignored */
	bad = dup_buf(f.p, f.len, 0);
	bad[f.len - 5] |= 0x04;
	log_reset();
	CHECK_EQ(scan(bad, f.len, 1, 1 << 20, &r), 0);
	CHECK_EQ(nlog[TFS_LOG_WARNING], 1);
	res_free(&r);
	free(bad);

	/* a frame that is not where the table says (its magic) */
	bad = dup_buf(f.p, f.len, 0);
	bad[f.fr[3].coff] ^= 0x40;
	for (unsigned threads = 1; threads <= 2; threads++) {
		log_reset();
		CHECK_EQ(scan(bad, f.len, threads, 1 << 20, &r), -EIO);
		CHECK_EQ(r.verified, sizes[0] + sizes[1] + sizes[0]);
		CHECK_EQ(nlog[TFS_LOG_ERR], 1);
		CHECK(strstr(last_err, "seek table entry 4") != NULL);
		res_free(&r);
	}
	free(bad);
	res_free(&good);
	free(f.p);
}

/* Cuts the file at `cut`: the frames wholly before it are delivered, and what decodes of the
 * cut frame (trusted: a truncation is no sign of damage), then -EIO ("truncated"). */
static void check_cut(const struct zfile *f, size_t cut, const uint8_t *data, size_t len)
{
	struct scan_res r;
	uint64_t want_verified = 0;
	bool at_boundary = false;

	for (size_t i = 0; i < f->nfr; i++) {
		if (f->fr[i].coff + f->fr[i].clen <= cut)
			want_verified += f->fr[i].dsize;
		if (f->fr[i].coff + f->fr[i].clen == cut)
			at_boundary = true;
	}
	fprintf(stderr, "truncated at %zu of %zu\n", cut, f->len);
	for (unsigned threads = 1; threads <= 2; threads++) {
		log_reset();
		if (at_boundary) {
			CHECK_EQ(scan(f->p, cut, threads, 65536, &r), 0);
			CHECK_EQ(r.len, want_verified);
		} else {
			CHECK_EQ(scan(f->p, cut, threads, 65536, &r), -EIO);
			/* a cut is no sign of damage: what decoded before it is trusted too */
			CHECK(r.verified >= want_verified);
			CHECK_EQ(r.verified, r.len);
			CHECK_EQ(nlog[TFS_LOG_ERR], 1);
			CHECK(strstr(last_err, "truncated") != NULL);
		}
		CHECK(r.len <= len && memcmp(r.out, data, r.len) == 0); /* a prefix */
		res_free(&r);
	}
}

static void test_truncation(const uint8_t *data, size_t len)
{
	struct zfile f = {0};
	size_t per = len / 3;

	zf_frame(&f, data, per, true, true);
	zf_skippable(&f, 2, 100);
	zf_frame(&f, data + per, per, false, true);
	zf_frame(&f, data + 2 * per, len - 2 * per, true, false);
	const struct tframe *m = &f.fr[2], *l = &f.fr[3];
	size_t cuts[] = {1,
			 4,
			 5,
			 8,
			 f.fr[0].clen / 2,
			 f.fr[0].clen - 1,
			 f.fr[0].clen,
			 f.fr[1].coff + 3,
			 f.fr[1].coff + 50,
			 m->coff + 2,
			 m->coff + 6,
			 m->coff + m->clen / 2,
			 m->coff + m->clen - 4,
			 m->coff + m->clen - 1,
			 l->coff + l->clen - 1,
			 l->coff + l->clen / 2};

	for (size_t i = 0; i < sizeof(cuts) / sizeof(cuts[0]); i++)
		check_cut(&f, cuts[i], data, len);
	free(f.p);

	/* a single frame cut in its data, in its checksum */
	size_t zlen;
	uint8_t *z = run("zstd -q -c -3", data, len, &zlen);
	struct zfile g = {0};

	g.fr[g.nfr++] = (struct tframe){0, zlen, len, true, 0};
	g.p = z;
	g.len = zlen;
	check_cut(&g, zlen / 2, data, len);
	check_cut(&g, zlen - 3, data, len);
	free(z);
}

static void test_zero_length(void)
{
	static const uint8_t nothing[1];
	struct scan_res r;
	struct src *in = src_from_mem(nothing, 0);
	struct ib_res ib;

	for (unsigned threads = 1; threads <= 2; threads++) {
		log_reset();
		CHECK_EQ(scan_src(in, threads, 4096, 0, &r), -EIO);
		CHECK_EQ(r.len, 0);
		CHECK_EQ(r.ncks, 0);
		CHECK_EQ(r.verified, 0);
		CHECK_EQ(nlog[TFS_LOG_ERR], 1);
		CHECK(strstr(last_err, "empty") != NULL);
		res_free(&r);
	}
	src_free(in);
	CHECK_EQ(index_blocks(nothing, 0, &ib), -EIO);
	free_cks(ib.cks, ib.ncks);

	/* not zstd at all, only the magic, only skippable frames */
	log_reset();
	CHECK_EQ(scan((const uint8_t *)"hello, world, this is not zstd", 30, 2, 4096, &r), -EIO);
	CHECK_EQ(r.len, 0);
	res_free(&r);
	CHECK_EQ(scan((const uint8_t *)"\x28\xb5\x2f\xfd", 4, 1, 4096, &r), -EIO);
	CHECK_EQ(r.len, 0);
	res_free(&r);
	CHECK_EQ(scan((const uint8_t *)"\x50\x2a\x4d\x18\x02\0\0\0ab", 10, 2, 4096, &r), -EIO);
	CHECK(strstr(last_err, "only skippable") != NULL);
	res_free(&r);
	CHECK_EQ(nlog[TFS_LOG_ERR], 3);
}

static void test_garbage(const uint8_t *data, size_t len)
{
	static const size_t sizes[] = {1, 3, 4, 7, 100000, 1536u << 10};
	struct zfile f = {0};
	struct scan_res good, r;
	uint8_t *bad;

	zf_frame(&f, data, len / 2, true, true);
	zf_frame(&f, data + len / 2, len - len / 2, true, true);
	CHECK_EQ(scan(f.p, f.len, 2, 1 << 20, &good), 0);
	for (size_t g = 0; g < sizeof(sizes) / sizeof(sizes[0]); g++) {
		for (int zeros = 0; zeros < 2; zeros++) {
			size_t n = sizes[g];

			fprintf(stderr, "garbage: %zu %s bytes\n", n, zeros ? "zero" : "random");
			bad = dup_buf(f.p, f.len, n);
			if (zeros)
				memset(bad + f.len, 0, n);
			else
				tu_fill(bad + f.len, n, (uint32_t)n, 0);
			for (unsigned threads = 1; threads <= 2; threads++) {
				log_reset();
				CHECK_EQ(scan(bad, f.len + n, threads, 1 << 20, &r), 0);
				CHECK(r.len == len && memcmp(r.out, data, len) == 0);
				check_same_cks(r.cks, r.ncks, good.cks, good.ncks);
				CHECK_EQ(nlog[TFS_LOG_ERR] + nlog[TFS_LOG_WARNING], 0);
				CHECK_EQ(nlog[TFS_LOG_NOTICE], zeros ? 0 : 1);
				res_free(&r);
			}
			struct ib_res ib;
			log_reset();
			CHECK_EQ(index_blocks(bad, f.len + n, &ib), 0);
			CHECK_EQ(ib.usize, len);
			free_cks(ib.cks, ib.ncks);
			free(bad);
		}
	}

	/* what follows holds another frame header: a damaged frame, not garbage */
	bad = dup_buf(f.p, f.len, 300);
	tu_fill(bad + f.len, 300, 99, 0);
	memcpy(bad + f.len + 100, f.p + f.fr[1].coff, 30);
	for (unsigned threads = 1; threads <= 2; threads++) {
		log_reset();
		CHECK_EQ(scan(bad, f.len + 300, threads, 1 << 20, &r), -EIO);
		CHECK(r.len == len && memcmp(r.out, data, len) == 0);
		CHECK_EQ(r.verified, len);
		CHECK_EQ(nlog[TFS_LOG_ERR], 1);
		CHECK(strstr(last_err, "damaged") != NULL);
		res_free(&r);
	}
	free(bad);
	res_free(&good);
	free(f.p);
}

/* Random damage to a file of several frames with checksums: the scan returns the original
 * bytes as far as it says they are verified, and -EIO or the end; an end short of the data
 * comes with a notice (a frame that became trailing garbage).  Decoders return the original
 * bytes or -EIO.  Never a crash or a hang. */
static void test_random_damage(const uint8_t *data, size_t len)
{
	struct zfile f = {0};
	struct scan_res good, r;
	uint8_t *bad, *buf = malloc(len);
	uint32_t x = 4242;

	for (size_t off = 0, k = 0; off < len; k++) {
		size_t n = 20000 + (k * 7919) % 30000;

		if (n > len - off)
			n = len - off;
		zf_frame(&f, data + off, n, k % 3 != 1, true);
		off += n;
	}
	bad = malloc(f.len);
	CHECK_EQ(scan(f.p, f.len, 2, 1 << 20, &good), 0);
	CHECK(good.len == len && memcmp(good.out, data, len) == 0);
	quiet = true;
	for (int i = 0; i < 300; i++) {
		memcpy(bad, f.p, f.len);
		x = x * 1103515245 + 12345;
		if (i % 5 == 4) { /* a run of junk */
			size_t at = (x >> 8) % (f.len - 16);
			tu_fill(bad + at, 16, x, 0);
		} else {
			for (int k = 0; k <= i % 3; k++) {
				x = x * 1103515245 + 12345;
				bad[(x >> 8) % f.len] ^= (uint8_t)(1u << (x % 8));
			}
		}
		log_reset();
		ssize_t rc = scan(bad, f.len, 1 + (unsigned)(i % 3), i % 2 ? 65536 : 1 << 20, &r);
		CHECK(rc == 0 || rc == -EIO);
		if (rc == 0) {
			CHECK(r.len <= len && memcmp(r.out, data, r.len) == 0);
			if (r.len < len)
				CHECK(nlog[TFS_LOG_NOTICE] >= 1);
		} else {
			CHECK(r.verified <= len && memcmp(r.out, data, r.verified) == 0);
		}
		res_free(&r);

		struct src *in = src_from_mem(bad, f.len);
		for (size_t k = (size_t)i % 2; k < good.ncks; k += 2) {
			struct codec_ckpt ck = good.cks[k].c;
			struct codec_dec *d;
			uint64_t got = 0;
			ssize_t n = 0;

			ck.ulen = (k + 1 < good.ncks ? good.cks[k + 1].c.uoff : len) - ck.uoff;
			if (codec_zstd.dec_new(in, &ck, NULL, 0, &d))
				continue;
			while (got < len && (n = codec_zstd.dec_read(d, buf + got, len - got)) > 0)
				got += (uint64_t)n;
			CHECK(n == 0 || n == -EIO);
			if (n == 0)
				CHECK(got == ck.ulen && memcmp(buf, data + ck.uoff, got) == 0);
			codec_zstd.dec_free(d);
		}
		src_free(in);
	}
	quiet = false;
	res_free(&good);
	free(buf);
	free(bad);
	free(f.p);
}

/* A frame with a raw last block of 5 bytes and the header given. */
static size_t hostile_frame(uint8_t *out, const uint8_t *hdr, size_t hlen)
{
	static const uint8_t block[] = {0x29, 0, 0, 'h', 'e', 'l', 'l', 'o'}; /* raw, last, 5 */

	put_le32(out, 0xFD2FB528);
	memcpy(out + 4, hdr, hlen);
	memcpy(out + 4 + hlen, block, sizeof(block));
	return 4 + hlen + sizeof(block);
}

static void test_hostile(const uint8_t *data, size_t len)
{
	uint8_t z[64];
	size_t zlen;
	struct scan_res r, good;
	struct codec_dec *d;
	struct src *in;

	/* a 4 GiB window (window log 32): refused with a clear message, not allocated */
	zlen = hostile_frame(z, (const uint8_t[]){0x00, 22 << 3}, 2);
	for (unsigned threads = 1; threads <= 2; threads++) {
		log_reset();
		CHECK_EQ(scan(z, zlen, threads, 4096, &r), -EIO);
		CHECK_EQ(r.len, 0);
		CHECK(strstr(last_err, "refusing") != NULL);
		CHECK_EQ(nlog[TFS_LOG_ERR], 1);
		res_free(&r);
	}
	/* the largest window log there is (41) */
	zlen = hostile_frame(z, (const uint8_t[]){0x00, 0xff}, 2);
	CHECK_EQ(scan(z, zlen, 1, 4096, &r), -EIO);
	CHECK(strstr(last_err, "refusing") != NULL);
	res_free(&r);
	/* 2 GiB (log 31) is allowed: with a small content size nothing big is allocated */
	zlen = hostile_frame(z, (const uint8_t[]){0x80, 21 << 3, 5, 0, 0, 0}, 6);
	log_reset();
	CHECK_EQ(scan(z, zlen, 1, 4096, &r), 0);
	CHECK(r.len == 5 && memcmp(r.out, "hello", 5) == 0);
	res_free(&r);
	/* a dictionary */
	zlen = hostile_frame(z, (const uint8_t[]){0x01, 0x50, 0x07}, 3);
	log_reset();
	CHECK_EQ(scan(z, zlen, 2, 4096, &r), -EIO);
	CHECK(strstr(last_err, "dictionary") != NULL);
	res_free(&r);
	/* the reserved bit */
	zlen = hostile_frame(z, (const uint8_t[]){0x08, 0x50}, 2);
	CHECK_EQ(scan(z, zlen, 1, 4096, &r), -EIO);
	CHECK(strstr(last_err, "reserved") != NULL);
	res_free(&r);
	/* a reserved block type */
	zlen = hostile_frame(z, (const uint8_t[]){0x00, 0x50}, 2);
	z[6] = 0x2f; /* type 3, last */
	CHECK_EQ(scan(z, zlen, 2, 4096, &r), -EIO);
	res_free(&r);
	CHECK_EQ(scan(z, zlen, 1, 4096, &r), -EIO);
	res_free(&r);
	/* a block size over 128 KiB */
	zlen = hostile_frame(z, (const uint8_t[]){0x00, 0x50}, 2);
	z[6] = 0x01;
	z[7] = 0x00;
	z[8] = 0x20; /* raw, last, 262144 bytes */
	CHECK_EQ(scan(z, zlen, 2, 4096, &r), -EIO);
	res_free(&r);

	/* checkpoints that do not point at a frame, or do not match it */
	struct zfile f = {0};
	zf_frame(&f, data, len / 2, true, true);
	zf_frame(&f, data + len / 2, len - len / 2, true, true);
	CHECK_EQ(scan(f.p, f.len, 2, 1 << 20, &good), 0);
	CHECK_EQ(good.ncks, 2);
	in = src_from_mem(f.p, f.len); /* the checkpoints below are the first, made to hold both */
	struct codec_ckpt ck = good.cks[0].c;
	ck.ulen = len;
	log_reset();
	ck.coff = 5; /* inside a header */
	CHECK_EQ(codec_zstd.dec_new(in, &ck, NULL, 0, &d), -EIO);
	CHECK(d == NULL);
	ck.coff = f.len + 1000; /* past the end */
	CHECK_EQ(codec_zstd.dec_new(in, &ck, NULL, 0, &d), -EIO);
	ck = good.cks[0].c;
	ck.ulen = len;
	ck.bits = 2;
	CHECK_EQ(codec_zstd.dec_new(in, &ck, NULL, 0, &d), -EINVAL);
	ck.bits = CK_TABLE; /* without aux */
	CHECK_EQ(codec_zstd.dec_new(in, &ck, NULL, 0, &d), -EINVAL);
	ck.bits = 0;
	CHECK_EQ(codec_zstd.dec_new(in, &ck, "abcd", 4, &d), -EINVAL);
	ck.flags = 0;
	CHECK_EQ(codec_zstd.dec_new(in, &ck, NULL, 0, &d), -EINVAL);
	ck = good.cks[0].c;
	ck.clen = 1;
	CHECK_EQ(codec_zstd.dec_new(in, &ck, NULL, 0, &d), -EINVAL);
	/* a chunk said to end inside a frame, or after the data */
	const uint64_t ulens[] = {len / 2 - 1, len / 2 + 1, len - 1, len + 1, 1};
	for (size_t i = 0; i < sizeof(ulens) / sizeof(ulens[0]); i++) {
		uint8_t *buf = malloc(len + 2);
		uint64_t got = 0;
		ssize_t n;

		ck = good.cks[0].c;
		ck.ulen = ulens[i];
		CHECK_EQ(codec_zstd.dec_new(in, &ck, NULL, 0, &d), 0);
		while ((n = codec_zstd.dec_read(d, buf + got, len + 2 - got)) > 0)
			got += (uint64_t)n;
		CHECK_EQ(n, -EIO);
		CHECK(got <= ulens[i] && memcmp(buf, data, got) == 0);
		codec_zstd.dec_free(d);
		free(buf);
	}
	CHECK(nlog[TFS_LOG_ERR] >= 7);
	src_free(in);
	res_free(&good);
	free(f.p);
}

/* A frame whose data runs past the content size its header states, cut short in its data,
 * after a larger frame: libzstd checks the size only at a frame's end, and a DCtx whose buffer
 * the larger frame sized copies the cut raw block on where a fresh decoder (at a checkpoint)
 * fails.  The scan
 * must not keep those bytes as if the cut were the only fault (fuzz_codec_zstd's finding). */
static void test_content_overrun(void)
{
	static const uint8_t rle[] = {0x28, 0xb5, 0x2f, 0xfd, 0x00, 0x79, /* no size, 36 MiB window */
				      0x03, 0x00, 0x08, 'z'};	/* last, RLE, 65536 */
	static const uint8_t hdr[] = {0x28, 0xb5, 0x2f, 0xfd, 0x40, 0x50, 0, 0}; /* says 256 */
	static const uint8_t raw4k[] = {0x00, 0x80, 0x00}; /* a raw block of 4096, not the last */
	static uint8_t want[65536];
	struct zfile f = {0};
	struct scan_res r;

	memset(want, 'z', sizeof(want));
	zf_put(&f, rle, sizeof(rle)); /* its window sizes the DCtx's buffer */
	zf_put(&f, hdr, sizeof(hdr));
	zf_put(&f, raw4k, sizeof(raw4k));
	zf_put(&f, want, 300); /* cut: libzstd streams a raw block as it comes */
	for (unsigned threads = 1; threads <= 2; threads++) {
		log_reset();
		CHECK_EQ(scan(f.p, f.len, threads, 65536, &r), -EIO);
		/* damage, not a cut (with two threads a worker's fresh DCtx may fail first) */
		CHECK(strstr(last_err, "truncated") == NULL);
		if (threads == 1) /* one DCtx, sized by the first frame: only our check stops it */
			CHECK(strstr(last_err, "decodes past the 256 bytes") != NULL);
		CHECK_EQ(r.verified, 65536); /* the first frame, not the overrun */
		CHECK(r.len <= 65536 && memcmp(r.out, want, r.len) == 0);
		res_free(&r);
	}
	free(f.p);
}

static void test_sink_error_and_free(const uint8_t *data, size_t len)
{
	struct zfile f = {0};
	struct scan_res r;
	struct src *in;
	size_t per = 600000, off = 0;

	while (off < 4 * len) {
		size_t n = per < 4 * len - off ? per : 4 * len - off;
		size_t at = off % len;

		if (n > len - at)
			n = len - at;
		zf_frame(&f, data + at, n, true, true);
		off += n;
	}
	in = src_from_mem(f.p, f.len);
	for (unsigned threads = 1; threads <= 3; threads += 2) {
		CHECK_EQ(scan_src(in, threads, 1 << 20, 2, &r), -ENOSPC);
		CHECK_EQ(r.ncks, 1);
		res_free(&r);
	}

	/* freeing a scan early, with workers waiting or busy */
	for (unsigned threads = 1; threads <= 8; threads *= 2) {
		struct codec_opts opts = {.threads = threads};
		struct codec_sink sink = {.checkpoint = sink_fn, .opaque = &r};
		struct codec_scan *s;
		uint8_t buf[1000];

		memset(&r, 0, sizeof(r));
		r.reader = pthread_self();
		CHECK_EQ(codec_zstd.scan_new(in, &opts, &sink, &s), 0);
		codec_zstd.scan_free(s);
		CHECK_EQ(codec_zstd.scan_new(in, &opts, &sink, &s), 0);
		CHECK_EQ(codec_zstd.scan_read(s, buf, sizeof(buf)), sizeof(buf));
		CHECK(memcmp(buf, data, sizeof(buf)) == 0);
		usleep(20000);
		codec_zstd.scan_free(s);
		res_free(&r);
	}
	codec_zstd.scan_free(NULL);
	codec_zstd.dec_free(NULL);
	src_free(in);
	free(f.p);
}

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
	test_damage(data, len);
	test_seek_table_damage(data, len);
	test_truncation(data, len);
	test_zero_length();
	test_garbage(data, len);
	test_random_damage(data, len / 4);
	test_hostile(data, len);
	test_content_overrun();
	test_sink_error_and_free(data, len);
	free(data);
	return tu_exit();
}

int main(void)
{
	return test();
}
