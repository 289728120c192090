/* The FUSE low-level operations of tarseek: one table, handlers prefixed tfs_.
 *
 * The filesystem is read-only and never changes while mounted, so entries and attributes
 * are cached by the kernel for a long time (tfs.timeout), files are opened with keep_cache,
 * and directories with cache_readdir.  Inode numbers are the index's entry ids; there is
 * nothing to forget.
 *
 * Requests per file: where the kernel can do without them (FUSE "no open" and "no opendir"),
 * open and opendir reply ENOSYS once, and the kernel then sends no OPEN, FLUSH or RELEASE
 * (OPENDIR, RELEASEDIR) at all: reading a small file whose entry is known costs one READ, or
 * none once its pages are cached.  Reads then come with the inode only, and the handles are
 * kept by inode (handles.h).  FLUSH is answered ENOSYS, so the kernel stops sending it too.
 * Listings are READDIRPLUS replies in which dirplus.h decides, entry by entry, whether the
 * attributes come along (and with them a kernel inode).
 * Every request is counted and timed (tfs_counts); the root's user.tarseek.requests
 * attribute shows the counts, and its user.tarseek.log the daemon's last messages (the log's
 * ring, common/log.h: what a detached daemon said even where no syslog listens).
 *
 * A read of a plain tar member is replied to with the archive's file descriptor and offset
 * (fuse_reply_data), so libfuse can splice it without copying; other reads go through the
 * union (union.h) to the source holding the file.  Replies with -errno flip the sign in
 * reply_err() only.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "common/log.h"
#include "common/may_block.h"
#include "fs/dirplus.h"
#include "fs/handles.h"
#include "seek/prefetch.h"
#include "fs/warmup.h"
#include "fs/tfs.h"

#define BLKSIZE (128 * 1024)
#define SYS_CACHESTAT 451 /* the same number on every architecture */

static struct tfs *tfs_of(fuse_req_t req)
{
	return fuse_req_userdata(req);
}

/* The one place a -errno becomes a FUSE error reply. */
static void reply_err(fuse_req_t req, int err)
{
	fuse_reply_err(req, -err);
}

/* ---- counting requests ---- */

static const char *const op_names[TFS_OP_COUNT] = {
    [TFS_OP_LOOKUP] = "lookup",	    [TFS_OP_FORGET] = "forget",
    [TFS_OP_GETATTR] = "getattr",   [TFS_OP_READLINK] = "readlink",
    [TFS_OP_OPEN] = "open",	    [TFS_OP_READ] = "read",
    [TFS_OP_FLUSH] = "flush",	    [TFS_OP_RELEASE] = "release",
    [TFS_OP_OPENDIR] = "opendir",   [TFS_OP_READDIR] = "readdir",
    [TFS_OP_READDIRPLUS] = "readdirplus", [TFS_OP_RELEASEDIR] = "releasedir",
    [TFS_OP_STATFS] = "statfs",	    [TFS_OP_GETXATTR] = "getxattr",
    [TFS_OP_LISTXATTR] = "listxattr", [TFS_OP_REFUSED] = "refused",
};

struct req_clock {
	struct tfs *t;
	enum tfs_op op;
	struct timespec t0;
};

/* The requests that hold the warm-up up (warmup.h): the user reading files.  Not listings
 * or lookups: a find right after mounting backup.tar took 1.0-1.4 s with the walk held up
 * by them, 0.7-1.0 s with the walk beside it, listing on the other core. */
static bool user_op(enum tfs_op op)
{
	return op == TFS_OP_READ;
}

/* Counted here, before the reply: a request whose reply has been seen is in the counts. */
static struct req_clock req_begin(fuse_req_t req, enum tfs_op op)
{
	struct tfs *t = fuse_req_userdata(req);
	struct req_clock c = {t, op, {0, 0}};

	atomic_fetch_add_explicit(&t->counts.n[op], 1, memory_order_relaxed);
	clock_gettime(CLOCK_MONOTONIC, &c.t0);
	if (user_op(op))
		warmup_note_request(atomic_load_explicit(&t->warm, memory_order_relaxed),
				    fuse_req_ctx(req)->pid);
	return c;
}

