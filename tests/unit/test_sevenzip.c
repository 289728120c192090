/* Unit tests of the 7z container (containers/7z/) and the 7z folder codec (codecs/7z/, with
 * bcj2.c), on archives made at test time by the real 7-Zip (7zz) from files written to a
 * temporary folder.
 *
 * Each archive is parsed with cont_7z.parse from memory, with a sink that records every stream
 * and member; the members are compared with the files they were made from (names, unicode
 * included, types, modes, symlink targets, sizes, CRCs, mtimes), then every stream is decoded
 * with codec_7z: scanned from its start (bytes, checkpoints, the sink's contract), restarted at
 * every checkpoint the scan emitted, and read at random offsets, and each member's bytes are
 * compared with its file.  Methods: Copy, LZMA, LZMA2 (one and two threads, several blocks),
 * Deflate, BZip2, BCJ, BCJ2, ARM64, Delta; Swap4 (members unreadable; PPMd is test_ppmd's), AES (streams declared;
 * their decoding is test_sevenzip_aes's), encrypted headers (refused without a password), stdin
 * archives.  Damage: flipped bytes in the signature header, the next header and the packed
 * data, and truncations at many offsets: an error, or members whose reads fail -- never a
 * crash, never wrong bytes.  BCJ2's decoder is also tested on its own (bytes given one at a
 * time).
 */
#include "codecs/7z/bcj2.h"
#include "codecs/codec.h"
#include "containers/container.h"
#include "common/log.h"
#include "codecs/7z/sevenzip_chain.h"
#include "sevenzip_fixtures.h"
#include "testutil.h"

#include <errno.h>
#include <stdbool.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

static bool quiet;
static unsigned long nlog[8];

static void log_sink(int level, const char *msg, void *opaque)
{
	if (level >= 0 && level < 8)
		nlog[level]++;
	if (!quiet)
		fprintf(stderr, "  [log %d] %s\n", level, msg);
}

/* ---- recording what the parser reports ---- */

struct rstream {
	char codec[16];
	uint64_t coff, clen, usize;
	uint8_t *params;
	size_t params_len;
};

struct rmember {
	char *path;
	struct arc_member m; /* pointers other than path cleared */
	char why[96];
};

struct rec {
	struct rstream *s;
	size_t ns;
	struct rmember *m;
	size_t nm;
	int contract_errors;
	int fail_member_at; /* the member sink fails with -ENOSPC at this member (1-based) */
};

static int rec_stream(void *opaque, const struct cont_stream *s, uint64_t *id)
{
	struct rec *r = opaque;
	struct rstream *x;

	if (!s->codec || strcmp(s->codec, "7z") != 0 || !s->params || !s->params_len)
		r->contract_errors++;
	r->s = realloc(r->s, (r->ns + 1) * sizeof(*r->s));
	x = &r->s[r->ns++];
	snprintf(x->codec, sizeof(x->codec), "%s", s->codec);
	x->coff = s->coff;
	x->clen = s->clen;
	x->usize = s->usize;
	x->params = malloc(s->params_len);
	memcpy(x->params, s->params, s->params_len);
	x->params_len = s->params_len;
	*id = r->ns;
	return 0;
}

static int rec_member(void *opaque, const struct arc_member *m)
{
	struct rec *r = opaque;
	struct rmember *x;

	if (!m->path || m->path[m->path_len] != '\0' || strlen((const char *)m->path) != m->path_len)
		r->contract_errors++;
	if (m->stream > r->ns)
		r->contract_errors++; /* a stream declared before */
	if (m->unreadable && !m->why)
		r->contract_errors++;
	if (r->fail_member_at && (int)r->nm + 1 == r->fail_member_at)
		return -ENOSPC;
	r->m = realloc(r->m, (r->nm + 1) * sizeof(*r->m));
	x = &r->m[r->nm++];
	x->path = strdup((const char *)m->path);
	x->m = *m;
	x->m.path = NULL;
	x->m.link = NULL;
	x->m.uname = x->m.gname = NULL;
	snprintf(x->why, sizeof(x->why), "%s", m->why ? m->why : "");
	x->m.why = NULL;
	return 0;
}

static void rec_free(struct rec *r)
{
	for (size_t i = 0; i < r->ns; i++)
		free(r->s[i].params);
	for (size_t i = 0; i < r->nm; i++)
		free(r->m[i].path);
	free(r->s);
	free(r->m);
	memset(r, 0, sizeof(*r));
}

static bool no_probe_check; /* damaged inputs */

static int parse(const uint8_t *a, size_t len, struct rec *r, struct cont_stats *st)
{
	struct src *in = src_from_mem(a, len);
	struct cont_sink sink = {.stream = rec_stream, .member = rec_member, .opaque = r};
	int err;

	memset(r, 0, sizeof(*r));
	CHECK(no_probe_check || cont_7z.probe(in, a, len < 512 ? len : 512));
	err = cont_7z.parse(in, &sink, st);
	CHECK_EQ(r->contract_errors, 0);
	if (st)
		CHECK_EQ(st->members, r->nm);
	src_free(in);
	return err;
}

static const struct rmember *find(const struct rec *r, const char *path)
{
	for (size_t i = 0; i < r->nm; i++)
		if (strcmp(r->m[i].path, path) == 0)
			return &r->m[i];
	return NULL;
}

/* ---- decoding streams ---- */

struct ckrec {
	struct codec_ckpt c;
	uint8_t *aux;
	size_t auxlen;
};

