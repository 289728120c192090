/* Zip archives (see zip.h).
 *
 * The parse: find the end record, learn where the directory is and how far the archive was
 * shifted, read the whole directory into memory (its size is bounded by the file's), then
 * report each entry: first its stream, if its data is compressed, then the member.  Each field
 * is read through bounds-checked loaders; an entry whose fields do not fit its record ends
 * the directory (damage: the entries before it are reported).
 *
 * Errors keep their cause up to the caller: every read is of bytes the file's size says are
 * there, so a read that fails returns the source's -errno as it came (-EIO, -ENOMEM, a remote
 * source's -ESTALE) after a log line saying what could not be read; damage is -EIO after
 * a log line saying what is wrong; "no end record" is told apart from both (the walk of the
 * local headers, or -EINVAL: not a zip).
 *
 * A split zip (`zip -s`: NAME.z01, ..., NAME.zip) is read when its parts come joined
 * (common/parts.h): its end record, in the last part, says which disk it is on (the last:
 * number of parts - 1), and the directory gives its own start and each entry's local header as
 * (disk, offset in that disk), which parts_starts() turns into offsets of the joined bytes.
 * Those numbers are the file's, so each is checked: a disk that is not one of the parts, or
 * an offset past its part's end, is damage (the directory, or that entry, left out).  The
 * first part begins with the split marker PK\7\10, counted in its offsets.
 */
#include "containers/zip.h"
#include "containers/zip_names.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <zlib.h>

#include "common/byteio.h"
#include "common/log.h"
#include "common/parts.h"
#include "crypto/winzip_aes.h"
#include "crypto/zip_crypt.h"
#include "crypto/zipcrypto.h"

#define ZIP_LOCAL_SIG 0x04034b50u
#define ZIP_CENTRAL_SIG 0x02014b50u
#define ZIP_END_SIG 0x06054b50u
#define ZIP64_END_SIG 0x06064b50u
#define ZIP64_LOCATOR_SIG 0x07064b50u

#define ZIP_LOCAL_LEN 30
#define ZIP_CENTRAL_LEN 46
#define ZIP_END_LEN 22
#define ZIP64_END_LEN 56
#define ZIP64_LOCATOR_LEN 20
#define ZIP_END_SEARCH (65535 + ZIP_END_LEN) /* the end record plus the longest comment */
#define ZIP_NAME_MAX 65535

#define ZIP_FLAG_ENCRYPTED 0x0001u
#define ZIP_FLAG_DESCRIPTOR 0x0008u
#define ZIP_FLAG_STRONG 0x0040u	  /* PKWARE's strong encryption (SES) */
#define ZIP_FLAG_UTF8 0x0800u	  /* the name and comment are UTF-8 */
#define ZIP_FLAG_CD_ENCRYPTED 0x2000u /* ... with the central directory's fields masked */
#define ZIP_METHOD_AES 99

#define ZIP_HOST_UNIX 3
#define ZIP_DOS_DIR 0x10u
#define ZIP_DOS_READONLY 0x01u

/* Extra field tags. */
#define ZIP_X_ZIP64 0x0001u
#define ZIP_X_NTFS 0x000au
#define ZIP_X_TIME 0x5455u    /* extended timestamp */
#define ZIP_X_UNIX3 0x7875u   /* Info-ZIP new unix: uid/gid */
#define ZIP_X_UPATH 0x7075u   /* Info-ZIP Unicode Path */
#define ZIP_X_AES 0x9901u     /* WinZip AES: version, "AE", strength, the real method */

#define FILETIME_UNIX_DIFF 11644473600ull /* seconds from 1601 to 1970 */

/* ---- where the directory is ------------------------------------------------------------ */

struct zip_dir {
	uint64_t entries; /* as the end record says */
	uint64_t size, off; /* the directory's bytes, offsets as stored */
	int64_t shift;	    /* add to every stored offset: bytes prepended to the archive */
	bool zip64;
	size_t disks;		/* a split zip joined: its parts (offsets are per disk), or 0 */
	const uint64_t *starts; /* where each begins in the joined bytes (disks + 1) */
};

/* The end record: the last place in the final ZIP_END_SEARCH bytes where its signature sits
 * with a comment length that reaches exactly the end of the file -- else, as unzip and
 * Python's zipfile do, the last one whose comment ends before it (bytes were appended).  Its
 * offset; -ENOENT if there is none (no signature fits, or the file is shorter than a record);
 * -ENOMEM; or the source's error reading those bytes (-EIO, a remote source's -ESTALE,
 * ...; -EIO too when the file is shorter than its size said).  Logs nothing: the probe calls
 * it on files of every format. */
