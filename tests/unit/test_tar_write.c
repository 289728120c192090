/* Unit tests of the tar writer (tar_write.h): the ustar header's fields and checksum, every
 * case that needs a pax record (and the limits just under each, which do not), the records'
 * length prefix across a digit boundary, the refusals; then archives written with it read
 * back by tar.h's parser -- every field of every member, an 8 GiB member through a source
 * whose data is zeros, not memory -- and, when they are installed, by GNU tar and bsdtar,
 * which must list the same names without a word on stderr and extract the same bytes.
 */
#include "containers/tar/tar.h"
#include "convert/tar_write.h"
#include "common/log.h"
#include "testutil.h"

#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <string.h>

#define GIB8 ((uint64_t)8 << 30)

/* ---- reading a header back by hand ----------------------------------------------------- */

static uint64_t oct(const uint8_t *f, size_t n)
{
	uint64_t v = 0;

	for (size_t i = 0; i < n && f[i] >= '0' && f[i] <= '7'; i++)
		v = v * 8 + (uint64_t)(f[i] - '0');
	return v;
}

static bool checksum_ok(const uint8_t *h)
{
	unsigned sum = 0;

	for (size_t i = 0; i < 512; i++)
		sum += i >= 148 && i < 156 ? ' ' : h[i];
	/* six octal digits, a NUL, a space: as GNU tar writes it */
	return oct(h + 148, 6) == sum && h[154] == 0 && h[155] == ' ';
}

/* The value of record key in the pax data of an 'x' header at h (NULL if absent). */
static const uint8_t *pax_get(const uint8_t *h, const char *key, size_t *vlen)
{
	size_t len = (size_t)oct(h + 124, 11), off = 0, klen = strlen(key);
	const uint8_t *d = h + 512;

	while (off < len) {
		size_t rl = 0, i = off;
		while (d[i] >= '0' && d[i] <= '9')
			rl = rl * 10 + (size_t)(d[i++] - '0');
		if (d[i] != ' ' || rl == 0 || off + rl > len || d[off + rl - 1] != '\n') {
			fprintf(stderr, "bad pax record at %zu\n", off);
			tu_failures++;
			return NULL;
		}
		i++;
		if (off + rl - i > klen && !memcmp(d + i, key, klen) && d[i + klen] == '=') {
			*vlen = off + rl - 1 - (i + klen + 1);
			return d + i + klen + 1;
		}
		off += rl;
	}
	return NULL;
}

static bool pax_is(const uint8_t *h, const char *key, const void *want, size_t wlen)
{
	size_t n = 0;
	const uint8_t *v = pax_get(h, key, &n);

	return v && n == wlen && !memcmp(v, want, n);
}

static bool pax_str(const uint8_t *h, const char *key, const char *want)
{
	return pax_is(h, key, want, strlen(want));
}

/* Writes m's headers; *x: the 'x' header (NULL if none), *u: the ustar one. */
static size_t headers(const struct tw_member *m, struct tbuf *b, const uint8_t **x,
		      const uint8_t **u)
{
	int err = tw_header(m, b);

	CHECK_EQ(err, 0);
	*x = NULL;
	*u = NULL;
	if (err)
		return 0;
	CHECK_EQ(b->len % 512, 0);
	*u = b->p + b->len - 512;
	CHECK(checksum_ok(*u));
	CHECK(tar_header_valid(*u));
	CHECK(!memcmp(*u + 257,
		      "ustar\0"
		      "00",
		      8));
	if (b->len > 512) {
		*x = b->p;
		CHECK_EQ((*x)[156], 'x');
		CHECK(checksum_ok(*x));
		CHECK_EQ(oct(*x + 100, 7), 0644);
		CHECK_EQ(b->len, 512 + (oct(*x + 124, 11) + 511) / 512 * 512 + 512);
	}
	return b->len;
}

/* ---- the header, field by field --------------------------------------------------------- */