struct scanres {
	uint8_t *out;
	size_t len;
	ssize_t rc;
	uint64_t verified;
	struct ckrec *cks;
	size_t ncks;
	size_t returned;
	int contract_errors;
};

static int ck_sink(void *opaque, const struct codec_ckpt *c, const void *aux, size_t auxlen)
{
	struct scanres *r = opaque;
	struct ckrec *k;

	if (r->ncks == 0 && c->uoff != 0)
		r->contract_errors++;
	if (r->ncks && c->uoff <= r->cks[r->ncks - 1].c.uoff)
		r->contract_errors++;
	if (c->uoff < r->returned)
		r->contract_errors++;
	if (!aux || !auxlen)
		r->contract_errors++; /* every 7z checkpoint carries the chain */
	r->cks = realloc(r->cks, (r->ncks + 1) * sizeof(*r->cks));
	k = &r->cks[r->ncks++];
	k->c = *c;
	k->aux = malloc(auxlen ? auxlen : 1);
	memcpy(k->aux, aux, auxlen);
	k->auxlen = auxlen;
	return 0;
}

static void scan_free_res(struct scanres *r)
{
	for (size_t i = 0; i < r->ncks; i++)
		free(r->cks[i].aux);
	free(r->cks);
	free(r->out);
	memset(r, 0, sizeof(*r));
}

/* Scans stream s of archive a (in reads of step bytes), spacing as given. */
static ssize_t scan_stream(const uint8_t *a, size_t alen, const struct rstream *s, uint64_t spacing,
			   size_t step, struct scanres *r)
{
	struct src *file = src_from_mem(a, alen);
	struct src *win = src_window(file, s->coff, s->clen);
	struct codec_opts opts = {.spacing = spacing, .threads = 1, .params = s->params,
				  .params_len = s->params_len};
	struct codec_sink sink = {.checkpoint = ck_sink, .opaque = r};
	struct codec_scan *sc;
	size_t cap = 1 << 16;
	ssize_t n;
	int err;

	memset(r, 0, sizeof(*r));
	r->out = malloc(cap);
	err = codec_7z.scan_new(win, &opts, &sink, &sc);
	if (err) {
		src_free(win);
		src_free(file);
		return r->rc = err;
	}
	for (;;) {
		if (r->len + step > cap) {
			cap = (r->len + step) * 2;
			r->out = realloc(r->out, cap);
		}
		n = codec_7z.scan_read(sc, r->out + r->len, step);
		if (n <= 0)
			break;
		CHECK(n <= (ssize_t)step);
		r->len += (size_t)n;
		r->returned = r->len;
	}
	r->rc = n;
	CHECK_EQ(codec_7z.scan_read(sc, r->out, step), n); /* sticky */
	r->verified = codec_7z.scan_verified(sc);
	CHECK(r->verified <= r->len);
	if (n == 0)
		CHECK_EQ(r->verified, r->len);
	for (size_t i = 0; i < r->ncks; i++)
		CHECK(r->cks[i].c.uoff < r->len);
	CHECK_EQ(r->contract_errors, 0);
	codec_7z.scan_free(sc);
	src_free(win);
	src_free(file);
	return n;
}

/* Decodes from checkpoint k to its end (want: the folder's bytes; NULL: only run).  Returns the
 * final dec_read result; *got the bytes that matched. */
static ssize_t decode_from(const uint8_t *a, size_t alen, const struct rstream *s,
			   const struct ckrec *k, uint64_t end, const uint8_t *want, size_t step,
			   uint64_t *got)
{
	struct src *file = src_from_mem(a, alen);
	struct src *win = src_window(file, s->coff, s->clen);
	struct codec_dec *d;
	static uint8_t buf[70001];
	uint64_t pos = k->c.uoff;
	ssize_t n;
	int err;

	*got = 0;
	err = codec_7z.dec_new(win, &k->c, k->aux, k->auxlen, &d);
	if (err) {
		src_free(win);
		src_free(file);
		return err;
	}
	CHECK(codec_7z.dec_memory(d) > 0);
	while ((n = codec_7z.dec_read(d, buf, step < sizeof(buf) ? step : sizeof(buf))) > 0) {
		CHECK(pos + (uint64_t)n <= end);
		if (want && pos + (uint64_t)n <= end)
			CHECK(memcmp(buf, want + pos, (size_t)n) == 0);
		pos += (uint64_t)n;
	}
	*got = pos - k->c.uoff;
	if (n == 0)
		CHECK_EQ(pos, end);
	CHECK_EQ(codec_7z.dec_read(d, buf, 1), n);
	codec_7z.dec_free(d);
	src_free(win);
	src_free(file);
	return n;
}

/* The decoded bytes of every stream, checked by scan, checkpoints and random reads. */
struct decoded {
	uint8_t **bytes;
	size_t n;
	size_t ncks; /* checkpoints of all streams */
};

static void decoded_free(struct decoded *d)
{
	for (size_t i = 0; i < d->n; i++)
		free(d->bytes[i]);
	free(d->bytes);
	memset(d, 0, sizeof(*d));
}