static int64_t find_end(struct src *in, uint64_t size)
{
	uint64_t n = size < ZIP_END_SEARCH ? size : ZIP_END_SEARCH, start = size - n;
	uint8_t *buf;
	int64_t found = -ENOENT, fits = -ENOENT;
	int err;

	if (size < ZIP_END_LEN || size == SRC_SIZE_UNKNOWN)
		return -ENOENT;
	buf = malloc((size_t)n);
	if (!buf)
		return -ENOMEM;
	err = src_pread_full(in, buf, (size_t)n, start);
	if (err) {
		free(buf);
		return err;
	}
	/* fits: bytes after the record (a download's padding, a signature) */
	for (uint64_t i = n - ZIP_END_LEN + 1; i-- > 0;) {
		if (le32(buf + i) != ZIP_END_SIG)
			continue;
		uint64_t end = start + i + ZIP_END_LEN + le16(buf + i + 20);
		if (end == size) {
			found = (int64_t)(start + i);
			break;
		}
		if (end < size && fits < 0)
			fits = (int64_t)(start + i);
	}
	free(buf);
	return found >= 0 ? found : fits;
}

/* Reads len bytes at off, which the caller has found to lie inside the archive: 0, or the
 * source's -errno (-EIO, -ENOMEM, a remote source's -ESTALE, ...; -EIO also when the file
 * turns out shorter than its size said) after a log line saying what could not be read. */
static int read_at(struct src *in, const char *name, const char *what, void *buf, size_t len,
		   uint64_t off)
{
	int err = src_pread_full(in, buf, len, off);

	if (err)
		tfs_log(TFS_LOG_ERR, "%s: cannot read the zip %s at offset %llu: %s", name, what,
			(unsigned long long)off, strerror(-err));
	return err;
}

/* The zip64 end record, when a zip64 locator sits just before the end record at end: its
 * numbers replace the end record's in d, *disk, *cd_disk, and *dir_end moves to it.  0 (also
 * when there is none), or -errno from a read. */
static int dir_zip64(struct src *in, const char *name, uint64_t size, uint64_t end,
		     struct zip_dir *d, unsigned *disk, unsigned *cd_disk, uint64_t *dir_end)
{
	uint8_t loc[ZIP64_LOCATOR_LEN], e64[ZIP64_END_LEN];
	bool found = false;
	uint64_t rec;
	int err;

	if (end < ZIP64_LOCATOR_LEN)
		return 0;
	err = read_at(in, name, "zip64 locator", loc, sizeof(loc), end - ZIP64_LOCATOR_LEN);
	if (err || le32(loc) != ZIP64_LOCATOR_SIG)
		return err;
	/* the record is where the locator says, or (shifted archive) right before it; in a split
	 * zip, an offset in the disk the locator names */
	rec = le64(loc + 8);
	if (d->disks && le32(loc + 4) < d->disks && rec < UINT64_MAX - d->starts[le32(loc + 4)])
		rec += d->starts[le32(loc + 4)];
	if (size >= ZIP64_END_LEN && rec <= size - ZIP64_END_LEN) {
		err = read_at(in, name, "zip64 end record", e64, sizeof(e64), rec);
		if (err)
			return err;
		found = le32(e64) == ZIP64_END_SIG;
	}
	if (end < ZIP64_LOCATOR_LEN + ZIP64_END_LEN)
		return 0;
	if (!found) {
		rec = end - ZIP64_LOCATOR_LEN - ZIP64_END_LEN;
		err = read_at(in, name, "zip64 end record", e64, sizeof(e64), rec);
		if (err || le32(e64) != ZIP64_END_SIG)
			return err;
	}
	*disk = le32(e64 + 16);
	*cd_disk = le32(e64 + 20);
	d->entries = le64(e64 + 32);
	d->size = le64(e64 + 40);
	d->off = le64(e64 + 48);
	d->zip64 = true;
	*dir_end = rec;
	if (le32(loc + 16) > 1 && *disk == 0)
		*disk = 1; /* more than one disk */
	return 0;
}

/* The directory of a split zip: the end record on disk `disk`, the directory's start on
 * `cd_disk`.  0 (d->off is then an offset of the joined bytes), -ENOTSUP (not joined: one part
 * alone) or -EIO (the numbers do not fit the parts), logged. */
static int dir_split(const char *name, unsigned disk, unsigned cd_disk, uint64_t dir_end,
		     struct zip_dir *d)
{
	if (!d->disks) {
		tfs_log(TFS_LOG_ERR, "%s: the last part of a zip split over %u disks, whose other "
			"parts (NAME.z01, ...) are not beside it", name, disk + 1);
		return -ENOTSUP;
	}
	if (disk != d->disks - 1 || cd_disk > disk) {
		tfs_log(TFS_LOG_ERR, "%s: a split zip whose end record is on disk %u (directory on "
			"disk %u), but %zu parts were found: parts missing, or damaged", name,
			disk + 1, cd_disk + 1, d->disks);
		return -EIO;
	}
	uint64_t at = d->starts[cd_disk];
	if (d->off > d->starts[cd_disk + 1] - at || d->size > dir_end ||
	    d->off + at > dir_end - d->size) {
		tfs_log(TFS_LOG_ERR, "%s: split zip central directory at offset %llu of disk %u "
			"does not fit before its end record: damaged", name,
			(unsigned long long)d->off, cd_disk + 1);
		return -EIO;
	}
	d->off += at;
	d->shift = 0;
	return 0;
}

