/* The tar parser: one forward pass over the source, one header block at a time.
 *
 * The same parser runs over a plain file, where skipping a member must cost nothing (indexing
 * a 2 GB tar reads its headers only), and over a forward-only decompressed stream, where a
 * read behind the current position fails with -ESPIPE.  So every read goes through p_read(),
 * which never goes backwards, and member data is skipped by arithmetic, never read -- except
 * where the format keeps metadata in the data area: L/K long names, x/g PAX records, old GNU
 * sparse extension blocks and the PAX sparse 1.0 map.  On a source of unknown size (a
 * stream) the last byte of each reported member is read to prove the member is complete.
 *
 * A member is a run of header blocks: optional L/K (GNU long name / link name), x (PAX
 * per-file records) and g (PAX global records, which outlive the member), then the member's
 * own header.  The metadata is kept in struct parser until the member header arrives; then
 * the PAX records are replayed, global ones first, into a struct pax_attrs whose values
 * override the header fields.  All state lives in one struct on tar_parse()'s stack, so
 * parses in different threads share nothing.
 *
 * Conformance: a member GNU tar or bsdtar extracts is reported, with what GNU tar extracts
 * (where the two differ, GNU tar is followed and the place says so).  So numeric fields are
 * read as GNU tar reads them (num_field), only regular files have data (a size in a
 * directory, link or device header is ignored, as by GNU tar's extraction), a malformed PAX
 * record ends its header but not the member, and an odd sparse map is read the way bsdtar
 * reads it (sparse_finish) where GNU tar gives up.  The archive ends at its first zero
 * block, as for both tools, unless the caller asks to read on (tar --ignore-zeros).
 *
 * Damage: every allocation the archive can drive is capped (TAR_MAX_META bytes for long
 * names and PAX payloads, TAR_MAX_SPARSE extents, TAR_MAX_XATTRS, TAR_MAX_GLOBAL records).  A
 * member over a cap, or whose metadata makes no sense (a sparse map with a bad number, say),
 * is "damaged": a warning says why and where, and the member is skipped by its stored size.
 * A block that is not a header starts a resynchronisation scan for the next valid header
 * (GNU tar does the same), unless it follows the end-of-archive zero blocks, where it is
 * trailing garbage and ends the parse.
 */
#include "tar.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../common/log.h"

/* The longest L/K name or x/g payload: GNU tar has no limit, bsdtar stops at 1 MiB, real
 * headers stay under a few MiB (macOS resource forks as xattrs). */
#define TAR_MAX_META (64u << 20)
#define TAR_MAX_SPARSE (1u << 20)    /* most extents in one sparse map (16 MiB of tar_sparse) */
#define TAR_MAX_XATTRS 4096	     /* most xattr records per member */
#define TAR_MAX_GLOBAL 256	     /* most distinct keywords kept from g headers */
#define TAR_PROGRESS_EVERY 256	     /* members between progress calls */
#define TAR_PROBE_ZEROS (256u << 10) /* tar_probe reads at most this many leading zeros */
#define TAR_LOOKAHEAD (1u << 20)     /* bytes looked at after the end-of-archive marker */

/* Header fields: offset and length.  POSIX ustar; GNU and star variants noted. */
#define H_NAME 0 /* 100 */
#define H_MODE 100
#define H_UID 108
#define H_GID 116
#define H_SIZE 124  /* 12 */
#define H_MTIME 136 /* 12 */
#define H_CHKSUM 148
#define H_TYPE 156
#define H_LINK 157 /* 100 */
#define H_MAGIC 257
#define H_UNAME 265 /* 32 */
#define H_GNAME 297 /* 32 */
#define H_DEVMAJOR 329
#define H_DEVMINOR 337
#define H_PREFIX 345	 /* ustar: 155 bytes; star: 131 bytes, then atime/ctime */
#define H_STAR_MAGIC 508 /* star: "tar\0" */
#define G_SPARSE 386	 /* GNU: 4 x (offset[12], numbytes[12]) */
#define G_ISEXT 482	 /* GNU: an extension block follows */
#define G_REALSIZE 483	 /* GNU: 12 */
#define G_EXT_ISEXT 504	 /* GNU extension block: 21 entries, then isextended */

_Static_assert(TAR_BLOCK == 512, "tar blocks are 512 bytes");
_Static_assert(G_SPARSE + 4 * 24 == G_ISEXT, "old GNU sparse header layout");
_Static_assert(21 * 24 == G_EXT_ISEXT, "old GNU sparse extension layout");

/* A growable byte buffer. */
struct tbuf {
	uint8_t *p;
	size_t len, cap;
};

/* One PAX record "key=value": offsets into the payload buffer of its set. */
struct pax_rec {
	size_t koff, klen, voff, vlen;
};

/* The records of x headers (one member) or of g headers (all later members). */
struct pax_set {
	struct tbuf data;
	struct pax_rec *rec;
	size_t n, cap;
};

/* An xattr record as found (name and value still encoded for LIBARCHIVE.xattr.*). */
struct xref {
	const uint8_t *name, *val;
	size_t nlen, vlen;
	bool encoded;
};

/* A decoded xattr: offsets into parser.xdata. */
struct xtmp {
	size_t noff, voff, vlen;
};

enum {
	A_PATH = 1 << 0,
	A_LINK = 1 << 1,
	A_SIZE = 1 << 2,
	A_UID = 1 << 3,
	A_GID = 1 << 4,
	A_UNAME = 1 << 5,
	A_GNAME = 1 << 6,
	A_MTIME = 1 << 7,
	A_DEVMAJOR = 1 << 8,
	A_DEVMINOR = 1 << 9,
	A_SPNAME = 1 << 10,
	A_SPREAL = 1 << 11,
	A_SPMAJOR = 1 << 12,
	A_SPMINOR = 1 << 13,
	A_SPNBLOCKS = 1 << 14,
};

/* What the PAX records of one member say.  String pointers point into the pax sets, which
 * do not change while the member is built. */
struct pax_attrs {
	unsigned has; /* A_* */
	const uint8_t *path, *link, *uname, *gname, *spname;
	size_t path_len, link_len, uname_len, gname_len, spname_len;
	uint64_t size, uid, gid, devmajor, devminor;
	int64_t mtime_sec;
	uint32_t mtime_nsec;
	uint64_t sp_real, sp_major, sp_minor, sp_nblocks;
	bool sp_old;	    /* a GNU sparse 0.0/0.1 keyword was seen */
	bool sp_want_bytes; /* GNU.sparse.offset seen, its numbytes not yet */
};

struct parser {
	struct src *s;
	const struct tar_callbacks *cb;
	struct tar_stats st;
	uint64_t srcsize; /* src_size(), maybe SRC_SIZE_UNKNOWN */
	uint64_t off;	  /* next block to look at */
	uint64_t rpos;	  /* end of the last read: no read may start before it */
	bool seen_header; /* a valid header has been seen */
	bool after_end;	  /* zero blocks seen since the last header */
	bool resync;	  /* looking for a valid header after a bad one */
	uint8_t blk[TAR_BLOCK];
	uint8_t peek[TAR_BLOCK]; /* a block read ahead at peek_off (peek_len bytes of it) */
	uint64_t peek_off;
	size_t peek_len;
	bool has_peek;

	/* The member being assembled from its header blocks. */
	bool in_member;
	bool damaged; /* skip it (the reason was logged) */
	uint64_t m_off;
	struct tbuf longname, longlink;
	bool has_longname, has_longlink;
	struct pax_set local, global, gnew;

	/* Built per member, reused. */
	struct tar_sparse *sp;
	size_t nsp, capsp;
	struct xref *xr;
	size_t nxr, capxr;
	bool xr_warned;
	struct tbuf xdata;
	struct xtmp *xt;
	size_t capxt;
	struct tar_xattr *xa;
	size_t capxa;
	struct tbuf path, link, uname, gname;
};

/* ---- small helpers ---------------------------------------------------------------------- */

static int tbuf_reserve(struct tbuf *b, size_t want)
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

static int tbuf_put(struct tbuf *b, const void *data, size_t len)
{
	int err = tbuf_reserve(b, b->len + len);

	if (err)
		return err;
	if (len)
		memcpy(b->p + b->len, data, len);
	b->len += len;
	return 0;
}

/* Sets b to the bytes of data up to the first NUL (at most len), NUL-terminated; b->len
 * excludes the terminator. */
static int tbuf_setz(struct tbuf *b, const void *data, size_t len)
{
	const uint8_t *nul = len ? memchr(data, 0, len) : NULL;
	int err;

	if (nul)
		len = (size_t)(nul - (const uint8_t *)data);
	b->len = 0;
	err = tbuf_reserve(b, len + 1);
	if (err)
		return err;
	if (len)
		memcpy(b->p, data, len);
	b->p[len] = 0;
	b->len = len;
	return 0;
}

