/* Unit tests of the .Z codec (codecs/compress.c), on data compressed at test time by the real
 * compress (ncompress) and checked against the real `compress -dc`.
 *
 * Good files (0, 1, 2 bytes up to several MB of text, noise and runs, which pass through every
 * code width and several CLEARs; maxbits 9, 10, 12, 16 and the default; block mode and not)
 * are scanned whole in reads of several sizes and decoded by decoders read in random-sized
 * pieces: the bytes must be compress -dc's, the one checkpoint the start.  Damaged copies
 * (truncated at many points, flipped bits, runs of junk, bad header bytes, reserved bits,
 * maxbits 8 and 17, invalid codes written by hand) must give compress -dc's bytes or fewer,
 * then -EIO or a clean refusal with one logged message -- never other bytes, a crash or a hang.
 */
#include "codecs/codec.h"
#include "common/log.h"
#include "testutil.h"

#include <errno.h>
#include <stdbool.h>
#include <string.h>

#define MB (1u << 20)

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

static unsigned long nlog_bad(void)
{
	return nlog[TFS_LOG_ERR] + nlog[TFS_LOG_WARNING] + nlog[TFS_LOG_NOTICE];
}

/* ---- the real tools ---- */

/* What compress -dc makes of z: its output (malloc'd, *len) and whether it succeeded. */
static uint8_t *ref_decode(const uint8_t *z, size_t zlen, size_t *len, bool *ok)
{
	size_t n;
	uint8_t *out = tu_pipe("compress -dc 2>/dev/null; printf '%03d' $?", z, zlen, &n);

	if (!out || n < 3) {
		fprintf(stderr, "cannot run compress -dc\n");
		exit(1);
	}
	*ok = memcmp(out + n - 3, "000", 3) == 0;
	*len = n - 3;
	return out;
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

/* ---- scanning, with checks of the sink contract ---- */

struct scan_res {
	uint8_t *out;
	size_t len;
	ssize_t rc; /* the final scan_read result: 0 or -errno */
	uint64_t verified;
	struct codec_ckpt cks[4];
	size_t ncks;
	size_t returned;
	int contract_errors;
	int fail; /* the sink fails with this (0: never) */
};

static int sink_fn(void *opaque, const struct codec_ckpt *c, const void *aux, size_t auxlen)
{
	struct scan_res *r = opaque;

	if (r->ncks || c->uoff || c->coff || c->ulen || c->clen || c->extra || c->bits || c->flags)
		r->contract_errors++; /* one checkpoint, the start, nothing else */
	if (r->returned)
		r->contract_errors++; /* before any byte */
	if (aux || auxlen)
		r->contract_errors++;
	if (r->fail)
		return r->fail;
	if (r->ncks < 4)
		r->cks[r->ncks] = *c;
	r->ncks++;
	return 0;
}

static void res_free(struct scan_res *r)
{
	free(r->out);
	memset(r, 0, sizeof(*r));
}

/* Scans src whole in reads of step bytes (0: random sizes).  Returns the final result. */
static ssize_t scan_src(struct src *in, size_t step, int fail, struct scan_res *r)
{
	struct codec_opts opts = {.spacing = MB, .threads = 1};
	struct codec_sink sink = {.checkpoint = sink_fn, .opaque = r};
	struct codec_scan *s;
	size_t cap = 1 << 16;
	uint32_t x = 99;
	ssize_t n;
	int err;

	memset(r, 0, sizeof(*r));
	r->fail = fail;
	r->out = malloc(cap);
	err = codec_compress.scan_new(in, &opts, &sink, &s);
	CHECK_EQ(err, 0);
	if (err)
		return r->rc = err;
	CHECK(codec_compress.scan_name == NULL);
	for (;;) {
		size_t k = step;
		if (!k) {
			x = x * 1103515245 + 12345;
			k = x >> 16 & 1 ? 1 + (x >> 8) % 7 : 1 + (x >> 4) % 200000;
		}
		if (r->len + k > cap) {
			cap = (r->len + k) * 2;
			r->out = realloc(r->out, cap);
		}
		n = codec_compress.scan_read(s, r->out + r->len, k);
		if (n <= 0)
			break;
		CHECK(n <= (ssize_t)k);
		r->len += (size_t)n;
		r->returned = r->len;
	}
	r->rc = n;
	CHECK_EQ(codec_compress.scan_read(s, r->out, 100), n); /* the end and errors are sticky */
	r->verified = codec_compress.scan_verified(s);
	CHECK_EQ(r->verified, r->len); /* nothing to verify: what was returned */
	if (r->len)
		CHECK_EQ(r->ncks, 1);
	CHECK(r->ncks <= 1);
	CHECK_EQ(r->contract_errors, 0);
	codec_compress.scan_free(s);
	return n;
}

static ssize_t scan(const uint8_t *z, size_t zlen, size_t step, struct scan_res *r)
{
	struct src *in = src_from_mem(z, zlen);
	ssize_t n = scan_src(in, step, 0, r);

	src_free(in);
	return n;
}

/* Decodes from the start in random-sized pieces (seed), up to max bytes.  The bytes into *out
 * (malloc'd), their count into *len; returns the final result (0 at the end). */
static ssize_t decode(const uint8_t *z, size_t zlen, uint32_t seed, size_t max, uint8_t **out,
		      size_t *len)
{
	struct src *in = src_from_mem(z, zlen);
	struct codec_ckpt ck = {0};
	struct codec_dec *d;
	size_t cap = 1 << 16, got = 0;
	uint32_t x = seed * 2654435761u + 7;
	ssize_t n = 0;
	int err;

	*out = malloc(cap);
	*len = 0;
	err = codec_compress.dec_new(in, &ck, NULL, 0, &d);
	CHECK_EQ(err, 0);
	if (err) {
		src_free(in);
		return err;
	}
	CHECK(codec_compress.dec_memory(d) >= 300000);
	while (got < max) {
		x ^= x << 13;
		x ^= x >> 17;
		x ^= x << 5;
		size_t k = x & 3 ? 1 + x % 70000 : 1 + (x >> 3) % 5;
		if (got + k > cap) {
			cap = (got + k) * 2;
			*out = realloc(*out, cap);
		}
		n = codec_compress.dec_read(d, *out + got, k);
		if (n <= 0)
			break;
		CHECK(n <= (ssize_t)k);
		got += (size_t)n;
	}
	if (n <= 0)
		CHECK_EQ(codec_compress.dec_read(d, *out, 10), n); /* sticky */
	codec_compress.dec_free(d);
	src_free(in);
	*len = got;
	return n > 0 ? 0 : n;
}

/* ---- making test data ---- */

/* text, noise, runs, text of other words: several CLEARs in block mode */
static uint8_t *make_mixed(size_t len, uint32_t seed)
{
	uint8_t *b = malloc(len ? len : 1);
	size_t off = 0;
	unsigned k = 0;

	while (off < len) {
		size_t n = (size_t)(100000 + (seed * 7919u + k * 104729u) % 700000);
		if (n > len - off)
			n = len - off;
		switch (k % 4) {
		case 0:
			tu_fill(b + off, n, seed + k, 1);
			break;
		case 1:
			tu_fill(b + off, n, seed + k, 0);
			break;
		case 2: /* runs of one byte, of varying lengths */
			for (size_t i = 0; i < n; i++)
				b[off + i] = (uint8_t)((i / (1 + i % 977)) * 37);
			break;
		case 3: /* a binary table: counters */
			for (size_t i = 0; i < n; i++)
				b[off + i] = (uint8_t)(i >> ((i & 3) * 3));
			break;
		}
		off += n;
		k++;
	}
	return b;
}

/* compress OPTS of data.  compress -dc of that must be data again -- except where ncompress
 * 4.2's encoder writes what no decoder reads (see known_unreadable): *readable says which
 * (NULL: it must be). */
static uint8_t *compress_data(const char *opts, const uint8_t *data, size_t len, size_t *zlen,
			      bool *readable)
{
	char cmd[128];
	uint8_t *z, *back;
	size_t blen;
	bool ok;

	/* compress exits 2 when the output is larger than the input: not an error here */
	snprintf(cmd, sizeof(cmd), "compress -c %s; s=$?; [ $s = 0 ] || [ $s = 2 ]", opts);
	z = run(cmd, data, len, zlen);
	back = ref_decode(z, *zlen, &blen, &ok);
	ok = ok && blen == len && memcmp(back, data, len) == 0;
	if (readable)
		*readable = ok;
	else
		CHECK(ok);
	free(back);
	return z;
}

/* ncompress 4.2.4's encoder, unlike the original compress 4.0's, does not widen the codes to
 * 10 bits when the table of a -b 9 file is full, and starts the codes of a -C file (no block
 * mode) at 257, not 256: such files are read by no decoder (neither its own, gzip's nor
 * libarchive's, nor ours, which follows them). */
static bool known_unreadable(const char *opts)
{
	return strstr(opts, "-b 9") || strstr(opts, "-C");
}

/* ---- the tests ---- */

static void test_probe(void)
{
	CHECK(codec_compress.probe((const uint8_t *)"\x1f\x9d\x90", 3));
	CHECK(codec_compress.probe((const uint8_t *)"\x1f\x9d", 2));
	CHECK(!codec_compress.probe((const uint8_t *)"\x1f", 1));
	CHECK(!codec_compress.probe((const uint8_t *)"\x1f\x8b\x08", 3));
	CHECK(!codec_compress.probe((const uint8_t *)"\x1f\xa0", 2)); /* compact/pack: no */
	CHECK(!codec_compress.probe((const uint8_t *)"", 0));
	CHECK(codec_probe((const uint8_t *)"\x1f\x9d\x90\x41\x00", 5) == &codec_compress);
	CHECK(codec_by_name("compress") == &codec_compress);
}

static ssize_t check_damaged(const char *what, const uint8_t *z, size_t zlen, uint32_t seed);

/* A good file: the scan in reads of several sizes, decoders in random pieces, against data. */
static void check_good(const char *what, const uint8_t *z, size_t zlen, const uint8_t *data,
		       size_t len)
{
	static const size_t steps[] = {MB, 4093, 0};
	struct scan_res r;
	uint8_t *out;
	size_t olen;

	log_reset();
	for (size_t i = 0; i < sizeof(steps) / sizeof(steps[0]); i++) {
		if (steps[i] == 4093 && len > 8 * MB)
			continue;
		CHECK_EQ(scan(z, zlen, steps[i], &r), 0);
		CHECK_EQ(r.len, len);
		if (r.len != len || memcmp(r.out, data, len) != 0) {
			size_t k = 0;
			while (k < r.len && k < len && r.out[k] == data[k])
				k++;
			fprintf(stderr, "%s: scan (step %zu) differs from compress -dc at %zu\n", what,
				steps[i], k);
			CHECK(0);
		}
		CHECK_EQ(r.ncks, 1); /* the header is good: the start is a checkpoint */
		res_free(&r);
	}
	for (uint32_t seed = 1; seed <= 2; seed++) {
		CHECK_EQ(decode(z, zlen, seed, SIZE_MAX, &out, &olen), 0);
		CHECK(olen == len && memcmp(out, data, len) == 0);
		free(out);
	}
	CHECK_EQ(nlog_bad(), 0);
}

static void test_good(void)
{
	static const char *opts[] = {"", "-b 9", "-b 10", "-b 12", "-b 16", "-C", "-C -b 9"};
	static const size_t sizes[] = {0, 1, 2, 3, 300, 70000, 1500000, 6 * MB};
	unsigned nunreadable = 0;

	for (size_t s = 0; s < sizeof(sizes) / sizeof(sizes[0]); s++) {
		size_t len = sizes[s];
		/* under the sanitizers up to 1.5 MB (the 6 MB streams, each decoded five ways, run in
		 * the first tree: seconds each there) */
		if (TU_SANITIZED && len > 2 * MB)
			continue;
		uint8_t *mixed = make_mixed(len, (uint32_t)s + 1);
		uint8_t *text = malloc(len + 1), *noise = malloc(len + 1), *runs = malloc(len + 1);

		tu_fill(text, len, 5, 1);
		tu_fill(noise, len, 6, 0);
		memset(runs, 'x', len);
		for (size_t i = 0; i < len; i += 1 + i % 50000)
			runs[i] = 'y';
		for (size_t o = 0; o < sizeof(opts) / sizeof(opts[0]); o++) {
			const struct {
				const char *name;
				const uint8_t *d;
			} kinds[] = {{"mixed", mixed}, {"text", text}, {"noise", noise}, {"runs", runs}};
			for (size_t k = 0; k < 4; k++) {
				char what[128];
				size_t zlen;
				/* the big ones: mixed in every mode, the others in two */
				if (len > 2 * MB && k && o != 0 && o != 1)
					continue;
				bool readable;
				uint8_t *z = compress_data(opts[o], kinds[k].d, len, &zlen, &readable);
				snprintf(what, sizeof(what), "compress %s, %zu bytes of %s -> %zu",
					 opts[o], len, kinds[k].name, zlen);
				if (readable) {
					fprintf(stderr, "good: %s\n", what);
					check_good(what, z, zlen, kinds[k].d, len);
				} else { /* compress -dc's bytes, then an error */
					fprintf(stderr, "unreadable: %s\n", what);
					CHECK(known_unreadable(opts[o]));
					quiet = true;
					check_damaged(what, z, zlen, (uint32_t)k);
					quiet = false;
					nunreadable++;
				}
				free(z);
			}
		}
		free(mixed);
		free(text);
		free(noise);
		free(runs);
	}
	fprintf(stderr, "%u files compress -dc cannot read either\n", nunreadable);
}

/* A source of unknown size over a buffer, read in short pieces. */
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
	if (len > 1000 + off % 3000) /* short reads: src_pread asks again */
		len = 1000 + off % 3000;
	memcpy(buf, u->buf + off, len);
	return (ssize_t)len;
}

