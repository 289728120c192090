/* NTFS file systems, with -r: the container "ntfs" (container.h, one of cont_images).  The
 * volume's folders, files and symbolic links become members; a file's data becomes a sparse
 * map of byte ranges of the image (member.h), so its reads go through tarseek's reader, and a
 * second mount reads nothing from libfsntfs.
 *
 * libyal's libfsntfs reads the volume, through a libbfio handle over the source (ntfs_bfio.c):
 * the folder tree, names, sizes, times, attribute flags, symbolic link targets and the data
 * runs of the unnamed $DATA attribute.  What libfsntfs does not say -- where a resident
 * value sits in its MFT record -- ntfs_record.c finds, and the bytes that map reads are
 * checked against libfsntfs's before the map is trusted.
 *
 * What is shown, and how it compares with ntfs-3g (the reference the tests compare against):
 *  - names: the long (Win32 or POSIX) name of each index entry; DOS 8.3 names are not
 *    listed (libfsntfs leaves them out).  Entries of MFT records 0..15 ($MFT, $MFTMirr,
 *    $LogFile, $Volume, $AttrDef, ".", $Bitmap, $Boot, $BadClus, $Secure, $UpCase, $Extend
 *    and the reserved ones) are hidden, as ntfs-3g hides them.  A name holding '/' or NUL,
 *    or "." or "..", is left out with a notice.
 *  - modes: NTFS keeps no Unix modes; folders 0755, files 0644, less the write bits for a
 *    file with the read-only attribute (ntfs-3g without its permissions option shows
 *    0777 less its umask); uid/gid: the image file's owner (no_owner).  mtime: $STANDARD_
 *    INFORMATION's modification time (FILETIME, 100 ns units from 1601) as Unix seconds and
 *    nanoseconds.
 *  - hard links: the names of one MFT record after the first are MEMBER_HARDLINKs to the
 *    first path; a folder met twice (a loop, or a damaged index) is left out with a notice.
 *  - symbolic links: Windows' (reparse tag 0xa000000c): their substitute name with '\' made
 *    '/'; Interix ones, as ntfs-3g writes them (ntfs_interix.c): their target.
 *    Other reparse points (junctions, WOF compression, dedup, ...) are files that read
 *    -EOPNOTSUPP, with the tag in the reason.
 *  - alternate data streams are not shown (neither as files nor as xattrs).
 *  - data: a non-resident $DATA's runs become extents, sparse runs holes; bytes past the
 *    valid data length (initialized size) read as zeros, as NTFS defines them.  Resident data
 *    maps into its MFT record (ntfs_record.c).  Compressed (LZNT1) files read -EOPNOTSUPP,
 *    EFS-encrypted ones -EACCES; a file whose runs leave the image reads -EIO.
 *
 * Bounds: folders at most NT_DEPTH deep, names at most one per 64 bytes of the image, paths
 * at most NT_PATH bytes, extents at most NT_EXTENTS per file; a folder met twice is not
 * walked again.  A volume libfsntfs cannot open is refused (-EIO): the file stays a file.
 */
#include "containers/container.h"

#include <errno.h>
#include <inttypes.h>
#include <libfsntfs.h>

#include "containers/ntfs/ntfs_dl.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/hash.h"
#include "common/htable.h"
#include "common/log.h"
#include "containers/ntfs/ntfs_bfio.h"
#include "containers/ntfs/ntfs_interix.h"
#include "containers/ntfs/ntfs_record.h"

#define NT_DEPTH 256
#define NT_PATH 4096
#define NT_EXTENTS (1u << 20)
#define NT_FIRST_USER 16 /* MFT records below are the file system's own */
#define NT_ROOT 5	 /* the root folder's record */
#define NT_FILE_NAME 0x30u /* the $FILE_NAME attribute's type */
#define NT_NAME_DOS 2	   /* its name space: a DOS 8.3 name (alone) */
#define NT_REF_INDEX(r) ((r) & 0xffffffffffffULL)
#define NT_DATA 0x80u		    /* the $DATA attribute's type */
#define NT_DATA_COMPRESSED 0x00ffu  /* its flags: the compression method */
#define NT_DATA_ENCRYPTED 0x4000u
#define NT_FILETIME_UNIX 116444736000000000ULL /* 1970-01-01 in FILETIME units */

