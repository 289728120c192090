/* Unit tests of the xz codec (codecs/xz.c), on data made by the real tools (xz, pixz) in memory.
 *
 * Every good file is scanned whole with 1, 2 and several threads (the bytes and checkpoints must
 * not depend on it), compared with the original and with `xz --robot --list`, then every block
 * is decoded from its checkpoint.  Damaged files (flipped bytes in data, check, header or index;
 * truncations; trailing garbage; hostile headers) must give the original bytes up to
 * scan_verified(), -EIO and a logged message where the damage matters, the original bytes
 * where it does not -- never anything else, never a crash or a hang.
 */
#include "codecs/codec.h"
#include "common/log.h"
#include "testutil.h"

#include <errno.h>
#include <lzma.h>
#include <pthread.h>
#include <stdbool.h>
#include <string.h>
#include <unistd.h>

#define BS (64u << 10) /* --block-size of the multi-block files */

/* ---- log capture ---- */

static unsigned long nlog[8];
static char last_err[1024];
static bool quiet; /* hundreds of expected messages */

static void log_sink(int level, const char *msg, void *opaque)
{
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

struct scan_res {
	uint8_t *out;
	size_t len;
	ssize_t rc; /* the final scan_read result: 0 or -errno */
	uint64_t verified;
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
		r->contract_errors++; /* xz has no aux blob */
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
	ssize_t n;
	int err;

	memset(r, 0, sizeof(*r));
	r->reader = pthread_self();
	r->fail_at = fail_at;
	r->out = malloc(cap);
	err = codec_xz.scan_new(in, &opts, &sink, &s);
	CHECK_EQ(err, 0);
	if (err)
		return r->rc = err;
	CHECK(codec_xz.scan_name == NULL);
	for (;;) {
		if (r->len + step > cap) {
			cap = (r->len + step) * 2;
			r->out = realloc(r->out, cap);
		}
		n = codec_xz.scan_read(s, r->out + r->len, step);
		if (n <= 0)
			break;
		CHECK(n <= (ssize_t)step);
		r->len += (size_t)n;
		r->returned = r->len;
	}
	r->rc = n;
	CHECK_EQ(codec_xz.scan_read(s, r->out, step), n); /* the end and errors are sticky */
	r->verified = codec_xz.scan_verified(s);
	CHECK(r->verified <= r->len);
	if (n == 0)
		CHECK_EQ(r->verified, r->len);
	for (size_t i = 0; i < r->ncks; i++)
		CHECK(r->cks[i].uoff < r->len); /* every checkpoint starts some returned bytes */
	CHECK_EQ(r->contract_errors, 0);
	codec_xz.scan_free(s);
	return n;
}

static ssize_t scan(const uint8_t *xz, size_t len, unsigned threads, size_t step,
		    struct scan_res *r)
{
	struct src *in = src_from_mem(xz, len);
	ssize_t n = scan_src(in, threads, step, 0, r);

	src_free(in);
	return n;
}

static bool same_ckpt(const struct codec_ckpt *a, const struct codec_ckpt *b)
{
	return a->uoff == b->uoff && a->coff == b->coff && a->clen == b->clen &&
	       a->extra == b->extra && a->bits == b->bits && a->flags == b->flags;
}

/* Decodes the block of checkpoint i (its length from the next checkpoint, or end) and
 * compares it with want (unless NULL).  Returns the decoder's final result (0 at the block's end).
 */
static ssize_t decode_block(const uint8_t *xz, size_t xzlen, const struct scan_res *r, size_t i,
			    uint64_t end, const uint8_t *want)
{
	struct src *in = src_from_mem(xz, xzlen);
	struct codec_ckpt ck = r->cks[i];
	struct codec_dec *d;
	static uint8_t buf[100003];
	uint64_t got = 0;
	ssize_t n;
	int err;

	ck.ulen = (i + 1 < r->ncks ? r->cks[i + 1].uoff : end) - ck.uoff;
	err = codec_xz.dec_new(in, &ck, NULL, 0, &d);
	if (err) {
		src_free(in);
		return err;
	}
	CHECK(codec_xz.dec_memory(d) > 64 << 10);
	while ((n = codec_xz.dec_read(d, buf, sizeof(buf))) > 0) {
		CHECK(got + (uint64_t)n <= ck.ulen);
		if (want && got + (uint64_t)n <= ck.ulen)
			CHECK(memcmp(buf, want + ck.uoff + got, (size_t)n) == 0);
		got += (uint64_t)n;
	}
	if (n == 0)
		CHECK_EQ(got, ck.ulen);
	CHECK_EQ(codec_xz.dec_read(d, buf, sizeof(buf)), n); /* sticky */
	codec_xz.dec_free(d);
	src_free(in);
	return n;
}

/* Every checkpoint before `end` decodes to the right bytes. */
static void check_blocks(const uint8_t *xz, size_t xzlen, const struct scan_res *r,
			 const uint8_t *want, uint64_t end)
{
	for (size_t i = 0; i < r->ncks && r->cks[i].uoff < end; i++)
		CHECK_EQ(decode_block(xz, xzlen, r, i, end, want), 0);
}

/* ---- making test data ---- */

static uint8_t *make_data(size_t len, uint32_t seed)
{
	uint8_t *b = malloc(len ? len : 1);

	tu_fill(b, len, seed, 1);
	/* stretches of noise, so some chunks are stored uncompressed */
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

/* The blocks `xz --robot -lvv` lists: coff, uoff, total size, uncompressed size, check. */
struct lblock {
	uint64_t coff, uoff, total, usize, number;
	char check[16];
};

static size_t xz_list(const uint8_t *xz, size_t len, struct lblock *out, size_t max)
{
	char path[] = "/tmp/test_xz.XXXXXX", cmd[128];
	size_t n = 0, olen;
	uint8_t *txt;
	char *line, *save;
	int fd = mkstemp(path);

	if (fd < 0 || write(fd, xz, len) != (ssize_t)len) {
		CHECK(0);
		return 0;
	}
	close(fd);
	snprintf(cmd, sizeof(cmd), "xz --robot -lvv %s", path);
	txt = run(cmd, NULL, 0, &olen);
	unlink(path);
	txt = realloc(txt, olen + 1);
	txt[olen] = '\0';
	for (line = strtok_r((char *)txt, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		unsigned long long st, bs, bf, co, uo, ts, us;
		char chk[16];

		if (n < max &&
		    sscanf(line, "block\t%llu\t%llu\t%llu\t%llu\t%llu\t%llu\t%llu\t%*s\t%15s", &st,
			   &bs, &bf, &co, &uo, &ts, &us, chk) == 8) {
			out[n] = (struct lblock){co, uo, ts, us, bf, ""};
			snprintf(out[n].check, sizeof(out[n].check), "%s", chk);
			n++;
		}
	}
	free(txt);
	return n;
}

static const char *check_name(uint32_t id)
{
	switch (id) {
	case LZMA_CHECK_NONE:
		return "None";
	case LZMA_CHECK_CRC32:
		return "CRC32";
	case LZMA_CHECK_CRC64:
		return "CRC64";
	case LZMA_CHECK_SHA256:
		return "SHA-256";
	default:
		return "?";
	}
}

/* Scans a good file with several thread counts and read sizes, checks the bytes, the
 * checkpoints against `xz --list` and every block.  Returns the number of checkpoints. */
static size_t check_good(const char *what, const uint8_t *xz, size_t xzlen, const uint8_t *want,
			 size_t wantlen)
{
	static const unsigned threads[] = {1, 2, 3, 8};
	static const size_t steps[] = {1 << 20, 4093, 1 << 20, 65536};
	struct scan_res ref, r;
	struct lblock lb[512];
	size_t nlb, nnonempty = 0;

	fprintf(stderr, "good: %s (%zu -> %zu bytes)\n", what, wantlen, xzlen);
	log_reset();
	CHECK_EQ(scan(xz, xzlen, 1, 1 << 20, &ref), 0);
	CHECK_EQ(ref.len, wantlen);
	CHECK(ref.len == wantlen && memcmp(ref.out, want, wantlen) == 0);
	for (size_t t = 1; t < sizeof(threads) / sizeof(threads[0]); t++) {
		CHECK_EQ(scan(xz, xzlen, threads[t], steps[t], &r), 0);
		CHECK(r.len == ref.len && memcmp(r.out, ref.out, ref.len) == 0);
		CHECK_EQ(r.ncks, ref.ncks);
		for (size_t i = 0; i < r.ncks && i < ref.ncks; i++)
			CHECK(same_ckpt(&r.cks[i], &ref.cks[i]));
		res_free(&r);
	}
	CHECK_EQ(nlog[TFS_LOG_ERR] + nlog[TFS_LOG_WARNING], 0);

	/* the checkpoints are the blocks xz lists (empty blocks have none) */
	nlb = xz_list(xz, xzlen, lb, 512);
	for (size_t i = 0, k = 0; i < nlb; i++) {
		if (lb[i].usize == 0)
			continue;
		nnonempty++;
		if (k >= ref.ncks) {
			CHECK(k < ref.ncks);
			break;
		}
		const struct codec_ckpt *c = &ref.cks[k++];
		CHECK_EQ(c->coff, lb[i].coff);
		CHECK_EQ(c->uoff, lb[i].uoff);
		CHECK_EQ((c->clen + 3) & ~3ull, lb[i].total);
		CHECK_EQ(c->extra, lb[i].usize);
		CHECK_EQ(c->flags, lb[i].number);
		CHECK(strcmp(check_name(c->bits), lb[i].check) == 0);
	}
	CHECK_EQ(ref.ncks, nnonempty);

	check_blocks(xz, xzlen, &ref, want, wantlen);
	/* the first byte and the last byte, through decoders */
	if (ref.ncks) {
		struct src *in = src_from_mem(xz, xzlen);
		struct codec_ckpt ck = ref.cks[ref.ncks - 1];
		struct codec_dec *d;
		uint8_t *buf = malloc(wantlen);
		ssize_t n;
		uint64_t got = 0;

		CHECK_EQ(codec_xz.dec_new(in, &ref.cks[0], NULL, 0, &d), 0);
		CHECK_EQ(codec_xz.dec_read(d, buf, 1), 1);
		CHECK_EQ(buf[0], want[0]);
		codec_xz.dec_free(d);
		ck.ulen = wantlen - ck.uoff;
		CHECK_EQ(codec_xz.dec_new(in, &ck, NULL, 0, &d), 0);
		while ((n = codec_xz.dec_read(d, buf + got, wantlen - got)) > 0)
			got += (uint64_t)n;
		CHECK_EQ(n, 0);
		CHECK_EQ(ck.uoff + got, wantlen);
		CHECK_EQ(buf[got - 1], want[wantlen - 1]);
		codec_xz.dec_free(d);
		free(buf);
		src_free(in);
	}
	CHECK_EQ(nlog[TFS_LOG_ERR] + nlog[TFS_LOG_WARNING], 0);
	size_t n = ref.ncks;
	res_free(&ref);
	return n;
}

/* ---- the tests ---- */

static void test_probe(void)
{
	static const uint8_t magic[] = {0xFD, '7', 'z', 'X', 'Z', 0x00, 0x00, 0x04};

	CHECK(codec_xz.probe(magic, sizeof(magic)));
	CHECK(codec_xz.probe(magic, 6));
	CHECK(!codec_xz.probe(magic, 5));
	CHECK(!codec_xz.probe((const uint8_t *)"\x1f\x8b\x08", 3));
	CHECK(!codec_xz.probe((const uint8_t *)"", 0));
	CHECK(codec_probe(magic, sizeof(magic)) == &codec_xz);
}

static void test_checks(const uint8_t *data, size_t len)
{
	static const char *checks[] = {"none", "crc32", "crc64", "sha256"};
	char cmd[128];

	for (size_t i = 0; i < 4; i++) {
		uint8_t *xz;
		size_t xzlen, n;

		/* many blocks, sizes in the headers */
		snprintf(cmd, sizeof(cmd), "xz -c -6 -T2 --block-size=%u --check=%s", BS,
			 checks[i]);
		xz = run(cmd, data, len, &xzlen);
		n = check_good(cmd, xz, xzlen, data, len);
		CHECK_EQ(n, (len + BS - 1) / BS);
		free(xz);
		/* one block, as plain xz makes it */
		snprintf(cmd, sizeof(cmd), "xz -c -T1 --check=%s", checks[i]);
		xz = run(cmd, data, len, &xzlen);
		CHECK_EQ(check_good(cmd, xz, xzlen, data, len), 1);
		free(xz);
	}
	/* many blocks without sizes in their headers (single-threaded xz with --block-size) */
	snprintf(cmd, sizeof(cmd), "xz -c -1 -T1 --block-size=%u", BS);
	uint8_t *xz;
	size_t xzlen;
	xz = run(cmd, data, len, &xzlen);
	CHECK_EQ(check_good(cmd, xz, xzlen, data, len), (len + BS - 1) / BS);
	free(xz);
	/* a filter chain with a BCJ filter in front */
	xz = run("xz -c -T1 --x86 --lzma2=preset=1", data, len, &xzlen);
	check_good("x86+lzma2", xz, xzlen, data, len);
	free(xz);
}

static void test_empty(void)
{
	uint8_t *xz;
	size_t xzlen;
	struct scan_res r;

	xz = run("xz -c", NULL, 0, &xzlen);
	check_good("empty input", xz, xzlen, (const uint8_t *)"", 0);
	CHECK_EQ(scan(xz, xzlen, 2, 4096, &r), 0);
	CHECK_EQ(r.len, 0);
	CHECK_EQ(r.ncks, 0);
	res_free(&r);
	free(xz);
}

/* A source of unknown size over a buffer: the codec must walk the file. */
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

static void test_multistream(const uint8_t *data, size_t len)
{
	size_t la = len / 2, lb = len / 4, lc = len - la - lb;
	size_t na, nb, nc, ne, total;
	char cmd[128];
	uint8_t *a, *b, *c, *e, *cat;
	size_t off = 0;

	snprintf(cmd, sizeof(cmd), "xz -c -T2 --block-size=%u", BS);
	a = run(cmd, data, la, &na);
	b = run("xz -c -T1", data + la, lb, &nb);
	c = run("xz -c -T2 --check=crc32 --block-size=100000", data + la + lb, lc, &nc);
	e = run("xz -c", NULL, 0, &ne);
	total = na + 4 + ne + 8 + nb + nc + 16;
	cat = calloc(1, total);
	memcpy(cat + off, a, na);
	off += na + 4; /* stream padding */
	memcpy(cat + off, e, ne);
	off += ne + 8;
	memcpy(cat + off, b, nb);
	off += nb;
	memcpy(cat + off, c, nc);
	off += nc + 16;
	CHECK_EQ(off, total);
	check_good("multi-stream with padding and an empty stream", cat, total, data, len);

	/* the same without a usable index (a source of unknown size): the walk */
	struct usrc u = {cat, total};
	struct src *in = src_new(&usrc_ops, &u, SRC_SIZE_UNKNOWN);
	struct scan_res ref, r;

	CHECK_EQ(scan(cat, total, 2, 1 << 20, &ref), 0);
	log_reset();
	CHECK_EQ(scan_src(in, 2, 100000, 0, &r), 0);
	CHECK(r.len == len && memcmp(r.out, data, len) == 0);
	CHECK_EQ(r.ncks, ref.ncks);
	for (size_t i = 0; i < r.ncks && i < ref.ncks; i++) {
		CHECK_EQ(r.cks[i].uoff, ref.cks[i].uoff);
		CHECK_EQ(r.cks[i].coff, ref.cks[i].coff);
		CHECK_EQ(r.cks[i].bits, ref.cks[i].bits);
		CHECK_EQ(r.cks[i].flags, ref.cks[i].flags);
		/* sizes are known to the walk only where the block header states them */
		CHECK(r.cks[i].clen == ref.cks[i].clen || r.cks[i].clen == 0);
		CHECK(r.cks[i].extra == ref.cks[i].extra || r.cks[i].extra == 0);
	}
	CHECK_EQ(nlog[TFS_LOG_ERR] + nlog[TFS_LOG_WARNING], 0);
	res_free(&r);
	res_free(&ref);
	src_free(in);
	free(a);
	free(b);
	free(c);
	free(e);
	free(cat);
}

static void test_unknown_size(const uint8_t *data, size_t len)
{
	char cmd[128];
	uint8_t *xz, *cat;
	size_t xzlen;
	struct scan_res ref, r;
	struct usrc u;
	struct src *in;

	snprintf(cmd, sizeof(cmd), "xz -c -T2 --block-size=%u", BS);
	xz = run(cmd, data, len, &xzlen);
	/* two streams with padding, read forward only */
	cat = calloc(1, 2 * xzlen + 4);
	memcpy(cat, xz, xzlen);
	memcpy(cat + xzlen + 4, xz, xzlen);
	CHECK_EQ(scan(xz, xzlen, 2, 1 << 20, &ref), 0);
	log_reset();
	u = (struct usrc){cat, 2 * xzlen + 4};
	in = src_new(&usrc_ops, &u, SRC_SIZE_UNKNOWN);
	CHECK_EQ(scan_src(in, 2, 65536, 0, &r), 0);
	src_free(in);
	CHECK_EQ(r.len, 2 * len);
	CHECK(r.len == 2 * len && memcmp(r.out, data, len) == 0 &&
	      memcmp(r.out + len, data, len) == 0);
	CHECK_EQ(r.ncks, 2 * ref.ncks);
	/* the walk finds the same checkpoints as the index (xz -T2 writes sizes in headers) */
	for (size_t i = 0; i < ref.ncks && i < r.ncks; i++)
		CHECK(same_ckpt(&r.cks[i], &ref.cks[i]));
	CHECK_EQ(nlog[TFS_LOG_ERR] + nlog[TFS_LOG_WARNING], 0);
	res_free(&r);
	res_free(&ref);
	free(cat);
	free(xz);
}

/* A minimal ustar archive of a few members of data, for pixz's tar mode. */
static uint8_t *make_tar(const uint8_t *data, size_t len, size_t *tarlen)
{
	size_t cap = len + (64u << 10), off = 0, pos = 0; /* room for headers and padding */
	uint8_t *t = calloc(1, cap);

	for (int i = 0; pos < len; i++) {
		size_t sz = len - pos < 200000 ? len - pos : 200000 - (size_t)i * 1000;
		uint8_t *h = t + off;
		unsigned sum = 0;

		snprintf((char *)h, 100, "dir/member%03d.txt", i);
		memcpy(h + 100, "0000644", 8);
		memcpy(h + 108, "0001750", 8);
		memcpy(h + 116, "0001750", 8);
		snprintf((char *)h + 124, 12, "%011zo", sz);
		memcpy(h + 136, "14000000000", 12);
		memset(h + 148, ' ', 8);
		h[156] = '0';
		memcpy(h + 257, "ustar", 6);
		memcpy(h + 263, "00", 2);
		for (int k = 0; k < 512; k++)
			sum += h[k];
		snprintf((char *)h + 148, 8, "%06o", sum);
		off += 512;
		memcpy(t + off, data + pos, sz);
		off += (sz + 511) & ~(size_t)511;
		pos += sz;
	}
	off += 1024; /* two zero blocks */
	*tarlen = off;
	return t;
}

static void test_pixz(const uint8_t *data, size_t len)
{
	uint8_t *tar, *tpxz, *plain;
	size_t tarlen, tpxzlen, plainlen, n;

	if (!tu_have("pixz")) {
		fprintf(stderr, "pixz not installed, skipping its test\n");
		return;
	}
	tar = make_tar(data, len, &tarlen);
	tpxz = run("pixz -0 -p2", tar, tarlen, &tpxzlen);
	plain = run("xz -dc", tpxz, tpxzlen, &plainlen);
	CHECK(plainlen > tarlen); /* pixz's own tar index, as the last block */
	CHECK(plainlen >= tarlen && memcmp(plain, tar, tarlen) == 0);
	n = check_good("pixz -0 (tpxz)", tpxz, tpxzlen, plain, plainlen);
	CHECK(n >= 4);
	free(plain);
	free(tpxz);
	free(tar);
}

static void test_threads_memory(void)
{
	/* blocks bigger than a job's queue (32 MiB): workers must wait, not deadlock or grow */
	size_t len = 40u << 20; /* a 34 MiB block and a 6 MiB one */
	uint8_t *data = malloc(len), *xz;
	size_t xzlen;
	struct scan_res a, b;

	tu_fill(data, len, 7, 1);
	xz = run("xz -c -0 -T2 --block-size=34MiB", data, len, &xzlen);
	CHECK_EQ(scan(xz, xzlen, 1, 1 << 20, &a), 0);
	CHECK_EQ(scan(xz, xzlen, 64, 333333, &b), 0);
	CHECK(a.len == len && memcmp(a.out, data, len) == 0);
	CHECK(b.len == len && memcmp(b.out, data, len) == 0);
	CHECK_EQ(a.ncks, 2);
	CHECK_EQ(b.ncks, 2);
	for (size_t i = 0; i < a.ncks && i < b.ncks; i++)
		CHECK(same_ckpt(&a.cks[i], &b.cks[i]));
	res_free(&a);
	res_free(&b);
	free(xz);
	free(data);
}

/* Flips one byte at off in a copy of xz; scans and decodes. */
static void check_flip_block(const char *what, const uint8_t *xz, size_t xzlen,
			     const struct scan_res *good, size_t blk, uint64_t off,
			     const uint8_t *data, size_t len)
{
	uint8_t *bad = dup_buf(xz, xzlen, 0);
	struct scan_res r;

	fprintf(stderr, "damage: %s (block %zu, offset %llu)\n", what, blk + 1,
		(unsigned long long)off);
	bad[off] ^= 0x55;
	for (unsigned threads = 1; threads <= 3; threads += 2) {
		log_reset();
		CHECK_EQ(scan(bad, xzlen, threads, 1 << 20, &r), -EIO);
		CHECK_EQ(r.verified, good->cks[blk].uoff);
		CHECK(r.len >= r.verified && memcmp(r.out, data, r.verified) == 0);
		CHECK(r.ncks >= blk && r.ncks <= blk + 1);
		for (size_t i = 0; i < blk && i < r.ncks; i++)
			CHECK(same_ckpt(&r.cks[i], &good->cks[i]));
		CHECK_EQ(nlog[TFS_LOG_ERR], 1);
		CHECK(strstr(last_err, "compressed offset") != NULL);
		CHECK(strstr(last_err, "block") != NULL);
		res_free(&r);
	}
	/* the damaged block's decoder fails, the others decode */
	for (size_t i = 0; i < good->ncks; i++) {
		ssize_t n = decode_block(bad, xzlen, good, i, len, i == blk ? NULL : data);

		if (i == blk)
			CHECK_EQ(n, -EIO);
		else
			CHECK_EQ(n, 0);
	}
	free(bad);
}

static void test_damage(const uint8_t *data, size_t len)
{
	char cmd[128];
	uint8_t *xz, *bad;
	size_t xzlen;
	struct scan_res good, r;
	uint64_t index_off;

	snprintf(cmd, sizeof(cmd), "xz -c -T2 --block-size=%u", BS);
	xz = run(cmd, data, len, &xzlen);
	CHECK_EQ(scan(xz, xzlen, 2, 1 << 20, &good), 0);
	CHECK(good.ncks >= 10);
	const struct codec_ckpt *b5 = &good.cks[5], *last = &good.cks[good.ncks - 1];

	/* a byte in the compressed data, in the check, in the block header */
	check_flip_block("data", xz, xzlen, &good, 5, b5->coff + b5->clen / 2, data, len);
	check_flip_block("check", xz, xzlen, &good, 5, b5->coff + b5->clen - 1, data, len);
	check_flip_block("header", xz, xzlen, &good, 5, b5->coff + 3, data, len);
	check_flip_block("first block", xz, xzlen, &good, 0, good.cks[0].coff + 100, data, len);
	check_flip_block("last block", xz, xzlen, &good, good.ncks - 1, last->coff + 40, data, len);

	/* a byte in the index: every block still verifies, the scan reports the damage */
	index_off = last->coff + ((last->clen + 3) & ~3ull);
	uint64_t ats[] = {index_off + 1, index_off + (xzlen - 12 - index_off) / 2,
			  xzlen - 16,	 xzlen - 12,
			  xzlen - 6,	 xzlen - 3,
			  xzlen - 1};
	for (size_t a = 0; a < sizeof(ats) / sizeof(ats[0]); a++) {
		uint64_t at = ats[a];

		fprintf(stderr, "damage: index or footer byte at %llu\n", (unsigned long long)at);
		bad = dup_buf(xz, xzlen, 0);
		bad[at] ^= 0x01;
		log_reset();
		CHECK_EQ(scan(bad, xzlen, 2, 1 << 20, &r), -EIO);
		CHECK_EQ(r.len, len);
		CHECK(r.len == len && memcmp(r.out, data, len) == 0);
		CHECK_EQ(r.verified, len);
		CHECK_EQ(r.ncks, good.ncks);
		for (size_t i = 0; i < r.ncks && i < good.ncks; i++)
			CHECK(same_ckpt(&r.cks[i], &good.cks[i]));
		CHECK_EQ(nlog[TFS_LOG_ERR], 1);
		CHECK_EQ(nlog[TFS_LOG_WARNING], 1); /* the index cannot be read: walking */
		check_blocks(bad, xzlen, &good, data, len);
		res_free(&r);
		free(bad);
	}

	/* a single-block file with a flipped byte */
	free(xz);
	xz = run("xz -c -T1", data, len, &xzlen);
	bad = dup_buf(xz, xzlen, 0);
	bad[xzlen / 2] ^= 0x10;
	log_reset();
	CHECK_EQ(scan(bad, xzlen, 2, 1 << 20, &r), -EIO);
	CHECK_EQ(r.verified, 0);
	CHECK_EQ(r.ncks, 1);
	CHECK_EQ(nlog[TFS_LOG_ERR], 1);
	res_free(&r);
	free(bad);
	res_free(&good);
	free(xz);
}

/* Cuts the file at `cut`; the walk must deliver the blocks before it (and what decodes of the
 * cut block, trusted: a truncation is no sign of damage), then -EIO. */
static void check_cut(const uint8_t *xz, size_t xzlen, const struct scan_res *good, size_t cut,
		      const uint8_t *data, size_t len)
{
	struct scan_res r;
	uint64_t want_verified = 0;
	size_t complete = 0;
	uint64_t index_off;
	const struct codec_ckpt *last = &good->cks[good->ncks - 1];

	/* blocks wholly before the cut */
	for (size_t i = 0; i < good->ncks; i++) {
		uint64_t total = (good->cks[i].clen + 3) & ~3ull;

		if (good->cks[i].clen && good->cks[i].coff + total <= cut) {
			complete = i + 1;
			want_verified = i + 1 < good->ncks ? good->cks[i + 1].uoff : len;
		}
	}
	index_off = last->coff + ((last->clen + 3) & ~3ull);
	if (!last->clen) /* sizes unknown: only the index tells */
		index_off = xzlen;
	fprintf(stderr, "truncated at %zu of %zu: %zu complete blocks\n", cut, xzlen, complete);
	log_reset();
	CHECK_EQ(scan(xz, cut, 2, 65536, &r), -EIO);
	/* a cut is a truncation, not damage: everything decoded before it counts as verified */
	CHECK_EQ(r.verified, r.len);
	if (cut >= index_off)
		CHECK_EQ(r.verified, len);
	else if (last->clen)
		CHECK(r.verified >= want_verified);
	CHECK(r.len <= len && memcmp(r.out, data, r.len) == 0); /* a prefix, even unverified */
	CHECK(r.ncks >= complete);
	for (size_t i = 0; i < r.ncks && i < good->ncks; i++) {
		CHECK_EQ(r.cks[i].uoff, good->cks[i].uoff);
		CHECK_EQ(r.cks[i].coff, good->cks[i].coff);
		CHECK_EQ(r.cks[i].bits, good->cks[i].bits);
		CHECK_EQ(r.cks[i].flags, good->cks[i].flags);
	}
	CHECK_EQ(nlog[TFS_LOG_ERR], 1);
	CHECK(strstr(last_err, "truncated") != NULL);
	/* the complete blocks decode from the truncated file */
	for (size_t i = 0; i < complete; i++)
		CHECK_EQ(decode_block(xz, cut, good, i, len, data), 0);
	res_free(&r);
}

static void test_truncation(const uint8_t *data, size_t len)
{
	static const char *cmds[] = {"xz -c -T2 --block-size=65536",
				     "xz -c -1 -T1 --block-size=65536", "xz -c -T1"};

	for (size_t c = 0; c < 3; c++) {
		uint8_t *xz;
		size_t xzlen;
		struct scan_res good;

		fprintf(stderr, "truncating: %s\n", cmds[c]);
		xz = run(cmds[c], data, len, &xzlen);
		CHECK_EQ(scan(xz, xzlen, 1, 1 << 20, &good), 0);
		/* the good checkpoints carry the index's sizes */
		const struct codec_ckpt *mid = &good.cks[good.ncks / 2];
		size_t cuts[] = {6,
				 12,
				 13,
				 (size_t)mid->coff,
				 (size_t)mid->coff + 3,
				 (size_t)(mid->coff + mid->clen / 2),
				 (size_t)(mid->coff + mid->clen - 1),
				 xzlen - 30,
				 xzlen - 12,
				 xzlen - 5,
				 xzlen - 1};

		for (size_t i = 0; i < sizeof(cuts) / sizeof(cuts[0]); i++)
			if (cuts[i] < xzlen)
				check_cut(xz, xzlen, &good, cuts[i], data, len);
		res_free(&good);
		free(xz);
	}
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
	res_free(&r);
	src_free(in);

	/* not xz at all, and only the magic */
	log_reset();
	CHECK_EQ(scan((const uint8_t *)"hello, world, this is not xz", 28, 2, 4096, &r), -EIO);
	CHECK_EQ(r.len, 0);
	res_free(&r);
	CHECK_EQ(scan((const uint8_t *)"\xFD"
				       "7zXZ",
		      6, 1, 4096, &r),
		 -EIO);
	CHECK_EQ(r.len, 0);
	res_free(&r);
}

static void test_garbage(const uint8_t *data, size_t len)
{
	static const size_t sizes[] = {1, 3, 4, 7, 100000, 1536u << 10};
	char cmd[128];
	uint8_t *xz, *bad;
	size_t xzlen;
	struct scan_res good, r;

	snprintf(cmd, sizeof(cmd), "xz -c -T2 --block-size=%u", BS);
	xz = run(cmd, data, len, &xzlen);
	CHECK_EQ(scan(xz, xzlen, 2, 1 << 20, &good), 0);
	for (size_t g = 0; g < sizeof(sizes) / sizeof(sizes[0]); g++) {
		for (int zeros = 0; zeros < 2; zeros++) {
			size_t n = sizes[g];

			if (zeros && n % 4 == 0)
				continue; /* that is valid stream padding */
			fprintf(stderr, "garbage: %zu %s bytes\n", n, zeros ? "zero" : "random");
			bad = dup_buf(xz, xzlen, n);
			if (zeros)
				memset(bad + xzlen, 0, n);
			else
				tu_fill(bad + xzlen, n, (uint32_t)n, 0);
			log_reset();
			CHECK_EQ(scan(bad, xzlen + n, 2, 1 << 20, &r), 0);
			CHECK(r.len == len && memcmp(r.out, data, len) == 0);
			CHECK_EQ(r.ncks, good.ncks);
			for (size_t i = 0; i < r.ncks && i < good.ncks; i++)
				CHECK(same_ckpt(&r.cks[i], &good.cks[i]));
			CHECK_EQ(nlog[TFS_LOG_ERR], 0);
			CHECK(nlog[TFS_LOG_WARNING] >= 1);
			res_free(&r);
			free(bad);
		}
	}
	/* valid padding is not garbage */
	bad = dup_buf(xz, xzlen, 8);
	memset(bad + xzlen, 0, 8);
	log_reset();
	CHECK_EQ(scan(bad, xzlen + 8, 2, 1 << 20, &r), 0);
	CHECK_EQ(r.len, len);
	CHECK_EQ(nlog[TFS_LOG_ERR] + nlog[TFS_LOG_WARNING], 0);
	res_free(&r);
	free(bad);

	/* what follows looks like a stream but is not one: a damaged second stream */
	bad = dup_buf(xz, xzlen, 64);
	memcpy(bad + xzlen, xz, 6);
	tu_fill(bad + xzlen + 6, 58, 99, 0);
	log_reset();
	CHECK_EQ(scan(bad, xzlen + 64, 2, 1 << 20, &r), -EIO);
	CHECK(r.len == len && memcmp(r.out, data, len) == 0);
	CHECK_EQ(r.verified, len);
	CHECK_EQ(nlog[TFS_LOG_ERR], 1);
	res_free(&r);
	free(bad);
	res_free(&good);
	free(xz);
}

/* Two streams and padding; damage between them or in the second one's header must not pass
 * for trailing garbage (that would drop the second stream without an error). */
static void test_damage_between_streams(const uint8_t *data, size_t len)
{
	size_t la = len / 2, na, nb, total;
	char cmd[128];
	uint8_t *a, *b, *cat, *bad;
	struct scan_res r;
	static const struct {
		const char *what;
		size_t at; /* from the end of the first stream */
		uint64_t verified;
	} cases[] = {
	    {"stream padding", 1, 0},
	    {"second stream's magic", 4, 0},
	    {"second stream's header flags", 4 + 7, 0},
	};

	snprintf(cmd, sizeof(cmd), "xz -c -T2 --block-size=%u", BS);
	a = run(cmd, data, la, &na);
	b = run("xz -c -T1 --check=crc32", data + la, len - la, &nb);
	total = na + 4 + nb;
	cat = calloc(1, total);
	memcpy(cat, a, na);
	memcpy(cat + na + 4, b, nb);
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		fprintf(stderr, "damage: %s\n", cases[i].what);
		bad = dup_buf(cat, total, 0);
		bad[na + cases[i].at] ^= 0x21;
		log_reset();
		CHECK_EQ(scan(bad, total, 2, 1 << 20, &r), -EIO);
		CHECK_EQ(r.verified, la);
		CHECK(r.len >= la && memcmp(r.out, data, la) == 0);
		CHECK_EQ(nlog[TFS_LOG_ERR], 1);
		res_free(&r);
		free(bad);
	}
	free(cat);
	free(a);
	free(b);
}

/* Random damage to a multi-stream file: the scan and the decoders return the original bytes
 * (as far as they say they are verified) or -EIO, nothing else, and never crash or hang. */
static void test_random_damage(const uint8_t *data, size_t len)
{
	size_t l1 = len / 3, l2 = len / 3, l3 = len - l1 - l2, n1, n2, n3, total;
	uint8_t *a = run("xz -c -0 -T2 --block-size=8000", data, l1, &n1);
	uint8_t *b = run("xz -c -0 -T1 --check=crc32", data + l1, l2, &n2);
	uint8_t *c = run("xz -c -0 -T1 --block-size=10000 --check=sha256", data + l1 + l2, l3, &n3);
	uint8_t *cat, *bad, *buf = malloc(len);
	struct scan_res good, r;
	uint32_t x = 4242;

	total = n1 + 4 + n2 + n3;
	cat = calloc(1, total);
	memcpy(cat, a, n1);
	memcpy(cat + n1 + 4, b, n2);
	memcpy(cat + n1 + 4 + n2, c, n3);
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
		CHECK(rc == 0 || rc == -EIO);
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
			ssize_t n;

			ck.ulen = (k + 1 < good.ncks ? good.cks[k + 1].uoff : len) - ck.uoff;
			if (codec_xz.dec_new(in, &ck, NULL, 0, &d))
				continue;
			while (got < len && (n = codec_xz.dec_read(d, buf + got, len - got)) > 0)
				got += (uint64_t)n;
			CHECK(n == 0 || n == -EIO);
			if (n == 0)
				CHECK(got == ck.ulen && memcmp(buf, data + ck.uoff, got) == 0);
			codec_xz.dec_free(d);
		}
		src_free(in);
	}
	quiet = false;
	res_free(&good);
	free(buf);
	free(bad);
	free(cat);
	free(a);
	free(b);
	free(c);
}

