/* The FUSE session loop: a leader reading /dev/fuse, followers waiting their turn (see
 * loop.h).
 *
 * State, under the loop's lock: whether a thread holds the lead (reads the device), how many
 * threads exist and how many wait for the lead.  Threads are jobs of the process's pool
 * (common/pool.h) on threads of their own (pool_start_own: libfuse's per-thread pipe goes
 * with each when loop_run joins it, before the session ends), started as they are needed
 * (a leader hands the lead over and nobody waits for it); they stay until the end, when
 * loop_run joins them all: at most max_threads, as in libfuse's loop.
 *
 * The end is final and shown by one eventfd (wake_fd), written once: by the thread whose
 * read found the session gone, or by loop_wake from a signal handler.  The leader polls it
 * beside the device, loop_run polls it, and the followers are woken by a broadcast.
 */
#include "fs/loop.h"

#define FUSE_USE_VERSION 312
#include <errno.h>
#include <fcntl.h>
#include <fuse_lowlevel.h>
#include <linux/fuse.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#include "common/log.h"
#include "common/may_block.h"
#include "common/pool.h"

#define LOOP_THREADS_MAX 64

struct loop {
	struct fuse_session *se;
	int fd;		      /* the session's device, O_NONBLOCK */
	int wake_fd;	      /* eventfd: readable once the loop ends */
	uint64_t spin_ns, busy_spin_ns; /* the leader reads this long before it sleeps */
	bool (*busy)(void *arg);
	void *busy_arg;
	unsigned max_threads; /* <= LOOP_THREADS_MAX */
	pthread_mutex_t lock;
	pthread_cond_t turn; /* followers wait here for the lead */
	bool lead_taken;     /* a thread reads the device */
	atomic_bool ending;
	unsigned threads, waiting;
	int err; /* the first failure (-errno), 0 if none */
	struct worker *w[LOOP_THREADS_MAX];
};

struct worker {
	struct loop *l;
	struct pool_job *job; /* its thread (common/pool.h), joined by loop_run */
	bool lead;	      /* this thread holds the lead */
};

/* For loop_wake (a signal handler): the running loop's eventfd, or -1. */
static atomic_int signal_fd = -1;

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void wake_all(int fd)
{
	uint64_t one = 1;

	while (write(fd, &one, sizeof(one)) < 0 && errno == EINTR)
		;
}

void loop_wake(void)
{
	int fd = atomic_load(&signal_fd);

	if (fd >= 0)
		wake_all(fd); /* write(2) is async-signal-safe */
}

static void end_locked(struct loop *l, int err)
{
	if (err && !l->err)
		l->err = err;
	if (!atomic_exchange(&l->ending, true)) {
		wake_all(l->wake_fd);
		pthread_cond_broadcast(&l->turn);
	}
}

/* The next request into buf: > 0, or 0 when the session has ended, or -errno.  Reads
 * without sleeping for spin_ns first, then sleeps in poll() until the device or wake_fd
 * is readable. */
static int receive(struct loop *l, struct fuse_buf *buf)
{
	uint64_t spin = l->busy && l->busy(l->busy_arg) ? l->busy_spin_ns : l->spin_ns;
	uint64_t until = spin ? now_ns() + spin : 0;

	for (;;) {
		int res;

		if (atomic_load(&l->ending) || fuse_session_exited(l->se))
			return 0;
		res = fuse_session_receive_buf(l->se, buf);
		if (res != -EAGAIN && res != -EINTR)
			return res; /* a request, 0 (the session ended: libfuse marked it), -errno */
		if (res == -EINTR || (until && now_ns() < until))
			continue;
		until = 0; /* spin once per request, not after every wake-up */
		struct pollfd p[2] = {{.fd = l->fd, .events = POLLIN},
				      {.fd = l->wake_fd, .events = POLLIN}};
		if (poll(p, 2, -1) < 0 && errno != EINTR)
			return -errno;
		if (p[1].revents)
			return 0;
	}
}

static void *worker_main(void *arg);

/* Starts a thread that takes the lead.  0 or -errno. */
static int start_locked(struct loop *l)
{
	struct worker *w = calloc(1, sizeof(*w));
	int err;

	if (!w)
		return -ENOMEM;
	w->l = l;
	w->lead = true;
	l->lead_taken = true;
	err = pool_start_own(worker_main, w, "tarseek-fuse", 0, &w->job);
	if (err) {
		l->lead_taken = false;
		free(w);
		return err;
	}
	l->w[l->threads++] = w;
	return 0;
}

/* w's thread lets go of the lead: a waiting follower takes it, or a new thread, or (none
 * can be started) the first thread that is done with its request. */
static void give_lead_locked(struct worker *w)
{
	struct loop *l = w->l;

	w->lead = false;
	l->lead_taken = false;
	if (l->waiting)
		pthread_cond_signal(&l->turn);
	else if (l->threads < l->max_threads && !atomic_load(&l->ending))
		start_locked(l); /* on failure the lead stays free */
}

