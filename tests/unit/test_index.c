/* Unit test of the index module's one way of opening an archive (index/open.h) and of what it
 * stands on: building (idx_build, idx_build_from), finding (idx_prepare: the four locations in
 * their order, the mount point excluded, *built, recreate, check_only), the temporary name, the
 * stamp (stamp.h: the fingerprint and the options string) and the nested pass (nested.h).
 * Checking an index (validate.h) is test_validate.c's.
 *
 * The archives are written here by a small ustar writer (no tar program needed); gzip'd ones
 * with zlib.  Every index is opened the way the daemon opens it (arch_open) and walked through
 * the tree interface (tree.h), so a check of "the index is good" is a check of what a mount
 * would show: names in order, modes, sizes, owners, mtimes, bytes.
 *
 * Nothing here sleeps and hopes.  A build held in the middle waits at a gate in its source
 * (TU_WAIT for the builder to be there); the interrupted build is a child killed while it is
 * held, and the parent learns it is held from a pipe, with a timeout.  The checks that need
 * an unprivileged user (an unreadable archive, a folder that is not writable) run in a child
 * that drops to uid 65534 when the test runs as root; those that need other owners (the trust
 * rules) run only as root.
 *
 * test_fixed_issues() at the end keeps the bugs this test found fixed (validate.c's options
 * buffer, arch_lookup in a file, the error-level line for a damaged nested archive).
 */
#include "index/archive.h"
#include "cache/cache.h"
#include "index/db.h"
#include "common/log.h"
#include "index/nested.h"
#include "index/open.h"
#include "index/stamp.h"
#include "mount/tree.h"
#include "index/validate.h"
#include "testutil.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <grp.h>
#include <inttypes.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <zlib.h>
#include "index_fixtures.h"

/* ---- building and opening --------------------------------------------------------------- */

static void check_std_stats(const struct idx_build_stats *st, uint64_t archive_size, uint64_t usize)
{
	CHECK_EQ(st->members, STD_MEMBERS);
	CHECK_EQ(st->archive_size, archive_size);
	CHECK_EQ(st->usize, usize);
	CHECK(!st->single_file);
	CHECK(!st->damaged);
	CHECK(st->seconds >= 0 && st->seconds < 30);
}

/* idx_build of a plain tar file: the stats, the summary line, no temporary file left, a valid
 * index that arch_open uses as it is and whose tree is the archive's. */
static void test_build_plain(void)
{
	const char *dir = pth("%s/build", top);
	const char *ar = pth("%s/a.tar", dir), *ix = pth("%s/a.idx", dir);
	struct idx_opts o = dflt();
	struct idx_build_stats st;
	struct buf t = std_tar();
	struct arch *a = (struct arch *)&o;
	char why[256];

	mkdir_ok(dir);
	write_file(ar, t.p, t.len);
	log_clear();
	memset(&st, 0xff, sizeof(st));
	CHECK_EQ(idx_build(ar, ix, &o.build, &st), 0);
	check_std_stats(&st, t.len, t.len);
	CHECK_EQ(st.checkpoints, 0);
	CHECK(logged(TFS_LOG_INFO, "indexed a.tar", "6 members"));
	CHECK_EQ(dir_count(dir, NULL), 2); /* the archive and its index: no temporary file */
	CHECK_EQ(idx_validate(ix, ar, &o.build, why, sizeof(why)), 0);
	CHECK_STR(why, "");

	o.index_file = ix;
	struct arch_opts ao = aopts(&o);
	struct snap s = snap_of(ix);
	CHECK_EQ(arch_open(ar, &ao, &a), 0);
	CHECK(a != NULL);
	if (a) {
		const struct arch_info *i = arch_get_info(a);
		char *real_ar = realpath(ar, NULL), *real_ix = realpath(ix, NULL);
		CHECK(!i->built);
		CHECK_STR(i->path, real_ar);
		CHECK_STR(i->index, real_ix);
		CHECK_STR(i->codec, "none");
		CHECK(!i->single_file);
		CHECK(!i->damaged);
		CHECK_EQ(i->members, STD_MEMBERS);
		CHECK_EQ(i->entries, STD_ENTRIES);
		CHECK_EQ(i->archive_size, t.len);
		CHECK_EQ(i->usize, t.len);
		check_tree(a, std_tree, std_tree_n);
		arch_close(a);
		free(real_ar);
		free(real_ix);
	}
	struct snap s2 = snap_of(ix);
	CHECK(snap_same(&s, &s2)); /* opened as it was */

	/* stats may be NULL; a file at the index path is replaced */
	write_file(ix, "junk", 4);
	CHECK_EQ(idx_build(ar, ix, &o.build, NULL), 0);
	CHECK_EQ(idx_validate(ix, ar, &o.build, why, sizeof(why)), 0);
	CHECK_EQ(dir_count(dir, NULL), 2);

	/* arch_open builds what is missing and says so */
	unlink(ix);
	a = NULL;
	CHECK_EQ(arch_open(ar, &ao, &a), 0);
	if (a) {
		const struct arch_info *i = arch_get_info(a);
		CHECK(i->built);
		CHECK_EQ(i->build.members, STD_MEMBERS);
		CHECK_EQ(i->build.archive_size, t.len);
		check_tree(a, std_tree, std_tree_n);
		arch_close(a);
	}
	free(t.p);
}

/* idx_build_from over memory: the root takes the input's owner and mtime; quiet keeps the
 * summary line out of the info level.  A .tar.gz (gzwrite): the same tree through the codec,
 * the decompressed size, checkpoints. */
static void test_build_from(void)
{
	const char *dir = pth("%s/from", top);
	const char *ix = pth("%s/mem.idx", dir), *gz = pth("%s/a.tar.gz", dir);
	const char *gix = pth("%s/gz.idx", dir);
	struct idx_build_opts b = {.gzip_spacing = 64 * 1024, .threads = 1};
	struct idx_build_stats st;
	struct buf t = std_tar();
	struct arch *a = NULL;
	struct arch_attr root;
	char why[256];

	mkdir_ok(dir);
	struct idx_input in = {.src = src_from_mem(t.p, t.len),
			       .name = "some/where/mem.tar",
			       .mode = 0100640,
			       .uid = 55,
			       .gid = 66,
			       .mtime = M0 + 100,
			       .mtime_nsec = 7};
	log_clear();
	CHECK_EQ(idx_build_from(&in, ix, &b, &st), 0);
	check_std_stats(&st, t.len, t.len);
	CHECK(logged(TFS_LOG_INFO, "indexed mem.tar", NULL));
	CHECK_EQ(dir_count(dir, NULL), 1);
	CHECK_EQ(arch_open_index(ix, NULL, src_from_mem(t.p, t.len), "mem.tar",
				 &(struct arch_env){.cache = cache}, &a),
		 0);
	if (a) {
		check_tree(a, std_tree, std_tree_n);
		CHECK_EQ(ops->getattr(a, ops->root, &root), 0);
		CHECK_EQ(root.uid, 55);
		CHECK_EQ(root.gid, 66);
		CHECK_EQ(root.mtime, M0 + 100);
		CHECK_EQ(root.mtime_nsec, 7);
		arch_close(a);
	}
	in.quiet = true;
	log_clear();
	CHECK_EQ(idx_build_from(&in, ix, &b, NULL), 0);
	CHECK(!logged(TFS_LOG_INFO, "indexed", NULL));
	src_free(in.src);

	/* gzip */
	write_gz(gz, t.p, t.len);
	struct stat gst;
	CHECK_EQ(stat(gz, &gst), 0);
	log_clear();
	CHECK_EQ(idx_build(gz, gix, &b, &st), 0);
	check_std_stats(&st, (uint64_t)gst.st_size, t.len);
	CHECK(st.checkpoints >= 2); /* 75 KiB decompressed, a checkpoint every 64 KiB */
	CHECK(logged(TFS_LOG_INFO, "indexed a.tar.gz", "decompressed"));
	CHECK_EQ(idx_validate(gix, gz, &b, why, sizeof(why)), 0);
	struct idx_opts o = {.index_file = gix, .build = b};
	struct arch_opts ao = aopts(&o);
	a = NULL;
	CHECK_EQ(arch_open(gz, &ao, &a), 0);
	if (a) {
		const struct arch_info *i = arch_get_info(a);
		CHECK(!i->built);
		CHECK_STR(i->codec, "gzip");
		CHECK_EQ(i->usize, t.len);
		CHECK_EQ(i->archive_size, (uint64_t)gst.st_size);
		check_tree(a, std_tree, std_tree_n);
		arch_close(a);
	}
	free(t.p);
}