static void decode_all(const uint8_t *a, size_t alen, const struct rec *r, uint64_t spacing,
		       struct decoded *dd)
{
	memset(dd, 0, sizeof(*dd));
	dd->bytes = calloc(r->ns + 1, sizeof(*dd->bytes));
	dd->n = r->ns;
	for (size_t i = 0; i < r->ns; i++) {
		const struct rstream *s = &r->s[i];
		struct scanres sr, sr2;
		uint64_t got;

		CHECK_EQ(scan_stream(a, alen, s, spacing, 1 << 20, &sr), 0);
		CHECK_EQ(sr.len, s->usize);
		/* the same bytes and checkpoints in small reads */
		CHECK_EQ(scan_stream(a, alen, s, spacing, 4093, &sr2), 0);
		CHECK(sr2.len == sr.len && memcmp(sr2.out, sr.out, sr.len) == 0);
		CHECK_EQ(sr2.ncks, sr.ncks);
		scan_free_res(&sr2);
		if (s->usize)
			CHECK(sr.ncks >= 1);
		dd->ncks += sr.ncks;
		for (size_t k = 0; k < sr.ncks; k++) {
			CHECK_EQ(decode_from(a, alen, s, &sr.cks[k], sr.len, sr.out, 65536, &got),
				 0);
			CHECK_EQ(got, sr.len - sr.cks[k].c.uoff);
		}
		/* random reads: from the last checkpoint before the offset, as the reader does */
		for (int t = 0; t < 6 && sr.len; t++) {
			uint64_t off = ((uint64_t)t * 2654435761u) % sr.len;
			size_t k = 0;
			struct codec_dec *d;
			struct src *file = src_from_mem(a, alen);
			struct src *win = src_window(file, s->coff, s->clen);
			uint8_t buf[4096];

			while (k + 1 < sr.ncks && sr.cks[k + 1].c.uoff <= off)
				k++;
			CHECK_EQ(codec_7z.dec_new(win, &sr.cks[k].c, sr.cks[k].aux, sr.cks[k].auxlen,
						  &d),
				 0);
			for (uint64_t pos = sr.cks[k].c.uoff; d && pos < off + sizeof(buf);) {
				size_t want = sizeof(buf);
				ssize_t n;

				if (pos < off && off - pos < want)
					want = (size_t)(off - pos);
				n = codec_7z.dec_read(d, buf, want);
				if (n <= 0) {
					CHECK(n == 0 && pos == sr.len);
					break;
				}
				if (pos + (uint64_t)n > off)
					CHECK(memcmp(buf, sr.out + pos, (size_t)n) == 0);
				pos += (uint64_t)n;
			}
			codec_7z.dec_free(d);
			src_free(win);
			src_free(file);
		}
		dd->bytes[i] = sr.out;
		sr.out = NULL;
		scan_free_res(&sr);
	}
}

/* A member's bytes equal the file's, and its CRC. */
static void check_member_bytes(const struct rec *r, const struct decoded *dd,
			       const struct rmember *x, const uint8_t *want, size_t wlen)
{
	const uint8_t *p;

	CHECK_EQ(x->m.size, wlen);
	CHECK_EQ(x->m.unreadable, 0);
	if (x->m.size != wlen || x->m.unreadable)
		return;
	if (wlen == 0) {
		CHECK_EQ(x->m.stream, 0);
		return;
	}
	CHECK(x->m.stream >= 1 && x->m.stream <= r->ns);
	if (x->m.stream < 1 || x->m.stream > r->ns)
		return;
	CHECK(x->m.data_off + wlen <= r->s[x->m.stream - 1].usize);
	if (x->m.data_off + wlen > r->s[x->m.stream - 1].usize)
		return;
	p = dd->bytes[x->m.stream - 1] + x->m.data_off;
	CHECK(memcmp(p, want, wlen) == 0);
	CHECK(x->m.has_crc);
	CHECK_EQ(x->m.crc, (uint32_t)crc32(0, want, (uInt)wlen));
}

/* ---- the test tree ---- */

struct tfile {
	const char *path; /* in the archive (and under src/) */
	size_t size;
	uint32_t seed;
	int text;
	uint32_t mode;
};

static const struct tfile tree[] = {
	{"hello.txt", 6, 0, 1, 0644},
	{"d/big.txt", 450000, 1, 1, 0640},
	{"d/noise.bin", 90000, 2, 0, 0600},
	{"d/sub/small", 1, 3, 1, 0755},
	{"d/sub/empty", 0, 0, 1, 0644},
	{"caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80.txt", 300, 4, 1, 0644}, /* é € 😀 */
	{"d/twin1", 5000, 5, 1, 0644},
	{"d/twin2", 5000, 5, 1, 0644},
};
#define NTREE (sizeof(tree) / sizeof(tree[0]))
#define TREE_FILES "hello.txt d caf*.txt emptydir link"

static void make_tree(void)
{
	sz7_sh("rm -rf %s/src && mkdir -p %s/src/d/sub %s/src/emptydir", sz7_tmp, sz7_tmp,
	       sz7_tmp);
	for (size_t i = 0; i < NTREE; i++) {
		uint8_t *b = malloc(tree[i].size + 1);
		char path[512];

		if (tree[i].path[0] == 'h')
			memcpy(b, "hello\n", 6);
		else
			tu_fill(b, tree[i].size, tree[i].seed, tree[i].text);
		sz7_write(tree[i].path, b, tree[i].size);
		snprintf(path, sizeof(path), "%s/src/%s", sz7_tmp, tree[i].path);
		chmod(path, tree[i].mode);
		free(b);
	}
	sz7_sh("ln -s d/sub/small %s/src/link", sz7_tmp);
	sz7_sh("touch -h -d @1700000000.5 %s/src/hello.txt %s/src/link %s/src/emptydir", sz7_tmp,
	       sz7_tmp, sz7_tmp);
	sz7_sh("chmod 0750 %s/src/emptydir", sz7_tmp);
}