static const struct src_ops usrc_ops = {.pread = usrc_pread};

static void test_unknown_size(const uint8_t *data, size_t len)
{
	size_t zlen;
	uint8_t *z = compress_data("", data, len, &zlen, NULL);
	struct usrc u = {z, zlen};
	struct src *in = src_new(&usrc_ops, &u, SRC_SIZE_UNKNOWN);
	struct scan_res r;

	log_reset();
	CHECK_EQ(scan_src(in, 65536, 0, &r), 0);
	CHECK(r.len == len && memcmp(r.out, data, len) == 0);
	CHECK_EQ(nlog_bad(), 0);
	res_free(&r);
	src_free(in);
	free(z);
}

/* Damaged z (cut or changed): the scan and a decoder give compress -dc's bytes (or fewer, and
 * then an error), never others; an error is -EIO with one message.  Returns the scan's rc. */
static ssize_t check_damaged(const char *what, const uint8_t *z, size_t zlen, uint32_t seed)
{
	struct scan_res r;
	uint8_t *ref, *out;
	size_t rlen, olen;
	bool ok;
	ssize_t rc, drc;

	ref = ref_decode(z, zlen, &rlen, &ok);
	log_reset();
	rc = scan(z, zlen, seed & 1 ? 0 : 65536, &r);
	CHECK(rc == 0 || rc == -EIO || rc == -ENOTSUP);
	size_t k = r.len < rlen ? r.len : rlen;
	if (memcmp(r.out, ref, k) != 0) {
		fprintf(stderr, "%s: the scan's bytes are not compress -dc's\n", what);
		CHECK(0);
	}
	if (rc == 0) {
		CHECK_EQ(nlog_bad(), 0);
		/* ncompress writes out what it decoded before an error only now and then */
		CHECK(r.len >= rlen);
		if (ok)
			CHECK_EQ(r.len, rlen);
	} else {
		CHECK_EQ(nlog[TFS_LOG_ERR], 1);
		CHECK(r.len <= rlen || !ok); /* never more than compress when it succeeds */
	}
	if (ok && rc && !strstr(last_err, "truncated") && !strstr(last_err, "reserved") &&
	    !strstr(last_err, "empty")) {
		fprintf(stderr, "%s: compress -dc succeeds (%zu bytes), we fail (%zu): %s\n", what,
			rlen, r.len, last_err);
		CHECK(0 && "an error where compress -dc succeeds, not a truncation");
	}
	drc = decode(z, zlen, seed, SIZE_MAX, &out, &olen);
	CHECK_EQ(drc, rc);
	CHECK(olen == r.len && memcmp(out, r.out, olen) == 0);
	free(out);
	res_free(&r);
	free(ref);
	return rc;
}