static void tbuf_free(struct tbuf *b)
{
	free(b->p);
	b->p = NULL;
	b->len = b->cap = 0;
}

/* Makes room for want elements of size elem in *arr (capacity *cap). */
static int grow(void **arr, size_t *cap, size_t want, size_t elem)
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

static uint64_t pad_block(uint64_t n)
{
	return (n + TAR_BLOCK - 1) & ~(uint64_t)(TAR_BLOCK - 1);
}

static bool is_zero(const uint8_t *b, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (b[i])
			return false;
	return true;
}

/* Copies a name into out for a log message, with unprintable bytes as '?'. */
static const char *printable(const uint8_t *s, size_t n, char *out, size_t outsz)
{
	size_t i;

	for (i = 0; i < n && i + 1 < outsz; i++)
		out[i] = s[i] >= 0x20 && s[i] < 0x7f ? (char)s[i] : '?';
	out[i] = 0;
	return out;
}

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
static int num_field(const uint8_t *f, size_t n, int64_t *out)
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

/* A numeric field that must not be negative; malformed or negative values read as 0 (GNU
 * tar reports an error and leaves the value alone: a uid or gid of the extracting user). */
static uint64_t num_field_u(const uint8_t *f, size_t n)
{
	int64_t v;

	return num_field(f, n, &v) == 0 && v > 0 ? (uint64_t)v : 0;
}

bool tar_header_valid(const uint8_t *block)
{
	uint64_t stored = 0;
	int64_t ssum = 0;
	uint64_t usum = 0;
	size_t i = H_CHKSUM;

	while (i < H_CHKSUM + 8 && block[i] == ' ')
		i++;
	for (; i < H_CHKSUM + 8 && block[i] >= '0' && block[i] <= '7'; i++)
		stored = stored << 3 | (uint64_t)(block[i] - '0');
	/* no digits (a field of NULs) reads as 0, as for GNU tar and bsdtar: only a block whose
	 * signed byte sum is 0 passes then (never a zero block: its sum is 256) */
	for (; i < H_CHKSUM + 8; i++)
		if (block[i] != ' ' && block[i] != 0)
			return false;
	for (i = 0; i < TAR_BLOCK; i++) {
		uint8_t c = i >= H_CHKSUM && i < H_CHKSUM + 8 ? ' ' : block[i];

		usum += c;
		ssum += (int8_t)c;
	}
	return stored == usum || (ssum >= 0 && stored == (uint64_t)ssum);
}

bool tar_probe(struct src *s)
{
	uint8_t blk[TAR_BLOCK];
	uint64_t off;

	for (off = 0; off < TAR_PROBE_ZEROS; off += TAR_BLOCK) {
		ssize_t n = src_pread(s, blk, sizeof(blk), off);

		if (n < 0)
			return false;
		if (n < TAR_BLOCK)
			return off >= 2 * TAR_BLOCK && is_zero(blk, (size_t)n);
		if (!is_zero(blk, sizeof(blk)))
			return tar_header_valid(blk);
	}
	return true; /* that many zeros: an empty archive (tar_parse tells the rest) */
}

/* ---- reading ---------------------------------------------------------------------------- */

/* Reads up to len bytes at off, never behind the previous read (the source may be a
 * forward-only stream).  Returns the bytes read (short only at the end) or -errno. */
static ssize_t p_read(struct parser *p, void *buf, size_t len, uint64_t off)
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

/* Reads the block at off ahead of the parse loop (which takes it from p->peek instead of
 * reading it again) and says whether it is a header, a zero block or the end.  0 or -errno. */
static int peek_block(struct parser *p, uint64_t off, bool *next_is_header)
{
	ssize_t n = p_read(p, p->peek, TAR_BLOCK, off);

	if (n < 0)
		return (int)n;
	p->peek_off = off;
	p->peek_len = (size_t)n;
	p->has_peek = true;
	*next_is_header = n < TAR_BLOCK || is_zero(p->peek, TAR_BLOCK) || tar_header_valid(p->peek);
	return 0;
}

static bool past_end(const struct parser *p, uint64_t start, uint64_t len)
{
	return p->srcsize != SRC_SIZE_UNKNOWN && (start > p->srcsize || len > p->srcsize - start);
}

static void member_reset(struct parser *p)
{
	p->in_member = false;
	p->damaged = false;
	p->has_longname = false;
	p->has_longlink = false;
	p->local.data.len = 0;
	p->local.n = 0;
}

static void member_start(struct parser *p, uint64_t off)
{
	if (!p->in_member) {
		p->in_member = true;
		p->m_off = off;
	}
}

/* The source ends inside the member (or headers) that started at p->m_off or hoff: not
 * reported, parsing stops.  Returns 0 (stop). */
static int truncated(struct parser *p, uint64_t hoff, uint64_t need)
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
static int damage(struct parser *p, const char *msg)
{
	tfs_log(TFS_LOG_WARNING, "tar: damaged member at offset %" PRIu64 ": %s; member skipped",
		p->m_off, msg);
	p->damaged = true;
	return -EINVAL;
}

/* ---- PAX records ------------------------------------------------------------------------ */

static bool key_is(const uint8_t *k, size_t kl, const char *s)
{
	size_t n = strlen(s);

	return kl == n && !memcmp(k, s, n);
}

static bool key_prefix(const uint8_t *k, size_t kl, const char *s)
{
	size_t n = strlen(s);

	return kl > n && !memcmp(k, s, n);
}

/* Splits the records in ps->data from byte start on ("LEN KEY=VALUE\n", LEN counting the
 * whole record) into ps->rec.  Returns 0, -EINVAL at the first malformed record (*bad = its
 * offset in data; the records before it are kept), or -ENOMEM. */
static int pax_split(struct pax_set *ps, size_t start, size_t *bad)
{
	const uint8_t *d = ps->data.p;
	size_t pos = start, end = ps->data.len;

	while (pos < end) {
		size_t len = 0, i = pos, k;
		const uint8_t *eq;

		if (d[pos] == 0 && is_zero(d + pos, end - pos))
			break; /* NUL padding after the last record */
		for (; i < end && d[i] >= '0' && d[i] <= '9'; i++) {
			len = len * 10 + (size_t)(d[i] - '0');
			if (len > end - pos)
				goto bad;
		}
		if (i == pos || i >= end || d[i] != ' ' || len < i - pos + 4)
			goto bad;
		if (d[pos + len - 1] != '\n')
			goto bad;
		k = i + 1;
		eq = memchr(d + k, '=', pos + len - 1 - k);
		if (!eq || eq == d + k)
			goto bad;
		if (grow((void **)&ps->rec, &ps->cap, ps->n + 1, sizeof(*ps->rec)))
			return -ENOMEM;
		ps->rec[ps->n].koff = k;
		ps->rec[ps->n].klen = (size_t)(eq - (d + k));
		ps->rec[ps->n].voff = (size_t)(eq + 1 - d);
		ps->rec[ps->n].vlen = pos + len - 1 - ps->rec[ps->n].voff;
		ps->n++;
		pos += len;
	}
	return 0;
bad:
	*bad = pos;
	return -EINVAL;
}

/* An unsigned decimal of at most max.  0, or -EINVAL. */
static int dec_u64(const uint8_t *v, size_t n, uint64_t max, uint64_t *out)
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

/* A PAX time: [-]SECONDS[.FRACTION].  Negative times with a fraction are floored, so
 * "-1.25" is sec -2, nsec 750000000.  What follows the number is ignored, as by GNU tar and
 * bsdtar ("1748089464.951928467a" is that time).  0, or -EINVAL (no number, or out of
 * range). */
static int pax_time(const uint8_t *v, size_t n, int64_t *sec, uint32_t *nsec)
{
	size_t i = 0, start;
	uint64_t s = 0;
	uint32_t ns = 0;
	bool neg = false;

	if (n && v[0] == '-') {
		neg = true;
		i = 1;
	}
	for (start = i; i < n && v[i] >= '0' && v[i] <= '9'; i++) {
		if (s > (uint64_t)(INT64_MAX - 10) / 10)
			return -EINVAL;
		s = s * 10 + (uint64_t)(v[i] - '0');
	}
	if (i == start)
		return -EINVAL;
	if (i < n && v[i] == '.') {
		unsigned digits = 0;

		for (i++; i < n && v[i] >= '0' && v[i] <= '9'; i++) {
			if (digits < 9) {
				ns = ns * 10 + (uint32_t)(v[i] - '0');
				digits++;
			}
		}
		for (; digits < 9; digits++)
			ns *= 10;
	}
	if (neg && ns) {
		*sec = -(int64_t)s - 1;
		*nsec = 1000000000u - ns;
	} else {
		*sec = neg ? -(int64_t)s : (int64_t)s;
		*nsec = ns;
	}
	return 0;
}

