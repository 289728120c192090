/* cv_check: an output of tarseek-convert against its source (convert.h).  Both are opened
 * as a mount opens them -- the output with check_only, so an index that does not match the
 * output's bytes is an error, never rebuilt -- and every regular member is read through both
 * indexes and compared byte for byte.  A tar source's members are paired by where their
 * headers start, which the conversion keeps (it copies the tar stream as it is).  A
 * container's (zip, 7z, libarchive's) were written anew, so the two trees a mount shows are
 * paired by path instead: each folder's names, listed in the same order on both sides, are
 * merged; a name on one side only is a difference, as are another type, size, link target or
 * device, or another byte in a file.  Reads through the output's index decode from its
 * checkpoints and check every segment's CRC, so a damaged output is found even where the
 * comparison would not reach it. */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "common/log.h"
#include "index/archive.h"
#include "convert/convert.h"
#include "index/db.h"

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

/* The size bytes of file sid of sa and oid of oa are the same (name: for messages). */
static int compare_file(struct arch *sa, uint64_t sid, struct arch *oa, uint64_t oid, uint64_t size,
			const char *name, uint8_t *b1, uint8_t *b2, const char *output)
{
	struct arch_file *f1 = NULL, *f2 = NULL;
	int err = arch_file_open(sa, sid, &f1);

	err = err ? err : arch_file_open(oa, oid, &f2);
	for (uint64_t off = 0; !err && off < size;) {
		size_t want = size - off < CK_BUF ? (size_t)(size - off) : CK_BUF;
		ssize_t n1 = arch_file_read(f1, b1, want, off);
		ssize_t n2 = n1 < 0 ? 0 : arch_file_read(f2, b2, want, off);
		if (n1 < 0 || n2 < 0) {
			err = n1 < 0 ? (int)n1 : (int)n2;
			tfs_log(TFS_LOG_ERR, "%s: %s cannot be read (%s) at offset %" PRIu64,
				n1 < 0 ? "the source" : output, name, strerror(-err), off);
		} else if (n1 != (ssize_t)want || n2 != n1 || memcmp(b1, b2, want)) {
			size_t at = 0;
			while (at < want && n2 == n1 && b1[at] == b2[at])
				at++;
			tfs_log(TFS_LOG_ERR, "%s: %s differs from the source at offset %" PRIu64,
				output, name, off + at);
			err = -EIO;
		}
		off += want;
	}
	arch_file_close(f1);
	arch_file_close(f2);
	return err;
}

/* ---- A container source: the two trees, paired by path ------------------------------------- */

struct ck_name {
	char *name;
	size_t len;
	struct arch_attr at;
};

struct ck_dir {
	struct ck_name *v;
	size_t n, cap;
};

struct ck_tree {
	struct arch *sa, *oa;
	const char *output;
	uint8_t *b1, *b2;
	char *path; /* of the folder being compared, NUL-terminated; "" at the top */
	size_t len, cap;
};

static int ck_collect(void *opaque, const char *name, size_t len, const struct arch_attr *at,
		      uint64_t cookie)
{
	struct ck_dir *d = opaque;

	(void)cookie;
	if (d->n == d->cap) {
		size_t cap = d->cap ? d->cap * 2 : 64;
		void *p = realloc(d->v, cap * sizeof(*d->v));
		if (!p)
			return -ENOMEM;
		d->v = p;
		d->cap = cap;
	}
	d->v[d->n].name = malloc(len + 1);
	if (!d->v[d->n].name)
		return -ENOMEM;
	memcpy(d->v[d->n].name, name, len);
	d->v[d->n].name[len] = 0;
	d->v[d->n].len = len;
	d->v[d->n++].at = *at;
	return 0;
}

static void dir_free(struct ck_dir *d)
{
	for (size_t i = 0; i < d->n; i++)
		free(d->v[i].name);
	free(d->v);
}

