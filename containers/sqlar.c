/* SQLite archives (sqlite3 -A, the "sqlar" format): a table sqlar(name TEXT PRIMARY KEY, mode
 * INT, mtime INT, sz INT, data BLOB) in an SQLite database.  Read by SQLite itself through a
 * source (codecs/sqlar/sqlite_src.h), with the schema untrusted: the table must be a table
 * (not a view), no function of the database's schema runs (trusted_schema off, defensive on).
 *
 * Rows become members: mode says the type (a folder's data is NULL; a symbolic link's target
 * is its data, sz -1, as the sqlite3 shell writes it); each file's data is a stream of codec
 * "sqlar" (codecs/sqlar/sqlar_codec.c) of its own, so that a damaged blob fails that file's
 * reads only: one piece (zlib's), or pieces of a MiB (stored).  Every row whose mode says
 * neither folder nor link is a file, as sqlite3 -Ax writes it.  The database keeps no owner: the members take the archive file's.  A row whose data
 * is missing or cannot be its size is listed, its reads failing.
 */
#include "containers/container.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "codecs/pieces.h"
#include "codecs/sqlar/sqlite_src.h"
#include "common/byteio.h"
#include "common/log.h"

#define SQA_REC 32
#define SQA_PIECE ((uint64_t)1 << 20)

static const uint8_t sqa_magic[16] = "SQLite format 3";

/* The database of in, hardened, if it has a table sqlar with the columns the format names. */
static int sqa_open(struct src *in, sqlite3 **out)
{
	sqlite3 *db = NULL;
	sqlite3_stmt *st = NULL;
	int err = sqlsrc_open(in, &db);

	*out = NULL;
	if (err)
		return err;
	sqlite3_db_config(db, SQLITE_DBCONFIG_DEFENSIVE, 1, NULL);
	sqlite3_db_config(db, SQLITE_DBCONFIG_TRUSTED_SCHEMA, 0, NULL);
	sqlite3_db_config(db, SQLITE_DBCONFIG_ENABLE_TRIGGER, 0, NULL);
	sqlite3_db_config(db, SQLITE_DBCONFIG_ENABLE_VIEW, 0, NULL);
	/* no value longer than the file: a blob that says more is damage, not an allocation */
	uint64_t fsize = src_size(in);
	sqlite3_limit(db, SQLITE_LIMIT_LENGTH, fsize < INT32_MAX ? (int)fsize + 1 : INT32_MAX);
	sqlite3_exec(db, "PRAGMA cell_size_check = ON", NULL, NULL, NULL);
	err = -EINVAL;
	if (sqlite3_prepare_v2(db, "SELECT count(*) FROM pragma_table_info('sqlar')"
				   " WHERE name IN ('name', 'mode', 'mtime', 'sz', 'data')"
				   " AND (SELECT type = 'table' AND sql NOT LIKE 'CREATE VIRTUAL%'"
				   " FROM sqlite_schema WHERE name = 'sqlar')",
			       -1, &st, NULL) == SQLITE_OK &&
	    sqlite3_step(st) == SQLITE_ROW && sqlite3_column_int(st, 0) == 5)
		err = 0;
	sqlite3_finalize(st);
	if (err)
		sqlite3_close(db);
	else
		*out = db;
	return err;
}

static bool sqa_probe(struct src *in, const uint8_t *head, size_t len)
{
	sqlite3 *db;

	if (len < 100 || memcmp(head, sqa_magic, 16) != 0)
		return false;
	if (sqa_open(in, &db))
		return false;
	sqlite3_close(db);
	return true;
}

/* One row, kept between the two passes. */
struct sqa_row {
	uint64_t rowid;
	uint64_t sid;	   /* its stream, 0 when none */
	int64_t sz;
	int64_t dlen;	   /* length(data), -1 when NULL */
	bool readable;
};

struct sqa {
	const char *name;
	struct sqa_row *r;
	size_t n, cap;
	uint8_t *params;
	size_t plen, pcap;
	uint64_t usize;
	uint64_t fsize; /* of the archive file */
	uint64_t blobs; /* bytes of the blobs listed as pieces */
};

/* A row is a file unless its mode says folder or link: sqlite3 -Ax writes every other row as
 * a file with the row's data. */
static bool sqa_is_file(uint32_t mode)
{
	return !S_ISDIR(mode) && !S_ISLNK(mode);
}

static int sqa_piece(struct sqa *a, uint64_t size, uint64_t rowid, uint64_t at, uint32_t kind)
{
	uint8_t rec[SQA_REC] = {0};

	put_le64(rec, size);
	put_le64(rec + 8, rowid);
	put_le64(rec + 16, at);
	put_le32(rec + 24, kind);
	a->usize += size;
	return pcs_params_add(&a->params, &a->plen, &a->pcap, rec, sizeof(rec));
}

