/* Unit tests of the lzop codec (codecs/lzo/), on data made by the real lzop in memory.
 *
 * Every good file is scanned whole with 1, 2 and 3 threads (bytes and checkpoints must not
 * depend on it), compared with the original, its checkpoints checked against the blocks a small
 * independent parser finds in the file, then index_blocks must give the same checkpoints and
 * size, and every checkpoint is decoded.  Damaged files (flipped bytes in payloads, checksums and
 * headers; truncations; trailing garbage; absurd sizes; refused features) must give the original
 * bytes up to scan_verified(), an error and one logged message where the damage matters, and
 * never anything else, a crash or a hang.
 */
#include "codecs/codec.h"
#include "common/log.h"
#include "testutil.h"

#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#define BLOCK (256u << 10) /* lzop's block size */
#define GROUP (1u << 20)   /* the codec's checkpoint grouping */

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

/* ---- scanning, with checks of the sink contract ---- */

struct scan_res {
	uint8_t *out;
	size_t len;
	ssize_t rc; /* the final scan_read result: 0 or -errno */
	uint64_t verified;
	char name[256];
	bool has_name;
	struct codec_ckpt *cks;
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
		r->contract_errors++; /* lzo has no aux blob */
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

/* Scans the source whole in reads of step bytes.  Returns the final scan_read result. */
static ssize_t scan_src(struct src *in, unsigned threads, size_t step, int fail_at,
			struct scan_res *r)
{
	struct codec_opts opts = {.spacing = 1 << 20, .threads = threads};
	struct codec_sink sink = {.checkpoint = sink_fn, .opaque = r};
	struct codec_scan *s;
	size_t cap = 1 << 16;
	const char *nm;
	ssize_t n;
	int err;

