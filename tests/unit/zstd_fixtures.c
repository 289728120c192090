/* What the zstd codec's unit tests share (zstd_fixtures.h). */
#include "zstd_fixtures.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zstd.h>

/* ---- log capture ---- */

unsigned long nlog[8];
char last_err[1024];
bool quiet; /* hundreds of expected messages */

void log_sink(int level, const char *msg, void *opaque)
{
	(void)opaque;
	if (level >= 0 && level < 8)
		nlog[level]++;
	if (level == TFS_LOG_ERR)
		snprintf(last_err, sizeof(last_err), "%s", msg);
	if (!quiet)
		fprintf(stderr, "  [log %d] %s\n", level, msg);
}

void log_reset(void)
{
	memset(nlog, 0, sizeof(nlog));
	last_err[0] = '\0';
}

/* ---- scanning, with checks of the sink contract ---- */



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

void free_cks(struct ck *cks, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(cks[i].aux);
	free(cks);
}

int sink_fn(void *opaque, const struct codec_ckpt *c, const void *aux, size_t auxlen)
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

void res_free(struct scan_res *r)
{
	free_cks(r->cks, r->ncks);
	free(r->out);
	memset(r, 0, sizeof(*r));
}

/* Scans the source whole in reads of step bytes.  Returns the final scan_read result. */
ssize_t scan_src(struct src *in, unsigned threads, size_t step, int fail_at,
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

ssize_t scan(const uint8_t *z, size_t len, unsigned threads, size_t step, struct scan_res *r)
{
	struct src *in = src_from_mem(z, len);
	ssize_t n = scan_src(in, threads, step, 0, r);

	src_free(in);
	return n;
}

bool same_ck(const struct ck *a, const struct ck *b)
{
	return a->c.uoff == b->c.uoff && a->c.coff == b->c.coff && a->c.clen == b->c.clen &&
	       a->c.extra == b->c.extra && a->c.bits == b->c.bits && a->c.flags == b->c.flags &&
	       a->auxlen == b->auxlen && (!a->auxlen || memcmp(a->aux, b->aux, a->auxlen) == 0);
}

void check_same_cks(const struct ck *a, size_t na, const struct ck *b, size_t nb)
{
	CHECK_EQ(na, nb);
	for (size_t i = 0; i < na && i < nb; i++)
		CHECK(same_ck(&a[i], &b[i]));
}

/* Decodes checkpoint i's chunk (its length from the next checkpoint, or end) and compares it
 * with want (unless NULL): the first 3000 bytes one at a time, the rest in odd-sized reads.
 * Returns the decoder's final result (0 at the chunk's end). */
ssize_t decode_chunk(const uint8_t *z, size_t zlen, const struct ck *cks, size_t ncks,
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


static int ib_sink(void *opaque, const struct codec_ckpt *c, const void *aux, size_t auxlen)
{
	struct ib_res *r = opaque;

	add_ck(&r->cks, &r->ncks, c, aux, auxlen);
	return 0;
}

int index_blocks(const uint8_t *z, size_t zlen, struct ib_res *r)
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

uint8_t *make_data(size_t len, uint32_t seed)
{
	uint8_t *b = malloc(len ? len : 1);

	tu_fill(b, len, seed, 1);
	/* stretches of noise, so some blocks are stored raw */
	for (size_t off = 50000; off + 30000 < len; off += 400000)
		tu_fill(b + off, 30000, seed + (uint32_t)off, 0);
	return b;
}

uint8_t *run(const char *cmd, const void *in, size_t len, size_t *outlen)
{
	uint8_t *out = tu_pipe(cmd, in, len, outlen);

	if (!out) {
		fprintf(stderr, "cannot run: %s\n", cmd);
		exit(1);
	}
	return out;
}

uint8_t *dup_buf(const uint8_t *b, size_t len, size_t extra)
{
	uint8_t *d = malloc(len + extra + 1);

	memcpy(d, b, len);
	return d;
}

static uint32_t le32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

void put_le32(uint8_t *p, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

/* One frame of in[0..len) by libzstd. */
uint8_t *lz_frame(const uint8_t *in, size_t len, int level, bool csize, bool sum,
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


void zf_put(struct zfile *f, const void *b, size_t n)
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
void zf_frame(struct zfile *f, const uint8_t *data, size_t n, bool csize, bool own)
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

void zf_skippable(struct zfile *f, unsigned variant, uint32_t size)
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
size_t check_good(const char *what, const uint8_t *z, size_t zlen, const uint8_t *want,
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


void make_seekable(struct zfile *f, const uint8_t *data, size_t len, const size_t *fsizes,
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