static void test_truncation(const uint8_t *data, size_t len)
{
	static const char *opts[] = {"-b 10", "-b 12", ""};

	quiet = true;
	for (size_t o = 0; o < sizeof(opts) / sizeof(opts[0]); o++) {
		size_t zlen, nbad = 0, ncuts = 0;
		uint8_t *z = compress_data(opts[o], data, len, &zlen, NULL);
		char what[96];

		for (size_t cut = 0; cut < zlen; cut += cut < 40 ? 1 : 1 + cut / 5 % 4099) {
			struct scan_res r;
			snprintf(what, sizeof(what), "compress %s cut at %zu of %zu", opts[o], cut,
				 zlen);
			ssize_t rc = check_damaged(what, z, cut, (uint32_t)cut);
			ncuts++;
			if (rc) {
				nbad++;
				CHECK(cut < 3 || strstr(last_err, "truncated") != NULL);
			}
			if (cut <= 3)
				CHECK_EQ(rc, cut == 3 ? 0 : -EIO); /* the header alone: no data */
			/* what was decoded is data's start */
			CHECK_EQ(scan(z, cut, MB, &r), rc);
			CHECK(r.len <= len && memcmp(r.out, data, r.len) == 0);
			res_free(&r);
		}
		fprintf(stderr, "truncated (%s): %zu of %zu cuts found\n", opts[o], nbad, ncuts);
		CHECK(nbad > ncuts / 10); /* those that end in a whole byte without a code */
		free(z);
	}
	quiet = false;
}

