/* The files of an opened archive (see archive.h): open, read, zero-copy ranges, a member as a
 * source.
 *
 * A member whose entry names no stream is read with pread at its data offset in the archive
 * file (a plain tar, a stored zip entry); one that names a stream is read through that
 * stream's reader (streams.c, codecs' reader over the shared chunk cache), with the bytes
 * after a read decoded ahead when the member is read in order.  A sparse member reads its
 * extents in order and its holes as zeros.  A remote archive is told (src_advise) of a plain
 * member's bytes at its first read, so that it fetches them in one request.
 *
 * A plain member's bytes are the archive file's own, unchecked by any CRC: each read first
 * looks at the file (one fstat), and once it is no longer the file that was opened (another
 * size, modification time or inode: rewritten, or changed in place), the reads fail with EIO
 * and a log line naming the member, instead of serving bytes the index never saw.  A
 * compressed member's segments are checked against their CRCs instead.
 */
#include "index/archive_int.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "common/log.h"
#include "crypto/keyring.h"
#include "index/db.h"

/* The sparse map of f's entry, as the builder wrote it: in order, inside the size and the
 * stored data (an index that says otherwise is damaged).  0 or -errno. */
static int load_sparse(struct arch_file *f, struct conn *c, uint64_t ino)
{
	size_t n = 0, cap = 0;
	uint64_t end = 0;
	bool bad = false;
	int r;

	sqlite3_bind_int64(c->sparse, 1, (sqlite3_int64)ino);
	while ((r = arch_step(c->sparse)) > 0) {
		if (n + 1 >= cap) {
			cap = cap ? cap * 2 : 8;
			void *p = realloc(f->ext, cap * sizeof(*f->ext));
			if (!p) {
				r = -ENOMEM;
				break;
			}
			f->ext = p;
		}
		struct arch_file_ext *e = &f->ext[n];
		e->off = (uint64_t)sqlite3_column_int64(c->sparse, 0);
		e->len = (uint64_t)sqlite3_column_int64(c->sparse, 1);
		e->phys = (uint64_t)sqlite3_column_int64(c->sparse, 2);
		bad |= e->off < end || e->off > f->size || e->len > f->size - e->off ||
		       e->phys > f->stored || e->len > f->stored - e->phys;
		end = e->off + e->len;
		n++;
		if (bad)
			break;
	}
	sqlite3_reset(c->sparse);
	if (r < 0)
		return r;
	if (bad) {
		tfs_log(TFS_LOG_ERR, "inode %llu: sparse map does not fit its data",
			(unsigned long long)ino);
		return -EIO;
	}
	if (!f->ext) { /* sparse with no data at all: all holes */
		f->ext = calloc(1, sizeof(*f->ext));
		if (!f->ext)
			return -ENOMEM;
	} else {
		f->ext[n].off = UINT64_MAX; /* sentinel */
	}
	f->next = n;
	return 0;
}

/* Opens entry ino's data: a regular file's, or (link) a symlink's whose target is its data
 * (link_read). */
static int file_open(struct arch *a, uint64_t ino, bool link, struct arch_file **out)
{
	struct arch_file *f = NULL;
	struct conn *c;
	uint64_t flags, stream = 0;
	uint32_t mode;
	int r, err = arch_conn_get(a, &c);

	*out = NULL;
	if (err)
		return err;
	sqlite3_bind_int64(c->file, 1, (sqlite3_int64)ino);
	r = arch_step(c->file);
	if (r <= 0) {
		err = r < 0 ? r : -ENOENT;
		goto out;
	}
	mode = (uint32_t)sqlite3_column_int64(c->file, 0);
	flags = (uint64_t)sqlite3_column_int64(c->file, 4);
	if (!S_ISREG(mode) && !(link && S_ISLNK(mode))) {
		err = S_ISDIR(mode) ? -EISDIR : -EINVAL;
		goto out;
	}
	if (sqlite3_column_type(c->file, 6) != SQLITE_NULL) { /* listed, but not readable */
		err = (int)sqlite3_column_int64(c->file, 6);
		tfs_log(TFS_LOG_ERR, "%s: %.*s: %s", a->path, sqlite3_column_bytes(c->file, 8),
			(const char *)sqlite3_column_blob(c->file, 8),
			sqlite3_column_type(c->file, 7) == SQLITE_TEXT
			    ? (const char *)sqlite3_column_text(c->file, 7)
			    : strerror(-err));
		if (err >= 0)
			err = -EIO;
		goto out;
	}
	f = calloc(1, sizeof(*f));
	if (!f) {
		err = -ENOMEM;
		goto out;
	}
	f->a = a;
	f->name = strndup((const char *)sqlite3_column_blob(c->file, 8),
			  (size_t)sqlite3_column_bytes(c->file, 8));
	if (!f->name) {
		err = -ENOMEM;
		goto out;
	}
	f->data_off = (uint64_t)sqlite3_column_int64(c->file, 1);
	f->size = (uint64_t)sqlite3_column_int64(c->file, 2);
	f->stored = (uint64_t)sqlite3_column_int64(c->file, 3);
	if (sqlite3_column_type(c->file, 5) != SQLITE_NULL)
		stream = (uint64_t)sqlite3_column_int64(c->file, 5);
	sqlite3_reset(c->file);
	if (flags & IDX_F_SPARSE)
		err = load_sparse(f, c, ino);
out:
	sqlite3_reset(c->file);
	arch_conn_put(a, c);
	if (!err && stream)
		err = arch_stream_get(a, stream, &f->st);
	if (err) {
		arch_file_close(f);
		return err;
	}
	*out = f;
	return 0;
}

