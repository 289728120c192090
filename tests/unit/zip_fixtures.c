/* The fixtures of test_zip.c (see zip_fixtures.h). */
#include "zip_fixtures.h"

#include "common/log.h"
#include "common/source.h"
#include "testutil.h"
#include "containers/zip.h"
#include "crypto/zip_crypt.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdbool.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <zlib.h>

char tmpdir[256];

/* ---- the recording sink ---------------------------------------------------------------- */

static int rec_stream(void *opaque, const struct cont_stream *s, uint64_t *id)
{
	struct rec *r = opaque;

	if (r->ns == r->scap) {
		r->scap = r->scap ? r->scap * 2 : 16;
		r->s = realloc(r->s, r->scap * sizeof(*r->s));
	}
	struct rstream *x = &r->s[r->ns++];
	memset(x, 0, sizeof(*x));
	if (!s->codec || strlen(s->codec) >= sizeof(x->codec)) {
		r->bad++;
	} else {
		strcpy(x->codec, s->codec);
	}
	x->coff = s->coff;
	x->clen = s->clen;
	x->usize = s->usize;
	x->zip_local = s->zip_local;
	if (s->crypt) {
		struct zcr_rec cr;
		x->crypt = true;
		memcpy(x->crypt_rec, s->crypt, ZCR_LEN);
		if (zcr_parse(s->crypt, ZCR_LEN, &cr)) /* a record zcr_open would refuse */
			r->bad++;
	}
	if (s->params_len > sizeof(x->params) || (s->params_len && !s->params))
		r->bad++;
	else if (s->params_len)
		memcpy(x->params, s->params, s->params_len);
	x->params_len = s->params_len;
	/* what the archive can hold: the compressed bytes start inside it */
	if (s->coff >= r->size)
		r->bad++;
	*id = r->ns;
	r->stream_before = true;
	return 0;
}

static int rec_member(void *opaque, const struct arc_member *m)
{
	struct rec *r = opaque;

	if (r->fail_at && r->nm + 1 == (size_t)r->fail_at)
		return -ECANCELED;
	if (r->nm == r->mcap) {
		r->mcap = r->mcap ? r->mcap * 2 : 64;
		r->m = realloc(r->m, r->mcap * sizeof(*r->m));
	}
	struct rmember *x = &r->m[r->nm++];
	memset(x, 0, sizeof(*x));
	x->path = malloc(m->path_len + 1);
	memcpy(x->path, m->path, m->path_len); /* ASan: every byte of the name is readable */
	x->path[m->path_len] = 0;
	x->path_len = m->path_len;
	x->type = m->type;
	x->mode = m->mode;
	x->uid = m->uid;
	x->gid = m->gid;
	x->no_owner = m->no_owner;
	x->mtime = m->mtime_sec;
	x->nsec = m->mtime_nsec;
	x->dos_time = m->dos_time;
	x->size = m->size;
	x->stored = m->stored;
	x->hdr_off = m->hdr_off;
	x->data_off = m->data_off;
	x->stream = m->stream;
	x->has_crc = m->has_crc;
	x->crc = m->crc;
	x->link_in_data = m->link_in_data;
	x->unreadable = m->unreadable;
	if (m->why)
		snprintf(x->why, sizeof(x->why), "%s", m->why);
	x->link_empty = m->link && m->link_len == 0 && m->link[0] == 0;
	/* what member.h and container.h promise of every member */
	if (!(m->type == MEMBER_REG || m->type == MEMBER_DIR || m->type == MEMBER_SYMLINK))
		r->bad++;
	if (m->mode & ~07777u)
		r->bad++;
	if (m->type == MEMBER_DIR && m->size)
		r->bad++;
	if (m->mtime_nsec >= 1000000000u)
		r->bad++;
	if (!m->uname || !m->gname || m->sparse || m->nsparse || m->nxattrs)
		r->bad++;
	if (m->stream && (!r->stream_before || m->stream != r->ns))
		r->bad++; /* a member's stream is the one declared just before it */
	if (m->stream && m->data_off + m->size > r->s[m->stream - 1].usize)
		r->bad++;
	if (m->unreadable &&
	    !(m->unreadable == -EOPNOTSUPP || m->unreadable == -EACCES || m->unreadable == -EIO))
		r->bad++;
	if (m->unreadable && !m->why)
		r->bad++;
	if (m->hdr_off >= r->size)
		r->bad++; /* a member's headers lie inside the archive */
	r->stream_before = false;
	return 0;
}

static void rec_progress(void *opaque, uint64_t off)
{
	struct rec *r = opaque;

	r->progress_calls++;
	if (off > r->size)
		r->bad++;
}

void rec_free(struct rec *r)
{
	for (size_t i = 0; i < r->nm; i++)
		free(r->m[i].path);
	free(r->m);
	free(r->s);
	memset(r, 0, sizeof(*r));
}