/* Runs when the handler returns (cleanup attribute), after its reply. */
static void req_end(struct req_clock *c)
{
	struct timespec t1;

	clock_gettime(CLOCK_MONOTONIC, &t1);
	uint64_t ns = (uint64_t)(t1.tv_sec - c->t0.tv_sec) * 1000000000u +
		      (uint64_t)(t1.tv_nsec - c->t0.tv_nsec);
	atomic_fetch_add_explicit(&c->t->counts.ns[c->op], ns, memory_order_relaxed);
}

/* Counts and times the request being handled, as the handler's first statement. */
#define REQ(req, op)                                                                        \
	struct req_clock _req_clock __attribute__((cleanup(req_end))) =                     \
	    req_begin(req, op)

/* "NAME COUNT MICROSECONDS" per kind of request seen, into buf: the length (as getxattr). */
static ssize_t format_counts(struct tfs *t, char *buf, size_t size)
{
	char text[TFS_OP_COUNT * 64];
	size_t len = 0;

	for (int op = 0; op < TFS_OP_COUNT; op++) {
		uint64_t n = atomic_load(&t->counts.n[op]), ns = atomic_load(&t->counts.ns[op]);
		if (n)
			len += (size_t)snprintf(text + len, sizeof(text) - len, "%s %llu %llu\n",
						op_names[op], (unsigned long long)n,
						(unsigned long long)(ns / 1000));
	}
	if (size && len > size)
		return -ERANGE;
	if (size)
		memcpy(buf, text, len);
	return (ssize_t)len;
}

/* What prefetching does: "data=STATE chunks=N done=D failed=F bytes=B\n" (decoding ahead, or
 * reading a plain archive ahead) and "tree=STATE pages=STATE stored=B waits=N\n" (the
 * warm-up; tree=waiting while it gives way to reads, waits: how often it has). */
static ssize_t format_prefetch(struct tfs *t, char *buf, size_t size)
{
	char text[320];
	const char *data = "off", *tree = "off", *pages = "off";
	struct pf_stats st = {0};
	struct warmup *w = atomic_load(&t->warm);
	uint64_t stored = 0;
	unsigned long waits = 0;
	bool waiting = false;
	int len;

	if (t->pf) {
		pf_get_stats(t->pf, &st);
		data = !st.chunks ? "none" : st.finished ? "done" : st.started ? "running" : "queued";
	}
	if (w) {
		bool entries;
		int view, p;
		warmup_state(w, &view, &entries, &p, &stored);
		waits = warmup_gave_way(w, &waiting);
		tree = entries ? "done" : view > 0 ? (waiting ? "waiting" : "running")
					   : view < 0 ? "none" : "starting";
		pages = p > 0 ? "done" : p < 0 ? "none" : "running";
	}
	len = snprintf(text, sizeof(text),
		       "data=%s chunks=%llu done=%llu failed=%llu bytes=%llu\n"
		       "tree=%s pages=%s stored=%llu waits=%lu\n",
		       data, (unsigned long long)st.chunks, (unsigned long long)st.chunks_done,
		       (unsigned long long)st.chunks_failed, (unsigned long long)st.queued_bytes, tree,
		       pages, (unsigned long long)stored, waits);
	if (size && (size_t)len > size)
		return -ERANGE;
	if (size)
		memcpy(buf, text, (size_t)len);
	return len;
}

/* The daemon's process id (tarseek -u waits for it to end). */
static ssize_t format_pid(char *buf, size_t size)
{
	char text[32];
	int len = snprintf(text, sizeof(text), "%ld", (long)getpid());

	if (size && (size_t)len > size)
		return -ERANGE;
	if (size)
		memcpy(buf, text, (size_t)len);
	return len;
}

/* user.tarseek.log: the last messages (common/log.h's ring), oldest first. */
static ssize_t format_log(char *buf, size_t size)
{
	size_t all = tfs_log_ring_read(NULL, 0);

	if (size == 0)
		return (ssize_t)all;
	if (size < all) /* the caller asks again with more room (the ring may grow meanwhile) */
		return -ERANGE;
	return (ssize_t)tfs_log_ring_read(buf, size);
}

/* ---- replies ---- */

