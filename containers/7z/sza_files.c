/* FilesInfo of a 7z header (sza_int.h): one member per file.  Its properties (empty-stream,
 * empty-file and anti bits, UTF-16LE names, times, attributes) are located first and then
 * walked in step, one file at a time, so that no file is held in memory: a header of a
 * million empty files costs nothing beyond its own bytes.  Files that are not empty streams
 * take the substreams in order, folder after folder, each folder's stream declared as its
 * first file comes (sza_enter_folder).
 */
#include "containers/7z/sza_int.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "common/byteio.h"

/* ---- files --------------------------------------------------------------------------------- */

/* A property of FilesInfo: where its data is. */
struct sza_prop {
	bool present;
	size_t off, size;
};

/* A cursor over the "defined" vector and the values of a times or attributes property. */
struct sza_vals {
	const uint8_t *def; /* NULL: all defined */
	const uint8_t *p;   /* next value */
	size_t left;	    /* bytes of values left */
	unsigned width;
	bool present;
};

static int sza_vals_open(struct sza_db *db, const struct sza_prop *pr, uint64_t nfiles,
			 unsigned width, struct sza_vals *v)
{
	struct sza_rd r = {db->hdr + pr->off, pr->size, 0};
	uint8_t all, ext;

	memset(v, 0, sizeof(*v));
	v->width = width;
	if (!pr->present)
		return 0;
	if (sza_rd_byte(db, &r, &all))
		return db->err;
	if (!all) {
		if ((nfiles + 7) / 8 > r.len - r.pos)
			return sza_damaged(db, &r,
					   "a times or attributes vector runs past its end");
		v->def = r.p + r.pos;
		r.pos += (size_t)((nfiles + 7) / 8);
	}
	if (sza_rd_byte(db, &r, &ext))
		return db->err;
	if (ext)
		return sza_bad(db, -ENOTSUP, "7z: file properties stored outside the header");
	v->p = r.p + r.pos;
	v->left = r.len - r.pos;
	v->present = true;
	return 0;
}

/* The value of file i (in order): 1 and *val, 0 if not defined, -EIO past the end. */
static int sza_vals_next(struct sza_db *db, struct sza_vals *v, uint64_t i, uint64_t *val)
{
	if (!v->present || (v->def && !sza_bit(v->def, i)))
		return 0;
	if (v->left < v->width)
		return sza_damaged(db, NULL, "fewer times or attributes than files");
	*val = v->width == 8 ? le64(v->p) : le32(v->p);
	v->p += v->width;
	v->left -= v->width;
	return 1;
}

static int sza_name_room(struct sza_db *db, size_t need)
{
	if (need <= db->name_cap)
		return 0;
	size_t cap = need * 2;
	char *p = realloc(db->name, cap);
	if (!p)
		return sza_bad(db, -ENOMEM, "7z: out of memory");
	db->name = p;
	db->name_cap = cap;
	return 0;
}

/* The next UTF-16LE name at *r, as UTF-8 in db->name; *len set.  Surrogate pairs are joined,
 * anything else that is not UTF-16 becomes U+FFFD. */
