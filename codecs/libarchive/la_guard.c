/* A watched walk of an archive's headers by libarchive in a child process: see la_guard.h.
 *
 * Why a child, and not bounds inside the daemon: the loops found (libarchive 3.6.2's xar
 * reader following two <link>s of a file round and round, its iso9660 reader queueing a Rock
 * Ridge continuation entry that points at itself) happen inside one libarchive call, without a
 * read of ours in between -- a read callback that counts offsets never runs, a thread cannot
 * be stopped inside libarchive, and memory libarchive allocates cannot be capped for one
 * thread.  A process can be killed, and its memory measured.
 *
 * Why the child reads through the parent: the source may be a member of another archive
 * (decoded through the cache and the worker pool) or a remote file: after a fork in a
 * multithreaded daemon only the forking thread exists, and a lock another thread held at
 * the fork stays held.  So the child's source is a pipe: it writes a request (offset,
 * length), the parent reads the source into a shared buffer (mmap'd before the fork) and
 * answers with the byte count.  The parent sees every read, so it also knows how far the
 * child has got.  (Reading the same bytes again and again is bounded where every libarchive
 * reader is, in libarchive_src.c's read callback: the child's walk then ends at that error,
 * and the daemon's passes meet it too.)  The child also reports how many
 * headers it has read (at most every LAG_REPORT_MS, so a walk of many small headers costs
 * little).
 *
 * The cost for an honest archive: a fork (page tables only), and one more walk over the
 * headers (the entries' data skipped: libarchive seeks past it where the format lets it).
 */
#include "codecs/libarchive/la_guard.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "codecs/libarchive/la_dl.h"
#include "codecs/libarchive/libarchive_src.h"
#include "common/env.h"
#include "common/log.h"

#define LAG_WATCHDOG_S 10
#define LAG_MEMORY_MIB 1024
#define LAG_POLL_MS 50
#define LAG_REPORT_MS 50

enum { LAG_READ = 1, LAG_HEADERS, LAG_DONE };
enum { LAG_END = 0, LAG_TOO_MANY = 1 }; /* a LAG_DONE's off */

/* A message of the child; the parent answers a LAG_READ with an int64_t: bytes in the shared
 * buffer, or -errno. */
struct lag_msg {
	uint32_t kind;
	uint32_t len;
	uint64_t off;
};
_Static_assert(sizeof(struct lag_msg) == 16, "a message is one atomic pipe write");

struct lag {
	int req[2]; /* child -> parent: messages */
	int rep[2]; /* parent -> child: answers to LAG_READ */
	uint8_t *shm; /* LA_BUF bytes, shared */
};

static int lag_full(int fd, void *p, size_t len, bool out)
{
	size_t done = 0;

	while (done < len) {
		ssize_t n = out ? write(fd, (const uint8_t *)p + done, len - done)
				: read(fd, (uint8_t *)p + done, len - done);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return n < 0 ? -errno : -EPIPE;
		done += (size_t)n;
	}
	return 0;
}

static uint64_t lag_ms(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)t.tv_sec * 1000 + (uint64_t)t.tv_nsec / 1000000;
}

/* ---- the child ---- */

static ssize_t lag_pipe_pread(void *opaque, void *buf, size_t len, uint64_t off)
{
	struct lag *g = opaque;
	struct lag_msg m = {.kind = LAG_READ, .len = (uint32_t)(len < LA_BUF ? len : LA_BUF),
			    .off = off};
	int64_t n;

	if (lag_full(g->req[1], &m, sizeof(m), true) || lag_full(g->rep[0], &n, sizeof(n), false))
		return -EIO;
	if (n > (int64_t)m.len)
		return -EIO;
	if (n > 0)
		memcpy(buf, g->shm, (size_t)n);
	return (ssize_t)n;
}

static const struct src_ops lag_pipe_ops = {.pread = lag_pipe_pread};