static void test_plain_header(void)
{
	struct tbuf b = {0};
	const uint8_t *x, *u;
	struct tw_member m = {.path = (const uint8_t *)"dir/file.txt",
			      .path_len = 12,
			      .type = MEMBER_REG,
			      .mode = 0100640,
			      .uid = 1000,
			      .gid = 100,
			      .uname = "alice",
			      .gname = "users",
			      .mtime_sec = 1700000000,
			      .size = 11};

	CHECK_EQ(headers(&m, &b, &x, &u), 512);
	CHECK(!x);
	CHECK(!memcmp(u, "dir/file.txt\0", 13));
	CHECK(!memcmp(u + 100, "0000640\0", 8)); /* permission bits only */
	CHECK(!memcmp(u + 108, "0001750\0", 8));
	CHECK(!memcmp(u + 116, "0000144\0", 8));
	CHECK(!memcmp(u + 124, "00000000013\0", 12));
	CHECK(!memcmp(u + 136, "14524770400\0", 12));
	CHECK_EQ(u[156], '0');
	CHECK(!memcmp(u + 265, "alice\0", 6));
	CHECK(!memcmp(u + 297, "users\0", 6));
	CHECK(!memcmp(u + 329,
		      "0000000\0"
		      "0000000\0",
		      16));
	for (size_t i = 345; i < 512; i++)
		CHECK_EQ(u[i], 0);

	/* each type's flag; a folder's name gets its '/'; a hard link has no size */
	static const struct {
		enum member_type t;
		char flag;
	} types[] = {{MEMBER_REG, '0'}, {MEMBER_HARDLINK, '1'}, {MEMBER_SYMLINK, '2'},
		     {MEMBER_CHR, '3'}, {MEMBER_BLK, '4'},	{MEMBER_DIR, '5'},
		     {MEMBER_FIFO, '6'}};
	for (size_t i = 0; i < sizeof(types) / sizeof(types[0]); i++) {
		struct tw_member t = {.path = (const uint8_t *)"a",
				      .path_len = 1,
				      .type = types[i].t,
				      .mode = 0755,
				      .size = 99,
				      .link = (const uint8_t *)"tgt",
				      .link_len = 3,
				      .dev_major = 8,
				      .dev_minor = 17};
		CHECK_EQ(headers(&t, &b, &x, &u), 512);
		if (!u)
			continue;
		CHECK_EQ(u[156], types[i].flag);
		CHECK_EQ(oct(u + 124, 11), types[i].t == MEMBER_REG ? 99 : 0);
		bool is_dev = types[i].t == MEMBER_CHR || types[i].t == MEMBER_BLK;
		CHECK_EQ(oct(u + 329, 7), is_dev ? 8 : 0);
		CHECK_EQ(oct(u + 337, 7), is_dev ? 17 : 0);
		bool is_link = types[i].t == MEMBER_SYMLINK || types[i].t == MEMBER_HARDLINK;
		CHECK(!memcmp(u + 157, is_link ? "tgt\0" : "\0", is_link ? 4 : 1));
		CHECK(!memcmp(u, types[i].t == MEMBER_DIR ? "a/\0" : "a\0",
			      types[i].t == MEMBER_DIR ? 3 : 2));
	}
	/* a folder whose name has its '/' already keeps one */
	m = (struct tw_member){.path = (const uint8_t *)"d/", .path_len = 2, .type = MEMBER_DIR};
	CHECK_EQ(headers(&m, &b, &x, &u), 512);
	CHECK(u && !memcmp(u, "d/\0", 3));
	tar_buf_free(&b);
	CHECK(!b.p && !b.len && !b.cap);
}