static int sparse_push(struct parser *p, uint64_t off, uint64_t len)
{
	if (p->nsp >= TAR_MAX_SPARSE)
		return -E2BIG;
	if (grow((void **)&p->sp, &p->capsp, p->nsp + 1, sizeof(*p->sp)))
		return -ENOMEM;
	p->sp[p->nsp].off = off;
	p->sp[p->nsp].len = len;
	p->nsp++;
	return 0;
}

/* GNU.sparse.map (0.1): "OFF,LEN,OFF,LEN,...". */
static int sparse_map01(struct parser *p, const uint8_t *v, size_t n)
{
	uint64_t num[2];
	size_t i = 0, k = 0;

	while (i < n) {
		size_t j = i;
		int err;

		while (j < n && v[j] != ',')
			j++;
		if (dec_u64(v + i, j - i, UINT64_MAX, &num[k]))
			return damage(p, "bad number in GNU.sparse.map");
		if (++k == 2) {
			err = sparse_push(p, num[0], num[1]);
			if (err == -E2BIG)
				return damage(p, "too many extents in GNU.sparse.map");
			if (err)
				return err;
			k = 0;
		}
		i = j + 1;
		if (j < n && i == n)
			return damage(p, "GNU.sparse.map ends with a comma");
	}
	if (k)
		return damage(p, "odd number of values in GNU.sparse.map");
	return 0;
}

/* Records a string attribute; an empty value deletes it (the header field is used). */
static void set_str(struct pax_attrs *a, unsigned bit, const uint8_t **dst, size_t *dlen,
		    const uint8_t *v, size_t vl)
{
	if (!vl) {
		a->has &= ~bit;
		return;
	}
	a->has |= bit;
	*dst = v;
	*dlen = vl;
}

/* Records a numeric attribute; an empty value deletes it, a malformed one is ignored with a
 * warning. */
static void set_num(struct parser *p, struct pax_attrs *a, unsigned bit, uint64_t *dst,
		    const char *key, const uint8_t *v, size_t vl)
{
	char buf[64];

	if (!vl) {
		a->has &= ~bit;
		return;
	}
	if (dec_u64(v, vl, UINT64_MAX, dst)) {
		tfs_log(TFS_LOG_WARNING,
			"tar: member at offset %" PRIu64 ": bad %s value '%s', ignored", p->m_off,
			key, printable(v, vl, buf, sizeof(buf)));
		return;
	}
	a->has |= bit;
}

/* GNU.sparse.* keywords.  Returns 0, -EINVAL (damaged) or -ENOMEM. */
static int pax_sparse(struct parser *p, struct pax_attrs *a, const uint8_t *k, size_t kl,
		      const uint8_t *v, size_t vl)
{
	uint64_t u;
	int err;

	k += 11;
	kl -= 11;
	if (key_is(k, kl, "name")) {
		set_str(a, A_SPNAME, &a->spname, &a->spname_len, v, vl);
		return 0;
	}
	if (key_is(k, kl, "map")) {
		a->sp_old = true;
		return sparse_map01(p, v, vl);
	}
	if (dec_u64(v, vl, UINT64_MAX, &u))
		return damage(p, "bad number in a GNU.sparse keyword");
	if (key_is(k, kl, "major")) {
		a->sp_major = u;
		a->has |= A_SPMAJOR;
	} else if (key_is(k, kl, "minor")) {
		a->sp_minor = u;
		a->has |= A_SPMINOR;
	} else if (key_is(k, kl, "size") || key_is(k, kl, "realsize")) {
		if (u > INT64_MAX)
			return damage(p, "sparse file size out of range");
		a->sp_real = u;
		a->has |= A_SPREAL;
		if (kl == 4)
			a->sp_old = true;
	} else if (key_is(k, kl, "numblocks")) {
		a->sp_nblocks = u;
		a->has |= A_SPNBLOCKS;
		a->sp_old = true;
	} else if (key_is(k, kl, "offset")) {
		if (a->sp_want_bytes)
			return damage(p, "GNU.sparse.offset without its numbytes");
		err = sparse_push(p, u, 0);
		if (err == -E2BIG)
			return damage(p, "too many sparse extents");
		if (err)
			return err;
		a->sp_want_bytes = true;
		a->sp_old = true;
	} else if (key_is(k, kl, "numbytes")) {
		if (!a->sp_want_bytes)
			return damage(p, "GNU.sparse.numbytes without an offset");
		p->sp[p->nsp - 1].len = u;
		a->sp_want_bytes = false;
	}
	return 0;
}

/* Applies one record.  Returns 0, -EINVAL if the member is damaged (logged), -ENOMEM. */
static int pax_apply(struct parser *p, struct pax_attrs *a, const uint8_t *k, size_t kl,
		     const uint8_t *v, size_t vl, bool global)
{
	char buf[64];

	if (key_is(k, kl, "path")) {
		set_str(a, A_PATH, &a->path, &a->path_len, v, vl);
	} else if (key_is(k, kl, "linkpath")) {
		set_str(a, A_LINK, &a->link, &a->link_len, v, vl);
	} else if (key_is(k, kl, "uname")) {
		set_str(a, A_UNAME, &a->uname, &a->uname_len, v, vl);
	} else if (key_is(k, kl, "gname")) {
		set_str(a, A_GNAME, &a->gname, &a->gname_len, v, vl);
	} else if (key_is(k, kl, "size")) {
		/* a bad value is ignored, the header's size used (GNU tar and bsdtar) */
		set_num(p, a, A_SIZE, &a->size, "size", v, vl);
		if ((a->has & A_SIZE) && a->size > INT64_MAX) {
			a->has &= ~A_SIZE;
			tfs_log(TFS_LOG_WARNING,
				"tar: member at offset %" PRIu64 ": size out of range, ignored",
				p->m_off);
		}
	} else if (key_is(k, kl, "uid")) {
		set_num(p, a, A_UID, &a->uid, "uid", v, vl);
	} else if (key_is(k, kl, "gid")) {
		set_num(p, a, A_GID, &a->gid, "gid", v, vl);
	} else if (key_is(k, kl, "SCHILY.devmajor")) {
		set_num(p, a, A_DEVMAJOR, &a->devmajor, "devmajor", v, vl);
	} else if (key_is(k, kl, "SCHILY.devminor")) {
		set_num(p, a, A_DEVMINOR, &a->devminor, "devminor", v, vl);
	} else if (key_is(k, kl, "mtime")) {
		if (!vl)
			a->has &= ~A_MTIME;
		else if (pax_time(v, vl, &a->mtime_sec, &a->mtime_nsec))
			tfs_log(TFS_LOG_WARNING,
				"tar: member at offset %" PRIu64 ": bad mtime '%s', ignored",
				p->m_off, printable(v, vl, buf, sizeof(buf)));
		else
			a->has |= A_MTIME;
	} else if (key_prefix(k, kl, "GNU.sparse.")) {
		if (!global)
			return pax_sparse(p, a, k, kl, v, vl);
	} else if (key_prefix(k, kl, "SCHILY.xattr.") || key_prefix(k, kl, "LIBARCHIVE.xattr.")) {
		bool enc = k[0] == 'L';
		size_t skip = enc ? 17 : 13;

		if (p->nxr >= TAR_MAX_XATTRS) {
			if (!p->xr_warned)
				tfs_log(TFS_LOG_WARNING,
					"tar: member at offset %" PRIu64
					": more than %u xattrs, the rest ignored",
					p->m_off, TAR_MAX_XATTRS);
			p->xr_warned = true;
			return 0;
		}
		if (grow((void **)&p->xr, &p->capxr, p->nxr + 1, sizeof(*p->xr)))
			return -ENOMEM;
		p->xr[p->nxr].name = k + skip;
		p->xr[p->nxr].nlen = kl - skip;
		p->xr[p->nxr].val = v;
		p->xr[p->nxr].vlen = vl;
		p->xr[p->nxr].encoded = enc;
		p->nxr++;
	}
	/* Anything else (atime, ctime, comment, charset, ...) is not indexed. */
	return 0;
}

