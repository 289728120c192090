/* A pool of background threads (see workers.h).
 *
 * Its threads are jobs of the process's pool (common/pool.h), started one by one as tasks
 * come (up to `want`), each taking tasks off one queue until told to stop; workers_park and
 * workers_free tell them and join them.  A task is accepted only while fewer are queued than
 * there are threads, so none waits behind more than one other.
 */
#include "seek/workers.h"

#include <pthread.h>
#include <stdlib.h>

#include "common/list.h"
#include "common/pool.h"

struct task {
	void (*fn)(void *arg);
	void *arg;
	struct list_node node; /* in workers.queue */
};

struct workers {
	pthread_mutex_t lock;
	pthread_cond_t cond; /* a task was queued, or stop */
	/* lock: */
	struct list_node queue; /* tasks not yet taken, oldest first */
	unsigned queued, started, want;
	bool stop;		 /* the threads end once the queue is empty */
	struct pool_job **jobs; /* started of them */
};

static void *worker_main(void *arg)
{
	struct workers *w = arg;

	pthread_mutex_lock(&w->lock);
	for (;;) {
		while (list_empty(&w->queue) && !w->stop)
			pthread_cond_wait(&w->cond, &w->lock);
		if (list_empty(&w->queue))
			break;
		struct task *t = list_entry(list_first(&w->queue), struct task, node);
		list_del(&t->node);
		w->queued--;
		pthread_mutex_unlock(&w->lock);
		t->fn(t->arg);
		free(t);
		pthread_mutex_lock(&w->lock);
	}
	pthread_mutex_unlock(&w->lock);
	return NULL;
}

struct workers *workers_new(unsigned n)
{
	struct workers *w = calloc(1, sizeof(*w));

	if (!w)
		return NULL;
	w->want = n ? n : 1;
	w->jobs = calloc(w->want, sizeof(*w->jobs));
	if (!w->jobs) {
		free(w);
		return NULL;
	}
	list_init(&w->queue);
	pthread_mutex_init(&w->lock, NULL);
	pthread_cond_init(&w->cond, NULL);
	return w;
}

bool workers_try_run(struct workers *w, void (*fn)(void *arg), void *arg)
{
	struct task *t = malloc(sizeof(*t));
	bool ok = false;

	if (!t)
		return false;
	t->fn = fn;
	t->arg = arg;
	pthread_mutex_lock(&w->lock);
	while (!w->stop && w->started < w->want &&
	       pool_start(worker_main, w, "tarseek-ahead", 0, &w->jobs[w->started]) == 0)
		w->started++;
	if (!w->stop && w->started && w->queued < w->started) {
		list_add_tail(&w->queue, &t->node);
		w->queued++;
		pthread_cond_signal(&w->cond);
		ok = true;
	}
	pthread_mutex_unlock(&w->lock);
	if (!ok)
		free(t);
	return ok;
}

/* Tells the threads to end once the queue is empty, and joins them (lock not held). */
static void stop_and_join(struct workers *w)
{
	pthread_mutex_lock(&w->lock);
	w->stop = true;
	pthread_cond_broadcast(&w->cond);
	pthread_mutex_unlock(&w->lock);
	for (unsigned i = 0; i < w->started; i++)
		pool_join(w->jobs[i]);
}

void workers_park(struct workers *w)
{
	if (!w)
		return;
	stop_and_join(w);
	pthread_mutex_lock(&w->lock);
	w->started = 0;
	w->stop = false;
	pthread_mutex_unlock(&w->lock);
}

void workers_free(struct workers *w)
{
	if (!w)
		return;
	stop_and_join(w);
	free(w->jobs);
	pthread_cond_destroy(&w->cond);
	pthread_mutex_destroy(&w->lock);
	free(w);
}
