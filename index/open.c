/* Opening an archive: its index found, checked, built if needed (see open.h). */
#include "index/open.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <pwd.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "codecs/codec.h"
#include "common/clock.h"
#include "common/log.h"
#include "common/parts.h"
#include "common/size.h"
#include "net/net.h"
#include "index/db.h"
#include "index/nested.h"
#include "index/validate.h"

/* Indexes up to this size are read into memory at the mount (memvfs.h): every query is then
 * served without a system call, and the threads' connections share one copy.  They are read
 * whole at every mount anyway (the seal's checksum, validate.c).  backup.tar.xz's 9.1 MB index,
 * md5 of 1000 files through its shadow, 7 cold runs: 0.388 s from the file, 0.330 s from
 * memory, for a mount 18 ms longer (0.041 -> 0.059 s: the copy). */
#define MEM_INDEX_MAX (32u << 20)
#define INDEX_READAHEAD_MAX ((off_t)256 << 20) /* larger ones are read ahead up to here */

/* ---- building --------------------------------------------------------------------------- */

/* The line that ends every build. */
static void log_summary(const struct idx_input *in, const struct idx_build_stats *st,
			double seconds)
{
	const char *name = strrchr(in->name, '/') ? strrchr(in->name, '/') + 1 : in->name;
	int lvl = in->quiet ? TFS_LOG_DEBUG : TFS_LOG_INFO;
	char *codec = NULL;
	char a[32], u[32];

	format_size(a, sizeof(a), (double)st->archive_size);
	format_size(u, sizeof(u), (double)st->usize);
	if (st->wrapped) {
		tfs_log(lvl, "indexed %s: %s behind its codec, %" PRIu64 " members (%s "
			"decompressed), %" PRIu64 " checkpoints, in %.2f s", name,
			st->inner_single ? "compressed file" : st->container ? st->container
									     : "tar",
			st->members, u, st->checkpoints, seconds);
	} else if (st->single_file) {
		uint8_t head[512];
		ssize_t hn = src_pread(in->src, head, sizeof(head), 0);
		const struct codec *c = hn > 0 ? codec_probe(head, (size_t)hn) : NULL;
		codec = c ? strdup(c->name) : NULL;
		tfs_log(lvl, "indexed %s: one %s file (%s decompressed), %" PRIu64
			" checkpoints, in %.2f s", name, codec ? codec : "?", u, st->checkpoints,
			seconds);
	} else if (st->usize != st->archive_size || st->checkpoints) {
		tfs_log(lvl, "indexed %s: %" PRIu64 " members, %s (%s decompressed), %" PRIu64
			" checkpoints, in %.2f s", name, st->members, a, u, st->checkpoints, seconds);
	} else {
		tfs_log(lvl, "indexed %s: %" PRIu64 " members, %s, in %.2f s", name, st->members, a,
			seconds);
	}
	free(codec);
}

/* Removes what killed builds left beside index_path: INDEX.tmp.PID files whose process is gone
 * and that nobody has written for STALE_TMP_SECONDS (a build on another machine sharing the
 * folder writes all the time). */
#define STALE_TMP_SECONDS 600

static void remove_stale_temps(const char *index_path)
{
	const char *slash = strrchr(index_path, '/');
	char *dir = slash ? strndup(index_path, (size_t)(slash - index_path) + (slash == index_path))
			  : strdup(".");
	const char *base = slash ? slash + 1 : index_path;
	size_t blen = strlen(base);
	DIR *d = dir ? opendir(dir) : NULL;
	struct dirent *de;

	while (d && (de = readdir(d))) {
		const char *name = de->d_name, *num = name + blen + 5;
		char *end, *full;
		struct stat st;
		if (strncmp(name, base, blen) != 0 || strncmp(name + blen, ".tmp.", 5) != 0 || !*num)
			continue;
		long pid = strtol(num, &end, 10);
		if (*end || pid <= 0 || pid == getpid() || kill((pid_t)pid, 0) == 0 || errno != ESRCH)
			continue;
		if (asprintf(&full, "%s/%s", dir, name) < 0)
			break;
		if (lstat(full, &st) == 0 && S_ISREG(st.st_mode) &&
		    time(NULL) - st.st_mtime > STALE_TMP_SECONDS && unlink(full) == 0)
			tfs_log(TFS_LOG_INFO, "removed %s, left by a build that did not finish", full);
		free(full);
	}
	if (d)
		closedir(d);
	free(dir);
}