static void test_limits(void)
{
	struct tbuf b = {0};
	const uint8_t *x, *u;
	uint8_t name[400];
	char expect[400];

	memset(name, 'n', sizeof(name));
	/* a name of 100 bytes fills the field without a NUL; 101 needs a path record, with the
	 * first 100 bytes in the field, and the 'x' header named DIR/PaxHeaders/BASE */
	struct tw_member m = {.path = name, .path_len = 100, .type = MEMBER_REG};
	CHECK_EQ(headers(&m, &b, &x, &u), 512);
	CHECK(u && !memcmp(u, name, 100) && u[100] == '0');
	m.path_len = 101;
	CHECK_EQ(headers(&m, &b, &x, &u), 1536);
	CHECK(x && pax_is(x, "path", name, 101));
	CHECK(u && !memcmp(u, name, 100));
	CHECK(x && !memcmp(x, "./PaxHeaders/nnnn", 17));
	/* a folder of 100 bytes: 99 + '/' fits, 100 + '/' does not */
	m = (struct tw_member){.path = name, .path_len = 99, .type = MEMBER_DIR};
	CHECK_EQ(headers(&m, &b, &x, &u), 512);
	m.path_len = 100;
	CHECK_EQ(headers(&m, &b, &x, &u), 1536);
	memcpy(expect, name, 100);
	expect[100] = '/';
	CHECK(x && pax_is(x, "path", expect, 101));
	/* the 'x' header's name: the member's folder, PaxHeaders, its base name */
	memcpy(name, "some/dir/", 9);
	m = (struct tw_member){.path = name, .path_len = 150, .type = MEMBER_REG};
	CHECK_EQ(headers(&m, &b, &x, &u), 1536);
	CHECK(x && !memcmp(x, "some/dir/PaxHeaders/nnn", 23));
	memset(name, 'n', sizeof(name));

	/* non-ASCII bytes are fine in the fields: a short UTF-8 name and a short name that is
	 * not UTF-8 need no record */
	m = (struct tw_member){
	    .path = (const uint8_t *)"caf\xc3\xa9", .path_len = 5, .type = MEMBER_REG};
	CHECK_EQ(headers(&m, &b, &x, &u), 512);
	m.path = (const uint8_t *)"caf\xe9\xff";
	CHECK_EQ(headers(&m, &b, &x, &u), 512);
	CHECK(u && !memcmp(u, "caf\xe9\xff\0", 6));

	/* a long name that is not UTF-8: in the prefix and name fields when they fit it ... */
	memcpy(name + 150, "/\xff\xfe", 3);
	m = (struct tw_member){.path = name, .path_len = 160, .type = MEMBER_REG};
	CHECK_EQ(headers(&m, &b, &x, &u), 512);
	CHECK(u && !memcmp(u + 345, name, 150) && u[345 + 150] == 0);
	CHECK(u && !memcmp(u, name + 151, 9) && u[9] == 0);
	/* ... else a path record, marked binary (bsdtar would fail to read it as UTF-8) */
	m.path_len = 300;
	CHECK_EQ(headers(&m, &b, &x, &u), 1536);
	CHECK(x && pax_str(x, "hdrcharset", "BINARY") && pax_is(x, "path", name, 300));
	/* a long UTF-8 name: a path record, no hdrcharset */
	memcpy(name + 150, "/\xc3\xa9", 3);
	CHECK_EQ(headers(&m, &b, &x, &u), 1536);
	size_t vl;
	CHECK(x && !pax_get(x, "hdrcharset", &vl) && pax_is(x, "path", name, 300));
	memset(name, 'n', sizeof(name));

	/* link names: 100 bytes fit, 101 need linkpath (symlinks and hard links alike) */
	for (int t = 0; t < 2; t++) {
		m = (struct tw_member){.path = (const uint8_t *)"l",
				       .path_len = 1,
				       .type = t ? MEMBER_HARDLINK : MEMBER_SYMLINK,
				       .link = name,
				       .link_len = 100};
		CHECK_EQ(headers(&m, &b, &x, &u), 512);
		CHECK(u && !memcmp(u + 157, name, 100) && u[257] == 'u');
		m.link_len = 101;
		CHECK_EQ(headers(&m, &b, &x, &u), 1536);
		CHECK(x && pax_is(x, "linkpath", name, 101));
		CHECK(x && !pax_get(x, "path", &vl));
	}

	/* size: 8 GiB - 1 fits the 11 digits, 8 GiB does not (the field then holds 0) */
	m = (struct tw_member){
	    .path = (const uint8_t *)"big", .path_len = 3, .type = MEMBER_REG, .size = GIB8 - 1};
	CHECK_EQ(headers(&m, &b, &x, &u), 512);
	CHECK(u && !memcmp(u + 124, "77777777777\0", 12));
	m.size = GIB8;
	CHECK_EQ(headers(&m, &b, &x, &u), 1536);
	CHECK(x && pax_str(x, "size", "8589934592"));
	CHECK(u && oct(u + 124, 11) == 0);
	m.size = UINT64_MAX;
	CHECK_EQ(headers(&m, &b, &x, &u), 1536);
	CHECK(x && pax_str(x, "size", "18446744073709551615"));

	/* ids: 07777777 fits, one more is a record (and 0 in the field) */
	m = (struct tw_member){.path = (const uint8_t *)"o",
			       .path_len = 1,
			       .type = MEMBER_REG,
			       .uid = 07777777,
			       .gid = 07777777};
	CHECK_EQ(headers(&m, &b, &x, &u), 512);
	CHECK(u && oct(u + 108, 7) == 07777777 && oct(u + 116, 7) == 07777777);
	m.uid = 07777777 + 1;
	CHECK_EQ(headers(&m, &b, &x, &u), 1536);
	CHECK(x && pax_str(x, "uid", "2097152") && !pax_get(x, "gid", &vl));
	CHECK(u && oct(u + 108, 7) == 0 && oct(u + 116, 7) == 07777777);
	m.uid = 0;
	m.gid = 4294967295u;
	CHECK_EQ(headers(&m, &b, &x, &u), 1536);
	CHECK(x && pax_str(x, "gid", "4294967295") && !pax_get(x, "uid", &vl));

	/* owner names: 31 bytes fit, 32 do not */
	memset(expect, 'u', 32);
	expect[31] = 0;
	m = (struct tw_member){.path = (const uint8_t *)"o",
			       .path_len = 1,
			       .type = MEMBER_REG,
			       .uname = expect,
			       .gname = "g"};
	CHECK_EQ(headers(&m, &b, &x, &u), 512);
	CHECK(u && !memcmp(u + 265, expect, 32));
	expect[31] = 'u';
	expect[32] = 0;
	CHECK_EQ(headers(&m, &b, &x, &u), 1536);
	CHECK(x && pax_str(x, "uname", expect) && !pax_get(x, "gname", &vl));
	CHECK(u && u[265] == 0 && !memcmp(u + 297, "g\0", 2));
	m.uname = NULL;
	m.gname = expect;
	CHECK_EQ(headers(&m, &b, &x, &u), 1536);
	CHECK(x && pax_str(x, "gname", expect) && !pax_get(x, "uname", &vl));

	/* times: whole seconds from 0 to 8^11 - 1 fit; fractions, negative times and later ones
	 * are records */
	static const struct {
		int64_t sec;
		uint32_t nsec;
		const char *rec; /* NULL: none */
		uint64_t field;
	} times[] = {
	    {0, 0, NULL, 0},
	    {8589934591, 0, NULL, 8589934591},
	    {8589934592, 0, "8589934592", 8589934591},
	    {1600000000, 123456789, "1600000000.123456789", 1600000000},
	    {1600000000, 500000000, "1600000000.5", 1600000000},
	    {1600000000, 1, "1600000000.000000001", 1600000000},
	    {-1, 0, "-1", 0},
	    {-2, 500000000, "-1.5", 0},
	    {-1, 999999999, "-0.000000001", 0},
	    {-1000000000, 250000000, "-999999999.75", 0},
	    {INT64_MIN, 0, "-9223372036854775808", 0},
	};
	for (size_t i = 0; i < sizeof(times) / sizeof(times[0]); i++) {
		m = (struct tw_member){.path = (const uint8_t *)"t",
				       .path_len = 1,
				       .type = MEMBER_REG,
				       .mtime_sec = times[i].sec,
				       .mtime_nsec = times[i].nsec};
		CHECK_EQ(headers(&m, &b, &x, &u), times[i].rec ? 1536 : 512);
		if (times[i].rec && !(x && pax_str(x, "mtime", times[i].rec))) {
			fprintf(stderr, "time %zu: no record %s\n", i, times[i].rec);
			tu_failures++;
		}
		CHECK(u && oct(u + 136, 11) == times[i].field);
	}

	/* devices over 7 octal digits: SCHILY records */
	m = (struct tw_member){.path = (const uint8_t *)"d",
			       .path_len = 1,
			       .type = MEMBER_CHR,
			       .dev_major = 07777777,
			       .dev_minor = 07777777 + 1};
	CHECK_EQ(headers(&m, &b, &x, &u), 1536);
	CHECK(x && pax_str(x, "SCHILY.devminor", "2097152") && !pax_get(x, "SCHILY.devmajor", &vl));
	CHECK(u && oct(u + 329, 7) == 07777777 && oct(u + 337, 7) == 0);
	tar_buf_free(&b);
}