static void test_random_damage(const uint8_t *data, size_t len)
{
	static const char *opts[] = {"", "-b 12", "-b 10", "-b 14"};
	uint32_t x = 4242;
	unsigned nerr = 0, n = 0;

	quiet = true;
	for (size_t o = 0; o < sizeof(opts) / sizeof(opts[0]); o++) {
		size_t zlen;
		uint8_t *z = compress_data(opts[o], data, len, &zlen, NULL), *bad = malloc(zlen);

		for (int i = 0; i < 80; i++) {
			char what[96];
			memcpy(bad, z, zlen);
			x = x * 1103515245 + 12345;
			if (i % 5 == 4) { /* a run of junk */
				size_t at = 3 + (x >> 8) % (zlen - 19);
				tu_fill(bad + at, 16, x, 0);
			} else {
				for (int k = 0; k <= i % 3; k++) {
					x = x * 1103515245 + 12345;
					bad[3 + (x >> 8) % (zlen - 3)] ^= (uint8_t)(1u << (x % 8));
				}
			}
			snprintf(what, sizeof(what), "compress %s, damage %d", opts[o], i);
			nerr += check_damaged(what, bad, zlen, x) != 0;
			n++;
		}
		free(bad);
		free(z);
	}
	fprintf(stderr, "random damage: %u of %u found\n", nerr, n);
	quiet = false;
}