static void to_stat(struct tfs *t, const struct arch_attr *a, struct stat *st)
{
	memset(st, 0, sizeof(*st));
	st->st_ino = a->ino;
	st->st_mode = a->mode;
	if (!S_ISLNK(a->mode)) /* -o umask=, dmask=, fmask= (a symlink's bits mean nothing) */
		st->st_mode &= ~(S_ISDIR(a->mode) ? t->dmask : t->fmask);
	st->st_nlink = a->nlink ? a->nlink : 1;
	st->st_uid = t->set_uid ? t->uid : (uid_t)a->uid;
	st->st_gid = t->set_gid ? t->gid : (gid_t)a->gid;
	st->st_size = (off_t)a->size;
	st->st_rdev = (dev_t)a->rdev;
	st->st_blksize = BLKSIZE;
	st->st_blocks = (blkcnt_t)a->blocks;
	st->st_mtim.tv_sec = (time_t)a->mtime;
	st->st_mtim.tv_nsec = a->mtime_nsec;
	st->st_atim = st->st_ctim = st->st_mtim;
}

static void tfs_init(void *userdata, struct fuse_conn_info *conn)
{
	if (conn->capable & FUSE_CAP_SPLICE_WRITE)
		conn->want |= FUSE_CAP_SPLICE_WRITE;
	if (conn->capable & FUSE_CAP_SPLICE_MOVE)
		conn->want |= FUSE_CAP_SPLICE_MOVE;
	/* every listing a READDIRPLUS, not only its first batch ("auto"): which entries carry
	 * their attributes is ours to say, entry by entry (dirplus.h) */
	if (conn->capable & FUSE_CAP_READDIRPLUS)
		conn->want |= FUSE_CAP_READDIRPLUS;
	conn->want &= ~FUSE_CAP_READDIRPLUS_AUTO;
	if (conn->capable & FUSE_CAP_ASYNC_READ)
		conn->want |= FUSE_CAP_ASYNC_READ;
	struct tfs *t = userdata;
	if (t->max_read) /* libfuse refuses an init that does not repeat the mount's */
		conn->max_read = t->max_read;
	t->no_open = !t->kernel_opens && (conn->capable & FUSE_CAP_NO_OPEN_SUPPORT);
	if (t->ready_fd >= 0) { /* the mount is up: the command that started us may exit 0 */
		int null = open("/dev/null", O_RDWR);
		ssize_t ignored = write(t->ready_fd, "y", 1);
		(void)ignored;
		close(t->ready_fd);
		t->ready_fd = -1;
		if (null >= 0) { /* detached: no terminal from now on (messages go to syslog) */
			dup2(null, STDIN_FILENO);
			dup2(null, STDOUT_FILENO);
			dup2(null, STDERR_FILENO);
			if (null > STDERR_FILENO)
				close(null);
		}
	}
	t->no_opendir = !t->kernel_opens && (conn->capable & FUSE_CAP_NO_OPENDIR_SUPPORT);
}

static void entry_param(struct tfs *t, const struct arch_attr *a, struct fuse_entry_param *e)
{
	memset(e, 0, sizeof(*e));
	e->ino = a->ino;
	e->generation = 1;
	e->attr_timeout = t->timeout;
	e->entry_timeout = t->timeout;
	to_stat(t, a, &e->attr);
}

static void tfs_lookup(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	REQ(req, TFS_OP_LOOKUP);
	struct tfs *t = tfs_of(req);
	struct arch_attr a;
	struct fuse_entry_param e;
	int err = un_lookup(t->un, parent, name, strlen(name), &a);

	if (t->debug)
		tfs_log(TFS_LOG_DEBUG, "lookup(%lu, %s) = %d", (unsigned long)parent, name, err);
	if (err == -ENOENT) {
		/* a negative entry, cached like the positive ones */
		memset(&e, 0, sizeof(e));
		e.entry_timeout = t->timeout;
		fuse_reply_entry(req, &e);
		return;
	}
	if (err) {
		reply_err(req, err);
		return;
	}
	entry_param(t, &a, &e);
	fuse_reply_entry(req, &e);
	dp_looked_up(t->dp, t->se, S_ISDIR(a.mode));
}

static void tfs_getattr(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	REQ(req, TFS_OP_GETATTR);
	struct tfs *t = tfs_of(req);
	struct arch_attr a;
	struct stat st;
	int err = un_getattr(t->un, ino, &a);

	if (err) {
		reply_err(req, err);
		return;
	}
	to_stat(t, &a, &st);
	fuse_reply_attr(req, &st, t->timeout);
}

