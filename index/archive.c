/* An opened archive (see archive.h).
 *
 * Connections: a pool of read-only SQLite connections with their prepared statements.  A
 * call takes one from the free list (or opens a new one) and gives it back when done, so
 * there are as many connections as calls ever ran at once -- FUSE worker threads come and
 * go, connections stay.
 *
 * Data: a plain tar is read with pread at the member's data offset; a compressed archive
 * through a creader built from the checkpoints table (the small columns are loaded at open;
 * the aux blobs, e.g. gzip windows, are read from SQLite only when a decoder starts there).
 *
 * Locks: conns_lock guards the free list only; it is never held during a query.
 */
#include "archive.h"
#include "tree.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../codecs/codec.h"
#include "../common/endian.h"
#include "../common/log.h"
#include "../codecs/segment.h"
#include "db.h"

struct conn {
	sqlite3 *db;
	sqlite3_stmt *lookup, *getattr, *readdir, *name_of, *readlink, *sparse, *xlist, *xget,
		*aux, *file, *versions, *describe, *nested;
	struct conn *next;
};

struct arch {
	struct arch_info info;
	char *path, *codec_name;
	char *index;	     /* what connections open: a file, or "memdb:..." */
	char *index_shown;   /* the index file, for messages */
	sqlite3 *keeper;     /* keeps an in-memory index alive */
	struct cache *cache;
	pthread_mutex_t nested_lock;
	struct src *file;
	int fd;
	struct creader *reader; /* NULL for a plain tar */
	pthread_mutex_t conns_lock;
	struct conn *free_conns; /* protected by conns_lock */
};

struct arch_file {
	struct arch *a;
	uint64_t data_off, size, stored;
	struct tar_sparse_ext {
		uint64_t off, len, phys;
	} *ext;
	size_t next;
};

#define ENTRY_COLS "coalesce(t.id, e.id), coalesce(t.mode, e.mode), coalesce(t.nlink, e.nlink)," \
	" coalesce(t.uid, e.uid), coalesce(t.gid, e.gid), coalesce(t.size, e.size)," \
	" coalesce(t.rdev, e.rdev), coalesce(t.mtime, e.mtime), coalesce(t.mtime_nsec, e.mtime_nsec)," \
	" coalesce(t.stored, e.stored), coalesce(t.flags, e.flags)"

static void conn_free(struct conn *c)
{
	sqlite3_finalize(c->lookup);
	sqlite3_finalize(c->getattr);
	sqlite3_finalize(c->readdir);
	sqlite3_finalize(c->name_of);
	sqlite3_finalize(c->readlink);
	sqlite3_finalize(c->sparse);
	sqlite3_finalize(c->xlist);
	sqlite3_finalize(c->xget);
	sqlite3_finalize(c->aux);
	sqlite3_finalize(c->file);
	sqlite3_finalize(c->versions);
	sqlite3_finalize(c->describe);
	sqlite3_finalize(c->nested);
	sqlite3_close(c->db);
	free(c);
}

static void conn_put(struct arch *a, struct conn *c)
{
	pthread_mutex_lock(&a->conns_lock);
	c->next = a->free_conns;
	a->free_conns = c;
	pthread_mutex_unlock(&a->conns_lock);
}

static struct conn *conn_get(struct arch *a)
{
	struct conn *c;
	int err = 0;

