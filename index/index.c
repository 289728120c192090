/* Index location, validation and rebuilding (see index.h). */
#include "index.h"

#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "../codecs/codec.h"
#include "../common/log.h"
#include "db.h"

#define FP_SPAN (1u << 20)
#define SEAL_CHECK_MAX (64ull << 20)

int idx_fingerprint(struct src *file, char *out, size_t size)
{
	uint64_t n = src_size(file);
	uint8_t *buf = malloc(FP_SPAN);
	uLong head, tail;
	ssize_t r;

	if (!buf)
		return -ENOMEM;
	r = src_pread(file, buf, FP_SPAN, 0);
	if (r < 0)
		goto fail;
	head = crc32(0, buf, (uInt)r);
	r = src_pread(file, buf, FP_SPAN, n > FP_SPAN ? n - FP_SPAN : 0);
	if (r < 0)
		goto fail;
	tail = crc32(0, buf, (uInt)r);
	free(buf);
	snprintf(out, size, "%" PRIu64 ":%08lx:%08lx", n, head, tail);
	return 0;
fail:
	free(buf);
	return (int)r;
}

static bool is_sqlite_file(const char *path)
{
	char magic[16] = {0};
	FILE *f = fopen(path, "rb");
	size_t n;

	if (!f)
		return false;
	n = fread(magic, 1, sizeof(magic), f);
	fclose(f);
	return n == 16 && memcmp(magic, "SQLite format 3", 16) == 0;
}

int idx_validate(const char *index_path, const char *archive, const struct idx_build_opts *o,
		 const char **why)
{
	static char reason[160];
	struct stat ist, ast;
	sqlite3 *db = NULL;
	struct src *file = NULL;
	uint64_t v;
	char *s = NULL, fp[64], opts[64];
	uint8_t head[512];
	int err = -ESTALE;

	*why = "";
	if (stat(index_path, &ist) < 0)
		return -errno;
	if (ist.st_size == 0 || !is_sqlite_file(index_path)) {
		*why = "not an SQLite file";
		return -ENOTSUP;
	}
	/* someone else's file that we did not build and that others could have changed is not
	 * trusted: only ours, root's or the archive owner's, and not writable by others */
	if (stat(archive, &ast) == 0 && ist.st_uid != geteuid() && ist.st_uid != 0 &&
	    ist.st_uid != ast.st_uid) {
		snprintf(reason, sizeof(reason), "owned by uid %u, who is neither you, root nor "
			 "the archive's owner", (unsigned)ist.st_uid);
		*why = reason;
		return -EPERM;
	}
	if (ist.st_uid != geteuid() && (ist.st_mode & 022)) {
		*why = "writable by other users";
		return -EPERM;
	}
	if (db_open_ro(index_path, &db) < 0) {
		*why = "cannot be opened";
		return -ESTALE;
	}
	/* another program's database is never ours to replace: no meta table or no format */
	{
		sqlite3_stmt *st;
		int rc = sqlite3_prepare_v2(db, "SELECT value FROM meta WHERE key = 'format'", -1, &st,
					    NULL);
		if (rc == SQLITE_OK) {
			rc = sqlite3_step(st);
			sqlite3_finalize(st);
		}
		if (rc == SQLITE_DONE || (rc == SQLITE_ERROR && strstr(sqlite3_errmsg(db), "no such"))) {
			*why = "an SQLite database of another program";
			err = -ENOTSUP;
			goto out;
		}
		if (rc != SQLITE_ROW) {
			*why = "damaged";
			goto out;
		}
	}
	s = db_meta_get(db, "complete");
	if (!s || strcmp(s, "1") != 0) {
		*why = "incomplete (an interrupted build, or damaged)";
		goto out;
	}
	if (!db_meta_get_u64(db, "format", &v) || v != IDX_FORMAT) {
		*why = "made by another version of tarseek";
		goto out;
	}
	/* every byte, against the checksum sealed into the header (skipped for very large
	 * indexes, whose pages SQLite still checks for structure) */
	if ((uint64_t)ist.st_size <= SEAL_CHECK_MAX && db_check_seal(index_path) != 0) {
		*why = "damaged (its checksum does not match)";
		goto out;
	}
	if (stat(archive, &ast) < 0) {
		err = -errno;
		goto out;
	}
	if (!db_meta_get_u64(db, "archive_size", &v) || v != (uint64_t)ast.st_size) {
		*why = "the archive's size changed";
		goto out;
	}
	if (!db_meta_get_u64(db, "archive_mtime_ns", &v) ||
	    v != (uint64_t)(ast.st_mtim.tv_sec * 1000000000ll + ast.st_mtim.tv_nsec)) {
		*why = "the archive was modified (its mtime changed)";
		goto out;
	}
	if (src_open_file(archive, &file) < 0) {
		*why = "the archive cannot be read";
		goto out;
	}
	ssize_t hn = src_pread(file, head, sizeof(head), 0);
	const struct codec *c = hn > 0 ? codec_probe(head, (size_t)hn) : NULL;
	free(s);
	s = db_meta_get(db, "codec");
	if (!s || strcmp(s, c ? c->name : "none") != 0) {
		*why = "the archive's format changed";
		goto out;
	}
	idx_options_string(c ? c->name : NULL, o, opts, sizeof(opts));
	free(s);
	s = db_meta_get(db, "options");
	if (!s || strcmp(s, opts) != 0) {
		snprintf(reason, sizeof(reason), "built with other options (%s, now %s)", s ? s : "?", opts);
		*why = reason;
		goto out;
	}
	free(s);
	s = db_meta_get(db, "fingerprint");
	if (idx_fingerprint(file, fp, sizeof(fp)) < 0 || !s || strcmp(s, fp) != 0) {
		*why = "the archive's content changed";
		goto out;
	}
	err = 0;
out:
	free(s);
	src_free(file);
	sqlite3_close(db);
	return err;
}