static int sza_name_next(struct sza_db *db, struct sza_rd *r, size_t *len)
{
	size_t o = 0, start = r->pos;

	for (;;) {
		uint32_t c;

		if (r->len - r->pos < 2)
			return sza_damaged(db, r, "a name without its end");
		c = le16(r->p + r->pos);
		r->pos += 2;
		if (c == 0)
			break;
		if (c >= 0xD800 && c < 0xDC00 && r->len - r->pos >= 2) {
			uint32_t lo = le16(r->p + r->pos);
			if (lo >= 0xDC00 && lo < 0xE000) {
				r->pos += 2;
				c = 0x10000 + ((c - 0xD800) << 10) + (lo - 0xDC00);
			}
		}
		if (c >= 0xD800 && c < 0xE000)
			c = 0xFFFD;
		if (sza_name_room(db, o + 5))
			return db->err;
		if (c < 0x80) {
			db->name[o++] = (char)c;
		} else if (c < 0x800) {
			db->name[o++] = (char)(0xC0 | c >> 6);
			db->name[o++] = (char)(0x80 | (c & 0x3F));
		} else if (c < 0x10000) {
			db->name[o++] = (char)(0xE0 | c >> 12);
			db->name[o++] = (char)(0x80 | (c >> 6 & 0x3F));
			db->name[o++] = (char)(0x80 | (c & 0x3F));
		} else {
			db->name[o++] = (char)(0xF0 | c >> 18);
			db->name[o++] = (char)(0x80 | (c >> 12 & 0x3F));
			db->name[o++] = (char)(0x80 | (c >> 6 & 0x3F));
			db->name[o++] = (char)(0x80 | (c & 0x3F));
		}
	}
	(void)start;
	if (sza_name_room(db, o + 1))
		return db->err;
	db->name[o] = '\0';
	*len = o;
	return 0;
}

/* FILETIME (100 ns since 1601) to seconds and nanoseconds since 1970. */
static void sza_filetime(uint64_t ft, int64_t *sec, uint32_t *nsec)
{
	if (ft >= (uint64_t)SZA_FILETIME_UNIX) {
		*sec = (int64_t)((ft - (uint64_t)SZA_FILETIME_UNIX) / 10000000);
		*nsec = (uint32_t)((ft - (uint64_t)SZA_FILETIME_UNIX) % 10000000) * 100;
	} else { /* before 1970: floor, so that nsec stays positive */
		uint64_t d = (uint64_t)SZA_FILETIME_UNIX - ft;
		uint64_t s = d / 10000000, r = d % 10000000;

		*sec = -(int64_t)s - (r ? 1 : 0);
		*nsec = r ? (uint32_t)(10000000 - r) * 100 : 0;
	}
}

/* Type and permissions of a file from its attributes and whether it has data.  A file with
 * data is a regular file or a symlink whatever else its mode says (7-Zip's -si stores the mode
 * of its standard input, a pipe).  Without the unix extension (an archive made on Windows),
 * FILE_ATTRIBUTE_READONLY takes the write bits away: 0444 and 0555, as bsdtar extracts them
 * (7zz x does so for files only, and leaves a folder 0755 as Windows ignores the bit on
 * folders).  The unix extension, when there is one, wins. */
static void sza_file_mode(struct arc_member *m, bool has_attr, uint32_t attr, bool is_dir,
			  bool has_data)
{
	if (has_attr && (attr & SZA_ATTR_UNIX) && (attr >> 16) != 0) {
		uint32_t mode = attr >> 16;

		m->mode = mode & 07777;
		switch (mode & S_IFMT) {
		case S_IFLNK:
			m->type = MEMBER_SYMLINK;
			m->link_in_data = true;
			return;
		case S_IFDIR:
			m->type = has_data ? MEMBER_REG : MEMBER_DIR;
			return;
		case S_IFCHR:
			m->type = has_data ? MEMBER_REG : MEMBER_CHR;
			return;
		case S_IFBLK:
			m->type = has_data ? MEMBER_REG : MEMBER_BLK;
			return;
		case S_IFIFO:
			m->type = has_data ? MEMBER_REG : MEMBER_FIFO;
			return;
		case S_IFREG:
			m->type = MEMBER_REG;
			return;
		default: /* sockets, or nothing we know */
			m->type = is_dir && !has_data ? MEMBER_DIR : MEMBER_REG;
			return;
		}
	}
	if (!has_data && (is_dir || (has_attr && (attr & SZA_ATTR_DIR)))) {
		m->type = MEMBER_DIR;
		m->mode = 0755;
	} else {
		m->type = MEMBER_REG;
		m->mode = 0644;
	}
	if (has_attr && (attr & SZA_ATTR_READONLY))
		m->mode &= ~0222u;
}