/* ---- where the index lives -------------------------------------------------------------- */

static void test_locations(void)
{
	const char *base = pth("%s/loc", top);
	const char *ar = pth("%s/arch/a.tar", base),
		   *beside = pth("%s/arch/a.tar.index.sqlite", base);
	const char *xdg = pth("%s/xdg", base), *home = pth("%s/home", base);
	struct idx_opts o = dflt();
	struct idx_build_stats st;
	char *p, *p2, folder_name[256] = "";
	bool built;

	mkdir_ok(base);
	mkdir_ok(pth("%s/arch", base));
	mkdir_ok(pth("%s/arch2", base));
	mkdir_ok(pth("%s/ar", base));
	mkdir_ok(pth("%s/if", base));
	CHECK_EQ(symlink("arch", pth("%s/archlink", base)), 0);
	write_std_tar(ar);
	write_other_tar(pth("%s/arch2/a.tar", base), "other");
	setenv("XDG_CACHE_HOME", xdg, 1);
	setenv("HOME", home, 1);

	/* 3. beside the archive, its folder being writable; built once, then reused */
	CHECK_EQ(prep(ar, &o, &p, &built, &st), 0);
	CHECK_STR(p, beside);
	CHECK(built);
	CHECK_EQ(st.members, STD_MEMBERS);
	free(p);
	struct snap sb = snap_of(beside);
	CHECK_EQ(prep(ar, &o, &p, &built, NULL), 0);
	CHECK_STR(p, beside);
	CHECK(!built);
	free(p);
	struct snap sb2 = snap_of(beside);
	CHECK(snap_same(&sb, &sb2));
	CHECK(!exists(xdg));

	/* 1. --index-file before everything, --index-folder included */
	o.index_file = pth("%s/if/x.sqlite", base);
	o.index_folder = pth("%s/folder", base);
	CHECK_EQ(prep(ar, &o, &p, &built, NULL), 0);
	CHECK_STR(p, o.index_file);
	CHECK(built);
	free(p);
	CHECK_EQ(prep(ar, &o, &p, &built, NULL), 0);
	CHECK(!built);
	free(p);
	CHECK(!exists(o.index_folder));
	CHECK_EQ(dir_count(pth("%s/if", base), NULL), 1);

	/* 2. --index-folder (made, with its parents) before a valid index beside the archive */
	o.index_file = NULL;
	o.index_folder = pth("%s/folder/deeper", base);
	CHECK_EQ(prep(ar, &o, &p, &built, NULL), 0);
	CHECK(built);
	if (p) {
		check_hashed_name(p, o.index_folder, "a.tar");
		snprintf(folder_name, sizeof(folder_name), "%s", base_of(p));
		CHECK(exists(p));
	}
	/* the HASH is of the canonical path: the same archive by other paths, the same index */
	CHECK_EQ(prep(pth("%s/arch/../arch/a.tar", base), &o, &p2, &built, NULL), 0);
	CHECK_STR(p2, p);
	CHECK(!built);
	free(p2);
	CHECK_EQ(prep(pth("%s/archlink/a.tar", base), &o, &p2, &built, NULL), 0);
	CHECK_STR(p2, p);
	CHECK(!built);
	free(p2);
	/* another archive of the same name: another index */
	CHECK_EQ(prep(pth("%s/arch2/a.tar", base), &o, &p2, &built, NULL), 0);
	CHECK(built);
	if (p && p2) {
		check_hashed_name(p2, o.index_folder, "a.tar");
		CHECK(strcmp(p, p2) != 0);
	}
	free(p2);
	free(p);
	CHECK_EQ(dir_count(o.index_folder, NULL), 2);
	sb2 = snap_of(beside);
	CHECK(snap_same(&sb, &sb2));

	/* 4. the cache, when beside the archive is inside the mount point: NAME.HASH as above */
	o.index_folder = NULL;
	o.mountpoint = pth("%s/arch", base);
	CHECK_EQ(prep(ar, &o, &p, &built, NULL), 0);
	CHECK_STR(p, pth("%s/tarseek/%s", xdg, folder_name));
	CHECK(built);
	free(p);
	sb2 = snap_of(beside);
	CHECK(snap_same(&sb, &sb2));
	/* the mount point by a symlink, or with a trailing slash, is the same folder */
	o.mountpoint = pth("%s/archlink", base);
	CHECK_EQ(prep(ar, &o, &p, &built, NULL), 0);
	CHECK_STR(p, pth("%s/tarseek/%s", xdg, folder_name));
	CHECK(!built);
	free(p);
	o.mountpoint = pth("%s/arch/", base);
	CHECK_EQ(prep(ar, &o, &p, &built, NULL), 0);
	CHECK_STR(p, pth("%s/tarseek/%s", xdg, folder_name));
	free(p);
	/* a folder whose name only starts like the mount point's is not inside it */
	o.mountpoint = pth("%s/ar", base);
	CHECK_EQ(prep(ar, &o, &p, &built, NULL), 0);
	CHECK_STR(p, beside);
	CHECK(!built);
	free(p);

	/* $XDG_CACHE_HOME unset, or not absolute: ~/.cache/tarseek */
	o.mountpoint = pth("%s/arch", base);
	setenv("XDG_CACHE_HOME", "tarseek-test-relative", 1); /* would be in the working folder */
	CHECK_EQ(prep(ar, &o, &p, &built, NULL), 0);
	CHECK_STR(p, pth("%s/.cache/tarseek/%s", home, folder_name));
	CHECK(built);
	free(p);
	CHECK(!exists("tarseek-test-relative"));
	if (exists("tarseek-test-relative"))
		nftw("tarseek-test-relative", rm_one, 16, FTW_DEPTH | FTW_PHYS);
	unsetenv("XDG_CACHE_HOME");
	CHECK_EQ(prep(ar, &o, &p, &built, NULL), 0);
	CHECK_STR(p, pth("%s/.cache/tarseek/%s", home, folder_name));
	CHECK(!built);
	free(p);
	setenv("XDG_CACHE_HOME", xdg, 1);

	/* never inside the mount point */
	log_clear();
	o.index_file = pth("%s/if/inside.sqlite", base);
	o.mountpoint = pth("%s/if", base);
	CHECK_EQ(prep(ar, &o, &p, &built, NULL), -EINVAL);
	CHECK(!exists(o.index_file));
	CHECK(logged(TFS_LOG_ERR, "inside the mount point", NULL));
	o.index_file = NULL;
	o.index_folder = pth("%s/if/folder", base);
	CHECK_EQ(prep(ar, &o, &p, &built, NULL), -EINVAL);
	CHECK(dir_count(o.index_folder, NULL) <= 0);
	o.index_folder = pth("%s/if", base); /* the mount point itself */
	CHECK_EQ(prep(ar, &o, &p, &built, NULL), -EINVAL);
	CHECK_EQ(dir_count(o.index_folder, ".sqlite"), 1); /* x.sqlite of above, nothing new */
	o.index_folder = NULL;
	setenv("XDG_CACHE_HOME", pth("%s/arch/cache", base), 1);
	o.mountpoint = pth("%s/arch", base);
	log_clear();
	CHECK_EQ(prep(ar, &o, &p, &built, NULL), -EINVAL);
	CHECK(dir_count(pth("%s/arch/cache/tarseek", base), NULL) <= 0);
	CHECK(logged(TFS_LOG_ERR, "outside the mount point", NULL));
	setenv("XDG_CACHE_HOME", xdg, 1);
	sb2 = snap_of(beside);
	CHECK(snap_same(&sb, &sb2));
}