/* Sets the dictionary-size byte of the LZMA2 filter in the block header at coff, fixing
 * the header's CRC32, so the index still matches. */
static void set_dict_byte(uint8_t *xz, uint64_t coff, uint8_t dict)
{
	uint8_t *h = xz + coff;
	size_t hs = ((size_t)h[0] + 1) * 4, p = 2;
	uint32_t crc;

	if (h[1] & 0x40) /* compressed size */
		while (h[p++] & 0x80)
			;
	if (h[1] & 0x80) /* uncompressed size */
		while (h[p++] & 0x80)
			;
	CHECK_EQ(h[p], 0x21); /* LZMA2 */
	CHECK_EQ(h[p + 1], 1);
	h[p + 2] = dict;
	crc = lzma_crc32(h, hs - 4, 0);
	for (int i = 0; i < 4; i++)
		h[hs - 4 + i] = (uint8_t)(crc >> (8 * i));
}

static void test_hostile(const uint8_t *data, size_t len)
{
	char cmd[128];
	uint8_t *xz, *bad;
	size_t xzlen;
	struct scan_res good, r;
	struct codec_dec *d;
	struct src *in;

	snprintf(cmd, sizeof(cmd), "xz -c -T2 --block-size=%u", BS);
	xz = run(cmd, data, len, &xzlen);
	CHECK_EQ(scan(xz, xzlen, 2, 1 << 20, &good), 0);

	/* a 4 GiB dictionary in block 3: refused with a clear message, not allocated */
	bad = dup_buf(xz, xzlen, 0);
	set_dict_byte(bad, good.cks[2].coff, 40);
	log_reset();
	CHECK_EQ(scan(bad, xzlen, 2, 1 << 20, &r), -EIO);
	CHECK_EQ(r.verified, good.cks[2].uoff);
	CHECK(strstr(last_err, "refusing") != NULL);
	res_free(&r);
	in = src_from_mem(bad, xzlen);
	CHECK_EQ(codec_xz.dec_new(in, &good.cks[2], NULL, 0, &d), -EIO);
	CHECK(d == NULL);
	/* 2 GiB: refused too */
	set_dict_byte(bad, good.cks[2].coff, 38);
	CHECK_EQ(codec_xz.dec_new(in, &good.cks[2], NULL, 0, &d), -EIO);
	/* 1.5 GiB is what xz itself allows: accepted (the memory is reserved, not touched) */
	set_dict_byte(bad, good.cks[2].coff, 37);
	CHECK_EQ(codec_xz.dec_new(in, &good.cks[2], NULL, 0, &d), 0);
	CHECK(codec_xz.dec_memory(d) > 1500u << 20);
	codec_xz.dec_free(d);
	/* an invalid dictionary byte */
	set_dict_byte(bad, good.cks[2].coff, 41);
	CHECK_EQ(codec_xz.dec_new(in, &good.cks[2], NULL, 0, &d), -EIO);
	src_free(in);
	free(bad);

	/* checkpoints that do not point at a block, or do not match it */
	in = src_from_mem(xz, xzlen);
	struct codec_ckpt ck = good.cks[1];
	ck.ulen = good.cks[2].uoff - ck.uoff;
	log_reset();
	ck.coff = 0; /* the stream header */
	CHECK_EQ(codec_xz.dec_new(in, &ck, NULL, 0, &d), -EIO);
	ck.coff = xzlen - 12; /* the footer */
	CHECK(codec_xz.dec_new(in, &ck, NULL, 0, &d) < 0);
	ck.coff = xzlen + 1000; /* past the end */
	CHECK_EQ(codec_xz.dec_new(in, &ck, NULL, 0, &d), -EIO);
	ck.coff = good.cks[good.ncks - 1].coff + ((good.cks[good.ncks - 1].clen + 3) & ~3ull);
	CHECK_EQ(codec_xz.dec_new(in, &ck, NULL, 0, &d), -EIO); /* the index */
	ck = good.cks[1];
	ck.bits = 99;
	CHECK_EQ(codec_xz.dec_new(in, &ck, NULL, 0, &d), -EINVAL);
	ck = good.cks[1];
	ck.clen += 4;
	CHECK_EQ(codec_xz.dec_new(in, &ck, NULL, 0, &d), -EIO);
	ck = good.cks[1];
	ck.extra += 1;
	CHECK_EQ(codec_xz.dec_new(in, &ck, NULL, 0, &d), -EIO);
	/* a wrong check type: the decoder reads the wrong number of check bytes */
	ck = good.cks[1];
	ck.bits = LZMA_CHECK_SHA256;
	ck.clen = 0;
	if (codec_xz.dec_new(in, &ck, NULL, 0, &d) == 0) {
		uint8_t buf[4096];
		ssize_t n;

		while ((n = codec_xz.dec_read(d, buf, sizeof(buf))) > 0)
			;
		CHECK_EQ(n, -EIO);
		codec_xz.dec_free(d);
	}
	CHECK(nlog[TFS_LOG_ERR] >= 6);
	src_free(in);
	res_free(&good);
	free(xz);
}

