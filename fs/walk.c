/* The tree walk after mounting (see walk.h).
 *
 * The private view: mkdtemp in /run (else /tmp), MS_BIND of the mount point onto it, open its
 * root, MNT_DETACH, rmdir; from then on only the walk's descriptors refer to that view.
 *
 * Depth first, with an explicit stack of open folder descriptors (no recursion, so a deep
 * archive cannot exhaust the thread's stack; the depth is bounded by the descriptors it may
 * hold, WALK_DEPTH, past which the deeper folders are left to be looked up on demand).
 */
#include "walk.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../common/log.h"

#define WALK_DEPTH 64

struct tfs_walk {
	char *mountpoint;
	int rootfd; /* the root of the private view */
	dev_t dev;  /* the file system's */
	pthread_t thread;
	atomic_bool stop, done;
	uint64_t folders, entries;
};

/* True while the mount point still shows the file system the walk lists. */
static bool still_mounted(const struct tfs_walk *w)
{
	struct stat st;

	return stat(w->mountpoint, &st) == 0 && st.st_dev == w->dev;
}

static int private_view(const char *mountpoint);

static void *walk_main(void *arg)
{
	struct tfs_walk *w = arg;
	DIR *stack[WALK_DEPTH];
	int depth = 0;
	struct stat st;

	/* here, not in walk_start: making the view asks the file system for its root, and
	 * the thread that starts the walk goes on to serve the requests */
	w->rootfd = private_view(w->mountpoint);
	if (w->rootfd < 0) {
		tfs_log(TFS_LOG_DEBUG, "no tree walk: no private view of %s", w->mountpoint);
		return NULL;
	}
	if (fstat(w->rootfd, &st) < 0 || !(stack[0] = fdopendir(w->rootfd))) {
		close(w->rootfd);
		return NULL;
	}
	w->dev = st.st_dev;
	depth = 1;
	w->folders = 1;
	while (depth > 0 && !atomic_load(&w->stop)) {
		DIR *d = stack[depth - 1];
		struct dirent *e;

		errno = 0;
		e = readdir(d);
		if (!e) { /* this folder is done (or failed: the mount is going away) */
			closedir(d);
			depth--;
			continue;
		}
		w->entries++;
		if (e->d_type != DT_DIR || !strcmp(e->d_name, ".") || !strcmp(e->d_name, "..") ||
		    depth == WALK_DEPTH)
			continue;
		if (!still_mounted(w))
			break; /* unmounted: let go of the file system */
		int sub = openat(dirfd(d), e->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		DIR *sd = sub >= 0 ? fdopendir(sub) : NULL;
		if (!sd) {
			if (sub >= 0)
				close(sub);
			continue;
		}
		stack[depth++] = sd;
		w->folders++;
	}
	while (depth > 0)
		closedir(stack[--depth]);
	if (!atomic_load(&w->stop)) {
		tfs_log(TFS_LOG_DEBUG, "tree walk done: %llu folders, %llu entries",
			(unsigned long long)w->folders, (unsigned long long)w->entries);
		atomic_store(&w->done, true);
	}
	return NULL;
}

/* The root of a private, detached view of the mount at mountpoint, or -1. */
static int private_view(const char *mountpoint)
{
	char dir[64];
	int fd = -1;

	snprintf(dir, sizeof(dir), "%s/.tarseek-walk-XXXXXX",
		 access("/run", W_OK) == 0 ? "/run" : "/tmp");
	if (!mkdtemp(dir))
		return -1;
	if (mount(mountpoint, dir, NULL, MS_BIND, NULL) == 0) {
		mount(NULL, dir, NULL, MS_PRIVATE, NULL); /* nothing of it spreads elsewhere */
		fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (umount2(dir, MNT_DETACH) != 0 && fd >= 0) {
			close(fd); /* it would stay visible: no walk */
			fd = -1;
		}
	}
	rmdir(dir);
	return fd;
}

struct tfs_walk *walk_start(const char *mountpoint)
{
	struct tfs_walk *w;

	if (geteuid() != 0)
		return NULL;
	w = calloc(1, sizeof(*w));
	if (!w || !(w->mountpoint = strdup(mountpoint))) {
		free(w);
		return NULL;
	}
	w->rootfd = -1;
	atomic_init(&w->stop, false);
	atomic_init(&w->done, false);
	if (pthread_create(&w->thread, NULL, walk_main, w) != 0) {
		free(w->mountpoint);
		free(w);
		return NULL;
	}
	return w;
}

bool walk_done(struct tfs_walk *w)
{
	return atomic_load(&w->done);
}

void walk_stop(struct tfs_walk *w)
{
	if (!w)
		return;
	atomic_store(&w->stop, true);
	pthread_join(w->thread, NULL);
	free(w->mountpoint);
	free(w);
}
