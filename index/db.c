/* The index file's schema and small helpers around SQLite (see db.h).
 *
 * Queries open the file with immutable=1: an index is built into a temporary file and
 * renamed into place, so a file we opened never changes, and SQLite can skip its locks.
 * Builds use journal_mode=OFF and synchronous=OFF: an interrupted build leaves a temporary
 * file without the 'complete' marker, which is never used.
 */
#include "index/db.h"

#include <errno.h>
#include <fcntl.h>
#include <unistd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/byteio.h"
#include "common/crc32.h"
#include "common/log.h"
#include "common/memvfs.h"

int db_errno(int rc)
{
	switch (rc & 0xff) {
	case SQLITE_OK:
	case SQLITE_DONE:
	case SQLITE_ROW:
		return 0;
	case SQLITE_NOMEM:
		return -ENOMEM;
	case SQLITE_FULL:
		return -ENOSPC;
	case SQLITE_PERM:
	case SQLITE_READONLY:
	case SQLITE_AUTH:
		return -EACCES;
	case SQLITE_CANTOPEN:
		return -ENOENT;
	default:
		return -EIO;
	}
}

int db_exec(sqlite3 *db, const char *sql)
{
	char *msg = NULL;
	int rc = sqlite3_exec(db, sql, NULL, NULL, &msg);

	if (rc != SQLITE_OK) {
		tfs_log(TFS_LOG_ERR, "index: %s (in: %.60s)", msg ? msg : sqlite3_errstr(rc), sql);
		sqlite3_free(msg);
		return db_errno(rc) ? db_errno(rc) : -EIO;
	}
	return 0;
}

int db_prepare(sqlite3 *db, const char *sql, sqlite3_stmt **out)
{
	int rc = sqlite3_prepare_v3(db, sql, -1, SQLITE_PREPARE_PERSISTENT, out, NULL);

	if (rc != SQLITE_OK) {
		tfs_log(TFS_LOG_ERR, "index: %s (in: %.60s)", sqlite3_errmsg(db), sql);
		*out = NULL;
		return db_errno(rc) ? db_errno(rc) : -EIO;
	}
	return 0;
}

int db_create_schema(sqlite3 *db)
{
	return db_exec(
	    db, "CREATE TABLE meta (key TEXT PRIMARY KEY, value) WITHOUT ROWID;"
		"CREATE TABLE entries ("
		" id INTEGER PRIMARY KEY, parent INTEGER NOT NULL, name BLOB NOT NULL,"
		" version INTEGER NOT NULL, latest INTEGER NOT NULL, mode INTEGER NOT NULL,"
		" target INTEGER, size INTEGER NOT NULL, stored INTEGER NOT NULL, data_off INTEGER "
		"NOT NULL,"
		" hdr_off INTEGER NOT NULL, uid INTEGER NOT NULL, gid INTEGER NOT NULL,"
		" mtime INTEGER NOT NULL, mtime_nsec INTEGER NOT NULL, rdev INTEGER NOT NULL, "
		"nlink INTEGER NOT NULL,"
		" link BLOB, uname TEXT, gname TEXT, flags INTEGER NOT NULL, stream INTEGER,"
		" crc32 INTEGER, unreadable INTEGER, why TEXT);"
		"CREATE TABLE streams (id INTEGER PRIMARY KEY, codec TEXT NOT NULL,"
		" coff INTEGER NOT NULL, clen INTEGER NOT NULL, usize INTEGER NOT NULL,"
		" crcs INTEGER NOT NULL, flags INTEGER NOT NULL, params BLOB);"
		"CREATE TABLE sparse (id INTEGER NOT NULL, seq INTEGER NOT NULL,"
		" off INTEGER NOT NULL, len INTEGER NOT NULL, src INTEGER NOT NULL,"
		" PRIMARY KEY (id, seq)) WITHOUT ROWID;"
		"CREATE TABLE xattrs (id INTEGER NOT NULL, name BLOB NOT NULL, value BLOB NOT NULL,"
		" PRIMARY KEY (id, name)) WITHOUT ROWID;"
		"CREATE TABLE nested (id INTEGER PRIMARY KEY, image BLOB NOT NULL);"
		"CREATE TABLE checkpoints (id INTEGER PRIMARY KEY, stream INTEGER NOT NULL,"
		" idx INTEGER NOT NULL, uoff INTEGER NOT NULL,"
		" ulen INTEGER NOT NULL, coff INTEGER NOT NULL, clen INTEGER NOT NULL,"
		" extra INTEGER NOT NULL, bits INTEGER NOT NULL, flags INTEGER NOT NULL,"
		" crcs BLOB, aux BLOB, UNIQUE (stream, idx));");
}

/* file: URI for path, with the characters URIs reserve escaped. */
static char *uri_for(const char *path, const char *params)
{
	size_t n = strlen(path);
	char *u = malloc(n * 3 + strlen(params) + 16), *p;

	if (!u)
		return NULL;
	p = u + sprintf(u, "file:");
	for (const unsigned char *s = (const unsigned char *)path; *s; s++) {
		if (*s == '%' || *s == '?' || *s == '#' || *s < 0x21 || *s >= 0x7f)
			p += sprintf(p, "%%%02X", *s);
		else
			*p++ = (char)*s;
	}
	strcpy(p, params);
	return u;
}

