/* Unit tests of the gzip codec (codecs/gzip/), on data made by the real tools (gzip, pigz)
 * and by zlib itself (header extras), all in memory.
 *
 * Every good stream is scanned whole with a small spacing (many checkpoints), compared with
 * the original, and then decoded from every checkpoint to a bit past the next one.  Damaged
 * streams (flipped bytes, truncations, garbage) must fail with -EIO or, where the damage is
 * harmless, give the original bytes; never anything else, never a crash or a hang.
 *
 * Everything runs once with each inflater (zlib's, and ISA-L's when built in).  Then the two
 * are compared: every checkpoint the ISA-L scan finds by its hunt must be a block boundary
 * that zlib's Z_BLOCK walk reports (at the same bit, with the same output before it), the
 * hunt must find about as many as zlib's scan, and each engine's decoders must resume at the
 * other's checkpoints.
 */
#include "codecs/codec.h"
#include "codecs/gzip/gzip_sparse.h"
#include "codecs/gzip/inflater.h"
#include "common/log.h"
#include "testutil.h"

#include <dirent.h>
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <string.h>
#include <zlib.h>

#define SPACING (64u << 10)

/* ---- log capture ---- */

static unsigned long nlog[8];

static void log_sink(int level, const char *msg, void *opaque)
{
	if (level >= 0 && level < 8)
		nlog[level]++;
	fprintf(stderr, "  [log %d] %s\n", level, msg);
}

static void log_reset(void)
{
	memset(nlog, 0, sizeof(nlog));
}

/* ---- scanning with checks of the sink contract ---- */

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
	bool has_name;
	char name[256];
	/* sink checks */
	pthread_t reader;
	size_t returned; /* bytes scan_read has returned so far */
	int contract_errors;
};

static int sink_fn(void *opaque, const struct codec_ckpt *c, const void *aux, size_t auxlen)
{
	struct scan_res *r = opaque;

	if (!pthread_equal(pthread_self(), r->reader))
		r->contract_errors++; /* sink called from another thread */
	if (r->ncks == 0 && c->uoff != 0)
		r->contract_errors++; /* the first checkpoint is at 0 */
	if (r->ncks && c->uoff <= r->cks[r->ncks - 1].c.uoff)
		r->contract_errors++; /* increasing uoff */
	if (c->uoff < r->returned)
		r->contract_errors++; /* emitted before any byte at or after it */
	r->cks = realloc(r->cks, (r->ncks + 1) * sizeof(*r->cks));
	r->cks[r->ncks].c = *c;
	r->cks[r->ncks].auxlen = auxlen;
	r->cks[r->ncks].aux = NULL;
	if (auxlen) {
		r->cks[r->ncks].aux = malloc(auxlen);
		memcpy(r->cks[r->ncks].aux, aux, auxlen);
	}
	r->ncks++;
	return 0;
}

static void res_free(struct scan_res *r)
{
	for (size_t i = 0; i < r->ncks; i++)
		free(r->cks[i].aux);
	free(r->cks);
	free(r->out);
	memset(r, 0, sizeof(*r));
}

/* Scans gz whole, reading in pieces of step bytes (0: sizes that vary, so that an inline scan
 * switches between inflating into the caller's buffer and copying from its own).  Returns
 * the final scan_read result. */
static ssize_t scan(const uint8_t *gz, size_t gzlen, uint64_t spacing, unsigned threads,
		    size_t step, struct scan_res *r)
{
	struct src *in = src_from_mem(gz, gzlen);
	struct codec_opts opts = {.spacing = spacing, .threads = threads};
	struct codec_sink sink = {.checkpoint = sink_fn, .opaque = r};
	struct codec_scan *s;
	size_t cap = 1 << 16;
	ssize_t n;
	int err;

	memset(r, 0, sizeof(*r));
	r->reader = pthread_self();
	r->out = malloc(cap);
	err = codec_gzip.scan_new(in, &opts, &sink, &s);
	CHECK_EQ(err, 0);
	if (err) {
		src_free(in);
		return err;
	}
	const char *nm = codec_gzip.scan_name(s);
	if (nm) {
		snprintf(r->name, sizeof(r->name), "%s", nm);
		r->has_name = true;
	}
	static const size_t steps[] = {65536, 4097, 1, 200000, 777, 65535};
	size_t maxstep = step ? step : 200000;
	for (unsigned k = 0;; k++) {
		size_t want = step ? step : steps[k % 6];
		if (r->len + maxstep > cap) {
			cap = (r->len + maxstep) * 2;
			r->out = realloc(r->out, cap);
		}
		n = codec_gzip.scan_read(s, r->out + r->len, want);
		if (n <= 0)
			break;
		CHECK(n <= (ssize_t)want);
		r->len += (size_t)n;
		r->returned = r->len;
	}
	r->rc = n;
	/* errors and the end are sticky */
	CHECK_EQ(codec_gzip.scan_read(s, r->out, maxstep), n);
	r->verified = codec_gzip.scan_verified(s);
	CHECK(r->verified <= r->len);
	if (n == 0)
		CHECK_EQ(r->verified, r->len);
	CHECK_EQ(r->contract_errors, 0);
	codec_gzip.scan_free(s);
	src_free(in);
	return n;
}

/* Decodes from checkpoint k: its chunk, then up to extra bytes past its end; compares. */
static void check_ck(const uint8_t *gz, size_t gzlen, const struct scan_res *r, size_t k,
		     const uint8_t *orig, size_t origlen, size_t extra)
{
	const struct ck *c = &r->cks[k];
	uint64_t end = k + 1 < r->ncks ? r->cks[k + 1].c.uoff : origlen;
	struct src *in = src_from_mem(gz, gzlen);
	struct codec_ckpt ck = c->c;
	struct codec_dec *d;
	uint8_t *buf;
	size_t want, got = 0;
	ssize_t n;
	int err;

	ck.ulen = end - ck.uoff;
	err = codec_gzip.dec_new(in, &ck, c->aux, c->auxlen, &d);
	CHECK_EQ(err, 0);
	if (err) {
		src_free(in);
		return;
	}
	CHECK(codec_gzip.dec_memory(d) > 0);
	want = (size_t)(end - ck.uoff) + extra;
	if (ck.uoff + want > origlen)
		want = origlen - (size_t)ck.uoff;
	buf = malloc(want + 1);
	while (got < want) {
		n = codec_gzip.dec_read(d, buf + got, want - got < 7777 ? want - got : 7777);
		CHECK(n > 0);
		if (n <= 0)
			break;
		got += (size_t)n;
	}
	CHECK_EQ(got, want);
	CHECK(memcmp(buf, orig + ck.uoff, got) == 0);
	if (ck.uoff + got == origlen) /* at the end: 0, and 0 again */
		for (int i = 0; i < 2; i++)
			CHECK_EQ(codec_gzip.dec_read(d, buf, 1), 0);
	free(buf);
	codec_gzip.dec_free(d);
	src_free(in);
}

/* The windows of r's checkpoints are sparse windows of orig: every byte is the one before the
 * checkpoint, or 0.  Adds the bytes kept (non-zero, or zero in orig too) and the total to
 * *kept and *total. */
static void check_windows(const struct scan_res *r, const uint8_t *orig, size_t *kept,
			  size_t *total)
{
	uint8_t *w = malloc(32768);

	for (size_t i = 0; i < r->ncks; i++) {
		const struct ck *c = &r->cks[i];
		uLongf wl = 32768;
		if (!c->c.extra)
			continue;
		CHECK_EQ(uncompress(w, &wl, c->aux, (uLong)c->auxlen), Z_OK);
		CHECK_EQ(wl, c->c.extra);
		const uint8_t *o = orig + c->c.uoff - c->c.extra;
		for (size_t j = 0; j < wl; j++) {
			CHECK(w[j] == o[j] || w[j] == 0);
			*kept += w[j] == o[j];
		}
		*total += wl;
	}
	free(w);
}

