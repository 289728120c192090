/* The tar writer (tar_write.h): a member's ustar header, preceded by a pax 'x' header when a
 * field does not fit.
 *
 * It is built in two steps.  First the pax records are collected into a scratch buffer, each
 * field deciding for itself whether it fits its ustar field (the rules are tar_write.h's);
 * then, if there are records, the 'x' header and its data padded to a block are written, and
 * the ustar header last, its fields holding what fits.  A pax record is "LEN KEY=VALUE\n"
 * where LEN counts the whole record, its own digits included: the length is found by adding
 * the digits until their count stops changing.  The record order is GNU tar's habit (path and
 * link first, then the numbers, the times, the attributes); readers do not care.
 */
#include "convert/tar_write.h"

#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The ustar header: offset of each field (POSIX.1-2001, pax). */
#define W_NAME 0 /* 100 */
#define W_MODE 100
#define W_UID 108
#define W_GID 116
#define W_SIZE 124 /* 12 */
#define W_MTIME 136
#define W_CHKSUM 148
#define W_TYPE 156
#define W_LINK 157 /* 100 */
#define W_MAGIC 257
#define W_VERSION 263
#define W_UNAME 265 /* 32 */
#define W_GNAME 297
#define W_DEVMAJOR 329
#define W_DEVMINOR 337
#define W_PREFIX 345 /* 155 */

#define W_NAME_LEN 100
#define W_PREFIX_LEN 155
#define W_OWNER_LEN 32
#define W_MAX7 07777777ull	/* 7 octal digits: mode, ids, devices */
#define W_MAX11 077777777777ull /* 11 octal digits: size, mtime */

_Static_assert(W_PREFIX + W_PREFIX_LEN + 12 == TW_BLOCK, "ustar header layout");

static size_t digits(size_t n)
{
	size_t d = 1;

	while (n >= 10) {
		n /= 10;
		d++;
	}
	return d;
}

/* Appends the record "LEN KEY=VALUE\n"; the key is prefix followed by key (either may be ""). */
static int pax_add(struct tbuf *r, const char *prefix, const char *key, const void *val,
		   size_t vlen)
{
	size_t plen = strlen(prefix), klen = strlen(key);
	size_t body = plen + klen + vlen + 3; /* ' ', '=', '\n' */
	size_t d = digits(body), len;
	char num[24];
	int err;

	if (vlen > SIZE_MAX / 4)
		return -ENOMEM;
	while (digits(body + d) != d)
		d = digits(body + d);
	len = body + d;
	snprintf(num, sizeof(num), "%zu ", len);
	err = tar_buf_reserve(r, r->len + len);
	err = err ? err : tar_buf_put(r, num, strlen(num));
	err = err ? err : tar_buf_put(r, prefix, plen);
	err = err ? err : tar_buf_put(r, key, klen);
	err = err ? err : tar_buf_put(r, "=", 1);
	err = err ? err : tar_buf_put(r, val, vlen);
	return err ? err : tar_buf_put(r, "\n", 1);
}

static int pax_num(struct tbuf *r, const char *key, uint64_t v)
{
	char s[24];
	int n = snprintf(s, sizeof(s), "%" PRIu64, v);

	return pax_add(r, "", key, s, (size_t)n);
}

/* "SEC[.FRAC]" as POSIX writes a time: a negative one is the whole value's sign ("-1.5" is
 * -2 s + 0.5 s); the fraction loses its trailing zeros. */
static int pax_time(struct tbuf *r, const char *key, int64_t sec, uint32_t nsec)
{
	char s[48];
	uint64_t whole;
	uint32_t frac = nsec;
	bool neg = sec < 0;
	int n;

	if (neg && nsec) { /* -2 s + 0.25 s = -1.75 s */
		whole = (uint64_t)(-(sec + 1));
		frac = 1000000000u - nsec;
	} else {
		whole = neg ? (uint64_t)0 - (uint64_t)sec : (uint64_t)sec;
	}
	n = snprintf(s, sizeof(s), "%s%" PRIu64, neg ? "-" : "", whole);
	if (frac) {
		n += snprintf(s + n, sizeof(s) - (size_t)n, ".%09" PRIu32, frac);
		while (s[n - 1] == '0')
			n--;
	}
	return pax_add(r, "", key, s, (size_t)n);
}