static void tfs_readlink(fuse_req_t req, fuse_ino_t ino)
{
	REQ(req, TFS_OP_READLINK);
	struct tfs *t = tfs_of(req);
	size_t size = PATH_MAX, len = 0;
	char *buf = NULL;
	int err;

	for (;;) {
		char *nb = realloc(buf, size + 1);
		if (!nb) {
			err = -ENOMEM;
			break;
		}
		buf = nb;
		err = un_readlink(t->un, ino, buf, size, &len);
		if (err != -ERANGE)
			break;
		size = len;
	}
	if (err) {
		reply_err(req, err);
	} else {
		buf[len] = '\0';
		fuse_reply_readlink(req, buf);
	}
	free(buf);
}

static void tfs_opendir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	REQ(req, TFS_OP_OPENDIR);
	struct tfs *t = tfs_of(req);
	struct un_dir *d;
	int err;

	if (t->no_opendir) { /* from now on the kernel opens directories itself */
		reply_err(req, -ENOSYS);
		return;
	}
	err = un_opendir(t->un, ino, &d);
	if (err) {
		reply_err(req, err);
		return;
	}
	fi->fh = (uint64_t)(uintptr_t)d;
	fi->keep_cache = 1;
	fi->cache_readdir = 1;
	if (fuse_reply_open(req, fi) == -ENOENT)
		un_closedir(d);
}

/* Directory offsets: 1 after ".", 2 after "..", cookie + 2 after an entry. */
struct dir_fill {
	fuse_req_t req;
	struct tfs *t;
	char *buf;
	size_t size, pos;
	bool plus;
	unsigned bare_room, bare; /* entries that may go without their attributes, that did */
	char name[NAME_MAX + 1];
	char *long_name; /* for names past NAME_MAX (hostile archives) */
};

static bool dir_add(struct dir_fill *d, const char *name, const struct arch_attr *a, off_t next)
{
	size_t n;

	if (d->plus) {
		struct fuse_entry_param e;
		entry_param(d->t, a, &e);
		if (strcmp(name, ".") == 0 || strcmp(name, "..") == 0) {
			e.ino = 0; /* no lookup count for these */
		} else if (d->bare < d->bare_room && !S_ISDIR(a->mode)) {
			e.ino = 0; /* the name and type only: no dentry nor inode made for it */
			d->bare++;
		}
		n = fuse_add_direntry_plus(d->req, d->buf + d->pos, d->size - d->pos, name, &e, next);
	} else {
		struct stat st;
		to_stat(d->t, a, &st);
		n = fuse_add_direntry(d->req, d->buf + d->pos, d->size - d->pos, name, &st, next);
	}
	if (n > d->size - d->pos)
		return false;
	d->pos += n;
	return true;
}

static int dir_entry(void *opaque, const char *name, size_t len, const struct arch_attr *a,
		     uint64_t cookie)
{
	struct dir_fill *d = opaque;
	const char *z = d->name;

	if (len <= NAME_MAX) {
		memcpy(d->name, name, len);
		d->name[len] = '\0';
	} else {
		char *p = realloc(d->long_name, len + 1);
		if (!p)
			return -ENOMEM; /* an error reply, never a listing cut short */
		d->long_name = p;
		memcpy(p, name, len);
		p[len] = '\0';
		z = p;
	}
	return dir_add(d, z, a, (off_t)(cookie + 2)) ? 0 : 1;
}

static void do_readdir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off, bool plus,
		       struct fuse_file_info *fi)
{
	struct tfs *t = tfs_of(req);
	struct dir_fill d = {.req = req, .t = t, .size = size, .plus = plus};
	struct un_dir *dir = (struct un_dir *)(uintptr_t)fi->fh;
	struct th_ref *ref = NULL;
	struct arch_attr self;
	int err = un_getattr(t->un, ino, &self);

	if (!err && !dir) /* no opendir: the listing by inode, made anew when it starts over */
		err = th_dir(t->handles, ino, off == 0, &dir, &ref);
	if (err) {
		reply_err(req, err);
		return;
	}
	d.buf = malloc(size);
	if (!d.buf) {
		th_put(t->handles, ref);
		reply_err(req, -ENOMEM);
		return;
	}
	dp_listing_request(t->dp, fuse_req_ctx(req)->pid, off == 0);
	if (plus)
		d.bare_room = dp_bare_room(t->dp, fuse_req_ctx(req)->pid, ino, off == 0);
	if (off == 0 && !dir_add(&d, ".", &self, 1))
		goto done;
	if (off <= 1 && !dir_add(&d, "..", &self, 2))
		goto done;
	err = un_readdir(t->un, dir, off > 2 ? (uint64_t)off - 2 : 0, dir_entry, &d);
done:
	if (d.bare)
		dp_listed_bare(t->dp, ino, d.bare);
	if (err && d.pos == 0)
		reply_err(req, err);
	else
		fuse_reply_buf(req, d.buf, d.pos);
	th_put(t->handles, ref);
	free(d.buf);
	free(d.long_name);
}