/* Row r's data as a stream of its own: damage in one blob fails that file's reads only. */
static int sqa_stream(struct sqa *a, struct sqa_row *r, const struct cont_sink *sink)
{
	int err = pcs_params_start(&a->params, &a->plen, &a->pcap, NULL, 0);

	a->usize = 0;
	if (!err && r->dlen == r->sz) { /* stored: pieces of a MiB */
		for (uint64_t at = 0; !err && at < (uint64_t)r->sz; at += SQA_PIECE) {
			uint64_t left = (uint64_t)r->sz - at;
			err = sqa_piece(a, left < SQA_PIECE ? left : SQA_PIECE, r->rowid, at, 0);
		}
	} else if (!err) {
		err = sqa_piece(a, (uint64_t)r->sz, r->rowid, 0, 1);
	}
	if (!err) {
		struct cont_stream cs = {.codec = "sqlar", .coff = 0, .clen = a->fsize,
					 .usize = a->usize, .params = a->params,
					 .params_len = a->plen};
		err = sink->stream(sink->opaque, &cs, &r->sid);
	}
	r->readable = !err;
	return err;
}

/* Pass 1: the rows, and a stream for each file's data. */
static int sqa_pass1(struct sqa *a, sqlite3 *db, const struct cont_sink *sink)
{
	sqlite3_stmt *st = NULL;
	int rc, err = 0;

	if (sqlite3_prepare_v2(db, "SELECT rowid, mode, sz, coalesce(length(data), -1) FROM sqlar"
				   " ORDER BY rowid", -1, &st, NULL) != SQLITE_OK) {
		tfs_log(TFS_LOG_ERR, "%s: cannot list the SQLite archive: %s", a->name,
			sqlite3_errmsg(db));
		return -EIO;
	}
	while (!err && (rc = sqlite3_step(st)) == SQLITE_ROW) {
		if (a->n == a->cap) {
			size_t cap = a->cap ? a->cap * 2 : 64;
			struct sqa_row *p = realloc(a->r, cap * sizeof(*p));
			if (!p) {
				err = -ENOMEM;
				break;
			}
			a->r = p;
			a->cap = cap;
		}
		struct sqa_row *r = &a->r[a->n++];
		uint32_t mode = (uint32_t)sqlite3_column_int64(st, 1);
		*r = (struct sqa_row){.rowid = (uint64_t)sqlite3_column_int64(st, 0),
				      .sz = sqlite3_column_int64(st, 2),
				      .dlen = sqlite3_column_int64(st, 3)};
		if (!sqa_is_file(mode) || r->sz <= 0) {
			r->readable = r->sz == 0 || !sqa_is_file(mode);
			continue;
		}
		/* Every blob's bytes are the file's own: together no more than the file; zlib
		 * makes at most 1032 bytes of one (deflate's limit).  What says more is damage. */
		if (r->dlen < 0 || (uint64_t)r->dlen > a->fsize - a->blobs ||
		    (uint64_t)r->sz > (uint64_t)r->dlen * 1032 + 64)
			continue;
		a->blobs += (uint64_t)r->dlen;
		if (r->dlen > 0 && r->dlen <= r->sz) /* stored, or zlib's */
			err = sqa_stream(a, r, sink);
	}
	if (!err && rc != SQLITE_DONE) {
		tfs_log(TFS_LOG_ERR, "%s: cannot list the SQLite archive: %s", a->name,
			sqlite3_errmsg(db));
		err = sqlsrc_err(rc);
	}
	sqlite3_finalize(st);
	return err;
}

static enum member_type sqa_type(uint32_t mode)
{
	switch (mode & S_IFMT) {
	case S_IFDIR: return MEMBER_DIR;
	case S_IFLNK: return MEMBER_SYMLINK;
	default: return MEMBER_REG;
	}
}

/* Pass 2: the members, rows in the same order. */
static int sqa_pass2(struct sqa *a, sqlite3 *db, const struct cont_sink *sink,
		     struct cont_stats *stats)
{
	sqlite3_stmt *st = NULL;
	size_t k = 0;
	int rc, err = 0;