/* Well-formed UTF-8 (no overlong forms, no surrogates, nothing past U+10FFFF). */
static bool is_utf8(const uint8_t *s, size_t n)
{
	size_t i = 0;

	while (i < n) {
		uint8_t c = s[i];
		size_t more;
		uint32_t cp, min;
		if (c < 0x80) {
			i++;
			continue;
		}
		if ((c & 0xe0) == 0xc0) {
			more = 1, cp = c & 0x1f, min = 0x80;
		} else if ((c & 0xf0) == 0xe0) {
			more = 2, cp = c & 0x0f, min = 0x800;
		} else if ((c & 0xf8) == 0xf0) {
			more = 3, cp = c & 0x07, min = 0x10000;
		} else {
			return false;
		}
		if (n - i <= more)
			return false;
		for (size_t k = 1; k <= more; k++) {
			if ((s[i + k] & 0xc0) != 0x80)
				return false;
			cp = cp << 6 | (s[i + k] & 0x3f);
		}
		if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
			return false;
		i += more + 1;
	}
	return true;
}

/* n - 1 zero-padded octal digits and a NUL; v must fit. */
static void octal(uint8_t *f, size_t n, uint64_t v)
{
	f[n - 1] = 0;
	for (size_t i = n - 1; i-- > 0;) {
		f[i] = (uint8_t)('0' + (v & 7));
		v >>= 3;
	}
}

static void set_chksum(uint8_t *h)
{
	unsigned sum = 0;

	memset(h + W_CHKSUM, ' ', 8);
	for (size_t i = 0; i < TW_BLOCK; i++)
		sum += h[i];
	octal(h + W_CHKSUM, 7, sum); /* six digits and a NUL; the space stays */
}

/* A ustar header's common part: name, mode, owner, size, mtime, type, magic. */
static void fill_header(uint8_t *h, const uint8_t *name, size_t name_len, uint32_t mode,
			uint64_t uid, uint64_t gid, uint64_t size, uint64_t mtime, char type)
{
	memset(h, 0, TW_BLOCK);
	memcpy(h + W_NAME, name, name_len < W_NAME_LEN ? name_len : W_NAME_LEN);
	octal(h + W_MODE, 8, mode & 07777);
	octal(h + W_UID, 8, uid);
	octal(h + W_GID, 8, gid);
	octal(h + W_SIZE, 12, size);
	octal(h + W_MTIME, 12, mtime);
	h[W_TYPE] = (uint8_t)type;
	memcpy(h + W_MAGIC, "ustar", 6); /* with its NUL */
	memcpy(h + W_VERSION, "00", 2);
}

static char type_flag(enum member_type t)
{
	switch (t) {
	case MEMBER_REG:
		return '0';
	case MEMBER_HARDLINK:
		return '1';
	case MEMBER_SYMLINK:
		return '2';
	case MEMBER_CHR:
		return '3';
	case MEMBER_BLK:
		return '4';
	case MEMBER_DIR:
		return '5';
	case MEMBER_FIFO:
		return '6';
	}
	return 0;
}

/* Where a name too long for the name field splits into prefix '/' name (ustar), or 0: the
 * last '/' that leaves at most 155 bytes before it and 1 to 100 after. */
static size_t prefix_split(const uint8_t *p, size_t n)
{
	if (n > W_PREFIX_LEN + 1 + W_NAME_LEN)
		return 0;
	for (size_t i = n - 1; i-- > 0;) {
		if (p[i] != '/')
			continue;
		if (n - i - 1 > W_NAME_LEN)
			return 0; /* the name part only grows to the left */
		if (i <= W_PREFIX_LEN && i > 0)
			return i;
	}
	return 0;
}