/* the map of a file that is all holes: no extents, but a map */
static const struct member_sparse nt_no_extent;

/* An MFT record already listed: its first path (for hard links). */
struct nt_seen {
	struct htable_node node;
	uint64_t idx;
	bool dir;
	char path[];
};

struct nt {
	struct src *in;
	const struct cont_sink *sink;
	const char *name;
	uint64_t size;
	libfsntfs_volume_t *vol;
	struct ntfs_run *runs; /* the $MFT's */
	struct ntfs_mft mft;
	struct htable seen;
	struct extents ext;
	uint64_t names, max_names;
	char path[NT_PATH + 1];
	char link[NT_PATH + 1]; /* a symbolic link's target, for the member being listed */
	bool damaged;
};

static bool nt_probe(struct src *in, const uint8_t *h, size_t len)
{
	(void)in;
	return len >= 512 && !memcmp(h + 3, "NTFS    ", 8) && h[510] == 0x55 && h[511] == 0xaa;
}

/* The library's message, one line, for the log. */
static const char *nt_msg(libfsntfs_error_t *e, char *buf, size_t len)
{
	buf[0] = '\0';
	if (e && sym_libfsntfs_error_sprint(e, buf, len) < 0)
		buf[0] = '\0';
	for (char *p = buf; *p; p++)
		if (*p == '\n')
			*p = ' ';
	return buf;
}

static void nt_err_free(libfsntfs_error_t **e)
{
	if (*e)
		sym_libfsntfs_error_free(e);
}

/* The $MFT's runs, for ntfs_record.c. */
static int nt_mft_runs(struct nt *t)
{
	libfsntfs_file_entry_t *f = NULL;
	libfsntfs_error_t *e = NULL;
	uint32_t rs = 0;
	uint64_t off = 0;
	int n = 0, err = -EIO;

	if (sym_libfsntfs_volume_get_mft_entry_size(t->vol, &rs, &e) != 1 ||
	    sym_libfsntfs_volume_get_file_entry_by_index(t->vol, 0, &f, &e) != 1 ||
	    sym_libfsntfs_file_entry_get_number_of_extents(f, &n, &e) != 1 || n <= 0 ||
	    (unsigned)n > NT_EXTENTS)
		goto out;
	t->runs = calloc((size_t)n, sizeof(*t->runs));
	if (!t->runs) {
		err = -ENOMEM;
		goto out;
	}
	for (int i = 0; i < n; i++) {
		off64_t phys;
		size64_t len;
		uint32_t fl;

		if (sym_libfsntfs_file_entry_get_extent_by_index(f, i, &phys, &len, &fl, &e) != 1 ||
		    phys < 0 || (fl & LIBFSNTFS_EXTENT_FLAG_IS_SPARSE) || len > UINT64_MAX - off)
			goto out;
		t->runs[i] = (struct ntfs_run){ .off = off, .len = len, .phys = (uint64_t)phys };
		off += len;
	}
	t->mft = (struct ntfs_mft){ .runs = t->runs, .nruns = (size_t)n, .rec_size = rs };
	err = 0;
out:
	if (err == -EIO)
		tfs_log(TFS_LOG_NOTICE, "%s: NTFS: the $MFT's runs cannot be read: small files "
			"will be unreadable", t->name);
	nt_err_free(&e);
	sym_libfsntfs_file_entry_free(&f, NULL);
	return err == -EIO ? 0 : err;
}

/* What the first piece (VCN 0) of f's unnamed $DATA says: its flags (NT_DATA_*) and, when
 * non-resident, its valid data length (else *valid stays as it was). */