static uint64_t path_hash(const char *s)
{
	uint64_t h = 0xcbf29ce484222325ull;

	for (; *s; s++)
		h = (h ^ (uint8_t)*s) * 0x100000001b3ull;
	return h;
}

static int mkdirs(const char *dir)
{
	char *p = strdup(dir);
	int err = 0;

	if (!p)
		return -ENOMEM;
	for (char *q = p + 1; *q; q++) {
		if (*q != '/')
			continue;
		*q = '\0';
		if (mkdir(p, 0700) < 0 && errno != EEXIST)
			err = -errno;
		*q = '/';
	}
	if (!err && mkdir(p, 0700) < 0 && errno != EEXIST)
		err = -errno;
	free(p);
	return err;
}

/* True if path (which may not exist yet) lies inside the mount point. */
static bool inside(const char *path, const char *mountpoint)
{
	char dir[PATH_MAX], real_dir[PATH_MAX], real_mnt[PATH_MAX];
	const char *slash = strrchr(path, '/');
	size_t n;

	if (!mountpoint || !realpath(mountpoint, real_mnt))
		return false;
	if (!slash)
		snprintf(dir, sizeof(dir), ".");
	else
		snprintf(dir, sizeof(dir), "%.*s", (int)(slash - path) ? (int)(slash - path) : 1, path);
	if (!realpath(dir, real_dir))
		return false;
	n = strlen(real_mnt);
	return strncmp(real_dir, real_mnt, n) == 0 && (real_dir[n] == '/' || real_dir[n] == '\0');
}

/* NAME.HASH.index.sqlite inside dir. */
static char *folder_path(const char *dir, const char *archive)
{
	char real[PATH_MAX], *out;
	const char *base = strrchr(archive, '/');

	base = base ? base + 1 : archive;
	if (!realpath(archive, real))
		snprintf(real, sizeof(real), "%s", archive);
	if (asprintf(&out, "%s/%s.%016" PRIx64 ".index.sqlite", dir, base, path_hash(real)) < 0)
		return NULL;
	return out;
}

static char *cache_dir(void)
{
	const char *x = getenv("XDG_CACHE_HOME"), *home = getenv("HOME");
	char *out;

	if (x && *x == '/') {
		if (asprintf(&out, "%s/tarseek", x) < 0)
			return NULL;
	} else if (asprintf(&out, "%s/.cache/tarseek", home && *home ? home : "/tmp") < 0) {
		return NULL;
	}
	return out;
}

/* Uses path if valid (0), else builds it when allowed.  -EAGAIN: not usable, try the next
 * location. */
