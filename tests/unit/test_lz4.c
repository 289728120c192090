/* Unit tests of the lz4 codec (codecs/lz4/), on data made by the real lz4 in memory.
 *
 * Every good file is scanned whole with 1, 2 and 3 threads (bytes and checkpoints must not
 * depend on it), compared with the original and with what `lz4 -dc` makes of it, its
 * checkpoints checked against the blocks and frames a small independent parser finds in the
 * file, and decoders are started at every checkpoint and read in random-sized pieces.
 * Damaged files (flipped bytes in headers, block data and checksums; truncations; trailing
 * garbage; absurd sizes; refused features) must give the original bytes up to
 * scan_verified(), an error where the damage matters, and never anything else, a crash or a
 * hang.
 */
#include "codecs/codec.h"
#include "common/log.h"
#include "testutil.h"

#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <string.h>
#include <unistd.h>
#include <xxhash.h>

#define GROUP (128u << 10) /* the codec's checkpoint grouping */
#define MB (1u << 20)

/* ---- log capture ---- */

static unsigned long nlog[8];
static char last_err[1024], last_notice[1024];
static bool quiet; /* hundreds of expected messages */

static void log_sink(int level, const char *msg, void *opaque)
{
	(void)opaque;
	if (level >= 0 && level < 8)
		nlog[level]++;
	if (level == TFS_LOG_ERR)
		snprintf(last_err, sizeof(last_err), "%s", msg);
	if (level == TFS_LOG_NOTICE)
		snprintf(last_notice, sizeof(last_notice), "%s", msg);
	if (!quiet)
		fprintf(stderr, "  [log %d] %s\n", level, msg);
}

static void log_reset(void)
{
	memset(nlog, 0, sizeof(nlog));
	last_err[0] = last_notice[0] = '\0';
}

static unsigned long nproblems(void)
{
	return nlog[TFS_LOG_ERR] + nlog[TFS_LOG_WARNING] + nlog[TFS_LOG_NOTICE];
}

/* ---- scanning, with checks of the sink contract ---- */

struct scan_res {
	uint8_t *out;
	size_t len;
	ssize_t rc; /* the final scan_read result: 0 or -errno */
	uint64_t verified;
	struct codec_ckpt *cks; /* ulen completed from the next checkpoint, as the index does */
	size_t ncks;
	pthread_t reader;
	size_t returned;
	int contract_errors;
	int fail_at; /* the sink fails with -ENOSPC at this checkpoint (0: never) */
};

static int sink_fn(void *opaque, const struct codec_ckpt *c, const void *aux, size_t auxlen)
{
	struct scan_res *r = opaque;

	if (!pthread_equal(pthread_self(), r->reader))
		r->contract_errors++; /* called from another thread */
	if (r->ncks == 0 && c->uoff != 0)
		r->contract_errors++; /* the first at 0 */
	if (r->ncks && c->uoff <= r->cks[r->ncks - 1].uoff)
		r->contract_errors++; /* increasing */
	if (c->uoff < r->returned)
		r->contract_errors++; /* before any byte at or after it */
	if (aux || auxlen)
		r->contract_errors++; /* lz4 has no aux blob */
	if (r->fail_at && (int)r->ncks + 1 == r->fail_at)
		return -ENOSPC;
	r->cks = realloc(r->cks, (r->ncks + 1) * sizeof(*r->cks));
	r->cks[r->ncks++] = *c;
	return 0;
}

static void res_free(struct scan_res *r)
{
	free(r->cks);
	free(r->out);
	memset(r, 0, sizeof(*r));
}

/* Scans the source whole in reads of step bytes (0: random steps).  Returns the final
 * scan_read result. */
static ssize_t scan_src(struct src *in, unsigned threads, size_t step, int fail_at,
			struct scan_res *r)
{
	struct codec_opts opts = {.spacing = 1 << 20, .threads = threads};
	struct codec_sink sink = {.checkpoint = sink_fn, .opaque = r};
	struct codec_scan *s;
	size_t cap = 1 << 16;
	uint32_t x = 77;
	ssize_t n;
	int err;

	memset(r, 0, sizeof(*r));
	r->reader = pthread_self();
	r->fail_at = fail_at;
	r->out = malloc(cap);
	err = codec_lz4.scan_new(in, &opts, &sink, &s);
	CHECK_EQ(err, 0);
	if (err)
		return r->rc = err;
	for (;;) {
		size_t k = step;

		if (!k) {
			x = x * 1103515245 + 12345;
			k = 1 + (x >> 8) % 200000;
		}
		if (r->len + k > cap) {
			cap = (r->len + k) * 2;
			r->out = realloc(r->out, cap);
		}
		n = codec_lz4.scan_read(s, r->out + r->len, k);
		if (n <= 0)
			break;
		CHECK(n <= (ssize_t)k);
		r->len += (size_t)n;
		r->returned = r->len;
	}
	r->rc = n;
	CHECK_EQ(codec_lz4.scan_read(s, r->out, 100), n); /* the end and errors are sticky */
	r->verified = codec_lz4.scan_verified(s);
	CHECK(r->verified <= r->len);
	if (n == 0)
		CHECK_EQ(r->verified, r->len);
	for (size_t i = 0; i < r->ncks; i++) {
		uint64_t end = i + 1 < r->ncks ? r->cks[i + 1].uoff : r->len;

		CHECK(r->cks[i].uoff < r->len); /* every checkpoint starts some returned bytes */
		/* a length, when the scan gives one, tiles the returned bytes */
		if (r->cks[i].ulen && n == 0)
			CHECK_EQ(r->cks[i].ulen, end - r->cks[i].uoff);
		r->cks[i].ulen = end - r->cks[i].uoff;
	}
	CHECK_EQ(r->contract_errors, 0);
	codec_lz4.scan_free(s);
	return n;
}

static ssize_t scan(const uint8_t *f, size_t len, unsigned threads, size_t step,
		    struct scan_res *r)
{
	struct src *in = src_from_mem(f, len);
	ssize_t n = scan_src(in, threads, step, 0, r);

	src_free(in);
	return n;
}

static bool same_ckpt(const struct codec_ckpt *a, const struct codec_ckpt *b)
{
	return a->uoff == b->uoff && a->ulen == b->ulen && a->coff == b->coff &&
	       a->clen == b->clen && a->extra == b->extra && a->bits == b->bits &&
	       a->flags == b->flags;
}