static void test_xattrs_and_lengths(void)
{
	struct tbuf b = {0};
	const uint8_t *x, *u;
	uint8_t val[1000];
	size_t vl;

	for (size_t i = 0; i < sizeof(val); i++)
		val[i] = (uint8_t)i; /* NUL, newline, '=' and every other byte */
	struct member_xattr xa[] = {{"user.comment", (const uint8_t *)"hello", 5},
				    {"user.binary", val, 256},
				    {"user.empty", (const uint8_t *)"", 0},
				    {"security.selinux", (const uint8_t *)"a=b\n", 4}};
	struct tw_member m = {.path = (const uint8_t *)"x",
			      .path_len = 1,
			      .type = MEMBER_REG,
			      .xattrs = xa,
			      .nxattrs = 4};
	CHECK_EQ(headers(&m, &b, &x, &u), 1536);
	CHECK(x && pax_str(x, "SCHILY.xattr.user.comment", "hello"));
	CHECK(x && pax_is(x, "SCHILY.xattr.user.binary", val, 256));
	CHECK(x && pax_str(x, "SCHILY.xattr.user.empty", ""));
	CHECK(x && pax_str(x, "SCHILY.xattr.security.selinux", "a=b\n"));
	CHECK(x && !pax_get(x, "path", &vl) && !pax_get(x, "mtime", &vl));
	/* the length prefix counts its own digits: records of 8 to 1002 bytes, across the
	 * boundaries where the prefix grows (9 -> 10, 99 -> 100, 999 -> 1000) */
	for (size_t n = 0; n <= 990; n++) {
		struct member_xattr one = {"user.a", val + 1,
					   n}; /* "LEN SCHILY.xattr.user.a=...\n" */
		m.xattrs = &one;
		m.nxattrs = 1;
		if (tw_header(&m, &b)) {
			tu_failures++;
			break;
		}
		size_t rl = (size_t)oct(b.p + 124, 11), body = 1 + 19 + 1 + n + 1;
		size_t want = body + (body + 2 < 100 ? 2 : body + 3 < 1000 ? 3 : 4);
		CHECK_EQ(rl, want);
		CHECK(pax_is(b.p, "SCHILY.xattr.user.a", val + 1, n));
	}
	tar_buf_free(&b);
}