/* LSB-first codes of the given widths after a header: for files no compress writes. */
struct packer {
	uint8_t buf[256];
	size_t bits;
};

static void put_code(struct packer *p, unsigned code, unsigned width)
{
	for (unsigned i = 0; i < width; i++, p->bits++)
		if (code >> i & 1)
			p->buf[p->bits >> 3] |= (uint8_t)(1u << (p->bits & 7));
}

static size_t packed(struct packer *p, uint8_t flags, const unsigned *codes, size_t n)
{
	memset(p, 0, sizeof(*p));
	p->buf[0] = 0x1f;
	p->buf[1] = 0x9d;
	p->buf[2] = flags;
	p->bits = 24;
	for (size_t i = 0; i < n; i++)
		put_code(p, codes[i], 9);
	return (p->bits + 7) / 8;
}

static void check_crafted(const char *what, uint8_t flags, const unsigned *codes, size_t n,
			  const char *want, ssize_t rc)
{
	struct packer p;
	struct scan_res r;
	size_t zlen = packed(&p, flags, codes, n);
	uint8_t *out;
	size_t olen;

	fprintf(stderr, "crafted: %s\n", what);
	log_reset();
	CHECK_EQ(scan(p.buf, zlen, MB, &r), rc);
	CHECK_EQ(r.len, strlen(want));
	CHECK(r.len == strlen(want) && memcmp(r.out, want, r.len) == 0);
	CHECK_EQ(nlog[TFS_LOG_ERR], rc ? 1 : 0);
	if (rc)
		CHECK(strstr(last_err, "invalid code") != NULL);
	res_free(&r);
	/* a decoder in one-byte reads: the bytes first, then the error */
	CHECK_EQ(decode(p.buf, zlen, 0, SIZE_MAX, &out, &olen), rc);
	CHECK(olen == strlen(want) && memcmp(out, want, olen) == 0);
	free(out);
	check_damaged(what, p.buf, zlen, 1);
}