static void nt_data_attr(libfsntfs_file_entry_t *f, uint16_t *dflags, uint64_t *valid)
{
	libfsntfs_error_t *e = NULL;
	int n = 0;

	*dflags = 0;
	if (sym_libfsntfs_file_entry_get_number_of_attributes(f, &n, &e) != 1)
		n = 0;
	for (int i = 0; i < n; i++) {
		libfsntfs_attribute_t *a = NULL;
		uint32_t type = 0;
		size_t nlen = 0;
		size64_t v = 0;
		uint64_t first = 0, last = 0;
		bool found;

		if (sym_libfsntfs_file_entry_get_attribute_by_index(f, i, &a, &e) != 1)
			break;
		found = sym_libfsntfs_attribute_get_type(a, &type, &e) == 1 && type == NT_DATA &&
			sym_libfsntfs_attribute_get_utf8_name_size(a, &nlen, &e) == 1 && nlen <= 1;
		if (found && sym_libfsntfs_attribute_get_data_vcn_range(a, &first, &last, &e) == 1 &&
		    first != 0)
			found = false;
		nt_err_free(&e);
		if (found) {
			if (sym_libfsntfs_attribute_get_data_flags(a, dflags, &e) != 1)
				*dflags = 0;
			if (sym_libfsntfs_attribute_get_valid_data_size(a, &v, &e) == 1 && v < *valid)
				*valid = v;
		}
		sym_libfsntfs_attribute_free(&a, NULL);
		nt_err_free(&e);
		if (found)
			break;
	}
	nt_err_free(&e);
}

/* Does reading the extents give what libfsntfs reads?  (Resident data only: small.) */
static int nt_check_resident(struct nt *t, libfsntfs_file_entry_t *f, uint64_t size)
{
	uint8_t *a = malloc(size), *b = malloc(size);
	libfsntfs_error_t *e = NULL;
	int err = -ENOMEM;

	if (!a || !b)
		goto out;
	err = -EIO;
	if (sym_libfsntfs_file_entry_read_buffer_at_offset(f, a, size, 0, &e) != (ssize_t)size)
		goto out;
	for (size_t i = 0; i < t->ext.n; i++) {
		const struct member_sparse *x = &t->ext.v[i];

		err = src_pread_full(t->in, b + x->off, x->len, x->src);
		if (err)
			goto out;
	}
	err = memcmp(a, b, size) ? -EIO : 0;
out:
	nt_err_free(&e);
	free(a);
	free(b);
	return err;
}

/* Fills t->ext with the map of f's data and m's size; m->unreadable when it cannot be. */
static int nt_data(struct nt *t, libfsntfs_file_entry_t *f, uint64_t idx, uint32_t flags,
		   struct arc_member *m)
{
	libfsntfs_error_t *e = NULL;
	size64_t size = 0;
	uint64_t valid, off = 0;
	uint16_t dflags = 0;
	const char *why = "";
	int n = 0, err = 0;