static void test_refusals(void)
{
	struct tbuf b = {0};
	struct member_xattr bad = {"user.a=b", (const uint8_t *)"v", 1};
	struct member_xattr empty = {"", (const uint8_t *)"v", 1};
	struct tw_member ok = {.path = (const uint8_t *)"a", .path_len = 1, .type = MEMBER_REG};
	struct tw_member m;

	CHECK_EQ(tw_header(&ok, &b), 0);
	CHECK_EQ(b.len, 512);
	m = ok;
	m.path_len = 0;
	CHECK_EQ(tw_header(&m, &b), -EINVAL);
	CHECK_EQ(b.len, 0); /* nothing half-written */
	m = ok;
	m.path = (const uint8_t *)"a\0b";
	m.path_len = 3;
	CHECK_EQ(tw_header(&m, &b), -EINVAL);
	m = ok;
	m.mtime_nsec = 1000000000u;
	CHECK_EQ(tw_header(&m, &b), -EINVAL);
	m = ok;
	m.type = (enum member_type)'s';
	CHECK_EQ(tw_header(&m, &b), -EINVAL);
	m = ok;
	m.type = MEMBER_SYMLINK;
	CHECK_EQ(tw_header(&m, &b), -EINVAL); /* no target */
	m.link = (const uint8_t *)"a\0";
	m.link_len = 2;
	CHECK_EQ(tw_header(&m, &b), -EINVAL);
	m = ok;
	m.xattrs = &bad;
	m.nxattrs = 1;
	CHECK_EQ(tw_header(&m, &b), -EINVAL);
	m.xattrs = &empty;
	CHECK_EQ(tw_header(&m, &b), -EINVAL);
	tar_buf_free(&b);
}

/* ---- round trips -------------------------------------------------------------------------- */

/* An archive whose headers and small data are in memory and whose other bytes are zeros: an
 * 8 GiB member costs nothing. */
struct seg {
	uint64_t off;
	uint8_t *p;
	size_t n;
};

struct vtar {
	struct seg s[64];
	size_t n;
	uint64_t size;
};

static void vt_put(struct vtar *v, const void *p, size_t n)
{
	if (v->n == 64) {
		tu_failures++;
		return;
	}
	v->s[v->n].off = v->size;
	v->s[v->n].p = malloc(n ? n : 1);
	memcpy(v->s[v->n].p, p, n);
	v->s[v->n++].n = n;
	v->size += n;
}

static ssize_t vt_pread(void *opaque, void *buf, size_t len, uint64_t off)
{
	struct vtar *v = opaque;

	if (off >= v->size)
		return 0;
	if (len > v->size - off)
		len = (size_t)(v->size - off);
	memset(buf, 0, len);
	for (size_t i = 0; i < v->n; i++) {
		const struct seg *s = &v->s[i];
		if (s->off >= off + len || s->off + s->n <= off)
			continue;
		uint64_t a = s->off > off ? s->off : off;
		uint64_t e = s->off + s->n < off + len ? s->off + s->n : off + len;
		memcpy((uint8_t *)buf + (a - off), s->p + (a - s->off), (size_t)(e - a));
	}
	return (ssize_t)len;
}

static const struct src_ops vt_ops = {.pread = vt_pread};

static void vt_free(struct vtar *v)
{
	for (size_t i = 0; i < v->n; i++)
		free(v->s[i].p);
}

