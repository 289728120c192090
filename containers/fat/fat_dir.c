/* The FAT container's directory walk (see fat.c for the volume): every folder from the root,
 * breadth first, each read whole (at most FAT_DIR_MAX bytes, 65536 entries), each entry
 * reported as a member.
 *
 * Names as Linux's vfat shows them: a VFAT long name (the LFN entries before the short
 * entry, in descending order, 13 UTF-16 units each) when its sequence is whole and its
 * checksum matches the short name's, UTF-16 turned into UTF-8; otherwise the 8.3 name, its
 * base and extension lower-cased when the NT flags (byte 12, bits 3 and 4) say so, its bytes
 * above 0x7F read as code page 437 (the vfat driver's default).  LFN entries that do not lead
 * to their short entry (orphans) are ignored.  Skipped: deleted entries (0xE5), the volume
 * label, "." and "..".  A '/' in a name becomes '_'.
 *
 * Metadata: the modification date and time as a DOS time (dos_time: no zone; 2-second steps,
 * the creation time's 10 ms field belongs to the creation time, not this one).  Modes as
 * mcopy extracts them with umask 022 -- 0755 folders, 0644 files -- except that the
 * read-only attribute clears the write bits (0444), as the kernel's vfat does (mcopy ignores
 * it; the kernel's default mount shows 0755 for everything, which says nothing).  Hidden and
 * system files are shown.
 *
 * Loops: a folder whose clusters are already taken (a subfolder entry pointing at an ancestor
 * or at another folder) is listed empty with a warning, so that each cluster is walked once
 * and the walk ends.
 */
#include "containers/fat/fat_int.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/byteio.h"
#include "common/log.h"

#define FAT_PATH_MAX 4096
#define LFN_MAX 20 /* LFN entries in a name: 20 * 13 = 260 units, 255 used */

#define ATTR_RO 0x01
#define ATTR_VOLUME 0x08
#define ATTR_DIR 0x10
#define ATTR_LFN 0x0F

/* Code page 437, bytes 0x80..0xFF. */
static const uint16_t cp437[128] = {
	0x00C7, 0x00FC, 0x00E9, 0x00E2, 0x00E4, 0x00E0, 0x00E5, 0x00E7,
	0x00EA, 0x00EB, 0x00E8, 0x00EF, 0x00EE, 0x00EC, 0x00C4, 0x00C5,
	0x00C9, 0x00E6, 0x00C6, 0x00F4, 0x00F6, 0x00F2, 0x00FB, 0x00F9,
	0x00FF, 0x00D6, 0x00DC, 0x00A2, 0x00A3, 0x00A5, 0x20A7, 0x0192,
	0x00E1, 0x00ED, 0x00F3, 0x00FA, 0x00F1, 0x00D1, 0x00AA, 0x00BA,
	0x00BF, 0x2310, 0x00AC, 0x00BD, 0x00BC, 0x00A1, 0x00AB, 0x00BB,
	0x2591, 0x2592, 0x2593, 0x2502, 0x2524, 0x2561, 0x2562, 0x2556,
	0x2555, 0x2563, 0x2551, 0x2557, 0x255D, 0x255C, 0x255B, 0x2510,
	0x2514, 0x2534, 0x252C, 0x251C, 0x2500, 0x253C, 0x255E, 0x255F,
	0x255A, 0x2554, 0x2569, 0x2566, 0x2560, 0x2550, 0x256C, 0x2567,
	0x2568, 0x2564, 0x2565, 0x2559, 0x2558, 0x2552, 0x2553, 0x256B,
	0x256A, 0x2518, 0x250C, 0x2588, 0x2584, 0x258C, 0x2590, 0x2580,
	0x03B1, 0x00DF, 0x0393, 0x03C0, 0x03A3, 0x03C3, 0x00B5, 0x03C4,
	0x03A6, 0x0398, 0x03A9, 0x03B4, 0x221E, 0x03C6, 0x03B5, 0x2229,
	0x2261, 0x00B1, 0x2265, 0x2264, 0x2320, 0x2321, 0x00F7, 0x2248,
	0x00B0, 0x2219, 0x00B7, 0x221A, 0x207F, 0x00B2, 0x25A0, 0x00A0,
};

struct lfn {
	uint16_t u[LFN_MAX * 13];
	unsigned seq;  /* the sequence number of the last LFN entry taken, 0 if none */
	unsigned n;    /* entries in the name */
	uint8_t csum;
};

