/* Archives read through libarchive: rar (v4, v5), iso9660 (with Rock Ridge and Joliet as
 * libarchive reads them), cpio (every variant), cab, lha, xar, warc, and rpm (its cpio
 * payload).  The container "libarchive" (container.h); tar, zip, 7z and ar stay on tarseek's
 * own parsers (ar.c: libarchive 3.6 cannot read a COFF import library).
 *
 * First libarchive walks the headers in a watched child (codecs/libarchive/la_guard.h): an
 * archive that makes it loop or swell (libarchive 3.6 does on some) is refused there, with a
 * log line, before libarchive runs in the daemon.
 * The parse reads the archive twice with libarchive (codecs/libarchive/libarchive_src.h):
 *   1. every header, and what each entry's data is: where the format stores an entry's bytes
 *      as they are (cpio, ar, iso9660), its data blocks are read and, if libarchive handed
 *      them out in place -- straight from the read callback's buffer, in order, with no gap,
 *      `size` bytes in all -- the entry is read in place, like a tar member: stream 0 at that
 *      file offset, nothing decoded, ever.  Every other entry with data (a compressed or
 *      sparse one, every entry of rar, cab, lha, xar, warc, rpm) goes into one stream of
 *      codec "libarchive" (codecs/libarchive/libarchive_stream.c): the entries' decoded bytes
 *      one after another, listed in the stream's params; the builder decodes it once while indexing
 *      (segment CRCs, checkpoints at entry starts) and a read decodes the entries of one
 *      chunk.  Other formats' data is skipped here (libarchive seeks past it where it can).
 *   2. every header again, each reported as a member, with the place of its data from 1.
 * Encrypted entries are listed; their reads fail with EACCES (and a log line) -- rar 5's
 * found by rar5.c's walk of the headers too, as libarchive before 3.8 does not mark them and
 * decoding one fails as damage (EIO) and cuts the stream short for the entries after it;
 * left out of the stream, they leave those readable (in a solid archive libarchive lists
 * nothing past one).  Sockets are left out, with a notice.  A header libarchive cannot read,
 * or in-place data it cannot read whole (a cpio cut short), ends the listing there (what came
 * before is kept, the archive is reported damaged).
 */
#include "containers/container.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codecs/libarchive/la_dl.h"
#include "codecs/libarchive/la_guard.h"
#include "codecs/libarchive/libarchive_src.h"
#include "common/byteio.h"
#include "common/log.h"
#include "containers/rar5.h"

#define LAC_XATTRS_MAX 1024
#define LAC_NONE UINT64_MAX

/* A self-extracting rar: an executable (PE "MZ", ELF) with a rar signature past its stub where
 * libarchive's rar readers look for one -- at a multiple of 16 bytes from 64 KiB on, before
 * 128 KiB (rar 4) or 512 KiB (rar 5) -- which they find and skip to (as 7-Zip and bsdtar open
 * it).  zip and 7z SFX are their own containers'. */
#define LAC_SFX_FROM ((size_t)64 << 10)
#define LAC_SFX_RAR4 ((size_t)128 << 10)
#define LAC_SFX_RAR5 ((size_t)512 << 10)

static bool lac_rar_sfx(struct src *in, const uint8_t *h, size_t len)
{
	uint8_t *buf;
	ssize_t n;
	bool found = false;

	if (!(len >= 2 && h[0] == 'M' && h[1] == 'Z') && !(len >= 4 && !memcmp(h, "\x7f" "ELF", 4)))
		return false;
	buf = malloc(LAC_SFX_RAR5);
	if (!buf)
		return false;
	n = src_pread(in, buf, LAC_SFX_RAR5, 0);
	for (size_t i = LAC_SFX_FROM; !found && n > 0 && i + 8 <= (size_t)n; i += 16)
		found = !memcmp(buf + i, "Rar!\x1a\x07", 6) &&
			((buf[i + 6] == 0 && i + 7 <= LAC_SFX_RAR4) ||
			 (buf[i + 6] == 1 && buf[i + 7] == 0));
	free(buf);
	return found;
}