/* Adds m: its headers, its data (or zeros for as much as data lacks), the padding. */
static uint64_t vt_add(struct vtar *v, const struct tw_member *m, const void *data)
{
	struct tbuf b = {0};
	uint64_t at = v->size;

	CHECK_EQ(tw_header(m, &b), 0);
	vt_put(v, b.p, b.len);
	if (m->type == MEMBER_REG) {
		if (data)
			vt_put(v, data, (size_t)m->size);
		else
			v->size += m->size;
		v->size += tw_pad(m->size);
	}
	tar_buf_free(&b);
	return at;
}

/* What the parser reported of one member. */
struct got {
	uint8_t path[400], link[400];
	size_t path_len, link_len;
	struct arc_member m;
	char uname[64], gname[64];
	size_t nx;
	char xname[4][32];
	uint8_t xval[4][300];
	size_t xlen[4];
};

struct got_list {
	struct got g[32];
	size_t n;
};

static int on_entry(void *opaque, const struct arc_member *e)
{
	struct got_list *l = opaque;

	if (l->n == 32 || e->path_len >= 400 || e->link_len >= 400 || e->nxattrs > 4)
		return -E2BIG;
	struct got *g = &l->g[l->n++];
	memcpy(g->path, e->path, e->path_len);
	g->path_len = e->path_len;
	memcpy(g->link, e->link, e->link_len);
	g->link_len = e->link_len;
	g->m = *e;
	snprintf(g->uname, sizeof(g->uname), "%s", e->uname);
	snprintf(g->gname, sizeof(g->gname), "%s", e->gname);
	g->nx = e->nxattrs;
	for (size_t i = 0; i < e->nxattrs; i++) {
		snprintf(g->xname[i], sizeof(g->xname[i]), "%s", e->xattrs[i].name);
		g->xlen[i] = e->xattrs[i].len < 300 ? e->xattrs[i].len : 300;
		memcpy(g->xval[i], e->xattrs[i].value, g->xlen[i]);
	}
	return 0;
}

static unsigned long warnings;

static void count_warnings(int level, const char *msg, void *opaque)
{
	(void)opaque;
	if (level <= TFS_LOG_WARNING) {
		fprintf(stderr, "logged: %s\n", msg);
		warnings++;
	}
}

/* The member as the parser reports it equals what was written. */
static void same(const struct got *g, const struct tw_member *w, uint64_t hdr_off,
		 uint64_t data_off)
{
	bool dir = w->type == MEMBER_DIR && w->path[w->path_len - 1] != '/';
	bool has_link = w->type == MEMBER_SYMLINK || w->type == MEMBER_HARDLINK;

	CHECK_EQ(g->path_len, w->path_len + dir);
	CHECK(!memcmp(g->path, w->path, w->path_len));
	if (dir)
		CHECK_EQ(g->path[w->path_len], '/');
	CHECK_EQ(g->m.type, w->type);
	CHECK_EQ(g->m.mode, w->mode & 07777);
	CHECK_EQ(g->m.uid, w->uid);
	CHECK_EQ(g->m.gid, w->gid);
	CHECK(!strcmp(g->uname, w->uname ? w->uname : ""));
	CHECK(!strcmp(g->gname, w->gname ? w->gname : ""));
	CHECK_EQ(g->m.mtime_sec, w->mtime_sec);
	CHECK_EQ(g->m.mtime_nsec, w->mtime_nsec);
	CHECK_EQ(g->m.size, w->type == MEMBER_REG ? w->size : 0);
	CHECK_EQ(g->m.hdr_off, hdr_off);
	if (w->type == MEMBER_REG)
		CHECK_EQ(g->m.data_off, data_off);
	CHECK_EQ(g->link_len, has_link ? w->link_len : 0);
	if (has_link)
		CHECK(!memcmp(g->link, w->link, w->link_len));
	if (w->type == MEMBER_CHR || w->type == MEMBER_BLK) {
		CHECK_EQ(g->m.dev_major, w->dev_major);
		CHECK_EQ(g->m.dev_minor, w->dev_minor);
	}
	CHECK_EQ(g->nx, w->nxattrs);
	for (size_t i = 0; i < g->nx && i < w->nxattrs; i++) {
		CHECK(!strcmp(g->xname[i], w->xattrs[i].name));
		CHECK_EQ(g->xlen[i], w->xattrs[i].len);
		CHECK(!memcmp(g->xval[i], w->xattrs[i].value, w->xattrs[i].len));
	}
}

