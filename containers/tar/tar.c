/* The tar parser: one forward pass over the source, one header block at a time.
 *
 * The same parser runs over a plain file, where skipping a member must cost nothing (indexing
 * a 2 GB tar reads its headers only), and over a forward-only decompressed stream, where a
 * read behind the current position fails with -ESPIPE.  So every read goes through tar_read(),
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
 * read as GNU tar reads them (tar_num_field), only regular files have data (a size in a
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
 *
 * Files: this one reads header blocks and member headers and runs the parse loop;
 * tar_pax.c handles the x, g, L and K headers, tar_sparse.c the sparse maps, tar_xattr.c the
 * extended attributes; tar_util.c holds the buffers, numbers, reading and damage helpers
 * they all call (it calls none of them); tar_int.h is what they share.
 */
#include "containers/tar/tar_int.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"

/* ---- header blocks ---------------------------------------------------------------------- */

/* A numeric field that must not be negative; malformed or negative values read as 0 (GNU
 * tar reports an error and leaves the value alone: a uid or gid of the extracting user). */
static uint64_t num_field_u(const uint8_t *f, size_t n)
{
	int64_t v;

	return tar_num_field(f, n, &v) == 0 && v > 0 ? (uint64_t)v : 0;
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

/* Reads the block at off ahead of the parse loop (which takes it from p->peek instead of
 * reading it again) and says whether it is a header, a zero block or the end.  0 or -errno. */
static int peek_block(struct parser *p, uint64_t off, bool *next_is_header)
{
	ssize_t n = tar_read(p, p->peek, TAR_BLOCK, off);

	if (n < 0)
		return (int)n;
	p->peek_off = off;
	p->peek_len = (size_t)n;
	p->has_peek = true;
	*next_is_header = n < TAR_BLOCK || is_zero(p->peek, TAR_BLOCK) || tar_header_valid(p->peek);
	return 0;
}

/* The member's path: GNU.sparse.name, PAX path, GNU long name, or ustar prefix/name. */
static int build_path(struct parser *p, const uint8_t *h, const struct pax_attrs *a,
		      size_t prefix_max)
{
	size_t nlen, plen;
	int err;

	if (a->has & A_SPNAME)
		return tar_buf_setz(&p->path, a->spname, a->spname_len);
	if (a->has & A_PATH)
		return tar_buf_setz(&p->path, a->path, a->path_len);
	if (p->has_longname)
		return tar_buf_setz(&p->path, p->longname.p, p->longname.len);
	nlen = strnlen((const char *)h + H_NAME, 100);
	plen = prefix_max ? strnlen((const char *)h + H_PREFIX, prefix_max) : 0;
	p->path.len = 0;
	if (plen) {
		err = tar_buf_put(&p->path, h + H_PREFIX, plen);
		if (!err)
			err = tar_buf_put(&p->path, "/", 1);
		if (err)
			return err;
	}
	err = tar_buf_put(&p->path, h + H_NAME, nlen);
	if (!err)
		err = tar_buf_put(&p->path, "", 1);
	if (err)
		return err;
	p->path.len--;
	return 0;
}

static enum member_type entry_type(struct parser *p, uint8_t t, uint64_t hoff)
{
	switch (t) {
	case '0':
	case '\0':
	case '7':
	case 'S':
		return MEMBER_REG;
	case '1':
		return MEMBER_HARDLINK;
	case '2':
		return MEMBER_SYMLINK;
	case '3':
		return MEMBER_CHR;
	case '4':
		return MEMBER_BLK;
	case '5':
	case 'D':
		return MEMBER_DIR;
	case '6':
		return MEMBER_FIFO;
	default:
		tfs_log(TFS_LOG_WARNING,
			"tar: member at offset %" PRIu64
			" has unknown type 0x%02x, read as a regular file",
			hoff, t);
		return MEMBER_REG;
	}
}

/* A member being read: its header block, what its PAX records say, where its data is. */
struct mstate {
	uint8_t h[TAR_BLOCK];
	struct pax_attrs a;
	uint64_t hoff;	       /* its header */
	uint64_t start;	       /* its data (after old GNU sparse extension blocks) */
	uint64_t stored_total; /* bytes from start, the sparse 1.0 map included */
	uint64_t next;	       /* the next header */
	uint64_t real;	       /* a sparse file's real size, 0 if not known yet */
	enum member_type type;
	bool ustar, gnu, sparse;
};

/* What the member is and where its data lies: PAX records replayed, old GNU sparse extension
 * blocks read, path and type, stored size, next header.  1 to go on, 0 to stop (truncated),
 * or -errno. */
static int member_layout(struct parser *p, struct mstate *m, uint64_t hsize)
{
	uint8_t t = m->h[H_TYPE];
	size_t prefix_max = 0;
	int err;

	tar_member_start(p, m->hoff);
	p->nsp = 0;
	p->nxr = 0;
	p->xr_warned = false;
	if (!p->damaged) {
		err = tar_pax_replay(p, &m->a);
		if (err && err != -EINVAL)
			return err;
	}
	if (t == 'S') {
		/* the header's four extents must come first: drop any from PAX records */
		p->nsp = 0;
		err = tar_gnu_sparse(p, m->h, m->hoff, &m->start);
		if (err <= 0)
			return err;
		m->sparse = true;
		m->real = num_field_u(m->h + G_REALSIZE, 12);
	}
	m->ustar = !memcmp(m->h + H_MAGIC, "ustar\0", 6);
	m->gnu = !memcmp(m->h + H_MAGIC, "ustar  \0", 8);
	if (m->ustar)
		prefix_max = memcmp(m->h + H_STAR_MAGIC, "tar\0", 4) ? 155 : 131;
	err = build_path(p, m->h, &m->a, prefix_max);
	if (err)
		return err;
	m->type = entry_type(p, t, m->hoff);
	if ((t == '0' || t == '\0') && p->path.len && p->path.p[p->path.len - 1] == '/')
		m->type = MEMBER_DIR; /* old archives mark directories with a trailing slash only */
	/* Only regular files and GNU dumpdirs have data.  GNU tar's extraction reads none after
	 * a directory, link, device or FIFO header, whatever its size field or a PAX size says
	 * (old tars wrote the linked file's size into hard-link headers, some a size into
	 * directory headers), and neither does bsdtar, except after a PAX hard link. */
	m->stored_total = m->a.has & A_SIZE ? m->a.size : hsize;
	if (m->type != MEMBER_REG && t != 'D' && m->stored_total) {
		/* pax lets a hard link carry the file's data (pax -o linkdata; bsdtar reads it):
		 * the data is taken to be there only when the next block is neither a header
		 * nor zeros, so the members GNU tar extracts are the same either way (it reads
		 * such data as a bad header and skips to the next) */
		bool next_is_header = false;

		err = peek_block(p, m->start, &next_is_header);
		if (err)
			return err;
		if (next_is_header)
			m->stored_total = 0;
	}
	if (tar_past_end(p, m->start, m->stored_total))
		return tar_truncated(p, m->hoff, m->start + m->stored_total);
	m->next = m->start + pad_block(m->stored_total);
	return 1;
}

/* A sparse member's map (the 1.0 map at the start of its data, or the PAX 0.x keywords), put
 * right for readers; e->data_off and e->stored then exclude a 1.0 map.  1 to go on (p->damaged
 * may be set: skip the member), 0 truncated, -errno. */
static int member_sparse(struct parser *p, struct mstate *m, struct arc_member *e)
{
	const struct pax_attrs *a = &m->a;
	uint64_t map_bytes = 0;
	int err;

	/* a 1.0 map without GNU.sparse.realsize: GNU tar extracts the data as it is stored, map
	 * and all (bsdtar reads the map and keeps the stored size): GNU tar is followed */
	if (e->type == MEMBER_REG && !m->sparse && (a->has & A_SPMAJOR) && (a->has & A_SPREAL)) {
		if (a->sp_major != 1 || a->sp_minor != 0) {
			char msg[80];

			snprintf(msg, sizeof(msg), "unsupported sparse format %" PRIu64 ".%" PRIu64,
				 a->sp_major, a->has & A_SPMINOR ? a->sp_minor : 0);
			tar_damage(p, msg);
			return 1;
		}
		p->nsp = 0;
		err = tar_sparse1_map(p, m->hoff, m->start, m->stored_total, &map_bytes);
		if (err <= 0 || p->damaged)
			return err;
		e->data_off += map_bytes;
		e->stored -= map_bytes;
		m->sparse = true;
	} else if (e->type == MEMBER_REG && !m->sparse && a->sp_old) {
		if ((a->has & A_SPNBLOCKS) && a->sp_nblocks != p->nsp)
			tfs_log(TFS_LOG_NOTICE,
				"tar: sparse member at offset %" PRIu64
				": GNU.sparse.numblocks says %" PRIu64
				" but the map has %zu extents;"
				" the map is used (as by bsdtar)",
				p->m_off, a->sp_nblocks, p->nsp);
		m->sparse = true;
	}
	if (!m->sparse)
		return 1;
	if (a->has & A_SPREAL)
		m->real = a->sp_real;
	err = tar_sparse_finish(p, &m->real, m->real != 0 || (a->has & A_SPREAL), e->stored);
	if (err == -EINVAL) {
		p->damaged = true;
		return 1;
	}
	return err ? err : 1;
}

/* The rest of the entry: names, link, owners, times, device, xattrs, sparse map.  1, 0 if the
 * data is not all there (a stream), or -errno. */
static int member_fill(struct parser *p, struct mstate *m, struct arc_member *e, size_t *nxattrs)
{
	const struct pax_attrs *a = &m->a;
	const uint8_t *h = m->h;
	int err;

	if (e->type == MEMBER_HARDLINK || e->type == MEMBER_SYMLINK) {
		if (a->has & A_LINK)
			err = tar_buf_setz(&p->link, a->link, a->link_len);
		else if (p->has_longlink)
			err = tar_buf_setz(&p->link, p->longlink.p, p->longlink.len);
		else
			err = tar_buf_setz(&p->link, h + H_LINK, 100);
	} else {
		err = tar_buf_setz(&p->link, "", 0);
	}
	if (!err)
		err = a->has & A_UNAME
			  ? tar_buf_setz(&p->uname, a->uname, a->uname_len)
			  : tar_buf_setz(&p->uname, h + H_UNAME, m->ustar || m->gnu ? 32 : 0);
	if (!err)
		err = a->has & A_GNAME
			  ? tar_buf_setz(&p->gname, a->gname, a->gname_len)
			  : tar_buf_setz(&p->gname, h + H_GNAME, m->ustar || m->gnu ? 32 : 0);
	if (!err)
		err = tar_xattrs_build(p, nxattrs);
	if (err)
		return err;

	/* On a stream the source's end is unknown: prove the data is all there (a last byte in
	 * the block peek_block read is known already: the stream cannot go back to it). */
	if (p->srcsize == SRC_SIZE_UNKNOWN && e->stored) {
		uint64_t last = e->data_off + e->stored - 1;
		uint8_t c;
		ssize_t n;

		if (p->has_peek && last >= p->peek_off && last < p->peek_off + TAR_BLOCK)
			n = last < p->peek_off + p->peek_len;
		else
			n = tar_read(p, &c, 1, last);

		if (n < 0)
			return (int)n;
		if (n < 1)
			return tar_truncated(p, m->hoff, e->data_off + e->stored);
	}

	e->path = p->path.p;
	e->path_len = p->path.len;
	e->link = p->link.p;
	e->link_len = p->link.len;
	e->hdr_off = p->m_off;
	if (e->type == MEMBER_REG)
		e->size = m->sparse ? m->real : e->stored;
	e->mode = (uint32_t)(num_field_u(h + H_MODE, 8) & 07777);
	e->uid = a->has & A_UID ? a->uid : num_field_u(h + H_UID, 8);
	e->gid = a->has & A_GID ? a->gid : num_field_u(h + H_GID, 8);
	if (a->has & A_MTIME) {
		e->mtime_sec = a->mtime_sec;
		e->mtime_nsec = a->mtime_nsec;
	} else {
		int64_t mt;

		/* malformed or out of range: -1, what GNU tar extracts then (with an error) */
		if (tar_num_field(h + H_MTIME, 12, &mt)) {
			tfs_log(TFS_LOG_WARNING,
				"tar: member at offset %" PRIu64 ": bad mtime field, read as -1",
				p->m_off);
			mt = -1;
		}
		e->mtime_sec = mt;
	}
	if (e->type == MEMBER_CHR || e->type == MEMBER_BLK) {
		e->dev_major =
		    (uint32_t)(a->has & A_DEVMAJOR ? a->devmajor : num_field_u(h + H_DEVMAJOR, 8));
		e->dev_minor =
		    (uint32_t)(a->has & A_DEVMINOR ? a->devminor : num_field_u(h + H_DEVMINOR, 8));
	}
	e->uname = (const char *)p->uname.p;
	e->gname = (const char *)p->gname.p;
	if (m->sparse) {
		/* an all-hole file has no extents but is still sparse: never NULL here */
		if (tar_grow((void **)&p->sp, &p->capsp, 1, sizeof(*p->sp)))
			return -ENOMEM;
		e->sparse = p->sp;
		e->nsparse = p->nsp;
	}
	e->xattrs = *nxattrs ? p->xa : NULL;
	e->nxattrs = *nxattrs;
	return 1;
}

/* A member's own header at hoff (copied from p->blk), stored size hsize from its size
 * field.  Returns 1 to go on, 0 to stop, or -errno. */
static int member(struct parser *p, uint64_t hoff, uint64_t hsize)
{
	struct mstate m = {.hoff = hoff, .start = hoff + TAR_BLOCK};
	struct arc_member e = {0};
	size_t nxattrs = 0;
	int err;

	memcpy(m.h, p->blk, sizeof(m.h));
	err = member_layout(p, &m, hsize);
	if (err <= 0)
		return err;
	if (p->damaged)
		goto skip;
	e.type = m.type;
	e.data_off = m.start;
	e.stored = m.stored_total;
	err = member_sparse(p, &m, &e);
	if (err <= 0)
		return err;
	if (p->damaged)
		goto skip;
	err = member_fill(p, &m, &e, &nxattrs);
	if (err <= 0)
		return err;
	err = p->cb->entry(p->cb->opaque, &e);
	if (err)
		return err < 0 ? err : -EINVAL;
	p->st.members++;
	if (p->cb->progress && p->st.members % TAR_PROGRESS_EVERY == 0)
		p->cb->progress(p->cb->opaque, m.next);
skip:
	p->off = m.next;
	p->st.end_off = m.next;
	tar_member_reset(p);
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
	tar_member_reset(p);
	p->st.bad_headers++;
	p->resync = true;
	p->off = off + TAR_BLOCK;
}

/* Data of a header that is not a member (V, N, M): skipped.  1, or 0 if truncated. */
static int skip_data(struct parser *p, uint64_t hoff, uint64_t size)
{
	if (tar_past_end(p, hoff + TAR_BLOCK, size))
		return tar_truncated(p, hoff, hoff + TAR_BLOCK + size);
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

	if (tar_num_field(b + H_SIZE, 12, &size) || size < 0) {
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
		return tar_meta(p, off, (uint64_t)size, META_LONGNAME);
	case 'K':
		return tar_meta(p, off, (uint64_t)size, META_LONGLINK);
	case 'x':
	case 'X': /* Solaris' name for 'x' */
		return tar_meta(p, off, (uint64_t)size, META_PAX);
	case 'g':
		return tar_meta(p, off, (uint64_t)size, META_GLOBAL);
	case 'V':
		tfs_log(TFS_LOG_NOTICE, "tar: volume label '%s' at offset %" PRIu64 " skipped",
			tar_printable(b, strnlen((const char *)b, 100), name, sizeof(name)), off);
		return skip_data(p, off, (uint64_t)size);
	case 'N':
	case 'M':
		tfs_log(TFS_LOG_WARNING,
			"tar: %s header '%s' at offset %" PRIu64 " not supported, skipped",
			b[H_TYPE] == 'M' ? "multi-volume continuation" : "old GNU long-name",
			tar_printable(b, strnlen((const char *)b, 100), name, sizeof(name)), off);
		tar_member_reset(p);
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
		return tar_truncated(p, off, off + TAR_BLOCK);
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
		ssize_t n = tar_read(p, p->blk, TAR_BLOCK, pos);

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
			n = tar_read(p, p->blk, TAR_BLOCK, off);
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
				tar_member_reset(p);
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

	tar_buf_free(&p.longname);
	tar_buf_free(&p.longlink);
	tar_pax_set_free(&p.local);
	tar_pax_set_free(&p.global);
	tar_pax_set_free(&p.gnew);
	free(p.sp);
	free(p.xr);
	tar_buf_free(&p.xdata);
	free(p.xt);
	free(p.xa);
	tar_buf_free(&p.path);
	tar_buf_free(&p.link);
	tar_buf_free(&p.uname);
	tar_buf_free(&p.gname);
	return ret;
}