/* Parses buf into r (cleared first): the parse's return value. */
int parse(const uint8_t *buf, size_t len, struct rec *r, struct cont_stats *st)
{
	struct src *s = src_from_mem(buf, len);
	int fail_at = r->fail_at;

	rec_free(r);
	r->fail_at = fail_at;
	r->size = len;
	struct cont_sink sink = {.stream = rec_stream,
				 .member = rec_member,
				 .progress = rec_progress,
				 .opaque = r,
				 .name = "test.zip"};
	memset(st, 0x55, sizeof(*st)); /* the parse sets every field */
	int err = cont_zip.parse(s, &sink, st);
	src_free(s);
	CHECK_EQ(r->bad, 0);
	if (!err)
		CHECK_EQ(st->members, r->nm);
	CHECK(err == 0 || err == -EINVAL || err == -EIO || err == -ENOTSUP || err == -ENOMEM ||
	      err == -ECANCELED);
	return err;
}

struct rmember *find(struct rec *r, const char *path)
{
	for (size_t i = 0; i < r->nm; i++)
		if (strlen(path) == r->m[i].path_len &&
		    memcmp(r->m[i].path, path, r->m[i].path_len) == 0)
			return &r->m[i];
	return NULL;
}

/* The member's bytes as the index would read them (malloc'd, *len), or NULL: stored data
 * after its local header, else its stream decoded with the declared codec through a window
 * of the archive. */
uint8_t *member_bytes(const uint8_t *zip, size_t ziplen, const struct rec *r,
		      const struct rmember *m, size_t *len)
{
	struct src *file = src_from_mem(zip, ziplen);
	uint8_t *out = NULL;

	*len = 0;
	if (!m->stream) {
		uint64_t at = m->data_off;
		if (at > ziplen || m->stored > ziplen - at)
			goto done;
		out = malloc(m->stored ? m->stored : 1);
		memcpy(out, zip + at, m->stored);
		*len = m->stored;
		goto done;
	}
	const struct rstream *s = &r->s[m->stream - 1];
	const struct codec *c = codec_by_name(s->codec);
	uint64_t start = s->coff;
	if (!c || (s->zip_local && zip_local_data(file, s->coff, "test.zip", &start)))
		goto done;
	if (start > ziplen || s->clen > ziplen - start || s->usize > (64u << 20))
		goto done;
	struct src *win = src_window(file, start, s->clen), *cipher = NULL;
	if (s->crypt) { /* decrypted under the keyring's passwords (the test's "secret") */
		struct zcr_rec cr;
		struct src *plain = NULL;
		if (zcr_parse(s->crypt_rec, ZCR_LEN, &cr) || zcr_open(win, &cr, &plain)) {
			src_free(win);
			goto done;
		}
		cipher = win;
		win = plain;
	}
	struct codec_opts opts = {
	    .spacing = 1u << 20, .threads = 1, .params = s->params, .params_len = s->params_len};
	struct codec_sink sink = {.checkpoint = NULL};
	struct codec_scan *scan = NULL;
	int e = c->scan_new(win, &opts, &sink, &scan);
	if (!e) {
		size_t cap = (size_t)s->usize + 1, got = 0;
		uint8_t *dec = malloc(cap);
		for (;;) {
			ssize_t n = c->scan_read(scan, dec + got, cap - got);
			if (n <= 0) {
				if (n < 0)
					got = SIZE_MAX;
				break;
			}
			got += (size_t)n;
			if (got == cap)
				break;
		}
		if (got == s->usize && m->data_off + m->size <= got) {
			out = malloc(m->size ? m->size : 1);
			memcpy(out, dec + m->data_off, m->size);
			*len = m->size;
		}
		free(dec);
	}
	c->scan_free(scan);
	src_free(win);
	src_free(cipher); /* after the plaintext over it */
done:
	src_free(file);
	return out;
}

int null_ckpt(void *opaque, const struct codec_ckpt *ck, const void *aux, size_t auxlen)
{
	return 0;
}

/* Every readable regular member (and symlink) with data reads back to its size and CRC. */
void check_all_bytes(const uint8_t *zip, size_t len, const struct rec *r)
{
	for (size_t i = 0; i < r->nm; i++) {
		const struct rmember *m = &r->m[i];
		if (m->unreadable || m->type == MEMBER_DIR || m->size == 0)
			continue;
		size_t n;
		uint8_t *b = member_bytes(zip, len, r, m, &n);
		CHECK(b != NULL);
		if (!b) {
			fprintf(stderr, "  member %s cannot be read\n", m->path);
			continue;
		}
		CHECK_EQ(n, m->size);
		CHECK(m->has_crc);
		if ((uint32_t)crc32(0, b, (uInt)n) != m->crc) {
			fprintf(stderr, "  member %s: CRC mismatch\n", m->path);
			tu_failures++;
		}
		free(b);
	}
}

/* ---- running the tools ----------------------------------------------------------------- */

int run(const char *fmt, ...)
{
	char cmd[8192];
	va_list ap;
	int st;

	va_start(ap, fmt);
	vsnprintf(cmd, sizeof(cmd), fmt, ap);
	va_end(ap);
	st = system(cmd);
	if (st == -1 || !WIFEXITED(st) || WEXITSTATUS(st)) {
		fprintf(stderr, "command failed (%d): %s\n", st, cmd);
		tu_failures++;
		return -1;
	}
	return 0;
}

uint8_t *read_tmp(const char *name, size_t *len)
{
	char p[512];

	snprintf(p, sizeof(p), "%s/%s", tmpdir, name);
	uint8_t *b = tu_read_file(p, len);
	CHECK(b != NULL);
	return b;
}