	t->ext.n = 0;
	if (sym_libfsntfs_file_entry_is_corrupted(f, &e) == 1 || sym_libfsntfs_file_entry_is_empty(f, &e) == 1 ||
	    sym_libfsntfs_file_entry_get_size(f, &size, &e) != 1) {
		m->unreadable = -EIO;
		m->why = "its MFT record is damaged";
		goto out;
	}
	m->size = size;
	/* the data's own flags: a file in a compressed folder has the file attribute
	 * "compressed" even where ntfs-3g wrote its data plain */
	valid = size;
	nt_data_attr(f, &dflags, &valid);
	if ((flags & LIBFSNTFS_FILE_ATTRIBUTE_FLAG_ENCRYPTED) || (dflags & NT_DATA_ENCRYPTED)) {
		m->unreadable = -EACCES;
		m->why = "encrypted (EFS)";
		goto out;
	}
	if (dflags & NT_DATA_COMPRESSED) {
		m->unreadable = -EOPNOTSUPP;
		m->why = "NTFS compression (LZNT1)";
		goto out;
	}
	if (!size)
		goto out;
	if (sym_libfsntfs_file_entry_get_number_of_extents(f, &n, &e) != 1 || n < 0 ||
	    (unsigned)n > NT_EXTENTS) {
		m->unreadable = -EIO;
		m->why = "its data runs cannot be read";
		goto out;
	}
	if (n == 0) { /* resident: in its MFT record */
		if (!t->mft.runs || size > t->mft.rec_size) {
			m->unreadable = -EIO;
			m->why = "its resident data cannot be found";
			goto out;
		}
		err = ntfs_resident_map(t->in, &t->mft, idx, size, &t->ext, &why);
		if (!err)
			err = nt_check_resident(t, f, size);
		if (err == -ENOMEM)
			goto out;
		if (err) {
			m->unreadable = err == -ENOTSUP ? -EOPNOTSUPP : -EIO;
			m->why = *why ? why : err == -ENOTSUP ? "resident data in an extension record"
				 : "its resident data does not read as libfsntfs reads it";
			err = 0;
		}
		goto out;
	}
	for (int i = 0; i < n && off < valid; i++) {
		off64_t phys;
		size64_t len;
		uint32_t fl;

		if (sym_libfsntfs_file_entry_get_extent_by_index(f, i, &phys, &len, &fl, &e) != 1) {
			m->unreadable = -EIO;
			m->why = "its data runs cannot be read";
			goto out;
		}
		if (fl & LIBFSNTFS_EXTENT_FLAG_IS_COMPRESSED) {
			m->unreadable = -EOPNOTSUPP;
			m->why = "NTFS compression (LZNT1)";
			goto out;
		}
		if (len > valid - off)
			len = valid - off;
		if (!(fl & LIBFSNTFS_EXTENT_FLAG_IS_SPARSE)) {
			if (phys < 0 || (uint64_t)phys > t->size || len > t->size - (uint64_t)phys) {
				m->unreadable = -EIO;
				m->why = "its data runs leave the image";
				goto out;
			}
			err = extents_add(&t->ext, off, len, (uint64_t)phys);
			if (err)
				goto out;
		}
		off += len;
	}
out:
	/* stream 0 from data_off 0: an extent's src is its offset in the image, and the stored
	 * data the reader checks extents against runs to the end of the last one */
	if (m->unreadable)
		t->ext.n = 0;
	m->data_off = 0;
	m->stored = 0;
	for (size_t i = 0; i < t->ext.n; i++)
		if (t->ext.v[i].src + t->ext.v[i].len > m->stored)
			m->stored = t->ext.v[i].src + t->ext.v[i].len;
	m->sparse = m->unreadable || !m->size ? NULL : t->ext.n ? t->ext.v : &nt_no_extent;
	m->nsparse = t->ext.n;
	nt_err_free(&e);
	return err;
}

/* The first path of MFT record idx, or NULL. */
static struct nt_seen *nt_seen_get(struct nt *t, uint64_t idx)
{
	for (struct htable_node *n = htable_first(&t->seen, hash_u64(idx)); n; n = htable_next(n)) {
		struct nt_seen *s = htable_entry(n, struct nt_seen, node);

		if (s->idx == idx)
			return s;
	}
	return NULL;
}

static int nt_seen_add(struct nt *t, uint64_t idx, bool dir, const char *path, size_t len)
{
	struct nt_seen *s = malloc(sizeof(*s) + len + 1);
	int err;

	if (!s)
		return -ENOMEM;
	s->idx = idx;
	s->dir = dir;
	memcpy(s->path, path, len + 1);
	err = htable_add(&t->seen, &s->node, hash_u64(idx));
	if (err)
		free(s);
	return err;
}

/* f's symbolic link target into buf ('\' made '/'); false when it has none that fits. */
static bool nt_link(libfsntfs_file_entry_t *f, char *buf, size_t cap, size_t *len)
{
	libfsntfs_error_t *e = NULL;
	size_t n = 0;
	bool ok = false;

	if (sym_libfsntfs_file_entry_get_utf8_symbolic_link_target_size(f, &n, &e) == 1 && n > 1 &&
	    n <= cap &&
	    sym_libfsntfs_file_entry_get_utf8_symbolic_link_target(f, (uint8_t *)buf, n, &e) == 1) {
		buf[n - 1] = '\0';
		*len = strlen(buf);
		for (size_t i = 0; i < *len; i++)
			if (buf[i] == '\\')
				buf[i] = '/';
		ok = *len > 0;
	}
	nt_err_free(&e);
	return ok;
}