/* Parses and decodes a 7z made from the tree, checks every member against it (7zz keeps unix
 * modes always; links: symlinks stored as such, -snl). */
static void check_tree(const char *what, const uint8_t *a, size_t alen, bool links,
		       uint64_t spacing, size_t *ncks)
{
	struct rec r;
	struct cont_stats st;
	struct decoded dd;
	const struct rmember *x;

	fprintf(stderr, "tree: %s (%zu bytes)\n", what, alen);
	CHECK_EQ(parse(a, alen, &r, &st), 0);
	CHECK(!st.damaged);
	decode_all(a, alen, &r, spacing, &dd);
	if (ncks)
		*ncks = dd.ncks;
	for (size_t i = 0; i < NTREE; i++) {
		size_t len;
		uint8_t *want = sz7_src(tree[i].path, &len);

		x = find(&r, tree[i].path);
		CHECK(x != NULL);
		if (!x) {
			fprintf(stderr, "  missing: %s\n", tree[i].path);
			free(want);
			continue;
		}
		CHECK_EQ(x->m.type, MEMBER_REG);
		CHECK_EQ(x->m.mode, tree[i].mode);
		check_member_bytes(&r, &dd, x, want, len);
		free(want);
	}
	x = find(&r, "hello.txt");
	if (x) {
		CHECK_EQ(x->m.mtime_sec, 1700000000);
		CHECK_EQ(x->m.mtime_nsec, 500000000);
		CHECK_EQ(x->m.uid, 0);
		CHECK_EQ(x->m.hdr_off, 0);
	}
	x = find(&r, "emptydir");
	CHECK(x && x->m.type == MEMBER_DIR);
	if (x) {
		CHECK_EQ(x->m.mode, 0750);
		CHECK_EQ(x->m.mtime_sec, 1700000000);
		CHECK_EQ(x->m.stream, 0);
	}
	x = find(&r, "d/sub");
	CHECK(x && x->m.type == MEMBER_DIR);
	x = find(&r, "link");
	CHECK(x != NULL);
	if (x && links) {
		CHECK_EQ(x->m.type, MEMBER_SYMLINK);
		CHECK(x->m.link_in_data);
		CHECK_EQ(x->m.size, strlen("d/sub/small"));
		if (x->m.stream && x->m.stream <= r.ns && x->m.size == 11)
			CHECK(memcmp(dd.bytes[x->m.stream - 1] + x->m.data_off, "d/sub/small", 11) ==
			      0);
	} else if (x) { /* followed: the file it points to */
		CHECK_EQ(x->m.type, MEMBER_REG);
		CHECK_EQ(x->m.size, 1);
	}
	CHECK_EQ(r.nm, NTREE + 4); /* + emptydir, link, d, d/sub */
	decoded_free(&dd);
	rec_free(&r);
}

/* ---- the tests ---- */

static void test_probe(void)
{
	static const uint8_t sig[] = {'7', 'z', 0xBC, 0xAF, 0x27, 0x1C, 0, 4};
	struct src *in = src_from_mem(sig, sizeof(sig));

	CHECK(cont_7z.probe(in, sig, sizeof(sig)));
	CHECK(cont_7z.probe(in, sig, 6));
	CHECK(!cont_7z.probe(in, sig, 5));
	CHECK(!cont_7z.probe(in, (const uint8_t *)"PK\3\4", 4));
	CHECK(!codec_7z.probe(sig, sizeof(sig)));
	CHECK(codec_probe(sig, sizeof(sig)) == NULL);
	CHECK(codec_by_name("7z") == &codec_7z);
	src_free(in);
}

static void test_methods(void)
{
	static const struct {
		const char *sw;
		bool links;
		size_t min_cks; /* checkpoints at least, all streams */
	} cases[] = {
		{"-snl -m0=Copy", true, 1},
		{"-snl -m0=LZMA -mx1", true, 1},
		{"-snl -m0=LZMA2 -mx5 -mmt1", true, 1},
		{"-snl -m0=Deflate", true, 1},
		{"-snl -m0=BZip2", true, 1},
		{"-snl -ms=off -mx3", true, 7}, /* a folder per file */
		{"-snl -ms=on -mf=Delta:4 -m0=LZMA2:c=128k -mmt2", true, 3},
		{"-mx1", false, 1}, /* no -snl: the link is followed */
		{"-snl -mhc=off", true, 1}, /* the header not compressed */
		{"-snl -m0=LZMA2:c=128k -mx1 -mmt2", true, 3},
	};
	size_t len;
	char name[32];

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		snprintf(name, sizeof(name), "m%zu.7z", i);
		uint8_t *a = sz7_make(name, cases[i].sw, TREE_FILES, &len);
		size_t ncks = 0;

		check_tree(cases[i].sw, a, len, cases[i].links, 128 << 10, &ncks);
		fprintf(stderr, "  %zu checkpoints\n", ncks);
		CHECK(ncks >= cases[i].min_cks);
		free(a);
	}
}


/* Parses and decodes an archive of one file (the bytes want), returns its checkpoints. */
static size_t check_single(const char *what, const uint8_t *a, size_t alen, const char *path,
			   const uint8_t *want, size_t wlen, uint64_t spacing)
{
	struct rec r;
	struct cont_stats st;
	struct decoded dd;
	const struct rmember *x;
	size_t n;

	fprintf(stderr, "single: %s (%zu -> %zu bytes)\n", what, wlen, alen);
	CHECK_EQ(parse(a, alen, &r, &st), 0);
	CHECK_EQ(r.nm, 1);
	decode_all(a, alen, &r, spacing, &dd);
	x = find(&r, path);
	CHECK(x != NULL);
	if (x) {
		CHECK_EQ(x->m.type, MEMBER_REG);
		check_member_bytes(&r, &dd, x, want, wlen);
	}
	n = dd.ncks;
	fprintf(stderr, "  %zu checkpoints\n", n);
	decoded_free(&dd);
	rec_free(&r);
	return n;
}

