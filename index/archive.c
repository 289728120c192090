/* An opened archive (see archive.h): an index opened for reading, the archive's data, and
 * the decoded streams its members live in.  This file opens and closes one (the index's meta
 * read once, its statistics for arch_get_info) and opens the archives stored inside it
 * (their index an image in the outer one's, their bytes a member read through it).
 *
 * The rest of an opened archive: its files in archive_file.c, its decoded streams in
 * streams.c, the queries of the tree in query.c; the locks in archive_int.h.  The tree
 * interface over an archive (tree_archive_ops) is mount/archive_tree.c's.
 */
#include "index/archive_int.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "common/log.h"
#include "index/db.h"

/* ---- opening -------------------------------------------------------------------------------- */

static struct arch *arch_alloc(void)
{
	struct arch *a = calloc(1, sizeof(*a));

	if (!a)
		return NULL;
	a->fd = -1;
	pthread_mutex_init(&a->conns_lock, NULL);
	pthread_mutex_init(&a->streams_lock, NULL);
	list_init(&a->idle);
	return a;
}

/* Reads the index's meta; a->index, a->file, a->path are set. */
static int open_index(struct arch *a, const struct arch_env *env)
{
	sqlite3 *db = NULL;
	sqlite3_stmt *st;
	uint64_t v = 0;
	char *s;
	int err = db_open_ro(a->index, &db);

	if (err) {
		tfs_log(TFS_LOG_ERR, "cannot open index %s: %s", a->index_shown, strerror(-err));
		return err;
	}
	a->env = *env;
	a->codec_name = db_meta_get(db, "codec");
	s = db_meta_get(db, "kind");
	a->info.single_file = s && strcmp(s, "single") == 0;
	a->format = s;
	db_meta_get_u64(db, "damaged", &v);
	a->info.damaged = v != 0;
	db_meta_get_u64(db, "wrapped", &a->wrapped);
	db_meta_get_u64(db, "members", &a->info.members);
	db_meta_get_u64(db, "archive_size", &a->info.archive_size);
	db_meta_get_u64(db, "usize", &a->info.usize);
	if (db_prepare(db, "SELECT max(id) FROM entries", &st) == 0) {
		if (sqlite3_step(st) == SQLITE_ROW)
			a->info.entries = (uint64_t)sqlite3_column_int64(st, 0);
		sqlite3_finalize(st);
	}
	if (!a->codec_name) {
		tfs_log(TFS_LOG_ERR, "%s: index damaged (no codec)", a->index_shown);
		err = -EIO;
	}
	sqlite3_close(db);
	a->info.path = a->path;
	a->info.index = a->index_shown;
	a->info.codec = a->codec_name;
	return err;
}

static int unwrap(struct arch *a, struct arch **out);

int arch_open_index(const char *index, const char *shown, struct src *data, const char *name,
		    const struct arch_env *env, struct arch **out)
{
	struct arch *a = arch_alloc();
	int err;

	*out = NULL;
	if (!a) {
		src_free(data);
		return -ENOMEM;
	}
	a->file = data;
	a->fd = src_fd(data);
	if (a->fd >= 0 && fstat(a->fd, &a->opened) < 0)
		a->fd = -1; /* not read in place: through the source, as a remote one */
	a->path = strdup(name);
	a->index = strdup(index);
	a->index_shown = strdup(shown ? shown : index);
	if (!a->path || !a->index || !a->index_shown) {
		arch_close(a);
		return -ENOMEM;
	}
	err = open_index(a, env);
	if (err) {
		arch_close(a);
		return err;
	}
	if (a->wrapped)
		return unwrap(a, out);
	*out = a;
	return 0;
}

void arch_keep(struct arch *a, sqlite3 *keeper)
{
	/* the index opened by name is the outermost's: an archive behind a codec is the inner
	 * one (unwrap), which keeps its own index's keeper */
	while (a->outer)
		a = a->outer;
	if (a->keeper != keeper)
		sqlite3_close(a->keeper);
	a->keeper = keeper;
}

void arch_set_built(struct arch *a, const struct idx_build_stats *stats)
{
	a->info.built = true;
	if (stats)
		a->info.build = *stats;
}

const struct arch_info *arch_get_info(const struct arch *a)
{
	return &a->info;
}

void arch_close(struct arch *a)
{
	if (!a)
		return;
	arch_streams_free(a);
	while (a->free_conns) {
		struct conn *c = a->free_conns;
		a->free_conns = c->next;
		arch_conn_free(c);
	}
	pthread_mutex_destroy(&a->conns_lock);
	pthread_mutex_destroy(&a->streams_lock);
	src_free(a->file);
	sqlite3_close(a->keeper);
	free(a->path);
	free(a->index);
	free(a->index_shown);
	free(a->codec_name);
	free(a->format);
	arch_close(a->outer);
	free(a);
}


/* ---- archives inside ------------------------------------------------------------------------ */

int arch_nested(struct arch *a, uint64_t ino, struct arch **out)
{
	struct src *data = NULL;
	struct conn *c;
	char *name = NULL, *mem = NULL;
	sqlite3 *keeper = NULL;
	int r, err;

	*out = NULL;
	err = arch_conn_get(a, &c);
	if (err)
		return err;
	sqlite3_bind_int64(c->nested, 1, (sqlite3_int64)ino);
	r = arch_step(c->nested);
	if (r > 0)
		err = db_image_to_mem(sqlite3_column_blob(c->nested, 0),
					(size_t)sqlite3_column_bytes(c->nested, 0), &mem, &keeper);
	else
		err = r < 0 ? r : -ENOENT;
	sqlite3_reset(c->nested);
	arch_conn_put(a, c);
	if (r > 0 && err) {
		tfs_log(TFS_LOG_ERR, "%s: the index of nested archive %llu is damaged",
			a->index_shown, (unsigned long long)ino);
		err = -EIO;
	}
	if (!err)
		err = arch_file_src(a, ino, &data);
	if (!err && asprintf(&name, "%s#%llu", a->path, (unsigned long long)ino) < 0) {
		name = NULL;
		src_free(data);
		err = -ENOMEM;
	}
	if (!err) {
		err = arch_open_index(mem, NULL, data, name, &a->env, out);
		if (!err) {
			arch_keep(*out, keeper);
			keeper = NULL;
		}
	}
	sqlite3_close(keeper);
	free(mem);
	free(name);
	return err;
}


/* An archive behind a codec (nested.h idx_wrap): outer's single file opened as the archive it
 * holds, which is what *out is then; it owns outer.  What it says of itself is outer's -- the
 * file, the index, the codec --, its kind and members the inner one's. */
static int unwrap(struct arch *outer, struct arch **out)
{
	struct arch *a;
	int err = arch_nested(outer, outer->wrapped, &a);

	if (err) {
		tfs_log(TFS_LOG_ERR, "%s: cannot open the archive inside %s: %s",
			outer->index_shown, outer->path, strerror(-err));
		arch_close(outer);
		return err;
	}
	a->outer = outer;
	free(a->path); /* "archive#id": it is the archive itself */
	a->path = strdup(outer->path);
	if (!a->path) {
		arch_close(a);
		return -ENOMEM;
	}
	a->info.path = outer->info.path;
	a->info.index = outer->info.index;
	a->info.codec = outer->info.codec;
	a->info.archive_size = outer->info.archive_size;
	a->info.damaged = a->info.damaged || outer->info.damaged;
	*out = a;
	return 0;
}