int db_open_ro(const char *path, sqlite3 **out)
{
	char *uri;
	int rc, err;

	bool mem = strncmp(path, MEMVFS_PREFIX, strlen(MEMVFS_PREFIX)) == 0;

	if (mem) {
		uri = memvfs_uri(path);
	} else {
		uri = uri_for(path, "?immutable=1");
	}

	*out = NULL;
	if (!uri)
		return -ENOMEM;
	rc = sqlite3_open_v2(uri, out, SQLITE_OPEN_READONLY | SQLITE_OPEN_URI | SQLITE_OPEN_NOMUTEX,
			     NULL);
	free(uri);
	if (rc != SQLITE_OK) {
		err = db_errno(rc) ? db_errno(rc) : -EIO;
		sqlite3_close(*out);
		*out = NULL;
		return err;
	}
	/* A file without mmap: a page fault on the mapping reads around it as far as the disk's
	 * readahead goes (read_ahead_kb, 8 MiB on this project's test VM), so a lookup in a cold
	 * index of a million members took 17 ms; pread of the 4 KiB pages it needs, 0.8 ms.  Warm,
	 * pread costs a syscall per page that SQLite's own cache (4 MiB per connection) misses:
	 * a first lookup is ~20 % slower than through the mapping, a walk a little faster. */
	if (mem) /* pages by pointer into the image (memvfs.c) */
		sqlite3_exec(*out, "PRAGMA mmap_size=4294967296", NULL, NULL, NULL);
	else
		sqlite3_exec(*out, "PRAGMA mmap_size=0; PRAGMA cache_size=-4096", NULL, NULL, NULL);
	return 0;
}

int db_open_build(const char *path, sqlite3 **out)
{
	int rc = sqlite3_open_v2(path, out,
				 SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX, NULL);

	if (rc != SQLITE_OK) {
		int err = db_errno(rc) ? db_errno(rc) : -EIO;
		tfs_log(TFS_LOG_ERR, "cannot create index %s: %s", path, sqlite3_errstr(rc));
		sqlite3_close(*out);
		*out = NULL;
		return err;
	}
	return db_exec(*out, "PRAGMA journal_mode=OFF; PRAGMA synchronous=OFF;"
			     "PRAGMA locking_mode=EXCLUSIVE; PRAGMA page_size=4096;"
			     "PRAGMA cache_size=-65536; PRAGMA temp_store=MEMORY");
}

int db_meta_set(sqlite3 *db, const char *key, const char *value)
{
	sqlite3_stmt *st;
	int rc = sqlite3_prepare_v2(db, "INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)", -1,
				    &st, NULL);

	if (rc != SQLITE_OK)
		return db_errno(rc);
	sqlite3_bind_text(st, 1, key, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 2, value, -1, SQLITE_STATIC);
	rc = sqlite3_step(st);
	sqlite3_finalize(st);
	return rc == SQLITE_DONE ? 0 : db_errno(rc);
}

int db_meta_set_u64(sqlite3 *db, const char *key, uint64_t value)
{
	char buf[32];

	snprintf(buf, sizeof(buf), "%llu", (unsigned long long)value);
	return db_meta_set(db, key, buf);
}

char *db_meta_get(sqlite3 *db, const char *key)
{
	sqlite3_stmt *st;
	char *out = NULL;

	if (sqlite3_prepare_v2(db, "SELECT value FROM meta WHERE key = ?", -1, &st, NULL) != SQLITE_OK)
		return NULL;
	sqlite3_bind_text(st, 1, key, -1, SQLITE_STATIC);
	if (sqlite3_step(st) == SQLITE_ROW && sqlite3_column_type(st, 0) != SQLITE_NULL) {
		const unsigned char *v = sqlite3_column_text(st, 0);
		if (v)
			out = strdup((const char *)v);
	}
	sqlite3_finalize(st);
	return out;
}

bool db_meta_get_u64(sqlite3 *db, const char *key, uint64_t *out)
{
	char *v = db_meta_get(db, key), *end;
	bool ok = false;

	if (v) {
		errno = 0;
		unsigned long long x = strtoull(v, &end, 10);
		ok = errno == 0 && end != v && *end == '\0';
		if (ok)
			*out = x;
		free(v);
	}
	return ok;
}

/* Opens the keeper connection of img, which then holds it: the caller's reference is given up
 * either way. */
static int mem_keep(struct memvfs_img *img, char **name, sqlite3 **keeper)
{
	int err;

	*name = strdup(memvfs_name(img));
	err = *name ? db_open_ro(*name, keeper) : -ENOMEM;
	memvfs_release(img);
	if (err) {
		free(*name);
		*name = NULL;
	}
	return err;
}