/* The branch converters: an x86 ELF through BCJ and BCJ2, the others on the same bytes (any
 * bytes decode; the filters must give them back).  With small LZMA2 blocks the restarts
 * inside BCJ folders are tried, and each one kept must give the scan's bytes. */
static void test_filters(void)
{
	static const struct {
		const char *sw;
		size_t min_cks;
	} cases[] = {
		{"-mf=BCJ -m0=LZMA2:c=128k -mmt2 -mx1", 3},
		{"-mf=BCJ -m0=LZMA -mx1", 1},
		{"-mf=BCJ2 -mx1", 1},
		{"-mf=BCJ2 -m0=LZMA2 -mx3", 1},
		{"-mf=ARM64 -m0=LZMA2:c=128k -mmt2 -mx1", 3},
		{"-mf=ARM -mx1", 1},
		{"-mf=ARMT -m0=LZMA2:c=128k -mmt2 -mx1", 3},
		{"-mf=PPC -mx1", 1},
		{"-mf=SPARC -mx1", 1},
		{"-mf=IA64 -m0=LZMA2:c=128k -mmt2 -mx1", 3},
		{"-mf=Delta:2 -m0=LZMA2:c=128k -mmt2 -mx1", 3},
		{"-mf=BCJ -m0=BZip2", 1},
	};
	size_t elflen, len;
	uint8_t *elf = tu_read_file("/usr/bin/bash", &elflen);
	char name[32];

	CHECK(elf != NULL);
	if (!elf)
		return;
	if (elflen > (1u << 20))
		elflen = 1u << 20; /* a MiB of x86 code is enough */
	sz7_sh("rm -rf %s/src/bin && mkdir -p %s/src/bin", sz7_tmp, sz7_tmp);
	sz7_write("bin/code", elf, elflen);
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct rec r;
		uint8_t *a;

		snprintf(name, sizeof(name), "f%zu.7z", i);
		a = sz7_make(name, cases[i].sw, "bin/code", &len);
		if (strstr(cases[i].sw, "BZip2")) { /* 7-Zip refuses a filter over BZip2? */
			CHECK_EQ(parse(a, len, &r, NULL), 0);
			rec_free(&r);
		}
		size_t n = check_single(cases[i].sw, a, len, "bin/code", elf, elflen, 256 << 10);
		CHECK(n >= cases[i].min_cks);
		free(a);
	}
	free(elf);
}

/* Methods the codec lacks: the files are listed, unreadable, and no stream is declared. */
static void test_unreadable(void)
{
	struct rec r;
	struct cont_stats st;
	uint8_t *a;
	size_t len;
	const struct rmember *x;

	a = sz7_make("swap4.7z", "-m0=Swap4", "hello.txt d", &len); /* PPMd reads since issue 38 */
	CHECK_EQ(parse(a, len, &r, &st), 0);
	CHECK_EQ(r.ns, 0);
	x = find(&r, "d/big.txt");
	CHECK(x && x->m.unreadable == -EOPNOTSUPP && strcmp(x->why, "7z method Swap4") == 0);
	CHECK(x && x->m.size == 450000 && x->m.type == MEMBER_REG);
	x = find(&r, "d/sub/empty"); /* empty: readable */
	CHECK(x && x->m.unreadable == 0 && x->m.size == 0);
	x = find(&r, "d/sub");
	CHECK(x && x->m.type == MEMBER_DIR && x->m.unreadable == 0);
	rec_free(&r);
	free(a);

	/* encrypted data, names in clear: listed, readable with a password (test_sevenzip_aes) */
	a = sz7_make("aes.7z", "-psecret -mhe=off", "hello.txt d", &len);
	CHECK_EQ(parse(a, len, &r, &st), 0);
	CHECK(r.ns > 0);
	x = find(&r, "d/noise.bin");
	CHECK(x && x->m.unreadable == 0 && x->m.size == 90000);
	CHECK(find(&r, "d/twin2") != NULL);
	rec_free(&r);
	free(a);

	/* encrypted headers: the archive is refused without the password */
	a = sz7_make("aesh.7z", "-psecret -mhe=on", "hello.txt d", &len);
	unsigned long err = nlog[TFS_LOG_ERR];
	CHECK_EQ(parse(a, len, &r, &st), -EACCES);
	CHECK_EQ(r.nm, 0);
	CHECK_EQ(nlog[TFS_LOG_ERR], err + 1);
	rec_free(&r);
	free(a);
}