/* The full check of a good stream: scan (threads 1 and 2, two read sizes), compare, the same
 * checkpoints both ways, and a decode from every checkpoint.  Returns the number of checkpoints
 * (those of the threads=1 scan, left in *keep if not NULL). */
static size_t check_good(const char *what, const uint8_t *gz, size_t gzlen, const uint8_t *orig,
			 size_t origlen, uint64_t spacing, struct scan_res *keep)
{
	struct scan_res a, b;
	size_t n;

	fprintf(stderr, "%s: %zu -> %zu bytes\n", what, origlen, gzlen);
	CHECK(codec_gzip.probe(gz, gzlen < 512 ? gzlen : 512));
	CHECK_EQ(scan(gz, gzlen, spacing, 1, 65536, &a), 0);
	CHECK_EQ(a.len, origlen);
	CHECK(a.len == origlen && memcmp(a.out, orig, origlen) == 0);
	CHECK(a.ncks >= 1);
	if (a.ncks) {
		CHECK_EQ(a.cks[0].c.uoff, 0);
		CHECK_EQ(a.cks[0].c.coff, 0);
		CHECK_EQ(a.cks[0].c.flags & 1, 1);
	}
	for (size_t i = 0; i < a.ncks; i++) {
		const struct codec_ckpt *c = &a.cks[i].c;
		CHECK(c->uoff < origlen || (origlen == 0 && c->uoff == 0));
		CHECK(c->coff <= gzlen);
		CHECK(c->bits <= 7);
		CHECK(c->extra <= 32768);
		CHECK((c->extra == 0) == (a.cks[i].auxlen == 0));
		if (c->flags & 1)
			CHECK(c->bits == 0 && c->extra == 0);
		else
			CHECK(c->extra > 0);
	}
	size_t kept = 0, total = 0;
	check_windows(&a, orig, &kept, &total);

	/* threads = 2 and an odd read size, and inline with varying sizes: the same bytes and
	 * the same checkpoints */
	for (int pass = 0; pass < 2; pass++) {
		CHECK_EQ(scan(gz, gzlen, spacing, pass ? 1 : 2, pass ? 0 : 4097, &b), 0);
		CHECK_EQ(b.len, origlen);
		CHECK(b.len == origlen && memcmp(b.out, orig, origlen) == 0);
		CHECK_EQ(b.ncks, a.ncks);
		for (size_t i = 0; i < a.ncks && i < b.ncks; i++) {
			const struct ck *x = &a.cks[i], *y = &b.cks[i];
			CHECK(memcmp(&x->c, &y->c, sizeof(x->c)) == 0);
			CHECK_EQ(x->auxlen, y->auxlen);
			CHECK(x->auxlen == y->auxlen &&
			      (!x->auxlen || !memcmp(x->aux, y->aux, x->auxlen)));
		}
		CHECK(a.has_name == b.has_name && strcmp(a.name, b.name) == 0);
		res_free(&b);
	}

	/* every checkpoint: to the next and 64 KiB across it; from the first and the last to
	 * the end (offset 0 and the last byte) */
	for (size_t i = 0; i < a.ncks; i++)
		check_ck(gz, gzlen, &a, i, orig, origlen, 65536);
	if (a.ncks) {
		check_ck(gz, gzlen, &a, 0, orig, origlen, origlen);
		check_ck(gz, gzlen, &a, a.ncks - 1, orig, origlen, origlen);
	}
	n = a.ncks;
	size_t members = 0;
	for (size_t i = 0; i < a.ncks; i++)
		members += a.cks[i].c.flags & 1;
	fprintf(stderr, "  %zu checkpoints, %zu at member starts; %zu of %zu window bytes kept\n", n,
		members, kept, total);
	if (keep)
		*keep = a;
	else
		res_free(&a);
	return n;
}

/* ---- making data ---- */

static uint8_t *tool(const char *cmd, const uint8_t *in, size_t inlen, size_t *outlen)
{
	uint8_t *out = tu_pipe(cmd, in, inlen, outlen);

	if (!out) {
		fprintf(stderr, "cannot run: %s\n", cmd);
		exit(1);
	}
	return out;
}

static uint8_t *cat2(const uint8_t *a, size_t alen, const uint8_t *b, size_t blen, size_t *len)
{
	uint8_t *o = malloc(alen + blen + 1);

	memcpy(o, a, alen);
	memcpy(o + alen, b, blen);
	*len = alen + blen;
	return o;
}

/* Text-like bytes that compress about 3:1 (tu_fill's text alone compresses so well that
 * deflate blocks hold hundreds of KiB and checkpoints would be few). */
static void text_fill(uint8_t *b, size_t len, uint32_t seed)
{
	uint32_t x = seed * 2246822519u + 7;

	tu_fill(b, len, seed, 1);
	for (size_t i = 0; i < len; i += 1 + x % 23) {
		x ^= x << 13;
		x ^= x >> 17;
		x ^= x << 5;
		b[i] = (uint8_t)('a' + x % 26);
	}
}

/* Text with a stretch of noise in the middle, so gzip writes stored blocks between
 * compressed ones. */
static uint8_t *mixed(size_t len, uint32_t seed)
{
	uint8_t *b = malloc(len);

	text_fill(b, len, seed);
	tu_fill(b + len / 3, len / 4, seed + 1, 0);
	return b;
}

/* A gzip member written by zlib: with FEXTRA, FNAME, FCOMMENT and FHCRC (extras), else with
 * a header of 10 bytes, and with the given deflate strategy (Z_FIXED: fixed-Huffman blocks
 * only) and memLevel (8 is zlib's default; 3 makes blocks of 512 symbols, a few KiB each). */
static uint8_t *zlib_gzip(const uint8_t *in, size_t inlen, int strategy, int mem_level,
			  bool extras, size_t *outlen)
{
	static uint8_t extra[] = {'T', 'S', 4, 0, 1, 2, 3, 4};
	gz_header h;
	z_stream z;
	size_t cap = compressBound(inlen) + inlen / 8 + 1024;
	uint8_t *out = malloc(cap);

	memset(&z, 0, sizeof(z));
	memset(&h, 0, sizeof(h));
	CHECK_EQ(deflateInit2(&z, 6, Z_DEFLATED, 31, mem_level, strategy), Z_OK);
	if (extras) {
		h.extra = extra;
		h.extra_len = sizeof(extra);
		h.name = (Bytef *)"archive.tar";
		h.comment = (Bytef *)"made by test_gzip with every header field";
		h.hcrc = 1;
		h.os = 3;
		CHECK_EQ(deflateSetHeader(&z, &h), Z_OK);
	}
	z.next_in = (Bytef *)in;
	z.avail_in = (uInt)inlen;
	z.next_out = out;
	z.avail_out = (uInt)cap;
	CHECK_EQ(deflate(&z, Z_FINISH), Z_STREAM_END);
	*outlen = cap - z.avail_out;
	deflateEnd(&z);
	return out;
}

static uint8_t *zlib_gzip_extras(const uint8_t *in, size_t inlen, size_t *outlen)
{
	return zlib_gzip(in, inlen, Z_DEFAULT_STRATEGY, 8, true, outlen);
}

/* A gzip member from zlib, with a Z_SYNC_FLUSH every chunk bytes and after the last byte,
 * so that the member ends with an empty stored block and an empty last block (what pigz and
 * flushing writers make): a block boundary with no data after it. */
static uint8_t *zlib_gzip_flushed(const uint8_t *in, size_t inlen, size_t chunk, size_t *outlen)
{
	z_stream z;
	size_t cap = compressBound(inlen) + 5 * (inlen / chunk + 2) + 64, off = 0;
	uint8_t *out = malloc(cap);

	memset(&z, 0, sizeof(z));
	CHECK_EQ(deflateInit2(&z, 6, Z_DEFLATED, 31, 8, Z_DEFAULT_STRATEGY), Z_OK);
	z.next_out = out;
	z.avail_out = (uInt)cap;
	while (off < inlen) {
		size_t n = inlen - off < chunk ? inlen - off : chunk;
		z.next_in = (Bytef *)in + off;
		z.avail_in = (uInt)n;
		CHECK_EQ(deflate(&z, Z_SYNC_FLUSH), Z_OK);
		off += n;
	}
	CHECK_EQ(deflate(&z, Z_FINISH), Z_STREAM_END);
	*outlen = cap - z.avail_out;
	deflateEnd(&z);
	return out;
}