static bool lac_probe(struct src *in, const uint8_t *h, size_t len)
{
	uint8_t cd[5];

	if (len >= 6 && (!memcmp(h, "070707", 6) || !memcmp(h, "070701", 6) ||
			 !memcmp(h, "070702", 6)))
		return true; /* cpio: odc, newc, crc */
	if (len >= 2 && ((h[0] == 0xc7 && h[1] == 0x71) || (h[0] == 0x71 && h[1] == 0xc7)))
		return true; /* cpio: binary */
	if (len >= 7 && !memcmp(h, "Rar!\x1a\x07", 6) && (h[6] == 0 || h[6] == 1))
		return true;
	if (len >= 8 && !memcmp(h, "MSCF\0\0\0\0", 8))
		return true;
	if (len >= 7 && h[2] == '-' && h[3] == 'l' && (h[4] == 'h' || h[4] == 'z') && h[6] == '-')
		return true; /* lha */
	if (len >= 4 && !memcmp(h, "xar!", 4))
		return true;
	if (len >= 7 && !memcmp(h, "WARC/1.", 7))
		return true;
	if (len >= 4 && !memcmp(h, "\xed\xab\xee\xdb", 4))
		return true; /* rpm */
	if (lac_rar_sfx(in, h, len))
		return true;
	/* iso9660: the primary volume descriptor's "CD001" at 32769 */
	return src_pread(in, cd, sizeof(cd), 32769) == (ssize_t)sizeof(cd) && !memcmp(cd, "CD001", 5);
}

/* What pass 1 found of one header. */
struct lac_ent {
	uint64_t file_off; /* in place: its data's offset in the file; else LAC_NONE */
	uint64_t soff;	   /* in the stream: its data's offset there; else LAC_NONE */
	int unreadable;
};

/* A hard link that carries the data of its target, which was listed before it with none (cpio
 * stores a file's bytes with its last link): the target is shown with these bytes. */
struct lac_linkdata {
	char *target;
	uint64_t file_off, soff, size;
	int unreadable;
};

struct lac {
	struct src *in;
	const char *name;
	struct lac_ent *e;
	size_t n, cap;
	uint8_t *recs; /* the stream's params: 12 bytes per entry in it */
	size_t nrecs, recs_cap;
	uint64_t usize;
	bool damaged;
	struct lac_linkdata *ld; /* sorted by target after pass 1 */
	size_t nld, ld_cap;
	struct rar5_files rar5; /* a rar 5 archive's files, for the ones libarchive < 3.8
				   does not mark encrypted (rar5.h) */
};

/* Whether entry k, of size bytes, is encrypted: as libarchive says, or (rar 5, which
 * libarchive before 3.8 does not mark) as its file header says, when the k-th file header
 * has the same size. */
static bool lac_encrypted(const struct lac *c, struct archive_entry *e, uint64_t size)
{
	if (sym_archive_entry_is_data_encrypted(e))
		return true;
	if (c->n >= c->rar5.n || !c->rar5.f[c->n].encrypted)
		return false;
	if (c->rar5.f[c->n].usize == size)
		return true;
	tfs_log(TFS_LOG_WARNING, "%s: rar 5 file header %zu is encrypted, but its size (%llu) is "
		"not the size of entry %zu (%llu): not taken for it", c->name, c->n,
		(unsigned long long)c->rar5.f[c->n].usize, c->n, (unsigned long long)size);
	return false;
}

static int ld_cmp(const void *a, const void *b)
{
	return strcmp(((const struct lac_linkdata *)a)->target,
		      ((const struct lac_linkdata *)b)->target);
}

static bool in_place_format(int fmt)
{
	int base = fmt & ARCHIVE_FORMAT_BASE_MASK;
	return base == ARCHIVE_FORMAT_CPIO || base == ARCHIVE_FORMAT_AR ||
	       base == ARCHIVE_FORMAT_ISO9660;
}

/* Reads the entry's data: its file offset if libarchive gave it in place, whole and in order,
 * else LAC_NONE.  *err: a read error. */
