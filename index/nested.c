/* The nested pass (see nested.h). */
#include "index/nested.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cache/cache.h"
#include "codecs/codec.h"
#include "common/log.h"
#include "index/archive.h"
#include "containers/container.h"
#include "index/db.h"
#include "containers/tar/tar.h"

#define NEST_CACHE (64u << 20) /* the chunk cache the pass reads members through */

/* A borrowed source: the archive object the pass reads through would otherwise free the
 * builder's source. */
static ssize_t borrow_pread(void *opaque, void *buf, size_t len, uint64_t off)
{
	return src_pread(opaque, buf, len, off);
}

static const struct src_ops borrow_ops = {.pread = borrow_pread};

struct nested_img {
	uint64_t id;
	void *image;
	size_t len;
	char *name; /* the folder's new name (strip_ext), or NULL */
};

/* The whole file at path into a malloc'd buffer.  0 or -errno. */
static int read_whole(const char *path, void **out, size_t *len)
{
	struct stat st;
	FILE *f = fopen(path, "rb");
	void *buf = NULL;
	int err = 0;

	*out = NULL;
	*len = 0;
	if (!f)
		return -errno;
	if (fstat(fileno(f), &st) < 0) {
		err = -errno;
		goto out;
	}
	buf = malloc(st.st_size ? (size_t)st.st_size : 1);
	if (!buf) {
		err = -ENOMEM;
		goto out;
	}
	if (fread(buf, 1, (size_t)st.st_size, f) != (size_t)st.st_size) {
		err = ferror(f) ? -EIO : -ESTALE;
		free(buf);
		goto out;
	}
	*out = buf;
	*len = (size_t)st.st_size;
out:
	fclose(f);
	return err;
}

int idx_build_image(const struct idx_input *in, const char *tmp, const struct idx_build_opts *o,
		    void **image, size_t *len, struct idx_build_stats *stats)
{
	struct idx_build_stats st = {0};
	int err = idx_build_base(in, tmp, o, &st);

	*image = NULL;
	*len = 0;
	if (!err && st.inner)
		err = idx_wrap(tmp, in, o, &st);
	else if (!err && o->recursion)
		err = idx_nest(tmp, in, o);
	if (!err)
		err = idx_build_finish(tmp, in, o);
	if (!err)
		err = read_whole(tmp, image, len);
	if (!err && stats)
		*stats = st;
	unlink(tmp);
	return err;
}

/* Indexes member id (a row of q) of the archive being built, if it is an archive: 1 if it is
 * (img filled), 0 if not, -errno. */
static int nest_one(struct arch *outer, const struct idx_input *in, const char *tmp,
		    const struct idx_build_opts *o, sqlite3_stmt *q, struct nested_img *img)
{
	uint64_t id = (uint64_t)sqlite3_column_int64(q, 0);
	const char *name = sqlite3_column_blob(q, 1);
	size_t nlen = (size_t)sqlite3_column_bytes(q, 1);
	struct src *ms = NULL;
	char *ntmp = NULL, *shown = NULL;
	uint8_t head[512];
	ssize_t hn;
	int err, ret = 0;

	if (!name || !codec_archive_name(name, nlen))
		return 0;
	err = arch_file_src(outer, id, &ms);
	if (err)
		return err == -EIO ? 0 : err;
	hn = src_pread(ms, head, sizeof(head), 0);
	if (hn <= 0 || !(codec_probe(head, (size_t)hn) || (hn == 512 && tar_header_valid(head)) ||
			 cont_probe(ms, head, (size_t)hn) || cont_probe_image(ms, head, (size_t)hn)))
		goto out;
	if (asprintf(&ntmp, "%s.n%" PRIu64, tmp, id) < 0 ||
	    asprintf(&shown, "%s/%.*s", in->name, (int)nlen, name) < 0) {
		ret = -ENOMEM;
		goto out;
	}
	struct idx_input nin = {
		.src = ms,
		.name = shown,
		.mode = (uint32_t)sqlite3_column_int64(q, 2),
		.uid = (uint64_t)sqlite3_column_int64(q, 3),
		.gid = (uint64_t)sqlite3_column_int64(q, 4),
		.mtime = sqlite3_column_int64(q, 5),
		.mtime_nsec = (uint32_t)sqlite3_column_int64(q, 6),
		.quiet = true,
	};
	struct idx_build_opts no = *o;
	no.recursion--;
	no.progress = NULL;
	err = idx_build_image(&nin, ntmp, &no, &img->image, &img->len, NULL);
	if (err == -ENOMEM) {
		ret = err;
		goto out;
	}
	if (err) {
		tfs_log(TFS_LOG_NOTICE, "%s: not indexed as an archive (%s), shown as a file", shown,
			strerror(-err));
		goto out;
	}
	img->id = id;
	img->name = o->strip_ext ? codec_strip_archive_ext(name, nlen) : NULL;
	ret = 1;
out:
	free(ntmp);
	free(shown);
	src_free(ms);
	return ret;
}