int idx_build_from(const struct idx_input *in, const char *index_path,
		   const struct idx_build_opts *o, struct idx_build_stats *stats)
{
	struct idx_build_stats st = {0};
	double t0 = mono_now();
	char *tmp;
	int err;

	remove_stale_temps(index_path);
	if (asprintf(&tmp, "%s.tmp.%d", index_path, (int)getpid()) < 0)
		return -ENOMEM;
	err = idx_build_base(in, tmp, o, &st);
	if (!err && st.inner)
		err = idx_wrap(tmp, in, o, &st);
	else if (!err && o->recursion && !st.single_file && st.members)
		err = idx_nest(tmp, in, o);
	if (!err)
		err = idx_build_finish(tmp, in, o);
	if (!err && rename(tmp, index_path) < 0) {
		err = -errno;
		tfs_log(TFS_LOG_ERR, "cannot rename %s to %s: %s", tmp, index_path, strerror(errno));
	}
	if (err) {
		unlink(tmp);
	} else {
		st.seconds = mono_now() - t0;
		log_summary(in, &st, st.seconds);
		if (stats)
			*stats = st;
	}
	free(tmp);
	return err;
}

int idx_build(const char *archive, const char *index_path, const struct idx_build_opts *o,
	      struct idx_build_stats *stats)
{
	struct src *file;
	struct stat sb;
	int err = parts_open(archive, &file); /* a split archive's parts joined */

	if (err) {
		tfs_log(TFS_LOG_ERR, "cannot open %s: %s", archive, strerror(-err));
		return err;
	}
	err = parts_stat(archive, &sb);
	if (err) {
		tfs_log(TFS_LOG_ERR, "cannot stat %s: %s", archive, strerror(-err));
		src_free(file);
		return err;
	}
	struct idx_input in = {
		.src = file,
		.name = archive,
		.mode = sb.st_mode,
		.uid = sb.st_uid,
		.gid = sb.st_gid,
		.mtime = sb.st_mtim.tv_sec,
		.mtime_nsec = (uint32_t)sb.st_mtim.tv_nsec,
	};
	char *shadow = o->shadow != SHADOW_NEVER ? shadow_path(index_path) : NULL;
	in.shadow_path = shadow;
	err = idx_build_from(&in, index_path, o, stats);
	free(shadow);
	src_free(file);
	return err;
}

/* ---- finding ---------------------------------------------------------------------------- */

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

/* $XDG_CACHE_HOME/tarseek, else ~/.cache/tarseek; with no HOME (mount(8) and systemd pass
 * none), /var/cache/tarseek for root and the passwd entry's home for others. */
static char *cache_dir(void)
{
	const char *x = getenv("XDG_CACHE_HOME"), *home = getenv("HOME");
	char *out;

	if (x && *x == '/') {
		if (asprintf(&out, "%s/tarseek", x) < 0)
			return NULL;
		return out;
	}
	if (!home || *home != '/') {
		struct passwd *pw = geteuid() == 0 ? NULL : getpwuid(geteuid());
		if (geteuid() == 0)
			return strdup("/var/cache/tarseek");
		home = pw && pw->pw_dir && *pw->pw_dir == '/' ? pw->pw_dir : "/tmp";
	}
	if (asprintf(&out, "%s/.cache/tarseek", home) < 0)
		return NULL;
	return out;
}