static uint64_t lac_locate(struct la_src *l, uint64_t size, int *err)
{
	uint64_t first = LAC_NONE, got = 0;
	bool in_place = true; /* so far; once not, the data is read on to its end */
	const void *p;
	size_t n;
	la_int64_t off;
	int ret;

	*err = 0;
	while ((ret = sym_archive_read_data_block(l->a, &p, &n, &off)) == ARCHIVE_OK) {
		if (!n)
			continue;
		uint64_t at = la_where(l, p, n);
		if (at == LA_NOWHERE || off < 0 || (uint64_t)off != got || (got && at != first + got))
			in_place = false;
		else if (!got)
			first = at;
		got += n;
	}
	if (ret != ARCHIVE_EOF) {
		*err = l->io_err ? l->io_err : -EIO;
		return LAC_NONE;
	}
	return in_place && got == size ? first : LAC_NONE;
}

static int lac_grow(struct lac *c)
{
	if (c->n == c->cap) {
		size_t cap = c->cap ? c->cap * 2 : 256;
		struct lac_ent *p = realloc(c->e, cap * sizeof(*p));
		if (!p)
			return -ENOMEM;
		c->e = p;
		c->cap = cap;
	}
	return 0;
}

static int lac_add_rec(struct lac *c, uint32_t nr, uint64_t size)
{
	if ((c->nrecs + 1) * 12 > c->recs_cap) {
		size_t cap = c->recs_cap ? c->recs_cap * 2 : 12 * 256;
		uint8_t *p = realloc(c->recs, cap);
		if (!p)
			return -ENOMEM;
		c->recs = p;
		c->recs_cap = cap;
	}
	put_le32(c->recs + c->nrecs * 12, nr);
	put_le64(c->recs + c->nrecs * 12 + 4, size);
	c->nrecs++;
	c->usize += size;
	return 0;
}

/* A regular file: AE_IFREG, or no type bits at all (ar's deterministic mode "644"). */
static bool is_reg(struct archive_entry *e)
{
	return sym_archive_entry_filetype(e) == AE_IFREG || sym_archive_entry_filetype(e) == 0;
}

static bool has_data(struct archive_entry *e)
{
	return is_reg(e) && sym_archive_entry_size(e) > 0;
}

/* Pass 1: the headers, and where each entry's data is. */
static int lac_pass1(struct lac *c)
{
	struct la_src l;
	struct archive_entry *e;
	int err = la_open(&l, c->in), ret;

	if (err) {
		if (err == -EINVAL)
			tfs_log(TFS_LOG_ERR, "%s: libarchive cannot read it: %s", c->name,
				la_error(&l));
		la_close(&l);
		return err;
	}
	while ((ret = sym_archive_read_next_header(l.a, &e)) != ARCHIVE_EOF) {
		if (ret < ARCHIVE_WARN) {
			if (l.io_err) {
				err = l.io_err;
				break;
			}
			tfs_log(TFS_LOG_WARNING, "%s: cannot read past entry %zu: %s", c->name, c->n,
				la_error(&l));
			c->damaged = true;
			break;
		}
		if (c->n >= UINT32_MAX) {
			tfs_log(TFS_LOG_WARNING, "%s: more than 2^32 entries: the rest is not listed",
				c->name);
			break;
		}
		err = lac_grow(c);
		if (err)
			break;
		struct lac_ent *x = &c->e[c->n];
		x->file_off = x->soff = LAC_NONE;
		x->unreadable = 0;
		if (has_data(e)) {
			uint64_t size = (uint64_t)sym_archive_entry_size(e);
			if (lac_encrypted(c, e, size)) {
				x->unreadable = -EACCES;
			} else {
				if (in_place_format(sym_archive_format(l.a)))
					x->file_off = lac_locate(&l, size, &err);
				if (err == -EIO && !l.io_err) {
					/* cut short or damaged: the entries before it are listed,
					 * as tar's are */
					tfs_log(TFS_LOG_WARNING, "%s: the data of entry %zu cannot be "
						"read (%s): it and the rest are not listed", c->name,
						c->n, la_error(&l));
					c->damaged = true;
					err = 0;
					break;
				}
				if (err)
					break;
				if (x->file_off == LAC_NONE) {
					x->soff = c->usize;
					err = lac_add_rec(c, (uint32_t)c->n, size);
					if (err)
						break;
				}
			}
		}
		if (!err && sym_archive_entry_hardlink(e) && has_data(e)) {
			if (c->nld == c->ld_cap) {
				size_t cap = c->ld_cap ? c->ld_cap * 2 : 16;
				struct lac_linkdata *p = realloc(c->ld, cap * sizeof(*p));
				if (!p) {
					err = -ENOMEM;
					break;
				}
				c->ld = p;
				c->ld_cap = cap;
			}
			struct lac_linkdata *d = &c->ld[c->nld];
			d->target = strdup(sym_archive_entry_hardlink(e));
			if (!d->target) {
				err = -ENOMEM;
				break;
			}
			d->file_off = x->file_off;
			d->soff = x->soff;
			d->size = (uint64_t)sym_archive_entry_size(e);
			d->unreadable = x->unreadable;
			c->nld++;
		}
		c->n++;
	}
	la_close(&l);
	if (c->nld)
		qsort(c->ld, c->nld, sizeof(*c->ld), ld_cmp);
	return err;
}