	pthread_mutex_lock(&a->conns_lock);
	c = a->free_conns;
	if (c)
		a->free_conns = c->next;
	pthread_mutex_unlock(&a->conns_lock);
	if (c)
		return c;
	c = calloc(1, sizeof(*c));
	if (!c)
		return NULL;
	err = db_open_ro(a->index, &c->db);
	if (err)
		tfs_log(TFS_LOG_ERR, "cannot open index %s: %s", a->index_shown, strerror(-err));
	err = err ? err : db_prepare(c->db, "SELECT " ENTRY_COLS " FROM entries e LEFT JOIN entries t"
		" ON t.id = e.target WHERE e.parent = ?1 AND e.name = ?2 AND e.latest = 1", &c->lookup);
	err = err ? err : db_prepare(c->db, "SELECT id, mode, nlink, uid, gid, size, rdev, mtime,"
		" mtime_nsec, stored, flags FROM entries WHERE id = ?1", &c->getattr);
	err = err ? err : db_prepare(c->db, "SELECT " ENTRY_COLS ", e.name, e.id FROM entries e"
		" LEFT JOIN entries t ON t.id = e.target WHERE e.parent = ?1 AND e.latest = 1"
		" AND e.name > ?2 ORDER BY e.name", &c->readdir);
	err = err ? err : db_prepare(c->db, "SELECT name FROM entries WHERE id = ?1", &c->name_of);
	err = err ? err : db_prepare(c->db, "SELECT mode, link FROM entries WHERE id = ?1", &c->readlink);
	err = err ? err
		  : db_prepare(c->db, "SELECT off, len, src FROM sparse WHERE id = ?1 ORDER BY seq",
			       &c->sparse);
	err = err ? err : db_prepare(c->db, "SELECT name FROM xattrs WHERE id = ?1 ORDER BY name",
		&c->xlist);
	err = err ? err : db_prepare(c->db, "SELECT value FROM xattrs WHERE id = ?1 AND name = ?2",
		&c->xget);
	err = err ? err : db_prepare(c->db, "SELECT aux FROM checkpoints WHERE idx = ?1", &c->aux);
	err = err ? err : db_prepare(c->db, "SELECT mode, data_off, size, stored, flags FROM entries"
		" WHERE id = ?1", &c->file);
	err = err ? err : db_prepare(c->db, "SELECT " ENTRY_COLS " FROM entries e LEFT JOIN entries t"
		" ON t.id = e.target WHERE e.parent = ?1 AND e.name = ?2 ORDER BY e.version", &c->versions);
	err = err ? err : db_prepare(c->db, "SELECT e.version, (SELECT max(version) FROM entries v"
		" WHERE v.parent = e.parent AND v.name = e.name), e.data_off, e.hdr_off, e.size,"
		" e.stored, e.flags FROM entries e WHERE e.id = ?1", &c->describe);
	err = err ? err : db_prepare(c->db, "SELECT image FROM nested WHERE id = ?1", &c->nested);
	if (err) {
		conn_free(c);
		return NULL;
	}
	return c;
}

static int step_row(sqlite3_stmt *st)
{
	int rc = sqlite3_step(st);

	if (rc == SQLITE_ROW)
		return 1;
	if (rc == SQLITE_DONE)
		return 0;
	tfs_log(TFS_LOG_ERR, "index query failed: %s", sqlite3_errstr(rc));
	return -EIO;
}

static void row_attr(sqlite3_stmt *st, struct arch_attr *out)
{
	out->ino = (uint64_t)sqlite3_column_int64(st, 0);
	out->mode = (uint32_t)sqlite3_column_int64(st, 1);
	out->nlink = (uint32_t)sqlite3_column_int64(st, 2);
	out->uid = (uint64_t)sqlite3_column_int64(st, 3);
	out->gid = (uint64_t)sqlite3_column_int64(st, 4);
	out->size = (uint64_t)sqlite3_column_int64(st, 5);
	out->rdev = (uint64_t)sqlite3_column_int64(st, 6);
	out->mtime = sqlite3_column_int64(st, 7);
	out->mtime_nsec = (uint32_t)sqlite3_column_int64(st, 8);
	uint64_t stored = (uint64_t)sqlite3_column_int64(st, 9);
	uint64_t flags = (uint64_t)sqlite3_column_int64(st, 10);
	out->blocks = ((flags & IDX_F_SPARSE ? stored : out->size) + 511) / 512;
	out->flags = 0;
	/* a symlink's permission bits mean nothing on Linux, where every one shows 0777, as
	 * does each that tar extracts: the archive's bits (0755 from macOS, say) are not shown */
	if (S_ISLNK(out->mode))
		out->mode = S_IFLNK | 0777;
	if (flags & IDX_F_NESTED) { /* an archive inside, shown as a folder (-r) */
		out->flags = ARCH_A_NESTED;
		out->mode = S_IFDIR | (out->mode & 07777) | ((out->mode & 0444) >> 2);
		out->nlink = 2;
	}
}

static int lookup_c(struct arch *a, struct conn *c, uint64_t parent, const char *name, size_t len,
		struct arch_attr *out)
{
	int r;

	sqlite3_bind_int64(c->lookup, 1, (sqlite3_int64)parent);
	sqlite3_bind_blob(c->lookup, 2, len ? name : "", (int)len, SQLITE_STATIC);
	r = step_row(c->lookup);
	if (r > 0)
		row_attr(c->lookup, out);
	sqlite3_reset(c->lookup);
	return r > 0 ? 0 : (r == 0 ? -ENOENT : r);
}

int arch_lookup(struct arch *a, uint64_t parent, const char *name, size_t len,
		struct arch_attr *out)
{
	struct conn *c = conn_get(a);
	int r;

	if (!c)
		return -EIO;
	r = lookup_c(a, c, parent, name, len, out);
	conn_put(a, c);
	return r;
}

static int getattr_c(struct arch *a, struct conn *c, uint64_t ino, struct arch_attr *out)
{
	int r;

	sqlite3_bind_int64(c->getattr, 1, (sqlite3_int64)ino);
	r = step_row(c->getattr);
	if (r > 0)
		row_attr(c->getattr, out);
	sqlite3_reset(c->getattr);
	return r > 0 ? 0 : (r == 0 ? -ENOENT : r);
}