/* The walk: every header, the data skipped.  Never returns. */
static void lag_child(struct lag *g, struct src *pipe_src)
{
	struct la_src l;
	struct archive_entry *e;
	struct lag_msg m = {.kind = LAG_DONE, .off = LAG_END};
	uint64_t n = 0, last = lag_ms();

	tfs_log_level = 0; /* no log line, not even a debug one: the logger's lock */
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	close(g->req[0]);
	close(g->rep[1]);
	if (la_open(&l, pipe_src) == 0) {
		while (sym_archive_read_next_header(l.a, &e) >= ARCHIVE_WARN) {
			if (++n > LAG_ENTRIES) {
				m.off = LAG_TOO_MANY;
				break;
			}
			if (lag_ms() - last >= LAG_REPORT_MS) {
				struct lag_msg h = {.kind = LAG_HEADERS, .off = n};
				if (lag_full(g->req[1], &h, sizeof(h), true))
					_exit(1);
				last = lag_ms();
			}
			if (sym_archive_read_data_skip(l.a) < ARCHIVE_WARN)
				break;
		}
	}
	/* (libarchive's error, if any, is the container's to report: it reads the same) */
	lag_full(g->req[1], &m, sizeof(m), true);
	_exit(0);
}

/* ---- the parent ---- */