struct dirq {
	char *path; /* "" for the root */
	uint32_t cluster;
};

struct walk {
	struct fat *f;
	struct dirq *q;
	size_t nq, head, cap;
	struct member_sparse *dext; /* the folder being walked: where its bytes are */
	size_t ndext, dext_cap;
	size_t dcur; /* the extent of the last entry looked up (entries come in order) */
	char path[FAT_PATH_MAX + 300];
};

static size_t put_utf8(char *o, uint32_t c)
{
	if (c == '/' || !c)
		c = '_';
	if (c < 0x80) {
		o[0] = (char)c;
		return 1;
	}
	if (c < 0x800) {
		o[0] = (char)(0xC0 | c >> 6);
		o[1] = (char)(0x80 | (c & 0x3F));
		return 2;
	}
	if (c < 0x10000) {
		o[0] = (char)(0xE0 | c >> 12);
		o[1] = (char)(0x80 | ((c >> 6) & 0x3F));
		o[2] = (char)(0x80 | (c & 0x3F));
		return 3;
	}
	o[0] = (char)(0xF0 | c >> 18);
	o[1] = (char)(0x80 | ((c >> 12) & 0x3F));
	o[2] = (char)(0x80 | ((c >> 6) & 0x3F));
	o[3] = (char)(0x80 | (c & 0x3F));
	return 4;
}

static uint8_t short_csum(const uint8_t *name)
{
	uint8_t s = 0;

	for (int i = 0; i < 11; i++)
		s = (uint8_t)(((s & 1) << 7) + (s >> 1) + name[i]);
	return s;
}

/* Takes LFN entry e into l (or drops what l held if e does not follow it). */
static void lfn_take(struct lfn *l, const uint8_t *e)
{
	static const uint8_t pos[13] = {1, 3, 5, 7, 9, 14, 16, 18, 20, 22, 24, 28, 30};
	unsigned seq = e[0] & 0x1F;

	if (e[0] & 0x40) { /* the last part of the name comes first */
		if (!seq || seq > LFN_MAX) {
			l->seq = 0;
			return;
		}
		l->n = seq;
		l->csum = e[13];
		memset(l->u, 0, sizeof(l->u));
	} else if (!l->seq || seq != l->seq - 1 || e[13] != l->csum) {
		l->seq = 0; /* out of order: an orphan */
		return;
	}
	l->seq = seq;
	for (int i = 0; i < 13; i++)
		l->u[(seq - 1) * 13 + i] = le16(e + pos[i]);
}

/* The long name in l as UTF-8 into out (its length, 0 if none). */
static size_t lfn_name(const struct lfn *l, char *out)
{
	size_t n = 0, units = (size_t)l->n * 13;

	for (size_t i = 0; i < units && i < 255; i++) {
		uint32_t c = l->u[i];
		if (!c || c == 0xFFFF)
			break;
		if (c >= 0xD800 && c < 0xDC00 && i + 1 < units && l->u[i + 1] >= 0xDC00 &&
		    l->u[i + 1] < 0xE000) {
			c = 0x10000 + ((c - 0xD800) << 10) + (l->u[i + 1] - 0xDC00);
			i++;
		} else if (c >= 0xD800 && c < 0xE000) {
			c = 0xFFFD;
		}
		n += put_utf8(out + n, c);
	}
	out[n] = '\0';
	return n;
}

/* The 8.3 name of short entry e as Linux shows it. */
static size_t short_name(const uint8_t *e, char *out)
{
	size_t n = 0;
	int blen = 8, elen = 3;

	while (blen && e[blen - 1] == ' ')
		blen--;
	while (elen && e[8 + elen - 1] == ' ')
		elen--;
	for (int i = 0; i < blen + elen; i++) {
		uint8_t c = i < blen ? e[i] : e[8 + i - blen];
		bool lower = i < blen ? (e[12] & 0x08) : (e[12] & 0x10);
		if (i == blen)
			out[n++] = '.';
		if (i == 0 && c == 0x05)
			c = 0xE5; /* a first byte 0xE5 is stored as 0x05 */
		if (lower && c >= 'A' && c <= 'Z')
			c = (uint8_t)(c + 32);
		n += put_utf8(out + n, c < 0x80 ? c : cp437[c - 0x80]);
	}
	out[n] = '\0';
	return n;
}