static void tfs_readdir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
			struct fuse_file_info *fi)
{
	REQ(req, TFS_OP_READDIR);
	do_readdir(req, ino, size, off, false, fi);
}

static void tfs_readdirplus(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
			    struct fuse_file_info *fi)
{
	REQ(req, TFS_OP_READDIRPLUS);
	do_readdir(req, ino, size, off, true, fi);
}

static void tfs_releasedir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	REQ(req, TFS_OP_RELEASEDIR);
	un_closedir((struct un_dir *)(uintptr_t)fi->fh);
	fuse_reply_err(req, 0);
}

static void tfs_open(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	REQ(req, TFS_OP_OPEN);
	struct tfs *t = tfs_of(req);
	struct un_file *f;
	int err;

	if ((fi->flags & O_ACCMODE) != O_RDONLY || (fi->flags & O_TRUNC)) {
		reply_err(req, -EROFS);
		return;
	}
	if (t->no_open) { /* from now on the kernel opens files itself: no open, no release */
		reply_err(req, -ENOSYS);
		return;
	}
	err = un_open(t->un, ino, &f);
	if (err) {
		reply_err(req, err);
		return;
	}
	fi->fh = (uint64_t)(uintptr_t)f;
	fi->keep_cache = 1;
	fi->noflush = 1;
	if (fuse_reply_open(req, fi) == -ENOENT) /* the open was interrupted */
		un_close(f);
}

/* The buffers READs' replies are made in: taken from a small stack and put back after the
 * reply, so that the few requests served at once reuse the same memory.  A buffer malloc'd
 * and freed per request came back from glibc in fresh pages every few requests (~270 page
 * faults in a cold pass over 1000 small files of backup.tar.xz, 10-40 us each on the VMs
 * measured here), and one per FUSE thread faulted in again with every new thread.  A buffer
 * is at least REPLY_MIN bytes (the kernel's largest read of a small file), grown when a
 * request wants more; at most REPLY_KEEP are kept.  One lock, taken alone. */
#define REPLY_MIN ((size_t)128 << 10)
#define REPLY_KEEP 8

struct reply_buf {
	size_t cap;
	char data[];
};

static struct {
	pthread_mutex_t lock;
	size_t n;
	struct reply_buf *b[REPLY_KEEP];
} replies = {.lock = PTHREAD_MUTEX_INITIALIZER};

/* A buffer of at least size bytes, or NULL if out of memory. */
static struct reply_buf *reply_get(size_t size)
{
	struct reply_buf *b = NULL;

	pthread_mutex_lock(&replies.lock);
	if (replies.n)
		b = replies.b[--replies.n];
	pthread_mutex_unlock(&replies.lock);
	if (!b || b->cap < size) {
		size_t cap = size > REPLY_MIN ? size : REPLY_MIN;
		free(b);
		b = malloc(sizeof(*b) + cap);
		if (!b)
			return NULL;
		b->cap = cap;
	}
	return b;
}

static void reply_put(struct reply_buf *b)
{
	pthread_mutex_lock(&replies.lock);
	if (replies.n < REPLY_KEEP) {
		replies.b[replies.n++] = b;
		b = NULL;
	}
	pthread_mutex_unlock(&replies.lock);
	free(b);
}

/* Whether every page of [off, off + len) of fd is in the page cache (cachestat(2), Linux
 * 6.5; false where it is missing). */
static bool in_page_cache(int fd, uint64_t off, uint64_t len)
{
	struct {
		uint64_t off, len;
	} range = {off, len};
	struct {
		uint64_t nr_cache, nr_dirty, nr_writeback, nr_evicted, nr_recently_evicted;
	} cs;
	uint64_t first = off / 4096, last = (off + len + 4095) / 4096;

	if (syscall(SYS_CACHESTAT, fd, &range, &cs, 0) != 0)
		return false;
	return cs.nr_cache >= last - first;
}