/* Offset of the deflate data of a gzip member (just after the header). */
static size_t header_len(const uint8_t *gz)
{
	size_t p = 10;
	uint8_t f = gz[3];

	if (f & 4)
		p += 2 + (gz[p] | gz[p + 1] << 8);
	if (f & 8)
		while (gz[p++])
			;
	if (f & 16)
		while (gz[p++])
			;
	if (f & 2)
		p += 2;
	return p;
}

/* ---- the two inflaters ---- */

struct boundary {
	uint64_t uoff, coff;
	uint32_t bits;
};

/* Every block boundary of a gzip file (all members), by zlib's Z_BLOCK: an oracle that does
 * not use the codec.  Returns the count; *out is malloc'd. */
static size_t zlib_boundaries(const uint8_t *gz, size_t gzlen, struct boundary **out)
{
	z_stream zs = {0};
	size_t n = 0, cap = 1024, off = 0;
	uint64_t uoff = 0;
	uint8_t *buf = malloc(1 << 16);
	struct boundary *b = malloc(cap * sizeof(*b));

	CHECK_EQ(inflateInit2(&zs, 31), Z_OK);
	while (off < gzlen && gz[off] == 0x1f) {
		int ret;
		inflateReset(&zs);
		zs.next_in = (Bytef *)gz + off;
		zs.avail_in = (uInt)(gzlen - off);
		do {
			zs.next_out = buf;
			zs.avail_out = 1 << 16;
			ret = inflate(&zs, Z_BLOCK);
			uoff += (1 << 16) - zs.avail_out;
			if (ret == Z_OK && (zs.data_type & 0xc0) == 0x80) {
				if (n == cap)
					b = realloc(b, (cap *= 2) * sizeof(*b));
				uint64_t at = (uint64_t)(zs.next_in - gz) * 8 - (zs.data_type & 7);
				b[n++] = (struct boundary){uoff, (at + 7) / 8, (uint32_t)((8 - at % 8) % 8)};
			}
		} while (ret == Z_OK);
		CHECK_EQ(ret, Z_STREAM_END);
		if (ret != Z_STREAM_END)
			break;
		off = (size_t)(zs.next_in - gz);
	}
	inflateEnd(&zs);
	free(buf);
	*out = b;
	return n;
}

/* How many of r's checkpoints that are not member starts are not boundaries of all[]. */
static size_t off_boundaries(const struct scan_res *r, const struct boundary *all, size_t n)
{
	size_t bad = 0, j = 0;

	for (size_t i = 0; i < r->ncks; i++) {
		const struct codec_ckpt *c = &r->cks[i].c;
		bool found = false;
		if (c->flags & 1)
			continue;
		while (j < n && all[j].uoff < c->uoff)
			j++;
		for (size_t k = j; k < n && all[k].uoff == c->uoff; k++)
			found |= all[k].coff == c->coff && all[k].bits == c->bits;
		if (!found) {
			fprintf(stderr, "  checkpoint at %llu (compressed %llu, %u bits) is no boundary\n",
				(unsigned long long)c->uoff, (unsigned long long)c->coff, c->bits);
			bad++;
		}
	}
	return bad;
}

static uint8_t *self_exe(size_t *len)
{
	FILE *f = fopen("/proc/self/exe", "rb");
	size_t cap = 1 << 20, n = 0, k;
	uint8_t *b = malloc(cap);

	CHECK(f != NULL);
	while (f && (k = fread(b + n, 1, cap - n, f)) > 0)
		if ((n += k) == cap)
			b = realloc(b, cap *= 2);
	if (f)
		fclose(f);
	*len = n;
	return b;
}

/* Real text: the C headers of /usr/include (there on every machine that builds this), up to
 * max bytes. */
static uint8_t *headers_text(size_t max, size_t *len)
{
	DIR *d = opendir("/usr/include");
	uint8_t *b = malloc(max);
	struct dirent *e;
	size_t n = 0;

	CHECK(d != NULL);
	while (d && n < max && (e = readdir(d))) {
		char path[512];
		size_t l = strlen(e->d_name);
		FILE *f;
		if (l < 3 || strcmp(e->d_name + l - 2, ".h"))
			continue;
		snprintf(path, sizeof(path), "/usr/include/%s", e->d_name);
		if ((f = fopen(path, "rb"))) {
			n += fread(b + n, 1, max - n, f);
			fclose(f);
		}
	}
	if (d)
		closedir(d);
	*len = n;
	return b;
}

/* One file: the ISA-L scan's checkpoints are boundaries, nearly as many as zlib's; each
 * engine resumes at the other's. */
static void check_engines(const char *what, const uint8_t *gz, size_t gzlen, const uint8_t *orig,
			  size_t origlen, bool small_hdr)
{
	struct boundary *all;
	size_t n = zlib_boundaries(gz, gzlen, &all);
	struct scan_res z, x, x1;

	infl_set_default(INFL_ZLIB);
	CHECK_EQ(scan(gz, gzlen, SPACING, 2, 65536, &z), 0);
	infl_set_default(INFL_ISAL);
	CHECK_EQ(scan(gz, gzlen, SPACING, 2, 65536, &x), 0);
	CHECK_EQ(scan(gz, gzlen, 1, 1, 65536, &x1), 0); /* a hunt after every byte */
	CHECK(x.len == origlen && memcmp(x.out, orig, origlen) == 0);
	fprintf(stderr, "%s: %zu boundaries; checkpoints at spacing %u: zlib %zu, ISA-L %zu; "
		"ISA-L at spacing 1: %zu\n", what, n, SPACING, z.ncks, x.ncks, x1.ncks);
	CHECK_EQ(off_boundaries(&x, all, n), 0);
	CHECK_EQ(off_boundaries(&x1, all, n), 0);
	CHECK_EQ(off_boundaries(&z, all, n), 0);
	/* A hunt that misses a boundary takes the next one (or zlib stands in after
	 * INFL_HUNT_MAX): on files with headers of a usual size, at a spacing of several
	 * blocks, about as many checkpoints as zlib's; at least half where the headers are
	 * short (small_hdr: the synthetic text's, fixed-Huffman ones of 3 bits) */
	{
		struct scan_res zw, xw;
		infl_set_default(INFL_ZLIB);
		CHECK_EQ(scan(gz, gzlen, 4 * SPACING, 2, 65536, &zw), 0);
		infl_set_default(INFL_ISAL);
		CHECK_EQ(scan(gz, gzlen, 4 * SPACING, 2, 65536, &xw), 0);
		fprintf(stderr, "  at spacing %u: zlib %zu, ISA-L %zu\n", 4 * SPACING, zw.ncks,
			xw.ncks);
		CHECK(xw.ncks * 4 >= zw.ncks * (small_hdr ? 2 : 3));
		CHECK_EQ(off_boundaries(&xw, all, n), 0);
		res_free(&zw);
		res_free(&xw);
	}
	/* the same checkpoint found by both: the same window */
	for (size_t i = 0, j = 0; i < x.ncks; i++) {
		while (j < z.ncks && z.cks[j].c.uoff < x.cks[i].c.uoff)
			j++;
		if (j < z.ncks && !memcmp(&z.cks[j].c, &x.cks[i].c, sizeof(z.cks[j].c)))
			CHECK(z.cks[j].auxlen == x.cks[i].auxlen &&
			      (!x.cks[i].auxlen ||
			       !memcmp(z.cks[j].aux, x.cks[i].aux, x.cks[i].auxlen)));
	}
	/* ISA-L's checkpoints decoded by zlib, zlib's by ISA-L */
	infl_set_default(INFL_ZLIB);
	for (size_t i = 0; i < x.ncks; i++)
		check_ck(gz, gzlen, &x, i, orig, origlen, 4096);
	infl_set_default(INFL_ISAL);
	for (size_t i = 0; i < z.ncks; i++)
		check_ck(gz, gzlen, &z, i, orig, origlen, 4096);
	for (size_t i = 0; i < x1.ncks; i += 1 + x1.ncks / 200)
		check_ck(gz, gzlen, &x1, i, orig, origlen, 0);
	res_free(&z);
	res_free(&x);
	res_free(&x1);
	free(all);
}