/* "name line 0\nname line 1\n..." cut at n bytes: the data the Python part writes too. */
uint8_t *gen(const char *name, size_t n)
{
	uint8_t *b = malloc(n + 64);
	size_t at = 0;

	for (unsigned i = 0; at < n; i++)
		at += (size_t)sprintf((char *)b + at, "%s line %u\n", name, i);
	return b;
}

static const char PY_DUMP[] =
    "import sys, zipfile\n"
    "for path in sys.argv[1:]:\n"
    "  print('==', path)\n"
    "  for i in zipfile.ZipFile(path).infolist():\n"
    "    raw = i.filename.encode('utf-8' if i.flag_bits & 0x800 else 'cp437')\n"
    "    print(raw.hex() or '-', i.compress_type, i.flag_bits, i.create_system,\n"
    "          i.header_offset, i.compress_size, i.file_size, i.CRC, i.external_attr)\n";

static struct pydump *dumps;
static size_t ndumps;

/* Runs the dump over paths (space-separated) and adds what it prints to dumps[]. */
static const char *python(void);

static void py_dump_run(const char *paths)
{
	char script[512];
	size_t len;

	snprintf(script, sizeof(script), "%s/dump.py", tmpdir);
	FILE *f = fopen(script, "w");
	fputs(PY_DUMP, f);
	fclose(f);
	size_t cl = strlen(paths) + 1100;
	char *cmd = malloc(cl);
	snprintf(cmd, cl, "%s %s %s", python(), script, paths);
	char *out = (char *)tu_pipe(cmd, NULL, 0, &len);
	free(cmd);
	CHECK(out != NULL);
	if (!out)
		return;
	out = realloc(out, len + 1);
	out[len] = 0;
	struct pydump *d = NULL;
	size_t cap = 0;
	for (char *line = strtok(out, "\n"); line; line = strtok(NULL, "\n")) {
		if (!strncmp(line, "== ", 3)) {
			dumps = realloc(dumps, (ndumps + 1) * sizeof(*dumps));
			d = &dumps[ndumps++];
			memset(d, 0, sizeof(*d));
			snprintf(d->path, sizeof(d->path), "%s", line + 3);
			cap = 0;
			continue;
		}
		char hex[1100];
		struct pyent e = {0};
		unsigned long long h, c, u;
		unsigned long crc, attr;
		if (!d || sscanf(line, "%1099s %u %u %u %llu %llu %llu %lu %lu", hex, &e.method,
				 &e.flags, &e.system, &h, &c, &u, &crc, &attr) != 9) {
			CHECK(!"a line of the Python dump");
			continue;
		}
		e.hdr_off = h;
		e.csize = c;
		e.usize = u;
		e.crc = (uint32_t)crc;
		e.ext_attr = (uint32_t)attr;
		if (strcmp(hex, "-") != 0)
			for (size_t i = 0; hex[2 * i] && i < sizeof(e.name); i++) {
				unsigned b;
				sscanf(hex + 2 * i, "%2x", &b);
				e.name[e.name_len++] = (char)b;
			}
		if (d->n == cap) {
			cap = cap ? cap * 2 : 64;
			d->v = realloc(d->v, cap * sizeof(*d->v));
		}
		d->v[d->n++] = e;
	}
	free(out);
}

/* What zipfile reads from zippath: from the dumps made at the start, else a run of its own. */
static const struct pyent *py_dump(const char *zippath, size_t *n)
{
	for (int pass = 0; pass < 2; pass++) {
		for (size_t i = 0; i < ndumps; i++)
			if (!strcmp(dumps[i].path, zippath)) {
				*n = dumps[i].n;
				return dumps[i].v;
			}
		if (pass == 0)
			py_dump_run(zippath);
	}
	*n = 0;
	return NULL;
}

static const char *method_codec(unsigned method)
{
	switch (method) {
	case 0:
		return "stored";
	case 8:
		return "deflate";
	case 12:
		return "bzip2";
	case 14:
		return "lzma-zip";
	case 93:
		return "zstd";
	case 95:
		return "xz";
	default:
		return NULL;
	}
}

/* What the parse reported against what zipfile reads: the same entries in the same order,
 * their names, header offsets, CRCs, sizes and how their data is declared. */
void check_against_python(const char *zippath, const struct rec *r)
{
	size_t n;
	const struct pyent *v = py_dump(zippath, &n);

	CHECK(v != NULL);
	CHECK_EQ(r->nm, n);
	for (size_t i = 0; i < n && i < r->nm; i++) {
		const struct pyent *e = &v[i];
		const struct rmember *m = &r->m[i];
		bool dir = e->name_len && e->name[e->name_len - 1] == '/';
		if (e->name_len != m->path_len || memcmp(e->name, m->path, m->path_len) != 0) {
			fprintf(stderr, "  entry %zu: name '%s', zipfile reads '%.*s'\n", i,
				m->path, (int)e->name_len, e->name);
			tu_failures++;
			continue;
		}
		CHECK_EQ(m->hdr_off, e->hdr_off);
		CHECK(m->has_crc);
		CHECK_EQ(m->crc, e->crc);
		if (dir || m->type == MEMBER_DIR)
			continue;
		CHECK_EQ(m->size, e->usize);
		if (m->unreadable || e->usize == 0) {
			CHECK_EQ(m->stream, 0);
			continue;
		}
		CHECK(m->stream > 0 && m->stream <= r->ns);
		if (!m->stream || m->stream > r->ns)
			continue;
		const struct rstream *s = &r->s[m->stream - 1];
		const char *codec = method_codec(e->method);
		CHECK(codec && strcmp(s->codec, codec) == 0);
		CHECK_EQ(s->coff, e->hdr_off);
		CHECK(s->zip_local);
		CHECK_EQ(s->clen, e->csize);
		CHECK_EQ(s->usize, e->usize);
		CHECK_EQ(m->data_off, 0);
		if (e->method == 14) { /* LZMA: the size as the codec's parameter */
			CHECK_EQ(s->params_len, 8);
			uint64_t p = 0;
			for (int k = 7; k >= 0; k--)
				p = p << 8 | s->params[k];
			CHECK_EQ(p, e->usize);
		} else {
			CHECK_EQ(s->params_len, 0);
		}
	}
}