static int64_t dos_seconds(unsigned date, unsigned time)
{
	struct tm tm = {.tm_year = 80 + (int)(date >> 9), .tm_mon = (int)((date >> 5) & 15) - 1,
			.tm_mday = (int)(date & 31), .tm_hour = (int)(time >> 11),
			.tm_min = (int)((time >> 5) & 63), .tm_sec = (int)(time & 31) * 2};

	if (tm.tm_mon < 0 || tm.tm_mon > 11 || tm.tm_mday < 1)
		return 0; /* no date: the epoch */
	return (int64_t)timegm(&tm);
}

static int queue_dir(struct walk *w, const char *path, uint32_t cluster)
{
	if (w->nq == w->cap) {
		size_t cap = w->cap ? w->cap * 2 : 16;
		struct dirq *q = realloc(w->q, cap * sizeof(*q));
		if (!q)
			return -ENOMEM;
		w->q = q;
		w->cap = cap;
	}
	char *p = strdup(path);
	if (!p)
		return -ENOMEM;
	w->q[w->nq++] = (struct dirq){.path = p, .cluster = cluster};
	return 0;
}

/* Where byte off of the folder being walked lies in the volume (its entry's hdr_off); off
 * never goes back within a folder. */
static uint64_t entry_offset(struct walk *w, uint64_t off)
{
	while (w->dcur < w->ndext && off - w->dext[w->dcur].off >= w->dext[w->dcur].len)
		w->dcur++;
	if (w->dcur == w->ndext)
		return 0;
	return w->dext[w->dcur].src + (off - w->dext[w->dcur].off);
}

/* Short entry e (at off in its folder), named name, in the folder at path plen bytes of
 * w->path. */
static int report(struct walk *w, const uint8_t *e, uint64_t off, size_t plen, const char *name,
		  size_t nlen)
{
	struct fat *f = w->f;
	struct arc_member m = {0};
	uint32_t cluster = (uint32_t)le16(e + 26) | (f->type == 32 ? (uint32_t)le16(e + 20) << 16 : 0);
	const char *why = NULL;
	int err = 0;

	if (plen + 1 + nlen > FAT_PATH_MAX) {
		tfs_log(TFS_LOG_WARNING, "%s: a path longer than %d bytes in %s: left out", f->name,
			FAT_PATH_MAX, plen ? w->path : "/");
		f->damaged = true;
		return 0;
	}
	char *p = w->path + plen;
	if (plen)
		*p++ = '/';
	memcpy(p, name, nlen + 1);
	m.path = (const uint8_t *)w->path;
	m.path_len = (size_t)(p - w->path) + nlen;
	m.link = (const uint8_t *)"";
	m.uname = m.gname = "";
	m.no_owner = true;
	m.mtime_sec = dos_seconds(le16(e + 24), le16(e + 22));
	m.dos_time = true;
	m.hdr_off = entry_offset(w, off);
	if (e[11] & ATTR_DIR) {
		m.type = MEMBER_DIR;
		m.mode = 0755;
		if (cluster < 2 || cluster > (uint64_t)f->count + 1) {
			tfs_log(TFS_LOG_WARNING, "%s: folder %s: its first cluster (%" PRIu32 ") is "
				"outside the volume: listed empty", f->name, w->path, cluster);
			f->damaged = true;
		} else {
			err = queue_dir(w, w->path, cluster);
		}
	} else {
		m.type = MEMBER_REG;
		m.mode = (e[11] & ATTR_RO) ? 0444 : 0644;
		m.size = le32(e + 28);
		if (m.size)
			err = fat_chain(f, cluster, m.size, false, &why);
		if (err == -EIO) {
			tfs_log(TFS_LOG_WARNING, "%s: %s: %s: unreadable", f->name, w->path, why);
			m.unreadable = -EIO;
			m.why = why;
			err = 0;
		} else if (m.size && f->x.n == 1) { /* one extent: read in place */
			m.data_off = f->x.v[0].src;
			m.stored = m.size;
		} else if (m.size) {
			m.sparse = f->x.v;
			m.nsparse = f->x.n;
			m.stored = f->x.v[f->x.n - 1].src + f->x.v[f->x.n - 1].len;
			for (size_t i = 0; i < f->x.n; i++)
				if (f->x.v[i].src + f->x.v[i].len > m.stored)
					m.stored = f->x.v[i].src + f->x.v[i].len;
		}
	}
	if (err)
		return err;
	f->members++;
	if (f->sink->progress)
		f->sink->progress(f->sink->opaque, f->x.n ? f->x.v[0].src : 0);
	err = f->sink->member(f->sink->opaque, &m);
	w->path[plen] = '\0';
	return err;
}

