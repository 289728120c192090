/* A pool of background threads (see workers.h). */
#include "seek/workers.h"

#include <pthread.h>
#include <stdlib.h>

struct task {
	void (*fn)(void *arg);
	void *arg;
	struct task *next;
};

struct workers {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	/* lock: */
	struct task *head, *tail;
	unsigned queued, started, want;
	bool stop;
	pthread_t *threads;
};

static void *worker_main(void *arg)
{
	struct workers *w = arg;

	for (;;) {
		pthread_mutex_lock(&w->lock);
		while (!w->head && !w->stop)
			pthread_cond_wait(&w->cond, &w->lock);
		if (!w->head) {
			pthread_mutex_unlock(&w->lock);
			return NULL;
		}
		struct task *t = w->head;
		w->head = t->next;
		if (!w->head)
			w->tail = NULL;
		w->queued--;
		pthread_mutex_unlock(&w->lock);
		t->fn(t->arg);
		free(t);
	}
}

struct workers *workers_new(unsigned n)
{
	struct workers *w = calloc(1, sizeof(*w));

	if (!w)
		return NULL;
	w->want = n ? n : 1;
	w->threads = calloc(w->want, sizeof(*w->threads));
	if (!w->threads) {
		free(w);
		return NULL;
	}
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
	*t = (struct task){fn, arg, NULL};
	pthread_mutex_lock(&w->lock);
	while (!w->stop && w->started < w->want &&
	       pthread_create(&w->threads[w->started], NULL, worker_main, w) == 0) {
		pthread_setname_np(w->threads[w->started], "tarseek-ahead");
		w->started++;
	}
	if (!w->stop && w->started && w->queued < w->started) {
		if (w->tail)
			w->tail->next = t;
		else
			w->head = t;
		w->tail = t;
		w->queued++;
		pthread_cond_signal(&w->cond);
		ok = true;
	}
	pthread_mutex_unlock(&w->lock);
	if (!ok)
		free(t);
	return ok;
}

void workers_free(struct workers *w)
{
	if (!w)
		return;
	pthread_mutex_lock(&w->lock);
	w->stop = true;
	pthread_cond_broadcast(&w->cond);
	pthread_mutex_unlock(&w->lock);
	for (unsigned i = 0; i < w->started; i++)
		pthread_join(w->threads[i], NULL);
	free(w->threads);
	pthread_cond_destroy(&w->cond);
	pthread_mutex_destroy(&w->lock);
	free(w);
}
