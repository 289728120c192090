/* The parallel decode pipeline (see pipeline.h).
 *
 * Job k lives in ring slot k % depth while head <= k < head + depth; head is the job the
 * consumer reads, next the one the dispatch turn defines next.  A worker loop: wait for the
 * turn and a free slot, call next() outside the lock, publish the job (next++), give the turn
 * back, call run(), mark the job done.  The consumer takes chunks from slot head in order and
 * moves head on once a job is done and drained, which frees its slot for a worker.
 *
 * Locks: one mutex (lock) guards the ring, the chunk lists, head/next/ended/stop and the free
 * list.  work_cond wakes workers (a slot, the turn, queue space, stop); data_cond wakes the
 * consumer (bytes, a finished job, the end).  next() and run() are called without the lock,
 * and so is the sink.  The workers are pool jobs (common/pool.h), joined by pl_free.
 */
#include "codecs/pipeline.h"

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "common/log.h"
#include "common/pool.h"

#define PL_KEEP_MAX (4 * PL_CHUNK) /* larger chunks are freed, not kept for reuse */

struct pl_chunk {
	struct pl_chunk *next;
	size_t cap; /* bytes of data */
	size_t len; /* decoded bytes in data */
	size_t pos; /* bytes the consumer has taken */
	uint8_t data[];
};

struct pl_slot {
	struct pl_job job; /* first: pl_job pointers are slot pointers */
	struct pipeline *p;
	struct pl_chunk *first, *last; /* committed, not yet taken by the consumer */
	struct pl_chunk *open;	       /* the buffer pl_buf gave last (the worker's) */
	size_t buffered;	       /* bytes in the list */
	bool done;		       /* run() returned */
	int err;		       /* ... with this */
	struct pl_note fail;	       /* ... described so */
	bool begun, data;	       /* the consumer's: begin() called, first byte seen */
};

struct pl_worker {
	struct pipeline *p;
	unsigned index;
	struct pool_job *job;
};

struct pipeline {
	struct pl_params prm;
	struct pl_ops ops;
	struct pl_slot *ring;
	unsigned char *own; /* depth x job_size */
	struct pl_worker *workers;
	unsigned started;

	pthread_mutex_t lock;
	pthread_cond_t work_cond, data_cond;
	/* lock: */
	uint64_t head, next;
	bool dispatching; /* a worker holds the dispatch turn */
	bool ended;	  /* next() said there are no more jobs; next is their number */
	bool stop;
	int end_err;
	struct pl_note end;
	struct pl_chunk *free_chunks; /* nfree of them */
	size_t nfree;

	/* the consumer's: */
	struct pl_chunk *cur;
	uint64_t pos, verified;
	int err;
	bool eof;
};

int pl_fail(struct pl_note *fail, int err, bool trusted, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(fail->text, sizeof(fail->text), fmt, ap);
	va_end(ap);
	fail->trusted = trusted;
	return err;
}

void pl_end_note(struct pl_note *end, int level, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(end->text, sizeof(end->text), fmt, ap);
	va_end(ap);
	end->level = level;
}

static struct pl_slot *slot_of(struct pipeline *p, uint64_t k)
{
	return &p->ring[k % p->prm.depth];
}

bool pl_stopping(const struct pl_job *job)
{
	struct pipeline *p = ((const struct pl_slot *)job)->p;

	pthread_mutex_lock(&p->lock);
	bool stop = p->stop;
	pthread_mutex_unlock(&p->lock);
	return stop;
}

/* Gives a chunk back (lock held): kept for reuse unless it is a big one-off. */
static void chunk_recycle(struct pipeline *p, struct pl_chunk *c)
{
	if (c->cap <= PL_KEEP_MAX && p->nfree < p->prm.depth * 2) {
		c->next = p->free_chunks;
		p->free_chunks = c;
		p->nfree++;
	} else {
		free(c);
	}
}

/* A free chunk of at least size bytes, or NULL (lock held). */
static struct pl_chunk *chunk_reuse(struct pipeline *p, size_t size)
{
	for (struct pl_chunk **pp = &p->free_chunks; *pp; pp = &(*pp)->next) {
		struct pl_chunk *c = *pp;

		if (c->cap >= size) {
			*pp = c->next;
			p->nfree--;
			return c;
		}
	}
	return NULL;
}