/* The entries of one folder (its bytes in d), in the folder at path (w->path). */
static int walk_entries(struct walk *w, const uint8_t *d, size_t len)
{
	size_t plen = strlen(w->path);
	char name[LFN_MAX * 13 * 4 + 16];
	struct lfn l = {0};
	int err = 0;

	for (size_t off = 0; !err && off + 32 <= len; off += 32) {
		const uint8_t *e = d + off;
		size_t n;

		if (!e[0])
			break; /* the end of the folder */
		if (e[0] == 0xE5) {
			l.seq = 0;
			continue;
		}
		if ((e[11] & 0x3F) == ATTR_LFN) {
			lfn_take(&l, e);
			continue;
		}
		if (e[11] & ATTR_VOLUME) {
			l.seq = 0;
			continue;
		}
		if (l.seq == 1 && l.csum == short_csum(e))
			n = lfn_name(&l, name);
		else
			n = 0;
		l.seq = 0;
		if (!n) {
			if (e[0] == '.' && (!memcmp(e + 1, "          ", 10) ||
					    (e[1] == '.' && !memcmp(e + 2, "         ", 9))))
				continue; /* "." and ".." */
			n = short_name(e, name);
		}
		if (!n || n == strspn(name, "."))
			continue; /* no name, or only dots: not one Linux shows */
		err = report(w, e, off, plen, name, n);
	}
	return err;
}

/* Reads folder q (the root when q->cluster is 0 on FAT12/16) and walks it. */
static int walk_dir(struct walk *w, const struct dirq *q)
{
	struct fat *f = w->f;
	uint8_t *d = NULL;
	uint64_t len = 0;
	const char *why;
	int err = 0;

	snprintf(w->path, sizeof(w->path), "%s", q->path);
	if (!q->cluster) {
		len = f->root_len;
		if (f->root_off > f->size || len > f->size - f->root_off) {
			tfs_log(TFS_LOG_WARNING, "%s: the root folder lies past the end of the "
				"volume (truncated)", f->name);
			f->damaged = true;
			len = f->root_off > f->size ? 0 : f->size - f->root_off;
		}
		d = malloc(len ? (size_t)len : 1);
		if (!d)
			return -ENOMEM;
		err = src_pread_full(f->in, d, (size_t)len, f->root_off);
		w->dext[0] = (struct member_sparse){.off = 0, .len = len, .src = f->root_off};
		w->ndext = 1;
	} else {
		err = fat_chain(f, q->cluster, FAT_DIR_MAX, true, &why);
		if (err)
			return err;
		if (why)
			tfs_log(TFS_LOG_WARNING, "%s: folder %s: %s: its entries end there", f->name,
				*q->path ? q->path : "/", why);
		for (size_t i = 0; i < f->x.n; i++)
			len += f->x.v[i].len;
		if (f->x.n > w->dext_cap) {
			struct member_sparse *x = realloc(w->dext, f->x.n * sizeof(*x));
			if (!x)
				return -ENOMEM;
			w->dext = x;
			w->dext_cap = f->x.n;
		}
		if (f->x.n) /* none: a chain that went wrong at once (f->x.v may be NULL) */
			memcpy(w->dext, f->x.v, f->x.n * sizeof(*f->x.v));
		w->ndext = f->x.n;
		d = malloc(len ? (size_t)len : 1);
		if (!d)
			return -ENOMEM;
		for (size_t i = 0, at = 0; !err && i < f->x.n; i++) {
			err = src_pread_full(f->in, d + at, (size_t)f->x.v[i].len, f->x.v[i].src);
			at += (size_t)f->x.v[i].len;
		}
	}
	w->dcur = 0;
	if (!err)
		err = walk_entries(w, d, (size_t)len);
	free(d);
	return err;
}

int fat_walk(struct fat *f)
{
	struct walk w = {.f = f, .dext = malloc(sizeof(*w.dext)), .dext_cap = 1};
	int err = w.dext ? queue_dir(&w, "", f->type == 32 ? f->root_cluster : 0) : -ENOMEM;

	for (; !err && w.head < w.nq; w.head++)
		err = walk_dir(&w, &w.q[w.head]);
	for (size_t i = 0; i < w.nq; i++)
		free(w.q[i].path);
	free(w.q);
	free(w.dext);
	return err;
}