/* Replays the global records, then the member's own.  0, -EINVAL (damaged), -ENOMEM. */
static int pax_replay(struct parser *p, struct pax_attrs *a)
{
	const struct pax_set *sets[2] = {&p->global, &p->local};

	for (int i = 0; i < 2; i++) {
		const struct pax_set *ps = sets[i];

		for (size_t r = 0; r < ps->n; r++) {
			const struct pax_rec *rec = &ps->rec[r];
			int err = pax_apply(p, a, ps->data.p + rec->koff, rec->klen,
					    ps->data.p + rec->voff, rec->vlen, i == 0);

			if (err)
				return err;
		}
	}
	if (a->sp_want_bytes)
		return damage(p, "GNU.sparse.offset without its numbytes");
	return 0;
}

static bool rec_key_eq(const struct pax_set *a, const struct pax_rec *ra, const struct pax_set *b,
		       const struct pax_rec *rb)
{
	return ra->klen == rb->klen &&
	       !memcmp(a->data.p + ra->koff, b->data.p + rb->koff, ra->klen);
}

static int pax_copy_rec(struct pax_set *dst, const struct pax_set *src, const struct pax_rec *r)
{
	struct pax_rec *n;

	if (grow((void **)&dst->rec, &dst->cap, dst->n + 1, sizeof(*dst->rec)))
		return -ENOMEM;
	n = &dst->rec[dst->n];
	n->koff = dst->data.len;
	n->klen = r->klen;
	if (tbuf_put(&dst->data, src->data.p + r->koff, r->klen))
		return -ENOMEM;
	n->voff = dst->data.len;
	n->vlen = r->vlen;
	if (tbuf_put(&dst->data, src->data.p + r->voff, r->vlen))
		return -ENOMEM;
	dst->n++;
	return 0;
}

/* False if a global record has a value that every member would trip over (a malformed
 * number): such a record is dropped once, with a warning, instead of damaging every member
 * that follows. */
static bool global_value_ok(const uint8_t *k, size_t kl, const uint8_t *v, size_t vl)
{
	uint64_t u;
	int64_t sec;
	uint32_t nsec;

	if (!vl)
		return true;
	if (key_is(k, kl, "size"))
		return dec_u64(v, vl, INT64_MAX, &u) == 0;
	if (key_is(k, kl, "uid") || key_is(k, kl, "gid") || key_is(k, kl, "SCHILY.devmajor") ||
	    key_is(k, kl, "SCHILY.devminor"))
		return dec_u64(v, vl, UINT64_MAX, &u) == 0;
	if (key_is(k, kl, "mtime"))
		return pax_time(v, vl, &sec, &nsec) == 0;
	return true;
}

/* Merges the records of a g header (in p->gnew) into p->global: a keyword replaces its
 * previous value, an empty value deletes it. */
static int global_merge(struct parser *p, uint64_t hoff)
{
	struct pax_set merged = {0};
	size_t nnew = p->gnew.n;
	int err = 0;

	if (nnew > TAR_MAX_GLOBAL) {
		tfs_log(TFS_LOG_WARNING,
			"tar: global header at offset %" PRIu64 " has %zu records, only %u kept",
			hoff, nnew, TAR_MAX_GLOBAL);
		nnew = TAR_MAX_GLOBAL;
	}
	for (size_t i = 0; i < p->global.n && !err; i++) {
		const struct pax_rec *r = &p->global.rec[i];
		bool replaced = false;

		for (size_t j = 0; j < nnew && !replaced; j++)
			replaced = rec_key_eq(&p->global, r, &p->gnew, &p->gnew.rec[j]);
		if (!replaced)
			err = pax_copy_rec(&merged, &p->global, r);
	}
	for (size_t j = 0; j < nnew && !err; j++) {
		const struct pax_rec *r = &p->gnew.rec[j];
		bool later = false;

		for (size_t l = j + 1; l < nnew && !later; l++)
			later = rec_key_eq(&p->gnew, r, &p->gnew, &p->gnew.rec[l]);
		if (later || !r->vlen)
			continue;
		if (!global_value_ok(p->gnew.data.p + r->koff, r->klen, p->gnew.data.p + r->voff,
				     r->vlen)) {
			char key[64];

			tfs_log(
			    TFS_LOG_WARNING,
			    "tar: global header at offset %" PRIu64 ": bad value for %s, ignored",
			    hoff, printable(p->gnew.data.p + r->koff, r->klen, key, sizeof(key)));
			continue;
		}
		if (merged.n >= TAR_MAX_GLOBAL) {
			tfs_log(TFS_LOG_WARNING,
				"tar: global header at offset %" PRIu64
				": too many keywords, some ignored",
				hoff);
			break;
		}
		err = pax_copy_rec(&merged, &p->gnew, r);
	}
	if (err) {
		tbuf_free(&merged.data);
		free(merged.rec);
		return err;
	}
	tbuf_free(&p->global.data);
	free(p->global.rec);
	p->global = merged;
	return 0;
}

/* ---- metadata headers: L, K, x, g ------------------------------------------------------- */

enum meta_kind { META_LONGNAME, META_LONGLINK, META_PAX, META_GLOBAL };

/* A metadata header at hoff with a payload of size bytes.  Returns 1 to go on, 0 to stop
 * (truncated), or -errno. */
static int meta(struct parser *p, uint64_t hoff, uint64_t size, enum meta_kind kind)
{
	static const char *const what[] = {"long name", "long link name", "extended header",
					   "global extended header"};
	uint64_t start = hoff + TAR_BLOCK;
	struct tbuf *dst = NULL;
	size_t old = 0, bad;
	ssize_t n;
	int err;

	if (kind != META_GLOBAL)
		member_start(p, hoff);
	if (past_end(p, start, size))
		return truncated(p, hoff, start + size);
	p->off = start + pad_block(size);
	p->st.end_off = p->off;
	if (kind != META_GLOBAL && p->damaged)
		return 1; /* the member is skipped anyway */
	switch (kind) {
	case META_LONGNAME:
		dst = &p->longname;
		break;
	case META_LONGLINK:
		dst = &p->longlink;
		break;
	case META_PAX:
		dst = &p->local.data;
		old = dst->len;
		break;
	case META_GLOBAL:
		dst = &p->gnew.data;
		p->gnew.n = 0;
		break;
	}
	if (size > TAR_MAX_META - old) {
		char msg[128];

		if (kind == META_GLOBAL) {
			tfs_log(TFS_LOG_WARNING,
				"tar: global extended header at offset %" PRIu64 " is %" PRIu64
				" bytes long, ignored",
				hoff, size);
			return 1;
		}
		snprintf(msg, sizeof(msg),
			 "%s of %" PRIu64 " bytes is over tarseek's limit of %u MiB", what[kind],
			 size, TAR_MAX_META >> 20);
		damage(p, msg);
		return 1;
	}
	if (kind != META_PAX)
		dst->len = 0;
	err = tbuf_reserve(dst, old + (size_t)size + 1);
	if (err)
		return err;
	n = p_read(p, dst->p + old, (size_t)size, start);
	if (n < 0)
		return (int)n;
	if ((uint64_t)n < size)
		return truncated(p, hoff, start + size);
	dst->len = old + (size_t)size;
	switch (kind) {
	case META_LONGNAME:
	case META_LONGLINK:
		/* The payload is the name and a NUL; the name ends at the first NUL. */
		dst->p[dst->len] = 0;
		dst->len = strlen((const char *)dst->p);
		if (kind == META_LONGNAME)
			p->has_longname = true;
		else
			p->has_longlink = true;
		return 1;
	case META_PAX:
		/* the records before a malformed one apply, the member is kept (GNU tar and
		 * bsdtar both go on with a warning) */
		err = pax_split(&p->local, old, &bad);
		if (err == -EINVAL)
			tfs_log(TFS_LOG_WARNING,
				"tar: malformed extended header record at offset %" PRIu64
				", the rest of that header ignored",
				start + (bad - old));
		else if (err)
			return err;
		return 1;
	case META_GLOBAL:
		err = pax_split(&p->gnew, 0, &bad);
		if (err == -EINVAL)
			tfs_log(TFS_LOG_WARNING,
				"tar: malformed global extended header record at offset %" PRIu64
				", the rest of that header ignored",
				start + bad);
		else if (err)
			return err;
		err = global_merge(p, hoff);
		return err ? err : 1;
	}
	return 1;
}

/* ---- sparse maps ------------------------------------------------------------------------ */

/* Entries of an old GNU sparse area (n entries of offset[12], numbytes[12]), up to the first
 * empty one.  0, -EINVAL (damaged, logged) or -ENOMEM. */
static int gnu_sparse_area(struct parser *p, const uint8_t *area, int n)
{
	for (int i = 0; i < n; i++) {
		const uint8_t *e = area + i * 24;
		int64_t off, len;
		int err;

		if (e[12] == 0)
			break;
		if (num_field(e, 12, &off) || num_field(e + 12, 12, &len) || off < 0 || len < 0)
			return damage(p, "bad number in the old GNU sparse map");
		err = sparse_push(p, (uint64_t)off, (uint64_t)len);
		if (err == -E2BIG)
			return damage(p, "too many sparse extents");
		if (err)
			return err;
	}
	return 0;
}