/* Pass 2: the members. */
static int lac_pass2(struct lac *c, const struct cont_sink *sink, uint64_t sid,
		     struct cont_stats *st)
{
	struct member_xattr *xa = NULL;
	struct la_src l;
	struct archive_entry *e;
	size_t k = 0;
	int err = la_open(&l, c->in), ret;

	if (err)
		goto out;
	xa = calloc(LAC_XATTRS_MAX, sizeof(*xa));
	err = -ENOMEM;
	if (!xa)
		goto out;
	err = 0;
	while (k < c->n && (ret = sym_archive_read_next_header(l.a, &e)) != ARCHIVE_EOF) {
		const struct lac_ent *x = &c->e[k++];
		struct arc_member m = {0};
		/* the name as stored (in the daemon's C locale libarchive gives names it would
		 * have to convert, a xar's UTF-8 ones, only as UTF-8) */
		const char *path = sym_archive_entry_pathname(e);
		if (!path)
			path = sym_archive_entry_pathname_utf8(e);

		if (ret < ARCHIVE_WARN) {
			err = l.io_err ? l.io_err : -EIO;
			tfs_log(TFS_LOG_ERR, "%s: the archive changed while it was read: %s",
				c->name, la_error(&l));
			break;
		}
		if (!path || !*path) {
			tfs_log(TFS_LOG_WARNING, "%s: entry %zu has no name it can be shown by; "
				"left out", c->name, k - 1);
			continue;
		}
		switch (sym_archive_entry_filetype(e)) {
		case 0:
		case AE_IFREG: m.type = MEMBER_REG; break;
		case AE_IFDIR: m.type = MEMBER_DIR; break;
		case AE_IFLNK: m.type = MEMBER_SYMLINK; break;
		case AE_IFCHR: m.type = MEMBER_CHR; break;
		case AE_IFBLK: m.type = MEMBER_BLK; break;
		case AE_IFIFO: m.type = MEMBER_FIFO; break;
		default:
			tfs_log(TFS_LOG_NOTICE, "%s: '%s' is a socket or of an unknown type; left out",
				c->name, path);
			continue;
		}
		m.link = (const uint8_t *)"";
		if (sym_archive_entry_hardlink(e)) {
			m.type = MEMBER_HARDLINK;
			m.link = (const uint8_t *)sym_archive_entry_hardlink(e);
		} else if (m.type == MEMBER_SYMLINK) {
			const char *t = sym_archive_entry_symlink(e);
			if (!t)
				t = sym_archive_entry_symlink_utf8(e);
			m.link = (const uint8_t *)(t ? t : "");
		}
		m.path = (const uint8_t *)path;
		m.path_len = strlen(path);
		m.link_len = strlen((const char *)m.link);
		m.hdr_off = sym_archive_read_header_position(l.a) > 0
				? (uint64_t)sym_archive_read_header_position(l.a)
				: 0;
		struct lac_ent moved = *x;
		const struct lac_linkdata *ld = NULL;
		if (m.type == MEMBER_REG && c->nld && sym_archive_entry_size(e) == 0) {
			struct lac_linkdata key = {.target = (char *)path};
			ld = bsearch(&key, c->ld, c->nld, sizeof(*c->ld), ld_cmp);
			if (ld) { /* the data comes with a later link to it */
				moved.file_off = ld->file_off;
				moved.soff = ld->soff;
				moved.unreadable = ld->unreadable;
				x = &moved;
			}
		}
		if (m.type == MEMBER_REG) {
			int64_t sz = sym_archive_entry_size(e);
			m.size = ld ? ld->size : sz > 0 ? (uint64_t)sz : 0;
			m.stored = m.size;
			if (x->file_off != LAC_NONE) {
				m.stream = 0;
				m.data_off = x->file_off;
			} else if (x->soff != LAC_NONE) {
				m.stream = sid;
				m.data_off = x->soff;
			} else if (x->unreadable) {
				m.unreadable = x->unreadable;
				m.why = "encrypted";
				m.stored = 0;
			}
		}
		m.mode = (uint32_t)sym_archive_entry_perm(e) & 07777;
		m.uid = sym_archive_entry_uid(e) > 0 ? (uint64_t)sym_archive_entry_uid(e) : 0;
		m.gid = sym_archive_entry_gid(e) > 0 ? (uint64_t)sym_archive_entry_gid(e) : 0;
		m.uname = sym_archive_entry_uname(e) ? sym_archive_entry_uname(e) : "";
		m.gname = sym_archive_entry_gname(e) ? sym_archive_entry_gname(e) : "";
		if (sym_archive_entry_mtime_is_set(e)) {
			m.mtime_sec = sym_archive_entry_mtime(e);
			m.mtime_nsec = (uint32_t)sym_archive_entry_mtime_nsec(e);
		}
		m.dev_major = (uint32_t)sym_archive_entry_rdevmajor(e);
		m.dev_minor = (uint32_t)sym_archive_entry_rdevminor(e);
		size_t nx = 0;
		const char *xn;
		const void *xv;
		size_t xl;
		sym_archive_entry_xattr_reset(e);
		while (nx < LAC_XATTRS_MAX &&
		       sym_archive_entry_xattr_next(e, &xn, &xv, &xl) == ARCHIVE_OK) {
			bool dup = false;
			for (size_t i = 0; i < nx && !dup; i++)
				dup = !strcmp(xa[i].name, xn);
			if (!dup && xn && *xn)
				xa[nx++] = (struct member_xattr){xn, xv, xl};
		}
		m.xattrs = nx ? xa : NULL;
		m.nxattrs = nx;
		if (sink->progress)
			sink->progress(sink->opaque, l.pos);
		err = sink->member(sink->opaque, &m);
		if (err)
			break;
		st->members++;
	}
out:
	free(xa);
	la_close(&l);
	return err;
}