/* Hunts on ISA-L as the scan makes them (after each boundary a run of a few KiB, then a
 * hunt), with output rooms far smaller than what a hunt holds back in ISA-L's buffer (16 KiB)
 * and input in pieces of many sizes, over a member of many small blocks: the output is the
 * data, every boundary reported is one of zlib's at the same output offset, its window is the
 * output's last 32 KiB, and the hunts end at a boundary (the input is far below
 * INFL_HUNT_MAX). */
static void test_hunt_small_rooms(void)
{
	static const size_t rooms[] = {100, 777, 20000, 1 << 20};
	size_t hlen, gzlen;
	uint8_t *h = headers_text(512 << 10, &hlen), *win = malloc(INFL_WINSIZE);
	uint8_t *gz = zlib_gzip(h, hlen, Z_DEFAULT_STRATEGY, 3, false, &gzlen);
	const size_t start = 10; /* the deflate data after zlib's plain header */
	struct boundary *all;
	size_t n = zlib_boundaries(gz, gzlen, &all);

	CHECK(n > 100);
	for (size_t ri = 0; ri < sizeof(rooms) / sizeof(rooms[0]); ri++) {
		struct inflater *f = infl_new(INFL_ISAL, true);
		uint8_t *out = malloc(hlen + 1);
		size_t done = 0, found = 0, j = 0, calls = 0, hunts = 0, run_to = 0;
		bool hunting = false;
		uint64_t pos = start;
		int ret = INFL_MORE;
		while (ret != INFL_END && ret >= 0 && calls++ < 10000000) {
			size_t piece = 1 + (calls * 7919) % 9000, room = rooms[ri];
			enum infl_mode mode = done < run_to ? INFL_RUN : INFL_TO_BLOCK;
			if (mode == INFL_TO_BLOCK && !hunting)
				hunts++;
			hunting = mode == INFL_TO_BLOCK;
			if (piece > gzlen - pos)
				piece = (size_t)(gzlen - pos);
			if (room > hlen + 1 - done)
				room = hlen + 1 - done;
			if (mode == INFL_RUN && room > run_to - done)
				room = run_to - done;
			struct infl_io io = {.in = gz + pos, .in_len = piece, .in_off = pos,
					     .out = out + done, .out_len = room};
			ret = infl_run(f, &io, mode);
			pos = io.in_off;
			done += room - io.out_len;
			if (ret == INFL_BLOCK && io.at == start * 8 && done == 0) {
				run_to = 1; /* the first block's header: the stream's start */
				continue;
			}
			if (ret == INFL_BLOCK) {
				while (j < n && all[j].coff * 8 - all[j].bits < io.at)
					j++;
				if (j == n || all[j].coff * 8 - all[j].bits != io.at || all[j].uoff != done) {
					fprintf(stderr, "room %zu: boundary at bit %llu, output %zu: not zlib's\n",
						rooms[ri], (unsigned long long)io.at, done);
					tu_failures++;
				}
				size_t wl = infl_window(f, win), want = done < INFL_WINSIZE ? done : INFL_WINSIZE;
				CHECK(wl == want && memcmp(win, out + done - wl, wl) == 0);
				found++;
				run_to = done + 1 + (found * 104729) % 5000;
			}
		}
		CHECK_EQ(ret, INFL_END);
		CHECK(done == hlen && memcmp(out, h, hlen) == 0);
		fprintf(stderr, "  room %zu: %zu hunts, %zu ended at one of the %zu boundaries\n",
			rooms[ri], hunts, found, n);
		CHECK(found >= 5 && found + 1 >= hunts);
		infl_free(f);
		free(out);
	}
	free(all);
	free(gz);
	free(win);
	free(h);
}

static void test_engines_agree(const uint8_t *text, size_t len)
{
	size_t exelen, gzlen, l1, l2, l3;
	uint8_t *exe = self_exe(&exelen), *noise = malloc(400000), *gz, *a, *b, *c, *m;

	if (!infl_have_isal()) {
		fprintf(stderr, "no ISA-L in this build: the engines are not compared\n");
		free(exe);
		free(noise);
		return;
	}
	gz = tool("gzip -6 -c", text, len, &gzlen);
	check_engines("text, gzip -6", gz, gzlen, text, len, true);
	free(gz);
	size_t hlen;
	uint8_t *h = headers_text(3 << 20, &hlen);
	CHECK(hlen > (1u << 20));
	gz = tool("gzip -6 -c", h, hlen, &gzlen);
	check_engines("real text (/usr/include/*.h), gzip -6", gz, gzlen, h, hlen, false);
	free(gz);
	gz = tool("pigz -9 -p 2 -c", h, hlen, &gzlen);
	check_engines("real text, pigz -9", gz, gzlen, h, hlen, false);
	free(gz);
	free(h);
	gz = tool("gzip -9 -c", exe, exelen, &gzlen);
	check_engines("binary (this test), gzip -9", gz, gzlen, exe, exelen, false);
	free(gz);
	gz = tool("pigz -6 -p 2 -c", text, len, &gzlen);
	check_engines("text, pigz", gz, gzlen, text, len, true);
	free(gz);
	a = tool("gzip -1 -c", text, len / 2, &l1);
	b = tool("pigz -c", exe, exelen, &l2);
	c = tool("gzip -c", text + len / 2, len - len / 2, &l3);
	m = malloc(len + exelen);
	memcpy(m, text, len / 2);
	memcpy(m + len / 2, exe, exelen);
	memcpy(m + len / 2 + exelen, text + len / 2, len - len / 2);
	uint8_t *ab = cat2(a, l1, b, l2, &gzlen), *abc = cat2(ab, gzlen, c, l3, &gzlen);
	check_engines("three members", abc, gzlen, m, len + exelen, true);
	free(a), free(b), free(c), free(ab), free(abc), free(m);
	tu_fill(noise, 400000, 5, 0);
	gz = tool("gzip -6 -c", noise, 400000, &gzlen);
	check_engines("noise (stored blocks)", gz, gzlen, noise, 400000, false);
	free(gz);
	gz = zlib_gzip(text, len, Z_FIXED, 8, false, &gzlen);
	check_engines("text, fixed-Huffman blocks", gz, gzlen, text, len, true);
	free(gz);
	free(noise);
	free(exe);
	test_hunt_small_rooms();
}

/* ---- the tests ---- */

/* Sparse windows (gzip_sparse.c): on real text and a binary, most window bytes go and every
 * checkpoint still decodes (check_good); the worker refuses, leaving the window whole, when
 * the output it is given is not the stream's, when it is too short to decide, and when the
 * compressed bytes cannot be read. */