/* The order readdir lists names in (SQLite's for BLOBs): bytes, then the shorter first. */
static int name_cmp(const struct ck_name *a, const struct ck_name *b)
{
	int c = memcmp(a->name, b->name, a->len < b->len ? a->len : b->len);

	return c ? c : (a->len > b->len) - (a->len < b->len);
}

/* c->path with "/name" (or "name" at the top) appended; the caller cuts it back to *old. */
static int path_push(struct ck_tree *c, const struct ck_name *n, size_t *old)
{
	size_t need = c->len + 1 + n->len + 1;

	*old = c->len;
	if (need > c->cap) {
		char *p = realloc(c->path, need * 2);
		if (!p)
			return -ENOMEM;
		c->path = p;
		c->cap = need * 2;
	}
	if (c->len)
		c->path[c->len++] = '/';
	memcpy(c->path + c->len, n->name, n->len);
	c->len += n->len;
	c->path[c->len] = 0;
	return 0;
}

static const char *kind(uint32_t mode)
{
	switch (mode & S_IFMT) {
	case S_IFREG:
		return "file";
	case S_IFDIR:
		return "folder";
	case S_IFLNK:
		return "symbolic link";
	case S_IFCHR:
		return "character device";
	case S_IFBLK:
		return "block device";
	case S_IFIFO:
		return "FIFO";
	}
	return "special file";
}

static int compare_links(struct ck_tree *c, const struct arch_attr *s, const struct arch_attr *o)
{
	char *l1 = malloc(s->size + 1), *l2 = malloc(o->size + 1);
	size_t n1 = 0, n2 = 0;
	int err = l1 && l2 ? 0 : -ENOMEM;

	err = err ? err : arch_readlink(c->sa, s->ino, l1, s->size + 1, &n1);
	err = err ? err : arch_readlink(c->oa, o->ino, l2, o->size + 1, &n2);
	if (!err && (n1 != n2 || memcmp(l1, l2, n1))) {
		tfs_log(TFS_LOG_ERR, "%s: %s points to '%.*s', in the source to '%.*s'", c->output,
			c->path, (int)n2, l2, (int)n1, l1);
		err = -EIO;
	} else if (err && err != -ENOMEM) {
		tfs_log(TFS_LOG_ERR, "%s: the target of %s cannot be read (%s)", c->output, c->path,
			strerror(-err));
	}
	free(l1);
	free(l2);
	return err;
}

static int compare_dirs(struct ck_tree *c, uint64_t sdir, uint64_t odir);

/* c->path names s in the source and o in the output. */
static int compare_pair(struct ck_tree *c, const struct arch_attr *s, const struct arch_attr *o)
{
	if ((s->mode & S_IFMT) != (o->mode & S_IFMT)) {
		tfs_log(TFS_LOG_ERR, "%s: %s is a %s, in the source a %s", c->output, c->path,
			kind(o->mode), kind(s->mode));
		return -EIO;
	}
	switch (s->mode & S_IFMT) {
	case S_IFDIR:
		return compare_dirs(c, s->ino, o->ino);
	case S_IFREG:
		if (s->size != o->size) {
			tfs_log(TFS_LOG_ERR, "%s: %s has %" PRIu64 " bytes, in the source %" PRIu64,
				c->output, c->path, o->size, s->size);
			return -EIO;
		}
		return compare_file(c->sa, s->ino, c->oa, o->ino, s->size, c->path, c->b1, c->b2,
				    c->output);
	case S_IFLNK:
		return compare_links(c, s, o);
	case S_IFCHR:
	case S_IFBLK:
		if (s->rdev != o->rdev) {
			tfs_log(TFS_LOG_ERR, "%s: %s is another device than in the source",
				c->output, c->path);
			return -EIO;
		}
		return 0;
	}
	return 0;
}