int arch_getattr(struct arch *a, uint64_t ino, struct arch_attr *out)
{
	struct conn *c = conn_get(a);
	int r;

	if (!c)
		return -EIO;
	r = getattr_c(a, c, ino, out);
	conn_put(a, c);
	return r;
}

static int readdir_c(struct arch *a, struct conn *c, uint64_t dir, uint64_t after, arch_dirent_fn fn, void *opaque)
{
	void *start = NULL;
	int start_len = 0, r;

	if (after) {
		sqlite3_bind_int64(c->name_of, 1, (sqlite3_int64)after);
		r = step_row(c->name_of);
		if (r > 0) {
			start_len = sqlite3_column_bytes(c->name_of, 0);
			start = malloc(start_len ? start_len : 1);
			if (start)
				memcpy(start, sqlite3_column_blob(c->name_of, 0), start_len);
		}
		sqlite3_reset(c->name_of);
		if (r <= 0)
			return r < 0 ? r : -ENOENT;
		if (!start)
			return -ENOMEM;
	}
	sqlite3_bind_int64(c->readdir, 1, (sqlite3_int64)dir);
	sqlite3_bind_blob(c->readdir, 2, start ? start : "", start_len, SQLITE_STATIC);
	while ((r = step_row(c->readdir)) > 0) {
		struct arch_attr at;
		row_attr(c->readdir, &at);
		const char *name = sqlite3_column_blob(c->readdir, 11);
		size_t len = (size_t)sqlite3_column_bytes(c->readdir, 11);
		uint64_t cookie = (uint64_t)sqlite3_column_int64(c->readdir, 12);
		if (fn(opaque, name ? name : "", len, &at, cookie))
			break;
	}
	sqlite3_reset(c->readdir);
	free(start);
	return r < 0 ? r : 0;
}

int arch_readdir(struct arch *a, uint64_t dir, uint64_t after, arch_dirent_fn fn, void *opaque)
{
	struct conn *c = conn_get(a);
	int r;

	if (!c)
		return -EIO;
	r = readdir_c(a, c, dir, after, fn, opaque);
	conn_put(a, c);
	return r;
}

static int readlink_c(struct arch *a, struct conn *c, uint64_t ino, char *buf, size_t size, size_t *len)
{
	int r, err = 0;

	sqlite3_bind_int64(c->readlink, 1, (sqlite3_int64)ino);
	r = step_row(c->readlink);
	if (r <= 0) {
		err = r < 0 ? r : -ENOENT;
	} else if (!S_ISLNK(sqlite3_column_int64(c->readlink, 0))) {
		err = -EINVAL;
	} else {
		size_t n = (size_t)sqlite3_column_bytes(c->readlink, 1);
		const void *p = sqlite3_column_blob(c->readlink, 1);
		*len = n;
		if (n > size)
			err = -ERANGE;
		else if (n)
			memcpy(buf, p, n);
	}
	sqlite3_reset(c->readlink);
	return err;
}

int arch_readlink(struct arch *a, uint64_t ino, char *buf, size_t size, size_t *len)
{
	struct conn *c = conn_get(a);
	int r;

	if (!c)
		return -EIO;
	r = readlink_c(a, c, ino, buf, size, len);
	conn_put(a, c);
	return r;
}

static ssize_t listxattr_c(struct arch *a, struct conn *c, uint64_t ino, char *buf, size_t size)
{
	size_t total = 0;
	int r;

	sqlite3_bind_int64(c->xlist, 1, (sqlite3_int64)ino);
	while ((r = step_row(c->xlist)) > 0) {
		size_t n = (size_t)sqlite3_column_bytes(c->xlist, 0);
		const void *p = sqlite3_column_blob(c->xlist, 0);
		if (size) {
			if (total + n + 1 > size) {
				r = -ERANGE;
				break;
			}
			memcpy(buf + total, p, n);
			buf[total + n] = '\0';
		}
		total += n + 1;
	}
	sqlite3_reset(c->xlist);
	return r < 0 ? r : (ssize_t)total;
}

ssize_t arch_listxattr(struct arch *a, uint64_t ino, char *buf, size_t size)
{
	struct conn *c = conn_get(a);
	ssize_t r;

	if (!c)
		return -EIO;
	r = listxattr_c(a, c, ino, buf, size);
	conn_put(a, c);
	return r;
}