	memset(r, 0, sizeof(*r));
	r->reader = pthread_self();
	r->fail_at = fail_at;
	r->out = malloc(cap);
	err = codec_lzo.scan_new(in, &opts, &sink, &s);
	CHECK_EQ(err, 0);
	if (err)
		return r->rc = err;
	nm = codec_lzo.scan_name(s);
	if (nm) {
		r->has_name = true;
		snprintf(r->name, sizeof(r->name), "%s", nm);
	}
	for (;;) {
		if (r->len + step > cap) {
			cap = (r->len + step) * 2;
			r->out = realloc(r->out, cap);
		}
		n = codec_lzo.scan_read(s, r->out + r->len, step);
		if (n <= 0)
			break;
		CHECK(n <= (ssize_t)step);
		r->len += (size_t)n;
		r->returned = r->len;
	}
	r->rc = n;
	CHECK_EQ(codec_lzo.scan_read(s, r->out, step), n); /* the end and errors are sticky */
	r->verified = codec_lzo.scan_verified(s);
	CHECK(r->verified <= r->len);
	if (n == 0)
		CHECK_EQ(r->verified, r->len);
	for (size_t i = 0; i < r->ncks; i++) {
		CHECK(r->cks[i].uoff < r->len); /* every checkpoint starts some returned bytes */
		/* chunks tile the returned bytes */
		CHECK_EQ(r->cks[i].uoff + r->cks[i].ulen,
			 i + 1 < r->ncks ? r->cks[i + 1].uoff : r->len);
	}
	CHECK_EQ(r->contract_errors, 0);
	codec_lzo.scan_free(s);
	return n;
}

static ssize_t scan(const uint8_t *lzo, size_t len, unsigned threads, size_t step,
		    struct scan_res *r)
{
	struct src *in = src_from_mem(lzo, len);
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

/* index_blocks: its checkpoints (checked for order and ulen) and the size. */
struct fast_res {
	struct codec_ckpt *cks;
	size_t ncks;
	int bad;
};

static int fast_sink(void *opaque, const struct codec_ckpt *c, const void *aux, size_t auxlen)
{
	struct fast_res *f = opaque;

	if (aux || auxlen || c->ulen == 0)
		f->bad++;
	if (f->ncks && c->uoff != f->cks[f->ncks - 1].uoff + f->cks[f->ncks - 1].ulen)
		f->bad++;
	if (!f->ncks && c->uoff)
		f->bad++;
	f->cks = realloc(f->cks, (f->ncks + 1) * sizeof(*f->cks));
	f->cks[f->ncks++] = *c;
	return 0;
}

static int index_blocks(const uint8_t *lzo, size_t len, struct fast_res *f, uint64_t *usize)
{
	struct src *in = src_from_mem(lzo, len);
	struct codec_opts opts = {.threads = 2};
	struct codec_sink sink = {.checkpoint = fast_sink, .opaque = f};
	int err;

	memset(f, 0, sizeof(*f));
	*usize = 12345;
	err = codec_lzo.index_blocks(in, &opts, &sink, usize);
	CHECK_EQ(f->bad, 0);
	src_free(in);
	return err;
}

/* Decodes chunk i (its ulen set) and compares it with want (unless NULL); then, if more, goes
 * on to the end of the data.  Returns the decoder's final result. */
static ssize_t decode_chunk(const uint8_t *lzo, size_t lzolen, const struct codec_ckpt *cks,
			    size_t i, uint64_t end, const uint8_t *want, bool more)
{
	struct src *in = src_from_mem(lzo, lzolen);
	struct codec_ckpt ck = cks[i];
	struct codec_dec *d;
	static uint8_t buf[100003];
	uint64_t got = 0, stop = more ? end - ck.uoff : ck.ulen;
	ssize_t n = 0;
	int err;

	err = codec_lzo.dec_new(in, &ck, NULL, 0, &d);
	if (err) {
		src_free(in);
		return err;
	}
	CHECK(codec_lzo.dec_memory(d) >= sizeof(void *));
	while (got < stop && (n = codec_lzo.dec_read(d, buf, sizeof(buf))) > 0) {
		if (want && ck.uoff + got + (uint64_t)n <= end)
			CHECK(memcmp(buf, want + ck.uoff + got, (size_t)n) == 0);
		got += (uint64_t)n;
	}
	if (n >= 0) {
		CHECK(got >= stop);
		if (more) {
			n = codec_lzo.dec_read(d, buf, sizeof(buf));
			CHECK_EQ(n, 0); /* the end of the data */
			CHECK_EQ(got, end - ck.uoff);
		}
	} else {
		CHECK_EQ(codec_lzo.dec_read(d, buf, sizeof(buf)), n); /* sticky */
	}
	codec_lzo.dec_free(d);
	src_free(in);
	return n > 0 ? 0 : n;
}

/* ---- an independent look at the file: its blocks ---- */

struct lblock {
	uint64_t coff, uoff; /* header offset, decompressed offset */
	uint32_t ulen, clen, hlen;
	uint32_t flags;
	bool part_start; /* first block of its part */
};

static uint32_t be32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

/* Offset of the first block header of the part at off, *flags set; lzop 1.04 headers only. */
static size_t header_end(const uint8_t *f, size_t off, uint32_t *flags)
{
	size_t i = off + 9 + 2 + 2 + 2 + 1 + 1;

	*flags = be32(f + i);
	i += 4;
	if (*flags & 0x800)
		i += 4; /* filter */
	i += 12;	/* mode, mtime low and high */
	i += 1 + f[i];	/* name */
	i += 4;		/* header checksum */
	if (*flags & 0x40)
		i += 4 + be32(f + i) + 4; /* extra field */
	return i;
}

/* The blocks of a (good, concatenated) lzop file. */
static size_t list_blocks(const uint8_t *f, size_t len, struct lblock *out, size_t max,
			  uint64_t *header_ends)
{
	size_t n = 0, off = 0;
	uint64_t uoff = 0;

	while (off + 9 <= len && memcmp(f + off, "\x89LZO", 4) == 0) {
		uint32_t flags;
		bool first = true;

		off = header_end(f, off, &flags);
		if (header_ends)
			header_ends[0] = off, header_ends = NULL;
		for (;;) {
			uint32_t ul = be32(f + off), cl, h = 8;

			if (ul == 0) {
				off += 4;
				break;
			}
			cl = be32(f + off + 4);
			h += 4 * (!!(flags & 1) + !!(flags & 0x100));
			if (cl < ul)
				h += 4 * (!!(flags & 2) + !!(flags & 0x200));
			if (n < max)
				out[n] = (struct lblock){off, uoff, ul, cl, h, flags, first};
			n++;
			first = false;
			uoff += ul;
			off += h + cl;
		}
	}
	return n;
}

/* The checkpoints follow the grouping rule over the blocks the file holds. */
static void check_groups(const uint8_t *f, size_t len, const struct scan_res *r)
{
	static struct lblock b[4096];
	size_t nb = list_blocks(f, len, b, 4096, NULL), k = 0;

	CHECK(nb <= 4096);
	for (size_t i = 0; i < r->ncks; i++) {
		const struct codec_ckpt *c = &r->cks[i];
		uint64_t ulen = 0, first = k;

		if (k >= nb) {
			CHECK(k < nb);
			return;
		}
		CHECK_EQ(c->uoff, b[k].uoff);
		CHECK_EQ(c->coff, b[k].coff);
		CHECK_EQ(c->extra, k + 1);
		CHECK_EQ(c->flags, b[k].flags);
		while (k < nb && (k == first || !b[k].part_start) && ulen < GROUP &&
		       k - first < 1024)
			ulen += b[k++].ulen;
		CHECK_EQ(c->ulen, ulen);
		CHECK_EQ(c->bits, k - first);
		CHECK_EQ(c->clen, b[k - 1].coff + b[k - 1].hlen + b[k - 1].clen - c->coff);
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
	if (len > 2 * GROUP)
		tu_fill(b + GROUP, 3 * BLOCK, seed + 7, 0);
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

/* lzop on a file named name (so the name is stored), options opts. */
static uint8_t *lzop_file(const char *opts, const char *name, const uint8_t *data, size_t len,
			  size_t *outlen)
{
	char path[256], cmd[512];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", tmpdir, name);
	f = fopen(path, "wb");
	CHECK(f != NULL);
	if (!f)
		exit(1);
	CHECK_EQ(fwrite(data, 1, len, f), len);
	fclose(f);
	snprintf(cmd, sizeof(cmd), "cd %s && lzop -c %s '%s'", tmpdir, opts, name);
	return run(cmd, NULL, 0, outlen);
}

/* Scans a good file with several thread counts and read sizes, checks the bytes, the name,
 * the checkpoints against the blocks, index_blocks and every chunk.  Returns the number of
 * checkpoints. */
static size_t check_good(const char *what, const uint8_t *lzo, size_t lzolen, const uint8_t *want,
			 size_t wantlen, const char *name, bool checked)
{
	static const unsigned threads[] = {1, 2, 3};
	static const size_t steps[] = {1 << 20, 4093, 65536};
	struct scan_res ref, r;
	struct fast_res f;
	uint64_t usize;
	int err;

	fprintf(stderr, "good: %s (%zu -> %zu bytes)\n", what, wantlen, lzolen);
	log_reset();
	CHECK_EQ(scan(lzo, lzolen, 1, 1 << 20, &ref), 0);
	CHECK_EQ(ref.len, wantlen);
	CHECK(ref.len == wantlen && memcmp(ref.out, want, wantlen) == 0);
	CHECK_EQ(ref.has_name, name != NULL);
	if (name)
		CHECK(strcmp(ref.name, name) == 0);
	for (size_t t = 1; t < sizeof(threads) / sizeof(threads[0]); t++) {
		CHECK_EQ(scan(lzo, lzolen, threads[t], steps[t], &r), 0);
		CHECK(r.len == ref.len && memcmp(r.out, ref.out, ref.len) == 0);
		CHECK_EQ(r.ncks, ref.ncks);
		for (size_t i = 0; i < r.ncks && i < ref.ncks; i++)
			CHECK(same_ckpt(&r.cks[i], &ref.cks[i]));
		res_free(&r);
	}
	CHECK_EQ(nlog[TFS_LOG_ERR] + nlog[TFS_LOG_WARNING] + nlog[TFS_LOG_NOTICE], 0);
	check_groups(lzo, lzolen, &ref);

	/* index_blocks: the same checkpoints, without decoding -- if every block is checked */
	err = index_blocks(lzo, lzolen, &f, &usize);
	if (checked) {
		CHECK_EQ(err, 0);
		CHECK_EQ(usize, wantlen);
		CHECK_EQ(f.ncks, ref.ncks);
		for (size_t i = 0; i < f.ncks && i < ref.ncks; i++)
			CHECK(same_ckpt(&f.cks[i], &ref.cks[i]));
	} else {
		CHECK_EQ(err, -ENOTSUP);
	}
	free(f.cks);

	/* every chunk; from the first checkpoint through to the end of the data */
	for (size_t i = 0; i < ref.ncks; i++)
		CHECK_EQ(decode_chunk(lzo, lzolen, ref.cks, i, wantlen, want, false), 0);
	if (ref.ncks) {
		CHECK_EQ(decode_chunk(lzo, lzolen, ref.cks, 0, wantlen, want, true), 0);
		CHECK_EQ(decode_chunk(lzo, lzolen, ref.cks, ref.ncks - 1, wantlen, want, true), 0);
	}
	/* the first byte and the last byte, through decoders */
	if (ref.ncks) {
		struct src *in = src_from_mem(lzo, lzolen);
		struct codec_ckpt ck = ref.cks[ref.ncks - 1];
		struct codec_dec *d;
		uint8_t *buf = malloc(wantlen);
		ssize_t n;
		uint64_t got = 0;

		CHECK_EQ(codec_lzo.dec_new(in, &ref.cks[0], NULL, 0, &d), 0);
		CHECK_EQ(codec_lzo.dec_read(d, buf, 1), 1);
		CHECK_EQ(buf[0], want[0]);
		codec_lzo.dec_free(d);
		CHECK_EQ(codec_lzo.dec_new(in, &ck, NULL, 0, &d), 0);
		while ((n = codec_lzo.dec_read(d, buf + got, wantlen - got)) > 0)
			got += (uint64_t)n;
		CHECK_EQ(n, 0);
		CHECK_EQ(ck.uoff + got, wantlen);
		CHECK_EQ(buf[got - 1], want[wantlen - 1]);
		codec_lzo.dec_free(d);
		free(buf);
		src_free(in);
	}
	CHECK_EQ(nlog[TFS_LOG_ERR] + nlog[TFS_LOG_WARNING] + nlog[TFS_LOG_NOTICE], 0);
	size_t n = ref.ncks;
	res_free(&ref);
	return n;
}

/* ---- the tests ---- */

static void test_probe(void)
{
	static const uint8_t magic[] = {0x89, 'L', 'Z', 'O', 0, 0x0d, 0x0a, 0x1a, 0x0a, 0x10};

	CHECK(codec_lzo.probe(magic, sizeof(magic)));
	CHECK(codec_lzo.probe(magic, 9));
	CHECK(!codec_lzo.probe(magic, 8));
	CHECK(!codec_lzo.probe((const uint8_t *)"\x1f\x8b\x08", 3));
	CHECK(!codec_lzo.probe((const uint8_t *)"", 0));
	CHECK(codec_probe(magic, sizeof(magic)) == &codec_lzo);
	CHECK(codec_by_name("lzo") == &codec_lzo);
}

static void test_options(const uint8_t *data, size_t len)
{
	static const struct {
		const char *opts;
		bool checked;
	} v[] = {
	    {"-1", true},  {"-3", true},  {"-9", true},		 {"--crc32", true},
	    {"-F", false}, {"-CC", true}, {"-CC --crc32", true}, {"-F --crc32", false},
	};
	char cmd[128];

	for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
		uint8_t *lzo;
		size_t lzolen, n;

		/* from stdin: no name stored */
		snprintf(cmd, sizeof(cmd), "lzop -c %s", v[i].opts);
		lzo = run(cmd, data, len, &lzolen);
		n = check_good(cmd, lzo, lzolen, data, len, NULL, v[i].checked);
		CHECK_EQ(n, (len + GROUP - 1) / GROUP);
		free(lzo);
	}
}

static void test_names(const uint8_t *data, size_t len)
{
	uint8_t *lzo;
	size_t lzolen;
	char dir[128];

	lzo = lzop_file("", "vm.img", data, len, &lzolen);
	check_good("stored name", lzo, lzolen, data, len, "vm.img", true);
	free(lzo);
	/* -n only affects decompression: the name is stored all the same */
	lzo = lzop_file("-n -9", "disk with spaces.raw", data, len, &lzolen);
	check_good("stored name with spaces", lzo, lzolen, data, len, "disk with spaces.raw", true);
	free(lzo);
	/* a stored path (-P): the base name only */
	snprintf(dir, sizeof(dir), "%s/sub", tmpdir);
	mkdir(dir, 0700);
	lzo = lzop_file("-P", "sub/inner.bin", data, len, &lzolen);
	check_good("stored path", lzo, lzolen, data, len, "inner.bin", true);
	free(lzo);
}

static void test_stored_and_big(void)
{
	size_t len = 9u << 20, lzolen, n;
	uint8_t *rnd = malloc(len), *data, *lzo;

	/* incompressible: every block stored */
	tu_fill(rnd, len, 99, 0);
	lzo = run("lzop -c", rnd, 3 * BLOCK + 1000, &lzolen);
	CHECK(lzolen > 3 * BLOCK + 1000);
	check_good("incompressible (stored blocks)", lzo, lzolen, rnd, 3 * BLOCK + 1000, NULL,
		   true);
	free(lzo);
	lzo = run("lzop -c --crc32 -CC", rnd, 3 * BLOCK + 1000, &lzolen);
	check_good("stored blocks, CRC-32 both", lzo, lzolen, rnd, 3 * BLOCK + 1000, NULL, true);
	free(lzo);

	/* many blocks, mixed */
	data = make_data(len, 3);
	lzo = run("lzop -c", data, len, &lzolen);
	n = check_good("9 MiB, mixed", lzo, lzolen, data, len, NULL, true);
	CHECK_EQ(n, 9);
	free(lzo);
	/* a single byte */
	lzo = run("lzop -c", "x", 1, &lzolen);
	CHECK_EQ(check_good("one byte", lzo, lzolen, (const uint8_t *)"x", 1, NULL, true), 1);
	free(lzo);
	free(data);
	free(rnd);
}

static void test_empty(void)
{
	uint8_t *lzo;
	size_t lzolen;
	struct scan_res r;

	lzo = run("lzop -c", NULL, 0, &lzolen);
	check_good("empty input", lzo, lzolen, (const uint8_t *)"", 0, NULL, true);
	CHECK_EQ(scan(lzo, lzolen, 2, 4096, &r), 0);
	CHECK_EQ(r.len, 0);
	CHECK_EQ(r.ncks, 0);
	res_free(&r);
	free(lzo);
}

static void test_concat(const uint8_t *data, size_t len)
{
	size_t la = len / 2 + 1000, lb = len / 3, lc = len - la - lb;
	size_t na, nb, nc, ne, total, off = 0;
	uint8_t *a, *b, *c, *e, *cat;
	struct fast_res f;
	uint64_t usize;

	a = lzop_file("", "first.img", data, la, &na);
	b = run("lzop -c --crc32 -9", data + la, lb, &nb);
	c = run("lzop -c -CC", data + la + lb, lc, &nc);
	e = run("lzop -c", NULL, 0, &ne);
	total = na + ne + nb + ne + nc;
	cat = malloc(total);
	memcpy(cat + off, a, na);
	off += na;
	memcpy(cat + off, e, ne);
	off += ne;
	memcpy(cat + off, b, nb);
	off += nb;
	memcpy(cat + off, e, ne);
	off += ne;
	memcpy(cat + off, c, nc);
	check_good("concatenated parts (with empty ones)", cat, total, data, len, "first.img",
		   true);
	free(cat);

	/* one part without checksums: no fast path */
	free(b);
	b = run("lzop -c -F", data + la, len - la, &nb);
	cat = malloc(na + nb);
	memcpy(cat, a, na);
	memcpy(cat + na, b, nb);
	check_good("concatenated, second part unchecked", cat, na + nb, data, len, "first.img",
		   false);
	CHECK_EQ(index_blocks(cat, na + nb, &f, &usize), -ENOTSUP);
	free(f.cks);
	free(cat);
	free(a);
	free(b);
	free(c);
	free(e);
}

/* Checks a damaged scan: -EIO (or want_rc), the original bytes up to the start of block
 * `bad` (its index in list_blocks order), one error logged. */
static void check_bad_scan(const char *what, const uint8_t *f, size_t flen, const uint8_t *data,
			   uint64_t want_verified, ssize_t want_rc)
{
	struct scan_res r;

	for (unsigned threads = 1; threads <= 3; threads += 2) {
		log_reset();
		CHECK_EQ(scan(f, flen, threads, threads == 1 ? 1 << 20 : 65536, &r), want_rc);
		CHECK_EQ(r.verified, want_verified);
		CHECK_EQ(r.len, want_verified); /* bytes of a failed block are never returned */
		CHECK(memcmp(r.out, data, r.len) == 0);
		CHECK_EQ(nlog[TFS_LOG_ERR], 1);
		if (nlog[TFS_LOG_ERR] != 1)
			fprintf(stderr, "  (%s)\n", what);
		res_free(&r);
	}
}

static void test_damage(const uint8_t *data, size_t len)
{
	static struct lblock b[256];
	static const char *opts[] = {"lzop -c", "lzop -c -CC --crc32", "lzop -c -F"};
	size_t nb, lzolen;
	uint8_t *lzo, *bad;
	struct scan_res good;

	for (size_t o = 0; o < 3; o++) {
		lzo = run(opts[o], data, len, &lzolen);
		nb = list_blocks(lzo, lzolen, b, 256, NULL);
		CHECK(nb >= 8);
		CHECK_EQ(scan(lzo, lzolen, 2, 1 << 20, &good), 0);
		for (size_t k = 0; k < nb; k += 3) {
			uint64_t at[3] = {b[k].coff + b[k].hlen + b[k].clen / 2, b[k].coff + 8,
					  b[k].coff + b[k].hlen - 1};

			for (size_t a = 0; a < 3; a++) {
				char what[128];

				if (a > 0 && b[k].hlen == 8)
					continue; /* no checksum to flip */
				if (a == 0 && o == 2) {
					/* Without checksums a changed literal decodes fine: only
					 * the index's segment CRCs can tell (index_blocks refuses
					 * such files).  Never a crash, never a wrong length. */
					struct scan_res r;

					bad = dup_buf(lzo, lzolen, 0);
					bad[at[a]] ^= 0x24;
					quiet = true;
					ssize_t rc = scan(bad, lzolen, 2, 1 << 20, &r);
					quiet = false;
					CHECK(rc == 0 || rc == -EIO);
					CHECK(rc ? r.verified == b[k].uoff : r.len == len);
					res_free(&r);
					free(bad);
					continue;
				}
				snprintf(what, sizeof(what), "%s: block %zu, %s", opts[o], k + 1,
					 a == 0 ? "payload" : "checksum");
				fprintf(stderr, "damage: %s\n", what);
				bad = dup_buf(lzo, lzolen, 0);
				bad[at[a]] ^= 0x24;
				check_bad_scan(what, bad, lzolen, data, b[k].uoff, -EIO);
				CHECK(strstr(last_err, "compressed offset") != NULL);
				CHECK(strstr(last_err, "block") != NULL);
				/* the damaged group's decoder fails, the others decode */
				for (size_t i = 0; i < good.ncks; i++) {
					const struct codec_ckpt *c = &good.cks[i];
					bool hit = at[a] >= c->coff && at[a] < c->coff + c->clen;
					ssize_t n = decode_chunk(bad, lzolen, good.cks, i, len,
								 hit ? NULL : data, false);

					CHECK_EQ(n, hit ? -EIO : 0);
				}
				free(bad);
			}
		}
		res_free(&good);
		free(lzo);
	}
}

/* Patches one header field and fixes the header checksum (Adler-32 here). */
static void fix_header_sum(uint8_t *f)
{
	uint32_t flags;
	size_t end = header_end(f, 0, &flags);
	uint32_t sum = (uint32_t)adler32(1, f + 9, (uInt)(end - 4 - 9));

	f[end - 4] = (uint8_t)(sum >> 24);
	f[end - 3] = (uint8_t)(sum >> 16);
	f[end - 2] = (uint8_t)(sum >> 8);
	f[end - 1] = (uint8_t)sum;
}

static void put32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)(v >> 24);
	p[1] = (uint8_t)(v >> 16);
	p[2] = (uint8_t)(v >> 8);
	p[3] = (uint8_t)v;
}

static void test_headers(const uint8_t *data, size_t len)
{
	static struct lblock b[256];
	uint8_t *lzo, *bad, *multi, *filt;
	size_t lzolen, nb, mlen, flen_;
	uint64_t hend, usize;
	struct fast_res f;
	struct scan_res r;
	char cmd[256];

	lzo = lzop_file("", "named.bin", data, len, &lzolen);
	nb = list_blocks(lzo, lzolen, b, 256, &hend);

	/* a flipped byte anywhere in the file header: nothing is returned */
	uint64_t hat[] = {9, 12, 16, 20, 30, hend - 6, hend - 1};
	for (size_t i = 0; i < sizeof(hat) / sizeof(hat[0]); i++) {
		fprintf(stderr, "damage: header byte %llu\n", (unsigned long long)hat[i]);
		bad = dup_buf(lzo, lzolen, 0);
		bad[hat[i]] ^= 0x40;
		check_bad_scan("header", bad, lzolen, data, 0, -EIO);
		CHECK(strstr(last_err, "header") != NULL);
		CHECK_EQ(index_blocks(bad, lzolen, &f, &usize), -EIO);
		free(f.cks);
		free(bad);
	}

	/* refused: an unknown method, unknown flags, a newer format */
	static const struct {
		size_t at;
		uint8_t val;
		const char *msg;
	} ref[] = {{15, 0x80, "method"}, {18, 0x01, "flags"}, {13, 0x20, "newer"}};
	for (size_t i = 0; i < 3; i++) {
		bad = dup_buf(lzo, lzolen, 0);
		bad[ref[i].at] = ref[i].val;
		fix_header_sum(bad);
		check_bad_scan(ref[i].msg, bad, lzolen, data, 0, -ENOTSUP);
		CHECK(strstr(last_err, ref[i].msg) != NULL);
		CHECK_EQ(index_blocks(bad, lzolen, &f, &usize), -ENOTSUP);
		free(f.cks);
		free(bad);
	}

	/* absurd block sizes in block 3 (header checksums do not cover them) */
	static const struct {
		uint32_t ulen, clen;
		const char *msg;
	} sz[] = {{(64u << 20) + 1, 1000, "64 MiB"},
		  {0xffffffffu, 1000, "split"},
		  {1000, 2000, "compressed size"},
		  {1000, 0, "compressed size"}};
	for (size_t i = 0; i < sizeof(sz) / sizeof(sz[0]); i++) {
		fprintf(stderr, "damage: block 3 sizes %#x %#x\n", sz[i].ulen, sz[i].clen);
		bad = dup_buf(lzo, lzolen, 0);
		put32(bad + b[2].coff, sz[i].ulen);
		put32(bad + b[2].coff + 4, sz[i].clen);
		check_bad_scan(sz[i].msg, bad, lzolen, data, b[2].uoff, -EIO);
		CHECK(strstr(last_err, sz[i].msg) != NULL);
		CHECK(strstr(last_err, "block 3") != NULL);
		log_reset();
		CHECK_EQ(index_blocks(bad, lzolen, &f, &usize), -EIO);
		CHECK_EQ(nlog[TFS_LOG_ERR], 1);
		free(f.cks);
		free(bad);
	}
	/* 64 MiB declared, a small payload: decoding fails, nothing huge is kept */
	bad = dup_buf(lzo, lzolen, 0);
	put32(bad + b[1].coff, 64u << 20);
	check_bad_scan("huge block", bad, lzolen, data, b[1].uoff, -EIO);
	free(bad);
	(void)nb;

	/* a multi-part file (lzop -c a b) and a filtered one: refused clearly */
	free(lzop_file("", "part2.bin", data, 1000, &mlen));
	free(lzop_file("", "part1.bin", data + 1000, 5000, &mlen));
	snprintf(cmd, sizeof(cmd), "cd %s && lzop -c part1.bin part2.bin", tmpdir);
	multi = run(cmd, NULL, 0, &mlen);
	log_reset();
	CHECK_EQ(scan(multi, mlen, 2, 1 << 20, &r), -ENOTSUP);
	CHECK_EQ(r.len, 0);
	CHECK_EQ(nlog[TFS_LOG_ERR], 1);
	CHECK(strstr(last_err, "several files") != NULL);
	res_free(&r);
	CHECK_EQ(index_blocks(multi, mlen, &f, &usize), -ENOTSUP);
	free(f.cks);
	filt = run("lzop -c --filter=1", data, len, &flen_);
	log_reset();
	CHECK_EQ(scan(filt, flen_, 2, 1 << 20, &r), -ENOTSUP);
	CHECK_EQ(nlog[TFS_LOG_ERR], 1);
	CHECK(strstr(last_err, "filter") != NULL);
	res_free(&r);
	CHECK_EQ(index_blocks(filt, flen_, &f, &usize), -ENOTSUP);
	free(f.cks);
	/* refused after a good part: the good part is returned first */
	bad = malloc(lzolen + mlen);
	memcpy(bad, lzo, lzolen);
	memcpy(bad + lzolen, multi, mlen);
	check_bad_scan("good part, then multi-part", bad, lzolen + mlen, data, len, -ENOTSUP);
	free(bad);
	free(filt);
	free(multi);
	free(lzo);
}

/* A file header made here, for what lzop 1.04 does not write: old versions (no level, no
 * version needed, no high mtime), an extra field, a CRC-32 header checksum.  Returns its size. */
static size_t make_header(uint8_t *h, unsigned version, uint32_t flags, const char *name,
			  const uint8_t *extra, uint32_t extralen, bool bad_extra_sum)
{
	bool crc = flags & 0x1000;
	size_t i = 9, nlen = strlen(name), start;
	uint32_t sum;

	memcpy(h, "\x89LZO\0\r\n\x1a\n", 9);
	h[i++] = (uint8_t)(version >> 8);
	h[i++] = (uint8_t)version;
	h[i++] = 0x20; /* lib version */
	h[i++] = 0xa0;
	if (version >= 0x0940) {
		h[i++] = 0x09;
		h[i++] = 0x40;
	}
	h[i++] = 1; /* LZO1X-1 */
	if (version >= 0x0940)
		h[i++] = 5;
	put32(h + i, flags);
	i += 4;
	put32(h + i, 0100644);
	put32(h + i + 4, 1700000000);
	i += 8;
	if (version >= 0x0940) {
		put32(h + i, 0);
		i += 4;
	}
	h[i++] = (uint8_t)nlen;
	memcpy(h + i, name, nlen);
	i += nlen;
	sum = crc ? (uint32_t)crc32(0, h + 9, (uInt)(i - 9))
		  : (uint32_t)adler32(1, h + 9, (uInt)(i - 9));
	put32(h + i, sum);
	i += 4;
	if (flags & 0x40) {
		start = i;
		put32(h + i, extralen);
		i += 4;
		memcpy(h + i, extra, extralen);
		i += extralen;
		sum = crc ? (uint32_t)crc32(0, h + start, (uInt)(i - start))
			  : (uint32_t)adler32(1, h + start, (uInt)(i - start));
		put32(h + i, sum ^ (bad_extra_sum ? 1 : 0));
		i += 4;
	}
	return i;
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

static void test_crafted_headers(const uint8_t *data, size_t len)
{
	static const uint8_t extra[300] = {1, 2, 3};
	static const struct {
		const char *what;
		unsigned version;
		uint32_t flags; /* besides the body's */
		uint32_t extralen;
		bool bad_sum;
		ssize_t rc;
	} v[] = {
	    {"version 0.930 (old layout)", 0x0930, 0, 0, false, 0},
	    {"version 0.900", 0x0900, 0x1000, 0, false, 0},
	    {"extra field", 0x1040, 0x40, 300, false, 0},
	    {"empty extra field, CRC-32 header", 0x1040, 0x1040, 0, false, 0},
	    {"extra field with a bad checksum", 0x1040, 0x40, 300, true, -EIO},
	    {"version 0.800", 0x0800, 0, 0, false, -EIO},
	};
	uint8_t *lzo, *f;
	size_t lzolen, body, hlen;
	uint32_t flags;
	struct scan_res r;

	lzo = run("lzop -c", data, len, &lzolen);
	body = header_end(lzo, 0, &flags);
	f = malloc(1024 + lzolen);
	for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
		fprintf(stderr, "crafted header: %s\n", v[i].what);
		hlen = make_header(f, v[i].version, flags | v[i].flags, "old.img", extra,
				   v[i].extralen, v[i].bad_sum);
		memcpy(f + hlen, lzo + body, lzolen - body);
		if (v[i].rc == 0) {
			if (v[i].version >= 0x0940) {
				check_good(v[i].what, f, hlen + lzolen - body, data, len, "old.img",
					   true);
			} else { /* list_blocks knows the lzop 1.04 layout only */
				log_reset();
				CHECK_EQ(scan(f, hlen + lzolen - body, 2, 1 << 20, &r), 0);
				CHECK(r.len == len && memcmp(r.out, data, len) == 0);
				CHECK(strcmp(r.name, "old.img") == 0);
				CHECK_EQ(nlog[TFS_LOG_ERR] + nlog[TFS_LOG_NOTICE], 0);
				res_free(&r);
			}
		} else {
			check_bad_scan(v[i].what, f, hlen + lzolen - body, data, 0, v[i].rc);
		}
	}
	/* the file ends inside the extra field */
	hlen = make_header(f, 0x1040, flags | 0x40, "x", extra, 300, false);
	check_bad_scan("truncated extra field", f, hlen - 100, data, 0, -EIO);
	CHECK(strstr(last_err, "extra field") != NULL);
	free(f);
	free(lzo);
}

/* A source of unknown size: the same bytes and checkpoints; truncation and garbage too. */
static void test_unknown_size(const uint8_t *data, size_t len)
{
	uint8_t *lzo, *g;
	size_t lzolen;
	struct scan_res ref, r;
	struct usrc u;
	struct src *in;
	struct fast_res f;
	uint64_t usize;

	lzo = run("lzop -c", data, len, &lzolen);
	CHECK_EQ(scan(lzo, lzolen, 2, 1 << 20, &ref), 0);
	log_reset();
	u = (struct usrc){lzo, lzolen};
	in = src_new(&usrc_ops, &u, SRC_SIZE_UNKNOWN);
	CHECK_EQ(scan_src(in, 2, 65536, 0, &r), 0);
	CHECK(r.len == len && memcmp(r.out, data, len) == 0);
	CHECK_EQ(r.ncks, ref.ncks);
	for (size_t i = 0; i < r.ncks && i < ref.ncks; i++)
		CHECK(same_ckpt(&r.cks[i], &ref.cks[i]));
	res_free(&r);
	{
		struct codec_sink sink = {.checkpoint = fast_sink, .opaque = &f};
		memset(&f, 0, sizeof(f));
		CHECK_EQ(codec_lzo.index_blocks(in, NULL, &sink, &usize), 0);
		CHECK_EQ(usize, len);
		CHECK_EQ(f.ncks, ref.ncks);
		free(f.cks);
	}
	src_free(in);
	CHECK_EQ(nlog[TFS_LOG_ERR] + nlog[TFS_LOG_NOTICE], 0);

	/* cut in the middle of a payload: the workers find it */
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
	g = dup_buf(lzo, lzolen, 5000);
	tu_fill(g + lzolen, 5000, 3, 0);
	u = (struct usrc){g, lzolen + 5000};
	in = src_new(&usrc_ops, &u, SRC_SIZE_UNKNOWN);
	log_reset();
	CHECK_EQ(scan_src(in, 1, 1 << 20, 0, &r), 0);
	CHECK_EQ(r.len, len);
	CHECK_EQ(nlog[TFS_LOG_NOTICE], 1);
	res_free(&r);
	src_free(in);
	free(g);
	res_free(&ref);
	free(lzo);
}

static void test_truncation(const uint8_t *data, size_t len)
{
	static struct lblock b[256];
	static const char *cmds[] = {"lzop -c", "lzop -c -F"};

	for (size_t c = 0; c < 2; c++) {
		size_t lzolen, nb;
		uint64_t hend;
		uint8_t *lzo = run(cmds[c], data, len, &lzolen);

		nb = list_blocks(lzo, lzolen, b, 256, &hend);
		const struct lblock *mid = &b[nb / 2], *last = &b[nb - 1];
		size_t cuts[] = {4,
				 9,
				 20,
				 (size_t)hend - 1,
				 (size_t)hend,
				 (size_t)hend + 3,
				 (size_t)mid->coff,
				 (size_t)mid->coff + 2,
				 (size_t)mid->coff + 9,
				 (size_t)(mid->coff + mid->hlen + mid->clen / 2),
				 (size_t)(mid->coff + mid->hlen + mid->clen - 1),
				 (size_t)(last->coff + last->hlen + last->clen),
				 lzolen - 1};

		for (size_t i = 0; i < sizeof(cuts) / sizeof(cuts[0]); i++) {
			size_t cut = cuts[i];
			uint64_t verified = 0;

			for (size_t k = 0; k < nb; k++)
				if (b[k].coff + b[k].hlen + b[k].clen <= cut)
					verified = b[k].uoff + b[k].ulen;
			fprintf(stderr, "truncated at %zu of %zu (%s)\n", cut, lzolen, cmds[c]);
			check_bad_scan("truncated", lzo, cut, data, verified, -EIO);
			CHECK(strstr(last_err, cut < 9 ? "not an lzop file" : "truncated") != NULL);
			/* index_blocks: damage, logged */
			struct fast_res f;
			uint64_t usize;
			CHECK_EQ(index_blocks(lzo, cut, &f, &usize),
				 c && cut >= hend ? -ENOTSUP : -EIO);
			free(f.cks);
		}
		free(lzo);
	}
}

static void test_zero_length(void)
{
	static const uint8_t nothing[1];
	struct scan_res r;
	struct fast_res f;
	uint64_t usize;
	struct src *in = src_from_mem(nothing, 0);

	log_reset();
	CHECK_EQ(scan_src(in, 2, 4096, 0, &r), -EIO);
	CHECK_EQ(r.len, 0);
	CHECK_EQ(r.ncks, 0);
	CHECK_EQ(r.verified, 0);
	CHECK(!r.has_name);
	CHECK_EQ(nlog[TFS_LOG_ERR], 1);
	CHECK(strstr(last_err, "empty") != NULL);
	res_free(&r);
	src_free(in);
	CHECK_EQ(index_blocks(nothing, 0, &f, &usize), -EIO);
	free(f.cks);
	log_reset();
	CHECK_EQ(scan((const uint8_t *)"hello, world, this is not lzop", 30, 1, 4096, &r), -EIO);
	CHECK_EQ(r.len, 0);
	CHECK_EQ(nlog[TFS_LOG_ERR], 1);
	res_free(&r);
}

static void test_garbage(const uint8_t *data, size_t len)
{
	static const size_t sizes[] = {1, 3, 8, 9, 100, 100000};
	uint8_t *lzo, *bad;
	size_t lzolen;
	struct scan_res good, r;
	struct fast_res f;
	uint64_t usize;

	lzo = run("lzop -c", data, len, &lzolen);
	CHECK_EQ(scan(lzo, lzolen, 2, 1 << 20, &good), 0);
	for (size_t g = 0; g < sizeof(sizes) / sizeof(sizes[0]); g++) {
		for (int zeros = 0; zeros < 2; zeros++) {
			size_t n = sizes[g];

			fprintf(stderr, "garbage: %zu %s bytes\n", n, zeros ? "zero" : "random");
			bad = dup_buf(lzo, lzolen, n);
			if (zeros)
				memset(bad + lzolen, 0, n);
			else
				tu_fill(bad + lzolen, n, (uint32_t)n, 0);
			log_reset();
			CHECK_EQ(scan(bad, lzolen + n, 2, 1 << 20, &r), 0);
			CHECK(r.len == len && memcmp(r.out, data, len) == 0);
			CHECK_EQ(r.ncks, good.ncks);
			for (size_t i = 0; i < r.ncks && i < good.ncks; i++)
				CHECK(same_ckpt(&r.cks[i], &good.cks[i]));
			CHECK_EQ(nlog[TFS_LOG_ERR] + nlog[TFS_LOG_WARNING], 0);
			CHECK_EQ(nlog[TFS_LOG_NOTICE], zeros ? 0 : 1);
			if (!zeros)
				CHECK(strstr(last_notice, "garbage") != NULL);
			res_free(&r);
			CHECK_EQ(index_blocks(bad, lzolen + n, &f, &usize), 0);
			CHECK_EQ(usize, len);
			CHECK_EQ(f.ncks, good.ncks);
			free(f.cks);
			/* a decoder that runs to the end stops there too */
			CHECK_EQ(
			    decode_chunk(bad, lzolen + n, good.cks, good.ncks - 1, len, data, true),
			    0);
			free(bad);
		}
	}
	/* the magic, then junk: a damaged second part, not garbage */
	bad = dup_buf(lzo, lzolen, 64);
	memcpy(bad + lzolen, lzo, 9);
	tu_fill(bad + lzolen + 9, 55, 5, 0);
	check_bad_scan("magic then junk", bad, lzolen + 64, data, len, -EIO);
	free(bad);
	res_free(&good);
	free(lzo);
}

/* Random damage to a concatenated file: the scan and the decoders return the original bytes
 * (as far as they say they are verified) or an error, nothing else, and never crash or hang. */
static void test_random_damage(const uint8_t *data, size_t len)
{
	size_t l1 = len / 2, n1, n2, total;
	uint8_t *a = run("lzop -c -CC", data, l1, &n1);
	uint8_t *b2 = run("lzop -c --crc32", data + l1, len - l1, &n2);
	uint8_t *cat, *bad, *buf = malloc(len);
	struct scan_res good, r;
	uint32_t x = 4242;

	total = n1 + n2;
	cat = malloc(total);
	memcpy(cat, a, n1);
	memcpy(cat + n1, b2, n2);
	bad = malloc(total);
	CHECK_EQ(scan(cat, total, 2, 1 << 20, &good), 0);
	CHECK(good.len == len && memcmp(good.out, data, len) == 0);
	quiet = true;
	for (int i = 0; i < 300; i++) {
		memcpy(bad, cat, total);
		x = x * 1103515245 + 12345;
		if (i % 5 == 4) { /* a run of junk */
			size_t at = (x >> 8) % (total - 16);
			tu_fill(bad + at, 16, x, 0);
		} else {
			for (int k = 0; k <= i % 3; k++) {
				x = x * 1103515245 + 12345;
				bad[(x >> 8) % total] ^= (uint8_t)(1u << (x % 8));
			}
		}
		ssize_t rc = scan(bad, total, 1 + (unsigned)(i % 3), i % 2 ? 65536 : 1 << 20, &r);
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
			ssize_t n = 0;

			if (codec_lzo.dec_new(in, &ck, NULL, 0, &d))
				continue;
			while (got < len - ck.uoff &&
			       (n = codec_lzo.dec_read(d, buf + got, len - ck.uoff - got)) > 0)
				got += (uint64_t)n;
			CHECK(n >= 0 || n == -EIO || n == -ENOTSUP);
			CHECK(memcmp(buf, data + ck.uoff, got) == 0);
			codec_lzo.dec_free(d);
		}
		src_free(in);
	}
	quiet = false;
	res_free(&good);
	free(buf);
	free(bad);
	free(cat);
	free(a);
	free(b2);
}