static void tfs_read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		     struct fuse_file_info *fi)
{
	REQ(req, TFS_OP_READ);
	struct tfs *t = tfs_of(req);
	struct un_file *f = (struct un_file *)(uintptr_t)fi->fh;
	struct th_ref *ref = NULL;
	int fd;
	uint64_t fd_off;

	if (t->debug)
		tfs_log(TFS_LOG_DEBUG, "read(%lu, %zu @ %lld)", (unsigned long)ino, size, (long long)off);
	if (!f) { /* no open: the file by inode */
		int err = th_file(t->handles, ino, &f, &ref);
		if (err) {
			reply_err(req, err);
			return;
		}
	}
	size_t n = un_direct(f, (uint64_t)off, size, &fd, &fd_off);
	if (n) {
		struct fuse_bufvec bv = FUSE_BUFVEC_INIT(n);
		if (!in_page_cache(fd, fd_off, n))
			may_block(); /* the reply reads the disk */
		bv.buf[0].flags = FUSE_BUF_IS_FD | FUSE_BUF_FD_SEEK;
		bv.buf[0].fd = fd;
		bv.buf[0].pos = (off_t)fd_off;
		fuse_reply_data(req, &bv, FUSE_BUF_SPLICE_MOVE);
		th_put(t->handles, ref);
		return;
	}
	struct reply_buf *buf = reply_get(size);
	if (!buf) {
		th_put(t->handles, ref);
		reply_err(req, -ENOMEM);
		return;
	}
	ssize_t r = un_read(f, buf->data, size, (uint64_t)off);
	th_put(t->handles, ref);
	if (r < 0)
		reply_err(req, (int)r);
	else
		fuse_reply_buf(req, buf->data, (size_t)r);
	reply_put(buf);
}

/* Nothing to flush on a read-only file system: ENOSYS, and the kernel stops asking. */
static void tfs_flush(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	REQ(req, TFS_OP_FLUSH);
	reply_err(req, -ENOSYS);
}

static void tfs_release(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	REQ(req, TFS_OP_RELEASE);
	un_close((struct un_file *)(uintptr_t)fi->fh);
	fuse_reply_err(req, 0);
}

/* Inode numbers are the index's: nothing to forget, only to count. */
static void tfs_forget(fuse_req_t req, fuse_ino_t ino, uint64_t nlookup)
{
	REQ(req, TFS_OP_FORGET);
	fuse_reply_none(req);
}

static void tfs_forget_multi(fuse_req_t req, size_t count, struct fuse_forget_data *forgets)
{
	REQ(req, TFS_OP_FORGET);
	fuse_reply_none(req);
}

static void tfs_statfs(fuse_req_t req, fuse_ino_t ino)
{
	REQ(req, TFS_OP_STATFS);
	struct tfs *t = tfs_of(req);
	struct statvfs sv;
	uint64_t entries, bytes;

	un_totals(t->un, &entries, &bytes);
	memset(&sv, 0, sizeof(sv));
	sv.f_bsize = BLKSIZE;
	sv.f_frsize = 512;
	sv.f_blocks = (bytes + 511) / 512;
	sv.f_files = entries;
	sv.f_namemax = 255;
	sv.f_flag = ST_RDONLY;
	fuse_reply_statfs(req, &sv);
}

static void tfs_getxattr(fuse_req_t req, fuse_ino_t ino, const char *name, size_t size)
{
	REQ(req, TFS_OP_GETXATTR);
	struct tfs *t = tfs_of(req);
	char *buf = NULL;
	ssize_t n;

	if (size) {
		buf = malloc(size);
		if (!buf) {
			reply_err(req, -ENOMEM);
			return;
		}
	}
	if (ino == FUSE_ROOT_ID && strcmp(name, "user.tarseek.requests") == 0)
		n = format_counts(t, buf, size);
	else if (ino == FUSE_ROOT_ID && strcmp(name, "user.tarseek.prefetch") == 0)
		n = format_prefetch(t, buf, size);
	else if (ino == FUSE_ROOT_ID && strcmp(name, "user.tarseek.pid") == 0)
		n = format_pid(buf, size);
	else if (ino == FUSE_ROOT_ID && strcmp(name, "user.tarseek.log") == 0)
		n = format_log(buf, size);
	else
		n = un_getxattr(t->un, ino, name, buf, size);
	if (n < 0)
		reply_err(req, (int)n);
	else if (size == 0)
		fuse_reply_xattr(req, (size_t)n);
	else
		fuse_reply_buf(req, buf, (size_t)n);
	free(buf);
}