int arch_file_open(struct arch *a, uint64_t ino, struct arch_file **out)
{
	return file_open(a, ino, false, out);
}

/* The target of symlink ino read from its data through its reader (see archive_int.h's
 * arch_link_stored): its bytes are checked as a file's are (the CRC-32, the stream's); 0 and
 * *len, -ERANGE (*len set) if size is too small, or the read's error: -EIO (damaged, logged),
 * -EACCES (encrypted and no password given opens it, logged), the error an entry was marked
 * unreadable with (logged with why). */
static int link_read(struct arch *a, uint64_t ino, char *buf, size_t size, size_t *len)
{
	struct arch_file *f;
	ssize_t n;
	int err = file_open(a, ino, true, &f);

	if (err)
		return err; /* an entry marked unreadable: logged, with why */
	*len = (size_t)f->size;
	if (f->size > ARCH_LINK_MAX) {
		tfs_log(TFS_LOG_ERR, "%s: %s: a symbolic link of %llu bytes: too long to be a "
			"target", a->path, f->name, (unsigned long long)f->size);
		err = -EIO;
	} else if (f->size > size) {
		err = -ERANGE;
	} else if ((n = arch_file_read(f, buf, (size_t)f->size, 0)) < 0) {
		err = (int)n; /* logged by the read (EIO, EACCES) */
	} else if ((uint64_t)n != f->size) {
		err = -EIO; /* cannot be: a short read is an error already */
	}
	arch_file_close(f);
	return err;
}

int arch_readlink(struct arch *a, uint64_t ino, char *buf, size_t size, size_t *len)
{
	int err = arch_link_stored(a, ino, buf, size, len);

	return err == -ENODATA ? link_read(a, ino, buf, size, len) : err;
}

uint64_t arch_file_size(const struct arch_file *f)
{
	return f->size;
}

#define ADVISE_MAX ((uint64_t)8 << 20) /* of a plain member, announced at its first read */
#define SEQ_AHEAD ((uint64_t)8 << 20)	 /* of a compressed member read in order, decoded ahead */

/* True if f's archive file is not the one opened (see the top); logged once per file. */
static bool file_changed(struct arch_file *f, const struct stat *now)
{
	const struct stat *o = &f->a->opened;

	if (now->st_size == o->st_size && now->st_mtim.tv_sec == o->st_mtim.tv_sec &&
	    now->st_mtim.tv_nsec == o->st_mtim.tv_nsec && now->st_ino == o->st_ino &&
	    now->st_dev == o->st_dev)
		return false;
	if (!f->said)
		tfs_log(TFS_LOG_ERR, "%s: %s: the archive changed since it was opened (its size or "
			"modification time is not the same): its members cannot be read; mount "
			"it again", f->a->path, f->name);
	f->said = true;
	return true;
}

/* Reads len bytes of the member's stored data at rel. */
static ssize_t read_stored(struct arch_file *f, void *buf, size_t len, uint64_t rel)
{
	struct arch *a = f->a;
	ssize_t n;

	if (rel + len > f->stored) {
		tfs_log(TFS_LOG_ERR, "read past the member's stored data (index inconsistent)");
		return -EIO;
	}
	if (!f->st && !f->advised) { /* a remote archive fetches the member in one request */
		uint64_t left = f->stored - rel;
		src_advise(a->file, f->data_off + rel, left < ADVISE_MAX ? left : ADVISE_MAX);
		f->advised = true;
	}
	struct stat now;
	if (!f->st && a->fd >= 0 && (fstat(a->fd, &now) < 0 || file_changed(f, &now)))
		return -EIO;
	if (!f->st)
		n = src_pread(a->file, buf, len, f->data_off + rel);
	else if (f->st->reader) {
		/* a read where the last one ended: the member is read in order (a large file
		 * copied or digested), so its next bytes are decoded ahead on another core */
		uint64_t was = atomic_exchange_explicit(&f->seq_next, rel + len,
							memory_order_relaxed);
		uint64_t to = 0; /* end of what to decode ahead, in the member's stored data */
		if (rel && rel == was)
			to = f->stored - rel - len < SEQ_AHEAD ? f->stored : rel + len + SEQ_AHEAD;
		n = arch_stream_read(f->st, buf, len, f->data_off + rel, to ? f->data_off + to : 0);
	}
	else
		n = 0; /* a stream that decodes to nothing */
	if (n >= 0 && (size_t)n < len) {
		tfs_log(TFS_LOG_ERR,
			"%s: archive ends before the member's data at offset %llu "
			"(truncated or changed since it was indexed)",
			a->path, (unsigned long long)(f->data_off + rel + (uint64_t)n));
		return -EIO;
	}
	return n;
}