/* Standard input archives: with -si the file has no name; parse reports an empty path. */
static void test_stdin(void)
{
	char path[512];
	uint8_t *a, data[5000];
	size_t len;
	struct rec r;
	struct decoded dd;
	const struct rmember *x;

	tu_fill(data, sizeof(data), 9, 1);
	sz7_write("stdin.dat", data, sizeof(data));
	snprintf(path, sizeof(path), "%s/si.7z", sz7_tmp);
	unlink(path);
	sz7_sh("7zz a -bd -bso0 -bsp0 -si %s < %s/src/stdin.dat", path, sz7_tmp);
	a = tu_read_file(path, &len);
	CHECK_EQ(parse(a, len, &r, NULL), 0);
	CHECK_EQ(r.nm, 1);
	decode_all(a, len, &r, 1 << 20, &dd);
	x = r.nm ? &r.m[0] : NULL;
	if (x) {
		fprintf(stderr, "stdin: path \"%s\" type %c mode %o\n", x->path, x->m.type,
			x->m.mode);
		CHECK_EQ(strlen(x->path), 0);
		CHECK_EQ(x->m.type, MEMBER_REG); /* its mode says pipe, it has data */
		check_member_bytes(&r, &dd, x, data, sizeof(data));
	}
	decoded_free(&dd);
	rec_free(&r);
	free(a);

	/* -siNAME keeps the name */
	unlink(path);
	sz7_sh("7zz a -bd -bso0 -bsp0 -sinamed.txt %s < %s/src/stdin.dat", path, sz7_tmp);
	a = tu_read_file(path, &len);
	CHECK_EQ(parse(a, len, &r, NULL), 0);
	CHECK(r.nm == 1 && strcmp(r.m[0].path, "named.txt") == 0);
	rec_free(&r);
	free(a);
}

/* An empty archive and one of empty files only: no streams. */
static void test_empty(void)
{
	struct rec r;
	struct cont_stats st;
	uint8_t *a;
	size_t len;

	sz7_sh("rm -rf %s/src/e && mkdir -p %s/src/e/x && : > %s/src/e/zero", sz7_tmp, sz7_tmp,
	       sz7_tmp);
	a = sz7_make("empty.7z", "", "e", &len);
	CHECK_EQ(parse(a, len, &r, &st), 0);
	CHECK_EQ(r.ns, 0);
	CHECK_EQ(r.nm, 3);
	CHECK(find(&r, "e/zero") && find(&r, "e/zero")->m.type == MEMBER_REG);
	CHECK(find(&r, "e/x") && find(&r, "e/x")->m.type == MEMBER_DIR);
	rec_free(&r);
	free(a);
	/* 7zz deletes the last file of an archive: an empty archive remains */
	sz7_sh("cd %s && 7zz d -bd -bso0 -bsp0 empty.7z e >/dev/null", sz7_tmp);
	char path[512];
	snprintf(path, sizeof(path), "%s/empty.7z", sz7_tmp);
	a = tu_read_file(path, &len);
	CHECK(a != NULL);
	if (a) {
		CHECK_EQ(parse(a, len, &r, &st), 0);
		CHECK_EQ(r.nm, 0);
		rec_free(&r);
	}
	free(a);
}

/* ---- BCJ2 on its own: a small encoder here, the decoder fed a byte at a time ---- */

struct rc_enc {
	uint64_t low;
	uint32_t range;
	uint8_t cache;
	uint64_t cache_size;
	uint8_t *out;
	size_t n;
};

static void rc_shift(struct rc_enc *e)
{
	if ((uint32_t)e->low < 0xFF000000u || (e->low >> 32) != 0) {
		uint8_t carry = (uint8_t)(e->low >> 32), t = e->cache;
		do {
			e->out[e->n++] = (uint8_t)(t + carry);
			t = 0xFF;
		} while (--e->cache_size != 0);
		e->cache = (uint8_t)(e->low >> 24);
	}
	e->cache_size++;
	e->low = (e->low & 0x00FFFFFFu) << 8;
}

static void rc_bit(struct rc_enc *e, uint16_t *p, int b)
{
	uint32_t bound = (e->range >> 11) * *p;

	if (!b) {
		e->range = bound;
		*p = (uint16_t)(*p + ((2048 - *p) >> 5));
	} else {
		e->low += bound;
		e->range -= bound;
		*p = (uint16_t)(*p - (*p >> 5));
	}
	while (e->range < (1u << 24)) {
		e->range <<= 8;
		rc_shift(e);
	}
}

static bool is_branch(uint8_t prev, uint8_t b)
{
	return (b & 0xFE) == 0xE8 || (prev == 0x0F && (b & 0xF0) == 0x80);
}

/* BCJ2-encodes x (converting branches by a pseudo-random choice) into the four streams. */
static void bcj2_encode(const uint8_t *x, size_t n, uint8_t *s[4], size_t len[4], uint32_t seed)
{
	uint16_t probs[258];
	struct rc_enc e = {.range = 0xFFFFFFFFu, .cache_size = 1, .out = s[3]};
	uint8_t prev = 0;

	for (int i = 0; i < 258; i++)
		probs[i] = 1024;
	len[0] = len[1] = len[2] = 0;
	for (size_t i = 0; i < n;) {
		uint8_t b = x[i++];

		s[0][len[0]++] = b;
		if (!is_branch(prev, b)) {
			prev = b;
			continue;
		}
		if (i == n)
			break;
		uint16_t *p = b == 0xE8 ? &probs[prev] : b == 0xE9 ? &probs[256] : &probs[257];
		seed = seed * 1103515245u + 12345u;
		int conv = i + 4 <= n && (seed >> 16) % 3 != 0;
		rc_bit(&e, p, conv);
		if (!conv) {
			prev = b;
			continue;
		}
		uint32_t rel = (uint32_t)x[i] | (uint32_t)x[i + 1] << 8 | (uint32_t)x[i + 2] << 16 |
			       (uint32_t)x[i + 3] << 24;
		uint32_t abs = rel + (uint32_t)(i + 4);
		int k = b == 0xE8 ? 1 : 2;
		for (int j = 0; j < 4; j++)
			s[k][len[k]++] = (uint8_t)(abs >> (24 - 8 * j));
		prev = x[i + 3];
		i += 4;
	}
	for (int i = 0; i < 5; i++)
		rc_shift(&e);
	len[3] = e.n;
}