/* Decodes chunk i in random-sized pieces and compares it with want (unless NULL); then, if
 * more, goes on to the end of the data.  Returns the decoder's final result. */
static ssize_t decode_chunk(const uint8_t *f, size_t flen, const struct codec_ckpt *cks, size_t i,
			    uint64_t end, const uint8_t *want, bool more, uint32_t seed)
{
	struct src *in = src_from_mem(f, flen);
	struct codec_ckpt ck = cks[i];
	struct codec_dec *d;
	static uint8_t buf[300007];
	uint64_t got = 0, stop = more ? end - ck.uoff : ck.ulen;
	uint32_t x = seed;
	ssize_t n = 0;
	int err;

	err = codec_lz4.dec_new(in, &ck, NULL, 0, &d);
	if (err) {
		src_free(in);
		return err;
	}
	CHECK(codec_lz4.dec_memory(d) >= sizeof(void *));
	while (got < stop) {
		size_t k;

		x = x * 1103515245 + 12345;
		k = x % 3 == 0 ? 1 + (x >> 8) % 17 : 1 + (x >> 8) % sizeof(buf);
		n = codec_lz4.dec_read(d, buf, k);
		if (n <= 0)
			break;
		CHECK(n <= (ssize_t)k);
		if (want && ck.uoff + got + (uint64_t)n <= end)
			CHECK(memcmp(buf, want + ck.uoff + got, (size_t)n) == 0);
		got += (uint64_t)n;
	}
	if (n >= 0) {
		CHECK(got >= stop);
		if (more) {
			n = codec_lz4.dec_read(d, buf, sizeof(buf));
			CHECK_EQ(n, 0); /* the end of the data */
			CHECK_EQ(got, end - ck.uoff);
		}
	} else {
		CHECK_EQ(codec_lz4.dec_read(d, buf, sizeof(buf)), n); /* sticky */
	}
	codec_lz4.dec_free(d);
	src_free(in);
	return n > 0 ? 0 : n;
}

/* ---- an independent look at the file: its blocks ---- */

struct lblock {
	uint64_t coff, total; /* header offset, bytes with header and checksum */
	unsigned kind;	      /* 1 independent, 2 linked, 3 legacy */
	uint32_t bmax;
	size_t frame;	    /* which frame (legacy: the legacy stream) */
	uint64_t frame_off; /* its magic */
	uint8_t flg, bd;
};

static uint32_t rd32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static void put32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)v;
	p[1] = (uint8_t)(v >> 8);
	p[2] = (uint8_t)(v >> 16);
	p[3] = (uint8_t)(v >> 24);
}

/* The blocks of a good (concatenated) lz4 file; *frame_ends: where each lz4 frame ends. */
static size_t list_blocks(const uint8_t *f, size_t len, struct lblock *out, size_t max)
{
	size_t n = 0, off = 0, frame = 0;

	while (off + 4 <= len) {
		uint32_t m = rd32(f + off);

		if (m == 0x184D2204) {
			uint8_t flg = f[off + 4], bd = f[off + 5];
			uint32_t bmax = 1u << (2 * ((bd >> 4) & 7) + 8);
			size_t fo = off;

			off += 7 + (flg & 8 ? 8 : 0) + (flg & 1 ? 4 : 0);
			frame++;
			for (;;) {
				uint32_t v = rd32(f + off);

				if (v == 0) {
					off += 4 + (flg & 4 ? 4 : 0);
					break;
				}
				uint64_t t = 4 + (v & 0x7fffffff) + (flg & 0x10 ? 4 : 0);
				if (n < max)
					out[n] = (struct lblock){off,  t,     flg & 0x20 ? 1 : 2, bmax,
								 frame, fo, flg, bd};
				n++;
				off += t;
			}
		} else if ((m & 0xfffffff0) == 0x184D2A50) {
			off += 8 + rd32(f + off + 4);
		} else if (m == 0x184C2102) {
			off += 4;
			frame++;
			while (off + 4 <= len) {
				uint32_t v = rd32(f + off);

				if (v == 0 || v > 0x7E000000 || v > (8u << 20) + (8u << 20) / 255 + 16)
					break;
				if (n < max)
					out[n] = (struct lblock){off, 4 + v, 3, 8u << 20, frame, 0, 0, 0};
				n++;
				off += 4 + v;
			}
		} else {
			break;
		}
	}
	return n;
}

/* The checkpoints follow the grouping rule over the blocks the file holds. */
static void check_groups(const uint8_t *f, size_t len, const struct scan_res *r)
{
	static struct lblock b[8192];
	size_t nb = list_blocks(f, len, b, 8192), k = 0;

	CHECK(nb <= 8192);
	for (size_t i = 0; i < r->ncks; i++) {
		const struct codec_ckpt *c = &r->cks[i];
		size_t first = k, group;

		if (k >= nb) {
			CHECK(k < nb);
			return;
		}
		group = b[k].kind == 1 && b[k].bmax < GROUP ? GROUP / b[k].bmax : 1;
		if (b[k].kind == 2)
			group = SIZE_MAX;
		CHECK_EQ(c->flags >> 16, b[k].kind);
		CHECK_EQ(c->coff, b[k].kind == 2 ? b[k].frame_off : b[k].coff);
		CHECK_EQ(c->extra, k + 1);
		if (b[k].kind != 3)
			CHECK_EQ(c->flags & 0xffff, (uint32_t)b[k].bd << 8 | b[k].flg);
		while (k < nb && b[k].frame == b[first].frame && k - first < group)
			k++;
		CHECK_EQ(c->bits, k - first);
		CHECK_EQ(c->clen, b[k - 1].coff + b[k - 1].total - c->coff);
	}
	CHECK_EQ(k, nb);
}

/* ---- making test data ---- */