static void test_sink_error_and_free(const uint8_t *data, size_t len)
{
	char cmd[128];
	uint8_t *xz;
	size_t xzlen;
	struct scan_res r;
	struct src *in;

	snprintf(cmd, sizeof(cmd), "xz -c -T2 --block-size=%u", BS);
	xz = run(cmd, data, len, &xzlen);
	in = src_from_mem(xz, xzlen);
	CHECK_EQ(scan_src(in, 3, 1 << 20, 3, &r), -ENOSPC);
	CHECK_EQ(r.ncks, 2);
	CHECK_EQ(r.len, 2 * BS);
	res_free(&r);

	/* freeing a scan early, with workers waiting or busy */
	for (unsigned threads = 1; threads <= 8; threads *= 2) {
		struct codec_opts opts = {.threads = threads};
		struct codec_sink sink = {.checkpoint = sink_fn, .opaque = &r};
		struct codec_scan *s;
		uint8_t buf[1000];

		memset(&r, 0, sizeof(r));
		r.reader = pthread_self();
		CHECK_EQ(codec_xz.scan_new(in, &opts, &sink, &s), 0);
		codec_xz.scan_free(s);
		CHECK_EQ(codec_xz.scan_new(in, &opts, &sink, &s), 0);
		CHECK_EQ(codec_xz.scan_read(s, buf, sizeof(buf)), sizeof(buf));
		CHECK(memcmp(buf, data, sizeof(buf)) == 0);
		usleep(20000);
		codec_xz.scan_free(s);
		res_free(&r);
	}
	codec_xz.scan_free(NULL);
	codec_xz.dec_free(NULL);
	src_free(in);
	free(xz);
}

static int test(void)
{
	size_t len = 1200000;
	uint8_t *data;

	if (!tu_have("xz")) {
		fprintf(stderr, "xz not installed\n");
		return 77;
	}
	tfs_log_set_sink(log_sink, NULL);
	data = make_data(len, 1);
	test_probe();
	test_checks(data, len);
	test_empty();
	test_multistream(data, len);
	test_unknown_size(data, len);
	test_pixz(data, len);
	test_threads_memory();
	test_damage(data, len);
	test_truncation(data, len);
	test_zero_length();
	test_garbage(data, len);
	test_damage_between_streams(data, len);
	/* under the sanitizers 33 KB streams: still four or five blocks in the first and last */
	test_random_damage(data, TU_SANITIZED ? len / 12 : len / 4);
	test_hostile(data, len);
	test_sink_error_and_free(data, len);
	free(data);
	return tu_exit();
}

int main(void)
{
	return test();
}