static void test_bcj2_unit(void)
{
	size_t n = 200000;
	uint8_t *x = malloc(n), *s[4], *out = malloc(n + 16);
	size_t len[4];

	tu_fill(x, n, 21, 0);
	for (size_t i = 0; i + 6 < n; i += 37) { /* plenty of branches, Jcc too */
		x[i] = (i / 37) % 3 == 0 ? 0xE8 : (i / 37) % 3 == 1 ? 0xE9 : 0x0F;
		if (x[i] == 0x0F)
			x[i + 1] = 0x84;
	}
	x[n - 1] = 0xE8; /* a branch opcode as the last byte: no bit for it */
	for (int k = 0; k < 4; k++)
		s[k] = malloc(n + 64);
	bcj2_encode(x, n, s, len, 5);
	CHECK(len[1] > 1000 && len[2] > 1000 && len[3] > 100);

	/* everything at once */
	struct bcj2_dec d;
	struct bcj2_in in[4];
	size_t olen = n + 16;
	bcj2_init(&d, n);
	for (int k = 0; k < 4; k++)
		in[k] = (struct bcj2_in){s[k], len[k]};
	CHECK_EQ(bcj2_run(&d, in, out, &olen), 0);
	CHECK_EQ(olen, n);
	CHECK(memcmp(out, x, n) == 0);
	CHECK_EQ(in[0].n, 0);
	CHECK_EQ(in[1].n, 0);
	CHECK_EQ(in[2].n, 0);

	/* a byte at a time, in every stream, into small outputs */
	size_t fed[4] = {0}, o = 0;
	bcj2_init(&d, n);
	for (int k = 0; k < 4; k++)
		in[k] = (struct bcj2_in){s[k], 0};
	for (unsigned step = 0; o < n && step < 10 * n; step++) {
		size_t cap = 1 + step % 7;
		int r;

		if (cap > n - o)
			cap = n - o;
		olen = cap;
		r = bcj2_run(&d, in, out + o, &olen);
		o += olen;
		if (r > 0) {
			int k = r - 1;
			CHECK(in[k].n == 0);
			CHECK(fed[k] < len[k]);
			if (fed[k] >= len[k])
				break;
			in[k].p = s[k] + fed[k]++;
			in[k].n = 1;
		}
	}
	CHECK_EQ(o, n);
	CHECK(memcmp(out, x, n) == 0);

	/* a call stream that ends early: the decoder asks for more, and gets none */
	bcj2_init(&d, n);
	for (int k = 0; k < 4; k++)
		in[k] = (struct bcj2_in){s[k], len[k]};
	in[1].n = len[1] / 2;
	olen = n;
	CHECK_EQ(bcj2_run(&d, in, out, &olen), 1 + BCJ2_CALL);
	CHECK(olen < n && memcmp(out, x, olen) == 0);
	for (int k = 0; k < 4; k++)
		free(s[k]);
	free(x);
	free(out);
}

/* ---- damage ---- */

static uint64_t le64_at(const uint8_t *p);

static void fix_crcs(uint8_t *a, size_t len)
{
	uint64_t off = 32 + le64_at(a + 12), size = le64_at(a + 20);

	if (off <= len && size <= len - off) {
		uint32_t c = (uint32_t)crc32(0, a + off, (uInt)size);
		for (int i = 0; i < 4; i++)
			a[28 + i] = (uint8_t)(c >> (8 * i));
	}
	uint32_t c = (uint32_t)crc32(0, a + 12, 20);
	for (int i = 0; i < 4; i++)
		a[8 + i] = (uint8_t)(c >> (8 * i));
}

/* Parses a and decodes what it reports (streams up to 16 MiB).  ref: the good archive's
 * decoded streams, when the header is the good one (same streams): then every byte a scan
 * or a decoder returns below the scan's verified offset must be the good one, and a scan that
 * ends without error must give the good bytes whole.  Returns parse's result. */
static int damaged_run(const uint8_t *a, size_t len, const struct rec *good,
		       const struct decoded *ref)
{
	struct rec r;
	struct cont_stats st;
	int err = parse(a, len, &r, &st);

	CHECK(err == 0 || err == -EIO || err == -ENOTSUP || err == -EINVAL || err == -ENOMEM);
	if (err) {
		rec_free(&r);
		return err;
	}
	bool same = ref && r.ns == good->ns;
	for (size_t i = 0; same && i < r.ns; i++)
		same = r.s[i].coff == good->s[i].coff && r.s[i].usize == good->s[i].usize;
	for (size_t i = 0; i < r.ns; i++) {
		struct scanres sr;
		ssize_t rc;

		if (r.s[i].usize > (16u << 20))
			continue;
		rc = scan_stream(a, len, &r.s[i], 64 << 10, 1 << 20, &sr);
		CHECK(rc == 0 || rc == -EIO || rc == -ENOTSUP || rc == -ENOMEM || rc == -EINVAL);
		if (same && rc == 0)
			CHECK(sr.len == r.s[i].usize &&
			      memcmp(sr.out, ref->bytes[i], sr.len) == 0);
		if (same && sr.verified)
			CHECK(memcmp(sr.out, ref->bytes[i], (size_t)sr.verified) == 0);
		/* decoders at the checkpoints: the good bytes below verified (or an error) */
		for (size_t k = 0; k < sr.ncks; k++) {
			struct src *file = src_from_mem(a, len);
			struct src *win = src_window(file, r.s[i].coff, r.s[i].clen);
			struct codec_dec *d;
			uint8_t buf[65536];
			uint64_t pos = sr.cks[k].c.uoff, stop = same ? sr.verified : pos + 65536;

			if (codec_7z.dec_new(win, &sr.cks[k].c, sr.cks[k].aux, sr.cks[k].auxlen,
					     &d) == 0) {
				ssize_t n;
				while (pos < stop && (n = codec_7z.dec_read(d, buf, sizeof(buf))) > 0) {
					uint64_t m = stop - pos < (uint64_t)n ? stop - pos : (uint64_t)n;
					if (same)
						CHECK(memcmp(buf, ref->bytes[i] + pos, (size_t)m) == 0);
					pos += (uint64_t)n;
				}
				codec_7z.dec_free(d);
			}
			src_free(win);
			src_free(file);
		}
		scan_free_res(&sr);
	}
	rec_free(&r);
	return 0;
}