static void test_crafted(void)
{
	/* KwKwK: 'a', then 257 (being defined: "aa"), then 258 ("aaa") */
	check_crafted("KwKwK", 0x90, (const unsigned[]){'a', 257, 258}, 3, "aaaaaa", 0);
	check_crafted("KwKwK, no block mode", 0x10, (const unsigned[]){'a', 256, 'b', 257}, 4,
		      "aaabaab", 0);
	check_crafted("a code past the next free one", 0x90,
		      (const unsigned[]){'a', 'b', 'c', 300, 'd'}, 5, "abc", -EIO);
	check_crafted("the next free code plus one", 0x90, (const unsigned[]){'x', 'y', 259}, 3,
		      "xy", -EIO);
	check_crafted("a string code first", 0x90, (const unsigned[]){257, 'a'}, 2, "", -EIO);
	check_crafted("256 first without block mode", 0x10, (const unsigned[]){256}, 1, "", -EIO);
	/* CLEAR, then the rest of the group of eight 9-bit codes is skipped */
	check_crafted("CLEAR", 0x90,
		      (const unsigned[]){'a', 'b', 256, 0777, 0777, 0777, 0777, 0777, 'c', 'd',
					 257},
		      11, "abcdcd", 0);
	check_crafted("a string code right after CLEAR", 0x90,
		      (const unsigned[]){'a', 'b', 256, 0, 0, 0, 0, 0, 257}, 9, "ab", -EIO);
	/* a CLEAR at the very start (ncompress refuses it; harmless, we take it) */
	check_crafted("CLEAR first", 0x90,
		      (const unsigned[]){256, 0, 0, 0, 0, 0, 0, 0, 'q', 'r'}, 10, "qr", 0);
}