/* Old GNU sparse ('S'): 4 extents in the header, then 21 in each extension block while the
 * isextended flag is set.  The extension blocks sit between the header and the data; they
 * are read (even for a damaged member, to find the data) and *start moves past them.
 * Returns 1 to go on, 0 if truncated, or -errno. */
static int gnu_sparse(struct parser *p, const uint8_t *h, uint64_t hoff, uint64_t *start)
{
	bool ext = h[G_ISEXT] != 0;
	int err;

	if (!p->damaged) {
		err = gnu_sparse_area(p, h + G_SPARSE, 4);
		if (err && err != -EINVAL)
			return err;
	}
	while (ext) {
		ssize_t n = p_read(p, p->blk, TAR_BLOCK, *start);

		if (n < 0)
			return (int)n;
		if (n < TAR_BLOCK)
			return truncated(p, hoff, *start + TAR_BLOCK);
		*start += TAR_BLOCK;
		if (!p->damaged) {
			err = gnu_sparse_area(p, p->blk, 21);
			if (err && err != -EINVAL)
				return err;
		}
		ext = p->blk[G_EXT_ISEXT] != 0;
	}
	return 1;
}

/* PAX sparse 1.0: the map is at the start of the member's data, decimal numbers one per line
 * (the count, then offset and length of each extent), padded to a block.  Lines that start
 * with '#' are comments (GNU tar writes none and refuses them; bsdtar skips them, and is
 * followed).  Reads the map block by block and sets *map_bytes to its padded size.  Returns
 * 1 to go on (p->damaged may be set), 0 if truncated, or -errno. */
static int sparse1_map(struct parser *p, uint64_t hoff, uint64_t start, uint64_t stored_total,
		       uint64_t *map_bytes)
{
	uint64_t pos = start, cur = 0, count = 0, nnum = 0, ext_off = 0;
	unsigned digits = 0;
	bool line_start = true, comment = false;
	int err;

	for (;;) {
		ssize_t n;

		if (pos - start + TAR_BLOCK > stored_total) {
			damage(p, "sparse map runs past the member's data");
			return 1;
		}
		n = p_read(p, p->blk, TAR_BLOCK, pos);
		if (n < 0)
			return (int)n;
		if (n < TAR_BLOCK)
			return truncated(p, hoff, pos + TAR_BLOCK);
		pos += TAR_BLOCK;
		for (size_t i = 0; i < TAR_BLOCK; i++) {
			uint8_t c = p->blk[i];

			if (comment || (line_start && c == '#')) {
				comment = c != '\n';
				line_start = !comment;
				continue;
			}
			line_start = c == '\n';
			if (c >= '0' && c <= '9') {
				if (cur > (UINT64_MAX - 9) / 10) {
					damage(p, "number out of range in the sparse map");
					return 1;
				}
				cur = cur * 10 + (c - '0');
				digits++;
				continue;
			}
			if (c != '\n' || !digits) {
				damage(p, "malformed sparse map");
				return 1;
			}
			if (nnum == 0) {
				count = cur;
				if (count > TAR_MAX_SPARSE) {
					damage(p, "too many sparse extents");
					return 1;
				}
			} else if (nnum % 2) {
				ext_off = cur;
			} else {
				err = sparse_push(p, ext_off, cur);
				if (err)
					return err; /* -E2BIG cannot happen: count was checked */
			}
			nnum++;
			cur = 0;
			digits = 0;
			if (nnum == 1 + 2 * count) {
				*map_bytes = pos - start;
				return 1;
			}
		}
	}
}

/* One extent while a map that is out of order or overlaps is put right: its map position
 * (a later extent overwrites an earlier one, as when tar writes them in turn). */
struct sp_seg {
	uint64_t off, end, src;
	size_t seq;
};

static int sp_seg_cmp(const void *x, const void *y)
{
	const struct sp_seg *a = x, *b = y;

	if (a->off != b->off)
		return a->off < b->off ? -1 : 1;
	return a->seq < b->seq ? -1 : a->seq > b->seq;
}

static int u64_cmp(const void *x, const void *y)
{
	uint64_t a = *(const uint64_t *)x, b = *(const uint64_t *)y;

	return a < b ? -1 : a > b;
}

/* A max-heap of segments by seq (the extent written last wins). */
static void heap_push(struct sp_seg **h, size_t *n, struct sp_seg *s)
{
	size_t i = (*n)++;

	while (i && h[(i - 1) / 2]->seq < s->seq) {
		h[i] = h[(i - 1) / 2];
		i = (i - 1) / 2;
	}
	h[i] = s;
}

static void heap_pop(struct sp_seg **h, size_t *n)
{
	struct sp_seg *last = h[--(*n)];
	size_t i = 0;

	for (;;) {
		size_t c = 2 * i + 1;

		if (c >= *n)
			break;
		if (c + 1 < *n && h[c + 1]->seq > h[c]->seq)
			c++;
		if (h[c]->seq <= last->seq)
			break;
		h[i] = h[c];
		i = c;
	}
	if (*n)
		h[i] = last;
}

/* Rewrites p->sp (extents in map order, with their src set) as extents in offset order that
 * do not overlap, each byte taken from the extent that comes last in the map: a sweep over
 * the extents' ends with a heap of the extents that cover the current piece.  O(n log n).
 * 0 or -ENOMEM. */
static int sparse_sort(struct parser *p)
{
	size_t n = p->nsp, npts = 0, nheap = 0, j = 0, out = 0;
	struct sp_seg *seg = malloc(n * sizeof(*seg));
	struct sp_seg **heap = malloc(n * sizeof(*heap));
	uint64_t *pts = malloc(2 * n * sizeof(*pts));
	int err = 0;

	/* every extent can cut one other in two: at most 2n - 1 pieces */
	if (!seg || !heap || !pts || grow((void **)&p->sp, &p->capsp, 2 * n, sizeof(*p->sp))) {
		err = -ENOMEM;
		goto out;
	}
	for (size_t i = 0; i < n; i++) {
		seg[i] =
		    (struct sp_seg){p->sp[i].off, p->sp[i].off + p->sp[i].len, p->sp[i].src, i};
		pts[npts++] = seg[i].off;
		pts[npts++] = seg[i].end;
	}
	qsort(seg, n, sizeof(*seg), sp_seg_cmp);
	qsort(pts, npts, sizeof(*pts), u64_cmp);
	for (size_t k = 0; k + 1 < npts; k++) {
		uint64_t x = pts[k], y = pts[k + 1];
		struct sp_seg *w;

		if (x == y)
			continue;
		while (j < n && seg[j].off <= x)
			heap_push(heap, &nheap, &seg[j++]);
		while (nheap && heap[0]->end <= x)
			heap_pop(heap, &nheap);
		if (!nheap)
			continue; /* a hole */
		w = heap[0];	  /* covers [x, y): its end is a point after x */
		struct tar_sparse piece = {x, y - x, w->src + (x - w->off)};
		struct tar_sparse *last = out ? &p->sp[out - 1] : NULL;
		if (last && last->off + last->len == x && last->src + last->len == piece.src)
			last->len += piece.len;
		else
			p->sp[out++] = piece;
	}
	p->nsp = out;
out:
	free(seg);
	free(heap);
	free(pts);
	return err;
}

/* Turns a sparse map as stored (extents in map order, their data stored one after the other)
 * into what a reader needs: extents in offset order, not overlapping, not empty, each with
 * the position of its data (src, from the member's data offset), inside the file's real size.
 * Odd maps are read as bsdtar reads them, where GNU tar 1.34 gives up or writes bytes of the
 * next header into the file: out of order or overlapping (later extents win), extents past
 * the real size (cut there), more stored data than the map needs (the rest ignored), less
 * (what is missing reads as zeros, with a warning).  *real: the real size when have_real,
 * else set to the end of the last extent.  0, -EINVAL (damaged, logged) or -ENOMEM. */