static void test_bad_checkpoints(const uint8_t *data, size_t len)
{
	uint8_t *lzo;
	size_t lzolen;
	struct scan_res good;
	struct codec_dec *d;
	struct codec_ckpt ck;
	struct src *in;

	lzo = run("lzop -c", data, len, &lzolen);
	CHECK_EQ(scan(lzo, lzolen, 2, 1 << 20, &good), 0);
	CHECK(good.ncks >= 2);
	in = src_from_mem(lzo, lzolen);
	log_reset();
	ck = good.cks[1];
	ck.bits = 0;
	CHECK_EQ(codec_lzo.dec_new(in, &ck, NULL, 0, &d), -EINVAL);
	CHECK(d == NULL);
	ck = good.cks[1];
	ck.flags |= 0x400; /* multi-part */
	CHECK_EQ(codec_lzo.dec_new(in, &ck, NULL, 0, &d), -EINVAL);
	/* a checkpoint that does not match the file: -EIO, no misplaced bytes */
	static const int kinds[] = {0, 1, 2, 3, 4};
	for (size_t i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++) {
		uint8_t buf[65536];
		ssize_t n;
		uint64_t got = 0;

		ck = good.cks[1];
		switch (kinds[i]) {
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
			ck.coff = lzolen + 100; /* past the end */
			break;
		}
		CHECK_EQ(codec_lzo.dec_new(in, &ck, NULL, 0, &d), 0);
		while ((n = codec_lzo.dec_read(d, buf, sizeof(buf))) > 0 && got < 2 * GROUP)
			got += (uint64_t)n;
		CHECK_EQ(n, -EIO);
		CHECK(got <= good.cks[1].ulen);
		codec_lzo.dec_free(d);
	}
	CHECK(nlog[TFS_LOG_ERR] >= 6);
	src_free(in);
	res_free(&good);
	free(lzo);
}