/* may_block's hook while the leader answers a request itself. */
static void lead_over(void *arg)
{
	struct worker *w = arg;

	pthread_mutex_lock(&w->l->lock);
	give_lead_locked(w);
	pthread_mutex_unlock(&w->l->lock);
}

/* Requests that the handlers answer from memory, without waiting: the leader answers them
 * itself.  Everything else, and a request spliced into a pipe (no header to look at), is
 * answered after the lead has gone to another thread. */
static bool quick(const struct fuse_buf *b)
{
	const struct fuse_in_header *in = b->mem;

	if ((b->flags & FUSE_BUF_IS_FD) || b->size < sizeof(*in))
		return false;
	switch (in->opcode) {
	case FUSE_LOOKUP:
	case FUSE_FORGET:
	case FUSE_BATCH_FORGET:
	case FUSE_GETATTR:
	case FUSE_READLINK:
	case FUSE_OPEN:
	case FUSE_OPENDIR:
	case FUSE_READDIR:
	case FUSE_READDIRPLUS:
	case FUSE_RELEASE:
	case FUSE_RELEASEDIR:
	case FUSE_FLUSH:
	case FUSE_STATFS:
	case FUSE_GETXATTR:
	case FUSE_LISTXATTR:
	case FUSE_INTERRUPT:
	case FUSE_READ:
		return true;
	default:
		return false;
	}
}

static void *worker_main(void *arg)
{
	struct worker *w = arg;
	struct loop *l = w->l;
	struct fuse_buf buf = {.mem = NULL};

	pthread_mutex_lock(&l->lock);
	while (!atomic_load(&l->ending)) {
		if (!w->lead) {
			if (l->lead_taken) {
				l->waiting++;
				pthread_cond_wait(&l->turn, &l->lock);
				l->waiting--;
				continue;
			}
			w->lead = l->lead_taken = true;
		}
		pthread_mutex_unlock(&l->lock);
		int res = receive(l, &buf);
		pthread_mutex_lock(&l->lock);
		if (res <= 0) {
			end_locked(l, res);
			break;
		}
		if (quick(&buf)) {
			pthread_mutex_unlock(&l->lock);
			may_block_arm(lead_over, w);
			fuse_session_process_buf(l->se, &buf);
			may_block_arm(NULL, NULL);
		} else {
			give_lead_locked(w);
			pthread_mutex_unlock(&l->lock);
			fuse_session_process_buf(l->se, &buf);
		}
		pthread_mutex_lock(&l->lock);
	}
	if (w->lead)
		l->lead_taken = false;
	pthread_mutex_unlock(&l->lock);
	free(buf.mem);
	return NULL;
}

int loop_run(struct fuse_session *se, const struct loop_params *p)
{
	struct loop l = {.se = se, .fd = fuse_session_fd(se), .spin_ns = (uint64_t)p->spin_us * 1000u,
			 .busy_spin_ns = (uint64_t)p->busy_spin_us * 1000u, .busy = p->busy,
			 .busy_arg = p->busy_arg, .max_threads = p->max_threads};
	int flags = fcntl(l.fd, F_GETFL), err = 0;

	if (l.max_threads < 1)
		l.max_threads = 1;
	if (l.max_threads > LOOP_THREADS_MAX)
		l.max_threads = LOOP_THREADS_MAX;
	if (flags < 0 || fcntl(l.fd, F_SETFL, flags | O_NONBLOCK) < 0)
		return -errno;
	l.wake_fd = eventfd(0, EFD_CLOEXEC);
	if (l.wake_fd < 0)
		return -errno;
	pthread_mutex_init(&l.lock, NULL);
	pthread_cond_init(&l.turn, NULL);
	atomic_store(&signal_fd, l.wake_fd);
	pthread_mutex_lock(&l.lock);
	err = start_locked(&l);
	pthread_mutex_unlock(&l.lock);
	if (err)
		tfs_log(TFS_LOG_ERR, "cannot start a thread for the requests: %s", strerror(-err));
	/* Wait for the end: the session gone (a thread ends the loop) or a signal (its handler
	 * exits the session and writes wake_fd, through loop_wake). */
	while (!err) {
		struct pollfd pw = {.fd = l.wake_fd, .events = POLLIN};

		if (poll(&pw, 1, -1) > 0 || fuse_session_exited(se))
			break;
	}
	pthread_mutex_lock(&l.lock);
	end_locked(&l, 0);
	unsigned n = l.threads; /* no thread starts once the loop ends */
	pthread_mutex_unlock(&l.lock);
	atomic_store(&signal_fd, -1);
	for (unsigned i = 0; i < n; i++) {
		pool_join(l.w[i]->job);
		free(l.w[i]);
	}
	if (!err)
		err = l.err;
	pthread_cond_destroy(&l.turn);
	pthread_mutex_destroy(&l.lock);
	close(l.wake_fd);
	fcntl(l.fd, F_SETFL, flags);
	return err;
}