static void test_sparse_windows(void)
{
	size_t hlen, exelen, gzlen, kept = 0, total = 0;
	uint8_t *h = headers_text(2 << 20, &hlen), *exe = self_exe(&exelen), *gz;
	struct scan_res r;

	gz = tool("gzip -6 -c", h, hlen, &gzlen);
	CHECK(check_good("sparse windows, real text", gz, gzlen, h, hlen, SPACING, &r) > 4);
	check_windows(&r, h, &kept, &total);
	fprintf(stderr, "  real text: %zu of %zu window bytes kept\n", kept, total);
	CHECK(total > 0 && kept * 2 < total);

	/* the worker itself, at the first checkpoint with a full window */
	size_t k = 0;
	while (k < r.ncks && r.cks[k].c.extra != 32768)
		k++;
	CHECK(k < r.ncks);
	if (k < r.ncks) {
		const struct codec_ckpt *c = &r.cks[k].c;
		struct gz_sparse *z = gz_sparse_new();
		struct src *in = src_from_mem(gz, gzlen), *cut = src_from_mem(gz, c->coff + 10);
		uint8_t *win = malloc(32768), *next = malloc(65536), *w0 = malloc(32768);
		const uint8_t *o = h + c->uoff;

		memcpy(w0, o - 32768, 32768);
		memcpy(win, w0, 32768);
		memcpy(next, o, 65536);
		int got = gz_sparse_window(z, in, c->coff, c->bits, win, 32768, next, 65536, false);
		CHECK(got > 0 && got < 32768);
		/* the kept bytes are where the window was not zeroed (or was zero already) */
		size_t nz = 0;
		for (size_t j = 0; j < 32768; j++)
			nz += win[j] != 0 || w0[j] == 0;
		CHECK(nz >= (size_t)got);

		/* output that is not the stream's */
		memcpy(win, w0, 32768);
		next[1000] ^= 0x40;
		CHECK_EQ(gz_sparse_window(z, in, c->coff, c->bits, win, 32768, next, 65536, false),
			 -EIO);
		CHECK(memcmp(win, w0, 32768) == 0);
		next[1000] ^= 0x40;
		/* too little output to decide, and a stream that does not end there */
		CHECK_EQ(gz_sparse_window(z, in, c->coff, c->bits, win, 32768, next, 1000, false),
			 -EAGAIN);
		/* the same output said to end the stream: the decode goes on past it */
		CHECK_EQ(gz_sparse_window(z, in, c->coff, c->bits, win, 32768, next, 1000, true),
			 -EIO);
		/* compressed bytes that end early */
		CHECK_EQ(gz_sparse_window(z, cut, c->coff, c->bits, win, 32768, next, 65536, false),
			 -EAGAIN);
		CHECK(memcmp(win, w0, 32768) == 0);
		free(win), free(next), free(w0);
		src_free(in), src_free(cut);
		gz_sparse_free(z);
	}
	res_free(&r);
	free(gz);

	kept = total = 0;
	gz = tool("gzip -9 -c", exe, exelen, &gzlen);
	CHECK(check_good("sparse windows, binary", gz, gzlen, exe, exelen, SPACING, &r) > 2);
	check_windows(&r, exe, &kept, &total);
	fprintf(stderr, "  binary: %zu of %zu window bytes kept\n", kept, total);
	CHECK(total > 0 && kept < total);
	res_free(&r);
	free(gz);
	free(h);
	free(exe);
}

static void test_probe(void)
{
	static const uint8_t good[] = {0x1f, 0x8b, 8, 0};
	static const uint8_t bad[] = {0x1f, 0x8b, 7, 0};

	CHECK(codec_gzip.probe(good, 4));
	CHECK(codec_gzip.probe(good, 3));
	CHECK(!codec_gzip.probe(good, 2));
	CHECK(!codec_gzip.probe(bad, 4));
	CHECK(!codec_gzip.probe((const uint8_t *)"BZh9", 4));
	CHECK(codec_probe(good, 4) == &codec_gzip);
}

static void test_levels_and_tools(const uint8_t *text, size_t len)
{
	static const char *cmds[] = {"gzip -1 -c", "gzip -6 -c", "gzip -9 -c", "pigz -6 -p 2 -c",
				     "pigz -9 -b 128 -p 2 -c", "pigz -1 -i -p 2 -c"};
	for (size_t i = 0; i < sizeof(cmds) / sizeof(cmds[0]); i++) {
		size_t gzlen;
		uint8_t *gz = tool(cmds[i], text, len, &gzlen);
		check_good(cmds[i], gz, gzlen, text, len, SPACING, NULL);
		free(gz);
	}
}

static void test_stored_blocks(void)
{
	size_t len = 1500000, gzlen;
	uint8_t *orig = mixed(len, 7), *gz;
	uint8_t *noise = malloc(300000);

	gz = tool("gzip -6 -c", orig, len, &gzlen);
	check_good("text + noise (stored blocks)", gz, gzlen, orig, len, SPACING, NULL);
	free(gz);
	tu_fill(noise, 300000, 9, 0);
	gz = tool("gzip -9 -c", noise, 300000, &gzlen);
	CHECK(gzlen > 300000); /* only stored blocks */
	check_good("noise only", gz, gzlen, noise, 300000, 16384, NULL);
	free(gz);
	free(noise);
	free(orig);
}

/* Many members (cat a.gz b.gz ..., BGZF-like), an empty one among them: the scan crosses
 * them, puts checkpoints at member starts, and a decoder runs across members. */
static void test_multi_member(void)
{
	size_t len = 40 * 50000 + 123456, gzlen = 0, off = 0, i = 0;
	uint8_t *orig = mixed(len, 11), *gz = NULL;
	struct scan_res r;
	size_t member_cks = 0;

	while (off < len) {
		size_t part = i == 40 ? len - off : 50000, plen;
		const char *cmd = i % 3 == 0 ? "gzip -1 -c" : i % 3 == 1 ? "gzip -6 -c" : "pigz -c";
		uint8_t *p = tool(cmd, orig + off, part, &plen), *n;
		n = cat2(gz ? gz : (const uint8_t *)"", gzlen, p, plen, &gzlen);
		free(gz);
		free(p);
		gz = n;
		off += part;
		i++;
		if (i == 20) { /* an empty member in the middle */
			p = tool("gzip -c", NULL, 0, &plen);
			n = cat2(gz, gzlen, p, plen, &gzlen);
			free(gz);
			free(p);
			gz = n;
		}
	}
	check_good("41 members + 1 empty", gz, gzlen, orig, len, SPACING, &r);
	for (i = 1; i < r.ncks; i++)
		member_cks += r.cks[i].c.flags & 1;
	CHECK(member_cks >= 5);
	res_free(&r);

	/* a small spacing: a checkpoint at nearly every member start */
	check_good("41 members, spacing 1", gz, gzlen, orig, len, 1, &r);
	CHECK(r.ncks >= 41);
	res_free(&r);

	/* damage in member 30: everything before it verified */
	{
		uint8_t *bad = malloc(gzlen);
		struct scan_res d;
		uint64_t mstart = 0;
		size_t k, seen = 0, pos = 0;

		memcpy(bad, gz, gzlen);
		/* walk the first 30 members with zlib to find where member 30 ends */
		for (k = 0; k < 30; k++) {
			z_stream z;
			uint8_t sink[65536];
			memset(&z, 0, sizeof(z));
			inflateInit2(&z, 31);
			z.next_in = gz + pos;
			z.avail_in = (uInt)(gzlen - pos);
			int ret;
			do {
				z.next_out = sink;
				z.avail_out = sizeof(sink);
				ret = inflate(&z, Z_NO_FLUSH);
				seen += sizeof(sink) - z.avail_out;
			} while (ret == Z_OK);
			CHECK_EQ(ret, Z_STREAM_END);
			pos += z.total_in;
			inflateEnd(&z);
			if (k == 28)
				mstart = seen;
		}
		/* pos: end of member 30 (which may be the empty one); flip its CRC's first byte */
		bad[pos - 8] ^= 0x40;
		CHECK_EQ(scan(bad, gzlen, SPACING, 1, 65536, &d), -EIO);
		CHECK_EQ(d.verified, mstart);
		CHECK(d.len >= d.verified && memcmp(d.out, orig, d.len) == 0);
		res_free(&d);
		CHECK_EQ(scan(bad, gzlen, SPACING, 2, 65536, &d), -EIO);
		CHECK_EQ(d.verified, mstart);
		res_free(&d);
		/* cut inside member 31's header, and exactly between members 30 and 31 (valid) */
		CHECK_EQ(scan(gz, pos + 2, SPACING, 2, 65536, &d), -EIO);
		CHECK_EQ(d.verified, seen);
		res_free(&d);
		CHECK_EQ(scan(gz, pos, SPACING, 2, 65536, &d), 0);
		CHECK_EQ(d.len, seen);
		res_free(&d);
		free(bad);
	}
	free(gz);
	free(orig);
}