static int sparse_finish(struct parser *p, uint64_t *real, bool have_real, uint64_t stored)
{
	uint64_t end = 0, src = 0, max_end = 0;
	bool sorted = true;
	size_t out = 0;

	for (size_t i = 0; i < p->nsp; i++) {
		struct tar_sparse *e = &p->sp[i];

		if (e->len > UINT64_MAX - e->off || e->len > UINT64_MAX - src)
			return damage(p, "sparse extents out of range");
		e->src = src;
		src += e->len;
		if (e->off + e->len > max_end)
			max_end = e->off + e->len;
		if (e->len && e->off < end)
			sorted = false;
		if (e->len)
			end = e->off + e->len;
	}
	if (!have_real)
		*real = max_end;
	if (*real > INT64_MAX)
		return damage(p, "sparse file size out of range");
	if (src < stored)
		tfs_log(TFS_LOG_NOTICE,
			"tar: sparse member at offset %" PRIu64 ": %" PRIu64
			" bytes of data beyond its map ignored",
			p->m_off, stored - src);
	else if (src > stored)
		tfs_log(TFS_LOG_WARNING,
			"tar: sparse member at offset %" PRIu64 ": its map needs %" PRIu64
			" bytes of data but %" PRIu64 " are stored: the rest reads as zeros",
			p->m_off, src, stored);
	if (max_end > *real)
		tfs_log(TFS_LOG_NOTICE,
			"tar: sparse member at offset %" PRIu64
			": extents past its size of %" PRIu64 " ignored",
			p->m_off, *real);
	/* cut to the stored data and to the real size */
	for (size_t i = 0; i < p->nsp; i++) {
		struct tar_sparse e = p->sp[i];

		if (e.src >= stored || e.off >= *real)
			continue;
		if (e.len > stored - e.src)
			e.len = stored - e.src;
		if (e.len > *real - e.off)
			e.len = *real - e.off;
		if (e.len)
			p->sp[out++] = e;
	}
	p->nsp = out;
	if (!sorted) {
		tfs_log(TFS_LOG_NOTICE,
			"tar: sparse member at offset %" PRIu64
			": map out of order or overlapping, later extents win",
			p->m_off);
		return sparse_sort(p);
	}
	return 0;
}

/* ---- member headers --------------------------------------------------------------------- */

static int hexval(uint8_t c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/* Decodes %XX escapes (LIBARCHIVE.xattr names); a '%' not followed by two hex digits is
 * kept as it is. */
static int url_decode_put(struct tbuf *b, const uint8_t *s, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		uint8_t c = s[i];

		if (c == '%' && i + 2 < n && hexval(s[i + 1]) >= 0 && hexval(s[i + 2]) >= 0) {
			c = (uint8_t)(hexval(s[i + 1]) << 4 | hexval(s[i + 2]));
			i += 2;
		}
		if (tbuf_put(b, &c, 1))
			return -ENOMEM;
	}
	return 0;
}

/* Decodes base64 (LIBARCHIVE.xattr values; '=' padding optional).  0, -EINVAL, -ENOMEM. */
static int base64_put(struct tbuf *b, const uint8_t *s, size_t n)
{
	uint32_t acc = 0;
	int bits = 0;
	size_t i;

	if (tbuf_reserve(b, b->len + n / 4 * 3 + 3))
		return -ENOMEM;
	for (i = 0; i < n && s[i] != '='; i++) {
		uint8_t c = s[i];
		uint32_t v;

		if (c >= 'A' && c <= 'Z')
			v = c - 'A';
		else if (c >= 'a' && c <= 'z')
			v = c - 'a' + 26;
		else if (c >= '0' && c <= '9')
			v = c - '0' + 52;
		else if (c == '+')
			v = 62;
		else if (c == '/')
			v = 63;
		else
			return -EINVAL;
		acc = (acc << 6 | v) & 0xffffff;
		bits += 6;
		if (bits >= 8) {
			bits -= 8;
			b->p[b->len++] = (uint8_t)(acc >> bits);
		}
	}
	for (; i < n; i++)
		if (s[i] != '=')
			return -EINVAL;
	return 0;
}

/* Decodes the xattr records found for this member into p->xa; a later record for the same
 * name replaces an earlier one.  bsdtar writes every xattr twice, as LIBARCHIVE.xattr.NAME
 * (NAME %-encoded, value base64) and as SCHILY.xattr.NAME with the same still-encoded NAME:
 * a SCHILY record whose raw name matches a LIBARCHIVE record's is that duplicate and is
 * skipped, so "user.café" does not also appear as "user.caf%C3%A9". */
static bool bsdtar_duplicate(const struct parser *p, const struct xref *r)
{
	/* without a '%' both forms decode to the same name and the later one wins anyway */
	if (r->encoded || !memchr(r->name, '%', r->nlen))
		return false;
	for (size_t i = 0; i < p->nxr; i++)
		if (p->xr[i].encoded && p->xr[i].nlen == r->nlen &&
		    memcmp(p->xr[i].name, r->name, r->nlen) == 0)
			return true;
	return false;
}

static int xattrs_build(struct parser *p, size_t *count)
{
	size_t n = 0;
	char buf[64];
	p->xdata.len = 0;
	for (size_t i = 0; i < p->nxr; i++) {
		const struct xref *r = &p->xr[i];
		size_t noff = p->xdata.len, nlen, voff, j;
		int err;

		if (bsdtar_duplicate(p, r))
			continue;

		err = r->encoded ? url_decode_put(&p->xdata, r->name, r->nlen)
				 : tbuf_put(&p->xdata, r->name, r->nlen);
		if (err)
			return err;
		nlen = p->xdata.len - noff;
		if (memchr(p->xdata.p + noff, 0, nlen)) {
			tfs_log(TFS_LOG_WARNING,
				"tar: member at offset %" PRIu64
				": xattr name with a NUL byte, ignored",
				p->m_off);
			p->xdata.len = noff;
			continue;
		}
		if (tbuf_put(&p->xdata, "", 1))
			return -ENOMEM;
		voff = p->xdata.len;
		err = r->encoded ? base64_put(&p->xdata, r->val, r->vlen)
				 : tbuf_put(&p->xdata, r->val, r->vlen);
		if (err == -EINVAL) {
			tfs_log(TFS_LOG_WARNING,
				"tar: member at offset %" PRIu64
				": bad base64 value for xattr %s, ignored",
				p->m_off, printable(p->xdata.p + noff, nlen, buf, sizeof(buf)));
			p->xdata.len = noff;
			continue;
		}
		if (err)
			return err;
		for (j = 0; j < n; j++) {
			const uint8_t *other = p->xdata.p + p->xt[j].noff;

			if (!memcmp(other, p->xdata.p + noff, nlen + 1))
				break;
		}
		if (j == n) {
			if (grow((void **)&p->xt, &p->capxt, n + 1, sizeof(*p->xt)))
				return -ENOMEM;
			p->xt[n++].noff = noff;
		}
		p->xt[j].voff = voff;
		p->xt[j].vlen = p->xdata.len - voff;
	}
	if (n && grow((void **)&p->xa, &p->capxa, n, sizeof(*p->xa)))
		return -ENOMEM;
	for (size_t j = 0; j < n; j++) {
		p->xa[j].name = (const char *)p->xdata.p + p->xt[j].noff;
		p->xa[j].value = p->xdata.p + p->xt[j].voff;
		p->xa[j].len = p->xt[j].vlen;
	}
	*count = n;
	return 0;
}

/* The member's path: GNU.sparse.name, PAX path, GNU long name, or ustar prefix/name. */
static int build_path(struct parser *p, const uint8_t *h, const struct pax_attrs *a,
		      size_t prefix_max)
{
	size_t nlen, plen;
	int err;

	if (a->has & A_SPNAME)
		return tbuf_setz(&p->path, a->spname, a->spname_len);
	if (a->has & A_PATH)
		return tbuf_setz(&p->path, a->path, a->path_len);
	if (p->has_longname)
		return tbuf_setz(&p->path, p->longname.p, p->longname.len);
	nlen = strnlen((const char *)h + H_NAME, 100);
	plen = prefix_max ? strnlen((const char *)h + H_PREFIX, prefix_max) : 0;
	p->path.len = 0;
	if (plen) {
		err = tbuf_put(&p->path, h + H_PREFIX, plen);
		if (!err)
			err = tbuf_put(&p->path, "/", 1);
		if (err)
			return err;
	}
	err = tbuf_put(&p->path, h + H_NAME, nlen);
	if (!err)
		err = tbuf_put(&p->path, "", 1);
	if (err)
		return err;
	p->path.len--;
	return 0;
}

static enum tar_type entry_type(struct parser *p, uint8_t t, uint64_t hoff)
{
	switch (t) {
	case '0':
	case '\0':
	case '7':
	case 'S':
		return TAR_REG;
	case '1':
		return TAR_HARDLINK;
	case '2':
		return TAR_SYMLINK;
	case '3':
		return TAR_CHR;
	case '4':
		return TAR_BLK;
	case '5':
	case 'D':
		return TAR_DIR;
	case '6':
		return TAR_FIFO;
	default:
		tfs_log(TFS_LOG_WARNING,
			"tar: member at offset %" PRIu64
			" has unknown type 0x%02x, read as a regular file",
			hoff, t);
		return TAR_REG;
	}
}