/* A read refused because no password given opens the member's data (an encrypted 7z folder:
 * the codec logs nothing, not knowing the member): said once for the file, naming it. */
static ssize_t read_denied(struct arch_file *f, ssize_t n)
{
	if (n == -EACCES && !atomic_exchange(&f->denied_logged, true))
		tfs_log(TFS_LOG_ERR, "%s: %s: encrypted, and no password given opens it%s",
			f->a->path, f->name, kr_count() ? "" : " (give it with --password)");
	return n;
}

ssize_t arch_file_read(struct arch_file *f, void *buf, size_t len, uint64_t off)
{
	size_t done = 0;

	if (off >= f->size)
		return 0;
	if (len > f->size - off)
		len = (size_t)(f->size - off);
	if (!f->ext)
		return read_denied(f, read_stored(f, buf, len, off));
	/* sparse: extents in order, holes read as zeros */
	while (done < len) {
		uint64_t pos = off + done;
		size_t lo = 0, hi = f->next; /* first extent ending after pos */
		while (lo < hi) {
			size_t mid = (lo + hi) / 2;
			if (f->ext[mid].off + f->ext[mid].len <= pos)
				lo = mid + 1;
			else
				hi = mid;
		}
		size_t want = len - done;
		if (lo == f->next || f->ext[lo].off > pos) { /* a hole */
			uint64_t hole_end = lo == f->next ? f->size : f->ext[lo].off;
			size_t n = hole_end - pos < want ? (size_t)(hole_end - pos) : want;
			memset((uint8_t *)buf + done, 0, n);
			done += n;
			continue;
		}
		uint64_t in = pos - f->ext[lo].off, n = f->ext[lo].len - in;
		if (n > want)
			n = want;
		ssize_t r = read_stored(f, (uint8_t *)buf + done, (size_t)n, f->ext[lo].phys + in);
		if (r < 0) /* all or nothing: a short read would look like the end */
			return read_denied(f, r);
		done += (size_t)n;
	}
	return (ssize_t)done;
}

size_t arch_file_direct(struct arch_file *f, uint64_t off, size_t len, int *fd, uint64_t *fd_off)
{
	struct stat st;

	if (f->st || f->ext || f->a->fd < 0 || off >= f->size)
		return 0;
	if (len > f->size - off)
		len = (size_t)(f->size - off);
	/* a zero-copy reply cannot report a short read as an error (the kernel would take it
	 * for the end of the file): only while the archive still holds the whole range */
	if (fstat(f->a->fd, &st) < 0 || (uint64_t)st.st_size < f->data_off + off + len ||
	    file_changed(f, &st))
		return 0; /* the read that follows says why */
	if (!f->advised && f->size - off > len) {
		/* more requests follow (the kernel's are 128 KiB): the disk reads the rest now, in
		 * large requests, instead of one small read per request as they come */
		uint64_t left = f->size - off;
		src_advise(f->a->file, f->data_off + off, left < ADVISE_MAX ? left : ADVISE_MAX);
		f->advised = true;
	}
	*fd = f->a->fd;
	*fd_off = f->data_off + off;
	return len;
}

void arch_file_close(struct arch_file *f)
{
	if (!f)
		return;
	if (f->st)
		arch_stream_put(f->a, f->st);
	free(f->ext);
	free(f->name);
	free(f);
}

/* A member of an archive as a source (for the archive inside it). */
static ssize_t member_pread(void *opaque, void *buf, size_t len, uint64_t off)
{
	return arch_file_read(opaque, buf, len, off);
}

static void member_close(void *opaque)
{
	arch_file_close(opaque);
}

static const struct src_ops member_ops = {.pread = member_pread, .close = member_close};

int arch_file_src(struct arch *a, uint64_t ino, struct src **out)
{
	struct arch_file *f;
	int err = arch_file_open(a, ino, &f);

	*out = NULL;
	if (err)
		return err;
	*out = src_new(&member_ops, f, arch_file_size(f));
	if (!*out) {
		arch_file_close(f);
		return -ENOMEM;
	}
	return 0;
}