/* Block boundaries with nothing after them in their member: no checkpoint there (it would
 * be past the end, or start an empty chunk); the next member's start is used instead. */
static void test_flushed(const uint8_t *text, size_t len)
{
	size_t alen, blen, alllen;
	uint8_t *a = zlib_gzip_flushed(text, len, 100000, &alen);
	uint8_t *b = zlib_gzip_flushed(text, len / 3, 50000, &blen);
	uint8_t *all = cat2(a, alen, b, blen, &alllen);
	uint8_t *orig = cat2(text, len, text, len / 3, &alllen);
	struct scan_res r;

	check_good("sync-flushed member", a, alen, text, len, 1, &r);
	for (size_t i = 0; i < r.ncks; i++)
		CHECK(r.cks[i].c.uoff < len);
	res_free(&r);
	check_good("two sync-flushed members", all, alen + blen, orig, len + len / 3, 1, &r);
	CHECK(r.ncks >= 2);
	bool at_second = false;
	for (size_t i = 0; i < r.ncks; i++) {
		CHECK(r.cks[i].c.uoff < len + len / 3);
		if (r.cks[i].c.uoff == len)
			at_second = (r.cks[i].c.flags & 1) && r.cks[i].c.coff == alen;
	}
	CHECK(at_second);
	res_free(&r);
	free(a);
	free(b);
	free(all);
	free(orig);
}

static void test_header_extras(const uint8_t *text, size_t len)
{
	size_t gzlen, g2len, alllen;
	uint8_t *gz = zlib_gzip_extras(text, len, &gzlen);
	uint8_t *g2 = tool("gzip -c", text, len / 2, &g2len);
	uint8_t *all, *orig;
	struct scan_res r;

	CHECK_EQ(gz[3], 2 | 4 | 8 | 16);
	check_good("FEXTRA+FNAME+FCOMMENT+FHCRC", gz, gzlen, text, len, SPACING, &r);
	CHECK(r.has_name && strcmp(r.name, "archive.tar") == 0);
	res_free(&r);

	/* plain member first, extras second: no name (the first member's counts) */
	all = cat2(g2, g2len, gz, gzlen, &alllen);
	orig = cat2(text, len / 2, text, len, &alllen);
	check_good("plain + extras members", all, g2len + gzlen, orig, len / 2 + len, SPACING,
		   &r);
	CHECK(!r.has_name);
	res_free(&r);
	free(all);
	free(orig);

	/* a bad header CRC, and a reserved flag */
	size_t h = header_len(gz);
	gz[h - 1] ^= 1;
	CHECK_EQ(scan(gz, gzlen, SPACING, 1, 65536, &r), -EIO);
	CHECK_EQ(r.len, 0);
	CHECK_EQ(r.ncks, 0);
	res_free(&r);
	gz[h - 1] ^= 1;
	gz[3] |= 0x20;
	CHECK_EQ(scan(gz, gzlen, SPACING, 2, 65536, &r), -EIO);
	res_free(&r);
	gz[3] &= ~0x20;
	/* a changed comment byte is caught by FHCRC too */
	gz[h - 5] ^= 0x01;
	CHECK_EQ(scan(gz, gzlen, SPACING, 1, 65536, &r), -EIO);
	res_free(&r);
	free(gz);
	free(g2);
}

static void test_empty(void)
{
	size_t gzlen;
	uint8_t *gz = tool("gzip -c", NULL, 0, &gzlen);
	struct scan_res r;

	/* the gzip of nothing: no bytes, one checkpoint at 0, success */
	CHECK_EQ(scan(gz, gzlen, SPACING, 1, 65536, &r), 0);
	CHECK_EQ(r.len, 0);
	CHECK_EQ(r.ncks, 1);
	res_free(&r);
	CHECK_EQ(scan(gz, gzlen, SPACING, 2, 65536, &r), 0);
	CHECK_EQ(r.len, 0);
	CHECK_EQ(r.verified, 0);
	res_free(&r);

	/* a zero-length file, and bytes that are not gzip at all */
	log_reset();
	CHECK_EQ(scan((const uint8_t *)"", 0, SPACING, 1, 65536, &r), -EIO);
	CHECK_EQ(r.ncks, 0);
	CHECK(nlog[TFS_LOG_ERR] >= 1);
	res_free(&r);
	CHECK_EQ(scan((const uint8_t *)"", 0, SPACING, 2, 65536, &r), -EIO);
	res_free(&r);
	CHECK_EQ(scan((const uint8_t *)"hello world", 11, SPACING, 1, 65536, &r), -EIO);
	res_free(&r);
	CHECK_EQ(scan(gz, 3, SPACING, 1, 65536, &r), -EIO);
	res_free(&r);
	free(gz);
}

/* Flipped bytes in the deflate data, in the CRC, in ISIZE: -EIO, nothing verified. */
static void test_corruption(const uint8_t *text, size_t len)
{
	size_t gzlen;
	uint8_t *gz = tool("gzip -6 -c", text, len, &gzlen);
	struct scan_res r;
	size_t h = header_len(gz);

	for (int i = 0; i < 12; i++) {
		size_t at = h + (gzlen - h - 8) * (size_t)(i + 1) / 13;
		gz[at] ^= 0x10;
		log_reset();
		CHECK_EQ(scan(gz, gzlen, SPACING, i % 2 ? 2 : 1, i % 4 == 2 ? 0 : 65536, &r), -EIO);
		CHECK_EQ(r.verified, 0);
		CHECK(nlog[TFS_LOG_ERR] >= 1);
		res_free(&r);
		gz[at] ^= 0x10;
	}
	for (int i = 0; i < 8; i++) {
		gz[gzlen - 8 + i] ^= 0x01;
		CHECK_EQ(scan(gz, gzlen, SPACING, i % 2 ? 2 : 1, 65536, &r), -EIO);
		CHECK_EQ(r.verified, 0);
		CHECK_EQ(r.len, len); /* the data were all returned; the trailer says no */
		res_free(&r);
		gz[gzlen - 8 + i] ^= 0x01;
	}
	free(gz);
}

/* Truncation anywhere in a member: -EIO, no hang; what was decoded before the end is
 * trusted (a half-finished copy, not damage: scan_verified covers it); decoders too. */
/* The bytes before damage do not depend on the sizes of the reads: a decoder read in small
 * pieces gives what the scan gave, then -EIO.  (ISA-L drops what it decoded into its own
 * buffer but had no room to give when it meets an error; the engine gives those bytes.) */
static void test_error_point(const uint8_t *text, size_t len)
{
	size_t gzlen, errors = 0;
	uint8_t *gz = tool("gzip -6 -c", text, len, &gzlen);
	uint8_t *noise = malloc(2000);
	struct scan_res r;

	for (uint32_t seed = 1; seed <= 8; seed++) {
		uint8_t *bad = malloc(gzlen);
		size_t at = gzlen * seed / 10, got = 0;
		struct src *in = src_from_mem(bad, gzlen);
		struct codec_dec *d = NULL;
		uint8_t piece[977];
		ssize_t n = 0;

		memcpy(bad, gz, gzlen);
		tu_fill(noise, 2000, seed, 0);
		memcpy(bad + at, noise, at + 2000 < gzlen - 8 ? 2000 : 0);
		log_reset();
		CHECK_EQ(scan(bad, gzlen, SPACING, 1, 65536, &r), -EIO);
		CHECK_EQ(codec_gzip.dec_new(in, &r.cks[0].c, NULL, 0, &d), 0);
		while (d && (n = codec_gzip.dec_read(d, piece, 1 + got % sizeof(piece))) > 0) {
			CHECK(got + (size_t)n <= r.len && memcmp(piece, r.out + got, (size_t)n) == 0);
			got += (size_t)n;
		}
		/* -EIO, or 0 at the end where only the CRC-32 saw the damage (decoders do not
		 * check it) */
		CHECK(n == -EIO || n == 0);
		errors += n == -EIO;
		CHECK_EQ(got, r.len);
		codec_gzip.dec_free(d);
		src_free(in);
		res_free(&r);
		free(bad);
	}
	CHECK(errors >= 4);
	free(noise);
	free(gz);
}