/* A member's own header at hoff (copied from p->blk), stored size hsize from its size
 * field.  Returns 1 to go on, 0 to stop, or -errno. */
static int member(struct parser *p, uint64_t hoff, uint64_t hsize)
{
	uint8_t h[TAR_BLOCK];
	struct pax_attrs a;
	struct tar_entry e;
	uint64_t start = hoff + TAR_BLOCK, stored_total, next, real = 0, map_bytes = 0;
	enum tar_type type;
	uint8_t t;
	bool ustar, gnu, sparse = false;
	size_t prefix_max = 0, nxattrs = 0;
	int err;

	memcpy(h, p->blk, sizeof(h));
	t = h[H_TYPE];
	member_start(p, hoff);
	memset(&a, 0, sizeof(a));
	p->nsp = 0;
	p->nxr = 0;
	p->xr_warned = false;
	if (!p->damaged) {
		err = pax_replay(p, &a);
		if (err && err != -EINVAL)
			return err;
	}
	if (t == 'S') {
		/* the header's four extents must come first: drop any from PAX records */
		p->nsp = 0;
		err = gnu_sparse(p, h, hoff, &start);
		if (err <= 0)
			return err;
		sparse = true;
		real = num_field_u(h + G_REALSIZE, 12);
	}
	ustar = !memcmp(h + H_MAGIC, "ustar\0", 6);
	gnu = !memcmp(h + H_MAGIC, "ustar  \0", 8);
	if (ustar)
		prefix_max = memcmp(h + H_STAR_MAGIC, "tar\0", 4) ? 155 : 131;
	err = build_path(p, h, &a, prefix_max);
	if (err)
		return err;
	type = entry_type(p, t, hoff);
	if ((t == '0' || t == '\0') && p->path.len && p->path.p[p->path.len - 1] == '/')
		type = TAR_DIR; /* old archives mark directories with a trailing slash only */
	/* Only regular files and GNU dumpdirs have data.  GNU tar's extraction reads none after
	 * a directory, link, device or FIFO header, whatever its size field or a PAX size says
	 * (old tars wrote the linked file's size into hard-link headers, some a size into
	 * directory headers), and neither does bsdtar, except after a PAX hard link. */
	stored_total = a.has & A_SIZE ? a.size : hsize;
	if (type != TAR_REG && t != 'D' && stored_total) {
		/* pax lets a hard link carry the file's data (pax -o linkdata; bsdtar reads it):
		 * the data is taken to be there only when the next block is neither a header
		 * nor zeros, so the members GNU tar extracts are the same either way (it reads
		 * such data as a bad header and skips to the next) */
		bool next_is_header = false;

		err = peek_block(p, start, &next_is_header);
		if (err)
			return err;
		if (next_is_header)
			stored_total = 0;
	}
	if (past_end(p, start, stored_total))
		return truncated(p, hoff, start + stored_total);
	next = start + pad_block(stored_total);
	if (p->damaged)
		goto skip;

	memset(&e, 0, sizeof(e));
	e.type = type;
	e.data_off = start;
	e.stored = stored_total;
	/* a 1.0 map without GNU.sparse.realsize: GNU tar extracts the data as it is stored,
	 * map and all (bsdtar reads the map and keeps the stored size): GNU tar is followed */
	if (e.type == TAR_REG && !sparse && (a.has & A_SPMAJOR) && (a.has & A_SPREAL)) {
		if (a.sp_major != 1 || a.sp_minor != 0) {
			char msg[80];

			snprintf(msg, sizeof(msg), "unsupported sparse format %" PRIu64 ".%" PRIu64,
				 a.sp_major, a.has & A_SPMINOR ? a.sp_minor : 0);
			damage(p, msg);
			goto skip;
		}
		p->nsp = 0;
		err = sparse1_map(p, hoff, start, stored_total, &map_bytes);
		if (err <= 0)
			return err;
		if (p->damaged)
			goto skip;
		e.data_off += map_bytes;
		e.stored -= map_bytes;
		sparse = true;
	} else if (e.type == TAR_REG && !sparse && a.sp_old) {
		if ((a.has & A_SPNBLOCKS) && a.sp_nblocks != p->nsp)
			tfs_log(TFS_LOG_NOTICE,
				"tar: sparse member at offset %" PRIu64
				": GNU.sparse.numblocks says %" PRIu64
				" but the map has %zu extents;"
				" the map is used (as by bsdtar)",
				p->m_off, a.sp_nblocks, p->nsp);
		sparse = true;
	}
	if (sparse) {
		if (a.has & A_SPREAL)
			real = a.sp_real;
		err = sparse_finish(p, &real, real != 0 || (a.has & A_SPREAL), e.stored);
		if (err == -EINVAL)
			goto skip;
		if (err)
			return err;
	}

	if (e.type == TAR_HARDLINK || e.type == TAR_SYMLINK) {
		if (a.has & A_LINK)
			err = tbuf_setz(&p->link, a.link, a.link_len);
		else if (p->has_longlink)
			err = tbuf_setz(&p->link, p->longlink.p, p->longlink.len);
		else
			err = tbuf_setz(&p->link, h + H_LINK, 100);
	} else {
		err = tbuf_setz(&p->link, "", 0);
	}
	if (!err)
		err = a.has & A_UNAME ? tbuf_setz(&p->uname, a.uname, a.uname_len)
				      : tbuf_setz(&p->uname, h + H_UNAME, ustar || gnu ? 32 : 0);
	if (!err)
		err = a.has & A_GNAME ? tbuf_setz(&p->gname, a.gname, a.gname_len)
				      : tbuf_setz(&p->gname, h + H_GNAME, ustar || gnu ? 32 : 0);
	if (!err)
		err = xattrs_build(p, &nxattrs);
	if (err)
		return err;

	/* On a stream the source's end is unknown: prove the data is all there. */
	if (p->srcsize == SRC_SIZE_UNKNOWN && e.stored) {
		uint8_t c;
		ssize_t n = p_read(p, &c, 1, e.data_off + e.stored - 1);

		if (n < 0)
			return (int)n;
		if (n < 1)
			return truncated(p, hoff, e.data_off + e.stored);
	}

	e.path = p->path.p;
	e.path_len = p->path.len;
	e.link = p->link.p;
	e.link_len = p->link.len;
	e.hdr_off = p->m_off;
	if (e.type == TAR_REG)
		e.size = sparse ? real : e.stored;
	e.mode = (uint32_t)(num_field_u(h + H_MODE, 8) & 07777);
	e.uid = a.has & A_UID ? a.uid : num_field_u(h + H_UID, 8);
	e.gid = a.has & A_GID ? a.gid : num_field_u(h + H_GID, 8);
	if (a.has & A_MTIME) {
		e.mtime_sec = a.mtime_sec;
		e.mtime_nsec = a.mtime_nsec;
	} else {
		int64_t mt;

		/* malformed or out of range: -1, what GNU tar extracts then (with an error) */
		if (num_field(h + H_MTIME, 12, &mt)) {
			tfs_log(TFS_LOG_WARNING,
				"tar: member at offset %" PRIu64 ": bad mtime field, read as -1",
				p->m_off);
			mt = -1;
		}
		e.mtime_sec = mt;
	}
	if (e.type == TAR_CHR || e.type == TAR_BLK) {
		e.dev_major =
		    (uint32_t)(a.has & A_DEVMAJOR ? a.devmajor : num_field_u(h + H_DEVMAJOR, 8));
		e.dev_minor =
		    (uint32_t)(a.has & A_DEVMINOR ? a.devminor : num_field_u(h + H_DEVMINOR, 8));
	}
	e.uname = (const char *)p->uname.p;
	e.gname = (const char *)p->gname.p;
	if (sparse) {
		/* an all-hole file has no extents but is still sparse: never NULL here */
		if (grow((void **)&p->sp, &p->capsp, 1, sizeof(*p->sp)))
			return -ENOMEM;
		e.sparse = p->sp;
		e.nsparse = p->nsp;
	}
	e.xattrs = nxattrs ? p->xa : NULL;
	e.nxattrs = nxattrs;

	err = p->cb->entry(p->cb->opaque, &e);
	if (err)
		return err < 0 ? err : -EINVAL;
	p->st.members++;
	if (p->cb->progress && p->st.members % TAR_PROGRESS_EVERY == 0)
		p->cb->progress(p->cb->opaque, next);
skip:
	p->off = next;
	p->st.end_off = next;
	member_reset(p);
	return 1;
}

