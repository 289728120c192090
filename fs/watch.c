/* The archive files under a mount, watched (see watch.h). */
#include "fs/watch.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/log.h"
#include "common/pool.h"
#include "mount/union.h"
#define FUSE_USE_VERSION 312
#include <fuse_lowlevel.h>

#define WATCH_EVENTS (IN_MODIFY | IN_ATTRIB | IN_CLOSE_WRITE | IN_DELETE_SELF | IN_MOVE_SELF)

struct watched {
	char *path;
	int wd;		   /* -1: done (invalidated once), or never watched */
	unsigned src;
	uint64_t entries;
	struct stat opened; /* to tell a chmod from a change (IN_ATTRIB) */
};

struct watch {
	int ifd, stop_fd;
	struct fuse_session *se;
	struct pool_job *job;
	struct watched *w;
	size_t n;
};

struct watch *watch_new(void)
{
	struct watch *w = calloc(1, sizeof(*w));

	if (!w)
		return NULL;
	w->ifd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
	w->stop_fd = eventfd(0, EFD_CLOEXEC);
	if (w->ifd < 0 || w->stop_fd < 0) {
		tfs_log(TFS_LOG_DEBUG, "no watch on the archives: %s", strerror(errno));
		watch_free(w);
		return NULL;
	}
	return w;
}

void watch_add(struct watch *w, const char *path, unsigned src, uint64_t entries)
{
	struct watched e = {.src = src, .entries = entries, .wd = -1};
	void *p;

	if (!w || stat(path, &e.opened) < 0 || !S_ISREG(e.opened.st_mode))
		return;
	p = realloc(w->w, (w->n + 1) * sizeof(*w->w));
	if (!p || !(e.path = realpath(path, NULL))) /* the daemon works from / */
		return;
	w->w = p;
	e.wd = inotify_add_watch(w->ifd, path, WATCH_EVENTS);
	if (e.wd < 0) {
		tfs_log(TFS_LOG_DEBUG, "%s: not watched: %s", path, strerror(errno));
		free(e.path);
		return;
	}
	w->w[w->n++] = e;
}

/* IN_ATTRIB alone: a change only if the file is not the one opened any more. */
static bool attr_changed(const struct watched *e)
{
	struct stat st;

	if (stat(e->path, &st) < 0)
		return true;
	return st.st_ino != e->opened.st_ino || st.st_dev != e->opened.st_dev ||
	       st.st_size != e->opened.st_size || st.st_nlink != e->opened.st_nlink ||
	       st.st_mtim.tv_sec != e->opened.st_mtim.tv_sec ||
	       st.st_mtim.tv_nsec != e->opened.st_mtim.tv_nsec;
}

/* Drops the kernel's cached pages of e's files, then says so: the log line (in
 * user.tarseek.log too) comes once they are gone, so whoever sees it knows. */
static void invalidate(struct watch *w, struct watched *e)
{
	inotify_rm_watch(w->ifd, e->wd);
	e->wd = -1;
	for (uint64_t i = 1; i <= e->entries; i++)
		fuse_lowlevel_notify_inval_inode(w->se, (fuse_ino_t)un_source_ino(e->src, i), 0, 0);
	tfs_log(TFS_LOG_WARNING, "%s changed under the mount: its files' cached pages are "
		"dropped, and their reads fail until it is mounted again", e->path);
}

static void handle(struct watch *w, const struct inotify_event *ev)
{
	for (size_t i = 0; i < w->n; i++) {
		struct watched *e = &w->w[i];
		if (e->wd < 0 || e->wd != ev->wd)
			continue;
		if ((ev->mask & ~(uint32_t)IN_ATTRIB) || attr_changed(e))
			invalidate(w, e);
		return;
	}
}

static void *watch_main(void *arg)
{
	struct watch *w = arg;
	struct pollfd p[2] = {{.fd = w->ifd, .events = POLLIN}, {.fd = w->stop_fd, .events = POLLIN}};
	_Alignas(struct inotify_event) char buf[4096];

	for (;;) {
		if (poll(p, 2, -1) < 0 && errno != EINTR)
			break;
		if (p[1].revents & POLLIN)
			break;
		ssize_t n;
		while ((n = read(w->ifd, buf, sizeof(buf))) > 0) {
			for (char *at = buf; at < buf + n;) {
				const struct inotify_event *ev = (const struct inotify_event *)at;
				handle(w, ev);
				at += sizeof(*ev) + ev->len;
			}
		}
	}
	return NULL;
}

void watch_start(struct watch *w, struct fuse_session *se)
{
	if (!w || !w->n || w->job)
		return;
	w->se = se;
	if (pool_start(watch_main, w, "tarseek-watch", 0, &w->job) != 0)
		w->job = NULL;
}

void watch_stop(struct watch *w)
{
	uint64_t one = 1;

	if (!w || !w->job)
		return;
	if (write(w->stop_fd, &one, sizeof(one)) < 0) {
		/* an eventfd write only fails on overflow */
	}
	pool_join(w->job);
	w->job = NULL;
}

void watch_free(struct watch *w)
{
	if (!w)
		return;
	watch_stop(w);
	for (size_t i = 0; i < w->n; i++)
		free(w->w[i].path);
	free(w->w);
	if (w->ifd >= 0)
		close(w->ifd);
	if (w->stop_fd >= 0)
		close(w->stop_fd);
	free(w);
}