/* The 'x' header's name: DIR/PaxHeaders/BASE of the member's name (without a folder's '/'),
 * ./PaxHeaders/BASE at the top; only its first 100 bytes are written. */
static void pax_name(uint8_t *h, const uint8_t *p, size_t n)
{
	uint8_t name[W_NAME_LEN];
	size_t slash = n, len = 0;

	while (slash > 0 && p[slash - 1] != '/')
		slash--;
	const uint8_t *dir = slash ? p : (const uint8_t *)".";
	size_t dlen = slash ? slash - 1 : 1;
	static const char mid[] = "/PaxHeaders/";
	const struct {
		const void *s;
		size_t n;
	} parts[] = {{dir, dlen}, {mid, sizeof(mid) - 1}, {p + slash, n - slash}};

	for (size_t i = 0; i < 3 && len < W_NAME_LEN; i++) {
		size_t k = parts[i].n < W_NAME_LEN - len ? parts[i].n : W_NAME_LEN - len;
		memcpy(name + len, parts[i].s, k);
		len += k;
	}
	memcpy(h + W_NAME, name, len);
}

static int check_member(const struct tw_member *m)
{
	if (!m->path_len || memchr(m->path, 0, m->path_len) || m->mtime_nsec >= 1000000000u ||
	    !type_flag(m->type))
		return -EINVAL;
	if (m->type == MEMBER_SYMLINK || m->type == MEMBER_HARDLINK)
		if (!m->link_len || memchr(m->link, 0, m->link_len))
			return -EINVAL;
	for (size_t i = 0; i < m->nxattrs; i++)
		if (!m->xattrs[i].name[0] || strchr(m->xattrs[i].name, '='))
			return -EINVAL;
	return 0;
}

/* The pax records m needs (into r) and what its ustar fields hold (into h). */
static int build(const struct tw_member *m, const uint8_t *name, size_t name_len, uint8_t *h,
		 struct tbuf *r)
{
	bool is_link = m->type == MEMBER_SYMLINK || m->type == MEMBER_HARDLINK;
	bool is_dev = m->type == MEMBER_CHR || m->type == MEMBER_BLK;
	uint64_t size = m->type == MEMBER_REG ? m->size : 0;
	const char *un = m->uname ? m->uname : "", *gn = m->gname ? m->gname : "";
	size_t unl = strlen(un), gnl = strlen(gn), split = 0;
	bool binary = false, long_name = name_len > W_NAME_LEN;
	bool long_link = is_link && m->link_len > W_NAME_LEN;
	bool time_rec = m->mtime_nsec || m->mtime_sec < 0 || (uint64_t)m->mtime_sec > W_MAX11;
	int err = 0;

	if (long_name && !is_utf8(name, name_len))
		split = prefix_split(name, name_len);
	if (long_name && !split)
		binary |= !is_utf8(name, name_len);
	if (long_link)
		binary |= !is_utf8(m->link, m->link_len);
	if (unl >= W_OWNER_LEN)
		binary |= !is_utf8((const uint8_t *)un, unl);
	if (gnl >= W_OWNER_LEN)
		binary |= !is_utf8((const uint8_t *)gn, gnl);