/* Appends f's name to t->path, the folder's path of plen bytes (NUL-terminated there); the
 * new length, or -1 when it is left out (t->path is then as it was). */
static ssize_t nt_name(struct nt *t, libfsntfs_file_entry_t *f, const char *given, size_t plen)
{
	libfsntfs_error_t *e = NULL;
	size_t n = given ? strlen(given) + 1 : 0, at = plen ? plen + 1 : 0;
	char *name = t->path + at;
	ssize_t r = -1;

	if (given && n >= 2 && at < NT_PATH && n <= NT_PATH + 1 - at) {
		memcpy(name, given, n);
	} else if (given || at >= NT_PATH ||
		   sym_libfsntfs_file_entry_get_utf8_name_size(f, &n, &e) != 1 || n < 2 ||
		   n > NT_PATH + 1 - at ||
		   sym_libfsntfs_file_entry_get_utf8_name(f, (uint8_t *)name, n, &e) != 1) {
		tfs_log(TFS_LOG_NOTICE, "%s: NTFS: a name in /%s cannot be read or is too long: "
			"left out", t->name, t->path);
		goto out;
	}
	name[n - 1] = '\0';
	if (strlen(name) != n - 1 || strchr(name, '/') || !strcmp(name, ".") ||
	    !strcmp(name, "..")) {
		tfs_log(TFS_LOG_NOTICE, "%s: NTFS: the name '%s' in /%s is not one a file can "
			"have: left out", t->name, name, t->path);
		goto out;
	}
	if (plen)
		t->path[plen] = '/';
	r = (ssize_t)(at + n - 1);
out:
	nt_err_free(&e);
	return r;
}

static int nt_walk(struct nt *t, libfsntfs_file_entry_t *dir, size_t plen, unsigned depth);

/* Lists sub-entry f of the folder at t->path[0..plen), named name (NULL: the name its
 * folder's index gives it). */