/* A damaged stream the fuzz harness found (tests/fuzz/regress): after the invalid code,
 * ISA-L's avail_out was past zero (0xffffff22), so a decoder reading 54108 and then 45062
 * bytes lost the 45010 it had been given, and one reading 1 MiB at once counted 274 bytes it
 * had not been given.  Counted by next_out, every read pattern gives the scan's bytes. */
static void test_error_read_sizes(void)
{
	static const size_t sizes[][3] = {{54108, 45062, 45062}, {1u << 20, 1u << 20, 1u << 20}, {977, 65536, 1}};
	const char *dir = getenv("TARSEEK_FUZZ_REGRESS");
	char path[4096];
	size_t gzlen;
	struct scan_res r;

	if (!dir)
		return;
	snprintf(path, sizeof(path), "%s/fuzz_codec_gzip/isal-avail-out-past-zero", dir);
	uint8_t *gz = tu_read_file(path, &gzlen);
	CHECK(gz != NULL);
	if (!gz)
		return;
	log_reset();
	CHECK_EQ(scan(gz, gzlen, SPACING, 1, 65536, &r), -EIO);
	/* the bytes the index keeps: up to the last checkpoint (at 98558, the block zlib
	 * rejects: invalid distances set); what ISA-L makes of that block depends on where its
	 * calls end, and is left to the segment CRCs */
	CHECK(r.ncks >= 2);
	size_t keep = r.ncks ? (size_t)r.cks[r.ncks - 1].c.uoff : 0;
	CHECK(keep >= 98558 || infl_default() == INFL_ZLIB);
	for (size_t p = 0; p < sizeof(sizes) / sizeof(sizes[0]); p++) {
		struct src *in = src_from_mem(gz, gzlen);
		struct codec_dec *d = NULL;
		uint8_t *buf = malloc(1u << 20);
		size_t got = 0;
		ssize_t n = 0;

		CHECK_EQ(codec_gzip.dec_new(in, &r.cks[0].c, NULL, 0, &d), 0);
		for (size_t k = 0; d && (n = codec_gzip.dec_read(d, buf, sizes[p][k % 3])) > 0; k++) {
			if (got < keep) {
				size_t m = keep - got < (size_t)n ? keep - got : (size_t)n;
				CHECK(memcmp(buf, r.out + got, m) == 0);
			}
			got += (size_t)n;
		}
		CHECK_EQ(n, -EIO);
		CHECK(got >= keep);
		codec_gzip.dec_free(d);
		src_free(in);
		free(buf);
	}
	res_free(&r);
	free(gz);
}

static void test_truncation(const uint8_t *text, size_t len)
{
	size_t gzlen;
	uint8_t *gz = tool("gzip -6 -c", text, len, &gzlen);
	struct scan_res good, r;
	size_t cuts[] = {1, 2, 3, 9, 10, 11, gzlen / 3, gzlen / 2, gzlen - 9, gzlen - 8, gzlen - 4,
			 gzlen - 1};

	CHECK_EQ(scan(gz, gzlen, SPACING, 1, 65536, &good), 0);
	for (size_t i = 0; i < sizeof(cuts) / sizeof(cuts[0]); i++) {
		for (unsigned th = 1; th <= 2; th++) {
			CHECK_EQ(scan(gz, cuts[i], SPACING, th, i % 2 ? 0 : 65536, &r), -EIO);
			CHECK_EQ(r.verified, r.len);
			CHECK(r.len <= len && memcmp(r.out, text, r.len) == 0);
			res_free(&r);
		}
		/* a decoder from the last checkpoint before the cut: good bytes, then -EIO */
		size_t k = 0;
		for (size_t j = 0; j < good.ncks; j++)
			if (good.cks[j].c.coff < cuts[i])
				k = j;
		struct src *in = src_from_mem(gz, cuts[i]);
		struct codec_dec *d;
		int err = codec_gzip.dec_new(in, &good.cks[k].c, good.cks[k].aux,
					     good.cks[k].auxlen, &d);
		if (err == 0) {
			uint8_t buf[10000];
			uint64_t pos = good.cks[k].c.uoff;
			ssize_t n;
			while ((n = codec_gzip.dec_read(d, buf, sizeof(buf))) > 0) {
				CHECK(pos + (uint64_t)n <= len);
				if (pos + (uint64_t)n > len)
					break;
				CHECK(memcmp(buf, text + pos, (size_t)n) == 0);
				pos += (uint64_t)n;
			}
			CHECK_EQ(n, -EIO);
			CHECK_EQ(codec_gzip.dec_read(d, buf, sizeof(buf)), -EIO);
			codec_gzip.dec_free(d);
		} else {
			CHECK_EQ(err, -EIO); /* cut inside the header of a member checkpoint */
		}
		src_free(in);
	}
	res_free(&good);
	free(gz);
}

/* After the last member: zeros are ignored silently, other bytes with a notice, and a second
 * gzip magic with a broken header is an error. */
static void test_trailing(const uint8_t *text, size_t len)
{
	size_t gzlen, alen;
	uint8_t *gz = tool("gzip -6 -c", text, len, &gzlen), *a;
	uint8_t zeros[5000] = {0};
	static const uint8_t junk[] = "this is not gzip data\n";
	static const uint8_t badmember[] = {0x1f, 0x8b, 8, 0xff, 0, 0, 0, 0, 0, 3};
	struct scan_res r;

	a = cat2(gz, gzlen, zeros, sizeof(zeros), &alen);
	log_reset();
	check_good("trailing zeros", a, alen, text, len, SPACING, NULL);
	CHECK_EQ(nlog[TFS_LOG_NOTICE], 0);
	CHECK_EQ(nlog[TFS_LOG_ERR], 0);
	free(a);

	a = cat2(gz, gzlen, junk, sizeof(junk), &alen);
	log_reset();
	check_good("trailing garbage", a, alen, text, len, SPACING, NULL);
	CHECK(nlog[TFS_LOG_NOTICE] >= 1);
	CHECK_EQ(nlog[TFS_LOG_ERR], 0);
	free(a);

	/* zeros, then junk */
	{
		uint8_t *z2 = cat2(zeros, 100, junk, sizeof(junk), &alen);
		a = cat2(gz, gzlen, z2, alen, &alen);
		CHECK_EQ(scan(a, alen, SPACING, 2, 65536, &r), 0);
		CHECK_EQ(r.len, len);
		res_free(&r);
		free(a);
		free(z2);
	}
	a = cat2(gz, gzlen, badmember, sizeof(badmember), &alen);
	CHECK_EQ(scan(a, alen, SPACING, 1, 65536, &r), -EIO);
	CHECK_EQ(r.len, len);
	CHECK_EQ(r.verified, len);
	res_free(&r);
	free(a);
	free(gz);
}