	/* a link's target is its data (not uncompressed: sqlite3 -Ax writes it as it is) */
	if (sqlite3_prepare_v2(db, "SELECT rowid, name, mode, mtime, CASE WHEN mode & 61440 ="
				   " 40960 AND length(data) <= 4096 THEN data END FROM sqlar"
				   " ORDER BY rowid", -1, &st, NULL) != SQLITE_OK) {
		tfs_log(TFS_LOG_ERR, "%s: cannot list the SQLite archive: %s", a->name,
			sqlite3_errmsg(db));
		return -EIO;
	}
	rc = SQLITE_DONE;
	while (!err && k < a->n && (rc = sqlite3_step(st)) == SQLITE_ROW) {
		const struct sqa_row *r = &a->r[k++];
		const uint8_t *name = sqlite3_column_text(st, 1);
		uint32_t mode = (uint32_t)sqlite3_column_int64(st, 2);
		struct arc_member m = {.link = (const uint8_t *)"", .type = sqa_type(mode),
				       .mode = mode & 07777, .no_owner = true, .uname = "",
				       .gname = ""};

		if ((uint64_t)sqlite3_column_int64(st, 0) != r->rowid) {
			tfs_log(TFS_LOG_ERR, "%s: the SQLite archive lists other rows the second "
				"time: damaged", a->name);
			err = -EIO;
			break;
		}
		if (!name || !*name) {
			tfs_log(TFS_LOG_WARNING, "%s: row %" PRIu64 " has no name: left out", a->name,
				r->rowid);
			continue;
		}
		m.path = name;
		m.path_len = (size_t)sqlite3_column_bytes(st, 1);
		if (memchr(name, 0, m.path_len)) {
			tfs_log(TFS_LOG_WARNING, "%s: row %" PRIu64 ": a name with a NUL byte: left out",
				a->name, r->rowid);
			continue;
		}
		m.mtime_sec = sqlite3_column_int64(st, 3);
		m.hdr_off = r->rowid;
		if (m.type == MEMBER_SYMLINK && sqlite3_column_type(st, 4) == SQLITE_NULL &&
		    r->dlen > 0) {
			tfs_log(TFS_LOG_WARNING, "%s: %s: a link target of %" PRId64 " bytes: "
				"left out", a->name, (const char *)name, r->dlen);
			continue;
		}
		if (m.type == MEMBER_SYMLINK) {
			m.link = sqlite3_column_blob(st, 4) ? sqlite3_column_blob(st, 4)
							    : (const uint8_t *)"";
			m.link_len = (size_t)sqlite3_column_bytes(st, 4);
			if (memchr(m.link, 0, m.link_len)) {
				tfs_log(TFS_LOG_WARNING, "%s: %s: a link target with a NUL byte: "
					"left out", a->name, (const char *)name);
				continue;
			}
			char *t = strndup((const char *)m.link, m.link_len);
			if (!t) {
				err = -ENOMEM;
				break;
			}
			m.link = (const uint8_t *)t;
			err = sink->member(sink->opaque, &m);
			free(t);
			stats->members++;
			continue;
		}
		if (m.type == MEMBER_REG) {
			m.size = r->sz > 0 ? (uint64_t)r->sz : 0;
			m.stored = m.size;
			m.stream = m.size ? r->sid : 0;
			if (!r->readable) {
				m.unreadable = -EIO;
				m.why = "its data is missing or longer than its size: damaged";
				m.stream = 0;
				stats->damaged = true;
			}
		}
		err = sink->member(sink->opaque, &m);
		stats->members++;
	}
	if (!err && rc != SQLITE_ROW && rc != SQLITE_DONE) {
		tfs_log(TFS_LOG_ERR, "%s: cannot list the SQLite archive: %s", a->name,
			sqlite3_errmsg(db));
		err = sqlsrc_err(rc);
	} else if (!err && k < a->n) {
		tfs_log(TFS_LOG_ERR, "%s: the SQLite archive lists fewer rows the second time: "
			"damaged", a->name);
		err = -EIO;
	}
	sqlite3_finalize(st);
	return err;
}

static int sqa_parse(struct src *in, const struct cont_sink *sink, struct cont_stats *stats)
{
	struct cont_stats st = {0};
	struct sqa a = {.name = sink->name ? sink->name : "archive", .fsize = src_size(in)};
	sqlite3 *db = NULL;
	int err = sqa_open(in, &db);

	if (err) {
		tfs_log(TFS_LOG_ERR, "%s: not an SQLite archive it can read", a.name);
		return err == -EINVAL ? -EIO : err;
	}
	err = sqa_pass1(&a, db, sink);
	if (!err)
		err = sqa_pass2(&a, db, sink, &st);
	if (stats)
		*stats = st;
	sqlite3_close(db);
	free(a.r);
	free(a.params);
	return err;
}

const struct container cont_sqlar = {
	.name = "sqlar",
	.probe = sqa_probe,
	.parse = sqa_parse,
};