/* What an index is found for: a local file (path), or a remote object (obj, its bytes src). */
struct target {
	const char *name;     /* the path, or the URL as shown: messages and cache names */
	const char *path;     /* a local file, or NULL */
	struct http_obj *obj; /* a remote object, or NULL */
	struct src *src;      /* its bytes (remote only) */
};

static int validate_target(const char *index, const struct target *t, const struct idx_opts *o,
			   struct idx_kept *keep, char *why, size_t whylen)
{
	if (t->path && keep)
		return idx_validate_keep(index, t->path, &o->build, keep, why, whylen);
	if (t->path)
		return idx_validate(index, t->path, &o->build, why, whylen);
	struct idx_subject a = {.src = t->src, .etag = http_etag(t->obj)};
	return idx_validate_remote(index, &a, &o->build, why, whylen);
}

static int build_target(const struct target *t, const char *index, const struct idx_opts *o,
			struct idx_build_stats *stats)
{
	if (t->path)
		return idx_build(t->path, index, &o->build, stats);
	struct idx_input in = {
		.src = t->src,
		.name = t->name,
		.mode = S_IFREG | 0444,
		.uid = geteuid(),
		.gid = getegid(),
		.mtime = http_mtime(t->obj),
		.etag = http_etag(t->obj),
		.last_modified = http_last_modified(t->obj),
	};
	char *shadow = o->build.shadow != SHADOW_NEVER ? shadow_path(index) : NULL;
	in.shadow_path = shadow; /* in the cache folder, beside the index */
	int err = idx_build_from(&in, index, &o->build, stats);
	free(shadow);
	return err;
}

/* Uses path if valid (0), else builds it when allowed.  -EAGAIN: not usable, try the next
 * location. */
static int use_or_build(const char *path, const struct target *t, const struct idx_opts *o,
			bool may_build, bool explicit, bool *built, struct idx_build_stats *stats,
			struct idx_kept *keep)
{
	char why[200] = "";
	int err = o->recreate ? -ESTALE : validate_target(path, t, o, keep, why, sizeof(why));