static void test_sink_error_and_free(const uint8_t *data, size_t len)
{
	uint8_t *lzo;
	size_t lzolen;
	struct scan_res r;
	struct src *in;

	lzo = run("lzop -c", data, len, &lzolen);
	in = src_from_mem(lzo, lzolen);
	CHECK_EQ(scan_src(in, 3, 1 << 20, 3, &r), -ENOSPC);
	CHECK_EQ(r.ncks, 2);
	CHECK_EQ(r.len, 2 * GROUP);
	res_free(&r);

	/* freeing a scan early, with workers waiting or busy */
	for (unsigned threads = 1; threads <= 8; threads *= 2) {
		struct codec_opts opts = {.threads = threads};
		struct codec_sink sink = {.checkpoint = sink_fn, .opaque = &r};
		struct codec_scan *s;
		uint8_t buf[1000];

		memset(&r, 0, sizeof(r));
		r.reader = pthread_self();
		CHECK_EQ(codec_lzo.scan_new(in, &opts, &sink, &s), 0);
		codec_lzo.scan_free(s);
		CHECK_EQ(codec_lzo.scan_new(in, &opts, &sink, &s), 0);
		CHECK_EQ(codec_lzo.scan_read(s, buf, sizeof(buf)), sizeof(buf));
		CHECK(memcmp(buf, data, sizeof(buf)) == 0);
		usleep(20000);
		codec_lzo.scan_free(s);
		res_free(&r);
	}
	codec_lzo.scan_free(NULL);
	codec_lzo.dec_free(NULL);
	src_free(in);
	free(lzo);
}

static int test(void)
{
	size_t len = 3 * GROUP + 12345;
	uint8_t *data;
	char cmd[128];

	if (!tu_have("lzop")) {
		fprintf(stderr, "lzop not installed\n");
		return 77;
	}
	snprintf(tmpdir, sizeof(tmpdir), "/tmp/test_lzo.XXXXXX");
	if (!mkdtemp(tmpdir)) {
		perror("mkdtemp");
		return 1;
	}
	tfs_log_set_sink(log_sink, NULL);
	data = make_data(len, 1);
	test_probe();
	test_options(data, len);
	test_names(data, len);
	test_stored_and_big();
	test_empty();
	test_concat(data, len);
	test_damage(data, len);
	test_headers(data, len);
	test_crafted_headers(data, len);
	test_unknown_size(data, len);
	test_truncation(data, len);
	test_zero_length();
	test_garbage(data, len);
	/* under the sanitizers parts of 0.4 MB: still two 256 KiB blocks in each */
	test_random_damage(data, TU_SANITIZED ? len / 4 : len / 2);
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
