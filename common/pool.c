/* The process's thread pool (see pool.h).
 *
 * Each pool thread has a slot: its job (NULL while idle), its niceness, a condition it waits
 * on.  Idle slots form a list; pool_start takes the first idle slot of the wanted niceness or
 * makes a slot and its thread.  A job's end is announced on one condition that every joiner
 * waits on (joins are rare: one per job, and jobs are coarse -- a scan's worker, a mount's
 * decode-ahead thread -- never one per request).  This file holds the project's only
 * pthread_create.
 */
#include "common/pool.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

struct pool_job {
	void *(*fn)(void *arg);
	void *arg;
	void *ret;
	char name[16];
	bool done;	  /* P.lock */
	struct slot *own; /* pool_start_own: its thread, joined by pool_join; else NULL */
};

struct slot {
	pthread_t thread;
	int nice; /* P.lock (set once by the thread itself if it cannot have the one asked) */
	pthread_cond_t wake;
	/* P.lock: */
	struct pool_job *job; /* running or about to: NULL while idle */
	bool quit;
	bool own; /* ends with its job (pool_start_own), never idle */
	struct slot *next_idle, *next_all;
};

static struct {
	pthread_mutex_t lock;
	pthread_cond_t done; /* a job ended */
	bool atfork;	     /* the fork handlers are registered */
	/* lock: */
	struct slot *idle, *all;
	unsigned threads, nidle;
	unsigned long started;
} P = {.lock = PTHREAD_MUTEX_INITIALIZER, .done = PTHREAD_COND_INITIALIZER};

static void *slot_main(void *arg)
{
	struct slot *s = arg;

	/* a thread runs its jobs at the niceness it was made for; it inherits its maker's, which
	 * an unprivileged process cannot lower: then it says what it has, and takes those jobs */
	id_t tid = (id_t)syscall(SYS_gettid);
	int have;
	errno = 0;
	have = getpriority(PRIO_PROCESS, tid);
	if (errno)
		have = 0;
	if (have != s->nice && setpriority(PRIO_PROCESS, tid, s->nice) < 0) {
		pthread_mutex_lock(&P.lock);
		s->nice = have;
		pthread_mutex_unlock(&P.lock);
	}
	pthread_mutex_lock(&P.lock);
	for (;;) {
		while (!s->job && !s->quit)
			pthread_cond_wait(&s->wake, &P.lock);
		if (!s->job)
			break;
		struct pool_job *j = s->job;
		pthread_mutex_unlock(&P.lock);
		pthread_setname_np(pthread_self(), j->name);
		void *ret = j->fn(j->arg);
		pthread_mutex_lock(&P.lock);
		j->ret = ret;
		j->done = true;
		s->job = NULL;
		if (s->own) { /* pool_join joins this thread */
			pthread_cond_broadcast(&P.done);
			break;
		}
		s->next_idle = P.idle;
		P.idle = s;
		P.nidle++;
		pthread_cond_broadcast(&P.done);
	}
	pthread_mutex_unlock(&P.lock);
	return NULL;
}

static void fork_prepare(void)
{
	pthread_mutex_lock(&P.lock);
}

static void fork_parent(void)
{
	pthread_mutex_unlock(&P.lock);
}

/* The child has none of the threads: forget their slots. */
static void fork_child(void)
{
	struct slot *s = P.all;

	while (s) {
		struct slot *next = s->next_all;
		free(s);
		s = next;
	}
	P.all = P.idle = NULL;
	P.threads = P.nidle = 0;
	pthread_mutex_unlock(&P.lock);
}

/* Takes an idle slot of niceness nice out of the idle list (lock held), or NULL. */
static struct slot *take_idle(int nice)
{
	for (struct slot **pp = &P.idle; *pp; pp = &(*pp)->next_idle) {
		if ((*pp)->nice == nice) {
			struct slot *s = *pp;
			*pp = s->next_idle;
			P.nidle--;
			return s;
		}
	}
	return NULL;
}