static int dir_locate(struct src *in, const char *name, uint64_t size, int64_t end,
		      struct zip_dir *d)
{
	uint8_t e[ZIP_END_LEN];
	uint64_t dir_end; /* where the directory really ends: at the (zip64) end record */
	int err = read_at(in, name, "end record", e, sizeof(e), (uint64_t)end);

	if (err)
		return err;
	unsigned disk = le16(e + 4), cd_disk = le16(e + 6);
	d->entries = le16(e + 10);
	d->size = le32(e + 12);
	d->off = le32(e + 16);
	dir_end = (uint64_t)end;
	/* a zip64 locator just before the end record: the zip64 end record has the numbers */
	err = dir_zip64(in, name, size, (uint64_t)end, d, &disk, &cd_disk, &dir_end);
	if (err)
		return err;
	if (disk != 0 || cd_disk != 0)
		return dir_split(name, disk, cd_disk, dir_end, d);
	d->disks = 0; /* one disk, maybe cut by `split` (NAME.zip.001): offsets are the file's */
	if (d->size > dir_end) {
		tfs_log(TFS_LOG_ERR, "%s: zip central directory of %llu bytes does not fit before "
			"its end record: damaged", name, (unsigned long long)d->size);
		return -EIO;
	}
	/* bytes prepended to the archive shift the directory and every offset in it -- unless
	 * the directory is where its offset says (its size is then wrong, or a record sits
	 * between it and the end record) */
	d->shift = (int64_t)(dir_end - d->size) - (int64_t)d->off;
	uint8_t sig[4];
	if (d->shift && d->off < dir_end) {
		err = read_at(in, name, "central directory", sig, 4, d->off);
		if (err)
			return err;
		/* the offset is right: trust it over the size */
		if (le32(sig) == ZIP_CENTRAL_SIG) {
			tfs_log(TFS_LOG_WARNING, "%s: the zip directory's size (%llu) does not fit "
				"where it starts: read from its offset", name,
				(unsigned long long)d->size);
			d->size = dir_end - d->off;
			d->shift = 0;
		}
	}
	if (d->shift < 0) {
		tfs_log(TFS_LOG_ERR, "%s: zip central directory offset %llu is past its end record: "
			"damaged", name, (unsigned long long)d->off);
		return -EIO;
	}
	if (d->shift)
		tfs_log(TFS_LOG_INFO, "%s: %lld bytes before the zip archive (a self-extracting "
			"stub?): offsets shifted", name, (long long)d->shift);
	return 0;
}

/* ---- one entry ---------------------------------------------------------------------------- */

struct zip_entry {
	unsigned made_by, flags, method, dos_time, dos_date;
	uint32_t disk; /* where its local header is (a split zip) */
	uint32_t crc, ext_attr;
	uint64_t csize, usize, lho;
	const uint8_t *name, *extra;
	size_t name_len, extra_len;
};

/* The extra field's record with tag, or NULL (its data and length in *len). */
static const uint8_t *extra_find(const uint8_t *x, size_t n, unsigned tag, size_t *len)
{
	while (n >= 4) {
		unsigned t = le16(x), l = le16(x + 2);
		if (l > n - 4)
			return NULL;
		if (t == tag) {
			*len = l;
			return x + 4;
		}
		x += 4 + l;
		n -= 4 + l;
	}
	return NULL;
}

/* The zip64 extra field: the 64-bit values of the fields whose 32-bit values are all ones, in
 * this order, then the disk's 32-bit value when its 16-bit one is all ones (if it is there: a
 * zip of one disk may leave it out, and its disk is never read).  False if the field is
 * missing or too short for the 64-bit values. */
static bool apply_zip64(struct zip_entry *z, bool usize64, bool csize64, bool lho64, bool disk32)
{
	size_t len, need = 8 * (usize64 + csize64 + lho64), at = 0;
	const uint8_t *p = extra_find(z->extra, z->extra_len, ZIP_X_ZIP64, &len);

	if (!need && !disk32)
		return true;
	if (!need && !p)
		return true; /* no disk number: disk 0xffff, which no split zip has as many parts */
	if (!p || len < need)
		return false;
	if (usize64) {
		z->usize = le64(p + at);
		at += 8;
	}
	if (csize64) {
		z->csize = le64(p + at);
		at += 8;
	}
	if (lho64) {
		z->lho = le64(p + at);
		at += 8;
	}
	if (disk32 && len >= at + 4)
		z->disk = le32(p + at);
	return true;
}

/* A DOS date and time (local, no zone) as seconds, read as UTC; -1 when invalid. */
static int64_t dos_seconds(unsigned date, unsigned time)
{
	struct tm tm = {.tm_year = 80 + (int)(date >> 9), .tm_mon = (int)((date >> 5) & 15) - 1,
			.tm_mday = (int)(date & 31), .tm_hour = (int)(time >> 11),
			.tm_min = (int)((time >> 5) & 63), .tm_sec = (int)(time & 31) * 2};

	if (tm.tm_mon < 0 || tm.tm_mon > 11 || tm.tm_mday < 1)
		return 0; /* a zero date (some tools write it): the epoch */
	return (int64_t)timegm(&tm);
}