/* *built, recreate, check_only. */
static void test_prepare_flags(void)
{
	const char *dir = pth("%s/flags", top);
	const char *ar = pth("%s/a.tar", dir), *ix = pth("%s/i.sqlite", dir);
	struct idx_opts o = dflt();
	char *p;
	bool built;

	mkdir_ok(dir);
	write_std_tar(ar);
	o.index_file = ix;

	/* check_only, nothing there: -ENOENT, logged, nothing made */
	o.check_only = true;
	log_clear();
	CHECK_EQ(prep(ar, &o, &p, &built, NULL), -ENOENT);
	CHECK(!exists(ix));
	CHECK_EQ(dir_count(dir, NULL), 1);
	CHECK(logged(TFS_LOG_NOTICE, "no index", ix));

	o.check_only = false;
	CHECK_EQ(prep(ar, &o, &p, &built, NULL), 0);
	CHECK(built);
	free(p);
	struct snap s = snap_of(ix);

	/* check_only, valid: used */
	o.check_only = true;
	CHECK_EQ(prep(ar, &o, &p, &built, NULL), 0);
	CHECK_STR(p, ix);
	CHECK(!built);
	free(p);

	/* recreate: built again, under a new name renamed into place (a new inode) */
	o.check_only = false;
	o.recreate = true;
	log_clear();
	CHECK_EQ(prep(ar, &o, &p, &built, NULL), 0);
	CHECK(built);
	free(p);
	struct snap s2 = snap_of(ix);
	CHECK(s2.ok && s2.ino != s.ino);
	CHECK(logged(TFS_LOG_INFO, "rebuilding", "recreate"));
	char why[256];
	CHECK_EQ(idx_validate(ix, ar, &o.build, why, sizeof(why)), 0);
	CHECK_EQ(dir_count(dir, NULL), 2);

	/* check_only wins over recreate: nothing is built */
	o.check_only = true;
	CHECK(prep(ar, &o, &p, &built, NULL) < 0);
	struct snap s3 = snap_of(ix);
	CHECK(snap_same(&s2, &s3));

	/* check_only, stale: -ESTALE with the reason, the index left as it is */
	o.recreate = false;
	append_member(ar);
	log_clear();
	CHECK_EQ(prep(ar, &o, &p, &built, NULL), -ESTALE);
	s3 = snap_of(ix);
	CHECK(snap_same(&s2, &s3));
	CHECK(logged(TFS_LOG_NOTICE, "stale", "size"));
	CHECK_EQ(dir_count(dir, NULL), 2);

	/* and without check_only it is rebuilt */
	o.check_only = false;
	struct idx_build_stats st = {0};
	CHECK_EQ(prep(ar, &o, &p, &built, &st), 0);
	CHECK(built);
	CHECK_EQ(st.members, STD_MEMBERS + 1);
	free(p);
}

/* ---- failures --------------------------------------------------------------------------- */

static void test_failures(void)
{
	const char *dir = pth("%s/fail", top), *folder = pth("%s/fail/folder", top);
	const char *noise = pth("%s/noise.bin", dir), *ix = pth("%s/i.sqlite", dir);
	const char *badgz = pth("%s/bad.tar.gz", dir), *ar = pth("%s/a.tar", dir);
	struct idx_opts o = dflt();
	struct arch *a = (struct arch *)&o;
	uint8_t junk[5000];
	char *p;
	bool built;

	mkdir_ok(dir);
	tu_fill(junk, sizeof(junk), 9, 0);

	/* a missing archive */
	log_clear();
	CHECK_EQ(prep(pth("%s/none.tar", dir), &o, &p, &built, NULL), -ENOENT);
	CHECK(logged(TFS_LOG_ERR, "none.tar", NULL));
	struct arch_opts ao = aopts(&o);
	CHECK_EQ(arch_open(pth("%s/none.tar", dir), &ao, &a), -ENOENT);
	CHECK(a == NULL);
	log_clear();
	CHECK_EQ(idx_build(pth("%s/none.tar", dir), ix, &o.build, NULL), -ENOENT);
	CHECK(logged(TFS_LOG_ERR, "none.tar", NULL));
	CHECK_EQ(dir_count(dir, NULL), 0);

	/* not an archive: -EINVAL, said, nothing left (no index, no temporary file) */
	write_file(noise, junk, sizeof(junk));
	o.index_folder = folder;
	log_clear();
	CHECK_EQ(prep(noise, &o, &p, &built, NULL), -EINVAL);
	CHECK(logged(TFS_LOG_ERR, "noise.bin", "not an archive"));
	CHECK_EQ(dir_count(folder, NULL), 0);
	ao = aopts(&o);
	a = (struct arch *)&o;
	CHECK_EQ(arch_open(noise, &ao, &a), -EINVAL);
	CHECK(a == NULL);
	CHECK_EQ(dir_count(folder, NULL), 0);
	CHECK_EQ(idx_build(noise, ix, &o.build, NULL), -EINVAL);
	CHECK_EQ(dir_count(dir, NULL), 2); /* noise.bin, folder/ */

	/* damaged before anything could be indexed: -EIO */
	uint8_t gz[300] = {0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 3};
	memcpy(gz + 10, junk, sizeof(gz) - 10);
	write_file(badgz, gz, sizeof(gz));
	log_clear();
	CHECK_EQ(prep(badgz, &o, &p, &built, NULL), -EIO);
	CHECK(logged(TFS_LOG_ERR, "bad.tar.gz", NULL));
	CHECK_EQ(dir_count(folder, NULL), 0);
	a = (struct arch *)&o;
	CHECK_EQ(arch_open(badgz, &ao, &a), -EIO);
	CHECK(a == NULL);
	CHECK_EQ(dir_count(folder, NULL), 0);

	/* an index that cannot be written (its folder is missing): an error, nothing left */
	write_std_tar(ar);
	o.index_folder = NULL;
	o.index_file = pth("%s/missing/i.sqlite", dir);
	log_clear();
	CHECK(prep(ar, &o, &p, &built, NULL) < 0);
	CHECK(logged(TFS_LOG_ERR, "missing/i.sqlite", NULL));
	CHECK(!exists(pth("%s/missing", dir)));

	/* a build that fails at its last step (the rename into place: a folder is there)
	 * leaves no temporary file */
	mkdir_ok(pth("%s/taken", dir));
	write_file(pth("%s/taken/x", dir), "x", 1);
	log_clear();
	CHECK(idx_build(ar, pth("%s/taken", dir), &o.build, NULL) < 0);
	CHECK(logged(TFS_LOG_ERR, "cannot rename", NULL));
	CHECK_EQ(dir_count(dir, "taken"), 1);
	CHECK_EQ(dir_count(pth("%s/taken", dir), NULL), 1);
	nftw(pth("%s/taken", dir), rm_one, 16, FTW_DEPTH | FTW_PHYS);

	/* a stale index whose rebuild fails stays as it was; nothing else is left */
	o.index_file = ix;
	CHECK_EQ(prep(ar, &o, &p, &built, NULL), 0);
	free(p);
	struct snap s = snap_of(ix);
	write_file(ar, junk, sizeof(junk));
	CHECK_EQ(prep(ar, &o, &p, &built, NULL), -EINVAL);
	struct snap s2 = snap_of(ix);
	CHECK(snap_same(&s, &s2));
	CHECK_EQ(dir_count(dir, ".tmp"), 0);
	CHECK_EQ(dir_count(dir, NULL), 5); /* noise.bin, folder/, bad.tar.gz, a.tar, i.sqlite */
}

