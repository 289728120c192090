/* The request loop (see loop.h).
 *
 * State, under l->lock: how many threads read the device (receivers: 0 or 1, briefly 2 when
 * a standby has taken over and the thread it stood in for comes back), how many answer a
 * request (busy), the parked threads (a stack: the top one is the standby), when the last
 * request was read and when the device was last left unread.  A thread is, in turn: the
 * receiver (in poll() on the device, made non-blocking, and on stop_fd, which tfs_loop
 * writes to end them all: nothing is cancelled), busy, or parked (waits on its own
 * condition).
 *
 * Lock order: l->lock alone; libfuse's calls are made without it, except poll() of the device.
 *
 * The threads are the loop's own, not jobs of common/pool.h: they run with every signal
 * blocked, so that the exit signals reach the thread in tfs_loop, and each carries
 * hint_slow's hook for its requests.
 */
#include "fs/loop.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <semaphore.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#include "common/hint.h"
#include "common/log.h"

struct loop;

struct worker {
	struct loop *l;
	pthread_t th;
	pthread_cond_t cond;
	struct worker *below; /* the next one down the parked stack */
	struct fuse_buf buf;
};

struct loop {
	struct fuse_session *se;
	int fd;
	int stop_fd; /* eventfd: written when the loop ends, to end the receivers' poll */
	pthread_mutex_t lock;
	struct worker **all; /* started so far (joined by tfs_loop) */
	unsigned n, max;
	struct worker *parked; /* the top one is the standby */
	unsigned receivers, busy;
	uint64_t unread_since; /* when receivers last fell to 0 */
	uint64_t last_request; /* when the last request was read (0: none yet) */
	bool watching;	       /* the standby waits with a timeout */
	bool go;	       /* a busy thread is about to be slow and requests wait: read */
	bool ending;
	int error;
	sem_t done; /* posted by each worker that leaves */
};

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static bool over(struct loop *l)
{
	return l->ending || fuse_session_exited(l->se);
}

/* Whether a request waits to be read. */
static bool pending(struct loop *l)
{
	struct pollfd p = {.fd = l->fd, .events = POLLIN};

	return poll(&p, 1, 0) == 1;
}

/* Whether a parked thread should read the device now: nobody reads it, and either nobody
 * answers anything (startup) or a request has waited LOOP_TAKEOVER_NS unread. */
static bool take_over(struct loop *l)
{
	if (l->receivers)
		return false;
	if (!l->busy || l->go)
		return true;
	return now_ns() - l->unread_since >= LOOP_TAKEOVER_NS && pending(l);
}

static void *worker_main(void *arg);

/* A new thread, parked until wanted (lock held).  Without one the others carry on. */
static void start_worker(struct loop *l)
{
	struct worker *w = calloc(1, sizeof(*w));
	sigset_t all, old;

	pthread_condattr_t ca;

	if (!w || l->ending) {
		free(w);
		return;
	}
	w->l = l;
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC); /* park's deadlines */
	pthread_cond_init(&w->cond, &ca);
	pthread_condattr_destroy(&ca);
	/* the exit signals go to the thread in tfs_loop */
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, &old);
	int err = pthread_create(&w->th, NULL, worker_main, w);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (err) {
		pthread_cond_destroy(&w->cond);
		free(w);
		tfs_log(TFS_LOG_WARNING, "cannot start a request thread: %s", strerror(err));
		return;
	}
	l->all[l->n++] = w;
}

/* Waits on the parked stack until this thread is to read the device, or the loop ends
 * (lock held).  The standby looks every LOOP_TAKEOVER_NS while requests come; the others,
 * and the standby once requests have stopped for LOOP_IDLE_NS, wait to be woken. */
static void park(struct loop *l, struct worker *w)
{
	w->below = l->parked;
	l->parked = w;
	while (!over(l)) {
		bool standby = l->parked == w;
		if (standby && take_over(l))
			break;
		if (standby && now_ns() - l->last_request < LOOP_IDLE_NS) {
			struct timespec ts;
			clock_gettime(CLOCK_MONOTONIC, &ts);
			ts.tv_nsec += LOOP_TAKEOVER_NS;
			if (ts.tv_nsec >= 1000000000) {
				ts.tv_sec++;
				ts.tv_nsec -= 1000000000;
			}
			l->watching = true;
			pthread_cond_timedwait(&w->cond, &l->lock, &ts);
		} else {
			if (standby)
				l->watching = false;
			pthread_cond_wait(&w->cond, &l->lock);
		}
	}
	/* taking over (then it is the top), or the loop is over: off the stack, wherever it is */
	for (struct worker **pp = &l->parked; *pp; pp = &(*pp)->below)
		if (*pp == w) {
			if (pp == &l->parked)
				l->watching = false;
			*pp = w->below;
			break;
		}
}

/* hint_slow's hook on a request thread (see hint.h): it is about to decode or to wait for a
 * decode.  If nobody reads the device and a request waits there, another thread reads it
 * now instead of after LOOP_TAKEOVER_NS: the standby, or a new one. */