static void entry_times(const struct zip_entry *z, struct arc_member *m)
{
	size_t len;
	const uint8_t *p = extra_find(z->extra, z->extra_len, ZIP_X_TIME, &len);

	if (p && len >= 5 && (p[0] & 1)) { /* extended timestamp: unix mtime, UTC */
		m->mtime_sec = (int32_t)le32(p + 1);
		return;
	}
	p = extra_find(z->extra, z->extra_len, ZIP_X_NTFS, &len);
	if (p && len >= 4) { /* NTFS: tags after 4 reserved bytes; tag 1 holds the times */
		const uint8_t *t = p + 4;
		size_t left = len - 4;
		while (left >= 4) {
			unsigned tag = le16(t), tl = le16(t + 2);
			if (tl > left - 4)
				break;
			if (tag == 1 && tl >= 24) {
				uint64_t ft = le64(t + 4); /* 100 ns since 1601 */
				m->mtime_sec = (int64_t)(ft / 10000000) - (int64_t)FILETIME_UNIX_DIFF;
				m->mtime_nsec = (uint32_t)(ft % 10000000) * 100;
				return;
			}
			t += 4 + tl;
			left -= 4 + tl;
		}
	}
	m->mtime_sec = dos_seconds(z->dos_date, z->dos_time);
	m->dos_time = true;
}

/* Info-ZIP unix uid/gid (little-endian numbers of 1 to 8 bytes). */
static void entry_owner(const struct zip_entry *z, struct arc_member *m)
{
	size_t len;
	const uint8_t *p = extra_find(z->extra, z->extra_len, ZIP_X_UNIX3, &len);

	m->no_owner = true;
	if (!p || len < 3 || p[0] != 1)
		return;
	size_t us = p[1];
	if (us == 0 || us > 8 || 2 + us + 1 > len)
		return;
	size_t gs = p[2 + us];
	if (gs == 0 || gs > 8 || 3 + us + gs > len)
		return;
	uint64_t uid = 0, gid = 0;
	for (size_t i = us; i-- > 0;)
		uid = uid << 8 | p[2 + i];
	for (size_t i = gs; i-- > 0;)
		gid = gid << 8 | p[3 + us + i];
	m->uid = uid;
	m->gid = gid;
	m->no_owner = false;
}

/* Hosts whose archivers may write backslashes as separators: MS-DOS/FAT, OS/2 HPFS, NTFS,
 * VFAT (APPNOTE 4.4.2).  A backslash is not a separator on unix, so only these. */
static bool dos_host(unsigned host)
{
	return host == 0 || host == 6 || host == 11 || host == 14;
}

/* The name, NUL-terminated in buf (ZIP_NAME_MAX + 1 bytes): the Info-ZIP Unicode Path's
 * UTF-8 name if it is for this very stored name, else the stored bytes. */
static void entry_name(const struct zip_entry *z, struct arc_member *m, uint8_t *buf)
{
	size_t len;
	const uint8_t *p = extra_find(z->extra, z->extra_len, ZIP_X_UPATH, &len);
	const uint8_t *name = z->name;
	size_t n = z->name_len;

	if (p && len > 5 && p[0] == 1 &&
	    le32(p + 1) == (uint32_t)crc32(0, z->name, (uInt)z->name_len)) {
		name = p + 5;
		n = len - 5;
	}
	if (n > ZIP_NAME_MAX)
		n = ZIP_NAME_MAX;
	memcpy(buf, name, n);
	buf[n] = '\0';
	if (dos_host(z->made_by >> 8)) /* old PKZIP, Compress-Archive: "dir\file" */
		zip_dos_separators(buf, n, name != z->name || (z->flags & ZIP_FLAG_UTF8));
	m->path = buf;
	m->path_len = n;
}

static const char *method_codec(unsigned method)
{
	switch (method) {
	case 0: /* a stream too, so that its CRC-32 is checked as a compressed one's */
		return "stored";
	case 8:
		return "deflate";
	case 9:
		return "deflate64";
	case 12:
		return "bzip2";
	case 14:
		return "lzma-zip";
	case 93:
		return "zstd";
	case 95:
		return "xz";
	case 98:
		return "ppmd-zip";
	default:
		return NULL;
	}
}

static const char *method_name(unsigned method)
{
	switch (method) {
	case 1:
		return "shrink";
	case 2:
	case 3:
	case 4:
	case 5:
		return "reduce";
	case 6:
		return "implode";
	case 9:
		return "deflate64";
	case 10:
		return "PKWARE DCL implode";
	case 18:
		return "IBM TERSE";
	case 19:
		return "IBM LZ77";
	case 96:
		return "JPEG";
	case 97:
		return "WavPack";
	case 98:
		return "PPMd";
	default:
		return "unknown";
	}
}