/* ---- the temporary name ----------------------------------------------------------------- */

/* A source held at a gate: the first read that reaches gate.at waits while the gate is
 * closed (in a child: tells the parent through notify_fd, then waits for good). */
static struct {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	bool closed;
	atomic_int held;
	uint64_t at;
	int notify_fd;
} gate = {.lock = PTHREAD_MUTEX_INITIALIZER, .cond = PTHREAD_COND_INITIALIZER, .notify_fd = -1};

static ssize_t gate_pread(void *opaque, void *buf, size_t len, uint64_t off)
{
	if (off + len > gate.at) {
		pthread_mutex_lock(&gate.lock);
		if (gate.closed) {
			atomic_store(&gate.held, 1);
			if (gate.notify_fd >= 0 && write(gate.notify_fd, "h", 1) != 1)
				_exit(2);
			while (gate.closed)
				pthread_cond_wait(&gate.cond, &gate.lock);
			atomic_store(&gate.held, 0);
		}
		pthread_mutex_unlock(&gate.lock);
	}
	return src_pread(opaque, buf, len, off);
}

static void gate_src_close(void *opaque)
{
	src_free(opaque);
}

static const struct src_ops gate_ops = {.pread = gate_pread, .close = gate_src_close};

static void gate_open(void)
{
	pthread_mutex_lock(&gate.lock);
	gate.closed = false;
	pthread_cond_broadcast(&gate.cond);
	pthread_mutex_unlock(&gate.lock);
}

struct held_build {
	struct idx_input in;
	const char *ix;
	struct idx_build_opts b;
	int err;
};

static void *held_build_main(void *arg)
{
	struct held_build *h = arg;

	h->err = idx_build_from(&h->in, h->ix, &h->b, NULL);
	return NULL;
}

/* While a build runs, the index is not at its path, only under another name beside it; once
 * done it is there and nothing else is.  A build killed in the middle leaves nothing at the
 * index's path, and the next build there works. */