/* The child's resident bytes, or 0 if unknown. */
static uint64_t lag_rss(pid_t pid)
{
	char path[64], buf[128];
	unsigned long long size, res;
	int fd;
	ssize_t n;

	snprintf(path, sizeof(path), "/proc/%d/statm", (int)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return 0;
	buf[n] = 0;
	if (sscanf(buf, "%llu %llu", &size, &res) != 2)
		return 0;
	return (uint64_t)res * (uint64_t)sysconf(_SC_PAGESIZE);
}

/* What the parent knows of the walk. */
struct lag_watch {
	uint64_t reach;	   /* the furthest byte read, + 1 */
	uint64_t headers;  /* as the child last said */
	uint64_t progress; /* lag_ms() of the last progress */
	uint64_t rss0;	   /* the child's resident bytes at its first look */
	int done;	   /* -1: not yet; else a LAG_DONE's off */
};

/* Answers one message.  0, or -errno (the pipe). */
static int lag_serve(struct lag *g, struct src *in, struct lag_watch *w, const struct lag_msg *m)
{
	int64_t n;

	switch (m->kind) {
	case LAG_READ:
		n = src_pread(in, g->shm, m->len < LA_BUF ? m->len : LA_BUF, m->off);
		if (n > 0) {
			if (m->off + (uint64_t)n > w->reach) {
				w->reach = m->off + (uint64_t)n;
				w->progress = lag_ms();
			}
		}
		return lag_full(g->rep[1], &n, sizeof(n), true);
	case LAG_HEADERS:
		if (m->off > w->headers) {
			w->headers = m->off;
			w->progress = lag_ms();
		}
		return 0;
	case LAG_DONE:
		w->done = (int)m->off;
		return 0;
	default:
		return -EPROTO;
	}
}

/* Watches the child until it is done or breaks a bound: 0, -EINVAL (logged), or 1 if it ended
 * without saying it was done (*status then holds its wait status if it was reaped here: a
 * pipe end that another thread's fork copied may keep the pipe open after it died). */
static int lag_watch(struct lag *g, struct src *in, const char *name, pid_t pid, int *status,
		     bool *reaped)
{
	unsigned limit_s = (unsigned)env_number("TARSEEK_LA_WATCHDOG", LAG_WATCHDOG_S, 1, 1000000);
	uint64_t budget = env_number("TARSEEK_LA_MEMORY", LAG_MEMORY_MIB, 1, 1000000) << 20;
	uint64_t last_rss = 0;
	struct lag_watch w = {.progress = lag_ms(), .done = -1};
	struct pollfd p = {.fd = g->req[0], .events = POLLIN};
	struct lag_msg m;

	w.rss0 = lag_rss(pid);
	while (w.done < 0) {
		int r = poll(&p, 1, LAG_POLL_MS);
		if (r < 0 && errno != EINTR)
			break;
		if (r > 0) {
			if (lag_full(g->req[0], &m, sizeof(m), false) || lag_serve(g, in, &w, &m))
				break; /* the child died: said below */
		} else if (waitpid(pid, status, WNOHANG) == pid) {
			*reaped = true;
			break;
		}
		uint64_t now = lag_ms();
		if (now - w.progress > (uint64_t)limit_s * 1000) {
			tfs_log(TFS_LOG_ERR, "%s: libarchive made no progress on it for %u s, after "
				"%" PRIu64 " entries (a hostile archive?): refused", name, limit_s,
				w.headers);
			return -EINVAL;
		}
		if (now - last_rss >= LAG_POLL_MS) {
			uint64_t rss = lag_rss(pid);
			last_rss = now;
			if (rss > w.rss0 && rss - w.rss0 > budget) {
				tfs_log(TFS_LOG_ERR, "%s: libarchive took more than %" PRIu64 " MiB "
					"reading its headers, after %" PRIu64 " entries (a hostile "
					"archive?): refused", name, budget >> 20, w.headers);
				return -EINVAL;
			}
		}
	}
	if (w.done == LAG_TOO_MANY) {
		tfs_log(TFS_LOG_ERR, "%s: more than %" PRIu64 " entries (a hostile archive?): "
			"refused", name, LAG_ENTRIES);
		return -EINVAL;
	}
	return w.done == LAG_END ? 0 : 1; /* 1: the child ended without a word */
}

int la_guard(struct src *in, const char *name)
{
	struct lag g = {.req = {-1, -1}, .rep = {-1, -1}, .shm = MAP_FAILED};
	struct src *pipe_src = NULL;
	pid_t pid = -1;
	int err, status = 0;
	bool reaped = false, started = false;
	const char *off = getenv("TARSEEK_LA_GUARD");

	if (off && !strcmp(off, "0"))
		return 0;
	err = la_load(); /* before the fork: the child loads nothing */
	if (err)
		return err;
	err = -ENOMEM;
	g.shm = mmap(NULL, LA_BUF, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	pipe_src = src_new(&lag_pipe_ops, &g, src_size(in));
	if (g.shm == MAP_FAILED || !pipe_src)
		goto out;
	if (pipe2(g.req, O_CLOEXEC) || pipe2(g.rep, O_CLOEXEC)) {
		err = -errno;
		goto out;
	}
	pid = fork();
	if (pid < 0) {
		err = -errno;
		goto out;
	}
	if (pid == 0)
		lag_child(&g, pipe_src);
	started = true;
	close(g.req[1]);
	close(g.rep[0]);
	g.req[1] = g.rep[0] = -1;
	err = lag_watch(&g, in, name, pid, &status, &reaped);
	if (err && !reaped)
		kill(pid, SIGKILL);
	while (!reaped && waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	if (err == 1 && WIFSIGNALED(status)) {
		tfs_log(TFS_LOG_ERR, "%s: libarchive crashed reading it (signal %d): refused", name,
			WTERMSIG(status));
		err = -EINVAL;
	} else if (err == 1) {
		tfs_log(TFS_LOG_ERR, "%s: libarchive's walk of it ended without a word (exit %d): "
			"refused", name, WIFEXITED(status) ? WEXITSTATUS(status) : -1);
		err = -EINVAL;
	}
out:
	for (int i = 0; i < 2; i++) {
		if (g.req[i] >= 0)
			close(g.req[i]);
		if (g.rep[i] >= 0)
			close(g.rep[i]);
	}
	src_free(pipe_src);
	if (g.shm != MAP_FAILED)
		munmap(g.shm, LA_BUF);
	if (err && !started) {
		/* (a daemon short of memory or of processes still mounts what it can) */
		tfs_log(TFS_LOG_WARNING, "%s: cannot start libarchive's watched walk of it (%s): "
			"it is read unguarded", name, strerror(-err));
		err = 0;
	}
	return err;
}