/* The folders sdir of the source and odir of the output hold the same. */
static int compare_dirs(struct ck_tree *c, uint64_t sdir, uint64_t odir)
{
	struct ck_dir sd = {0}, od = {0};
	size_t i = 0, j = 0;
	int err = arch_readdir(c->sa, sdir, 0, ck_collect, &sd);

	err = err ? err : arch_readdir(c->oa, odir, 0, ck_collect, &od);
	while (!err && (i < sd.n || j < od.n)) {
		int cmp = i == sd.n ? 1 : j == od.n ? -1 : name_cmp(&sd.v[i], &od.v[j]);
		const struct ck_name *n = cmp <= 0 ? &sd.v[i] : &od.v[j];
		size_t old;
		err = path_push(c, n, &old);
		if (err)
			break;
		if (cmp) {
			tfs_log(TFS_LOG_ERR,
				cmp < 0 ? "%s: %s is missing" : "%s: %s is not in the source",
				c->output, c->path);
			err = -EIO;
		} else {
			err = compare_pair(c, &sd.v[i].at, &od.v[j].at);
		}
		c->len = old;
		c->path[old] = 0;
		i += cmp <= 0;
		j += cmp >= 0;
	}
	dir_free(&sd);
	dir_free(&od);
	return err;
}

/* True if a is a container (zip, 7z, libarchive's), not a tar nor a single file: its index
 * says so (the kind a tar's or a single file's index gives is "tar" or "single"). */
static bool is_container(struct arch *a)
{
	sqlite3 *db = NULL;
	char *kind = NULL;
	bool yes;

	if (db_open_ro(arch_get_info(a)->index, &db) == 0)
		kind = db_meta_get(db, "kind");
	sqlite3_close(db);
	yes = kind && strcmp(kind, "tar") && strcmp(kind, "single");
	free(kind);
	return yes;
}

/* A container's output: the trees, from the top. */
static int compare_by_path(struct arch *sa, struct arch *oa, const char *output, uint8_t *b1,
			   uint8_t *b2)
{
	struct ck_tree c = {.sa = sa, .oa = oa, .output = output, .b1 = b1, .b2 = b2};
	int err;

	c.path = calloc(1, 256);
	c.cap = 256;
	err = c.path ? compare_dirs(&c, IDX_ROOT, IDX_ROOT) : -ENOMEM;
	free(c.path);
	return err;
}

/* A tar's output: the same members where the source has them. */
static int compare_by_offset(struct arch *sa, struct arch *oa, const char *output, uint8_t *b1,
			     uint8_t *b2)
{
	struct ck_list sl = {0}, ol = {0};
	int err = list_members(sa, &sl);

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
		err = compare_file(sa, sl.m[i].id, oa, ol.m[i].id, sl.m[i].size, sl.m[i].name, b1,
				   b2, output);
	}
	list_free(&sl);
	list_free(&ol);
	return err;
}

int cv_check(const char *source, const char *output, const struct cv_opts *o)
{
	struct arch_opts so = {.idx = o->source, .env.net = o->net};
	struct arch_opts oo = {.idx = {.index_file = o->index_file,
				       .check_only = true,
				       .build = o->source.build}};
	struct arch *sa = NULL, *oa = NULL;
	uint8_t *b1 = malloc(CK_BUF), *b2 = malloc(CK_BUF);
	int err = b1 && b2 ? 0 : -ENOMEM;

	so.env.cache = cache_new(CK_CACHE);
	oo.env.cache = so.env.cache;
	if (!err && !so.env.cache)
		err = -ENOMEM;
	err = err ? err : arch_open(source, &so, &sa);
	if (!err && (err = arch_open(output, &oo, &oa)))
		tfs_log(TFS_LOG_ERR, "%s: no index that matches it (%s)", output, strerror(-err));
	if (!err)
		err = is_container(sa) ? compare_by_path(sa, oa, output, b1, b2)
				       : compare_by_offset(sa, oa, output, b1, b2);
	arch_close(oa);
	arch_close(sa);
	cache_free(so.env.cache);
	free(b1);
	free(b2);
	return err;
}
