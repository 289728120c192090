/* The queries of an opened archive (see archive.h): the tree (lookup, getattr, readdir,
 * readlink, xattrs, versions, describe), over a pool of read-only SQLite connections with
 * their prepared statements.
 *
 * Connections: a call takes one from the free list (or opens a new one) and gives it back
 * when done, so there are as many connections as calls ever ran at once -- FUSE worker
 * threads come and go, connections stay.  Locks: see archive_int.h.
 */
#include "index/archive_int.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/stat.h>

#include "common/log.h"
#include "index/db.h"

/* The columns of an entry as the tree shows it: a hard link shows its target's. */
#define ENTRY_COLS                                                                                 \
	"coalesce(t.id, e.id), coalesce(t.mode, e.mode), coalesce(t.nlink, e.nlink),"              \
	" coalesce(t.uid, e.uid), coalesce(t.gid, e.gid), coalesce(t.size, e.size),"               \
	" coalesce(t.rdev, e.rdev), coalesce(t.mtime, e.mtime),"                                   \
	" coalesce(t.mtime_nsec, e.mtime_nsec), coalesce(t.stored, e.stored),"                     \
	" coalesce(t.flags, e.flags)"
#define ENTRY_NCOLS 11

static const struct {
	size_t off; /* of the statement in struct conn */
	const char *sql;
} statements[] = {
	{offsetof(struct conn, lookup),
	 "SELECT " ENTRY_COLS " FROM entries e LEFT JOIN entries t ON t.id = e.target"
	 " WHERE e.parent = ?1 AND e.name = ?2 AND e.latest = 1"},
	{offsetof(struct conn, getattr),
	 "SELECT id, mode, nlink, uid, gid, size, rdev, mtime, mtime_nsec, stored, flags"
	 " FROM entries WHERE id = ?1"},
	{offsetof(struct conn, readdir),
	 "SELECT " ENTRY_COLS ", e.name, e.id FROM entries e LEFT JOIN entries t ON t.id = e.target"
	 " WHERE e.parent = ?1 AND e.latest = 1 AND e.name > ?2 ORDER BY e.name"},
	{offsetof(struct conn, name_of), "SELECT name FROM entries WHERE id = ?1"},
	{offsetof(struct conn, readlink), "SELECT mode, link FROM entries WHERE id = ?1"},
	{offsetof(struct conn, sparse), "SELECT off, len, src FROM sparse WHERE id = ?1 ORDER BY seq"},
	{offsetof(struct conn, xlist), "SELECT name FROM xattrs WHERE id = ?1 ORDER BY name"},
	{offsetof(struct conn, xget), "SELECT value FROM xattrs WHERE id = ?1 AND name = ?2"},
	{offsetof(struct conn, aux), "SELECT aux FROM checkpoints WHERE stream = ?1 AND idx = ?2"},
	{offsetof(struct conn, file),
	 "SELECT mode, data_off, size, stored, flags, stream, unreadable, why, name"
	 " FROM entries WHERE id = ?1"},
	{offsetof(struct conn, versions),
	 "SELECT " ENTRY_COLS " FROM entries e LEFT JOIN entries t ON t.id = e.target"
	 " WHERE e.parent = ?1 AND e.name = ?2 ORDER BY e.version"},
	{offsetof(struct conn, describe),
	 "SELECT e.version, (SELECT max(version) FROM entries v WHERE v.parent = e.parent"
	 " AND v.name = e.name), e.data_off, e.hdr_off, e.size, e.stored, e.flags, e.stream,"
	 " s.codec FROM entries e LEFT JOIN streams s ON s.id = e.stream WHERE e.id = ?1"},
	{offsetof(struct conn, nested), "SELECT image FROM nested WHERE id = ?1"},
	{offsetof(struct conn, stream), "SELECT codec, coff, clen, usize, crcs, flags, params"
					" FROM streams WHERE id = ?1"},
	{offsetof(struct conn, ranges),
	 "SELECT data_off, size, crc32 FROM entries WHERE stream = ?1 AND crc32 IS NOT NULL"
	 " AND size > 0 ORDER BY data_off"},
	{offsetof(struct conn, ckpts),
	 "SELECT uoff, ulen, coff, clen, extra, bits, flags, crcs FROM checkpoints"
	 " WHERE stream = ?1 ORDER BY idx"},
};

static sqlite3_stmt **stmt_at(struct conn *c, size_t off)
{
	return (sqlite3_stmt **)((char *)c + off);
}

void arch_conn_free(struct conn *c)
{
	if (!c)
		return;
	for (size_t i = 0; i < sizeof(statements) / sizeof(statements[0]); i++)
		sqlite3_finalize(*stmt_at(c, statements[i].off));
	sqlite3_close(c->db);
	free(c);
}

void arch_conn_put(struct arch *a, struct conn *c)
{
	pthread_mutex_lock(&a->conns_lock);
	c->next = a->free_conns;
	a->free_conns = c;
	pthread_mutex_unlock(&a->conns_lock);
}