static int nt_entry(struct nt *t, libfsntfs_file_entry_t *f, const char *name, size_t plen,
		    unsigned depth)
{
	libfsntfs_error_t *e = NULL;
	struct arc_member m = { 0 };
	char *link = t->link; /* free again before the walk goes down */
	uint64_t ref = 0, ft = 0, idx;
	size64_t sz = 0;
	uint32_t flags = 0;
	struct nt_seen *s;
	size_t llen = 0;
	ssize_t len;
	bool dir;
	int err = 0;

	if (sym_libfsntfs_file_entry_get_file_reference(f, &ref, &e) != 1)
		goto damaged;
	idx = NT_REF_INDEX(ref);
	if (idx < NT_FIRST_USER)
		goto out;
	len = nt_name(t, f, name, plen);
	if (len < 0) {
		t->damaged = true;
		goto out;
	}
	dir = sym_libfsntfs_file_entry_has_directory_entries_index(f, &e) == 1;
	nt_err_free(&e);
	m.path = (const uint8_t *)t->path;
	m.path_len = (size_t)len;
	m.link = (const uint8_t *)"";
	m.no_owner = true;
	m.uname = m.gname = "";
	s = nt_seen_get(t, idx);
	if (s && (s->dir || dir)) {
		tfs_log(TFS_LOG_NOTICE, "%s: NTFS: the folder /%s is also /%s (a loop, or a damaged "
			"index): left out", t->name, t->path, s->path);
		t->damaged = true;
		goto out;
	}
	if (s) { /* a hard link */
		m.type = MEMBER_HARDLINK;
		m.link = (const uint8_t *)s->path;
		m.link_len = strlen(s->path);
		err = t->sink->member(t->sink->opaque, &m);
		goto out;
	}
	err = nt_seen_add(t, idx, dir, t->path, (size_t)len);
	if (err)
		goto out;
	if (sym_libfsntfs_file_entry_get_file_attribute_flags(f, &flags, &e) != 1)
		flags = 0;
	nt_err_free(&e);
	if (sym_libfsntfs_file_entry_get_modification_time(f, &ft, &e) == 1) {
		m.mtime_sec = (int64_t)(ft / 10000000) - (int64_t)(NT_FILETIME_UNIX / 10000000);
		m.mtime_nsec = (uint32_t)(ft % 10000000) * 100;
	}
	nt_err_free(&e);
	if (dir) {
		m.type = MEMBER_DIR;
		m.mode = 0755;
	} else if ((sym_libfsntfs_file_entry_is_symbolic_link(f, &e) == 1 &&
		    nt_link(f, link, sizeof(t->link), &llen)) ||
		   ((flags & LIBFSNTFS_FILE_ATTRIBUTE_FLAG_SYSTEM) &&
		    sym_libfsntfs_file_entry_get_size(f, &sz, &e) == 1 &&
		    ntfs_interix_link(f, sz, link, sizeof(t->link), &llen))) {
		m.type = MEMBER_SYMLINK;
		m.mode = 0777;
		m.link = (const uint8_t *)link;
		m.link_len = llen;
	} else {
		m.type = MEMBER_REG;
		m.mode = flags & LIBFSNTFS_FILE_ATTRIBUTE_FLAG_READ_ONLY ? 0444 : 0644;
		if (flags & LIBFSNTFS_FILE_ATTRIBUTE_FLAG_REPARSE_POINT) {
			m.unreadable = -EOPNOTSUPP;
			m.why = "an NTFS reparse point other than a symbolic link";
		}
		err = nt_data(t, f, idx, flags, &m);
		if (err)
			goto out;
	}
	nt_err_free(&e);
	err = t->sink->member(t->sink->opaque, &m);
	if (!err && dir) {
		if (depth >= NT_DEPTH) {
			tfs_log(TFS_LOG_NOTICE, "%s: NTFS: /%s is more than %d folders deep: its "
				"contents are left out", t->name, t->path, NT_DEPTH);
			t->damaged = true;
		} else {
			err = nt_walk(t, f, (size_t)len, depth + 1);
		}
	}
	goto out;
damaged:
	tfs_log(TFS_LOG_NOTICE, "%s: NTFS: an entry of /%.*s cannot be read: left out",
		t->name, (int)plen, t->path);
	t->damaged = true;
out:
	nt_err_free(&e);
	t->path[plen] = '\0';
	return err;
}

/* Lists the folder dir, whose path is t->path[0..plen), and what is under it. */
static int nt_walk(struct nt *t, libfsntfs_file_entry_t *dir, size_t plen, unsigned depth)
{
	libfsntfs_error_t *e = NULL;
	char msg[256];
	int n = 0, err = 0;

	if (sym_libfsntfs_file_entry_get_number_of_sub_file_entries(dir, &n, &e) != 1) {
		tfs_log(TFS_LOG_WARNING, "%s: NTFS: the folder /%s cannot be read (%s): its "
			"contents are left out", t->name, t->path, nt_msg(e, msg, sizeof(msg)));
		t->damaged = true;
		goto out;
	}
	for (int i = 0; i < n && !err; i++) {
		libfsntfs_file_entry_t *f = NULL;

		if (++t->names > t->max_names) {
			tfs_log(TFS_LOG_WARNING, "%s: NTFS: more names than the image can hold: "
				"the rest are left out", t->name);
			t->damaged = true;
			break;
		}
		if (sym_libfsntfs_file_entry_get_sub_file_entry_by_index(dir, i, &f, &e) != 1) {
			tfs_log(TFS_LOG_NOTICE, "%s: NTFS: entry %d of /%s cannot be read (%s): "
				"left out", t->name, i, t->path, nt_msg(e, msg, sizeof(msg)));
			nt_err_free(&e);
			t->damaged = true;
			continue;
		}
		err = nt_entry(t, f, NULL, plen, depth);
		sym_libfsntfs_file_entry_free(&f, NULL);
	}
out:
	nt_err_free(&e);
	return err;
}

/* A record the walk did not reach: its first long name and the record of its folder. */
struct nt_orphan {
	uint64_t idx, parent;
	char *name;
};

/* f's first $FILE_NAME that is not a DOS name: its folder's record and the name (malloc'd).
 * false when it has none. */
