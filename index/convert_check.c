/* cv_check: an output of tarseek-convert against its source (convert.h).  Both are opened
 * as a mount opens them -- the output with check_only, so an index that does not match the
 * output's bytes is an error, never rebuilt -- and every regular member is read through both
 * indexes and compared byte for byte.  Members are paired by where their headers start,
 * which the conversion keeps (it copies the tar stream as it is).  Reads through the output's
 * index decode from its checkpoints and check every segment's CRC, so a damaged output is
 * found even where the comparison would not reach it. */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "../common/log.h"
#include "archive.h"
#include "convert.h"
#include "db.h"

#define CK_BUF ((size_t)1 << 20)
#define CK_CACHE ((uint64_t)256 << 20)

struct ck_member {
	uint64_t id, hdr_off, size;
	char *name;
};

struct ck_list {
	struct ck_member *m;
	size_t n;
};

static void list_free(struct ck_list *l)
{
	for (size_t i = 0; i < l->n; i++)
		free(l->m[i].name);
	free(l->m);
}

static int list_members(struct arch *a, struct ck_list *l)
{
	const struct arch_info *info = arch_get_info(a);
	sqlite3 *db = NULL;
	sqlite3_stmt *st = NULL;
	size_t cap = 0;
	int rc, err = db_open_ro(info->index, &db);

	err = err ? err
		  : db_prepare(db,
			       "SELECT id, hdr_off, size, name FROM entries WHERE id != 1 AND"
			       " (mode & ?1) = ?2 AND target IS NULL AND (flags & ?3) = 0"
			       " ORDER BY hdr_off",
			       &st);
	if (!err) {
		sqlite3_bind_int(st, 1, S_IFMT);
		sqlite3_bind_int(st, 2, S_IFREG);
		sqlite3_bind_int(st, 3, IDX_F_IMPLICIT);
	}
	while (!err && (rc = sqlite3_step(st)) == SQLITE_ROW) {
		if (l->n == cap) {
			size_t c = cap ? cap * 2 : 1024;
			struct ck_member *p = realloc(l->m, c * sizeof(*p));
			if (!p) {
				err = -ENOMEM;
				break;
			}
			l->m = p;
			cap = c;
		}
		struct ck_member *m = &l->m[l->n];
		m->id = (uint64_t)sqlite3_column_int64(st, 0);
		m->hdr_off = (uint64_t)sqlite3_column_int64(st, 1);
		m->size = (uint64_t)sqlite3_column_int64(st, 2);
		m->name = strndup((const char *)sqlite3_column_blob(st, 3),
				  (size_t)sqlite3_column_bytes(st, 3));
		if (!m->name) {
			err = -ENOMEM;
			break;
		}
		l->n++;
	}
	if (!err && rc != SQLITE_DONE)
		err = -EIO;
	sqlite3_finalize(st);
	sqlite3_close(db);
	return err;
}

static int compare_member(struct arch *sa, struct arch *oa, const struct ck_member *sm,
			  const struct ck_member *om, uint8_t *b1, uint8_t *b2, const char *output)
{
	struct arch_file *f1 = NULL, *f2 = NULL;
	int err = arch_file_open(sa, sm->id, &f1);

	err = err ? err : arch_file_open(oa, om->id, &f2);
	for (uint64_t off = 0; !err && off < sm->size;) {
		size_t want = sm->size - off < CK_BUF ? (size_t)(sm->size - off) : CK_BUF;
		ssize_t n1 = arch_file_read(f1, b1, want, off);
		ssize_t n2 = n1 < 0 ? 0 : arch_file_read(f2, b2, want, off);
		if (n1 < 0 || n2 < 0) {
			err = n1 < 0 ? (int)n1 : (int)n2;
			tfs_log(TFS_LOG_ERR, "%s: %s cannot be read (%s) at offset %" PRIu64,
				n1 < 0 ? "the source" : output, sm->name, strerror(-err), off);
		} else if (n1 != (ssize_t)want || n2 != n1 || memcmp(b1, b2, want)) {
			size_t at = 0;
			while (at < want && n2 == n1 && b1[at] == b2[at])
				at++;
			tfs_log(TFS_LOG_ERR, "%s: %s differs from the source at offset %" PRIu64,
				output, sm->name, off + at);
			err = -EIO;
		}
		off += want;
	}
	arch_file_close(f1);
	arch_file_close(f2);
	return err;
}

int cv_check(const char *source, const char *output, const struct cv_opts *o)
{
	struct arch_opts so = {.idx = o->source, .env.net = o->net};
	struct arch_opts oo = {.idx = {.index_file = o->index_file,
				       .check_only = true,
				       .build = o->source.build}};
	struct arch *sa = NULL, *oa = NULL;
	struct ck_list sl = {0}, ol = {0};
	uint8_t *b1 = malloc(CK_BUF), *b2 = malloc(CK_BUF);
	int err = b1 && b2 ? 0 : -ENOMEM;

	so.env.cache = cache_new(CK_CACHE);
	oo.env.cache = so.env.cache;
	if (!err && !so.env.cache)
		err = -ENOMEM;
	err = err ? err : arch_open(source, &so, &sa);
	if (!err && (err = arch_open(output, &oo, &oa)))
		tfs_log(TFS_LOG_ERR, "%s: no index that matches it (%s)", output, strerror(-err));
	err = err ? err : list_members(sa, &sl);
	err = err ? err : list_members(oa, &ol);
	if (!err && sl.n != ol.n) {
		tfs_log(TFS_LOG_ERR, "%s has %zu files, the source %zu", output, ol.n, sl.n);
		err = -EIO;
	}
	for (size_t i = 0; !err && i < sl.n; i++) {
		if (sl.m[i].hdr_off != ol.m[i].hdr_off || sl.m[i].size != ol.m[i].size ||
		    strcmp(sl.m[i].name, ol.m[i].name)) {
			tfs_log(TFS_LOG_ERR, "%s: %s is not where the source has it", output,
				sl.m[i].name);
			err = -EIO;
			break;
		}
		err = compare_member(sa, oa, &sl.m[i], &ol.m[i], b1, b2, output);
	}
	list_free(&sl);
	list_free(&ol);
	arch_close(oa);
	arch_close(sa);
	cache_free(so.env.cache);
	free(b1);
	free(b2);
	return err;
}