static void test_temp_name(void)
{
	const char *dir = pth("%s/tmpname", top), *ix = pth("%s/i.sqlite", dir);
	struct buf t = std_tar();
	struct held_build h = {.ix = ix, .b = {.gzip_spacing = MIB, .threads = 1}, .err = 1};
	struct arch *a = NULL;
	pthread_t th;

	mkdir_ok(dir);
	h.in = (struct idx_input){.src = src_new(&gate_ops, src_from_mem(t.p, t.len), t.len),
				  .name = "held.tar",
				  .mode = 0100644,
				  .mtime = M0};
	gate.at = 1536; /* the second member's header: the build has begun */
	gate.closed = true;
	CHECK_EQ(pthread_create(&th, NULL, held_build_main, &h), 0);
	TU_WAIT(atomic_load(&gate.held));
	CHECK(!exists(ix));
	CHECK_EQ(dir_count(dir, NULL), 1);
	const char *tmp = dir_find(dir, "i.sqlite");
	CHECK(tmp != NULL);
	gate_open();
	pthread_join(th, NULL);
	CHECK_EQ(h.err, 0);
	CHECK(exists(ix));
	CHECK(tmp == NULL || !exists(tmp));
	CHECK_EQ(dir_count(dir, NULL), 1);
	CHECK_EQ(arch_open_index(ix, NULL, src_from_mem(t.p, t.len), "held.tar",
				 &(struct arch_env){.cache = cache}, &a),
		 0);
	if (a)
		check_tree(a, std_tree, std_tree_n);
	arch_close(a);
	unlink(ix);

	/* killed while held */
	int pfd[2];
	CHECK_EQ(pipe(pfd), 0);
	fflush(stderr);
	pid_t pid = fork();
	if (pid == 0) {
		close(pfd[0]);
		tu_watchdog(20);
		gate.notify_fd = pfd[1];
		gate.closed = true;
		idx_build_from(&h.in, ix, &h.b, NULL);
		_exit(3); /* the gate stays closed: never here */
	}
	CHECK(pid > 0);
	close(pfd[1]);
	struct pollfd pf = {.fd = pfd[0], .events = POLLIN};
	CHECK_EQ(poll(&pf, 1, 20000), 1); /* the child is held in the middle of its build */
	kill(pid, SIGKILL);
	int status = 0;
	CHECK_EQ(waitpid(pid, &status, 0), pid);
	CHECK(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
	close(pfd[0]);
	CHECK(!exists(ix));
	const char *left = dir_find(dir, "i.sqlite"); /* the dead build's temporary file */
	CHECK(left != NULL);
	char why[256];
	if (left)
		CHECK(idx_validate(left, "held.tar", &h.b, why, sizeof(why)) != 0);
	h.err = 1;
	held_build_main(&h);
	CHECK_EQ(h.err, 0);
	a = NULL;
	CHECK_EQ(arch_open_index(ix, NULL, src_from_mem(t.p, t.len), "held.tar",
				 &(struct arch_env){.cache = cache}, &a),
		 0);
	if (a)
		check_tree(a, std_tree, std_tree_n);
	arch_close(a);
	/* the dead build's file was written just now: kept (a build elsewhere may own it) */
	CHECK(left == NULL || exists(left));
	/* unwritten for an hour and its process gone: the next build removes it, but not one
	 * whose process lives (our parent's pid) */
	const char *live = pth("%s.tmp.%d", ix, (int)getppid());
	write_file(live, "x", 1);
	struct timespec old[2] = {{time(NULL) - 3600, 0}, {time(NULL) - 3600, 0}};
	CHECK_EQ(utimensat(AT_FDCWD, live, old, 0), 0);
	if (left)
		CHECK_EQ(utimensat(AT_FDCWD, left, old, 0), 0);
	unlink(ix);
	log_clear();
	h.err = 1;
	held_build_main(&h);
	CHECK_EQ(h.err, 0);
	CHECK(left == NULL || !exists(left));
	CHECK(left == NULL || logged(TFS_LOG_INFO, "did not finish", left));
	CHECK(exists(live));
	unlink(live);
	if (left)
		unlink(left);
	CHECK_EQ(dir_count(dir, NULL), 1);
	src_free(h.in.src);
	free(t.p);
}

/* ---- an unprivileged user --------------------------------------------------------------- */

/* Runs fn as an unprivileged user: in a child of uid and gid NOBODY when the test runs as
 * root, else here.  Its failures count as the test's. */
static void as_user(void (*fn)(void))
{
	if (geteuid() != 0) {
		fn();
		return;
	}
	fflush(stderr);
	pid_t pid = fork();
	if (pid == 0) {
		tu_watchdog(20);
		tu_failures = 0;
		if (setgroups(0, NULL) < 0 || setgid(NOBODY) < 0 || setuid(NOBODY) < 0) {
			fprintf(stderr, "as_user: cannot become uid %d (%s): skipped\n", NOBODY,
				strerror(errno));
			_exit(77);
		}
		fn();
		_exit(tu_failures ? 1 : 0);
	}
	int status = 0;
	CHECK(pid > 0);
	CHECK_EQ(waitpid(pid, &status, 0), pid);
	CHECK(WIFEXITED(status) && (WEXITSTATUS(status) == 0 || WEXITSTATUS(status) == 77));
}

static const char *user_dir(void)
{
	return pth("%s/user", top);
}

static void user_checks(void)
{
	const char *ro = pth("%s/ro", user_dir()), *xdg = pth("%s/xdg", user_dir());
	const char *ar = pth("%s/a.tar", ro), *prebuilt = pth("%s/b.tar", ro);
	const char *stale = pth("%s/c.tar", ro), *secret = pth("%s/secret.tar", user_dir());
	struct idx_opts o = dflt();
	struct arch *a = (struct arch *)&o;
	char *p;
	bool built;

	setenv("XDG_CACHE_HOME", xdg, 1);
	/* 3. beside the archive only if its folder is writable: else the cache */
	CHECK_EQ(prep(ar, &o, &p, &built, NULL), 0);
	CHECK(built);
	if (p)
		check_hashed_name(p, pth("%s/tarseek", xdg), "a.tar");
	free(p);
	CHECK(!exists(pth("%s.index.sqlite", ar)));
	/* ... or if a valid index is there (a prebuilt one, shared with the archive) */
	CHECK_EQ(prep(prebuilt, &o, &p, &built, NULL), 0);
	CHECK_STR(p, pth("%s.index.sqlite", prebuilt));
	CHECK(!built);
	free(p);
	/* a stale one there is left alone */
	struct snap s = snap_of(pth("%s.index.sqlite", stale));
	CHECK_EQ(prep(stale, &o, &p, &built, NULL), 0);
	CHECK(built);
	if (p)
		check_hashed_name(p, pth("%s/tarseek", xdg), "c.tar");
	free(p);
	struct snap s2 = snap_of(pth("%s.index.sqlite", stale));
	CHECK(snap_same(&s, &s2));
	/* check_only finds nothing in either */
	o.check_only = true;
	CHECK_EQ(prep(pth("%s/d.tar", ro), &o, &p, &built, NULL), -ENOENT);
	o.check_only = false;
	/* an archive we may not read */
	log_clear();
	CHECK_EQ(prep(secret, &o, &p, &built, NULL), -EACCES);
	CHECK(logged(TFS_LOG_ERR, "secret.tar", NULL));
	struct arch_opts ao = aopts(&o);
	CHECK_EQ(arch_open(secret, &ao, &a), -EACCES);
	CHECK(a == NULL);
	o.index_file = pth("%s/secret.idx", xdg);
	CHECK_EQ(prep(secret, &o, &p, &built, NULL), -EACCES);
	CHECK(!exists(o.index_file));
	CHECK_EQ(idx_build(secret, o.index_file, &o.build, NULL), -EACCES);
	CHECK(!exists(o.index_file));
	CHECK_EQ(dir_count(xdg, ".tmp"), 0);
}

static void test_unprivileged(void)
{
	const char *u = user_dir(), *ro = pth("%s/ro", u);
	struct idx_build_opts b = dflt().build;
	uid_t who = geteuid() == 0 ? NOBODY : geteuid();
	gid_t grp = geteuid() == 0 ? NOBODY : getegid();

	mkdir_ok(u);
	mkdir_ok(ro);
	mkdir_ok(pth("%s/xdg", u));
	write_std_tar(pth("%s/a.tar", ro));
	write_std_tar(pth("%s/b.tar", ro));
	write_std_tar(pth("%s/c.tar", ro));
	write_std_tar(pth("%s/d.tar", ro));
	build_ok(pth("%s/b.tar", ro), pth("%s/b.tar.index.sqlite", ro), &b);
	build_ok(pth("%s/c.tar", ro), pth("%s/c.tar.index.sqlite", ro), &b);
	append_member(pth("%s/c.tar", ro));
	write_std_tar(pth("%s/secret.tar", u));
	CHECK_EQ(chmod(pth("%s/secret.tar", u), 0), 0);
	CHECK_EQ(chown(u, who, grp), 0);
	CHECK_EQ(chown(pth("%s/xdg", u), who, grp), 0);
	CHECK_EQ(chown(ro, who, grp), 0);
	CHECK_EQ(chmod(ro, 0555), 0);
	CHECK_EQ(chmod(top, 0755), 0);
	as_user(user_checks);
	CHECK_EQ(chmod(ro, 0755), 0);
	setenv("XDG_CACHE_HOME", pth("%s/loc/xdg", top), 1);
}

/* ---- the stamp -------------------------------------------------------------------------- */

/* What stamp.h promises: "size:crc-head:crc-tail", CRC32s of the first and the last MiB. */
static void fp_promised(const uint8_t *d, size_t n, char *out, size_t size)
{
	size_t span = n < MIB ? n : MIB;

	snprintf(out, size, "%zu:%08lx:%08lx", n, crc32(0, d, (uInt)span),
		 crc32(0, d + n - span, (uInt)span));
}

static void fp_mem(const uint8_t *d, size_t n, char *out)
{
	struct src *s = src_from_mem(d, n);

	strcpy(out, "unset");
	CHECK_EQ(idx_fingerprint(s, out, 64), 0);
	src_free(s);
}

/* The fingerprint of d changes when its byte at off does (changes true), or stays. */
static void fp_change_at(int line, uint8_t *d, size_t n, size_t off, bool changes)
{
	char a[64], b[64];

	fp_mem(d, n, a);
	d[off] ^= 0x5a;
	fp_mem(d, n, b);
	d[off] ^= 0x5a;
	if ((strcmp(a, b) != 0) != changes) {
		fprintf(stderr,
			"%s:%d: a byte changed at %zu of %zu: fingerprint %s -> %s, "
			"expected it %s\n",
			__FILE__, line, off, n, a, b, changes ? "to change" : "to stay");
		tu_failures++;
	}
}
#define fp_change(...) fp_change_at(__LINE__, __VA_ARGS__)

static void test_fingerprint(void)
{
	const size_t sizes[] = {0,	 1,	      100,     MIB - 1,	    MIB,
				MIB + 1, 3 * MIB / 2, 2 * MIB, 2 * MIB + 1, 3 * MIB};
	size_t n = 3 * MIB;
	uint8_t *d = malloc(n + 1);
	char got[64], want[64];

	if (!d)
		abort();
	tu_fill(d, n + 1, 77, 0);
	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		fp_mem(d, sizes[i], got);
		fp_promised(d, sizes[i], want, sizeof(want));
		CHECK_STR(got, want);
	}
	/* a small archive: every byte is in the head and the tail */
	fp_change(d, 100, 0, true);
	fp_change(d, 100, 50, true);
	fp_change(d, 100, 99, true);
	/* up to 2 MiB: every byte is in the first or the last MiB */
	fp_change(d, 3 * MIB / 2, 0, true);
	fp_change(d, 3 * MIB / 2, 3 * MIB / 4, true);
	fp_change(d, 3 * MIB / 2, 3 * MIB / 2 - 1, true);
	/* larger: the first and the last MiB, to their edges; what lies between is not
	 * sampled (validation also compares the size and the mtime) */
	fp_change(d, n, 0, true);
	fp_change(d, n, MIB - 1, true);
	fp_change(d, n, n - MIB, true);
	fp_change(d, n, n - 1, true);
	fp_change(d, n, MIB, false);
	fp_change(d, n, n / 2, false);
	fp_change(d, n, n - MIB - 1, false);
	/* the size: one more byte */
	fp_mem(d, 100, got);
	fp_mem(d, 101, want);
	CHECK(strcmp(got, want) != 0);
	/* a short buffer: truncated, terminated */
	struct src *s = src_from_mem(d, 100);
	char small[8];
	CHECK_EQ(idx_fingerprint(s, small, sizeof(small)), 0);
	CHECK_EQ(strlen(small), 7);
	CHECK(strncmp(small, "100:", 4) == 0);
	src_free(s);

	/* a file: its mtime alone changes nothing */
	const char *f = pth("%s/fp.bin", top);
	write_file(f, d, 200000);
	CHECK_EQ(src_open_file(f, &s), 0);
	CHECK_EQ(idx_fingerprint(s, got, sizeof(got)), 0);
	src_free(s);
	fp_promised(d, 200000, want, sizeof(want));
	CHECK_STR(got, want);
	struct timespec t = {.tv_sec = M0, .tv_nsec = 123};
	set_mtime(f, t);
	CHECK_EQ(src_open_file(f, &s), 0);
	CHECK_EQ(idx_fingerprint(s, want, sizeof(want)), 0);
	src_free(s);
	CHECK_STR(want, got);
	poke(f, 100000, 1, true);
	CHECK_EQ(src_open_file(f, &s), 0);
	CHECK_EQ(idx_fingerprint(s, want, sizeof(want)), 0);
	src_free(s);
	CHECK(strcmp(want, got) != 0);
	unlink(f);
	free(d);
}