static uint8_t *make_data(size_t len, uint32_t seed)
{
	uint8_t *b = malloc(len ? len : 1);

	tu_fill(b, len, seed, 1);
	/* stretches of noise; one big enough to make whole blocks stored */
	for (size_t off = 50000; off + 30000 < len; off += 400000)
		tu_fill(b + off, 30000, seed + (uint32_t)off, 0);
	if (len > 2 * MB)
		tu_fill(b + MB, 300000, seed + 7, 0);
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

static char tmpdir[64];

/* lz4 with options opts on a file (so --content-size can work). */
static uint8_t *lz4_file(const char *opts, const uint8_t *data, size_t len, size_t *outlen)
{
	char path[256], cmd[512];
	FILE *f;

	snprintf(path, sizeof(path), "%s/in.bin", tmpdir);
	f = fopen(path, "wb");
	CHECK(f != NULL);
	if (!f)
		exit(1);
	CHECK_EQ(fwrite(data, 1, len, f), len);
	fclose(f);
	snprintf(cmd, sizeof(cmd), "lz4 -q -c %s '%s'", opts, path);
	return run(cmd, NULL, 0, outlen);
}

/* Scans a good file with several thread counts and read sizes, checks the bytes against want
 * and `lz4 -dc`, the checkpoints against the blocks and every chunk.  Returns the number of
 * checkpoints. */
static size_t check_good(const char *what, const uint8_t *f, size_t flen, const uint8_t *want,
			 size_t wantlen)
{
	static const unsigned threads[] = {1, 2, 3};
	static const size_t steps[] = {1 << 20, 0, 4093};
	struct scan_res ref, r;
	size_t dlen;
	uint8_t *dc;

	fprintf(stderr, "good: %s (%zu -> %zu bytes)\n", what, wantlen, flen);
	log_reset();
	dc = run("lz4 -q -dc", f, flen, &dlen);
	CHECK(dlen == wantlen && memcmp(dc, want, wantlen) == 0);
	free(dc);
	CHECK_EQ(scan(f, flen, 1, 1 << 20, &ref), 0);
	CHECK_EQ(ref.len, wantlen);
	CHECK(ref.len == wantlen && memcmp(ref.out, want, wantlen) == 0);
	for (size_t t = 1; t < sizeof(threads) / sizeof(threads[0]); t++) {
		CHECK_EQ(scan(f, flen, threads[t], steps[t], &r), 0);
		CHECK(r.len == ref.len && memcmp(r.out, ref.out, ref.len) == 0);
		CHECK_EQ(r.ncks, ref.ncks);
		for (size_t i = 0; i < r.ncks && i < ref.ncks; i++)
			CHECK(same_ckpt(&r.cks[i], &ref.cks[i]));
		res_free(&r);
	}
	CHECK_EQ(nproblems(), 0);
	check_groups(f, flen, &ref);
	CHECK(codec_lz4.index_blocks == NULL);

	/* every chunk; from the first and the last checkpoints through to the end of the data */
	for (size_t i = 0; i < ref.ncks; i++)
		CHECK_EQ(decode_chunk(f, flen, ref.cks, i, wantlen, want, false, (uint32_t)i), 0);
	if (ref.ncks) {
		CHECK_EQ(decode_chunk(f, flen, ref.cks, 0, wantlen, want, true, 5), 0);
		CHECK_EQ(decode_chunk(f, flen, ref.cks, ref.ncks - 1, wantlen, want, true, 6), 0);
		if (ref.ncks > 2)
			CHECK_EQ(decode_chunk(f, flen, ref.cks, ref.ncks / 2, wantlen, want, true, 7),
				 0);
	}
	CHECK_EQ(nproblems(), 0);
	size_t n = ref.ncks;
	res_free(&ref);
	return n;
}

/* A damaged file: the scan (with 1 and 2 threads) gives the original bytes up to what it says
 * it verified, then rc; at least verified bytes (if >= 0).  Decoders started at the good
 * file's checkpoints return nothing but the original bytes. */
static void check_bad_scan(const char *what, const uint8_t *f, size_t flen, const uint8_t *want,
			   size_t wantlen, int64_t verified, ssize_t rc, const struct scan_res *good)
{
	struct scan_res r;

	if (!quiet)
		fprintf(stderr, "bad: %s\n", what);
	for (unsigned t = 1; t <= 2; t++) {
		log_reset();
		CHECK_EQ(scan(f, flen, t, t == 1 ? 65536 : 0, &r), rc);
		CHECK(r.verified <= wantlen && memcmp(r.out, want, r.verified) == 0);
		if (verified >= 0)
			CHECK_EQ(r.verified, verified);
		if (rc < 0)
			CHECK(nlog[TFS_LOG_ERR] >= 1);
		res_free(&r);
	}
	if (good) {
		struct src *in = src_from_mem(f, flen);
		uint8_t *buf = malloc(wantlen + 1);
		char scan_err[sizeof(last_err)];
		bool was_quiet = quiet;

		memcpy(scan_err, last_err, sizeof(scan_err));
		quiet = true;

		for (size_t k = 0; k < good->ncks; k++) {
			struct codec_ckpt ck = good->cks[k];
			struct codec_dec *d;
			uint64_t got = 0;
			ssize_t n = 0;

			if (codec_lz4.dec_new(in, &ck, NULL, 0, &d))
				continue;
			while (got < wantlen - ck.uoff &&
			       (n = codec_lz4.dec_read(d, buf + got, wantlen - ck.uoff - got)) > 0)
				got += (uint64_t)n;
			CHECK(n >= 0 || n == -EIO || n == -ENOTSUP);
			CHECK(memcmp(buf, want + ck.uoff, got) == 0);
			codec_lz4.dec_free(d);
		}
		free(buf);
		src_free(in);
		memcpy(last_err, scan_err, sizeof(scan_err)); /* the scan's, for the caller */
		quiet = was_quiet;
	}
}

/* ---- the tests ---- */

static void test_probe(void)
{
	static const uint8_t frame[] = {0x04, 0x22, 0x4d, 0x18, 0x64, 0x40, 0xa7};
	static const uint8_t legacy[] = {0x02, 0x21, 0x4c, 0x18};
	static const uint8_t skip[] = {0x50, 0x2a, 0x4d, 0x18};

	CHECK(codec_lz4.probe(frame, sizeof(frame)));
	CHECK(codec_lz4.probe(frame, 4));
	CHECK(!codec_lz4.probe(frame, 3));
	CHECK(codec_lz4.probe(legacy, 4));
	CHECK(!codec_lz4.probe(skip, 4));
	CHECK(!codec_lz4.probe((const uint8_t *)"\x1f\x8b\x08", 3));
	CHECK(!codec_lz4.probe((const uint8_t *)"", 0));
	CHECK(codec_probe(frame, sizeof(frame)) == &codec_lz4);
	CHECK(codec_by_name("lz4") == &codec_lz4);
}

static void test_options(const uint8_t *data, size_t len)
{
	static const struct {
		const char *opts;
		size_t ncks; /* 0: not checked */
	} v[] = {
	    {"", 1},		   /* 4 MiB blocks: one per block */
	    {"-BD", 1},		   /* linked: one per frame */
	    /* 3158073 bytes: 49 blocks of 64 KiB in pairs, 13 of 256 KiB, 4 of 1 MiB */
	    {"-BX", 1},		   {"-B4", 25},		{"-B5", 13},	    {"-B6", 4},
	    {"-B7", 1},		   {"-B4 -BX", 25},	{"-B5 -BD", 1},	    {"-B4 -BD -BX", 1},
	    {"--no-frame-crc", 1}, {"-B6 --no-frame-crc -BX", 4}, {"-1", 1}, {"-9 -B5", 13},
	    {"-l", 1},		   {"--content-size -B6", 4},	{"--content-size -BD", 1},
	    {"-B4 --content-size --no-frame-crc", 25},
	};
	char cmd[128];

	for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
		uint8_t *f;
		size_t flen, n;

		snprintf(cmd, sizeof(cmd), "lz4 -q -c %s", v[i].opts);
		if (strstr(v[i].opts, "content-size"))
			f = lz4_file(v[i].opts, data, len, &flen);
		else
			f = run(cmd, data, len, &flen);
		n = check_good(cmd, f, flen, data, len);
		if (v[i].ncks)
			CHECK_EQ(n, v[i].ncks);
		free(f);
	}
}

