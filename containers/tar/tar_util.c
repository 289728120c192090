/* The tar parser's leaf helpers (tar_int.h): growable buffers and arrays, numeric header fields
 * and PAX decimals, the parser's forward-only read, and the member bookkeeping every part of
 * the parser shares (where a member starts, a truncated archive, a damaged member).
 *
 * They sit below tar.c, tar_pax.c, tar_sparse.c and tar_xattr.c and call none of them: the
 * parts of the parser take the parser (its source and state) as a parameter and call down
 * into this file, never back into the parse loop, so no two files call each other.
 */
#include "containers/tar/tar_int.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"

/* ---- buffers ---------------------------------------------------------------------------- */

int tar_buf_reserve(struct tbuf *b, size_t want)
{
	size_t cap = b->cap ? b->cap : 512;
	uint8_t *n;

	if (want <= b->cap)
		return 0;
	while (cap < want) {
		if (cap > SIZE_MAX / 2)
			return -ENOMEM;
		cap *= 2;
	}
	n = realloc(b->p, cap);
	if (!n)
		return -ENOMEM;
	b->p = n;
	b->cap = cap;
	return 0;
}

int tar_buf_put(struct tbuf *b, const void *data, size_t len)
{
	int err = tar_buf_reserve(b, b->len + len);

	if (err)
		return err;
	if (len)
		memcpy(b->p + b->len, data, len);
	b->len += len;
	return 0;
}

/* Sets b to the bytes of data up to the first NUL (at most len), NUL-terminated; b->len
 * excludes the terminator. */
int tar_buf_setz(struct tbuf *b, const void *data, size_t len)
{
	const uint8_t *nul = len ? memchr(data, 0, len) : NULL;
	int err;

	if (nul)
		len = (size_t)(nul - (const uint8_t *)data);
	b->len = 0;
	err = tar_buf_reserve(b, len + 1);
	if (err)
		return err;
	if (len)
		memcpy(b->p, data, len);
	b->p[len] = 0;
	b->len = len;
	return 0;
}

void tar_buf_free(struct tbuf *b)
{
	free(b->p);
	b->p = NULL;
	b->len = b->cap = 0;
}

/* Makes room for want elements of size elem in *arr (capacity *cap). */
int tar_grow(void **arr, size_t *cap, size_t want, size_t elem)
{
	size_t n = *cap ? *cap : 16;
	void *a;

	if (want <= *cap)
		return 0;
	while (n < want) {
		if (n > SIZE_MAX / 2 / elem)
			return -ENOMEM;
		n *= 2;
	}
	a = realloc(*arr, n * elem);
	if (!a)
		return -ENOMEM;
	*arr = a;
	*cap = n;
	return 0;
}

/* Copies a name into out for a log message, with unprintable bytes as '?'. */
const char *tar_printable(const uint8_t *s, size_t n, char *out, size_t outsz)
{
	size_t i;

	for (i = 0; i < n && i + 1 < outsz; i++)
		out[i] = s[i] >= 0x20 && s[i] < 0x7f ? (char)s[i] : '?';
	out[i] = 0;
	return out;
}

/* ---- numbers ---------------------------------------------------------------------------- */

static bool is_blank(uint8_t c)
{
	return c == ' ' || (c >= '\t' && c <= '\r');
}

/* Parses a numeric header field as GNU tar does (list.c, from_header): one leading NUL is
 * skipped (a tar of old wrote it when the field before overflowed), then blanks; octal digits
 * up to the first other byte, which must be a NUL or a blank -- what follows it is not
 * looked at (old tars and star leave bytes there); no digits at all read as 0 (GNU tar
 * calls a field of blanks an error, bsdtar reads 0: bsdtar is followed, it extracts the
 * member).  Base-256: the first byte's high bit set, bit 6 the sign, two's complement.
 * Returns 0, -EINVAL if malformed, or -ERANGE if the value does not fit in an int64. */