/* ---- a tree made on disk, zipped by Info-ZIP ----------------------------------------- */

static const struct tfile TREE[] = {
    {.path = "hello.txt", .type = 'f', .mode = 0600, .size = 6},
    {.path = "exec.sh", .type = 'f', .mode = 0755, .size = 40},
    {.path = "setuid", .type = 'f', .mode = 04755, .size = 100},
    {.path = "empty", .type = 'f', .mode = 0644, .size = 0},
    {.path = "emptydir/", .type = 'd', .mode = 0750},
    {.path = "d/", .type = 'd', .mode = 0755},
    {.path = "d/sub/", .type = 'd', .mode = 0700},
    {.path = "d/sub/deep.txt", .type = 'f', .mode = 0644, .size = 3000},
    {.path = "d/big.txt", .type = 'f', .mode = 0644, .size = 300000},
    {.path = "d/noise.bin", .type = 'f', .mode = 0640, .size = 5000, .noise = true},
    {.path = "link", .type = 'l', .mode = 0777, .target = "hello.txt"},
    {.path = "dirlink", .type = 'l', .mode = 0777, .target = "d/sub"},
    {.path = "caf\xc3\xa9 \xe6\x97\xa5.txt", .type = 'f', .mode = 0644, .size = 11},
};
_Static_assert(sizeof(TREE) / sizeof(TREE[0]) == NTREE, "NTREE");

char tree[300];

static uint8_t *tree_bytes(const struct tfile *t)
{
	uint8_t *b;

	if (t->noise) {
		b = malloc(t->size);
		tu_fill(b, t->size, 99, 0);
		return b;
	}
	return gen(t->path, t->size);
}

static void make_tree(void)
{
	char p[1024];

	snprintf(tree, sizeof(tree), "%s/tree", tmpdir);
	CHECK(mkdir(tree, 0755) == 0);
	for (size_t i = 0; i < NTREE; i++) {
		const struct tfile *t = &TREE[i];
		snprintf(p, sizeof(p), "%s/%s", tree, t->path);
		if (t->type == 'd') {
			p[strlen(p) - 1] = 0;
			CHECK(mkdir(p, 0755) == 0);
			CHECK(chmod(p, t->mode) == 0);
		} else if (t->type == 'l') {
			CHECK(symlink(t->target, p) == 0);
		} else {
			uint8_t *b = tree_bytes(t);
			int fd = open(p, O_WRONLY | O_CREAT | O_TRUNC, 0644);
			CHECK(fd >= 0 && write(fd, b, t->size) == (ssize_t)t->size);
			close(fd);
			CHECK(chmod(p, t->mode) == 0);
			free(b);
		}
	}
	/* fixed, even mtimes (a DOS time has two-second steps), children before parents */
	for (size_t i = NTREE; i-- > 0;) {
		const struct tfile *t = &TREE[i];
		snprintf(p, sizeof(p), "%s/%s", tree, t->path);
		struct timespec ts[2] = {{1600000000 + 2 * (int64_t)i, 0},
					 {1600000000 + 2 * (int64_t)i, 0}};
		CHECK(utimensat(AT_FDCWD, p, ts, AT_SYMLINK_NOFOLLOW) == 0);
	}
	if (geteuid() == 0) {
		snprintf(p, sizeof(p), "%s/hello.txt", tree);
		CHECK(chown(p, 1234, 5678) == 0);
		snprintf(p, sizeof(p), "%s/link", tree);
		CHECK(lchown(p, 4321, 8765) == 0);
	}
}

int64_t tree_mtime(size_t i)
{
	return 1600000000 + 2 * (int64_t)i;
}