	if (binary)
		err = pax_add(r, "", "hdrcharset", "BINARY", 6);
	if (!err && long_name && !split)
		err = pax_add(r, "", "path", name, name_len);
	if (!err && long_link)
		err = pax_add(r, "", "linkpath", m->link, m->link_len);
	if (!err && size > W_MAX11)
		err = pax_num(r, "size", size);
	if (!err && m->uid > W_MAX7)
		err = pax_num(r, "uid", m->uid);
	if (!err && m->gid > W_MAX7)
		err = pax_num(r, "gid", m->gid);
	if (!err && unl >= W_OWNER_LEN)
		err = pax_add(r, "", "uname", un, unl);
	if (!err && gnl >= W_OWNER_LEN)
		err = pax_add(r, "", "gname", gn, gnl);
	if (!err && time_rec)
		err = pax_time(r, "mtime", m->mtime_sec, m->mtime_nsec);
	if (!err && is_dev && m->dev_major > W_MAX7)
		err = pax_num(r, "SCHILY.devmajor", m->dev_major);
	if (!err && is_dev && m->dev_minor > W_MAX7)
		err = pax_num(r, "SCHILY.devminor", m->dev_minor);
	for (size_t i = 0; !err && i < m->nxattrs; i++)
		err = pax_add(r, "SCHILY.xattr.", m->xattrs[i].name, m->xattrs[i].value,
			      m->xattrs[i].len);
	if (err)
		return err;

	uint64_t mt = m->mtime_sec < 0 ? 0 : (uint64_t)m->mtime_sec;
	fill_header(h, split ? name + split + 1 : name, split ? name_len - split - 1 : name_len,
		    m->mode, m->uid > W_MAX7 ? 0 : m->uid, m->gid > W_MAX7 ? 0 : m->gid,
		    size > W_MAX11 ? 0 : size, mt > W_MAX11 ? W_MAX11 : mt, type_flag(m->type));
	if (split)
		memcpy(h + W_PREFIX, name, split);
	if (is_link)
		memcpy(h + W_LINK, m->link, m->link_len < W_NAME_LEN ? m->link_len : W_NAME_LEN);
	if (unl < W_OWNER_LEN)
		memcpy(h + W_UNAME, un, unl);
	if (gnl < W_OWNER_LEN)
		memcpy(h + W_GNAME, gn, gnl);
	octal(h + W_DEVMAJOR, 8, is_dev && m->dev_major <= W_MAX7 ? m->dev_major : 0);
	octal(h + W_DEVMINOR, 8, is_dev && m->dev_minor <= W_MAX7 ? m->dev_minor : 0);
	set_chksum(h);
	return 0;
}

int tw_header(const struct tw_member *m, struct tbuf *out)
{
	struct tbuf recs = {0};
	uint8_t h[TW_BLOCK];
	uint8_t *name = NULL;
	size_t name_len = m->path_len;
	bool slash = m->type == MEMBER_DIR && m->path_len && m->path[m->path_len - 1] != '/';
	int err = check_member(m);

	out->len = 0;
	if (err)
		return err;
	name = malloc(name_len + 1);
	if (!name)
		return -ENOMEM;
	memcpy(name, m->path, m->path_len);
	if (slash)
		name[name_len++] = '/';
	err = build(m, name, name_len, h, &recs);
	if (!err && recs.len) {
		uint8_t x[TW_BLOCK];
		uint64_t mt = m->mtime_sec < 0 ? 0 : (uint64_t)m->mtime_sec;
		size_t pad = tw_pad(recs.len);

		fill_header(x, (const uint8_t *)"", 0, 0644, 0, 0, recs.len,
			    mt > W_MAX11 ? W_MAX11 : mt, 'x');
		pax_name(x, name, slash ? name_len - 1 : name_len);
		set_chksum(x);
		/* out->len is 0 */
		err = tar_buf_reserve(out, TW_BLOCK + recs.len + pad + TW_BLOCK);
		err = err ? err : tar_buf_put(out, x, TW_BLOCK);
		err = err ? err : tar_buf_put(out, recs.p, recs.len);
		if (!err) {
			memset(out->p + out->len, 0, pad);
			out->len += pad;
		}
	}
	err = err ? err : tar_buf_put(out, h, TW_BLOCK);
	if (err)
		out->len = 0;
	tar_buf_free(&recs);
	free(name);
	return err;
}