static ssize_t getxattr_c(struct arch *a, struct conn *c, uint64_t ino, const char *name, void *buf, size_t size)
{
	ssize_t ret;
	int r;

	sqlite3_bind_int64(c->xget, 1, (sqlite3_int64)ino);
	sqlite3_bind_blob(c->xget, 2, name, (int)strlen(name), SQLITE_STATIC);
	r = step_row(c->xget);
	if (r <= 0) {
		ret = r < 0 ? r : -ENODATA;
	} else {
		size_t n = (size_t)sqlite3_column_bytes(c->xget, 0);
		ret = (ssize_t)n;
		if (size && n > size)
			ret = -ERANGE;
		else if (size && n)
			memcpy(buf, sqlite3_column_blob(c->xget, 0), n);
	}
	sqlite3_reset(c->xget);
	return ret;
}

ssize_t arch_getxattr(struct arch *a, uint64_t ino, const char *name, void *buf, size_t size)
{
	struct conn *c = conn_get(a);
	ssize_t r;

	if (!c)
		return -EIO;
	r = getxattr_c(a, c, ino, name, buf, size);
	conn_put(a, c);
	return r;
}

static int versions_c(struct arch *a, struct conn *c, uint64_t dir, const char *name, size_t len,
		      tree_version_fn fn, void *opaque)
{
	int r, n = 0, err = 0;

	sqlite3_bind_int64(c->versions, 1, (sqlite3_int64)dir);
	sqlite3_bind_blob(c->versions, 2, len ? name : "", (int)len, SQLITE_STATIC);
	while ((r = step_row(c->versions)) > 0) {
		struct arch_attr at;
		row_attr(c->versions, &at);
		n++;
		err = fn(opaque, &at);
		if (err)
			break;
	}
	sqlite3_reset(c->versions);
	if (r < 0)
		return r;
	return err ? err : (n ? 0 : -ENOENT);
}

int arch_versions(struct arch *a, uint64_t dir, const char *name, size_t len, tree_version_fn fn,
		  void *opaque)
{
	struct conn *c = conn_get(a);
	int r;

	if (!c)
		return -EIO;
	r = versions_c(a, c, dir, name, len, fn, opaque);
	conn_put(a, c);
	return r;
}

static int describe_c(struct arch *a, struct conn *c, uint64_t ino, char *buf, size_t size)
{
	int r, n;

	n = snprintf(buf, size, "kind=archive\nsource=%s\ncodec=%s\nindex=%s\n", a->path,
		     a->codec_name, a->index_shown);
	if (n < 0 || (size_t)n >= size)
		return -ERANGE;
	sqlite3_bind_int64(c->describe, 1, (sqlite3_int64)ino);
	r = step_row(c->describe);
	if (r > 0 && ino != IDX_ROOT)
		snprintf(buf + n, size - (size_t)n,
			 "version=%lld\nversions=%lld\ndata_offset=%lld\nheader_offset=%lld\n"
			 "size=%lld\nstored=%lld\nsparse=%d\n",
			 sqlite3_column_int64(c->describe, 0), sqlite3_column_int64(c->describe, 1),
			 sqlite3_column_int64(c->describe, 2), sqlite3_column_int64(c->describe, 3),
			 sqlite3_column_int64(c->describe, 4), sqlite3_column_int64(c->describe, 5),
			 (sqlite3_column_int64(c->describe, 6) & IDX_F_SPARSE) != 0);
	sqlite3_reset(c->describe);
	return r < 0 ? r : (r == 0 ? -ENOENT : 0);
}

int arch_describe(struct arch *a, uint64_t ino, char *buf, size_t size)
{
	struct conn *c = conn_get(a);
	int r;

	if (!c)
		return -EIO;
	r = describe_c(a, c, ino, buf, size);
	conn_put(a, c);
	return r;
}