int tar_num_field(const uint8_t *f, size_t n, int64_t *out)
{
	uint64_t v;
	size_t i = 0;

	if (f[0] & 0x80) {
		bool neg = f[0] & 0x40;
		uint8_t ext = neg ? 0xff : 0;

		v = neg ? UINT64_MAX : 0;
		for (i = 0; i < n; i++) {
			uint8_t b = f[i];

			if (i == 0)
				b = neg ? b | 0x80 : b & 0x7f;
			if (i + 8 < n) {
				if (b != ext)
					return -ERANGE; /* does not fit in 64 bits */
				continue;
			}
			v = v << 8 | b;
		}
		if (((v >> 63) != 0) != neg)
			return -ERANGE;
		*out = (int64_t)v;
		return 0;
	}
	if (n && f[0] == 0)
		i = 1;
	while (i < n && is_blank(f[i]))
		i++;
	v = 0;
	for (; i < n && f[i] >= '0' && f[i] <= '7'; i++) {
		if (v >> 60)
			return -ERANGE;
		v = v << 3 | (uint64_t)(f[i] - '0');
	}
	if (i < n && f[i] != 0 && !is_blank(f[i]))
		return -EINVAL;
	*out = (int64_t)v;
	return 0;
}

/* An unsigned decimal of at most max.  0, or -EINVAL. */
int tar_dec_u64(const uint8_t *v, size_t n, uint64_t max, uint64_t *out)
{
	uint64_t x = 0;

	if (!n)
		return -EINVAL;
	for (size_t i = 0; i < n; i++) {
		if (v[i] < '0' || v[i] > '9')
			return -EINVAL;
		if (x > (max - (uint64_t)(v[i] - '0')) / 10)
			return -EINVAL;
		x = x * 10 + (uint64_t)(v[i] - '0');
	}
	*out = x;
	return 0;
}

/* ---- reading ---------------------------------------------------------------------------- */

/* Reads up to len bytes at off, never behind the previous read (the source may be a
 * forward-only stream).  Returns the bytes read (short only at the end) or -errno. */
ssize_t tar_read(struct parser *p, void *buf, size_t len, uint64_t off)
{
	ssize_t n;

	if (off < p->rpos) {
		tfs_log(TFS_LOG_ERR, "tar: internal error: read at %" PRIu64 " behind %" PRIu64,
			off, p->rpos);
		return -EIO;
	}
	n = src_pread(p->s, buf, len, off);
	if (n < 0)
		return n;
	p->rpos = off + len;
	return n;
}

/* ---- the member being read -------------------------------------------------------------- */

bool tar_past_end(const struct parser *p, uint64_t start, uint64_t len)
{
	return p->srcsize != SRC_SIZE_UNKNOWN && (start > p->srcsize || len > p->srcsize - start);
}

void tar_member_reset(struct parser *p)
{
	p->in_member = false;
	p->damaged = false;
	p->has_longname = false;
	p->has_longlink = false;
	p->local.data.len = 0;
	p->local.n = 0;
}

void tar_member_start(struct parser *p, uint64_t off)
{
	if (!p->in_member) {
		p->in_member = true;
		p->m_off = off;
	}
}

/* The source ends inside the member (or headers) that started at p->m_off or hoff: not
 * reported, parsing stops.  Returns 0 (stop). */
int tar_truncated(struct parser *p, uint64_t hoff, uint64_t need)
{
	uint64_t start = p->in_member ? p->m_off : hoff;

	if (p->srcsize != SRC_SIZE_UNKNOWN)
		tfs_log(TFS_LOG_WARNING,
			"tar: truncated archive: the member at offset %" PRIu64
			" needs data up to offset %" PRIu64 " but the archive ends at %" PRIu64,
			start, need, p->srcsize);
	else
		tfs_log(TFS_LOG_WARNING,
			"tar: truncated archive: the member at offset %" PRIu64
			" needs data up to offset %" PRIu64 " but the archive ends before",
			start, need);
	p->st.truncated = true;
	p->st.end_off = start;
	return 0;
}

/* Marks the member damaged (reason already in msg) and returns -EINVAL. */
int tar_damage(struct parser *p, const char *msg)
{
	tfs_log(TFS_LOG_WARNING, "tar: damaged member at offset %" PRIu64 ": %s; member skipped",
		p->m_off, msg);
	p->damaged = true;
	return -EINVAL;
}