static void test_damage(void)
{
	static const char *const sws[] = {
		"-snl -m0=LZMA2:c=128k -mmt2 -mx1 -mhc=off",
		"-snl -ms=off -mf=BCJ2 -mhc=off",
		"-snl -m0=Copy",
		"-snl -m0=BZip2 -ms=off",
		"-snl -m0=Deflate",
	};
	for (size_t v = 0; v < sizeof(sws) / sizeof(sws[0]); v++) {
		size_t len;
		char name[32];
		uint8_t *a, *b;
		struct rec good;
		struct decoded ref;
		unsigned long errs;
		int eio = 0, ok = 0;

		snprintf(name, sizeof(name), "dmg%zu.7z", v);
		a = sz7_make(name, sws[v], TREE_FILES, &len);
		fprintf(stderr, "damage: %s (%zu bytes)\n", sws[v], len);
		CHECK_EQ(parse(a, len, &good, NULL), 0);
		decode_all(a, len, &good, 64 << 10, &ref);
		b = malloc(len);
		quiet = true;
		no_probe_check = true;

		/* the signature header: every byte */
		for (size_t i = 0; i < 32; i++) {
			memcpy(b, a, len);
			b[i] ^= 0x41;
			errs = nlog[TFS_LOG_ERR] + nlog[TFS_LOG_WARNING];
			int err = damaged_run(b, len, &good, &ref);
			if (i == 7) /* the minor version: not checked */
				continue;
			CHECK(err != 0);
			CHECK(nlog[TFS_LOG_ERR] + nlog[TFS_LOG_WARNING] > errs);
			if (i < 6)
				CHECK_EQ(err, -EINVAL); /* not 7z */
			else if (i == 6)
				CHECK_EQ(err, -ENOTSUP); /* a major version we do not know */
			else
				CHECK_EQ(err, -EIO); /* the CRC */
		}
		/* the next header: bytes flipped; with and without its CRC fixed */
		uint64_t hoff = 32 + le64_at(a + 12), hsize = le64_at(a + 20);
		for (uint64_t i = 0; i < hsize; i += 1 + hsize / 40) {
			memcpy(b, a, len);
			b[hoff + i] ^= (uint8_t)(1u << (i % 8));
			CHECK_EQ(damaged_run(b, len, &good, &ref), -EIO);
			fix_crcs(b, len);
			damaged_run(b, len, &good, &ref); /* no crash; the bytes are what it says */
		}
		/* packed data: a byte flipped here and there */
		for (uint64_t i = 32; i < hoff; i += 1 + (hoff - 32) / 16) {
			memcpy(b, a, len);
			b[i] ^= 0x10;
			errs = nlog[TFS_LOG_ERR];
			CHECK_EQ(damaged_run(b, len, &good, &ref), 0);
		}
		/* truncations: the header is lost, the archive refused */
		for (size_t cut = 0; cut < len; cut += 1 + len / 60) {
			int err = damaged_run(a, cut, &good, &ref);
			if (cut < 6)
				CHECK_EQ(err, -EINVAL);
			else
				CHECK_EQ(err, -EIO);
			eio += err == -EIO;
		}
		CHECK_EQ(damaged_run(a, len - 1, &good, &ref), -EIO);
		/* trailing garbage is ignored */
		b = realloc(b, len + 100);
		memcpy(b, a, len);
		memset(b + len, 0xAA, 100);
		CHECK_EQ(damaged_run(b, len + 100, &good, &ref), 0);
		ok++;
		quiet = false;
		no_probe_check = false;
		(void)eio;
		(void)ok;
		decoded_free(&ref);
		rec_free(&good);
		free(a);
		free(b);
	}
}

static uint64_t le64_at(const uint8_t *p)
{
	uint64_t v = 0;

	for (int i = 7; i >= 0; i--)
		v = v << 8 | p[i];
	return v;
}

int main(void)
{
	if (!tu_have("7zz")) {
		fprintf(stderr, "7zz missing: skipped\n");
		return 77;
	}
	tfs_log_set_sink(log_sink, NULL);
	sz7_begin("test_7z");
	make_tree();
	test_probe();
	test_methods();
	test_filters();
	test_unreadable();
	test_stdin();
	test_empty();
	test_bcj2_unit();
	test_damage();
	sz7_end();
	(void)quiet;
	(void)nlog;
	return tu_exit();
}
