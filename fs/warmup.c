/* Warming the kernel's caches after mounting (see warmup.h).
 *
 * The private view: a detached clone of the mount (open_tree; see private_view for why not
 * MS_BIND of the mount point onto a folder in /run, which kernels before 5.2 still get); from
 * then on only this thread's descriptors refer to it.
 *
 * The walk is depth first, with an explicit stack of open folder descriptors (no recursion,
 * so a deep archive cannot exhaust the thread's stack; past WARMUP_DEPTH folders the deeper
 * ones are left to be looked up on demand).  It notes the regular files it meets (their inode
 * numbers, which getdents reports as the daemon gave them) for the pages phase.
 *
 * Two jobs of the process's pool (common/pool.h), which the struct warmup owns: the walk, at
 * the requests' priority (its listings are what a user's walk would ask for), and then, when
 * pages are to be stored, the pages phase, at the prefetch's lower priority (PF_NICE): the
 * walk starts it as it ends, and warmup_stop joins the walk, then the pages phase if there is
 * one.  The two never run at once, so the walk's state (the mount table's poll, the files
 * noted) passes from one to the other without a lock.
 *
 * Lock: se_lock guards p.se (the session, NULL once it goes) and is held while a page is
 * stored or a bare listing dropped through it; under it, dirplus.c's lock (dp_before_walk),
 * nothing else.
 */
#include "fs/warmup.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "common/log.h"
#include "common/mountinfo.h"
#include "common/pool.h"
#include "fs/dirplus.h"
#include "fs/handles.h"
#include "seek/prefetch.h"
#include "fs/tfs.h"

#define WARMUP_DEPTH 64
#define WARMUP_FILE_MAX ((uint64_t)64 << 20) /* larger files are left to be read */