/* Makes a slot running job j on a new thread (lock held).  0 or -errno. */
static int new_slot(struct pool_job *j, int nice)
{
	struct slot *s = calloc(1, sizeof(*s));
	sigset_t all, old;
	int err;

	if (!s)
		return -ENOMEM;
	s->nice = nice;
	s->job = j;
	pthread_cond_init(&s->wake, NULL);
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, &old); /* inherited by the new thread */
	err = pthread_create(&s->thread, NULL, slot_main, s);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (err) {
		pthread_cond_destroy(&s->wake);
		free(s);
		return -err;
	}
	s->next_all = P.all;
	P.all = s;
	P.threads++;
	P.started++;
	return 0;
}

static int start(void *(*fn)(void *arg), void *arg, const char *name, int nice, bool own,
		 struct pool_job **out)
{
	struct pool_job *j;
	int err = 0;

	*out = NULL;
	if (nice < 0)
		nice = 0;
	j = calloc(1, sizeof(*j));
	if (!j)
		return -ENOMEM;
	j->fn = fn;
	j->arg = arg;
	snprintf(j->name, sizeof(j->name), "%s", name ? name : "tarseek");
	pthread_mutex_lock(&P.lock);
	if (!P.atfork) {
		pthread_atfork(fork_prepare, fork_parent, fork_child);
		P.atfork = true;
	}
	struct slot *s = own ? NULL : take_idle(nice);
	if (s) {
		s->job = j;
		pthread_cond_signal(&s->wake);
	} else {
		err = new_slot(j, nice);
		if (!err && own) {
			j->own = P.all; /* new_slot put it first */
			j->own->own = true;
		}
	}
	pthread_mutex_unlock(&P.lock);
	if (err) {
		free(j);
		return err;
	}
	*out = j;
	return 0;
}

int pool_start(void *(*fn)(void *arg), void *arg, const char *name, int nice,
	       struct pool_job **out)
{
	return start(fn, arg, name, nice, false, out);
}

int pool_start_own(void *(*fn)(void *arg), void *arg, const char *name, int nice,
		   struct pool_job **out)
{
	return start(fn, arg, name, nice, true, out);
}

void *pool_join(struct pool_job *j)
{
	void *ret;

	if (!j)
		return NULL;
	pthread_mutex_lock(&P.lock);
	while (!j->done)
		pthread_cond_wait(&P.done, &P.lock);
	ret = j->ret;
	struct slot *s = j->own;
	if (s) {
		for (struct slot **pp = &P.all; *pp; pp = &(*pp)->next_all) {
			if (*pp == s) {
				*pp = s->next_all;
				break;
			}
		}
		P.threads--;
	}
	pthread_mutex_unlock(&P.lock);
	if (s) {
		pthread_join(s->thread, NULL);
		pthread_cond_destroy(&s->wake);
		free(s);
	}
	free(j);
	return ret;
}

void pool_counts(unsigned *threads, unsigned *idle, unsigned long *started)
{
	pthread_mutex_lock(&P.lock);
	if (threads)
		*threads = P.threads;
	if (idle)
		*idle = P.nidle;
	if (started)
		*started = P.started;
	pthread_mutex_unlock(&P.lock);
}

void pool_shutdown(void)
{
	struct slot *gone = NULL;

	pthread_mutex_lock(&P.lock);
	while (P.idle) {
		struct slot *s = P.idle;
		P.idle = s->next_idle;
		P.nidle--;
		s->quit = true;
		pthread_cond_signal(&s->wake);
		for (struct slot **pp = &P.all; *pp; pp = &(*pp)->next_all) {
			if (*pp == s) {
				*pp = s->next_all;
				break;
			}
		}
		P.threads--;
		s->next_all = gone;
		gone = s;
	}
	pthread_mutex_unlock(&P.lock);
	while (gone) {
		struct slot *s = gone;
		gone = s->next_all;
		pthread_join(s->thread, NULL);
		pthread_cond_destroy(&s->wake);
		free(s);
	}
}