static int lac_parse(struct src *in, const struct cont_sink *sink, struct cont_stats *stats)
{
	struct cont_stats st = {0};
	struct lac c = {.in = in, .name = sink->name ? sink->name : "archive"};
	uint64_t sid = 0;
	int err = la_guard(in, c.name); /* a hostile archive that loops libarchive: refused */

	if (!err) {
		err = rar5_scan(in, &c.rar5);
		if (err)
			tfs_log(TFS_LOG_ERR, "%s: cannot read the rar headers: %s", c.name,
				strerror(-err));
	}
	if (!err)
		err = lac_pass1(&c);

	if (!err && c.nrecs) {
		struct cont_stream s = {.codec = "libarchive", .coff = 0, .clen = src_size(in),
					.usize = c.usize, .params = c.recs,
					.params_len = c.nrecs * 12};
		err = sink->stream(sink->opaque, &s, &sid);
	}
	if (!err)
		err = lac_pass2(&c, sink, sid, &st);
	st.damaged = c.damaged;
	if (stats)
		*stats = st;
	for (size_t i = 0; i < c.nld; i++)
		free(c.ld[i].target);
	free(c.ld);
	free(c.e);
	free(c.recs);
	rar5_files_free(&c.rar5);
	return err;
}

const struct container cont_libarchive = {
	.name = "libarchive",
	.probe = lac_probe,
	.parse = lac_parse,
};
