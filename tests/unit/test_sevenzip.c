/* Unit tests of the 7z container (index/sevenzip.c) and the 7z folder codec (codecs/sevenzip.c,
 * bcj2.c), on archives made at test time by the real 7-Zip (7zz) from files written to a
 * temporary folder.
 *
 * Each archive is parsed with cont_7z.parse from memory, with a sink that records every stream
 * and member; the members are compared with the files they were made from (names, unicode
 * included, types, modes, symlink targets, sizes, CRCs, mtimes), then every stream is decoded
 * with codec_7z: scanned from its start (bytes, checkpoints, the sink's contract), restarted at
 * every checkpoint the scan emitted, and read at random offsets, and each member's bytes are
 * compared with its file.  Methods: Copy, LZMA, LZMA2 (one and two threads, several blocks),
 * Deflate, BZip2, BCJ, BCJ2, ARM64, Delta; PPMd and AES (members unreadable), encrypted headers
 * (refused), stdin archives.  Damage: flipped bytes in the signature header, the next header
 * and the packed data, and truncations at many offsets: an error, or members whose reads fail
 * -- never a crash, never wrong bytes.  BCJ2's decoder is also tested on its own (bytes given
 * one at a time).
 */
#include "bcj2.h"
#include "codec.h"
#include "container.h"
#include "log.h"
#include "sevenzip_chain.h"
#include "testutil.h"

#include <errno.h>
#include <stdbool.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

static char tmp[64];
static bool quiet;
static unsigned long nlog[8];

static void log_sink(int level, const char *msg, void *opaque)
{
	if (level >= 0 && level < 8)
		nlog[level]++;
	if (!quiet)
		fprintf(stderr, "  [log %d] %s\n", level, msg);
}

/* ---- making files and archives ---- */

static void sh(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static void sh(const char *fmt, ...)
{
	char cmd[4096];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(cmd, sizeof(cmd), fmt, ap);
	va_end(ap);
	if (system(cmd) != 0) {
		fprintf(stderr, "command failed: %s\n", cmd);
		exit(1);
	}
}

static void write_file(const char *rel, const uint8_t *data, size_t len)
{
	char path[512];
	FILE *f;

	snprintf(path, sizeof(path), "%s/src/%s", tmp, rel);
	f = fopen(path, "wb");
	if (!f || fwrite(data, 1, len, f) != len || fclose(f) != 0) {
		fprintf(stderr, "cannot write %s\n", path);
		exit(1);
	}
}

static uint8_t *src_file(const char *rel, size_t *len)
{
	char path[512];

	snprintf(path, sizeof(path), "%s/src/%s", tmp, rel);
	return tu_read_file(path, len);
}

/* Runs 7zz in src/ to make tmp/NAME from the files given; returns the archive's bytes. */
static uint8_t *make_7z(const char *name, const char *switches, const char *files, size_t *len)
{
	char path[512];

	snprintf(path, sizeof(path), "%s/%s", tmp, name);
	unlink(path);
	sh("cd %s/src && 7zz a -bd -bso0 -bsp0 -y %s %s %s", tmp, switches, path, files);
	return tu_read_file(path, len);
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

static int parse(const uint8_t *a, size_t len, struct rec *r, struct cont_stats *st)
{
	struct src *in = src_from_mem(a, len);
	struct cont_sink sink = {.stream = rec_stream, .member = rec_member, .opaque = r};
	int err;

	memset(r, 0, sizeof(*r));
	CHECK(cont_7z.probe(in, a, len < 512 ? len : 512));
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
	{"d/big.txt", 700000, 1, 1, 0640},
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
	sh("rm -rf %s/src && mkdir -p %s/src/d/sub %s/src/emptydir", tmp, tmp, tmp);
	for (size_t i = 0; i < NTREE; i++) {
		uint8_t *b = malloc(tree[i].size + 1);
		char path[512];

		if (tree[i].path[0] == 'h')
			memcpy(b, "hello\n", 6);
		else
			tu_fill(b, tree[i].size, tree[i].seed, tree[i].text);
		write_file(tree[i].path, b, tree[i].size);
		snprintf(path, sizeof(path), "%s/src/%s", tmp, tree[i].path);
		chmod(path, tree[i].mode);
		free(b);
	}
	sh("ln -s d/sub/small %s/src/link", tmp);
	sh("touch -h -d @1700000000.5 %s/src/hello.txt %s/src/link %s/src/emptydir", tmp, tmp, tmp);
	sh("chmod 0750 %s/src/emptydir", tmp);
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
		uint8_t *want = src_file(tree[i].path, &len);

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
		{"-snl -ms=on -mf=Delta:4 -m0=LZMA2:c=256k -mmt2", true, 3},
		{"-mx1", false, 1}, /* no -snl: the link is followed */
		{"-snl -mhc=off", true, 1}, /* the header not compressed */
		{"-snl -m0=LZMA2:c=256k -mx1 -mmt2", true, 3},
	};
	size_t len;
	char name[32];

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		snprintf(name, sizeof(name), "m%zu.7z", i);
		uint8_t *a = make_7z(name, cases[i].sw, TREE_FILES, &len);
		size_t ncks = 0;

		check_tree(cases[i].sw, a, len, cases[i].links, 256 << 10, &ncks);
		fprintf(stderr, "  %zu checkpoints\n", ncks);
		CHECK(ncks >= cases[i].min_cks);
		free(a);
	}
}

int main(void)
{
	if (!tu_have("7zz")) {
		fprintf(stderr, "7zz missing: skipped\n");
		return 77;
	}
	tfs_log_set_sink(log_sink, NULL);
	snprintf(tmp, sizeof(tmp), "/tmp/test_7z.XXXXXX");
	if (!mkdtemp(tmp))
		return 1;
	make_tree();
	test_probe();
	test_methods();
	sh("rm -rf %s", tmp);
	(void)quiet;
	(void)nlog;
	return tu_exit();
}