/* idx_options_string: the options that shape the index of this kind of archive, and only
 * those, make the string differ. */
static void opts_differ_at(int line, const char *codec, const struct idx_build_opts *a,
			   const struct idx_build_opts *b, bool differ)
{
	char sa[256], sb[256];

	memset(sa, 'x', sizeof(sa));
	memset(sb, 'y', sizeof(sb));
	idx_options_string(codec, a, sa, sizeof(sa));
	idx_options_string(codec, b, sb, sizeof(sb));
	CHECK(strlen(sa) > 0 && strlen(sa) < sizeof(sa));
	CHECK(strlen(sb) > 0 && strlen(sb) < sizeof(sb));
	if ((strcmp(sa, sb) != 0) != differ) {
		fprintf(stderr,
			"%s:%d: options of a %s archive: \"%s\" and \"%s\", expected them "
			"%s\n",
			__FILE__, line, codec ? codec : "plain", sa, sb,
			differ ? "to differ" : "the same");
		tu_failures++;
	}
}
#define opts_differ(...) opts_differ_at(__LINE__, __VA_ARGS__)

/* A progress callback: whether a build reports its progress does not shape its index. */
static void no_progress(void *opaque, const struct idx_progress *p)
{
}

static void test_options_string(void)
{
	const struct idx_build_opts o = {.gzip_spacing = 4 * MIB, .threads = 1};
	struct idx_build_opts x;
	const char *codecs[] = {NULL, "gzip", "xz", "bzip2"};

	for (size_t c = 0; c < sizeof(codecs) / sizeof(codecs[0]); c++) {
		const char *k = codecs[c];
		bool gzip = k && strcmp(k, "gzip") == 0;
		x = o;
		x.threads = 8;
		x.progress = no_progress;
		opts_differ(k, &o, &x, false);
		x = o;
		x.gzip_spacing = MIB;
		opts_differ(k, &o, &x, gzip); /* checkpoints only gzip places by it */
		x = o;
		x.ignore_zeros = true;
		opts_differ(k, &o, &x, true);
		x = o;
		x.recursion = 1;
		opts_differ(k, &o, &x, true);
		struct idx_build_opts y = x;
		y.recursion = 2;
		opts_differ(k, &x, &y, true);
		y = x;
		y.strip_ext = true;
		opts_differ(k, &x, &y, true);
		x = o;
		x.strip_ext = true; /* nothing nested: nothing to strip */
		opts_differ(k, &o, &x, false);
		x = o;
		x.recursion = 1;
		x.ignore_zeros = true;
		y = o;
		y.recursion = 1; /* each option its own field: no two sets read the same */
		opts_differ(k, &x, &y, true);
	}
	/* no spacing asked for: gzip's dense one, but 4 MiB under --shadow always (the shadow
	 * serves the reads), and the string tells the two apart */
	char sa[IDX_OPTIONS_MAX], sb[IDX_OPTIONS_MAX];
	x = (struct idx_build_opts){.gzip_spacing = 4 * MIB, .spacing_any = true, .threads = 1};
	CHECK(idx_stream_spacing(&x, "gzip") == IDX_GZIP_SPACING_DEFAULT);
	CHECK(idx_stream_spacing(&x, "xz") == 4 * MIB);
	idx_options_string("gzip", &x, sa, sizeof(sa));
	x.shadow = SHADOW_AUTO;
	CHECK(idx_stream_spacing(&x, "gzip") == IDX_GZIP_SPACING_DEFAULT);
	x.shadow = SHADOW_ALWAYS;
	CHECK(idx_stream_spacing(&x, "gzip") == IDX_SPACING_DEFAULT);
	idx_options_string("gzip", &x, sb, sizeof(sb));
	CHECK(strcmp(sa, "gzip_spacing=262144;") == 0 && strcmp(sb, "gzip_spacing=4194304;") == 0);
	x.spacing_any = false; /* asked for: as asked, whatever the shadow */
	x.gzip_spacing = MIB;
	CHECK(idx_stream_spacing(&x, "gzip") == MIB);
	/* a short buffer: truncated, terminated */
	char small[12];
	x = (struct idx_build_opts){
	    .gzip_spacing = 4 * MIB, .recursion = 3, .strip_ext = true, .ignore_zeros = true};
	memset(small, 'x', sizeof(small));
	idx_options_string("gzip", &x, small, sizeof(small));
	CHECK(memchr(small, '\0', sizeof(small)) != NULL);
}