/* FilesInfo: where its properties are, and the walk over its files. */
struct sza_files {
	struct sza_prop empty, efile, anti, names, mtime, attr;
	uint64_t nfiles;
	struct sza_vals mt, at;
	struct sza_rd nr; /* the names */

	/* The walk: folder fi has been entered (its stream declared: stream, unreadable, why);
	 * the next file with data is substream si, the in_fold-th of the folder, at data_off in
	 * its decoded bytes; the next empty stream is the ei-th. */
	uint64_t fi, si, in_fold, ei, data_off, stream;
	int unreadable;
	const char *why;
	bool entered;
};

/* Where each property of FilesInfo is: r moves past them all, to its end.  0 or db's error. */
static int sza_files_props(struct sza_db *db, struct sza_rd *r, struct sza_files *fs)
{
	for (;;) {
		uint64_t type, size;
		struct sza_prop *pr = NULL;

		if (sza_rd_num(db, r, &type))
			return db->err;
		if (type == SZA_ID_END)
			break;
		if (sza_rd_num(db, r, &size))
			return db->err;
		if (size > r->len - r->pos)
			return sza_damaged(db, r, "a file property runs past the end");
		switch (type) {
		case SZA_ID_EMPTY_STREAM:
			pr = &fs->empty;
			break;
		case SZA_ID_EMPTY_FILE:
			pr = &fs->efile;
			break;
		case SZA_ID_ANTI:
			pr = &fs->anti;
			break;
		case SZA_ID_NAME:
			pr = &fs->names;
			break;
		case SZA_ID_MTIME:
			pr = &fs->mtime;
			break;
		case SZA_ID_ATTRIB:
			pr = &fs->attr;
			break;
		default:
			break; /* times we do not show, padding, start positions */
		}
		if (pr) {
			pr->present = true;
			pr->off = r->pos;
			pr->size = (size_t)size;
		}
		r->pos += (size_t)size;
	}
	return 0;
}

/* The number of files and their properties, checked against each other and against the
 * substreams, and opened for the walk.  0 or db's error. */
static int sza_files_open(struct sza_db *db, struct sza_rd *r, struct sza_files *fs)
{
	uint64_t nempty = 0;
	uint8_t ext;
	int err;

	/* every file is a substream or has an empty-stream bit: at most 8 per header byte more */
	if (sza_rd_count(db, r, db->nsubs + 8 * (uint64_t)(r->len - r->pos), &fs->nfiles,
			 "number of files"))
		return db->err;
	if (sza_files_props(db, r, fs))
		return db->err;
	if (fs->empty.present) {
		if ((fs->nfiles + 7) / 8 > fs->empty.size)
			return sza_damaged(db, r, "the empty-stream vector is too short");
		for (uint64_t i = 0; i < fs->nfiles; i++)
			nempty += sza_bit(db->hdr + fs->empty.off, i);
	}
	if (fs->nfiles - nempty != db->nsubs)
		return sza_damaged(db, r, "the number of files does not match the streams");
	if ((fs->efile.present && (nempty + 7) / 8 > fs->efile.size) ||
	    (fs->anti.present && (nempty + 7) / 8 > fs->anti.size))
		return sza_damaged(db, r, "the empty-file or anti vector is too short");
	if (fs->names.present) {
		fs->nr = (struct sza_rd){db->hdr + fs->names.off, fs->names.size, 0};
		if (sza_rd_byte(db, &fs->nr, &ext))
			return db->err;
		if (ext)
			return sza_bad(db, -ENOTSUP, "7z: file names stored outside the header");
	}
	err = sza_vals_open(db, &fs->mtime, fs->nfiles, 8, &fs->mt);
	if (!err)
		err = sza_vals_open(db, &fs->attr, fs->nfiles, 4, &fs->at);
	return err;
}

/* A file with data: the next substream, entering folders as their files begin.  0 or db's
 * error. */