int pl_buf(struct pl_job *job, size_t want, uint8_t **buf, size_t *cap)
{
	struct pl_slot *s = (struct pl_slot *)job;
	struct pipeline *p = s->p;
	struct pl_chunk *c = NULL;
	size_t size = want > PL_CHUNK ? want : PL_CHUNK;

	*buf = NULL;
	*cap = 0;
	pthread_mutex_lock(&p->lock);
	/* a job bigger than its share still gets one buffer at a time */
	while (!p->stop && s->buffered && s->buffered + size > p->prm.job_cap)
		pthread_cond_wait(&p->work_cond, &p->lock);
	if (p->stop) {
		pthread_mutex_unlock(&p->lock);
		return -ECANCELED;
	}
	c = chunk_reuse(p, size);
	pthread_mutex_unlock(&p->lock);
	if (!c) {
		c = malloc(sizeof(*c) + size);
		if (!c)
			return -ENOMEM;
		c->cap = size;
	}
	c->next = NULL;
	c->len = c->pos = 0;
	s->open = c;
	*buf = c->data;
	*cap = c->cap;
	return 0;
}

void pl_commit(struct pl_job *job, size_t len)
{
	struct pl_slot *s = (struct pl_slot *)job;
	struct pipeline *p = s->p;
	struct pl_chunk *c = s->open;

	if (!c)
		return;
	s->open = NULL;
	pthread_mutex_lock(&p->lock);
	if (len) {
		c->len = len < c->cap ? len : c->cap;
		if (s->last)
			s->last->next = c;
		else
			s->first = c;
		s->last = c;
		s->buffered += c->len;
		pthread_cond_signal(&p->data_cond);
	} else {
		chunk_recycle(p, c);
	}
	pthread_mutex_unlock(&p->lock);
}

int pl_pump(struct pl_job *job, ssize_t (*read)(void *dec, uint8_t *buf, size_t len), void *dec)
{
	for (;;) {
		uint8_t *buf;
		size_t cap, len = 0;
		ssize_t n = 0;
		int err = pl_buf(job, PL_CHUNK, &buf, &cap);

		if (err)
			return err;
		do {
			n = read(dec, buf + len, cap - len);
			if (n > 0)
				len += (size_t)n;
		} while (n > 0 && len < cap);
		pl_commit(job, len);
		if (n <= 0)
			return (int)n;
	}
}

/* The worker's dispatch turn for job k; false if the pipeline stops or the jobs ended. */
static bool take_turn(struct pipeline *p, uint64_t *k)
{
	pthread_mutex_lock(&p->lock);
	while (!p->stop && !p->ended && (p->dispatching || p->next >= p->head + p->prm.depth))
		pthread_cond_wait(&p->work_cond, &p->lock);
	if (p->stop || p->ended) {
		pthread_mutex_unlock(&p->lock);
		return false;
	}
	p->dispatching = true;
	*k = p->next;
	pthread_mutex_unlock(&p->lock);
	return true;
}

static void *worker_main(void *arg)
{
	struct pl_worker *w = arg;
	struct pipeline *p = w->p;
	uint64_t k;

	while (take_turn(p, &k)) {
		struct pl_slot *s = slot_of(p, k);
		void *own = s->job.own;
		struct pl_note end = {.level = TFS_LOG_WARNING};
		int r, err;

		/* the slot is free (k >= head + depth was waited out): no one else touches it */
		memset(s, 0, sizeof(*s));
		s->p = p;
		s->job.own = own;
		s->job.seq = k;
		if (own)
			memset(own, 0, p->ops.job_size);
		r = p->ops.next(p->prm.ctx, w->index, &s->job, &end);

		pthread_mutex_lock(&p->lock);
		p->dispatching = false;
		if (r > 0) {
			p->next = k + 1;
		} else {
			p->ended = true;
			p->end_err = r;
			p->end = end;
			pthread_cond_signal(&p->data_cond);
		}
		pthread_cond_broadcast(&p->work_cond);
		pthread_mutex_unlock(&p->lock);
		if (r <= 0)
			break;

		struct pl_note fail = {.level = TFS_LOG_ERR};
		err = p->ops.run(p->prm.ctx, w->index, &s->job, &fail);
		if (err == -ENOMEM && !fail.text[0])
			snprintf(fail.text, sizeof(fail.text), "%s: out of memory for decoded data",
				 p->prm.name);
		pl_commit(&s->job, 0); /* a buffer run() did not hand over */
		pthread_mutex_lock(&p->lock);
		s->err = err > 0 ? 0 : err;
		s->fail = fail;
		s->done = true;
		pthread_cond_signal(&p->data_cond);
		pthread_mutex_unlock(&p->lock);
	}
	return NULL;
}