/* The images of every archive inside the one indexed at tmp, read through an archive object. */
static int collect(const char *tmp, const struct idx_input *in, const struct idx_build_opts *o,
		   struct nested_img **imgs, size_t *n)
{
	struct cache *cache = cache_new(NEST_CACHE);
	struct src *data = src_new(&borrow_ops, in->src, src_size(in->src));
	struct arch *outer = NULL;
	sqlite3 *db = NULL;
	sqlite3_stmt *q = NULL;
	size_t cap = 0;
	int err;

	if (!cache || !data) {
		src_free(data);
		cache_free(cache);
		return -ENOMEM;
	}
	struct arch_env env = {.cache = cache}; /* members are read in order: no decoding ahead */
	err = arch_open_index(tmp, NULL, data, in->name, &env, &outer);
	err = err ? err : db_open_ro(tmp, &db);
	if (err)
		goto out;
	err = db_prepare(db,
			 "SELECT id, name, mode, uid, gid, mtime, mtime_nsec FROM entries"
			 " WHERE latest = 1 AND target IS NULL AND (mode & 61440) = 32768"
			 " AND size >= 32 AND unreadable IS NULL",
			 &q);
	while (!err && sqlite3_step(q) == SQLITE_ROW) {
		struct nested_img img = {0};
		int r = nest_one(outer, in, tmp, o, q, &img);
		if (r < 0) {
			err = r;
			break;
		}
		if (r == 0)
			continue;
		if (*n == cap) {
			cap = cap ? cap * 2 : 16;
			struct nested_img *p = realloc(*imgs, cap * sizeof(*p));
			if (!p) {
				free(img.image);
				free(img.name);
				err = -ENOMEM;
				break;
			}
			*imgs = p;
		}
		(*imgs)[(*n)++] = img;
	}
out:
	sqlite3_finalize(q);
	sqlite3_close(db);
	arch_close(outer);
	cache_free(cache);
	return err;
}

/* Stores the images and turns their entries into folders. */
static int store(const char *tmp, const struct nested_img *imgs, size_t n, const char *name)
{
	sqlite3 *db = NULL;
	sqlite3_stmt *ins = NULL, *upd = NULL, *clash = NULL;
	int err = db_open_build(tmp, &db);

	err = err ? err : db_exec(db, "BEGIN");
	err = err ? err : db_prepare(db, "INSERT INTO nested (id, image) VALUES (?, ?)", &ins);
	err = err ? err
		  : db_prepare(db, "UPDATE entries SET flags = flags | 8, name = coalesce(?2, name)"
				   " WHERE id = ?1", &upd);
	err = err ? err
		  : db_prepare(db, "SELECT 1 FROM entries WHERE parent ="
				   " (SELECT parent FROM entries WHERE id = ?1) AND name = ?2", &clash);
	for (size_t i = 0; !err && i < n; i++) {
		sqlite3_bind_int64(ins, 1, (sqlite3_int64)imgs[i].id);
		sqlite3_bind_blob(ins, 2, imgs[i].image, (int)imgs[i].len, SQLITE_STATIC);
		if (sqlite3_step(ins) != SQLITE_DONE)
			err = -EIO;
		sqlite3_reset(ins);
		if (imgs[i].name) { /* strip the extension unless a sibling has that name */
			sqlite3_bind_int64(clash, 1, (sqlite3_int64)imgs[i].id);
			sqlite3_bind_blob(clash, 2, imgs[i].name, (int)strlen(imgs[i].name),
					  SQLITE_STATIC);
			bool taken = sqlite3_step(clash) == SQLITE_ROW;
			sqlite3_reset(clash);
			if (!taken)
				sqlite3_bind_blob(upd, 2, imgs[i].name, (int)strlen(imgs[i].name),
						  SQLITE_STATIC);
		}
		sqlite3_bind_int64(upd, 1, (sqlite3_int64)imgs[i].id);
		if (!err && sqlite3_step(upd) != SQLITE_DONE)
			err = -EIO;
		sqlite3_reset(upd);
		sqlite3_clear_bindings(upd);
	}
	err = err ? err : db_exec(db, "COMMIT");
	if (err == -EIO)
		tfs_log(TFS_LOG_ERR, "index: cannot store the archives inside %s: %s", name,
			sqlite3_errmsg(db));
	sqlite3_finalize(ins);
	sqlite3_finalize(upd);
	sqlite3_finalize(clash);
	if (db && sqlite3_close(db) != SQLITE_OK && !err)
		err = -EIO;
	return err;
}