static void test_sizes(void)
{
	/* 17 MiB; 9 under the sanitizers (each decode of it is a fresh mapping there, and the
	 * machine's page faults are slow): still several blocks of each kind */
	size_t mib = TU_SANITIZED ? 9 : 17, len = mib << 20, flen, n;
	uint8_t *data = make_data(len, 3), *f, *rnd = malloc(300000);

	/* many 4 MiB blocks; legacy 8 MiB blocks; 64 KiB blocks in groups of 2 */
	f = run("lz4 -q -c", data, len, &flen);
	n = check_good("4 MiB blocks", f, flen, data, len);
	CHECK_EQ(n, (mib + 3) / 4);
	free(f);
	f = run("lz4 -q -c -l", data, len, &flen);
	n = check_good("legacy", f, flen, data, len);
	CHECK_EQ(n, (mib + 7) / 8);
	free(f);
	f = run("lz4 -q -c -B4 -BX", data, len, &flen);
	n = check_good("64 KiB blocks", f, flen, data, len);
	CHECK_EQ(n, mib * 8);
	free(f);
	f = run("lz4 -q -c -BD -B4", data, len, &flen);
	n = check_good("64 KiB linked blocks", f, flen, data, len);
	CHECK_EQ(n, 1);
	free(f);
	/* incompressible: stored blocks */
	tu_fill(rnd, 300000, 99, 0);
	f = run("lz4 -q -c -B4 -BX", rnd, 300000, &flen);
	CHECK(flen > 300000);
	check_good("incompressible (stored blocks)", f, flen, rnd, 300000);
	free(f);
	f = run("lz4 -q -c -B4 -BD", rnd, 300000, &flen);
	check_good("incompressible, linked", f, flen, rnd, 300000);
	free(f);
	/* a single byte; nothing */
	f = run("lz4 -q -c", "x", 1, &flen);
	CHECK_EQ(check_good("one byte", f, flen, (const uint8_t *)"x", 1), 1);
	free(f);
	f = run("lz4 -q -c -l", "x", 1, &flen);
	CHECK_EQ(check_good("one byte, legacy", f, flen, (const uint8_t *)"x", 1), 1);
	free(f);
	f = run("lz4 -q -c", NULL, 0, &flen);
	CHECK_EQ(check_good("empty input", f, flen, (const uint8_t *)"", 0), 0);
	free(f);
	f = run("lz4 -q -c -BD --no-frame-crc", NULL, 0, &flen);
	CHECK_EQ(check_good("empty input, no checksum", f, flen, (const uint8_t *)"", 0), 0);
	free(f);
	free(rnd);
	free(data);
}

static void test_concat(const uint8_t *data, size_t len)
{
	static const char *parts[] = {"lz4 -q -c", "lz4 -q -c -BD -B5", "lz4 -q -c -l", "lz4 -q -c -B4 -BX",
				      "lz4 -q -c", "lz4 -q -c --no-frame-crc -BD"};
	static const uint8_t skip[] = {0x5a, 0x2a, 0x4d, 0x18, 5, 0, 0, 0, 1, 2, 3, 4, 5};
	size_t np = sizeof(parts) / sizeof(parts[0]), total = 0, off = 0, elen;
	uint8_t *pieces[6], *e, *cat;
	size_t plen[6];

	e = run("lz4 -q -c", NULL, 0, &elen);
	for (size_t i = 0; i < np; i++) {
		size_t a = len * i / np, b = len * (i + 1) / np;

		pieces[i] = run(parts[i], data + a, b - a, &plen[i]);
		total += plen[i] + sizeof(skip) + elen;
	}
	cat = malloc(total);
	for (size_t i = 0; i < np; i++) {
		memcpy(cat + off, pieces[i], plen[i]);
		off += plen[i];
		if (i % 2 == 0) {
			memcpy(cat + off, skip, sizeof(skip));
			off += sizeof(skip);
		} else {
			memcpy(cat + off, e, elen); /* an empty frame */
			off += elen;
		}
		free(pieces[i]);
	}
	check_good("concatenated frames, skippable and empty frames between", cat, off, data, len);
	/* a skippable frame first */
	memmove(cat + sizeof(skip), cat, off);
	memcpy(cat, skip, sizeof(skip));
	check_good("a skippable frame first", cat, off + sizeof(skip), data, len);
	free(cat);
	free(e);
}