static void stop_workers(struct pipeline *p)
{
	pthread_mutex_lock(&p->lock);
	p->stop = true;
	pthread_cond_broadcast(&p->work_cond);
	pthread_mutex_unlock(&p->lock);
}

void pl_free(struct pipeline *p)
{
	if (!p)
		return;
	stop_workers(p);
	for (unsigned i = 0; i < p->started; i++)
		pool_join(p->workers[i].job);
	for (size_t i = 0; p->ring && i < p->prm.depth; i++) {
		struct pl_chunk *c = p->ring[i].first;

		while (c) {
			struct pl_chunk *next = c->next;
			free(c);
			c = next;
		}
	}
	while (p->free_chunks) {
		struct pl_chunk *next = p->free_chunks->next;
		free(p->free_chunks);
		p->free_chunks = next;
	}
	free(p->cur);
	free(p->ring);
	free(p->own);
	free(p->workers);
	pthread_cond_destroy(&p->data_cond);
	pthread_cond_destroy(&p->work_cond);
	pthread_mutex_destroy(&p->lock);
	free(p);
}

int pl_nice(void)
{
	int nice;

	errno = 0;
	nice = getpriority(PRIO_PROCESS, (id_t)syscall(SYS_gettid));
	return errno || nice < 0 ? 0 : nice;
}

size_t pl_job_cap(size_t budget, size_t depth, size_t min, size_t max)
{
	size_t cap = budget / depth / PL_CHUNK * PL_CHUNK;

	return cap < min ? min : cap > max ? max : cap;
}

int pl_new(const struct pl_params *prm, struct pipeline **out)
{
	struct pipeline *p;
	char name[16];
	int err, nice;

	*out = NULL;
	if (!prm->ops || !prm->ops->next || !prm->ops->run || prm->workers < 1 || prm->depth < 2 ||
	    prm->job_cap < PL_CHUNK || (!prm->ops->first && !prm->sink))
		return -EINVAL;
	p = calloc(1, sizeof(*p));
	if (!p)
		return -ENOMEM;
	p->prm = *prm;
	p->ops = *prm->ops;
	pthread_mutex_init(&p->lock, NULL);
	pthread_cond_init(&p->work_cond, NULL);
	pthread_cond_init(&p->data_cond, NULL);
	p->ring = calloc(prm->depth, sizeof(*p->ring));
	p->workers = calloc(prm->workers, sizeof(*p->workers));
	if (p->ops.job_size)
		p->own = calloc(prm->depth, p->ops.job_size);
	if (!p->ring || !p->workers || (p->ops.job_size && !p->own)) {
		err = -ENOMEM;
		goto fail;
	}
	for (size_t i = 0; i < prm->depth; i++)
		p->ring[i].job.own = p->own ? p->own + i * p->ops.job_size : NULL;
	snprintf(name, sizeof(name), "tarseek-%.7s", prm->name);
	nice = pl_nice();
	for (unsigned i = 0; i < prm->workers; i++) {
		p->workers[i] = (struct pl_worker){.p = p, .index = i};
		err = pool_start(worker_main, &p->workers[i], name, nice, &p->workers[i].job);
		if (err) {
			if (err == -EAGAIN)
				err = -ENOMEM;
			goto fail;
		}
		p->started++;
	}
	*out = p;
	return 0;
fail:
	pl_free(p);
	return err;
}

int pl_start(const struct pl_ops *ops, void *ctx, const struct codec_sink *sink, const char *name,
	     unsigned workers, size_t depth, size_t job_cap, struct pipeline **out)
{
	struct pl_params prm = {.ops = ops,
				.ctx = ctx,
				.sink = sink,
				.name = name,
				.workers = workers,
				.depth = depth,
				.job_cap = job_cap};

	return pl_new(&prm, out);
}