static void test_round_trip(void)
{
	static uint8_t longname[400], longlink[300], notutf[300], val[256], small[1000];
	struct vtar v = {0};
	struct got_list got = {0};
	uint64_t at[32];
	size_t n = 0;

	memset(longname, 'p', sizeof(longname));
	for (size_t i = 50; i < sizeof(longname); i += 50)
		longname[i] = '/';
	memset(longlink, 'k', sizeof(longlink));
	memset(notutf, 'q', sizeof(notutf));
	notutf[100] = '/';
	notutf[150] = '/';
	notutf[200] = 0xff;
	for (size_t i = 0; i < sizeof(val); i++)
		val[i] = (uint8_t)(255 - i);
	tu_fill(small, sizeof(small), 7, 1);
	struct member_xattr xa[] = {{"user.comment", (const uint8_t *)"hello", 5},
				    {"user.binary", val, 256}};
	char uname40[41];
	memset(uname40, 'w', 40);
	uname40[40] = 0;

	const struct tw_member w[] = {
	    {.path = (const uint8_t *)".",
	     .path_len = 1,
	     .type = MEMBER_DIR,
	     .mode = 0755,
	     .mtime_sec = 1600000000},
	    {.path = (const uint8_t *)"dir",
	     .path_len = 3,
	     .type = MEMBER_DIR,
	     .mode = 0750,
	     .uid = 12,
	     .gid = 34,
	     .uname = "u",
	     .gname = "g",
	     .mtime_sec = 1600000001,
	     .mtime_nsec = 123456789,
	     .xattrs = xa,
	     .nxattrs = 1},
	    {.path = (const uint8_t *)"dir/small",
	     .path_len = 9,
	     .type = MEMBER_REG,
	     .mode = 04755,
	     .size = 1000,
	     .mtime_sec = -86400 * 365,
	     .mtime_nsec = 5},
	    {.path = (const uint8_t *)"dir/empty",
	     .path_len = 9,
	     .type = MEMBER_REG,
	     .mode = 0,
	     .mtime_sec = 0},
	    {.path = longname,
	     .path_len = 350,
	     .type = MEMBER_REG,
	     .mode = 0644,
	     .size = 512,
	     .uid = 4000000000u,
	     .gid = 3000000,
	     .uname = uname40,
	     .gname = "staff",
	     .mtime_sec = 9000000000,
	     .xattrs = xa,
	     .nxattrs = 2},
	    {.path = notutf, .path_len = 210, .type = MEMBER_REG, .mode = 0600, .size = 1},
	    {.path = notutf, .path_len = 290, .type = MEMBER_REG, .mode = 0600, .size = 2},
	    {.path = (const uint8_t *)"dir/sym",
	     .path_len = 7,
	     .type = MEMBER_SYMLINK,
	     .mode = 0777,
	     .link = longlink,
	     .link_len = 250},
	    {.path = (const uint8_t *)"dir/hard",
	     .path_len = 8,
	     .type = MEMBER_HARDLINK,
	     .mode = 04755,
	     .link = (const uint8_t *)"dir/small",
	     .link_len = 9},
	    {.path = (const uint8_t *)"dev/null",
	     .path_len = 8,
	     .type = MEMBER_CHR,
	     .mode = 0666,
	     .dev_major = 1,
	     .dev_minor = 3},
	    {.path = (const uint8_t *)"dev/sda9",
	     .path_len = 8,
	     .type = MEMBER_BLK,
	     .mode = 0660,
	     .dev_major = 259,
	     .dev_minor = 3000000},
	    {.path = (const uint8_t *)"fifo", .path_len = 4, .type = MEMBER_FIFO, .mode = 0644},
	    {.path = (const uint8_t *)"huge",
	     .path_len = 4,
	     .type = MEMBER_REG,
	     .mode = 0644,
	     .size = GIB8 + 3,
	     .mtime_sec = 1,
	     .mtime_nsec = 999999999},
	    {.path = (const uint8_t *)"last",
	     .path_len = 4,
	     .type = MEMBER_REG,
	     .mode = 0644,
	     .size = 5},
	};
	n = sizeof(w) / sizeof(w[0]);
	for (size_t i = 0; i < n; i++) {
		const void *data = NULL;
		if (w[i].type == MEMBER_REG && w[i].size <= sizeof(small))
			data = small;
		at[i] = vt_add(&v, &w[i], data);
	}
	uint8_t zeros[TW_END_LEN] = {0};
	vt_put(&v, zeros, sizeof(zeros));
	CHECK_EQ(v.size % 512, 0);

	struct src *s = src_new(&vt_ops, &v, v.size);
	struct tar_callbacks cb = {.entry = on_entry, .opaque = &got};
	struct tar_stats st = {0};
	tfs_log_set_sink(count_warnings, NULL);
	warnings = 0;
	CHECK_EQ(tar_parse(s, &cb, &st), 0);
	CHECK_EQ(warnings, 0);
	CHECK(!st.truncated && !st.garbage && !st.bad_headers);
	CHECK_EQ(st.end_off, v.size);
	CHECK_EQ(got.n, n);
	for (size_t i = 0; i < n && i < got.n; i++) {
		/* the data starts after the last header block */
		struct tbuf b = {0};
		CHECK_EQ(tw_header(&w[i], &b), 0);
		same(&got.g[i], &w[i], at[i], at[i] + b.len);
		tar_buf_free(&b);
	}
	src_free(s);
	tfs_log_set_sink(NULL, NULL);
	vt_free(&v);
}