/* The members of an Info-ZIP archive of the tree against the tree itself. */
void check_tree(const uint8_t *zip, size_t len, struct rec *r, unsigned how, const char *codec)
{
	for (size_t i = 0; i < NTREE; i++) {
		const struct tfile *t = &TREE[i];
		struct rmember *m = find(r, t->path);
		struct stat st;
		char p[1024];
		CHECK(m != NULL);
		if (!m) {
			fprintf(stderr, "  %s is not in the archive\n", t->path);
			continue;
		}
		snprintf(p, sizeof(p), "%s/%s", tree, t->path);
		CHECK(lstat(p, &st) == 0);
		CHECK_EQ(m->mode, st.st_mode & 07777);
		CHECK_EQ(m->type, t->type == 'd'   ? MEMBER_DIR
				  : t->type == 'l' ? MEMBER_SYMLINK
						   : MEMBER_REG);
		CHECK(m->link_empty);
		CHECK_EQ(m->mtime, tree_mtime(i));
		CHECK_EQ(m->nsec, 0);
		CHECK_EQ(m->dos_time, !!(how & ZT_DOSTIME));
		if (how & ZT_OWNERS) {
			CHECK(!m->no_owner);
			CHECK_EQ(m->uid, st.st_uid);
			CHECK_EQ(m->gid, st.st_gid);
		} else {
			CHECK(m->no_owner);
		}
		if (t->type == 'd') {
			CHECK_EQ(m->size, 0);
			continue;
		}
		if (t->type == 'l') {
			CHECK(m->link_in_data);
			CHECK_EQ(m->size, strlen(t->target));
		} else {
			CHECK(!m->link_in_data);
			CHECK_EQ(m->size, t->size);
		}
		CHECK_EQ(m->unreadable, 0);
		if ((how & ZT_ENCRYPTED) && m->size) /* a stream to decrypt, even a stored one */
			CHECK(m->stream && r->s[m->stream - 1].crypt);
		if (!(how & ZT_ENCRYPTED) && m->stream)
			CHECK(!r->s[m->stream - 1].crypt);
		if (m->stream) { /* what zip stores (-0, or data that would not shrink): "stored" */
			const char *sc = r->s[m->stream - 1].codec;
			CHECK(strcmp(sc, codec) == 0 || strcmp(sc, "stored") == 0);
		} else {
			CHECK_EQ(m->size, 0);
		}
		size_t n;
		uint8_t *got = m->size ? member_bytes(zip, len, r, m, &n) : NULL;
		if (m->size) {
			CHECK(got != NULL);
			if (t->type == 'l') {
				CHECK(got && n == strlen(t->target) && !memcmp(got, t->target, n));
			} else {
				uint8_t *want = tree_bytes(t);
				CHECK(got && n == t->size && !memcmp(got, want, n));
				free(want);
			}
		}
		free(got);
	}
}

/* zip ARGS run in the tree into tmpdir/NAME. */
static void zip_tree(const char *name, const char *args)
{
	run("cd %s && TZ=UTC zip -q -r %s %s/%s . >/dev/null", tree, args, tmpdir, name);
}

const struct zv ZV[] = {
    {"z6.zip", "-y", "deflate", ZT_OWNERS | ZT_SYMLINKS},
    {"z0.zip", "-y -0", "none", ZT_OWNERS | ZT_SYMLINKS},
    {"z1.zip", "-y -1", "deflate", ZT_OWNERS | ZT_SYMLINKS},
    {"z9.zip", "-y -9", "deflate", ZT_OWNERS | ZT_SYMLINKS},
    {"zb.zip", "-y -Z bzip2", "bzip2", ZT_OWNERS | ZT_SYMLINKS},
    /* -X: no extra fields: DOS times (made with TZ=UTC, so they read back as UTC) and no
     * owner */
    {"zx.zip", "-y -X", "deflate", ZT_DOSTIME | ZT_SYMLINKS},
    {"zp.zip", "-y -P secret", "deflate", ZT_OWNERS | ZT_SYMLINKS | ZT_ENCRYPTED},
};
_Static_assert(sizeof(ZV) / sizeof(ZV[0]) == NZV, "NZV");

/* ---- Python's zipfile ------------------------------------------------------------------ */