unsigned pl_threads(const struct codec_opts *opts, unsigned max)
{
	unsigned threads = opts && opts->threads ? opts->threads : 1;

	return threads < max ? threads : max;
}

/* The default first(): job->ck to the sink, after checking where it starts. */
static int emit_ck(struct pipeline *p, const struct pl_job *job, uint64_t uoff)
{
	if (job->ck.uoff != uoff) {
		tfs_log(TFS_LOG_ERR,
			"%s: job %" PRIu64 " starts at decompressed offset %" PRIu64
			", expected %" PRIu64 " (internal error)",
			p->prm.name, job->seq, job->ck.uoff, uoff);
		return -EIO;
	}
	return p->prm.sink->checkpoint(p->prm.sink->opaque, &job->ck, NULL, 0);
}

/* Makes p->cur the next chunk to copy out, calling begin/first for its job.  1 if there is
 * a chunk, 0 at the end (p->eof) or when nowait and nothing is ready, or -errno (logged). */
static int next_chunk(struct pipeline *p, bool nowait)
{
	struct pl_slot *s;
	struct pl_note note;
	bool first;
	int err;

	pthread_mutex_lock(&p->lock);
	if (p->cur) {
		chunk_recycle(p, p->cur);
		p->cur = NULL;
	}
	for (;;) {
		if (p->ended && p->head >= p->next) {
			err = p->end_err;
			note = p->end;
			pthread_mutex_unlock(&p->lock);
			if (note.text[0])
				tfs_log(note.level, "%s", note.text);
			if (err)
				return err;
			p->eof = true;
			p->verified = p->pos;
			return 0;
		}
		if (p->head < p->next) {
			s = slot_of(p, p->head);
			if (!s->begun) {
				s->begun = true;
				if (p->ops.begin) {
					pthread_mutex_unlock(&p->lock);
					p->ops.begin(p->prm.ctx, &s->job, p->pos);
					pthread_mutex_lock(&p->lock);
				}
			}
			if (s->first)
				break;
			if (s->done) {
				if (s->err) {
					err = s->err;
					note = s->fail;
					if (note.trusted)
						p->verified = p->pos;
					p->stop = true;
					pthread_cond_broadcast(&p->work_cond);
					pthread_mutex_unlock(&p->lock);
					tfs_log(TFS_LOG_ERR, "%s", note.text);
					return err;
				}
				p->verified = p->pos;
				p->head++;
				pthread_cond_broadcast(&p->work_cond);
				continue;
			}
		}
		if (nowait) {
			pthread_mutex_unlock(&p->lock);
			return 0;
		}
		pthread_cond_wait(&p->data_cond, &p->lock);
	}
	p->cur = s->first;
	s->first = p->cur->next;
	if (!s->first)
		s->last = NULL;
	s->buffered -= p->cur->len;
	first = !s->data;
	s->data = true;
	pthread_cond_broadcast(&p->work_cond);
	pthread_mutex_unlock(&p->lock);

	if (first) {
		err = p->ops.first ? p->ops.first(p->prm.ctx, &s->job, p->pos)
				   : emit_ck(p, &s->job, p->pos);
		if (err < 0) {
			stop_workers(p);
			return err;
		}
	}
	return 1;
}

ssize_t pl_read(struct pipeline *p, void *buf, size_t len)
{
	uint8_t *out = buf;
	size_t done = 0;

	if (p->err)
		return p->err;
	while (done < len && !p->eof) {
		struct pl_chunk *c = p->cur;
		int ret;

		if (c && c->pos < c->len) {
			size_t n = c->len - c->pos < len - done ? c->len - c->pos : len - done;

			memcpy(out + done, c->data + c->pos, n);
			c->pos += n;
			done += n;
			p->pos += n;
			continue;
		}
		ret = next_chunk(p, done > 0);
		if (ret < 0)
			p->err = ret;
		if (ret <= 0)
			break;
	}
	return done ? (ssize_t)done : p->err;
}

uint64_t pl_verified(const struct pipeline *p)
{
	return p->verified;
}