/* ---- archives inside the archive -------------------------------------------------------- */

static uint8_t d_note[100];

static const struct want inner_tree[] = {
    {"x.txt", S_IFREG | 0644, sizeof(d_a), M0 + 10, 3, 4, d_a, NULL},
    {"y", S_IFDIR | 0555, 0, M0 + 11, 3, 4, NULL, NULL},
    {"y/z.txt", S_IFREG | 0600, sizeof(d_deep), M0 + 11, 3, 4, d_deep, NULL},
};

static struct buf inner_tar(void)
{
	const struct member m[] = {
	    {.name = "x.txt",
	     .type = '0',
	     .mode = 0644,
	     .uid = 3,
	     .gid = 4,
	     .mtime = M0 + 10,
	     .data = d_a,
	     .size = sizeof(d_a)},
	    {.name = "y/z.txt",
	     .type = '0',
	     .mode = 0600,
	     .uid = 3,
	     .gid = 4,
	     .mtime = M0 + 11,
	     .data = d_deep,
	     .size = sizeof(d_deep)},
	};
	return tar_of(m, 2);
}

/* The member at path of a is an archive shown as a folder, whose tree is w. */
static void check_nested_at(int line, struct arch *a, const char *path, const struct want *w,
			    size_t n)
{
	struct arch_attr at;
	struct arch *in = NULL;
	int before = tu_failures;

	CHECK_EQ(resolve(a, path, &at), 0);
	CHECK(at.flags & ARCH_A_NESTED);
	CHECK(S_ISDIR(at.mode));
	CHECK_EQ(arch_nested(a, at.ino, &in), 0);
	if (in)
		check_tree(in, w, n);
	arch_close(in);
	if (tu_failures != before)
		fprintf(stderr, "    (the archive %s, in the case at line %d)\n", path, line);
}
#define check_nested(...) check_nested_at(__LINE__, __VA_ARGS__)

/* The member at path of a is a plain file of these bytes. */
static void check_plain_at(int line, struct arch *a, const char *path, const uint8_t *d, size_t n)
{
	struct arch_attr at;
	int before = tu_failures;

	CHECK_EQ(resolve(a, path, &at), 0);
	CHECK(S_ISREG(at.mode));
	CHECK(!(at.flags & ARCH_A_NESTED));
	CHECK_EQ(at.size, n);
	check_bytes(a, at.ino, d, n);
	if (tu_failures != before)
		fprintf(stderr, "    (the file %s, in the case at line %d)\n", path, line);
}
#define check_plain(...) check_plain_at(__LINE__, __VA_ARGS__)

static void test_nested(void)
{
	const char *dir = pth("%s/nest", top);
	const char *ar = pth("%s/outer.tar", dir), *ix = pth("%s/i.sqlite", dir);
	struct buf in = inner_tar(), gz = gzip_of(in.p, in.len);
	uint8_t broken[120] = {0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 3};
	struct idx_opts o = dflt();
	struct arch *a = NULL, *mid = NULL;
	struct arch_attr at;
	char *p;
	bool built;

	mkdir_ok(dir);
	tu_fill(d_note, sizeof(d_note), 5, 1);
	tu_fill(broken + 10, sizeof(broken) - 10, 6, 0);
	const struct member mm[] = {
	    {.name = "inner.tar",
	     .type = '0',
	     .mode = 0644,
	     .mtime = M0,
	     .data = in.p,
	     .size = in.len},
	    {.name = "m.txt",
	     .type = '0',
	     .mode = 0644,
	     .mtime = M0,
	     .data = d_note,
	     .size = sizeof(d_note)},
	};
	struct buf mt = tar_of(mm, 2);
	const struct member om[] = {
	    {.name = "one.tar",
	     .type = '0',
	     .mode = 0644,
	     .mtime = M0 + 20,
	     .data = in.p,
	     .size = in.len},
	    {.name = "two.tar.gz",
	     .type = '0',
	     .mode = 0640,
	     .mtime = M0 + 21,
	     .data = gz.p,
	     .size = gz.len},
	    {.name = "three",
	     .type = '0',
	     .mode = 0644,
	     .mtime = M0,
	     .data = d_note,
	     .size = sizeof(d_note)},
	    {.name = "three.tar",
	     .type = '0',
	     .mode = 0644,
	     .mtime = M0,
	     .data = in.p,
	     .size = in.len},
	    {.name = "mid.tar",
	     .type = '0',
	     .mode = 0644,
	     .mtime = M0,
	     .data = mt.p,
	     .size = mt.len},
	    {.name = "broken.tar.gz",
	     .type = '0',
	     .mode = 0644,
	     .mtime = M0,
	     .data = broken,
	     .size = sizeof(broken)},
	    {.name = "notes.txt",
	     .type = '0',
	     .mode = 0644,
	     .mtime = M0,
	     .data = d_note,
	     .size = sizeof(d_note)},
	};
	struct buf ot = tar_of(om, 7);
	write_file(ar, ot.p, ot.len);
	o.index_file = ix;

	/* without recursion: files */
	struct arch_opts ao = aopts(&o);
	CHECK_EQ(arch_open(ar, &ao, &a), 0);
	if (a) {
		check_plain(a, "one.tar", in.p, in.len);
		check_plain(a, "two.tar.gz", gz.p, gz.len);
		check_plain(a, "mid.tar", mt.p, mt.len);
		arch_close(a);
	}

	/* one level: the archives inside are folders, their members visible; an archive inside
	 * those is a file; a damaged one is a file, with a notice */
	o.build.recursion = 1;
	ao = aopts(&o);
	a = NULL;
	log_clear();
	CHECK_EQ(arch_open(ar, &ao, &a), 0);
	CHECK(logged(TFS_LOG_NOTICE, "rebuilding", "options"));
	CHECK(logged(TFS_LOG_INFO, "outer.tar", "4 archives inside"));
	CHECK(logged(TFS_LOG_NOTICE, "broken.tar.gz", "shown as a file"));
	if (a) {
		check_nested(a, "one.tar", inner_tree, NWANT(inner_tree));
		check_nested(a, "two.tar.gz", inner_tree, NWANT(inner_tree));
		check_nested(a, "three.tar", inner_tree, NWANT(inner_tree));
		CHECK_EQ(resolve(a, "one.tar", &at), 0);
		CHECK_EQ(at.mtime, M0 + 20);
		CHECK_EQ(at.mode, S_IFDIR | 0755);
		check_plain(a, "three", d_note, sizeof(d_note));
		check_plain(a, "broken.tar.gz", broken, sizeof(broken));
		check_plain(a, "notes.txt", d_note, sizeof(d_note));
		CHECK_EQ(resolve(a, "mid.tar", &at), 0);
		CHECK(at.flags & ARCH_A_NESTED);
		CHECK_EQ(arch_nested(a, at.ino, &mid), 0);
		if (mid) {
			check_plain(mid, "inner.tar", in.p, in.len);
			check_plain(mid, "m.txt", d_note, sizeof(d_note));
			arch_close(mid);
		}
		arch_close(a);
	}
	/* valid for these options: used as it is */
	CHECK_EQ(prep(ar, &o, &p, &built, NULL), 0);
	CHECK(!built);
	free(p);

	/* two levels: the archive inside the archive inside */
	o.build.recursion = 2;
	ao = aopts(&o);
	a = NULL;
	CHECK_EQ(arch_open(ar, &ao, &a), 0);
	if (a) {
		CHECK_EQ(resolve(a, "mid.tar", &at), 0);
		mid = NULL;
		CHECK_EQ(arch_nested(a, at.ino, &mid), 0);
		if (mid) {
			check_nested(mid, "inner.tar", inner_tree, NWANT(inner_tree));
			check_plain(mid, "m.txt", d_note, sizeof(d_note));
			arch_close(mid);
		}
		check_nested(a, "one.tar", inner_tree, NWANT(inner_tree));
		arch_close(a);
	}

	/* strip_ext: one.tar -> one, two.tar.gz -> two; three.tar keeps its name (three is
	 * taken) */
	o.build.recursion = 1;
	o.build.strip_ext = true;
	ao = aopts(&o);
	a = NULL;
	CHECK_EQ(arch_open(ar, &ao, &a), 0);
	if (a) {
		check_nested(a, "one", inner_tree, NWANT(inner_tree));
		check_nested(a, "two", inner_tree, NWANT(inner_tree));
		check_nested(a, "three.tar", inner_tree, NWANT(inner_tree));
		check_plain(a, "three", d_note, sizeof(d_note));
		CHECK_EQ(ops->lookup(a, ops->root, "one.tar", 7, &at), -ENOENT);
		CHECK_EQ(ops->lookup(a, ops->root, "two.tar.gz", 10, &at), -ENOENT);
		arch_close(a);
	}
	free(in.p);
	free(gz.p);
	free(mt.p);
	free(ot.p);
}