static const char PY_MAKE[] =
    "import io, os, struct, sys, zipfile, zlib\n"
    "def gen(name, n):\n"
    "    o = bytearray(); i = 0\n"
    "    while len(o) < n:\n"
    "        o += b'%s line %d\\n' % (name.encode(), i); i += 1\n"
    "    return bytes(o[:n])\n"
    "def zi(name, system=3, attr=0o100644 << 16, dt=(2021, 3, 4, 5, 6, 8), extra=b'', m=0):\n"
    "    z = zipfile.ZipInfo(name, dt); z.create_system = system; z.external_attr = attr\n"
    "    z.extra = extra; z.compress_type = m\n"
    "    return z\n"
    "def x(tag, data): return struct.pack('<HH', tag, len(data)) + data\n"
    "def make(v, out):\n"
    "  with zipfile.ZipFile(out, 'w') as z:\n"
    "    if v == 'methods':\n"
    "      for name, m, n in (('stored.txt', 0, 20000), ('deflated.txt', 8, 100000),\n"
    "                         ('bzip2.txt', 12, 100000), ('lzma.txt', 14, 100000),\n"
    "                         ('lzma-small.txt', 14, 7), ('empty-deflated', 8, 0)):\n"
    "          z.writestr(zi(name, attr=0o100640 << 16, m=m), gen(name, n))\n"
    "      z.writestr(zi('dir/', attr=0o40755 << 16 | 0x10), b'')\n"
    "    elif v == 'dos':\n"
    "      z.writestr(zi('DOSFILE.TXT', system=0, attr=0x20), gen('DOSFILE.TXT', 50))\n"
    "      z.writestr(zi('DOSDIR/', system=0, attr=0x10), b'')\n"
    "      z.writestr(zi('ATTRDIR', system=0, attr=0x10), b'')\n"
    "      z.writestr(zi('RO.TXT', system=0, attr=0x01), gen('RO.TXT', 50))\n"
    "      z.writestr(zi('NTFS.TXT', system=10, attr=0o100777 << 16 | 0x20), gen('NTFS.TXT', 50))\n"
    "      z.writestr(zi('unix0', attr=0), gen('unix0', 50))\n"
    "      z.writestr(zi('unix755', attr=0o100755 << 16), gen('unix755', 50))\n"
    "      z.writestr(zi('unixdir/', attr=0o40700 << 16), b'')\n"
    "      z.writestr(zi('unixdir-noslash', attr=0o40711 << 16), b'')\n"
    "      z.writestr(zi('sym', attr=0o120777 << 16), b'target/path')\n"
    "      z.writestr(zi('sym-deflated', attr=0o120777 << 16, m=8), b'a/' * 150)\n"
    "      z.writestr(zi('fifo', attr=0o10644 << 16), gen('fifo', 10))\n"
    "    elif v == 'extras':\n"
    "      ut = lambda t: x(0x5455, struct.pack('<Bi', 1, t))\n"
    "      ft = lambda t100ns: x(0x000a, b'\\0' * 4 + struct.pack('<HH', 1, 24) +\n"
    "                           struct.pack('<QQQ', t100ns, 0, 0))\n"
    "      ux = lambda u, us, g, gs: x(0x7875, bytes([1, us]) + u.to_bytes(us, 'little') +\n"
    "                                  bytes([gs]) + g.to_bytes(gs, 'little'))\n"
    "      E = 116444736000000000\n"
    "      for name, e in (('ut', ut(1234567890)), ('ut-negative', ut(-86400)),\n"
    "                      ('ut-no-mtime', x(0x5455, struct.pack('<Bi', 2, 5))),\n"
    "                      ('ntfs', ft(E + 15000000001234567)),\n"
    "                      ('ntfs-then-ut', ft(E + 10) + ut(1000000000)),\n"
    "                      ('ntfs-other-tag', x(0x000a, b'\\0' * 4 + struct.pack('<HH', 2, 4)\n"
    "                                         + b'abcd' + struct.pack('<HH', 1, 24)\n"
    "                                         + struct.pack('<QQQ', E + 20000000, 0, 0))),\n"
    "                      ('ntfs-short', x(0x000a, b'\\0' * 4 + struct.pack('<HH', 1, 8)\n"
    "                                     + struct.pack('<Q', E))),\n"
    "                      ('dos-only', b''),\n"
    "                      ('ux4', ux(1234, 4, 5678, 4)), ('ux2', ux(1000, 2, 100, 2)),\n"
    "                      ('ux1-8', ux(7, 1, 2**40, 8)), ('ux0', ux(0, 4, 0, 4)),\n"
    "                      ('ux-v2', x(0x7875, bytes([2, 4]) + bytes(4) + bytes([4]) + "
    "bytes(4))),\n"
    "                      ('ux-short', x(0x7875, bytes([1, 4, 1, 2]))),\n"
    "                      ('ux-size9', x(0x7875, bytes([1, 9]) + bytes(9) + bytes([4]) + "
    "bytes(4))),\n"
    "                      ('cafe.txt', x(0x7075, b'\\1' + struct.pack('<I', "
    "zlib.crc32(b'cafe.txt'))\n"
    "                                     + 'caf\\u00e9.txt'.encode())),\n"
    "                      ('wrongcrc.txt', x(0x7075, b'\\1' + struct.pack('<I', 1234) + "
    "b'other')),\n"
    "                      ('upath-v2', x(0x7075, b'\\2' + struct.pack('<I', "
    "zlib.crc32(b'upath-v2'))\n"
    "                                     + b'other')),\n"
    "                      ('unknown-then-ut', x(0xcafe, b'xyz') + ut(1500000000)),\n"
    "                      ('overrun', struct.pack('<HH', 0x5455, 200) + b'\\1abcd')):\n"
    "          z.writestr(zi(name, dt=(2020, 5, 17, 10, 20, 30), extra=e), gen(name, 20))\n"
    "    elif v == 'many':\n"
    "      for i in range(70000):\n"
    "          z.writestr(zi('f%05d' % i), b'' if i % 1000 else gen('f%05d' % i, 10))\n"
    "    elif v == 'force64':\n"
    "      for name, m in (('deflated64', 8), ('stored64', 0)):\n"
    "          with z.open(zi(name, m=m), 'w', force_zip64=True) as f:\n"
    "              f.write(gen(name, 5000))\n"
    "    elif v == 'comment':\n"
    "      z.writestr(zi('a.txt', m=8), gen('a.txt', 1000))\n"
    "      c = bytearray(b'c' * 65535)\n"
    "      for at in (0, 1000, 65535 - 22, 65535 - 4):\n"
    "          c[at:at + 4] = b'PK\\5\\6'\n"
    "      z.comment = bytes(c)\n"
    "    elif v == 'utf8':\n"
    "      z.writestr(zi('caf\\u00e9/'), b'')\n"
    "      z.writestr(zi('caf\\u00e9/\\u65e5\\u672c.txt', m=8), gen('nihon', 300))\n"
    "    elif v == 'empty':\n"
    "      pass\n"
    "for v in sys.argv[2:]:\n"
    "    make(v, os.path.join(sys.argv[1], v + '.zip'))\n";