static int file_open_c(struct arch *a, struct conn *c, uint64_t ino, struct arch_file **out)
{
	struct arch_file *f = NULL;
	int r, err = 0;

	*out = NULL;
	sqlite3_bind_int64(c->file, 1, (sqlite3_int64)ino);
	r = step_row(c->file);
	if (r <= 0) {
		sqlite3_reset(c->file);
		return r < 0 ? r : -ENOENT;
	}
	uint32_t mode = (uint32_t)sqlite3_column_int64(c->file, 0);
	uint64_t flags = (uint64_t)sqlite3_column_int64(c->file, 4);
	if (!S_ISREG(mode)) {
		sqlite3_reset(c->file);
		return S_ISDIR(mode) ? -EISDIR : -EINVAL;
	}
	f = calloc(1, sizeof(*f));
	if (!f) {
		sqlite3_reset(c->file);
		return -ENOMEM;
	}
	f->a = a;
	f->data_off = (uint64_t)sqlite3_column_int64(c->file, 1);
	f->size = (uint64_t)sqlite3_column_int64(c->file, 2);
	f->stored = (uint64_t)sqlite3_column_int64(c->file, 3);
	sqlite3_reset(c->file);
	if (flags & IDX_F_SPARSE) {
		size_t n = 0, cap = 0;
		uint64_t end = 0;
		bool bad = false;
		sqlite3_bind_int64(c->sparse, 1, (sqlite3_int64)ino);
		while ((r = step_row(c->sparse)) > 0) {
			if (n + 1 >= cap) {
				cap = cap ? cap * 2 : 8;
				void *p = realloc(f->ext, cap * sizeof(*f->ext));
				if (!p) {
					r = -ENOMEM;
					break;
				}
				f->ext = p;
			}
			f->ext[n].off = (uint64_t)sqlite3_column_int64(c->sparse, 0);
			f->ext[n].len = (uint64_t)sqlite3_column_int64(c->sparse, 1);
			f->ext[n].phys = (uint64_t)sqlite3_column_int64(c->sparse, 2);
			/* what the builder wrote: in order, inside the size and the stored data */
			bad |= f->ext[n].off < end || f->ext[n].off > f->size ||
			       f->ext[n].len > f->size - f->ext[n].off ||
			       f->ext[n].phys > f->stored ||
			       f->ext[n].len > f->stored - f->ext[n].phys;
			end = f->ext[n].off + f->ext[n].len;
			n++;
			if (bad)
				break;
		}
		sqlite3_reset(c->sparse);
		if (r < 0 || bad) {
			err = r < 0 ? r : -EIO;
			if (r >= 0)
				tfs_log(TFS_LOG_ERR, "inode %llu: sparse map does not fit its data",
					(unsigned long long)ino);
			arch_file_close(f);
			return err;
		}
		if (!f->ext) { /* sparse with no data at all: all holes */
			f->ext = calloc(1, sizeof(*f->ext));
			if (!f->ext) {
				arch_file_close(f);
				return -ENOMEM;
			}
		} else {
			f->ext[n].off = UINT64_MAX; /* sentinel */
		}
		f->next = n;
	}
	*out = f;
	return 0;
}

int arch_file_open(struct arch *a, uint64_t ino, struct arch_file **out)
{
	struct conn *c = conn_get(a);
	int r;

	if (!c)
		return -EIO;
	r = file_open_c(a, c, ino, out);
	conn_put(a, c);
	return r;
}

uint64_t arch_file_size(const struct arch_file *f)
{
	return f->size;
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
	if (a->reader)
		n = creader_read(a->reader, buf, len, f->data_off + rel);
	else
		n = src_pread(a->file, buf, len, f->data_off + rel);
	if (n >= 0 && (size_t)n < len) {
		tfs_log(TFS_LOG_ERR, "%s: archive ends before the member's data at offset %llu "
			"(truncated or changed since it was indexed)", a->path,
			(unsigned long long)(f->data_off + rel + (uint64_t)n));
		return -EIO;
	}
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
		return read_stored(f, buf, len, off);
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
		if (r < 0)
			return r; /* all or nothing: a short read would look like the end */
		done += (size_t)n;
	}
	return (ssize_t)done;
}

size_t arch_file_direct(struct arch_file *f, uint64_t off, size_t len, int *fd, uint64_t *fd_off)
{
	struct stat st;

	if (f->a->reader || f->ext || f->a->fd < 0 || off >= f->size)
		return 0;
	if (len > f->size - off)
		len = (size_t)(f->size - off);
	/* a zero-copy reply cannot report a short read as an error (the kernel would take it
	 * for the end of the file): only while the archive still holds the whole range */
	if (fstat(f->a->fd, &st) < 0 || (uint64_t)st.st_size < f->data_off + off + len)
		return 0;
	*fd = f->a->fd;
	*fd_off = f->data_off + off;
	return len;
}

void arch_file_close(struct arch_file *f)
{
	if (!f)
		return;
	free(f->ext);
	free(f);
}

static int load_aux_c(struct arch *a, struct conn *c, size_t idx, void **aux, size_t *len)
{
	int r;

	*aux = NULL;
	*len = 0;
	sqlite3_bind_int64(c->aux, 1, (sqlite3_int64)idx);
	r = step_row(c->aux);
	if (r > 0 && sqlite3_column_type(c->aux, 0) == SQLITE_BLOB) {
		size_t n = (size_t)sqlite3_column_bytes(c->aux, 0);
		*aux = malloc(n ? n : 1);
		if (*aux) {
			memcpy(*aux, sqlite3_column_blob(c->aux, 0), n);
			*len = n;
		} else {
			r = -ENOMEM;
		}
	}
	sqlite3_reset(c->aux);
	return r < 0 ? r : 0;
}