/* Type and permissions. */
static void entry_type(const struct zip_entry *z, struct arc_member *m)
{
	uint32_t unix_mode = z->ext_attr >> 16;
	bool slash = z->name_len && z->name[z->name_len - 1] == '/';

	unsigned host = z->made_by >> 8;
	/* As unzip: the unix mode of a unix host's entry; a FAT host's too when it has one that
	 * agrees with the DOS folder bit (PKZip for Unix and Python's zipfile mark entries FAT
	 * and keep a mode there). */
	bool fat_mode = host == 0 && unix_mode &&
			(!(unix_mode & S_IFMT) || S_ISDIR(unix_mode) == !!(z->ext_attr & ZIP_DOS_DIR));
	if ((host == ZIP_HOST_UNIX || fat_mode) && unix_mode) {
		m->mode = unix_mode & 07777;
		switch (unix_mode & S_IFMT) {
		case S_IFDIR:
			m->type = MEMBER_DIR;
			return;
		case S_IFLNK:
			m->type = MEMBER_SYMLINK;
			m->link_in_data = true;
			return;
		case S_IFREG:
		case 0:
			break;
		default: /* devices and FIFOs cannot be made from a zip by its tools: a file */
			break;
		}
		m->type = slash ? MEMBER_DIR : MEMBER_REG;
		return;
	}
	if (slash || (z->ext_attr & ZIP_DOS_DIR)) {
		m->type = MEMBER_DIR;
		m->mode = 0755;
	} else {
		m->type = MEMBER_REG;
		m->mode = 0644;
	}
	/* the DOS read-only attribute takes the write bits away, as unzip does for any host
	 * without a unix mode (7-Zip: for files only; bsdtar: for FAT hosts only) */
	if (z->ext_attr & ZIP_DOS_READONLY)
		m->mode &= ~0222u;
}

/* How entry z is encrypted, into r, and how many bytes the encryption adds to its data
 * (*overhead: ZipCrypto's header; AES's salt, verification value and code).  0, or why it
 * cannot be read: -EOPNOTSUPP (a scheme tarseek lacks), -EIO (its description is damaged),
 * with why set. */
static int entry_crypt(const struct zip_entry *z, struct zcr_rec *r, uint64_t *overhead,
		       const char **why)
{
	size_t len;
	const uint8_t *p;

	memset(r, 0, sizeof(*r));
	if (z->flags & (ZIP_FLAG_STRONG | ZIP_FLAG_CD_ENCRYPTED)) {
		*why = "encrypted with PKWARE's strong encryption (not supported)";
		return -EOPNOTSUPP;
	}
	if (z->method != ZIP_METHOD_AES) { /* traditional: the check byte ends its header */
		r->kind = ZCR_ZIPCRYPTO;
		r->check = (uint8_t)((z->flags & ZIP_FLAG_DESCRIPTOR) ? z->dos_time >> 8
								     : z->crc >> 24);
		r->method = z->method;
		*overhead = ZC_HEADER;
		return 0;
	}
	p = extra_find(z->extra, z->extra_len, ZIP_X_AES, &len);
	if (!p || len < 7 || p[2] != 'A' || p[3] != 'E' || !wz_salt_len(p[4]) ||
	    (le16(p) != 1 && le16(p) != 2)) {
		*why = "AES-encrypted, but its AES extra field is missing or damaged";
		return -EIO;
	}
	r->kind = ZCR_AES;
	r->version = le16(p);
	r->strength = p[4];
	r->method = le16(p + 5);
	*overhead = wz_salt_len(r->strength) + WZ_PV + WZ_MAC;
	return 0;
}

/* The walk over the directory: what reporting an entry needs beside the entry. */
struct zip_walk {
	struct src *in;
	const char *name; /* the archive's, for the log */
	uint64_t size;
	int64_t shift;
	const struct cont_sink *sink;
	uint8_t *namebuf;     /* ZIP_NAME_MAX + 1 bytes for an entry's name */
	unsigned time_misses; /* local headers in a row read for a time that had none */
};

/* How many local headers in a row without an extended timestamp end the search for one; how
 * many bytes of a local header are read at once (its name and extra field, mostly). */
#define ZIP_LOCAL_TIME_MISSES 8
#define ZIP_LOCAL_PEEK 512

/* The extended timestamp of the local header at lho, for an entry whose directory record has
 * no time but the DOS one.  Some tools (macOS's) write it there only, and unzip, bsdtar and
 * 7-Zip show it.  Reading a local header costs a read at a place of its own in the archive
 * (a request for a remote one): the archives that have no time in the directory but for the
 * DOS one are mostly made by tools that write none in the local headers either (Windows',
 * Java's, Python's zipfile), so after ZIP_LOCAL_TIME_MISSES local headers in a row without
 * one the walk stops looking -- a handful of reads for such an archive, one per entry where
 * the times are there to be had.  0 (m's mtime replaced if one is found; a local header that
 * is not one, or damaged, leaves the DOS time: reading the entry will say why), or the
 * source's -errno, logged. */