static void slow_ahead(void *arg)
{
	struct worker *w = arg;
	struct loop *l = w->l;

	pthread_mutex_lock(&l->lock);
	if (!l->receivers && !l->go && !over(l) && pending(l)) {
		l->go = true;
		if (l->parked)
			pthread_cond_signal(&l->parked->cond);
		else if (l->n < l->max)
			start_worker(l);
	}
	pthread_mutex_unlock(&l->lock);
}

/* Reads one request (lock not held): what fuse_session_receive_buf returns, or -ECANCELED
 * when the loop ends first.  The device is non-blocking and waited for with poll, beside
 * stop_fd: no thread has to be cancelled out of a read(). */
static int receive(struct loop *l, struct worker *w)
{
	struct pollfd p[2] = {{.fd = l->fd, .events = POLLIN}, {.fd = l->stop_fd, .events = POLLIN}};

	for (;;) {
		if (poll(p, 2, -1) < 0)
			return errno == EINTR ? -EINTR : -errno;
		if (p[1].revents)
			return -ECANCELED;
		int res = fuse_session_receive_buf(l->se, &w->buf); /* unmounted: 0 */
		if (res != -EAGAIN) /* another thread took it */
			return res;
	}
}

static void *worker_main(void *arg)
{
	struct worker *w = arg;
	struct loop *l = w->l;
	bool hot = false; /* has just answered a request: reads the next one itself */

	hint_set_slow(slow_ahead, w);
	pthread_mutex_lock(&l->lock);
	while (!over(l)) {
		if (!(l->receivers == 0 && (hot || take_over(l)))) {
			hot = false;
			park(l, w);
			continue;
		}
		l->receivers++;
		l->go = false;
		pthread_mutex_unlock(&l->lock);
		int res = receive(l, w);
		pthread_mutex_lock(&l->lock);
		uint64_t t = now_ns();
		if (--l->receivers == 0)
			l->unread_since = t;
		hot = true;
		if (res == -EINTR)
			continue;
		if (res == -ECANCELED)
			break;
		if (res <= 0) { /* unmounted (0: libfuse ended the session), or an error */
			if (res < 0 && !l->error)
				l->error = res;
			fuse_session_exit(l->se);
			break;
		}
		l->last_request = t;
		l->busy++;
		if (!l->parked && l->n < l->max)
			start_worker(l); /* a standby, for when this request blocks */
		else if (l->parked && !l->go && pending(l)) {
			l->go = true; /* two asking at once (a find beside the warm-up's walk) */
			pthread_cond_signal(&l->parked->cond);
		} else if (l->parked && !l->watching)
			pthread_cond_signal(&l->parked->cond); /* requests again: look out */
		pthread_mutex_unlock(&l->lock);
		fuse_session_process_buf(l->se, &w->buf);
		pthread_mutex_lock(&l->lock);
		l->busy--;
	}
	l->ending = true;
	for (struct worker *p = l->parked; p; p = p->below)
		pthread_cond_signal(&p->cond);
	pthread_mutex_unlock(&l->lock);
	sem_post(&l->done);
	return NULL;
}

int tfs_loop(struct fuse_session *se, unsigned max_threads)
{
	struct loop l = {.se = se, .fd = fuse_session_fd(se), .max = max_threads ? max_threads : 1};
	int ret = -ENOMEM, flags = fcntl(l.fd, F_GETFL);

	l.stop_fd = eventfd(0, EFD_CLOEXEC);
	l.all = calloc(l.max, sizeof(*l.all));
	if (l.stop_fd < 0 || !l.all || flags < 0 || sem_init(&l.done, 0, 0) < 0)
		goto out_free;
	if (fcntl(l.fd, F_SETFL, flags | O_NONBLOCK) < 0) {
		ret = -errno;
		goto out_sem;
	}
	pthread_mutex_init(&l.lock, NULL);
	pthread_mutex_lock(&l.lock);
	start_worker(&l);
	unsigned started = l.n;
	pthread_mutex_unlock(&l.lock);
	if (!started) {
		ret = -EAGAIN;
		goto out;
	}
	while (!fuse_session_exited(se))
		sem_wait(&l.done); /* a signal's handler ends the session and interrupts this */
	pthread_mutex_lock(&l.lock);
	l.ending = true;
	for (struct worker *p = l.parked; p; p = p->below)
		pthread_cond_signal(&p->cond);
	unsigned n = l.n; /* no thread is started once ending is set */
	pthread_mutex_unlock(&l.lock);
	uint64_t one = 1;
	if (write(l.stop_fd, &one, sizeof(one)) != sizeof(one)) /* the receivers' poll ends */
		tfs_log(TFS_LOG_WARNING, "request loop: cannot stop its threads: %s", strerror(errno));
	for (unsigned i = 0; i < n; i++) { /* a busy thread finishes its request first */
		pthread_join(l.all[i]->th, NULL);
		pthread_cond_destroy(&l.all[i]->cond);
		free(l.all[i]->buf.mem);
		free(l.all[i]);
	}
	ret = l.error;
	fuse_session_reset(se);
out:
	fcntl(l.fd, F_SETFL, flags);
	pthread_mutex_destroy(&l.lock);
out_sem:
	sem_destroy(&l.done);
out_free:
	if (l.stop_fd >= 0)
		close(l.stop_fd);
	free(l.all);
	return ret;
}