static int use_or_build(const char *path, const char *archive, const struct idx_opts *o,
			bool may_build, bool explicit, bool *built, struct idx_build_stats *stats)
{
	const char *why = "";
	int err = o->recreate ? -ESTALE : idx_validate(path, archive, &o->build, &why);

	if (err == 0)
		return 0;
	if (err == -ENOTSUP) {
		tfs_log(TFS_LOG_ERR, "%s exists and is not a tarseek index (%s): not overwriting it",
			path, why);
		return may_build ? -EEXIST : -EAGAIN;
	}
	if (err == -EPERM) {
		if (!explicit) {
			tfs_log(TFS_LOG_NOTICE, "not using the index %s: %s", path, why);
			return -EAGAIN;
		}
		tfs_log(TFS_LOG_ERR, "not using the index %s: %s; remove it, or choose another "
			"--index-file / --index-folder", path, why);
		return -EPERM;
	}
	if (err != -ENOENT && err != -ESTALE) {
		tfs_log(TFS_LOG_ERR, "cannot use the index %s: %s", path, strerror(-err));
		return err;
	}
	if (!may_build)
		return -EAGAIN;
	if (o->check_only) {
		if (err == -ENOENT)
			tfs_log(TFS_LOG_NOTICE, "no index yet at %s", path);
		else
			tfs_log(TFS_LOG_NOTICE, "index %s is stale: %s", path, why);
		return err;
	}
	if (err == -ESTALE && o->recreate)
		tfs_log(TFS_LOG_INFO, "rebuilding index %s (--recreate-index)", path);
	else if (err == -ESTALE)
		tfs_log(TFS_LOG_NOTICE, "rebuilding index %s: %s", path, why);
	err = idx_build(archive, path, &o->build, stats);
	if (err == 0)
		*built = true;
	else if (err != -EINVAL && err != -EIO)
		tfs_log(TFS_LOG_ERR, "cannot build the index %s: %s", path, strerror(-err));
	return err;
}

static bool dir_writable(const char *path)
{
	char *d = strdup(path), *slash;
	bool ok;

	if (!d)
		return false;
	slash = strrchr(d, '/');
	if (slash == d)
		slash[1] = '\0';
	else if (slash)
		*slash = '\0';
	else
		strcpy(d, ".");
	ok = access(d, W_OK) == 0;
	free(d);
	return ok;
}

int idx_prepare(const char *archive, const struct idx_opts *o, char **path, bool *built,
		struct idx_build_stats *stats)
{
	char *p = NULL, *dir = NULL;
	int err;

	*path = NULL;
	*built = false;
	if (access(archive, R_OK) < 0) {
		err = -errno;
		tfs_log(TFS_LOG_ERR, "cannot read archive %s: %s", archive, strerror(errno));
		return err;
	}
	if (o->index_file) {
		if (inside(o->index_file, o->mountpoint)) {
			tfs_log(TFS_LOG_ERR, "the index file %s cannot be inside the mount point",
				o->index_file);
			return -EINVAL;
		}
		p = strdup(o->index_file);
		err = p ? use_or_build(p, archive, o, true, true, built, stats) : -ENOMEM;
		goto out;
	}
	if (o->index_folder) {
		err = mkdirs(o->index_folder);
		if (err)
			tfs_log(TFS_LOG_ERR, "cannot create the index folder %s: %s", o->index_folder,
				strerror(-err));
		p = err ? NULL : folder_path(o->index_folder, archive);
		if (!err && !p)
			err = -ENOMEM;
		if (!err && inside(p, o->mountpoint)) {
			tfs_log(TFS_LOG_ERR, "the index folder cannot be inside the mount point");
			err = -EINVAL;
		}
		if (!err)
			err = use_or_build(p, archive, o, true, true, built, stats);
		goto out;
	}
	if (asprintf(&p, "%s.index.sqlite", archive) < 0) {
		p = NULL;
		return -ENOMEM;
	}
	if (!inside(p, o->mountpoint)) {
		err = use_or_build(p, archive, o, dir_writable(p), false, built, stats);
		if (err != -EAGAIN)
			goto out;
	}
	free(p);
	dir = cache_dir();
	if (!dir)
		return -ENOMEM;
	err = mkdirs(dir);
	if (err) {
		tfs_log(TFS_LOG_ERR, "cannot create the index folder %s: %s", dir, strerror(-err));
		p = NULL;
		goto out;
	}
	p = folder_path(dir, archive);
	if (!p) {
		err = -ENOMEM;
		goto out;
	}
	if (inside(p, o->mountpoint)) {
		tfs_log(TFS_LOG_ERR, "no place for the index outside the mount point: use --index-file");
		err = -EINVAL;
		goto out;
	}
	err = use_or_build(p, archive, o, true, false, built, stats);
out:
	free(dir);
	if (err) {
		free(p);
		return err;
	}
	*path = p;
	return 0;
}