static void tfs_listxattr(fuse_req_t req, fuse_ino_t ino, size_t size)
{
	REQ(req, TFS_OP_LISTXATTR);
	struct tfs *t = tfs_of(req);
	char *buf = NULL;
	ssize_t n;

	if (size) {
		buf = malloc(size);
		if (!buf) {
			reply_err(req, -ENOMEM);
			return;
		}
	}
	n = un_listxattr(t->un, ino, buf, size);
	if (n < 0)
		reply_err(req, (int)n);
	else if (size == 0)
		fuse_reply_xattr(req, (size_t)n);
	else
		fuse_reply_buf(req, buf, (size_t)n);
	free(buf);
}

/* Everything that would change the filesystem.  The mount is also "ro", so the kernel
 * normally refuses these before they reach us. */
static void tfs_setattr(fuse_req_t req, fuse_ino_t ino, struct stat *attr, int to_set,
			struct fuse_file_info *fi)
{
	REQ(req, TFS_OP_REFUSED);
	reply_err(req, -EROFS);
}

static void tfs_mknod(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode, dev_t rdev)
{
	REQ(req, TFS_OP_REFUSED);
	reply_err(req, -EROFS);
}

static void tfs_mkdir(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode)
{
	REQ(req, TFS_OP_REFUSED);
	reply_err(req, -EROFS);
}

static void tfs_unlink(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	REQ(req, TFS_OP_REFUSED);
	reply_err(req, -EROFS);
}

static void tfs_symlink(fuse_req_t req, const char *link, fuse_ino_t parent, const char *name)
{
	REQ(req, TFS_OP_REFUSED);
	reply_err(req, -EROFS);
}

static void tfs_rename(fuse_req_t req, fuse_ino_t parent, const char *name, fuse_ino_t newparent,
		       const char *newname, unsigned int flags)
{
	REQ(req, TFS_OP_REFUSED);
	reply_err(req, -EROFS);
}

static void tfs_link(fuse_req_t req, fuse_ino_t ino, fuse_ino_t newparent, const char *newname)
{
	REQ(req, TFS_OP_REFUSED);
	reply_err(req, -EROFS);
}

static void tfs_write(fuse_req_t req, fuse_ino_t ino, const char *buf, size_t size, off_t off,
		      struct fuse_file_info *fi)
{
	REQ(req, TFS_OP_REFUSED);
	reply_err(req, -EROFS);
}

static void tfs_create(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode,
		       struct fuse_file_info *fi)
{
	REQ(req, TFS_OP_REFUSED);
	reply_err(req, -EROFS);
}

static void tfs_setxattr(fuse_req_t req, fuse_ino_t ino, const char *name, const char *value,
			 size_t size, int flags)
{
	REQ(req, TFS_OP_REFUSED);
	reply_err(req, -EROFS);
}

static void tfs_removexattr(fuse_req_t req, fuse_ino_t ino, const char *name)
{
	REQ(req, TFS_OP_REFUSED);
	reply_err(req, -EROFS);
}

const struct fuse_lowlevel_ops tfs_ops = {
	.init = tfs_init,
	.lookup = tfs_lookup,
	.getattr = tfs_getattr,
	.readlink = tfs_readlink,
	.opendir = tfs_opendir,
	.readdir = tfs_readdir,
	.readdirplus = tfs_readdirplus,
	.releasedir = tfs_releasedir,
	.open = tfs_open,
	.read = tfs_read,
	.flush = tfs_flush,
	.release = tfs_release,
	.forget = tfs_forget,
	.forget_multi = tfs_forget_multi,
	.statfs = tfs_statfs,
	.getxattr = tfs_getxattr,
	.listxattr = tfs_listxattr,
	.setattr = tfs_setattr,
	.mknod = tfs_mknod,
	.mkdir = tfs_mkdir,
	.unlink = tfs_unlink,
	.rmdir = tfs_unlink,
	.symlink = tfs_symlink,
	.rename = tfs_rename,
	.link = tfs_link,
	.write = tfs_write,
	.create = tfs_create,
	.setxattr = tfs_setxattr,
	.removexattr = tfs_removexattr,
};