static int load_aux(void *opaque, size_t idx, void **aux, size_t *len)
{
	struct arch *a = opaque;
	struct conn *c = conn_get(a);
	int r;

	if (!c)
		return -EIO;
	r = load_aux_c(a, c, idx, aux, len);
	conn_put(a, c);
	return r;
}

/* Loads the checkpoints and makes the reader of a compressed archive. */
static int open_reader(struct arch *a, sqlite3 *db, struct cache *cache)
{
	const struct codec *codec = codec_by_name(a->codec_name);
	sqlite3_stmt *st = NULL;
	struct codec_ckpt *ck = NULL;
	uint32_t *crcs = NULL;
	size_t n = 0, cap = 0, ncrc = 0, crc_cap = 0;
	int r, err;

	if (!codec) {
		tfs_log(TFS_LOG_ERR, "%s: made with codec '%s', which this build lacks", a->path,
			a->codec_name);
		return -ENOTSUP;
	}
	if (!cache) {
		tfs_log(TFS_LOG_ERR, "internal error: no chunk cache for a compressed archive");
		return -EINVAL;
	}
	static const uint32_t no_segments[1];
	uint64_t v = 1;
	db_meta_get_u64(db, "segment_crcs", &v);
	bool with_crcs = v != 0;
	if (!with_crcs && !codec->index_blocks) { /* only codecs that check every block */
		tfs_log(TFS_LOG_ERR, "%s: index damaged (no segment CRCs for %s)", a->index_shown, codec->name);
		return -EIO;
	}
	err = db_prepare(db, "SELECT uoff, ulen, coff, clen, extra, bits, flags, crcs FROM checkpoints"
			 " ORDER BY idx", &st);
	if (err)
		return err;
	while ((r = step_row(st)) > 0) {
		if (n == cap) {
			cap = cap ? cap * 2 : 64;
			void *p = realloc(ck, cap * sizeof(*ck));
			if (!p) {
				err = -ENOMEM;
				goto out;
			}
			ck = p;
		}
		ck[n].uoff = (uint64_t)sqlite3_column_int64(st, 0);
		ck[n].ulen = (uint64_t)sqlite3_column_int64(st, 1);
		ck[n].coff = (uint64_t)sqlite3_column_int64(st, 2);
		ck[n].clen = (uint64_t)sqlite3_column_int64(st, 3);
		ck[n].extra = (uint64_t)sqlite3_column_int64(st, 4);
		ck[n].bits = (uint32_t)sqlite3_column_int64(st, 5);
		ck[n].flags = (uint32_t)sqlite3_column_int64(st, 6);
		size_t nb = (size_t)sqlite3_column_bytes(st, 7);
		const uint8_t *p = sqlite3_column_blob(st, 7);
		if (!with_crcs) {
			n++;
			continue;
		}
		if (nb / 4 != seg_count(ck[n].ulen) || nb % 4) {
			tfs_log(TFS_LOG_ERR, "%s: index damaged (checkpoint %zu)", a->index_shown, n);
			err = -EIO;
			goto out;
		}
		if (ncrc + nb / 4 > crc_cap) {
			crc_cap = (ncrc + nb / 4) * 2 + 64;
			void *q = realloc(crcs, crc_cap * sizeof(*crcs));
			if (!q) {
				err = -ENOMEM;
				goto out;
			}
			crcs = q;
		}
		for (size_t i = 0; i < nb / 4; i++)
			crcs[ncrc++] = le32(p + 4 * i);
		n++;
	}
	if (r < 0) {
		err = r;
		goto out;
	}
	if (n == 0 && a->info.usize == 0)
		goto out; /* an empty stream: nothing to read */
	struct creader_params p = {
		.codec = codec, .in = a->file, .ckpts = ck, .nckpts = n,
		.crcs = with_crcs ? (crcs ? crcs : no_segments) : NULL,
		.usize = a->info.usize, .load_aux = load_aux, .aux_opaque = a, .cache = cache,
	};
	err = creader_new(&p, &a->reader);
	if (err)
		tfs_log(TFS_LOG_ERR, "%s: index damaged (inconsistent checkpoints)", a->index_shown);
out:
	sqlite3_finalize(st);
	free(ck);
	free(crcs);
	return err;
}

static struct arch *arch_alloc(void)
{
	struct arch *a = calloc(1, sizeof(*a));

	if (!a)
		return NULL;
	a->fd = -1;
	pthread_mutex_init(&a->conns_lock, NULL);
	pthread_mutex_init(&a->nested_lock, NULL);
	return a;
}