/* Damage at chosen places: each (header, block data, block checksum, content checksum). */
static void test_damage(const uint8_t *data, size_t len)
{
	static struct lblock b[256];
	static const char *cmds[] = {"lz4 -q -c -B5 -BX", "lz4 -q -c -B5", "lz4 -q -c -B5 -BD -BX",
				     "lz4 -q -c -BD -B4", "lz4 -q -c -l"};

	for (size_t c = 0; c < sizeof(cmds) / sizeof(cmds[0]); c++) {
		size_t flen, nb;
		uint8_t *f = run(cmds[c], data, len, &flen), *bad = dup_buf(f, flen, 0);
		struct scan_res good;
		bool bsum = strstr(cmds[c], "-BX"), linked = strstr(cmds[c], "-BD"),
		     legacy = strstr(cmds[c], "-l");

		fprintf(stderr, "damage: %s\n", cmds[c]);
		CHECK_EQ(scan(f, flen, 2, 1 << 20, &good), 0);
		nb = list_blocks(f, flen, b, 256);
		CHECK(nb >= (legacy ? 1 : 3));
		const struct lblock *mid = &b[nb / 2];
		uint64_t mid_uoff = (uint64_t)(nb / 2) * b[0].bmax; /* lz4 fills its blocks */

		if (!legacy) {
			/* the frame header: its checksum fails */
			memcpy(bad, f, flen);
			bad[5] ^= 0x10;
			check_bad_scan("frame header BD", bad, flen, data, len, 0, -EIO, &good);
			CHECK(strstr(last_err, "header checksum") != NULL);
			memcpy(bad, f, flen);
			bad[6] ^= 1;
			check_bad_scan("header checksum", bad, flen, data, len, 0, -EIO, &good);
		}
		/* a block size made larger than the maximum block size: refused */
		memcpy(bad, f, flen);
		put32(bad + mid->coff, legacy ? 0x7E000000 : 0x7fffffff);
		check_bad_scan("absurd block size", bad, flen, data, len, -1, legacy ? 0 : -EIO,
			       &good);
		/* a byte of block data: the block checksum (or the decoder, or the content
		 * checksum) notices; no wrong bytes ever where blocks are checked (without
		 * checks, only the index's segment CRCs can tell) */
		memcpy(bad, f, flen);
		bad[mid->coff + 4 + (mid->total - 8) / 2] ^= 0x55;
		if (!legacy)
			check_bad_scan("block data", bad, flen, data, len,
				       bsum ? (int64_t)mid_uoff : -1, -EIO, bsum ? &good : NULL);
		if (bsum)
			CHECK(strstr(last_err, "block checksum") != NULL);
		if (bsum) {
			memcpy(bad, f, flen);
			bad[mid->coff + mid->total - 2] ^= 1;
			check_bad_scan("block checksum", bad, flen, data, len, (int64_t)mid_uoff,
				       -EIO, &good);
			CHECK(strstr(last_err, "block checksum") != NULL);
		}
		if (!legacy) {
			/* the content checksum: all the bytes, then -EIO; nothing verified */
			memcpy(bad, f, flen);
			bad[flen - 1] ^= 0x20;
			struct scan_res r;
			log_reset();
			CHECK_EQ(scan(bad, flen, 2, 0, &r), -EIO);
			CHECK(r.len == len && memcmp(r.out, data, len) == 0);
			CHECK_EQ(r.verified, 0);
			CHECK(strstr(last_err, "content checksum") != NULL);
			CHECK_EQ(nlog[TFS_LOG_ERR], 1);
			res_free(&r);
		}
		(void)linked;
		res_free(&good);
		free(bad);
		free(f);
	}
}

/* A frame header made here (what lz4 1.9.4 does not write, or writes only from files). */
static size_t make_header(uint8_t *h, uint8_t flg, uint8_t bd, uint64_t csize, uint32_t dictid)
{
	size_t i = 6;

	put32(h, 0x184D2204);
	h[4] = flg;
	h[5] = bd;
	if (flg & 8) {
		put32(h + i, (uint32_t)csize);
		put32(h + i + 4, (uint32_t)(csize >> 32));
		i += 8;
	}
	if (flg & 1) {
		put32(h + i, dictid);
		i += 4;
	}
	h[i] = (uint8_t)(XXH32(h + 4, i - 4, 0) >> 8);
	return i + 1;
}