static int local_time(struct zip_walk *w, uint64_t lho, struct arc_member *m)
{
	uint8_t peek[ZIP_LOCAL_PEEK], *big = NULL;
	const uint8_t *x, *p;
	size_t n, xl, len;
	int err;

	if (w->time_misses >= ZIP_LOCAL_TIME_MISSES || lho > w->size ||
	    w->size - lho < ZIP_LOCAL_LEN)
		return 0;
	n = w->size - lho < sizeof(peek) ? (size_t)(w->size - lho) : sizeof(peek);
	err = read_at(w->in, w->name, "local header", peek, n, lho);
	if (err)
		return err;
	w->time_misses++;
	if (le32(peek) != ZIP_LOCAL_SIG)
		return 0;
	size_t xoff = ZIP_LOCAL_LEN + le16(peek + 26);
	xl = le16(peek + 28);
	if (xoff + xl <= n) {
		x = peek + xoff;
	} else {
		if (xoff + xl > w->size - lho)
			return 0;
		big = malloc(xl ? xl : 1);
		if (!big)
			return -ENOMEM;
		err = read_at(w->in, w->name, "local header", big, xl, lho + xoff);
		if (err)
			goto out;
		x = big;
	}
	p = extra_find(x, xl, ZIP_X_TIME, &len);
	if (p && len >= 5 && (p[0] & 1)) {
		m->mtime_sec = (int32_t)le32(p + 1);
		m->mtime_nsec = 0;
		m->dos_time = false;
		w->time_misses = 0;
	}
out:
	free(big);
	return err;
}

/* Reports entry z: its stream if compressed, then the member. */
static int report(const struct zip_entry *z, struct zip_walk *w)
{
	const struct cont_sink *sink = w->sink;
	int err;
	struct arc_member m = {.link = (const uint8_t *)"", .uname = "", .gname = ""};
	char why[96];
	struct zcr_rec cr;
	uint8_t crec[ZCR_LEN];
	uint64_t overhead = 0;
	unsigned method = z->method;
	bool encrypted = (z->flags & ZIP_FLAG_ENCRYPTED) || z->method == ZIP_METHOD_AES;

	entry_name(z, &m, w->namebuf);
	entry_type(z, &m);
	entry_times(z, &m);
	entry_owner(z, &m);
	m.hdr_off = z->lho + (uint64_t)w->shift;
	if (m.dos_time) {
		err = local_time(w, m.hdr_off, &m);
		if (err)
			return err;
	}
	m.has_crc = true;
	m.crc = z->crc;
	if (m.type == MEMBER_DIR)
		return sink->member(sink->opaque, &m);
	m.size = m.stored = z->usize;
	if (z->usize == 0)
		return sink->member(sink->opaque, &m);
	if (encrypted) {
		int e = entry_crypt(z, &cr, &overhead, &m.why);
		if (!e && z->csize < overhead) {
			e = -EIO;
			m.why = "encrypted, but shorter than its encryption's header: damaged";
		}
		if (e) {
			m.unreadable = e;
			return sink->member(sink->opaque, &m);
		}
		method = cr.method;
		m.has_crc = !(cr.kind == ZCR_AES && cr.version == 2); /* AE-2 writes 0 there */
		zcr_encode(&cr, crec);
	}
	if (method == 0 && z->csize - overhead != z->usize) {
		m.unreadable = -EIO;
		m.why = "stored, but its sizes differ: damaged";
		return sink->member(sink->opaque, &m);
	}
	const char *codec = method_codec(method);
	if (!codec) {
		snprintf(why, sizeof(why), "compression method %u (%s) not supported", method,
			 method_name(method));
		m.unreadable = -EOPNOTSUPP;
		m.why = why;
		return sink->member(sink->opaque, &m);
	}
	struct cont_stream s = {.codec = codec, .coff = m.hdr_off, .clen = z->csize,
				.usize = z->usize, .zip_local = true,
				.crypt = encrypted ? crec : NULL};
	uint8_t size[8];
	if (method == 14 || method == 98) { /* LZMA, PPMd: the decoders need the size */
		put_le64(size, z->usize);
		s.params = size;
		s.params_len = sizeof(size);
	}
	err = sink->stream(sink->opaque, &s, &m.stream);
	return err ? err : sink->member(sink->opaque, &m);
}

/* Parses the central directory record at p (left bytes): *used its length.  False if it
 * does not fit or is not one. */