/* Reads the index's meta and prepares reads; a->index, a->file, a->path are set. */
static int open_index(struct arch *a, struct cache *cache)
{
	sqlite3 *db = NULL;
	char *s;
	int err = db_open_ro(a->index, &db);

	if (err) {
		tfs_log(TFS_LOG_ERR, "cannot open index %s: %s", a->index_shown, strerror(-err));
		return err;
	}
	a->cache = cache;
	a->codec_name = db_meta_get(db, "codec");
	s = db_meta_get(db, "kind");
	a->info.single_file = s && strcmp(s, "single") == 0;
	free(s);
	uint64_t v = 0;
	db_meta_get_u64(db, "damaged", &v);
	a->info.damaged = v != 0;
	db_meta_get_u64(db, "members", &a->info.members);
	db_meta_get_u64(db, "archive_size", &a->info.archive_size);
	db_meta_get_u64(db, "usize", &a->info.usize);
	{
		sqlite3_stmt *st;
		if (db_prepare(db, "SELECT max(id) FROM entries", &st) == 0) {
			if (sqlite3_step(st) == SQLITE_ROW)
				a->info.entries = (uint64_t)sqlite3_column_int64(st, 0);
			sqlite3_finalize(st);
		}
	}
	if (!a->codec_name) {
		tfs_log(TFS_LOG_ERR, "%s: index damaged (no codec)", a->index_shown);
		err = -EIO;
	} else if (strcmp(a->codec_name, "none") != 0) {
		err = open_reader(a, db, cache);
	}
	sqlite3_close(db);
	a->info.path = a->path;
	a->info.index = a->index_shown;
	a->info.codec = a->codec_name;
	return err;
}

/* Indexes up to this size are copied into memory: no descriptor per connection, and a
 * union of many small archives stays light. */
#define MEMDB_MAX (4u << 20)