static void test_headers(const uint8_t *data, size_t len)
{
	static const struct {
		const char *what;
		uint8_t flags;
		ssize_t rc;
		const char *msg;
	} v[] = {
	    {"maxbits 8", 0x88, -EIO, "at most 8 bits"},
	    {"maxbits 0", 0x80, -EIO, "at most 0 bits"},
	    {"maxbits 17", 0x91, -ENOTSUP, "17-bit"},
	    {"maxbits 31", 0x9f, -ENOTSUP, "31-bit"},
	    {"reserved 0x20", 0xb0, -ENOTSUP, "reserved"},
	    {"reserved 0x40", 0xd0, -ENOTSUP, "reserved"},
	};
	size_t zlen;
	uint8_t *z = compress_data("", data, len, &zlen, NULL), *bad = malloc(zlen);
	struct scan_res r;
	uint8_t *out;
	size_t olen;

	for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
		fprintf(stderr, "bad header: %s\n", v[i].what);
		memcpy(bad, z, zlen);
		bad[2] = v[i].flags;
		log_reset();
		CHECK_EQ(scan(bad, zlen, MB, &r), v[i].rc);
		CHECK_EQ(r.len, 0);
		CHECK_EQ(r.ncks, 0); /* no checkpoint where nothing can start */
		CHECK_EQ(nlog[TFS_LOG_ERR], 1);
		CHECK(strstr(last_err, v[i].msg) != NULL);
		res_free(&r);
		CHECK_EQ(decode(bad, zlen, 3, SIZE_MAX, &out, &olen), v[i].rc);
		CHECK_EQ(olen, 0);
		free(out);
		check_damaged(v[i].what, bad, zlen, 2);
	}
	/* not .Z at all, and too short */
	static const struct {
		const char *bytes;
		size_t len;
		const char *msg;
	} w[] = {{"", 0, "empty"},		 {"\x1f", 1, "not a .Z"},
		 {"\x1f\x9d", 2, "truncated"},	 {"\x1f\x8b\x08\x00", 4, "not a .Z"},
		 {"hello, world", 12, "not a .Z"}};
	for (size_t i = 0; i < sizeof(w) / sizeof(w[0]); i++) {
		log_reset();
		CHECK_EQ(scan((const uint8_t *)w[i].bytes, w[i].len, MB, &r), -EIO);
		CHECK_EQ(r.len, 0);
		CHECK_EQ(r.ncks, 0);
		CHECK_EQ(nlog[TFS_LOG_ERR], 1);
		CHECK(strstr(last_err, w[i].msg) != NULL);
		res_free(&r);
	}
	/* the header alone: a valid file of no bytes */
	log_reset();
	CHECK_EQ(scan((const uint8_t *)"\x1f\x9d\x90", 3, MB, &r), 0);
	CHECK_EQ(r.len, 0);
	CHECK_EQ(nlog_bad(), 0);
	res_free(&r);
	free(bad);
	free(z);
}

static void test_api(const uint8_t *data, size_t len)
{
	size_t zlen;
	uint8_t *z = compress_data("", data, len, &zlen, NULL);
	struct src *in = src_from_mem(z, zlen);
	struct scan_res r;
	struct codec_dec *d = (struct codec_dec *)1;
	struct codec_ckpt ck = {.uoff = 1};
	uint8_t buf[64];

	/* the sink's error stops the scan before any byte */
	CHECK_EQ(scan_src(in, MB, -ENOSPC, &r), -ENOSPC);
	CHECK_EQ(r.len, 0);
	res_free(&r);
	/* the start is the only checkpoint */
	CHECK_EQ(codec_compress.dec_new(in, &ck, NULL, 0, &d), -EINVAL);
	CHECK(d == NULL);
	ck = (struct codec_ckpt){.coff = 3};
	CHECK_EQ(codec_compress.dec_new(in, &ck, NULL, 0, &d), -EINVAL);
	/* a scan freed early, and one that reads a few bytes */
	struct codec_sink sink = {.checkpoint = sink_fn, .opaque = &r};
	struct codec_scan *s;
	memset(&r, 0, sizeof(r));
	CHECK_EQ(codec_compress.scan_new(in, NULL, &sink, &s), 0);
	codec_compress.scan_free(s);
	CHECK_EQ(codec_compress.scan_new(in, NULL, &sink, &s), 0);
	CHECK_EQ(codec_compress.scan_read(s, buf, sizeof(buf)), sizeof(buf));
	CHECK(memcmp(buf, data, sizeof(buf)) == 0);
	codec_compress.scan_free(s);
	codec_compress.scan_free(NULL);
	codec_compress.dec_free(NULL);
	src_free(in);
	free(z);
}

static int test(void)
{
	size_t len = 700000;
	uint8_t *data;

	if (!tu_have("compress")) {
		fprintf(stderr, "compress (ncompress) not installed\n");
		return 77;
	}
	tfs_log_set_sink(log_sink, NULL);
	data = make_mixed(len, 11);
	test_probe();
	test_good();
	test_unknown_size(data, len);
	test_crafted();
	test_headers(data, len);
	test_truncation(data, 200000);
	test_random_damage(data, 200000);
	test_api(data, len);
	free(data);
	return tu_exit();
}

int main(void)
{
	return test();
}