static bool central_entry(const uint8_t *p, size_t left, struct zip_entry *z, size_t *used)
{
	if (left < ZIP_CENTRAL_LEN || le32(p) != ZIP_CENTRAL_SIG)
		return false;
	size_t n = le16(p + 28), x = le16(p + 30), c = le16(p + 32);
	if (ZIP_CENTRAL_LEN + n + x + c > left)
		return false;
	*z = (struct zip_entry){
	    .made_by = le16(p + 4),
	    .flags = le16(p + 8),
	    .method = le16(p + 10),
	    .dos_time = le16(p + 12),
	    .dos_date = le16(p + 14),
	    .crc = le32(p + 16),
	    .csize = le32(p + 20),
	    .usize = le32(p + 24),
	    .ext_attr = le32(p + 38),
	    .lho = le32(p + 42),
	    .disk = le16(p + 34),
	    .name = p + ZIP_CENTRAL_LEN,
	    .name_len = n,
	    .extra = p + ZIP_CENTRAL_LEN + n,
	    .extra_len = x,
	};
	*used = ZIP_CENTRAL_LEN + n + x + c;
	return apply_zip64(z, z->usize == 0xffffffffu, z->csize == 0xffffffffu,
			   z->lho == 0xffffffffu, z->disk == 0xffffu);
}

/* z's local header offset in the joined bytes of a split zip (unchanged in one of a single
 * disk, whose entries all say disk 0).  False if its disk or its offset is not in the parts. */
static bool entry_disk(struct zip_entry *z, const struct zip_dir *d)
{
	if (!d->disks)
		return true;
	if (z->disk >= d->disks || z->lho >= d->starts[z->disk + 1] - d->starts[z->disk])
		return false;
	z->lho += d->starts[z->disk];
	return true;
}

static int parse_directory(struct src *in, const char *name, uint64_t size,
			   const struct zip_dir *d, const struct cont_sink *sink,
			   struct cont_stats *st)
{
	uint64_t at = d->off + (uint64_t)d->shift;
	uint8_t *buf, *namebuf;
	size_t pos = 0;
	int err = 0;

	if (d->size > size || at > size - d->size)
		return -EIO;
	buf = malloc(d->size ? (size_t)d->size : 1);
	namebuf = malloc(ZIP_NAME_MAX + 1);
	if (!buf || !namebuf) {
		free(buf);
		free(namebuf);
		return -ENOMEM;
	}
	err = read_at(in, name, "central directory", buf, (size_t)d->size, at);
	if (err) {
		free(buf);
		free(namebuf);
		return err;
	}
	struct zip_walk w = {.in = in, .name = name, .size = size, .shift = d->shift,
			     .sink = sink, .namebuf = namebuf};
	for (uint64_t i = 0; pos < d->size; i++) {
		struct zip_entry z;
		size_t used;
		if (!central_entry(buf + pos, (size_t)d->size - pos, &z, &used)) {
			tfs_log(TFS_LOG_WARNING, "%s: zip central directory damaged at entry %llu "
				"(offset %llu): the entries after it are not shown", name,
				(unsigned long long)i, (unsigned long long)(at + pos));
			st->damaged = true;
			break;
		}
		if (!entry_disk(&z, d)) {
			tfs_log(TFS_LOG_WARNING, "%s: split zip entry %llu is on disk %u at offset "
				"%llu, which is not in its parts: left out", name,
				(unsigned long long)i, z.disk + 1, (unsigned long long)z.lho);
			st->damaged = true;
		} else if (z.lho > size || (uint64_t)d->shift > size - z.lho) {
			tfs_log(TFS_LOG_WARNING, "%s: zip entry %llu points past the end of the "
				"archive: left out", name, (unsigned long long)i);
			st->damaged = true;
		} else {
			err = report(&z, &w);
			if (err)
				break;
			st->members++;
			if (sink->progress && (st->members & 1023) == 0)
				sink->progress(sink->opaque, at + pos);
		}
		pos += used;
	}
	if (!err && st->members != d->entries && !st->damaged)
		tfs_log(TFS_LOG_NOTICE, "%s: the zip end record says %llu entries, the directory "
			"holds %llu", name, (unsigned long long)d->entries,
			(unsigned long long)st->members);
	free(buf);
	free(namebuf);
	return err;
}

/* ---- without a directory: the local headers ------------------------------------------ */