int arch_open(const char *archive, const struct arch_opts *o, struct arch **out)
{
	struct arch *a;
	struct stat st;
	int err;

	*out = NULL;
	a = arch_alloc();
	if (!a)
		return -ENOMEM;
	/* the daemon changes its working folder when it detaches: keep absolute paths */
	a->path = realpath(archive, NULL);
	if (!a->path) {
		err = -errno;
		tfs_log(TFS_LOG_ERR, "cannot read archive %s: %s", archive, strerror(errno));
		goto fail;
	}
	err = idx_prepare(a->path, &o->idx, &a->index, &a->info.built, &a->info.build);
	if (err)
		goto fail;
	a->index_shown = realpath(a->index, NULL);
	if (!a->index_shown) {
		err = -errno;
		goto fail;
	}
	free(a->index);
	a->index = NULL;
	err = src_open_file(a->path, &a->file);
	if (err) {
		tfs_log(TFS_LOG_ERR, "cannot open %s: %s", archive, strerror(-err));
		goto fail;
	}
	a->fd = src_fd(a->file);
	if (stat(a->index_shown, &st) == 0 && st.st_size <= MEMDB_MAX) {
		sqlite3 *db = NULL;
		err = db_open_ro(a->index_shown, &db);
		if (!err)
			err = db_to_memdb(db, &a->index, &a->keeper);
		sqlite3_close(db);
		if (err)
			goto fail;
	} else {
		a->index = strdup(a->index_shown);
		if (!a->index) {
			err = -ENOMEM;
			goto fail;
		}
	}
	err = open_index(a, o->cache);
	if (err)
		goto fail;
	if (a->info.damaged && !a->info.built)
		tfs_log(TFS_LOG_WARNING, "%s is damaged: the mount shows only what was readable",
			archive);
	*out = a;
	return 0;
fail:
	arch_close(a);
	return err;
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

int arch_open_index(const char *index, struct src *data, const char *name, struct cache *cache,
		    struct arch **out)
{
	struct arch *a = arch_alloc();
	int err;

	*out = NULL;
	if (!a) {
		src_free(data);
		return -ENOMEM;
	}
	a->file = data;
	a->path = strdup(name);
	a->index = strdup(index);
	a->index_shown = strdup(index);
	if (!a->path || !a->index || !a->index_shown) {
		arch_close(a);
		return -ENOMEM;
	}
	err = open_index(a, cache);
	if (err) {
		arch_close(a);
		return err;
	}
	*out = a;
	return 0;
}

/* Opens the archive stored as member ino (mounted with -r): its index is an image in the
 * nested table, its data read through this archive. */
static int open_nested(struct arch *a, struct conn *c, uint64_t ino, struct arch **out)
{
	struct src *data;
	char *name = NULL, *mem = NULL;
	sqlite3 *keeper = NULL;
	int r, err;

	*out = NULL;
	sqlite3_bind_int64(c->nested, 1, (sqlite3_int64)ino);
	r = step_row(c->nested);
	if (r <= 0) {
		sqlite3_reset(c->nested);
		return r < 0 ? r : -ENOENT;
	}
	err = db_image_to_memdb(sqlite3_column_blob(c->nested, 0),
				(size_t)sqlite3_column_bytes(c->nested, 0), &mem, &keeper);
	sqlite3_reset(c->nested);
	if (err) {
		tfs_log(TFS_LOG_ERR, "%s: the index of nested archive %llu is damaged", a->index_shown,
			(unsigned long long)ino);
		return err;
	}
	err = arch_file_src(a, ino, &data);
	if (err)
		goto out;
	if (asprintf(&name, "%s#%llu", a->path, (unsigned long long)ino) < 0) {
		name = NULL;
		src_free(data);
		err = -ENOMEM;
		goto out;
	}
	err = arch_open_index(mem, data, name, a->cache, out);
	if (!err) {
		(*out)->keeper = keeper;
		keeper = NULL;
	}
out:
	sqlite3_close(keeper);
	free(mem);
	free(name);
	return err;
}

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

int arch_nested(struct arch *a, uint64_t ino, struct arch **out)
{
	struct conn *c = conn_get(a);
	int err;

	if (!c)
		return -EIO;
	err = open_nested(a, c, ino, out);
	conn_put(a, c);
	return err;
}

const struct arch_info *arch_get_info(const struct arch *a)
{
	return &a->info;
}

void arch_get_reader_stats(struct arch *a, struct creader_stats *out)
{
	memset(out, 0, sizeof(*out));
	if (a->reader)
		creader_get_stats(a->reader, out);
}

void arch_close(struct arch *a)
{
	if (!a)
		return;
	creader_free(a->reader);
	while (a->free_conns) {
		struct conn *c = a->free_conns;
		a->free_conns = c->next;
		conn_free(c);
	}
	pthread_mutex_destroy(&a->conns_lock);
	src_free(a->file);
	sqlite3_close(a->keeper);
	pthread_mutex_destroy(&a->nested_lock);
	free(a->path);
	free(a->index);
	free(a->index_shown);
	free(a->codec_name);
	free(a);
}

/* The tree interface (tree.h) over an archive. */
static int t_lookup(void *t, uint64_t dir, const char *name, size_t len, struct arch_attr *out)
{
	return arch_lookup(t, dir, name, len, out);
}

static int t_getattr(void *t, uint64_t ino, struct arch_attr *out)
{
	return arch_getattr(t, ino, out);
}

static int t_readdir(void *t, uint64_t dir, uint64_t after, arch_dirent_fn fn, void *opaque)
{
	return arch_readdir(t, dir, after, fn, opaque);
}

static int t_readlink(void *t, uint64_t ino, char *buf, size_t size, size_t *len)
{
	return arch_readlink(t, ino, buf, size, len);
}

static ssize_t t_listxattr(void *t, uint64_t ino, char *buf, size_t size)
{
	return arch_listxattr(t, ino, buf, size);
}

static ssize_t t_getxattr(void *t, uint64_t ino, const char *name, void *buf, size_t size)
{
	return arch_getxattr(t, ino, name, buf, size);
}

static int t_versions(void *t, uint64_t dir, const char *name, size_t len, tree_version_fn fn,
		      void *opaque)
{
	return arch_versions(t, dir, name, len, fn, opaque);
}

static int t_describe(void *t, uint64_t ino, char *buf, size_t size)
{
	return arch_describe(t, ino, buf, size);
}

static int t_open(void *t, uint64_t ino, void **fh)
{
	return arch_file_open(t, ino, (struct arch_file **)fh);
}

static ssize_t t_read(void *fh, void *buf, size_t len, uint64_t off)
{
	return arch_file_read(fh, buf, len, off);
}

static size_t t_direct(void *fh, uint64_t off, size_t len, int *fd, uint64_t *fd_off)
{
	return arch_file_direct(fh, off, len, fd, fd_off);
}

static void t_close(void *fh)
{
	arch_file_close(fh);
}

static void t_totals(void *t, uint64_t *entries, uint64_t *bytes)
{
	const struct arch_info *i = arch_get_info(t);

	*entries = i->entries;
	*bytes = i->usize;
}

static void t_free(void *t)
{
	arch_close(t);
}

const struct tree_ops tree_archive_ops = {
	.kind = "archive",
	.root = IDX_ROOT,
	.lookup = t_lookup,
	.getattr = t_getattr,
	.readdir = t_readdir,
	.readlink = t_readlink,
	.listxattr = t_listxattr,
	.getxattr = t_getxattr,
	.versions = t_versions,
	.describe = t_describe,
	.open = t_open,
	.read = t_read,
	.direct = t_direct,
	.close = t_close,
	.totals = t_totals,
	.free = t_free,
};