/* ---- bugs this test found (fixed) --------------------------------------------------------- */

static void fixed_options_length(void)
{
	/* validate.c compared the stored options string with one formatted into 64 bytes,
	 * build.c stored one of up to 96: a string of 64 bytes or more (tarseek-index takes any
	 * --gzip-spacing; -r 32, --strip-extension, -i) never matched, and the index was
	 * rebuilt at every open.  Both use IDX_OPTIONS_MAX now. */
	const char *dir = pth("%s/known", top);
	const char *gz = pth("%s/a.tar.gz", dir), *ix = pth("%s/i.sqlite", dir);
	struct idx_opts o = {.index_file = ix,
			     .build = {.gzip_spacing = 16ull << 40,
				       .threads = 1,
				       .recursion = 32,
				       .strip_ext = true,
				       .ignore_zeros = true}};
	struct buf t = std_tar();
	char s[256], why[256], *p;
	bool built;

	mkdir_ok(dir);
	write_gz(gz, t.p, t.len);
	idx_options_string("gzip", &o.build, s, sizeof(s));
	CHECK(strlen(s) >= 64); /* the case: a string that does not fit 64 bytes */
	CHECK_EQ(prep(gz, &o, &p, &built, NULL), 0);
	CHECK(built);
	free(p);
	CHECK_EQ(idx_validate(ix, gz, &o.build, why, sizeof(why)), 0);
	CHECK_EQ(prep(gz, &o, &p, &built, NULL), 0);
	CHECK(!built);
	free(p);
	free(t.p);
}

/* archive.h lists -ENOTDIR among arch_lookup's errors: a name looked up in a regular file
 * (it was -ENOENT). */
static void fixed_lookup_in_file(void)
{
	const char *dir = pth("%s/known", top), *ix = pth("%s/lookup.idx", dir);
	struct buf t = std_tar();
	struct idx_build_opts b = dflt().build;
	struct idx_input in = {.src = src_from_mem(t.p, t.len), .name = "a.tar", .mode = 0100644};
	struct arch *a = NULL;
	struct arch_attr at, at2;

	mkdir_ok(dir);
	CHECK_EQ(idx_build_from(&in, ix, &b, NULL), 0);
	src_free(in.src);
	CHECK_EQ(arch_open_index(ix, NULL, src_from_mem(t.p, t.len), "a.tar",
				 &(struct arch_env){.cache = cache}, &a),
		 0);
	if (a) {
		CHECK_EQ(resolve(a, "dir/a.txt", &at), 0);
		CHECK_EQ(ops->lookup(a, at.ino, "x", 1, &at2), -ENOTDIR);
		arch_close(a);
	}
	free(t.p);
}

/* nested.h: a member named like an archive that turns out to be damaged "stays a file, with
 * a notice" -- and no error of build.c's about it (build_stream_end logged "damaged before
 * anything could be indexed" at error level). */
static void fixed_nested_damage_level(void)
{
	const char *dir = pth("%s/known", top);
	const char *ar = pth("%s/outer.tar", dir), *ix = pth("%s/nested.idx", dir);
	uint8_t broken[120] = {0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 3};
	struct idx_build_opts b = dflt().build;

	mkdir_ok(dir);
	tu_fill(broken + 10, sizeof(broken) - 10, 6, 0);
	const struct member m = {.name = "broken.tar.gz",
				 .type = '0',
				 .mode = 0644,
				 .mtime = M0,
				 .data = broken,
				 .size = sizeof(broken)};
	struct buf t = tar_of(&m, 1);
	write_file(ar, t.p, t.len);
	b.recursion = 1;
	log_clear();
	CHECK_EQ(idx_build(ar, ix, &b, NULL), 0);
	CHECK(logged(TFS_LOG_NOTICE, "broken.tar.gz", "shown as a file"));
	CHECK(!logged(TFS_LOG_ERR, "broken.tar.gz", NULL));
	free(t.p);
}

static void test_fixed_issues(void)
{
	fixed_options_length();
	fixed_lookup_in_file();
	fixed_nested_damage_level();
}

int main(void)
{
	double t0 = mono_now();

	if (fixtures_init("index"))
		return 1;

	test_build_plain();
	test_build_from();
	test_locations();
	test_prepare_flags();
	test_failures();
	test_temp_name();
	test_fingerprint();
	test_options_string();
	test_nested();
	test_unprivileged();
	test_fixed_issues();

	fixtures_fini();
	fprintf(stderr, "test_index: %.2f s\n", mono_now() - t0);
	return tu_exit();
}