	if (err == 0)
		return 0;
	if (err == -ENOTSUP) { /* another program's (ratarmount writes the same name beside) */
		if (!explicit) {
			tfs_log(TFS_LOG_NOTICE, "%s is not a tarseek index (%s): leaving it alone",
				path, why);
			return -EAGAIN;
		}
		tfs_log(TFS_LOG_ERR, "%s exists and is not a tarseek index (%s): not overwriting it",
			path, why);
		return -EEXIST;
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
	err = build_target(t, path, o, stats);
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

/* An index that validated against the object by its fingerprint (one built from a local copy
 * records no ETag) learns the object's ETag, so that later mounts check it cheaply; then it is
 * sealed again.  0 or -errno. */
static int adopt_etag(const char *index, const struct target *t)
{
	const char *etag = http_etag(t->obj);
	sqlite3 *db = NULL;
	char *have;
	int err;

	if (!*etag)
		return 0;
	err = db_open_build(index, &db);
	if (err)
		return err;
	have = db_meta_get(db, "remote_etag");
	if (!have || !*have)
		err = db_meta_set(db, "remote_etag", etag);
	free(have);
	if (sqlite3_close(db) != SQLITE_OK && !err)
		err = -EIO;
	return err ? err : db_seal(index);
}

/* The index published beside a remote archive (URL.index.sqlite), fetched into p if it is
 * valid for the object.  0, or -EAGAIN (none, or not valid: said why). */
static int fetch_published(const char *p, const struct target *t, const struct idx_opts *o)
{
	char *tmp, why[200] = "";
	int err;

	if (asprintf(&tmp, "%s.fetch.%d", p, (int)getpid()) < 0)
		return -ENOMEM;
	err = http_download_beside(t->obj, ".index.sqlite", tmp);
	if (err) {
		if (err == -ENOENT)
			tfs_log(TFS_LOG_DEBUG, "%s: no index published beside it", t->name);
		free(tmp);
		return -EAGAIN;
	}
	err = validate_target(tmp, t, o, NULL, why, sizeof(why));
	if (err == 0)
		err = adopt_etag(tmp, t);
	if (err == 0 && rename(tmp, p) < 0)
		err = -errno;
	if (err == 0)
		tfs_log(TFS_LOG_INFO, "using the index published beside %s", t->name);
	else
		tfs_log(TFS_LOG_NOTICE, "not using the index published beside %s: %s", t->name,
			*why ? why : strerror(-err));
	unlink(tmp);
	free(tmp);
	return err ? -EAGAIN : 0;
}

/* Finds (or builds) the index of t at *path.  keep (may be NULL): an index found valid is
 * held in memory there (idx_validate_keep). */
static int prepare(const struct target *t, const struct idx_opts *o, char **path, bool *built,
		   struct idx_build_stats *stats, struct idx_kept *keep)
{
	const char *archive = t->name;
	char *p = NULL, *dir = NULL;
	int err;

	*path = NULL;
	*built = false;
	if (t->path && access(t->path, R_OK) < 0) {
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
		err = p ? use_or_build(p, t, o, true, true, built, stats, keep) : -ENOMEM;
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
			err = use_or_build(p, t, o, true, true, built, stats, keep);
		goto out;
	}
	if (t->path && !o->not_beside) { /* beside the archive */
		if (asprintf(&p, "%s.index.sqlite", archive) < 0) {
			p = NULL;
			return -ENOMEM;
		}
		if (!inside(p, o->mountpoint)) {
			err = use_or_build(p, t, o, dir_writable(p), false, built, stats, keep);
			if (err != -EAGAIN)
				goto out;
		}
		free(p);
	}
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
	if (!t->path) { /* remote: a valid copy here, else the one published beside it */
		err = use_or_build(p, t, o, false, false, built, stats, keep);
		if (err != -EAGAIN)
			goto out;
		if (!o->recreate && !o->check_only && fetch_published(p, t, o) == 0) {
			err = 0;
			goto out;
		}
	}
	err = use_or_build(p, t, o, true, false, built, stats, keep);
	if (err == -EAGAIN) { /* the last place is taken too (said why) */
		tfs_log(TFS_LOG_ERR, "no place for the index of %s: use --index-file or "
			"--index-folder", archive);
		err = -EEXIST;
	}
out:
	free(dir);
	if (err) {
		free(p);
		return err;
	}
	*path = p;
	return 0;
}

static int prepare_local(const char *archive, const struct idx_opts *o, char **path, bool *built,
			 struct idx_build_stats *stats, struct idx_kept *keep)
{
	struct target t = {.name = archive, .path = archive};
	char **parts;
	size_t nparts;
	/* a split archive's parts are all there before its index is looked for (said which is
	 * not); then it is read as one file wherever it is opened (common/parts.h) */
	int err = parts_find(archive, false, &parts, &nparts);

	parts_names_free(parts, nparts);
	return err ? err : prepare(&t, o, path, built, stats, keep);
}

int idx_prepare(const char *archive, const struct idx_opts *o, char **path, bool *built,
		struct idx_build_stats *stats)
{
	return prepare_local(archive, o, path, built, stats, NULL);
}

int idx_prepare_remote(struct http_obj *obj, struct src *src, const struct idx_opts *o,
		       char **path, bool *built, struct idx_build_stats *stats)
{
	struct target t = {.name = http_name(obj), .obj = obj, .src = src};

	return prepare(&t, o, path, built, stats, NULL);
}

/* ---- opening ---------------------------------------------------------------------------- */

/* Asks the kernel to read the index file into the page cache.  SQLite reads an index larger
 * than MEM_INDEX_MAX page by page: cold, every 4 KiB page a lookup touches is one random read of
 * the disk, ~1,200 of them for the md5 workload's 1000 files of backup.tar (a 9 MiB index),
 * where one sequential read of the file costs ~20 ms.  POSIX_FADV_WILLNEED only queues the
 * readahead and returns, so it is issued here, on the opening thread (it was a detached
 * thread of its own: the second mount of an indexed archive is as fast without it). */
static void index_readahead(const char *path)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd >= 0) {
		(void)posix_fadvise(fd, 0, INDEX_READAHEAD_MAX, POSIX_FADV_WILLNEED);
		close(fd);
	}
}