int arch_conn_get(struct arch *a, struct conn **out)
{
	struct conn *c;
	int err;

	pthread_mutex_lock(&a->conns_lock);
	c = a->free_conns;
	if (c)
		a->free_conns = c->next;
	pthread_mutex_unlock(&a->conns_lock);
	if (c) {
		*out = c;
		return 0;
	}
	*out = NULL;
	c = calloc(1, sizeof(*c));
	if (!c)
		return -ENOMEM;
	err = db_open_ro(a->index, &c->db);
	if (err)
		tfs_log(TFS_LOG_ERR, "cannot open index %s: %s", a->index_shown, strerror(-err));
	for (size_t i = 0; !err && i < sizeof(statements) / sizeof(statements[0]); i++)
		err = db_prepare(c->db, statements[i].sql, stmt_at(c, statements[i].off));
	if (err) {
		arch_conn_free(c);
		return err == -ENOMEM ? err : -EIO;
	}
	*out = c;
	return 0;
}

int arch_step(sqlite3_stmt *st)
{
	int rc = sqlite3_step(st);

	if (rc == SQLITE_ROW)
		return 1;
	if (rc == SQLITE_DONE)
		return 0;
	tfs_log(TFS_LOG_ERR, "index query failed: %s", sqlite3_errstr(rc));
	return rc == SQLITE_NOMEM ? -ENOMEM : -EIO;
}

/* An entry's attributes from the ENTRY_COLS of a row. */
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
	if (flags & IDX_F_DOSTIME) { /* a zip DOS time has no zone: it is local time, here */
		time_t t = (time_t)out->mtime;
		struct tm tm;
		if (gmtime_r(&t, &tm)) {
			tm.tm_isdst = -1;
			time_t local = mktime(&tm);
			if (local != (time_t)-1)
				out->mtime = local;
		}
	}
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

/* One entry by a statement bound to ?1 (and ?2 name): 0, -ENOENT, -errno. */
static int one_entry(sqlite3_stmt *st, struct arch_attr *out)
{
	int r = arch_step(st);

	if (r > 0)
		row_attr(st, out);
	sqlite3_reset(st);
	return r > 0 ? 0 : (r == 0 ? -ENOENT : r);
}

int arch_lookup(struct arch *a, uint64_t parent, const char *name, size_t len,
		struct arch_attr *out)
{
	struct conn *c;
	int r = arch_conn_get(a, &c);

	if (r)
		return r;
	sqlite3_bind_int64(c->lookup, 1, (sqlite3_int64)parent);
	sqlite3_bind_blob(c->lookup, 2, len ? name : "", (int)len, SQLITE_STATIC);
	r = one_entry(c->lookup, out);
	if (r == -ENOENT) { /* nothing there: or not a folder to look in at all */
		struct arch_attr p;
		sqlite3_bind_int64(c->getattr, 1, (sqlite3_int64)parent);
		if (one_entry(c->getattr, &p) == 0 && !S_ISDIR(p.mode))
			r = -ENOTDIR;
	}
	arch_conn_put(a, c);
	return r;
}

int arch_getattr(struct arch *a, uint64_t ino, struct arch_attr *out)
{
	struct conn *c;
	int r = arch_conn_get(a, &c);

	if (r)
		return r;
	sqlite3_bind_int64(c->getattr, 1, (sqlite3_int64)ino);
	r = one_entry(c->getattr, out);
	arch_conn_put(a, c);
	return r;
}