/* A block that failed the checks at off: warn and look for the next valid header. */
static void bad_header(struct parser *p, uint64_t off, const char *why)
{
	if (p->in_member)
		tfs_log(TFS_LOG_WARNING,
			"tar: bad header at offset %" PRIu64
			" (%s) in the member at offset %" PRIu64
			", skipping to the next valid header",
			off, why, p->m_off);
	else
		tfs_log(TFS_LOG_WARNING,
			"tar: bad header at offset %" PRIu64
			" (%s), skipping to the next valid header",
			off, why);
	member_reset(p);
	p->st.bad_headers++;
	p->resync = true;
	p->off = off + TAR_BLOCK;
}

/* Data of a header that is not a member (V, N, M): skipped.  1, or 0 if truncated. */
static int skip_data(struct parser *p, uint64_t hoff, uint64_t size)
{
	if (past_end(p, hoff + TAR_BLOCK, size))
		return truncated(p, hoff, hoff + TAR_BLOCK + size);
	p->off = hoff + TAR_BLOCK + pad_block(size);
	p->st.end_off = p->off;
	return 1;
}

/* A valid header block at off (in p->blk).  1 to go on, 0 to stop, or -errno. */
static int header(struct parser *p, uint64_t off)
{
	const uint8_t *b = p->blk;
	char name[128];
	int64_t size;

	if (num_field(b + H_SIZE, 12, &size) || size < 0) {
		/* GNU tar does not read the size of a hard link (its data is the target's);
		 * bsdtar skips a volume label whatever its size (GNU tar refuses such a one) */
		if (b[H_TYPE] != '1' && b[H_TYPE] != 'V') {
			bad_header(p, off, "invalid size field");
			return 1;
		}
		size = 0;
	}
	switch (b[H_TYPE]) {
	case 'L':
		return meta(p, off, (uint64_t)size, META_LONGNAME);
	case 'K':
		return meta(p, off, (uint64_t)size, META_LONGLINK);
	case 'x':
	case 'X': /* Solaris' name for 'x' */
		return meta(p, off, (uint64_t)size, META_PAX);
	case 'g':
		return meta(p, off, (uint64_t)size, META_GLOBAL);
	case 'V':
		tfs_log(TFS_LOG_NOTICE, "tar: volume label '%s' at offset %" PRIu64 " skipped",
			printable(b, strnlen((const char *)b, 100), name, sizeof(name)), off);
		return skip_data(p, off, (uint64_t)size);
	case 'N':
	case 'M':
		tfs_log(TFS_LOG_WARNING,
			"tar: %s header '%s' at offset %" PRIu64 " not supported, skipped",
			b[H_TYPE] == 'M' ? "multi-volume continuation" : "old GNU long-name",
			printable(b, strnlen((const char *)b, 100), name, sizeof(name)), off);
		member_reset(p);
		return skip_data(p, off, (uint64_t)size);
	default:
		return member(p, off, (uint64_t)size);
	}
}

/* The source ended: n < TAR_BLOCK bytes were read at off.  Returns 0 or -EINVAL. */
static int at_end(struct parser *p, uint64_t off, size_t n)
{
	bool zero = is_zero(p->blk, n);

	p->st.end_off = off + n;
	if (!p->seen_header)
		return off >= 2 * TAR_BLOCK && zero ? 0
						    : -EINVAL; /* an empty archive, or not tar */
	if (p->resync)
		return 0; /* the damage was reported */
	if (p->after_end) {
		if (!zero) {
			tfs_log(TFS_LOG_NOTICE,
				"tar: %zu bytes of trailing garbage at offset %" PRIu64 " ignored",
				n, off);
			p->st.garbage = true;
			p->st.end_off = off;
		}
		return 0;
	}
	if (p->in_member)
		return truncated(p, off, off + TAR_BLOCK);
	if (n && !zero) {
		tfs_log(TFS_LOG_WARNING,
			"tar: truncated archive: the source ends inside the header block at offset "
			"%" PRIu64,
			off);
		p->st.truncated = true;
		p->st.end_off = off;
	}
	return 0;
}

/* A zero block at off ends the archive (GNU tar and bsdtar stop there unless told to
 * --ignore-zeros; GNU tar's own end marker is two of them).  What follows is looked at, up to
 * TAR_LOOKAHEAD bytes, so that a user learns of members that are not shown (cat a.tar b.tar)
 * or of data after the end.  Returns 0, or -EINVAL when no header was seen and the zeros
 * are followed by data that is not tar (a file that only starts with zeros). */
static int end_marker(struct parser *p, uint64_t off)
{
	uint64_t pos = off + TAR_BLOCK;

	p->st.end_off = pos;
	while (pos - off <= TAR_LOOKAHEAD) {
		ssize_t n = p_read(p, p->blk, TAR_BLOCK, pos);

		if (n < 0)
			return (int)n;
		if (n == 0 || is_zero(p->blk, (size_t)n)) {
			pos += (uint64_t)n;
			p->st.end_off = pos;
			if (n < TAR_BLOCK) /* only zeros up to the end: an empty tar needs two */
				return !p->seen_header && pos < 2 * TAR_BLOCK ? -EINVAL : 0;
			continue;
		}
		if (n == TAR_BLOCK && tar_header_valid(p->blk)) {
			tfs_log(TFS_LOG_NOTICE,
				"tar: the archive goes on after its end-of-archive marker at "
				"offset %" PRIu64 " (a header at offset %" PRIu64
				": archives concatenated?); "
				"not read, as by tar: -i (--ignore-zeros) reads on",
				off, pos);
		} else {
			if (!p->seen_header)
				return -EINVAL;
			tfs_log(TFS_LOG_NOTICE,
				"tar: data after the end-of-archive marker at offset %" PRIu64
				" ignored",
				off);
		}
		p->st.garbage = true;
		return 0;
	}
	return 0;
}

static int parse(struct parser *p)
{
	for (;;) {
		uint64_t off = p->off;
		ssize_t n;
		int ret;

		if (p->has_peek && p->peek_off == off) {
			n = (ssize_t)p->peek_len;
			memcpy(p->blk, p->peek, p->peek_len);
		} else {
			n = p_read(p, p->blk, TAR_BLOCK, off);
		}
		p->has_peek = false;

		if (n < 0)
			return (int)n;
		if (n < TAR_BLOCK)
			return at_end(p, off, (size_t)n);
		if (is_zero(p->blk, TAR_BLOCK)) {
			p->off = off + TAR_BLOCK;
			if (p->resync)
				continue;
			if (p->in_member) {
				tfs_log(TFS_LOG_WARNING,
					"tar: the headers at offset %" PRIu64
					" are followed by a zero block, not by a member",
					p->m_off);
				member_reset(p);
			}
			if (!p->cb->ignore_zeros)
				return end_marker(p, off);
			p->after_end = true;
			p->st.end_off = p->off;
			continue;
		}
		if (!tar_header_valid(p->blk)) {
			if (p->resync) {
				p->off = off + TAR_BLOCK;
				continue;
			}
			if (!p->seen_header)
				return -EINVAL;
			if (p->after_end) {
				tfs_log(TFS_LOG_NOTICE,
					"tar: trailing garbage at offset %" PRIu64
					" after the end-of-archive marker ignored",
					off);
				p->st.garbage = true;
				p->st.end_off = off;
				return 0;
			}
			bad_header(p, off, "checksum mismatch");
			continue;
		}
		if (p->resync) {
			tfs_log(TFS_LOG_NOTICE,
				"tar: found the next valid header at offset %" PRIu64, off);
			p->resync = false;
		}
		p->seen_header = true;
		p->after_end = false;
		ret = header(p, off);
		if (ret <= 0)
			return ret;
	}
}

static void pax_set_free(struct pax_set *ps)
{
	tbuf_free(&ps->data);
	free(ps->rec);
}

int tar_parse(struct src *s, const struct tar_callbacks *cb, struct tar_stats *stats)
{
	struct parser p;
	int ret;

	memset(&p, 0, sizeof(p));
	p.s = s;
	p.cb = cb;
	p.srcsize = src_size(s);
	ret = parse(&p);
	if (p.srcsize != SRC_SIZE_UNKNOWN && p.st.end_off > p.srcsize)
		p.st.end_off = p.srcsize;
	if (ret == 0 && cb->progress)
		cb->progress(cb->opaque, p.st.end_off);
	if (stats)
		*stats = p.st;

	tbuf_free(&p.longname);
	tbuf_free(&p.longlink);
	pax_set_free(&p.local);
	pax_set_free(&p.global);
	pax_set_free(&p.gnew);
	free(p.sp);
	free(p.xr);
	tbuf_free(&p.xdata);
	free(p.xt);
	free(p.xa);
	tbuf_free(&p.path);
	tbuf_free(&p.link);
	tbuf_free(&p.uname);
	tbuf_free(&p.gname);
	return ret;
}