/* Opens the index found at index for data (the archive's, also on error), named name.  kept:
 * the index as validation read it into memory (taken over), or NULL and NULL. */
static int open_found(const char *index, struct src *data, const char *name, const char *shown_as,
		      const struct arch_opts *o, bool built, const struct idx_build_stats *stats,
		      struct idx_kept kept, struct arch **out)
{
	char *shown = realpath(index, NULL), *mem = kept.name;
	sqlite3 *keeper = kept.keeper;
	int err;

	if (!shown) {
		err = -errno;
		tfs_log(TFS_LOG_ERR, "cannot find the index %s: %s", index, strerror(errno));
		src_free(data);
		goto out;
	}
	err = mem ? 0 : db_file_to_mem(shown, MEM_INDEX_MAX, &mem, &keeper);
	if (err == -EFBIG || err == -ENOTSUP) { /* larger, or in WAL mode: read from the file */
		index_readahead(shown);
		err = 0;
	}
	if (err) {
		tfs_log(TFS_LOG_ERR, "cannot load the index %s: %s", shown, strerror(-err));
		src_free(data);
		goto out;
	}
	err = arch_open_index(mem ? mem : shown, shown, data, name, &o->env, out);
	if (err)
		goto out;
	arch_keep(*out, keeper);
	keeper = NULL;
	if (built)
		arch_set_built(*out, stats);
	if (arch_get_info(*out)->damaged && !built)
		tfs_log(TFS_LOG_WARNING, "%s is damaged: the mount shows only what was readable",
			shown_as);
out:
	sqlite3_close(keeper);
	free(shown);
	free(mem);
	return err;
}

static int arch_open_remote(const char *url, const struct arch_opts *o, struct arch **out)
{
	struct idx_build_stats stats = {0};
	struct http_obj *obj;
	struct src *src;
	char *index = NULL;
	bool built = false;
	int err;

	if (!o->env.net) {
		char *shown = http_shown(url);
		tfs_log(TFS_LOG_ERR, "%s: remote archives are not available here", shown ? shown : "?");
		free(shown);
		return -ENOTSUP;
	}
	err = net_open(url, o->env.net, &src, &obj);
	if (err)
		return err; /* logged */
	err = idx_prepare_remote(obj, src, &o->idx, &index, &built, &stats);
	if (err) {
		src_free(src);
		return err;
	}
	err = open_found(index, src, http_name(obj), http_name(obj), o, built, &stats,
			 (struct idx_kept){0}, out);
	free(index);
	return err;
}

int arch_open(const char *archive, const struct arch_opts *o, struct arch **out)
{
	struct idx_build_stats stats = {0};
	struct idx_kept kept = {.max = MEM_INDEX_MAX};
	char *path = NULL, *index = NULL;
	struct src *file = NULL;
	bool built = false;
	int err;

	*out = NULL;
	if (http_is_url(archive))
		return arch_open_remote(archive, o, out);
	/* the daemon changes its working folder when it detaches: keep absolute paths */
	path = realpath(archive, NULL);
	if (!path) {
		err = -errno;
		tfs_log(TFS_LOG_ERR, "cannot read archive %s: %s", archive, strerror(errno));
		goto out;
	}
	err = prepare_local(path, &o->idx, &index, &built, &stats, &kept);
	if (err)
		goto out;
	err = parts_open(path, &file);
	if (err) {
		tfs_log(TFS_LOG_ERR, "cannot open %s: %s", archive, strerror(-err));
		goto out;
	}
	err = open_found(index, file, path, archive, o, built, &stats, kept, out);
	kept = (struct idx_kept){0}; /* taken */
out:
	sqlite3_close(kept.keeper);
	free(kept.name);
	free(path);
	free(index);
	return err;
}