/* GNU tar and bsdtar read an archive made here: the same names, no message, the same bytes. */
static void test_real_tools(void)
{
	static uint8_t name[300], link[200];
	struct tbuf b = {0};
	uint8_t *ar = NULL, data[3000];
	size_t len = 0, cap = 1 << 16, outlen;
	const char *tools[] = {"tar", "bsdtar"};

	ar = calloc(1, cap);
	memset(name, 'a', sizeof(name));
	name[60] = name[130] = name[200] = '/';
	memset(link, 'b', sizeof(link));
	tu_fill(data, sizeof(data), 3, 1);
	struct member_xattr xa = {"user.note", (const uint8_t *)"v\n=\0x", 5};
	const struct tw_member w[] = {
	    {.path = (const uint8_t *)"top",
	     .path_len = 3,
	     .type = MEMBER_DIR,
	     .mode = 0755,
	     .mtime_sec = 1600000000,
	     .mtime_nsec = 5},
	    {.path = name,
	     .path_len = 280,
	     .type = MEMBER_REG,
	     .mode = 0644,
	     .size = 3000,
	     .uid = 3000000,
	     .gid = 5,
	     .mtime_sec = -5,
	     .mtime_nsec = 250000000,
	     .xattrs = &xa,
	     .nxattrs = 1},
	    {.path = (const uint8_t *)"top/s",
	     .path_len = 5,
	     .type = MEMBER_SYMLINK,
	     .mode = 0777,
	     .link = link,
	     .link_len = 150},
	    {.path = (const uint8_t *)"top/h",
	     .path_len = 5,
	     .type = MEMBER_HARDLINK,
	     .mode = 0644,
	     .link = name,
	     .link_len = 280},
	};
	for (size_t i = 0; i < sizeof(w) / sizeof(w[0]); i++) {
		CHECK_EQ(tw_header(&w[i], &b), 0);
		memcpy(ar + len, b.p, b.len);
		len += b.len;
		if (w[i].type == MEMBER_REG) {
			memcpy(ar + len, data, (size_t)w[i].size);
			len += (size_t)w[i].size + tw_pad(w[i].size);
		}
	}
	len += TW_END_LEN;
	tar_buf_free(&b);

	char want[1024];
	int n = snprintf(want, sizeof(want), "top/\n%.*s\ntop/s\ntop/h\n", 280, (char *)name);
	for (size_t t = 0; t < 2; t++) {
		char cmd[512];
		if (!tu_have(tools[t])) {
			fprintf(stderr, "%s is not installed: not checked\n", tools[t]);
			continue;
		}
		snprintf(cmd, sizeof(cmd), "%s -tf - 2>&1", tools[t]);
		uint8_t *out = tu_pipe(cmd, ar, len, &outlen);
		CHECK(out && outlen == (size_t)n && !memcmp(out, want, (size_t)n));
		if (out && (outlen != (size_t)n || memcmp(out, want, (size_t)n)))
			fprintf(stderr, "%s lists:\n%.*s\n", tools[t], (int)outlen, (char *)out);
		free(out);
		snprintf(cmd, sizeof(cmd), "%s -xOf - %.*s 2>/dev/null", tools[t], 280,
			 (char *)name);
		out = tu_pipe(cmd, ar, len, &outlen);
		CHECK(out && outlen == sizeof(data) && !memcmp(out, data, sizeof(data)));
		free(out);
	}
	free(ar);
}

int main(void)
{
	test_plain_header();
	test_limits();
	test_xattrs_and_lengths();
	test_refusals();
	test_round_trip();
	test_real_tools();
	return tu_exit();
}