static int readdir_c(struct conn *c, uint64_t dir, uint64_t after, arch_dirent_fn fn,
		     void *opaque)
{
	void *start = NULL;
	int start_len = 0, r;

	if (after) {
		sqlite3_bind_int64(c->name_of, 1, (sqlite3_int64)after);
		r = arch_step(c->name_of);
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
	while ((r = arch_step(c->readdir)) > 0) {
		struct arch_attr at;
		row_attr(c->readdir, &at);
		const char *name = sqlite3_column_blob(c->readdir, ENTRY_NCOLS);
		size_t len = (size_t)sqlite3_column_bytes(c->readdir, ENTRY_NCOLS);
		uint64_t cookie = (uint64_t)sqlite3_column_int64(c->readdir, ENTRY_NCOLS + 1);
		int stop = fn(opaque, name ? name : "", len, &at, cookie);
		if (stop) {
			r = stop < 0 ? stop : 0; /* an error of fn's, or a full buffer */
			break;
		}
	}
	sqlite3_reset(c->readdir);
	free(start);
	return r < 0 ? r : 0;
}

int arch_readdir(struct arch *a, uint64_t dir, uint64_t after, arch_dirent_fn fn, void *opaque)
{
	struct conn *c;
	int r = arch_conn_get(a, &c);

	if (r)
		return r;
	r = readdir_c(c, dir, after, fn, opaque);
	arch_conn_put(a, c);
	return r;
}

int arch_link_stored(struct arch *a, uint64_t ino, char *buf, size_t size, size_t *len)
{
	struct conn *c;
	int r = arch_conn_get(a, &c), err = 0;
	bool in_data = false;

	if (r)
		return r;
	sqlite3_bind_int64(c->readlink, 1, (sqlite3_int64)ino);
	r = arch_step(c->readlink);
	if (r <= 0) {
		err = r < 0 ? r : -ENOENT;
	} else if (!S_ISLNK(sqlite3_column_int64(c->readlink, 0))) {
		err = -EINVAL;
	} else if (sqlite3_column_type(c->readlink, 1) == SQLITE_NULL) {
		/* a target that is the entry's data (zip, 7z) and that the index does not hold:
		 * encrypted, or not decoded while indexing (damaged): read now, through the
		 * entry's reader, so that it fails as the entry's reads would (EIO, EACCES) --
		 * never an empty target (issue 38) */
		in_data = true;
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
	arch_conn_put(a, c);
	return in_data ? -ENODATA : err;
}

ssize_t arch_listxattr(struct arch *a, uint64_t ino, char *buf, size_t size)
{
	struct conn *c;
	size_t total = 0;
	int r = arch_conn_get(a, &c);

	if (r)
		return r;
	sqlite3_bind_int64(c->xlist, 1, (sqlite3_int64)ino);
	while ((r = arch_step(c->xlist)) > 0) {
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
	arch_conn_put(a, c);
	return r < 0 ? r : (ssize_t)total;
}

ssize_t arch_getxattr(struct arch *a, uint64_t ino, const char *name, void *buf, size_t size)
{
	struct conn *c;
	ssize_t ret;
	int r = arch_conn_get(a, &c);

	if (r)
		return r;
	sqlite3_bind_int64(c->xget, 1, (sqlite3_int64)ino);
	sqlite3_bind_blob(c->xget, 2, name, (int)strlen(name), SQLITE_STATIC);
	r = arch_step(c->xget);
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
	arch_conn_put(a, c);
	return ret;
}

int arch_versions(struct arch *a, uint64_t dir, const char *name, size_t len, tree_version_fn fn,
		  void *opaque)
{
	struct conn *c;
	int n = 0, err = 0, r = arch_conn_get(a, &c);

	if (r)
		return r;
	sqlite3_bind_int64(c->versions, 1, (sqlite3_int64)dir);
	sqlite3_bind_blob(c->versions, 2, len ? name : "", (int)len, SQLITE_STATIC);
	while ((r = arch_step(c->versions)) > 0) {
		struct arch_attr at;
		row_attr(c->versions, &at);
		n++;
		err = fn(opaque, &at);
		if (err)
			break;
	}
	sqlite3_reset(c->versions);
	arch_conn_put(a, c);
	if (r < 0)
		return r;
	return err ? err : (n ? 0 : -ENOENT);
}

int arch_describe(struct arch *a, uint64_t ino, char *buf, size_t size)
{
	struct conn *c;
	int n, r = arch_conn_get(a, &c);

	if (r)
		return r;
	sqlite3_bind_int64(c->describe, 1, (sqlite3_int64)ino);
	r = arch_step(c->describe);
	/* a member of a container stream says its own codec (a zip entry's "deflate") */
	const char *codec = r > 0 && sqlite3_column_type(c->describe, 8) == SQLITE_TEXT
				? (const char *)sqlite3_column_text(c->describe, 8)
				: a->codec_name;
	/* the shadow its reads use (opened at the first read of a stream it holds) */
	pthread_mutex_lock(&a->streams_lock);
	bool shadow = a->shadow_state == ARCH_SH_OPEN;
	pthread_mutex_unlock(&a->streams_lock);
	n = snprintf(buf, size, "kind=archive\nformat=%s\nsource=%s\ncodec=%s\nindex=%s\n"
		     "shadow=%s\n", a->format ? a->format : "tar", a->path,
		     codec ? codec : "none", a->index_shown, shadow ? "open" : "none");
	if (n < 0 || (size_t)n >= size) {
		sqlite3_reset(c->describe);
		arch_conn_put(a, c);
		return -ERANGE;
	}
	if (r > 0 && ino != IDX_ROOT)
		snprintf(buf + n, size - (size_t)n,
			 "version=%lld\nversions=%lld\ndata_offset=%lld\nheader_offset=%lld\n"
			 "size=%lld\nstored=%lld\nsparse=%d\nstream=%lld\n",
			 sqlite3_column_int64(c->describe, 0), sqlite3_column_int64(c->describe, 1),
			 sqlite3_column_int64(c->describe, 2), sqlite3_column_int64(c->describe, 3),
			 sqlite3_column_int64(c->describe, 4), sqlite3_column_int64(c->describe, 5),
			 (sqlite3_column_int64(c->describe, 6) & IDX_F_SPARSE) != 0,
			 sqlite3_column_int64(c->describe, 7));
	sqlite3_reset(c->describe);
	arch_conn_put(a, c);
	return r < 0 ? r : (r == 0 ? -ENOENT : 0);
}