static const char *python(void)
{
	return access("/usr/bin/python3", X_OK) == 0 ? "/usr/bin/python3" : "python3";
}

/* Python writes every variant at once, each into tmpdir/VARIANT.zip (one interpreter start:
 * the machines are shared and slow to start processes). */
static void py_make_all(void)
{
	char script[512];

	snprintf(script, sizeof(script), "%s/make.py", tmpdir);
	FILE *f = fopen(script, "w");
	fputs(PY_MAKE, f);
	fclose(f);
	run("%s %s %s methods dos extras many force64 comment utf8 empty", python(), script,
	    tmpdir);
}

/* The bytes of the archive Python made for variant v (malloc'd), or NULL. */
uint8_t *py_make(const char *v, const char *name, size_t *len)
{
	(void)v;
	return read_tmp(name, len);
}

/* ---- hand-made archives ---------------------------------------------------------------- */

static void put(struct hzip *z, const void *b, size_t n)
{
	if (z->len + n > z->cap) {
		z->cap = (z->len + n) * 2 + 256;
		z->p = realloc(z->p, z->cap);
	}
	if (n)
		memcpy(z->p + z->len, b, n);
	z->len += n;
}

static void put16(struct hzip *z, unsigned v)
{
	uint8_t b[2] = {(uint8_t)v, (uint8_t)(v >> 8)};
	put(z, b, 2);
}

static void put32(struct hzip *z, uint32_t v)
{
	put16(z, v & 0xffff);
	put16(z, v >> 16);
}

static void put64(struct hzip *z, uint64_t v)
{
	put32(z, (uint32_t)v);
	put32(z, (uint32_t)(v >> 32));
}

void set32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)v;
	p[1] = (uint8_t)(v >> 8);
	p[2] = (uint8_t)(v >> 16);
	p[3] = (uint8_t)(v >> 24);
}

void set16(uint8_t *p, unsigned v)
{
	p[0] = (uint8_t)v;
	p[1] = (uint8_t)(v >> 8);
}

/* A zip of n entries, after `prefix` bytes of 'S'; flags HZ_*. */
struct hzip hz_build(const struct hent *e, size_t n, size_t prefix, unsigned flags)
{
	struct hzip z = {0};

	for (size_t i = 0; i < prefix; i++)
		put(&z, "S", 1);
	for (size_t i = 0; i < n; i++) {
		size_t nl = e[i].name_len ? e[i].name_len : strlen(e[i].name);
		uint64_t usize = e[i].method == 0 && !e[i].usize ? e[i].len : e[i].usize;
		uint32_t crc = e[i].crc || e[i].method
				   ? e[i].crc
				   : (uint32_t)crc32(0, e[i].data, (uInt)e[i].len);
		z.lho[i] = z.len;
		put32(&z, 0x04034b50);
		put16(&z, 20);
		put16(&z, e[i].flags);
		put16(&z, e[i].method);
		put16(&z, e[i].dos_time);
		put16(&z, e[i].dos_date ? e[i].dos_date : 0x5021);
		put32(&z, crc);
		put32(&z, (uint32_t)e[i].len);
		put32(&z, (uint32_t)usize);
		put16(&z, (unsigned)nl);
		put16(&z, (unsigned)e[i].lextra_len);
		put(&z, e[i].name, nl);
		put(&z, e[i].lextra, e[i].lextra_len);
		put(&z, e[i].data, e[i].len);
	}
	z.cd_off = z.len;
	for (size_t i = 0; i < n; i++) {
		size_t nl = e[i].name_len ? e[i].name_len : strlen(e[i].name);
		uint64_t usize = e[i].method == 0 && !e[i].usize ? e[i].len : e[i].usize;
		uint32_t crc = e[i].crc || e[i].method
				   ? e[i].crc
				   : (uint32_t)crc32(0, e[i].data, (uInt)e[i].len);
		size_t x64 = 8 * (e[i].z64_usize + e[i].z64_csize + e[i].z64_lho);
		z.cen[i] = z.len;
		put32(&z, 0x02014b50);
		put16(&z, e[i].made_by ? e[i].made_by : 0x031e);
		put16(&z, 20);
		put16(&z, e[i].flags);
		put16(&z, e[i].method);
		put16(&z, e[i].dos_time);
		put16(&z, e[i].dos_date ? e[i].dos_date : 0x5021);
		put32(&z, crc);
		put32(&z, e[i].z64_csize ? 0xffffffffu : (uint32_t)e[i].len);
		put32(&z, e[i].z64_usize ? 0xffffffffu : (uint32_t)usize);
		put16(&z, (unsigned)nl);
		put16(&z, (unsigned)(e[i].cextra_len + (x64 ? 4 + x64 : 0)));
		put16(&z, 0); /* comment */
		put16(&z, 0); /* disk */
		put16(&z, 0); /* internal attributes */
		put32(&z, e[i].ext_attr ? e[i].ext_attr : 0100644u << 16);
		put32(&z, e[i].z64_lho ? 0xffffffffu : (uint32_t)(z.lho[i] - prefix));
		put(&z, e[i].name, nl);
		if (x64) {
			put16(&z, 1);
			put16(&z, (unsigned)x64);
			if (e[i].z64_usize)
				put64(&z, usize);
			if (e[i].z64_csize)
				put64(&z, e[i].len);
			if (e[i].z64_lho)
				put64(&z, e[i].fake_lho ? e[i].fake_lho : z.lho[i] - prefix);
		}
		put(&z, e[i].cextra, e[i].cextra_len);
	}
	z.cd_size = z.len - z.cd_off;
	if (flags & HZ_ZIP64_END) {
		uint64_t rec = z.len;
		put32(&z, 0x06064b50);
		put64(&z, 44);
		put16(&z, 45);
		put16(&z, 45);
		put32(&z, 0);
		put32(&z, 0);
		put64(&z, n);
		put64(&z, n);
		put64(&z, z.cd_size);
		put64(&z, z.cd_off - prefix);
		put32(&z, 0x07064b50);
		put32(&z, 0);
		put64(&z, rec - prefix);
		put32(&z, 1);
	}
	z.end_off = z.len;
	put32(&z, 0x06054b50);
	put16(&z, 0);
	put16(&z, 0);
	put16(&z, flags & HZ_ZIP64_END ? 0xffff : (unsigned)n);
	put16(&z, flags & HZ_ZIP64_END ? 0xffff : (unsigned)n);
	put32(&z, flags & HZ_ZIP64_END ? 0xffffffffu : (uint32_t)z.cd_size);
	put32(&z, flags & HZ_ZIP64_END ? 0xffffffffu : (uint32_t)(z.cd_off - prefix));
	put16(&z, 0);
	return z;
}