static bool nt_file_name(libfsntfs_file_entry_t *f, uint64_t *parent, char **name)
{
	libfsntfs_error_t *e = NULL;
	int n = 0;

	*name = NULL;
	if (sym_libfsntfs_file_entry_get_number_of_attributes(f, &n, &e) != 1)
		n = 0;
	for (int i = 0; i < n && !*name; i++) {
		libfsntfs_attribute_t *a = NULL;
		uint32_t type = 0;
		uint8_t ns = 0;
		size_t len = 0;

		if (sym_libfsntfs_file_entry_get_attribute_by_index(f, i, &a, &e) != 1)
			break;
		if (sym_libfsntfs_attribute_get_type(a, &type, &e) == 1 && type == NT_FILE_NAME &&
		    sym_libfsntfs_file_name_attribute_get_name_space(a, &ns, &e) == 1 &&
		    ns != NT_NAME_DOS &&
		    sym_libfsntfs_file_name_attribute_get_parent_file_reference(a, parent, &e) == 1 &&
		    sym_libfsntfs_file_name_attribute_get_utf8_name_size(a, &len, &e) == 1 && len > 1 &&
		    len <= NT_PATH && (*name = malloc(len)) &&
		    sym_libfsntfs_file_name_attribute_get_utf8_name(a, (uint8_t *)*name, len, &e) != 1) {
			free(*name);
			*name = NULL;
		}
		sym_libfsntfs_attribute_free(&a, NULL);
		nt_err_free(&e);
	}
	nt_err_free(&e);
	*parent = NT_REF_INDEX(*parent);
	return *name != NULL;
}

/* The records in use that the walk of the folders did not reach: libfsntfs 20200921 misses
 * entries of folder indexes whose index blocks are larger than a cluster (an image made with
 * 512-byte clusters), and a damaged index loses its entries.  Each is listed in the folder
 * its $FILE_NAME names, once that folder is listed (pass after pass, at most NT_DEPTH);
 * what is left is counted in a warning.  A second name of a file reached already, in an index
 * libfsntfs misreads, is not found this way. */
static int nt_orphans(struct nt *t)
{
	struct nt_orphan *o = NULL;
	libfsntfs_error_t *e = NULL;
	size_t no = 0, left;
	uint64_t n = 0;
	int err = 0;
	bool more = true;

	if (sym_libfsntfs_volume_get_number_of_file_entries(t->vol, &n, &e) != 1)
		n = 0;
	nt_err_free(&e);
	if (n > t->size / (t->mft.rec_size ? t->mft.rec_size : 1024))
		n = t->size / (t->mft.rec_size ? t->mft.rec_size : 1024);
	for (uint64_t i = NT_FIRST_USER; i < n && !err; i++) {
		libfsntfs_file_entry_t *f = NULL;
		uint64_t base = 0, parent = 0;
		char *name = NULL;

		if (nt_seen_get(t, i))
			continue;
		if (sym_libfsntfs_volume_get_file_entry_by_index(t->vol, i, &f, &e) == 1 &&
		    sym_libfsntfs_file_entry_is_allocated(f, &e) == 1 &&
		    sym_libfsntfs_file_entry_get_base_record_file_reference(f, &base, &e) >= 0 &&
		    NT_REF_INDEX(base) == 0 && /* a base record (0: none, or it says 0) */
		    nt_file_name(f, &parent, &name)) {
			if (parent < NT_FIRST_USER && parent != NT_ROOT) { /* under $Extend: hidden */
				free(name);
				name = NULL;
			}
		}
		if (name) {
			struct nt_orphan *v = o;

			if (!(no & (no - 1)) && !(v = realloc(o, (no ? 2 * no : 1) * sizeof(*o)))) {
				free(name);
				err = -ENOMEM;
			} else {
				o = v;
				o[no++] = (struct nt_orphan){ .idx = i, .parent = parent,
							      .name = name };
			}
		}
		nt_err_free(&e);
		sym_libfsntfs_file_entry_free(&f, NULL);
	}
	for (unsigned pass = 0; pass < NT_DEPTH && more && !err; pass++) {
		more = false;
		for (size_t i = 0; i < no && !err; i++) {
			struct nt_seen *s = o[i].parent == NT_ROOT ? NULL : nt_seen_get(t, o[i].parent);
			libfsntfs_file_entry_t *f = NULL;
			size_t plen = s ? strlen(s->path) : 0;

			if (!o[i].name || (o[i].parent != NT_ROOT && (!s || !s->dir)))
				continue;
			memcpy(t->path, s ? s->path : "", plen + 1);
			if (!nt_seen_get(t, o[i].idx) &&
			    sym_libfsntfs_volume_get_file_entry_by_index(t->vol, o[i].idx, &f, &e) == 1)
				err = nt_entry(t, f, o[i].name, plen, pass);
			nt_err_free(&e);
			sym_libfsntfs_file_entry_free(&f, NULL);
			free(o[i].name);
			o[i].name = NULL;
			more = true;
		}
	}
	t->path[0] = '\0';
	left = 0;
	for (size_t i = 0; i < no; i++) {
		left += o[i].name != NULL;
		free(o[i].name);
	}
	if (left) {
		tfs_log(TFS_LOG_WARNING, "%s: NTFS: %zu files are in no folder that can be read: "
			"left out", t->name, left);
		t->damaged = true;
	}
	free(o);
	return err;
}