int idx_nest(const char *tmp, const struct idx_input *in, const struct idx_build_opts *o)
{
	struct nested_img *imgs = NULL;
	size_t n = 0;
	int err = collect(tmp, in, o, &imgs, &n);

	if (!err && n) {
		err = store(tmp, imgs, n, in->name);
		if (!err) {
			const char *base = strrchr(in->name, '/');
			tfs_log(TFS_LOG_INFO, "%s: %zu archive%s inside indexed",
				base ? base + 1 : in->name, n, n == 1 ? "" : "s");
		}
	}
	for (size_t i = 0; i < n; i++) {
		free(imgs[i].image);
		free(imgs[i].name);
	}
	free(imgs);
	return err;
}

/* ---- an archive behind a codec -------------------------------------------------------------- */

/* The id of the single file's row in the index at tmp (db open), or 0. */
static uint64_t single_id(sqlite3 *db)
{
	sqlite3_stmt *q = NULL;
	uint64_t id = 0;

	if (db_prepare(db, "SELECT id FROM entries WHERE parent = 1 AND id != 1 AND latest = 1"
			   " AND (mode & 61440) = 32768 ORDER BY id LIMIT 1", &q) == 0 &&
	    sqlite3_step(q) == SQLITE_ROW)
		id = (uint64_t)sqlite3_column_int64(q, 0);
	sqlite3_finalize(q);
	return id;
}

/* Stores the inner archive's index as the nested image of id, and says so in the meta. */
static int store_wrapped(const char *tmp, uint64_t id, const void *image, size_t len)
{
	sqlite3 *db = NULL;
	sqlite3_stmt *ins = NULL;
	char v[32];
	int err = db_open_build(tmp, &db);

	err = err ? err : db_exec(db, "BEGIN");
	err = err ? err : db_prepare(db, "INSERT INTO nested (id, image) VALUES (?, ?)", &ins);
	if (!err) {
		sqlite3_bind_int64(ins, 1, (sqlite3_int64)id);
		sqlite3_bind_blob(ins, 2, image, (int)len, SQLITE_STATIC);
		if (sqlite3_step(ins) != SQLITE_DONE)
			err = -EIO;
	}
	snprintf(v, sizeof(v), "%" PRIu64, id);
	err = err ? err : db_meta_set(db, "wrapped", v);
	err = err ? err : db_exec(db, "COMMIT");
	sqlite3_finalize(ins);
	if (db && sqlite3_close(db) != SQLITE_OK && !err)
		err = -EIO;
	return err;
}

int idx_wrap(const char *tmp, const struct idx_input *in, const struct idx_build_opts *o,
	     struct idx_build_stats *st)
{
	struct idx_build_stats ist = {0};
	struct cache *cache = cache_new(NEST_CACHE);
	struct src *data = src_new(&borrow_ops, in->src, src_size(in->src)), *ms = NULL;
	struct arch *outer = NULL;
	sqlite3 *db = NULL;
	void *image = NULL;
	size_t len = 0;
	char *ntmp = NULL;
	uint64_t id = 0;
	int err = -ENOMEM;

	if (!cache || !data) {
		src_free(data);
		goto out;
	}
	struct arch_env env = {.cache = cache};
	err = arch_open_index(tmp, NULL, data, in->name, &env, &outer);
	err = err ? err : db_open_ro(tmp, &db);
	if (!err)
		id = single_id(db);
	sqlite3_close(db);
	if (err || !id)
		goto out;
	err = arch_file_src(outer, id, &ms);
	if (!err && asprintf(&ntmp, "%s.w", tmp) < 0) {
		ntmp = NULL;
		err = -ENOMEM;
	}
	if (err)
		goto out;
	/* the same archive, seen through its codec: the same name, owner and level of -r */
	struct idx_input nin = *in;
	nin.src = ms;
	nin.codec = NULL;
	nin.etag = nin.last_modified = nin.shadow_path = NULL;
	nin.quiet = true; /* the outer build said what was indexed */
	struct idx_build_opts no = *o;
	no.progress = NULL;
	err = idx_build_image(&nin, ntmp, &no, &image, &len, &ist);
	if (!err && ist.single_file) { /* a codec's stream inside: the file is what it is */
		tfs_log(TFS_LOG_DEBUG, "%s: compressed twice: shown as decompressed once",
			in->name);
		goto out;
	}
	if (err == -EINVAL) { /* not that format after all */
		tfs_log(TFS_LOG_WARNING, "%s: its decompressed bytes look like an archive but are "
			"not one; shown as the decompressed file", in->name);
		err = 0;
		goto out;
	}
	if (err && err != -ENOMEM) /* a damaged archive, as it would be uncompressed */
		tfs_log(TFS_LOG_ERR, "%s: the archive behind its codec cannot be read: %s",
			in->name, strerror(-err));
	err = err ? err : store_wrapped(tmp, id, image, len);
	if (!err) {
		st->wrapped = true;
		st->members = ist.members;
		st->container = ist.container;
		st->inner_single = ist.single_file;
		st->damaged = st->damaged || ist.damaged;
	}
out:
	free(image);
	free(ntmp);
	src_free(ms);
	arch_close(outer);
	cache_free(cache);
	return err;
}