int db_file_to_mem(const char *path, size_t max, char **name, sqlite3 **keeper)
{
	struct memvfs_img *img;
	int err;

	*name = NULL;
	*keeper = NULL;
	err = memvfs_load_file(path, max, &img);
	return err ? err : mem_keep(img, name, keeper);
}

int db_image_to_mem(const void *image, size_t len, char **name, sqlite3 **keeper)
{
	struct memvfs_img *img;
	int err;

	*name = NULL;
	*keeper = NULL;
	err = memvfs_copy(image, len, &img);
	return err ? err : mem_keep(img, name, keeper);
}

/* The seal's CRC (db.h) carried over n bytes at p, which sit at offset off of the index: the
 * 4 bytes of the field at 60 count as zeros. */
static uint32_t seal_crc(uint32_t c, const uint8_t *p, size_t n, uint64_t off)
{
	static const uint8_t zero[4];

	if (off >= 64 || off + n <= 60)
		return tfs_crc32(c, p, n);
	/* the piece holds some of bytes 60..63: before them, zeros for them, after them */
	size_t a = off < 60 ? (size_t)(60 - off) : 0, b = off + n < 64 ? n : (size_t)(64 - off);
	c = tfs_crc32(c, p, a);
	c = tfs_crc32(c, zero, b - a);
	return tfs_crc32(c, p + b, n - b);
}

/* CRC32 of the open file fd as seal_crc counts it; *head gets its first 100 bytes.  Read in
 * 64 KiB pieces: a fresh 1 MiB buffer costs 256 page faults, ~20 us each on the VMs measured
 * here (this runs at every mount, on the whole index). */
static int file_crc(int fd, uint32_t *crc, uint8_t head[100])
{
	enum { PIECE = 64 << 10 };
	uint8_t *buf = malloc(PIECE);
	uint32_t c = 0;
	uint64_t off = 0;
	ssize_t n;

	if (!buf)
		return -ENOMEM;
	while ((n = pread(fd, buf, PIECE, (off_t)off)) > 0) {
		if (off == 0) {
			if (n < 100) {
				free(buf);
				return -EIO;
			}
			memcpy(head, buf, 100);
		}
		c = seal_crc(c, buf, (size_t)n, off);
		off += (uint64_t)n;
	}
	free(buf);
	if (n < 0)
		return -errno;
	*crc = c;
	return 0;
}

int db_seal(const char *path)
{
	int fd = open(path, O_RDWR | O_CLOEXEC), err;
	uint8_t head[100], field[4];
	uint32_t crc;

	if (fd < 0)
		return -errno;
	put_be32(field, IDX_APP_ID);
	err = pwrite(fd, field, 4, 68) == 4 ? 0 : -EIO; /* before the CRC: it covers this */
	err = err ? err : file_crc(fd, &crc, head);
	if (!err) {
		put_be32(field, crc);
		err = pwrite(fd, field, 4, 60) == 4 ? 0 : -EIO;
	}
	close(fd);
	return err;
}

/* Whether head (an index's first 100 bytes) holds the seal crc. */
static int seal_matches(const uint8_t head[100], uint32_t crc)
{
	return be32(head + 68) == IDX_APP_ID && be32(head + 60) == crc ? 0 : -ESTALE;
}

int db_check_seal(const char *path)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC), err;
	uint8_t head[100];
	uint32_t crc;

	if (fd < 0)
		return -errno;
	err = file_crc(fd, &crc, head);
	close(fd);
	return err ? err : seal_matches(head, crc);
}

int db_check_seal_mem(const char *name)
{
	const void *data;
	size_t len;
	int err = memvfs_bytes(name, &data, &len);

	if (err)
		return err;
	if (len < 100)
		return -EIO;
	return seal_matches(data, seal_crc(0, data, len, 0));
}

int db_insert_stream(sqlite3 *db, sqlite3_stmt **stp, const struct db_stream *s)
{
	int rc, err = 0;

	if (!*stp)
		err = db_prepare(db, "INSERT INTO streams VALUES (?, ?, ?, ?, ?, ?, ?, ?)", stp);
	if (err)
		return err;
	sqlite3_stmt *st = *stp;
	sqlite3_bind_int64(st, 1, (sqlite3_int64)s->id);
	sqlite3_bind_text(st, 2, s->codec, -1, SQLITE_STATIC);
	sqlite3_bind_int64(st, 3, (sqlite3_int64)s->coff);
	sqlite3_bind_int64(st, 4, (sqlite3_int64)s->clen);
	sqlite3_bind_int64(st, 5, (sqlite3_int64)s->usize);
	sqlite3_bind_int64(st, 6, s->crcs);
	sqlite3_bind_int64(st, 7, s->flags);
	if (s->params)
		sqlite3_bind_blob(st, 8, s->params, (int)s->params_len, SQLITE_STATIC);
	rc = sqlite3_step(st);
	sqlite3_reset(st);
	sqlite3_clear_bindings(st);
	return rc == SQLITE_DONE ? 0 : db_errno(rc) ? db_errno(rc) : -EIO;
}