static int nt_parse(struct src *in, const struct cont_sink *sink, struct cont_stats *st)
{
	struct nt t = { .in = in, .sink = sink, .name = sink->name ? sink->name : "image" };
	libfsntfs_file_entry_t *root = NULL;
	libbfio_handle_t *h = NULL;
	struct ntfs_bfio *b = NULL;
	libfsntfs_error_t *e = NULL;
	struct htable_node *n;
	char msg[256];
	int err;

	if (ntfs_dl_load()) /* said once */
		return -ENOTSUP;

	t.size = src_size(in);
	t.max_names = t.size / 64 + 16;
	err = ntfs_bfio_new(in, &b, &h);
	if (err)
		goto out;
	if (sym_libfsntfs_volume_initialize(&t.vol, &e) != 1) {
		err = -ENOMEM;
		goto out;
	}
	if (sym_libfsntfs_volume_open_file_io_handle(t.vol, h, LIBFSNTFS_OPEN_READ, &e) != 1) {
		err = ntfs_bfio_error(b) ? ntfs_bfio_error(b) : -EIO;
		tfs_log(TFS_LOG_WARNING, "%s: not an NTFS volume that can be read (%s)", t.name,
			nt_msg(e, msg, sizeof(msg)));
		goto out;
	}
	err = nt_mft_runs(&t);
	if (err)
		goto out;
	if (sym_libfsntfs_volume_get_root_directory(t.vol, &root, &e) != 1) {
		err = ntfs_bfio_error(b) ? ntfs_bfio_error(b) : -EIO;
		tfs_log(TFS_LOG_WARNING, "%s: NTFS: the root folder cannot be read (%s)", t.name,
			nt_msg(e, msg, sizeof(msg)));
		goto out;
	}
	err = nt_walk(&t, root, 0, 0);
	if (!err)
		err = nt_orphans(&t);
	if (!err && ntfs_bfio_error(b)) /* a read of the source failed: not damage */
		err = ntfs_bfio_error(b);
	if (st) {
		st->members = t.seen.count;
		st->damaged = t.damaged;
	}
out:
	nt_err_free(&e);
	sym_libfsntfs_file_entry_free(&root, NULL);
	if (t.vol) {
		sym_libfsntfs_volume_close(t.vol, NULL);
		sym_libfsntfs_volume_free(&t.vol, NULL);
	}
	ntfs_bfio_free(b);
	while ((n = htable_pop(&t.seen)))
		free(htable_entry(n, struct nt_seen, node));
	htable_fini(&t.seen);
	extents_free(&t.ext);
	free(t.runs);
	return err;
}

const struct container cont_ntfs = {
	.name = "ntfs",
	.probe = nt_probe,
	.parse = nt_parse,
};