struct warmup {
	struct warmup_params p;
	char *mountpoint;
	dev_t dev; /* the file system's */
	struct pool_job *walk_job;  /* the walk (joined by warmup_stop) */
	struct pool_job *pages_job; /* the pages phase, started by the walk as it ends, or NULL */
	atomic_bool stop, entries_done, pages_done, no_pages;
	_Atomic int view; /* 0 being made, 1 made, -1 none (no warm-up) */
	int mounts_fd; /* /proc/self/mountinfo, polled for changes of the mount table (or -1) */
	bool gone;     /* the mount point no longer shows this file system */
	uint64_t polled_ns; /* when mounts_fd was last polled (still_mounted) */
	_Atomic uint64_t stored;
	pthread_mutex_t se_lock; /* held while storing pages; p.se is NULL once the session goes */
	_Atomic pid_t tid;	       /* the walking thread's (0 until it runs; kept after) */
	_Atomic uint64_t user_ns;      /* CLOCK_MONOTONIC of the user's last request (0: none) */
	_Atomic unsigned long gave_way; /* waits for the user begun (warmup_gave_way) */
	atomic_bool giving_way;		/* ... and one is under way */
	bool walking;		       /* the dirplus walker while it lists (see give_way) */
	uint64_t *files; /* inode numbers of the regular files met, in order */
	size_t nfiles, cap;
};

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* The longest the warm-up sleeps while it waits (for the user, for the prefetch) before it looks
 * at stop and the mount table again: warmup_stop joins it, and a long quiet_ms (the tests')
 * slept in one piece held the daemon's exit for that long after an unmount. */
#define WARMUP_TICK_NS (10 * 1000 * 1000u)

/* True while the mount point still shows the file system being warmed.  Not by looking at the
 * mount point: a path lookup that ends on it holds the mount for the moment it takes, and an
 * unmount at that moment is refused as busy.  The mount table is read again only when a poll
 * says it changed (the kernel marks the file on every mount and unmount). */
static bool still_mounted(struct warmup *w)
{
	struct pollfd p = {.fd = w->mounts_fd, .events = POLLPRI};

	if (atomic_load(&w->stop) || w->gone)
		return false;
	if (w->mounts_fd < 0) { /* no /proc: look, and accept the moment of busyness */
		struct stat st;
		return stat(w->mountpoint, &st) == 0 && st.st_dev == w->dev;
	}
	/* at most once a millisecond: a poll per entry was 10 % of the daemon's time while the
	 * walk listed a tree of 72k entries */
	uint64_t now = now_ns();
	if (now - w->polled_ns < 1000000u)
		return true;
	w->polled_ns = now;
	if (poll(&p, 1, 0) == 1 && (p.revents & (POLLPRI | POLLERR))) /* < 0: cannot tell */
		w->gone = mountinfo_has(w->mounts_fd, w->mountpoint, &w->dev) == 0;
	return !w->gone;
}

/* Waits until quiet_ms have passed since the user's last request (see warmup.h).  While it
 * waits the walk is not the dirplus walker: the user's listings are then bare or not by the
 * usual rules, and those of folders the walk has yet to list are dropped before it does
 * (before_listing).  False if stopped or unmounted meanwhile. */
static bool give_way(struct warmup *w)
{
	uint64_t quiet = (uint64_t)w->p.quiet_ms * 1000000u;
	bool waited = false;

	for (;;) {
		uint64_t last = atomic_load_explicit(&w->user_ns, memory_order_relaxed);
		uint64_t now = now_ns();
		if (!quiet || !last || now - last >= quiet)
			break;
		if (!waited && w->walking && w->p.dp)
			dp_set_walker(w->p.dp, 0);
		if (!waited) {
			atomic_fetch_add(&w->gave_way, 1);
			atomic_store(&w->giving_way, true);
		}
		waited = true;
		uint64_t left = quiet - (now - last);
		if (left > WARMUP_TICK_NS)
			left = WARMUP_TICK_NS;
		struct timespec ts = {(time_t)(left / 1000000000u), (long)(left % 1000000000u)};
		nanosleep(&ts, NULL);
		if (!still_mounted(w)) {
			atomic_store(&w->giving_way, false);
			return false;
		}
	}
	atomic_store(&w->giving_way, false);
	if (waited && w->walking && w->p.dp)
		dp_set_walker(w->p.dp, atomic_load(&w->tid));
	return true;
}

void warmup_note_request(struct warmup *w, pid_t requester)
{
	if (w && requester != atomic_load_explicit(&w->tid, memory_order_relaxed))
		atomic_store_explicit(&w->user_ns, now_ns(), memory_order_relaxed);
}

#ifndef FUSE_SUPER_MAGIC
#define FUSE_SUPER_MAGIC 0x65735546 /* linux/magic.h */
#endif

/* The root of a private, detached view of the mount at mountpoint, or -1.
 *
 * open_tree(2) clones the mount, detached, in one call, and with AT_NO_AUTOMOUNT: this
 * thread may get to it late on a busy machine, after an unmount, and then a bind mount's
 * lookup of the mount point (MS_BIND follows automount points) would trigger the automount
 * under it (autofs, x-systemd.automount), and wait for an automounter that may be waiting for
 * this daemon to end.  What it finds there must be a FUSE file system (after an unmount it is
 * not ours: no warm-up).  Kernels before 5.2 have no open_tree: a bind mount in a temporary
 * folder, made private, opened and detached. */
static int private_view(const char *mountpoint)
{
	char dir[64];
	int fd = open_tree(AT_FDCWD, mountpoint, OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_NO_AUTOMOUNT);

	if (fd >= 0) {
		struct statfs sf;
		int root = fstatfs(fd, &sf) == 0 && sf.f_type == FUSE_SUPER_MAGIC
				   ? openat(fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC)
				   : -1;
		close(fd); /* the open root keeps the clone */
		return root;
	}
	if (errno != ENOSYS)
		return -1;
	snprintf(dir, sizeof(dir), "%s/.tarseek-walk-XXXXXX",
		 access("/run", W_OK) == 0 ? "/run" : "/tmp");
	if (!mkdtemp(dir))
		return -1;
	if (mount(mountpoint, dir, NULL, MS_BIND, NULL) == 0) {
		mount(NULL, dir, NULL, MS_PRIVATE, NULL); /* nothing of it spreads elsewhere */
		fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (umount2(dir, MNT_DETACH) != 0 && fd >= 0) {
			close(fd); /* it would stay visible: no warm-up */
			fd = -1;
		}
	}
	rmdir(dir);
	return fd;
}

static void note_file(struct warmup *w, uint64_t ino)
{
	if (w->nfiles == w->cap) {
		size_t cap = w->cap ? w->cap * 2 : 1024;
		uint64_t *n = realloc(w->files, cap * sizeof(*n));
		if (!n)
			return; /* fewer pages stored */
		w->files = n;
		w->cap = cap;
	}
	w->files[w->nfiles++] = ino;
}

/* The folder open at fd is about to be listed: if a listing without every attribute is what
 * the kernel may hold of it, that is dropped (dirplus.h), so that this one reaches us.  True
 * if it was dropped. */
static bool before_listing(struct warmup *w, int fd)
{
	struct stat st;
	bool dropped = false;

	if (!w->p.dp || fstat(fd, &st) != 0)
		return false;
	pthread_mutex_lock(&w->se_lock);
	if (w->p.se)
		dropped = dp_before_walk(w->p.dp, w->p.se, st.st_ino);
	pthread_mutex_unlock(&w->se_lock);
	return dropped;
}

/* The first read of the folder open at fd was answered from the kernel's cached listing
 * (dirplus.h, dp_walker_starts): that listing is dropped, to be read again. */
static void drop_listing(struct warmup *w, int fd)
{
	struct stat st;

	if (fstat(fd, &st) != 0)
		return;
	pthread_mutex_lock(&w->se_lock);
	if (w->p.se)
		dp_drop_listing(w->p.dp, w->p.se, st.st_ino);
	pthread_mutex_unlock(&w->se_lock);
}

/* The walk has listed folder d to its end.  If someone else's bare listing of it was made
 * meanwhile, ours may have been answered from it by the kernel: dropped and listed again
 * (names only: what is in it was noted already). */
static void after_listing(struct warmup *w, DIR *d)
{
	for (int i = 0; i < 8 && before_listing(w, dirfd(d)); i++) {
		rewinddir(d);
		while (readdir(d))
			;
	}
}

/* Lists every folder under rootfd (which it closes).  True if it got to the end; *listed:
 * the folders listed to their end. */
static bool walk_entries(struct warmup *w, int rootfd, size_t *listed)
{
	DIR *stack[WARMUP_DEPTH];
	int depth = 1;
	bool whole = true;
	int relisted[WARMUP_DEPTH]; /* per folder on the stack: first reads dropped and done again */
	bool fresh[WARMUP_DEPTH];   /* ... and whether it has had its first read */

	if (!(stack[0] = fdopendir(rootfd))) {
		close(rootfd);
		return false;
	}
	relisted[0] = 0;
	fresh[0] = true;
	while (depth > 0) {
		DIR *d = stack[depth - 1];
		struct dirent *e;

		if (!still_mounted(w) || !give_way(w)) { /* unmounted: let go of the file system */
			whole = false;
			break;
		}
		errno = 0;
		unsigned long starts = w->p.dp ? dp_walker_starts(w->p.dp) : 0;
		e = readdir(d);
		if (e && fresh[depth - 1]) {
			fresh[depth - 1] = false;
			if (w->p.dp && dp_walker_starts(w->p.dp) == starts && relisted[depth - 1]++ < 8) {
				/* from the kernel's cache, with no inodes made: again from the start (the
				 * entry is not noted: the rewind drops what libc had read ahead) */
				drop_listing(w, dirfd(d));
				rewinddir(d);
				fresh[depth - 1] = true;
				continue;
			}
		}
		if (!e) { /* this folder is done (or failed: the mount is going away) */
			whole = whole && errno == 0;
			if (whole) {
				after_listing(w, d);
				(*listed)++;
			}
			closedir(d);
			depth--;
			continue;
		}
		if (e->d_type == DT_REG)
			note_file(w, e->d_ino);
		if (e->d_type != DT_DIR || !strcmp(e->d_name, ".") || !strcmp(e->d_name, "..") ||
		    depth == WARMUP_DEPTH)
			continue;
		int sub = openat(dirfd(d), e->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (sub >= 0)
			before_listing(w, sub);
		DIR *sd = sub >= 0 ? fdopendir(sub) : NULL;
		if (!sd) {
			if (sub >= 0)
				close(sub);
			continue;
		}
		relisted[depth] = 0;
		fresh[depth] = true;
		stack[depth++] = sd;
	}
	while (depth > 0)
		closedir(stack[--depth]);
	return whole;
}

/* True if ino is a member of an archive (a folder source is read live: not stored). */
static bool in_archive(struct warmup *w, uint64_t ino)
{
	char kind[16];
	ssize_t n = un_getxattr(w->p.un, ino, "user.tarseek.kind", kind, sizeof(kind) - 1);

	return n == 7 && memcmp(kind, "archive", 7) == 0;
}

/* Stores the bytes of file ino into the kernel's page cache.  0, 1 (skipped) or -errno. */
static int store_file(struct warmup *w, uint64_t ino, uint64_t *budget)
{
	struct arch_attr a;
	struct un_file *f;
	struct th_ref *ref;
	int err;

	if (un_getattr(w->p.un, ino, &a) != 0 || !S_ISREG(a.mode) || a.size == 0 ||
	    a.size > WARMUP_FILE_MAX || a.size > *budget || !in_archive(w, ino))
		return 1;
	if (th_file(w->p.handles, ino, &f, &ref) != 0)
		return 1;
	/* from memory, without splice: libfuse keeps a splice pipe per thread, freed when the
	 * thread ends -- which for this one comes after the session (and its key) is gone */
	struct fuse_bufvec bv = FUSE_BUFVEC_INIT((size_t)a.size);
	char *buf = malloc((size_t)a.size);
	ssize_t n = buf ? un_read(f, buf, (size_t)a.size, 0) : -ENOMEM;
	if (n != (ssize_t)a.size) { /* damaged, say: its reads will say so */
		err = 1;
		goto out;
	}
	bv.buf[0].mem = buf;
	pthread_mutex_lock(&w->se_lock);
	err = w->p.se ? fuse_lowlevel_notify_store(w->p.se, ino, 0, &bv, FUSE_BUF_NO_SPLICE)
		      : -ENOTCONN;
	pthread_mutex_unlock(&w->se_lock);
	if (err == -ENOENT) {
		err = 1; /* the kernel no longer knows that inode */
	} else if (!err) {
		*budget -= a.size;
		atomic_fetch_add(&w->stored, a.size);
	}
out:
	free(buf);
	th_put(w->p.handles, ref);
	return err;
}

/* Waits for the prefetch to end (the pages come from what it decoded).  False if stopped, or
 * if some archive was not prefetched (its pages would have to be decoded now). */
static bool wait_prefetch(struct warmup *w)
{
	struct timespec tick = {0, WARMUP_TICK_NS};

	for (;;) {
		struct pf_stats st;
		if (!w->p.pf)
			return true;
		pf_get_stats(w->p.pf, &st);
		if (st.skipped)
			return false;
		if (st.finished || !st.started)
			return st.finished;
		if (!still_mounted(w))
			return false;
		nanosleep(&tick, NULL);
	}
}

/* The private view and the walk.  True if the pages phase is to follow. */
static bool warmup_walk(struct warmup *w)
{
	struct stat st;
	/* opened before the view is made, so that an unmount from then on shows in a poll */
	w->mounts_fd = open("/proc/self/mountinfo", O_RDONLY | O_CLOEXEC);
	/* here, not in warmup_start: making the view asks the file system for its root, and
	 * the thread that starts the warm-up goes on to serve the requests */
	int rootfd = private_view(w->mountpoint);

	if (rootfd < 0)
		tfs_log(TFS_LOG_DEBUG, "no warm-up: no private view of %s", w->mountpoint);
	if (rootfd < 0 || fstat(rootfd, &st) < 0) {
		if (rootfd >= 0)
			close(rootfd);
		atomic_store(&w->view, -1);
		return false;
	}
	w->dev = st.st_dev;
	before_listing(w, rootfd);
	atomic_store(&w->view, 1);
	size_t listed = 0;
	bool whole = walk_entries(w, rootfd, &listed);
	w->walking = false;
	if (w->p.dp) /* no more listings of ours */
		dp_set_walker(w->p.dp, 0);
	if (!whole) { /* unmounted (tests check the walk ends there) */
		tfs_log(TFS_LOG_INFO, "warm-up stopped: %zu folders listed", listed);
		return false;
	}
	atomic_store(&w->entries_done, true);
	if (!w->p.budget) {
		atomic_store(&w->no_pages, true);
		return false;
	}
	return true;
}

/* The second job, at nice PF_NICE: once the prefetch is done, the files' pages. */
static void *pages_main(void *arg)
{
	struct warmup *w = arg;
	uint64_t budget = w->p.budget;

	if (!wait_prefetch(w)) {
		atomic_store(&w->no_pages, true);
		return NULL;
	}
	for (size_t i = 0; i < w->nfiles && budget; i++) {
		if (!still_mounted(w) || !give_way(w))
			return NULL;
		int err = store_file(w, w->files[i], &budget);
		if (err < 0) {
			tfs_log(TFS_LOG_DEBUG, "warm-up: storing pages failed: %s", strerror(-err));
			return NULL;
		}
	}
	atomic_store(&w->pages_done, true);
	tfs_log(TFS_LOG_DEBUG, "warm-up done: %zu files, %llu bytes in the page cache", w->nfiles,
		(unsigned long long)atomic_load(&w->stored));
	return NULL;
}

/* The first job: the walk, then the pages phase started on its own job if it is to follow. */
static void *walk_main(void *arg)
{
	struct warmup *w = arg;

	atomic_store(&w->tid, (pid_t)syscall(SYS_gettid));
	w->walking = true;
	if (w->p.dp) /* before any listing: the view's root is listed on our behalf too */
		dp_set_walker(w->p.dp, atomic_load(&w->tid));
	bool pages = warmup_walk(w);
	w->walking = false;
	if (w->p.dp) /* the thread id may go to another thread of the machine now */
		dp_set_walker(w->p.dp, 0);
	if (pages && (atomic_load(&w->stop) ||
		      pool_start(pages_main, w, "tarseek-pages", PF_NICE, &w->pages_job) < 0))
		atomic_store(&w->no_pages, true);
	return NULL;
}

struct warmup *warmup_start(const struct warmup_params *p)
{
	struct warmup *w;

	if (geteuid() != 0)
		return NULL;
	w = calloc(1, sizeof(*w));
	if (!w || !(w->mountpoint = strdup(p->mountpoint))) {
		free(w);
		return NULL;
	}
	w->p = *p;
	w->p.mountpoint = w->mountpoint;
	atomic_init(&w->stop, false);
	atomic_init(&w->view, 0);
	w->mounts_fd = -1;
	atomic_init(&w->entries_done, false);
	atomic_init(&w->pages_done, false);
	atomic_init(&w->no_pages, false);
	atomic_init(&w->stored, 0);
	atomic_init(&w->tid, 0);
	atomic_init(&w->user_ns, 0);
	atomic_init(&w->gave_way, 0);
	atomic_init(&w->giving_way, false);
	pthread_mutex_init(&w->se_lock, NULL);
	if (pool_start(walk_main, w, "tarseek-walk", 0, &w->walk_job) < 0) {
		pthread_mutex_destroy(&w->se_lock);
		free(w->mountpoint);
		free(w);
		return NULL;
	}
	return w;
}

void warmup_state(struct warmup *w, int *view, bool *entries_done, int *pages, uint64_t *stored)
{
	*view = atomic_load(&w->view);
	*entries_done = atomic_load(&w->entries_done);
	*pages = atomic_load(&w->pages_done) ? 1 : atomic_load(&w->no_pages) ? -1 : 0;
	*stored = atomic_load(&w->stored);
}

unsigned long warmup_gave_way(struct warmup *w, bool *now)
{
	*now = atomic_load(&w->giving_way);
	return atomic_load(&w->gave_way);
}

void warmup_end_session(struct warmup *w)
{
	if (!w)
		return;
	atomic_store(&w->stop, true);
	pthread_mutex_lock(&w->se_lock);
	w->p.se = NULL;
	pthread_mutex_unlock(&w->se_lock);
}

void warmup_stop(struct warmup *w)
{
	if (!w)
		return;
	atomic_store(&w->stop, true);
	pool_join(w->walk_job); /* then pages_job is set, or never will be */
	pool_join(w->pages_job);
	if (w->mounts_fd >= 0)
		close(w->mounts_fd);
	pthread_mutex_destroy(&w->se_lock);
	free(w->files);
	free(w->mountpoint);
	free(w);
}