static int sza_files_substream(struct sza_db *db, struct sza_rd *r, struct sza_files *fs,
			       struct arc_member *m, bool has_attr, uint32_t a)
{
	int err;

	while (!fs->entered || fs->in_fold == db->fold[fs->fi].nsub) {
		if (fs->entered)
			fs->fi++;
		while (fs->fi < db->nfold && db->fold[fs->fi].nsub == 0)
			fs->fi++;
		if (fs->fi >= db->nfold)
			return sza_damaged(db, r, "more files than substreams");
		err = sza_enter_folder(db, fs->fi, &fs->stream, &fs->unreadable, &fs->why);
		if (err)
			return err;
		fs->entered = true;
		fs->in_fold = 0;
		fs->data_off = 0;
	}
	sza_file_mode(m, has_attr, a, false, true);
	m->stream = fs->stream;
	m->data_off = fs->data_off;
	if (m->type == MEMBER_REG || m->type == MEMBER_SYMLINK)
		m->size = m->stored = db->sub_size[fs->si];
	m->has_crc = db->sub_has[fs->si];
	m->crc = db->sub_crc[fs->si];
	m->unreadable = fs->unreadable;
	m->why = fs->why;
	fs->data_off += db->sub_size[fs->si];
	fs->si++;
	fs->in_fold++;
	return 0;
}

/* File i (the next one) as a member in *m: its name (in db->name), attributes, time, and
 * where its data is.  1 to report it, 0 if it is an anti item (not reported), or db's error. */
static int sza_files_member(struct sza_db *db, struct sza_rd *r, struct sza_files *fs,
			    uint64_t i, struct arc_member *m)
{
	bool is_empty = fs->empty.present && sza_bit(db->hdr + fs->empty.off, i);
	bool is_anti = false, is_dir = false, has_attr;
	uint64_t v;
	size_t nlen = 0;
	int k;

	if (fs->names.present) {
		if (sza_name_next(db, &fs->nr, &nlen))
			return db->err;
	} else {
		if (sza_name_room(db, 1))
			return db->err;
		db->name[0] = '\0';
	}
	k = sza_vals_next(db, &fs->at, i, &v);
	if (k < 0)
		return k;
	has_attr = k == 1;
	uint32_t a = has_attr ? (uint32_t)v : 0;
	k = sza_vals_next(db, &fs->mt, i, &v);
	if (k < 0)
		return k;
	if (k == 1)
		sza_filetime(v, &m->mtime_sec, &m->mtime_nsec);

	m->path = (const uint8_t *)db->name;
	m->path_len = nlen;
	m->link = (const uint8_t *)"";
	m->uname = m->gname = "";
	if (!is_empty) {
		k = sza_files_substream(db, r, fs, m, has_attr, a);
		return k ? k : 1;
	}
	is_dir = !(fs->efile.present && sza_bit(db->hdr + fs->efile.off, fs->ei));
	is_anti = fs->anti.present && sza_bit(db->hdr + fs->anti.off, fs->ei);
	fs->ei++;
	sza_file_mode(m, has_attr, a, is_dir, false);
	return is_anti ? 0 : 1;
}

int sza_files_info(struct sza_db *db, struct sza_rd *r)
{
	struct sza_files fs = {0};
	int err = sza_files_open(db, r, &fs);

	if (err)
		return err;
	for (uint64_t i = 0; i < fs.nfiles; i++) {
		struct arc_member m = {0};
		int k = sza_files_member(db, r, &fs, i, &m);

		if (k < 0)
			return k;
		if (k == 0)
			continue; /* an anti item */
		err = db->sink->member(db->sink->opaque, &m);
		if (err)
			return sza_bad(db, err, "7z: the index refused a member (%d)", err);
		db->members++;
		if (db->sink->progress && (i & 1023) == 0)
			db->sink->progress(db->sink->opaque, db->hdr_off);
	}
	return 0;
}