/* Decoder arguments that cannot be right, and a damaged window blob. */
static void test_bad_checkpoints(const uint8_t *text, size_t len)
{
	size_t gzlen;
	uint8_t *gz = tool("gzip -6 -c", text, len, &gzlen);
	struct src *in = src_from_mem(gz, gzlen);
	struct scan_res r;
	struct codec_dec *d = (struct codec_dec *)1;
	struct codec_ckpt c;
	size_t k = 0;

	CHECK_EQ(scan(gz, gzlen, SPACING, 1, 65536, &r), 0);
	for (size_t i = 0; i < r.ncks; i++)
		if (!(r.cks[i].c.flags & 1))
			k = i;
	CHECK(k > 0);
	c = r.cks[k].c;
	c.bits = 8;
	CHECK_EQ(codec_gzip.dec_new(in, &c, r.cks[k].aux, r.cks[k].auxlen, &d), -EINVAL);
	CHECK(d == NULL);
	c = r.cks[k].c;
	CHECK_EQ(codec_gzip.dec_new(in, &c, NULL, 0, &d), -EINVAL);
	c.extra = 40000;
	CHECK_EQ(codec_gzip.dec_new(in, &c, r.cks[k].aux, r.cks[k].auxlen, &d), -EINVAL);
	c = r.cks[k].c;
	/* a window that is not what the record says: shorter, longer, a bad Adler-32, damaged,
	 * cut short */
	if (c.extra > 0 && c.extra < 32768) {
		c.extra++;
		CHECK_EQ(codec_gzip.dec_new(in, &c, r.cks[k].aux, r.cks[k].auxlen, &d), -EIO);
		c.extra -= 2;
		CHECK_EQ(codec_gzip.dec_new(in, &c, r.cks[k].aux, r.cks[k].auxlen, &d), -EIO);
		c.extra++;
	}
	r.cks[k].aux[r.cks[k].auxlen - 1] ^= 0x01;
	CHECK_EQ(codec_gzip.dec_new(in, &c, r.cks[k].aux, r.cks[k].auxlen, &d), -EIO);
	r.cks[k].aux[r.cks[k].auxlen - 1] ^= 0x01;
	CHECK_EQ(codec_gzip.dec_new(in, &c, r.cks[k].aux, r.cks[k].auxlen, &d), 0);
	codec_gzip.dec_free(d);
	d = (struct codec_dec *)1;
	r.cks[k].aux[r.cks[k].auxlen / 2] ^= 0x55;
	CHECK_EQ(codec_gzip.dec_new(in, &c, r.cks[k].aux, r.cks[k].auxlen, &d), -EIO);
	CHECK_EQ(codec_gzip.dec_new(in, &c, r.cks[k].aux, r.cks[k].auxlen - 3, &d), -EIO);
	/* a member checkpoint that does not point at a header */
	c = r.cks[0].c;
	c.coff = 5;
	CHECK_EQ(codec_gzip.dec_new(in, &c, NULL, 0, &d), -EIO);
	CHECK(d == NULL);
	codec_gzip.dec_free(NULL);
	codec_gzip.scan_free(NULL);
	res_free(&r);
	src_free(in);
	free(gz);
}

/* Random damage to a small multi-member file: every scan ends with the original bytes or
 * -EIO (and then what was returned before is a prefix of the original); decoders from the
 * good checkpoints end with 0 or -EIO.  Mostly a harness for the sanitizers. */
static void test_random_damage(void)
{
	size_t len = 200000, l1, l2, gzlen;
	uint8_t *orig = mixed(len, 3);
	uint8_t *a = tool("gzip -6 -c", orig, len / 2, &l1);
	uint8_t *b = tool("pigz -1 -c", orig + len / 2, len - len / 2, &l2);
	uint8_t *gz = cat2(a, l1, b, l2, &gzlen), *bad = malloc(gzlen);
	struct scan_res good, r;
	uint32_t x = 12345;
	int lvl = tfs_log_level;

	CHECK_EQ(scan(gz, gzlen, 16384, 1, 65536, &good), 0);
	tfs_log_level = 0; /* quiet: hundreds of expected errors */
	for (int i = 0; i < 300; i++) {
		x = x * 1103515245 + 12345;
		size_t at = (x >> 8) % gzlen;
		memcpy(bad, gz, gzlen);
		bad[at] ^= (uint8_t)(1u << (x % 8));
		size_t step = i % 4 == 2 ? 0 : 65536;
		ssize_t rc = scan(bad, gzlen, 16384, 1 + (unsigned)(i & 1), step, &r);
		CHECK(rc == 0 || rc == -EIO);
		if (rc == 0) {
			CHECK_EQ(r.len, len);
			CHECK(r.len == len && memcmp(r.out, orig, len) == 0);
		} else {
			CHECK(r.verified <= r.len);
			CHECK(memcmp(r.out, orig, r.verified) == 0);
		}
		res_free(&r);
		/* decoders on the damaged copy */
		struct src *in = src_from_mem(bad, gzlen);
		for (size_t k = 0; k < good.ncks; k += 3) {
			struct codec_dec *d;
			uint8_t buf[65536];
			ssize_t n;
			if (codec_gzip.dec_new(in, &good.cks[k].c, good.cks[k].aux,
					       good.cks[k].auxlen, &d))
				continue;
			size_t total = 0;
			while ((n = codec_gzip.dec_read(d, buf, sizeof(buf))) > 0)
				total += (size_t)n;
			CHECK(n == 0 || n == -EIO);
			CHECK(total < (1u << 24));
			codec_gzip.dec_free(d);
		}
		src_free(in);
	}
	tfs_log_level = lvl;
	res_free(&good);
	free(bad);
	free(gz);
	free(a);
	free(b);
	free(orig);
}

/* The sink can stop the scan. */
static int stop_sink(void *opaque, const struct codec_ckpt *c, const void *aux, size_t auxlen)
{
	return c->uoff > 0 ? -ENOSPC : 0;
}

static void test_sink_error(const uint8_t *text, size_t len)
{
	size_t gzlen;
	uint8_t *gz = tool("gzip -6 -c", text, len, &gzlen);
	struct src *in = src_from_mem(gz, gzlen);
	struct codec_opts opts = {.spacing = SPACING, .threads = 2};
	struct codec_sink sink = {.checkpoint = stop_sink};
	struct codec_scan *s;
	uint8_t buf[65536];
	ssize_t n;

	CHECK_EQ(codec_gzip.scan_new(in, &opts, &sink, &s), 0);
	while ((n = codec_gzip.scan_read(s, buf, sizeof(buf))) > 0)
		;
	CHECK_EQ(n, -ENOSPC);
	codec_gzip.scan_free(s);
	/* and scan_free in the middle of a threaded scan */
	sink.checkpoint = NULL;
	CHECK_EQ(codec_gzip.scan_new(in, &opts, &sink, &s), 0);
	CHECK(codec_gzip.scan_read(s, buf, sizeof(buf)) > 0);
	codec_gzip.scan_free(s);
	src_free(in);
	free(gz);
}

static int test(void)
{
	size_t len = 3 << 20;
	uint8_t *text;

	if (!tu_have("gzip") || !tu_have("pigz")) {
		fprintf(stderr, "gzip or pigz missing\n");
		return 77;
	}
	tfs_log_set_sink(log_sink, NULL);
	text = malloc(len);
	text_fill(text, len, 1);

	test_probe();
	for (int e = 0; e < (infl_have_isal() ? 2 : 1); e++) {
		infl_set_default(e ? INFL_ISAL : INFL_ZLIB);
		fprintf(stderr, "---- inflater: %s\n", infl_kind_name(infl_default()));
		test_levels_and_tools(text, len);
		test_stored_blocks();
		test_multi_member();
		test_flushed(text, 1 << 20);
		test_header_extras(text, 1 << 20);
		test_empty();
		test_corruption(text, 1 << 20);
		test_error_point(text, 1 << 20);
		test_error_read_sizes();
		test_truncation(text, 1 << 20);
		test_trailing(text, 1 << 20);
		test_bad_checkpoints(text, 1 << 20);
		test_random_damage();
		test_sink_error(text, 1 << 20);
		test_sparse_windows();
	}
	test_engines_agree(text, len);
	free(text);
	return tu_exit();
}

int main(void)
{
	int r = test();

	return r == 77 ? 77 : r;
}