/* Raw deflate of buf (malloc'd, *out_len). */
uint8_t *deflate_raw(const uint8_t *buf, size_t len, size_t *out_len)
{
	z_stream zs = {0};
	size_t cap = deflateBound(&zs, len) + 64;
	uint8_t *out = malloc(cap);

	CHECK(deflateInit2(&zs, 6, Z_DEFLATED, -15, 8, Z_DEFAULT_STRATEGY) == Z_OK);
	zs.next_in = (uint8_t *)buf;
	zs.avail_in = (uInt)len;
	zs.next_out = out;
	zs.avail_out = (uInt)cap;
	CHECK(deflate(&zs, Z_FINISH) == Z_STREAM_END);
	*out_len = cap - zs.avail_out;
	deflateEnd(&zs);
	return out;
}

void check_streams_inside(const uint8_t *zip, size_t len, const struct rec *r)
{
	struct src *file = src_from_mem(zip, len);

	for (size_t i = 0; i < r->ns; i++) {
		const struct rstream *s = &r->s[i];
		uint64_t start;
		if (s->zip_local)
			(void)zip_local_data(file, s->coff, "t", &start);
	}
	src_free(file);
	for (size_t k = 0; k < r->nm; k++)
		if (r->m[k].stream && r->m[k].size <= (1u << 20)) {
			size_t n;
			free(member_bytes(zip, len, r, &r->m[k], &n));
		}
}

/* Every byte of a small archive flipped, one at a time, and each result parsed: no crash, no
 * out-of-bounds read, only the documented errors, every member inside the archive, every
 * declared stream's bytes inside the archive once its local header is read. */
void cleanup(void)
{
	char cmd[512];

	if (tmpdir[0]) {
		snprintf(cmd, sizeof(cmd), "rm -rf %s", tmpdir);
		if (system(cmd) != 0)
			fprintf(stderr, "could not remove %s\n", tmpdir);
	}
}

/* Every archive the tests read, made first (a dump by Python of them all at once). */
void prepare(void)
{
	char cmd[1024], p[512], all[8192] = "";
	size_t len;

	make_tree();
	for (size_t i = 0; i < NZV; i++)
		zip_tree(ZV[i].name, ZV[i].args);
	snprintf(cmd, sizeof(cmd), "cd %s && zip -q -r - d hello.txt empty setuid", tree);
	uint8_t *zip = tu_pipe(cmd, NULL, 0, &len);
	CHECK(zip != NULL);
	snprintf(p, sizeof(p), "%s/pipe.zip", tmpdir);
	FILE *f = fopen(p, "wb");
	CHECK(zip && fwrite(zip, 1, len, f) == len);
	fclose(f);
	free(zip);
	run("cd %s && zip -q -r -y %s/small.zip hello.txt empty link d/sub emptydir", tree, tmpdir);
	if (tu_have("bsdtar"))
		run("cd %s && bsdtar --format zip -cf %s/bsd.zip .", tree, tmpdir);
	py_make_all();
	static const char *const dumped[] = {
	    "z6.zip",	"z0.zip",  "z1.zip",	  "z9.zip",  "zb.zip",	    "zx.zip",  "zp.zip",
	    "pipe.zip", "bsd.zip", "methods.zip", "dos.zip", "force64.zip", "utf8.zip"};
	for (size_t i = 0; i < sizeof(dumped) / sizeof(dumped[0]); i++) {
		snprintf(p, sizeof(p), "%s/%s", tmpdir, dumped[i]);
		if (access(p, F_OK) == 0)
			snprintf(all + strlen(all), sizeof(all) - strlen(all), " %s", p);
	}
	py_dump_run(all);
}