static void test_crafted_headers(const uint8_t *data, size_t len)
{
	uint8_t *f, *g;
	size_t flen, hlen;
	struct scan_res good, r;

	f = run("lz4 -q -c -B6", data, len, &flen);
	CHECK_EQ(scan(f, flen, 2, 1 << 20, &good), 0);
	g = malloc(flen + 64);
	/* a content size, added here: right, then wrong (all the bytes, then -EIO) */
	hlen = make_header(g, f[4] | 8, f[5], len, 0);
	memcpy(g + hlen, f + 7, flen - 7);
	check_good("crafted content size", g, hlen + flen - 7, data, len);
	hlen = make_header(g, f[4] | 8, f[5], len + 1, 0);
	log_reset();
	CHECK_EQ(scan(g, hlen + flen - 7, 2, 0, &r), -EIO);
	CHECK(r.len == len && memcmp(r.out, data, len) == 0);
	CHECK_EQ(r.verified, 0);
	CHECK(strstr(last_err, "header says") != NULL);
	res_free(&r);
	/* a dictionary id: refused */
	hlen = make_header(g, f[4] | 1, f[5], 0, 1234);
	memcpy(g + hlen, f + 7, flen - 7);
	check_bad_scan("dictionary id", g, hlen + flen - 7, data, len, 0, -ENOTSUP, NULL);
	CHECK(strstr(last_err, "dictionary") != NULL);
	/* version 10, reserved bits, block size id 3: refused */
	hlen = make_header(g, (uint8_t)((f[4] & 0x3f) | 0x80), f[5], 0, 0);
	memcpy(g + hlen, f + 7, flen - 7);
	check_bad_scan("version 10", g, hlen + flen - 7, data, len, 0, -ENOTSUP, NULL);
	hlen = make_header(g, f[4] | 2, f[5], 0, 0);
	check_bad_scan("reserved FLG bit", g, hlen + flen - 7, data, len, 0, -ENOTSUP, NULL);
	hlen = make_header(g, f[4], 0x30, 0, 0);
	check_bad_scan("block size id 3", g, hlen + flen - 7, data, len, 0, -ENOTSUP, NULL);
	/* an empty frame declaring content */
	hlen = make_header(g, 0x40 | 0x20 | 8, 0x40, 5, 0);
	put32(g + hlen, 0);
	check_bad_scan("empty frame with a content size", g, hlen + 4, data, len, 0, -EIO, NULL);
	/* an empty frame with a wrong content checksum */
	hlen = make_header(g, 0x40 | 0x20 | 4, 0x40, 0, 0);
	put32(g + hlen, 0);
	put32(g + hlen + 4, 0x12345678);
	check_bad_scan("empty frame, bad checksum", g, hlen + 8, data, len, 0, -EIO, NULL);
	/* an uncompressed block of 0 bytes (valid); a compressed one of a zero byte (what
	 * lz4 -d makes of it) */
	hlen = make_header(g, 0x60, 0x40, 0, 0);
	put32(g + hlen, 0x80000000);
	put32(g + hlen + 4, 0);
	log_reset();
	CHECK_EQ(scan(g, hlen + 8, 2, 4096, &r), 0);
	CHECK_EQ(r.len, 0);
	CHECK_EQ(r.ncks, 0);
	CHECK_EQ(nproblems(), 0);
	res_free(&r);
	put32(g + hlen, 1);
	g[hlen + 4] = 0;
	put32(g + hlen + 5, 0);
	{
		size_t dl;
		uint8_t *dc = tu_pipe("lz4 -q -dc", g, hlen + 9, &dl);

		log_reset();
		CHECK_EQ(scan(g, hlen + 9, 1, 4096, &r), dc ? 0 : -EIO);
		CHECK_EQ(r.len, 0);
		res_free(&r);
		free(dc);
	}
	res_free(&good);
	free(g);
	free(f);
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

/* A source of unknown size: the same bytes and checkpoints; truncation and garbage too. */
static void test_unknown_size(const uint8_t *data, size_t len)
{
	uint8_t *f, *g;
	size_t flen;
	struct scan_res ref, r;
	struct usrc u;
	struct src *in;

	f = run("lz4 -q -c -B6", data, len, &flen);
	CHECK_EQ(scan(f, flen, 2, 1 << 20, &ref), 0);
	log_reset();
	u = (struct usrc){f, flen};
	in = src_new(&usrc_ops, &u, SRC_SIZE_UNKNOWN);
	CHECK_EQ(scan_src(in, 2, 65536, 0, &r), 0);
	CHECK(r.len == len && memcmp(r.out, data, len) == 0);
	CHECK_EQ(r.ncks, ref.ncks);
	for (size_t i = 0; i < r.ncks && i < ref.ncks; i++)
		CHECK(same_ckpt(&r.cks[i], &ref.cks[i]));
	res_free(&r);
	src_free(in);
	CHECK_EQ(nproblems(), 0);

	/* cut in the middle of a block: the workers find it */
	u.len = (size_t)(ref.cks[1].coff + ref.cks[1].clen / 2);
	in = src_new(&usrc_ops, &u, SRC_SIZE_UNKNOWN);
	log_reset();
	CHECK_EQ(scan_src(in, 2, 65536, 0, &r), -EIO);
	CHECK(r.verified >= ref.cks[1].uoff && r.verified < ref.cks[2].uoff);
	CHECK(memcmp(r.out, data, r.verified) == 0);
	CHECK_EQ(nlog[TFS_LOG_ERR], 1);
	CHECK(strstr(last_err, "truncated") != NULL);
	res_free(&r);
	src_free(in);

	/* garbage after the end */
	g = dup_buf(f, flen, 5000);
	tu_fill(g + flen, 5000, 3, 0);
	u = (struct usrc){g, flen + 5000};
	in = src_new(&usrc_ops, &u, SRC_SIZE_UNKNOWN);
	log_reset();
	CHECK_EQ(scan_src(in, 1, 1 << 20, 0, &r), 0);
	CHECK_EQ(r.len, len);
	CHECK_EQ(nlog[TFS_LOG_NOTICE], 1);
	res_free(&r);
	src_free(in);
	free(g);
	res_free(&ref);
	free(f);
}

static void test_truncation(const uint8_t *data, size_t len)
{
	static struct lblock b[256];
	static const char *cmds[] = {"lz4 -q -c -B5", "lz4 -q -c -B5 -BX", "lz4 -q -c -BD -B4",
				     "lz4 -q -c -l", "lz4 -q -c --no-frame-crc -B6"};

	quiet = true;
	for (size_t c = 0; c < sizeof(cmds) / sizeof(cmds[0]); c++) {
		size_t flen, nb;
		uint8_t *f = run(cmds[c], data, len, &flen);
		bool legacy = strstr(cmds[c], "-l");
		struct scan_res good;

		CHECK_EQ(scan(f, flen, 2, 1 << 20, &good), 0);
		nb = list_blocks(f, flen, b, 256);
		const struct lblock *mid = &b[nb / 2], *last = &b[nb - 1];
		size_t cuts[] = {1,
				 3,
				 4,
				 6,
				 (size_t)b[0].coff - 1,
				 (size_t)b[0].coff,
				 (size_t)b[0].coff + 2,
				 (size_t)mid->coff,
				 (size_t)mid->coff + 3,
				 (size_t)mid->coff + 4,
				 (size_t)(mid->coff + mid->total / 2),
				 (size_t)(mid->coff + mid->total - 1),
				 (size_t)(last->coff + last->total),
				 (size_t)(last->coff + last->total + 2),
				 flen - 1};

		fprintf(stderr, "truncations: %s\n", cmds[c]);
		for (size_t i = 0; i < sizeof(cuts) / sizeof(cuts[0]); i++) {
			size_t cut = cuts[i];

			if (cut >= flen || cut == 0)
				continue;
			/* legacy has no end mark: a cut at a block boundary is a shorter file */
			bool clean = legacy && (cut == mid->coff || cut == last->coff + last->total);
			bool garbage = legacy && !clean && cut >= b[0].coff &&
				       (cut - b[0].coff) % 1 == 0 &&
				       (cut == mid->coff + 3 || cut == last->coff + last->total + 2 ||
					cut == b[0].coff + 2);
			check_bad_scan("truncated", f, cut, data, len, -1,
				       clean || garbage ? 0 : -EIO, &good);
			if (!clean && !garbage &&
			    !strstr(last_err, cut < 4 ? "not an lz4 file" : "truncated")) {
				fprintf(stderr, "cut %zu of %zu: %s\n", cut, flen, last_err);
				CHECK(0);
			}
		}
		res_free(&good);
		free(f);
	}
	quiet = false;
}

static void test_zero_length(void)
{
	static const uint8_t nothing[1];
	struct scan_res r;
	struct src *in = src_from_mem(nothing, 0);

	log_reset();
	CHECK_EQ(scan_src(in, 2, 4096, 0, &r), -EIO);
	CHECK_EQ(r.len, 0);
	CHECK_EQ(r.ncks, 0);
	CHECK_EQ(r.verified, 0);
	CHECK_EQ(nlog[TFS_LOG_ERR], 1);
	CHECK(strstr(last_err, "empty") != NULL);
	res_free(&r);
	src_free(in);
	log_reset();
	CHECK_EQ(scan((const uint8_t *)"hello, world, this is not lz4", 29, 1, 4096, &r), -EIO);
	CHECK_EQ(r.len, 0);
	CHECK_EQ(nlog[TFS_LOG_ERR], 1);
	res_free(&r);
}

static void test_garbage(const uint8_t *data, size_t len)
{
	static const size_t sizes[] = {1, 3, 4, 7, 100, 100000};
	static const char *cmds[] = {"lz4 -q -c -B5", "lz4 -q -c -l"};

	for (size_t c = 0; c < 2; c++) {
		uint8_t *f, *bad;
		size_t flen;
		struct scan_res good, r;

		f = run(cmds[c], data, len, &flen);
		CHECK_EQ(scan(f, flen, 2, 1 << 20, &good), 0);
		for (size_t g = 0; g < sizeof(sizes) / sizeof(sizes[0]); g++) {
			for (int zeros = 0; zeros < 2; zeros++) {
				size_t n = sizes[g];

				fprintf(stderr, "garbage after %s: %zu %s bytes\n", cmds[c], n,
					zeros ? "zero" : "random");
				bad = dup_buf(f, flen, n);
				if (zeros)
					memset(bad + flen, 0, n);
				else
					tu_fill(bad + flen, n, (uint32_t)n, 0);
				if (!zeros && n >= 4)
					bad[flen + 3] = 0xff; /* not a legacy block size */
				log_reset();
				CHECK_EQ(scan(bad, flen + n, 2, 1 << 20, &r), 0);
				CHECK(r.len == len && memcmp(r.out, data, len) == 0);
				CHECK_EQ(r.ncks, good.ncks);
				for (size_t i = 0; i < r.ncks && i < good.ncks; i++)
					CHECK(same_ckpt(&r.cks[i], &good.cks[i]));
				CHECK_EQ(nlog[TFS_LOG_ERR] + nlog[TFS_LOG_WARNING], 0);
				CHECK_EQ(nlog[TFS_LOG_NOTICE], zeros ? 0 : 1);
				if (!zeros)
					CHECK(strstr(last_notice, "garbage") != NULL);
				res_free(&r);
				/* a decoder that runs to the end stops there too */
				CHECK_EQ(decode_chunk(bad, flen + n, good.cks, good.ncks - 1, len,
						      data, true, 3),
					 0);
				free(bad);
			}
		}
		/* garbage, then a frame: damage, not garbage */
		bad = dup_buf(f, flen, 64 + flen);
		tu_fill(bad + flen, 64, 5, 0);
		memcpy(bad + flen + 64, f, flen);
		check_bad_scan("garbage then a frame", bad, 2 * flen + 64, data, len, (int64_t)len,
			       -EIO, NULL);
		CHECK(strstr(last_err, "unexpected data") != NULL);
		/* the magic, then junk: a damaged frame */
		if (c == 0) {
			memcpy(bad + flen, f, 4);
			tu_fill(bad + flen + 4, 60, 5, 0);
			check_bad_scan("magic then junk", bad, flen + 64, data, len, (int64_t)len,
				       -EIO, NULL);
		}
		free(bad);
		res_free(&good);
		free(f);
	}
}

/* Random damage to a concatenated file: the scan and the decoders return the original bytes
 * (as far as they say they are verified) or an error, nothing else, and never crash or hang. */
static void test_random_damage(const uint8_t *data, size_t len)
{
	static const char *cmds[] = {"lz4 -q -c -B4 -BX", "lz4 -q -c -B5 -BD", "lz4 -q -c -l",
				     "lz4 -q -c -B4 --no-frame-crc"};
	size_t n[4], total = 0, off = 0, checked;
	uint8_t *p[4], *cat, *bad, *buf = malloc(len);
	struct scan_res good, r;
	uint32_t x = 4242;

	for (size_t i = 0; i < 4; i++) {
		p[i] = run(cmds[i], data + len * i / 4, len * (i + 1) / 4 - len * i / 4, &n[i]);
		total += n[i];
	}
	cat = malloc(total);
	for (size_t i = 0; i < 4; i++) {
		memcpy(cat + off, p[i], n[i]);
		off += n[i];
		free(p[i]);
	}
	bad = malloc(total);
	checked = n[0] + n[1]; /* the parts with checks: damage is put there */
	CHECK_EQ(scan(cat, total, 2, 1 << 20, &good), 0);
	CHECK(good.len == len && memcmp(good.out, data, len) == 0);
	quiet = true;
	for (int i = 0; i < 300; i++) {
		memcpy(bad, cat, total);
		x = x * 1103515245 + 12345;
		if (i % 5 == 4) { /* a run of junk */
			size_t at = (x >> 8) % (checked - 16);
			tu_fill(bad + at, 16, x, 0);
		} else {
			for (int k = 0; k <= i % 3; k++) {
				x = x * 1103515245 + 12345;
				bad[(x >> 8) % checked] ^= (uint8_t)(1u << (x % 8));
			}
		}
		ssize_t rc = scan(bad, total, 1 + (unsigned)(i % 3), i % 2 ? 0 : 1 << 20, &r);
		CHECK(rc == 0 || rc == -EIO || rc == -ENOTSUP);
		if (rc == 0)
			CHECK(r.len == len && memcmp(r.out, data, len) == 0);
		else
			CHECK(r.verified <= len && memcmp(r.out, data, r.verified) == 0);
		res_free(&r);

		struct src *in = src_from_mem(bad, total);
		for (size_t k = i % 4; k < good.ncks; k += 4) {
			struct codec_ckpt ck = good.cks[k];
			struct codec_dec *d;
			uint64_t got = 0;
			ssize_t m = 0;

			if (codec_lz4.dec_new(in, &ck, NULL, 0, &d))
				continue;
			while (got < len - ck.uoff &&
			       (m = codec_lz4.dec_read(d, buf + got, len - ck.uoff - got)) > 0)
				got += (uint64_t)m;
			CHECK(m >= 0 || m == -EIO || m == -ENOTSUP);
			/* without block checksums a flipped literal decodes: only the blocks
			 * with checks (the first part) promise right bytes to a decoder */
			if (ck.uoff + got <= len / 4)
				CHECK(memcmp(buf, data + ck.uoff, got) == 0);
			codec_lz4.dec_free(d);
		}
		src_free(in);
	}
	quiet = false;
	res_free(&good);
	free(buf);
	free(bad);
	free(cat);
}

static void test_bad_checkpoints(const uint8_t *data, size_t len)
{
	static const char *cmds[] = {"lz4 -q -c -B5", "lz4 -q -c -BD -B5", "lz4 -q -c -l"};

	for (size_t c = 0; c < 3; c++) {
		uint8_t *f;
		size_t flen;
		struct scan_res good;
		struct codec_dec *d;
		struct codec_ckpt ck;
		struct src *in;

		f = run(cmds[c], data, len, &flen);
		CHECK_EQ(scan(f, flen, 2, 1 << 20, &good), 0);
		in = src_from_mem(f, flen);
		log_reset();
		ck = good.cks[0];
		ck.bits = 0;
		CHECK_EQ(codec_lz4.dec_new(in, &ck, NULL, 0, &d), -EINVAL);
		CHECK(d == NULL);
		ck = good.cks[0];
		ck.flags = 7 << 16;
		CHECK_EQ(codec_lz4.dec_new(in, &ck, NULL, 0, &d), -EINVAL);
		/* a checkpoint that does not match the file: -EIO, no misplaced bytes */
		for (int kind = 0; kind < 5; kind++) {
			static uint8_t buf[65536];
			size_t i = good.ncks > 1 ? 1 : 0;
			uint64_t got = 0;
			ssize_t n;

			ck = good.cks[i];
			switch (kind) {
			case 0:
				ck.clen += 1;
				break;
			case 1:
				ck.ulen -= 1;
				break;
			case 2:
				ck.bits += 1;
				break;
			case 3:
				ck.coff += 1; /* not a block header */
				break;
			case 4:
				ck.coff = flen + 100; /* past the end */
				break;
			}
			CHECK_EQ(codec_lz4.dec_new(in, &ck, NULL, 0, &d), 0);
			while ((n = codec_lz4.dec_read(d, buf, sizeof(buf))) > 0 && got < len)
				got += (uint64_t)n;
			CHECK_EQ(n, -EIO);
			CHECK(got <= good.cks[i].ulen);
			codec_lz4.dec_free(d);
		}
		CHECK(nlog[TFS_LOG_ERR] >= 6);
		src_free(in);
		res_free(&good);
		free(f);
	}
}

static void test_sink_error_and_free(const uint8_t *data, size_t len)
{
	uint8_t *f;
	size_t flen;
	struct scan_res r;
	struct src *in;

	f = run("lz4 -q -c -B6", data, len, &flen);
	in = src_from_mem(f, flen);
	CHECK_EQ(scan_src(in, 3, 1 << 20, 3, &r), -ENOSPC);
	CHECK_EQ(r.ncks, 2);
	CHECK_EQ(r.len, 2 * MB); /* two 1 MiB blocks */
	res_free(&r);

	/* freeing a scan early, with workers waiting or busy */
	for (unsigned threads = 1; threads <= 8; threads *= 2) {
		struct codec_opts opts = {.threads = threads};
		struct codec_sink sink = {.checkpoint = sink_fn, .opaque = &r};
		struct codec_scan *s;
		uint8_t buf[1000];

		memset(&r, 0, sizeof(r));
		r.reader = pthread_self();
		CHECK_EQ(codec_lz4.scan_new(in, &opts, &sink, &s), 0);
		codec_lz4.scan_free(s);
		CHECK_EQ(codec_lz4.scan_new(in, &opts, &sink, &s), 0);
		CHECK_EQ(codec_lz4.scan_read(s, buf, sizeof(buf)), sizeof(buf));
		CHECK(memcmp(buf, data, sizeof(buf)) == 0);
		usleep(20000);
		codec_lz4.scan_free(s);
		res_free(&r);
	}
	codec_lz4.scan_free(NULL);
	codec_lz4.dec_free(NULL);
	src_free(in);
	free(f);
}

static int test(void)
{
	size_t len = 3 * MB + 12345;
	uint8_t *data;
	char cmd[128];

	if (!tu_have("lz4")) {
		fprintf(stderr, "lz4 not installed\n");
		return 77;
	}
	snprintf(tmpdir, sizeof(tmpdir), "/tmp/test_lz4.XXXXXX");
	if (!mkdtemp(tmpdir)) {
		perror("mkdtemp");
		return 1;
	}
	tfs_log_set_sink(log_sink, NULL);
	data = make_data(len, 1);
	test_probe();
	test_options(data, len);
	test_sizes();
	test_concat(data, len);
	test_damage(data, len);
	test_crafted_headers(data, len);
	test_unknown_size(data, len);
	test_truncation(data, len);
	test_zero_length();
	test_garbage(data, len);
	/* under the sanitizers parts of 131586 bytes: still over a group, two checkpoints in
	 * each -B4 part */
	test_random_damage(data, TU_SANITIZED ? len / 6 : len / 2);
	test_bad_checkpoints(data, len);
	test_sink_error_and_free(data, len);
	free(data);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", tmpdir);
	if (system(cmd) != 0)
		fprintf(stderr, "cannot remove %s\n", tmpdir);
	return tu_exit();
}

int main(void)
{
	return test();
}