static int parse_local(struct src *in, const char *name, uint64_t size,
		       const struct cont_sink *sink, struct cont_stats *st)
{
	uint64_t at = 0;
	uint8_t h[ZIP_LOCAL_LEN];
	uint8_t *var = malloc(ZIP_NAME_MAX * 2), *namebuf = malloc(ZIP_NAME_MAX + 1);
	int err = 0;

	if (!var || !namebuf) {
		free(var);
		free(namebuf);
		return -ENOMEM;
	}
	st->damaged = true;
	/* A local header keeps no host, no external attributes (made_by 0 below: entry_type's
	 * FAT rule), and Info-ZIP's local extra fields ('UT' times, 'ux' owners) keep no type:
	 * a symbolic link (zip -y) is a file of 0644 whose bytes are its target.  The tools
	 * agree on the type (issue 38): bsdtar -x, which reads the local headers as they come,
	 * writes such a file (mode 0664, libarchive's for an entry of unknown mode); 7zz x
	 * writes it too (0644: 0666 less the umask, which tarseek shows for an entry without a
	 * unix mode); Info-ZIP's unzip, the format's tool, refuses an archive without its
	 * directory. */
	tfs_log(TFS_LOG_WARNING, "%s: no zip central directory (truncated?): entries read from "
		"their local headers, which keep no type or mode (a symbolic link shows as a file "
		"holding its target)", name);
	/* its extra field is the local header's already: no time to look for elsewhere */
	struct zip_walk w = {.in = in, .name = name, .size = size, .sink = sink,
			     .namebuf = namebuf, .time_misses = ZIP_LOCAL_TIME_MISSES};
	while (at + ZIP_LOCAL_LEN <= size) {
		err = read_at(in, name, "local header", h, sizeof(h), at);
		if (err || le32(h) != ZIP_LOCAL_SIG)
			break;
		size_t n = le16(h + 26), x = le16(h + 28);
		struct zip_entry z = {
		    .made_by = 0,
		    .flags = le16(h + 6),
		    .method = le16(h + 8),
		    .dos_time = le16(h + 10),
		    .dos_date = le16(h + 12),
		    .crc = le32(h + 14),
		    .csize = le32(h + 18),
		    .usize = le32(h + 22),
		    .lho = at,
		    .name = var,
		    .name_len = n,
		    .extra = var + n,
		    .extra_len = x,
		};
		if (n + x > size - at - ZIP_LOCAL_LEN)
			break; /* the archive ends inside the header */
		err = read_at(in, name, "local header", var, n + x, at + ZIP_LOCAL_LEN);
		if (err)
			break;
		if (!apply_zip64(&z, z.usize == 0xffffffffu, z.csize == 0xffffffffu, false, false))
			break;
		if (z.flags & ZIP_FLAG_DESCRIPTOR) {
			tfs_log(TFS_LOG_WARNING, "%s: zip entry at offset %llu keeps its sizes after "
				"its data: the entries from it on are not shown", name,
				(unsigned long long)at);
			break;
		}
		uint64_t data = at + ZIP_LOCAL_LEN + n + x;
		if (data > size || z.csize > size - data) {
			tfs_log(TFS_LOG_WARNING, "%s: the archive ends inside zip entry at offset "
				"%llu: left out", name, (unsigned long long)at);
			break;
		}
		err = report(&z, &w);
		if (err)
			break;
		st->members++;
		at = data + z.csize;
	}
	free(var);
	free(namebuf);
	if (!err && st->members == 0) { /* zip's magic and then garbage: unzip refuses it too */
		tfs_log(TFS_LOG_ERR, "%s: not a zip archive (no central directory, and no entry "
			"could be read from its local headers)", name);
		err = -EINVAL;
	}
	return err;
}

/* ---- the container -------------------------------------------------------------------- */

int zip_local_data(struct src *file, uint64_t lho, const char *archive, uint64_t *data)
{
	uint8_t h[ZIP_LOCAL_LEN];
	ssize_t n = src_pread(file, h, sizeof(h), lho);

	if (n < 0) {
		tfs_log(TFS_LOG_ERR, "%s: cannot read the zip local header at offset %llu: %s",
			archive, (unsigned long long)lho, strerror((int)-n));
		return (int)n;
	}
	if (n < (ssize_t)sizeof(h) || le32(h) != ZIP_LOCAL_SIG) {
		tfs_log(TFS_LOG_ERR, "%s: no zip local header at offset %llu (damaged, or changed "
			"since it was indexed)", archive, (unsigned long long)lho);
		return -EIO;
	}
	*data = lho + ZIP_LOCAL_LEN + le16(h + 26) + le16(h + 28);
	return 0;
}

static bool zip_probe(struct src *in, const uint8_t *head, size_t len)
{
	if (len >= 4 && (le32(head) == ZIP_LOCAL_SIG || le32(head) == ZIP_END_SIG))
		return true;
	/* data before the archive; a file whose end cannot be read is not taken for a zip */
	return find_end(in, src_size(in)) >= 0;
}

static int zip_parse(struct src *in, const struct cont_sink *sink, struct cont_stats *stats)
{
	struct cont_stats st = {0};
	struct zip_dir d = {0};
	uint64_t size = src_size(in);
	const char *name = sink->name ? sink->name : "zip";
	int64_t end = find_end(in, size);
	int err;

	if (end == -ENOENT) { /* no end record: a zip cut short, or not a zip */
		uint8_t h[4];
		err = size < sizeof(h) ? -EINVAL : read_at(in, name, "start", h, sizeof(h), 0);
		if (!err)
			err = le32(h) == ZIP_LOCAL_SIG ? parse_local(in, name, size, sink, &st)
						       : -EINVAL;
	} else if (end < 0) {
		err = (int)end;
		tfs_log(TFS_LOG_ERR, "%s: cannot read the end of the zip archive: %s", name,
			strerror(-err));
	} else {
		d.disks = parts_starts(in, &d.starts);
		err = dir_locate(in, name, size, end, &d);
		if (!err)
			err = parse_directory(in, name, size, &d, sink, &st);
	}
	if (stats)
		*stats = st;
	return err;
}

const struct container cont_zip = {
	.name = "zip",
	.probe = zip_probe,
	.parse = zip_parse,
};
