/* A source over ranged requests, with a page cache and request planning (see remote.h).
 *
 * Background fetches: a struct rmt_fetch holds a queue of page runs (each reserved in the
 * page cache by the source that queued it) and up to `max` threads -- jobs of the process's
 * pool (common/pool.h), started as fetches are queued -- that take them in order.  A source
 * counts its fetches queued or running and waits for them when it is closed; the struct's
 * owner joins the threads (rmt_fetch_park, rmt_fetch_free).
 *
 * Lock: the fetch lock guards the queue, the threads' state and every source's count of
 * fetches; a fetch runs without it.  Only the pool's lock is taken under it (starting a
 * thread), and no page cache lock is held while it is, nor the other way round.
 */
#include "net/remote.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "cache/cache.h"
#include "common/may_block.h"
#include "common/list.h"
#include "common/pool.h"

#define DEFAULT_PAGE ((size_t)64 << 10)
#define DEFAULT_MAX_REQUEST ((uint64_t)16 << 20)
#define DEFAULT_SEQ_FIRST ((uint64_t)1 << 20)
#define DEFAULT_ADVISE_MAX ((uint64_t)64 << 20)
#define SEQ_STREAMS 8

struct rmt {
	struct rmt_xfer x;
	uint64_t size, npages;
	struct cache *cache;
	uint64_t stream;
	size_t page;
	uint64_t max_request, seq_first, advise_max;
	/* sequential readers: where each of the last few reads ended (a read starting there
	 * continues a scan), and how far the next run fetches ahead */
	atomic_uint_fast64_t ends[SEQ_STREAMS];
	atomic_uint next_slot;
	atomic_uint_fast64_t seq_run; /* pages */
	atomic_uint_fast64_t requests, bytes, advised, page_hits;
	struct rmt_fetch *fetch; /* background fetches run there (borrowed), or NULL: none */
	unsigned jobs;		 /* background fetches queued or running (fetch->lock) */
};

/* ---- background fetches: the threads that run them (struct rmt_fetch) ------------------- */

/* A background fetch of the pages [a, b], reserved by it. */
struct fjob {
	struct rmt *r;
	uint64_t a, b;
	struct list_node node; /* in rmt_fetch.queue */
};

struct rmt_fetch {
	pthread_mutex_t lock;
	pthread_cond_t work, idle; /* queued work or stop; a fetch ended */
	/* lock (and every source's jobs count): */
	struct list_node queue; /* oldest first */
	unsigned max, started;
	bool stop;		/* park or free: the threads end once the queue is empty */
	struct pool_job **jobs; /* started of them */
};

static size_t page_len(const struct rmt *r, uint64_t p);

/* Fills page after page of a background fetch as the bytes arrive, publishing each. */
struct filler {
	struct rmt *r;
	uint64_t page;		/* being filled */
	struct cache_buf *cb;	/* its buffer, or NULL */
	size_t fill;
};

static int fill(void *op, const void *data, size_t n)
{
	struct filler *f = op;
	const uint8_t *d = data;

	while (n) {
		if (!f->cb) {
			f->cb = cache_buf_new(page_len(f->r, f->page));
			f->fill = 0;
			if (!f->cb)
				return -1;
		}
		size_t take = f->cb->len - f->fill < n ? f->cb->len - f->fill : n;
		memcpy(f->cb->data + f->fill, d, take);
		f->fill += take;
		d += take;
		n -= take;
		if (f->fill == f->cb->len) {
			struct cache_key k = {f->r->stream, f->page};
			cache_publish(f->r->cache, &k, f->cb);
			cache_buf_put(f->cb);
			f->cb = NULL;
			f->page++;
		}
	}
	return 0;
}

static int fetch_piece(struct rmt *r, uint64_t p, uint64_t q);

static void *fetch_main(void *arg)
{
	struct rmt_fetch *f = arg;

	pthread_mutex_lock(&f->lock);
	for (;;) {
		while (list_empty(&f->queue) && !f->stop)
			pthread_cond_wait(&f->work, &f->lock);
		if (list_empty(&f->queue))
			break;
		struct fjob *j = list_entry(list_first(&f->queue), struct fjob, node);
		list_del(&j->node);
		pthread_mutex_unlock(&f->lock);
		/* on error the pages that did not arrive are given back: their readers fetch
		 * them, and say why they fail */
		(void)fetch_piece(j->r, j->a, j->b);
		pthread_mutex_lock(&f->lock);
		j->r->jobs--;
		free(j);
		pthread_cond_broadcast(&f->idle); /* sources closing */
	}
	pthread_mutex_unlock(&f->lock);
	return NULL;
}

struct rmt_fetch *rmt_fetch_new(unsigned n)
{
	struct rmt_fetch *f = calloc(1, sizeof(*f));

	if (!f)
		return NULL;
	f->max = n ? n : 1;
	f->jobs = calloc(f->max, sizeof(*f->jobs));
	if (!f->jobs) {
		free(f);
		return NULL;
	}
	list_init(&f->queue);
	pthread_mutex_init(&f->lock, NULL);
	pthread_cond_init(&f->work, NULL);
	pthread_cond_init(&f->idle, NULL);
	return f;
}

void rmt_fetch_park(struct rmt_fetch *f)
{
	if (!f)
		return;
	pthread_mutex_lock(&f->lock);
	f->stop = true;
	pthread_cond_broadcast(&f->work);
	pthread_mutex_unlock(&f->lock);
	for (unsigned i = 0; i < f->started; i++) /* they fetch what is queued first */
		pool_join(f->jobs[i]);
	pthread_mutex_lock(&f->lock);
	f->started = 0;
	f->stop = false;
	pthread_mutex_unlock(&f->lock);
}

void rmt_fetch_free(struct rmt_fetch *f)
{
	if (!f)
		return;
	rmt_fetch_park(f);
	pthread_cond_destroy(&f->idle);
	pthread_cond_destroy(&f->work);
	pthread_mutex_destroy(&f->lock);
	free(f->jobs);
	free(f);
}

/* Queues a background fetch of the reserved pages [a, b]; false if it cannot (the caller
 * fetches them itself). */
static bool queue_job(struct rmt *r, uint64_t a, uint64_t b)
{
	struct rmt_fetch *f = r->fetch;
	struct fjob *j = malloc(sizeof(*j));
	bool ok;

	if (!j)
		return false;
	*j = (struct fjob){.r = r, .a = a, .b = b};
	pthread_mutex_lock(&f->lock);
	if (f->started < f->max && !f->stop &&
	    pool_start(fetch_main, f, "tarseek-fetch", 0, &f->jobs[f->started]) == 0)
		f->started++;
	ok = f->started > 0 && !f->stop;
	if (ok) {
		list_add_tail(&f->queue, &j->node);
		r->jobs++;
		pthread_cond_signal(&f->work);
	}
	pthread_mutex_unlock(&f->lock);
	if (!ok)
		free(j);
	return ok;
}

static void wait_jobs(struct rmt *r)
{
	struct rmt_fetch *f = r->fetch;

	if (!f)
		return;
	pthread_mutex_lock(&f->lock);
	while (r->jobs)
		pthread_cond_wait(&f->idle, &f->lock);
	pthread_mutex_unlock(&f->lock);
}

/* ---- planning ---------------------------------------------------------------------------- */

static struct cache_key key_of(const struct rmt *r, uint64_t p)
{
	return (struct cache_key){.stream = r->stream, .seg = p};
}

static size_t page_len(const struct rmt *r, uint64_t p)
{
	uint64_t off = p * r->page;

	return r->size - off < r->page ? (size_t)(r->size - off) : r->page;
}

/* Fetches pages [a, b] (all reserved by the caller) in requests of at most max_request and
 * publishes them.  On error every reservation of [a, b] not yet published is abandoned. */
/* Fetches the reserved pages [p, q] in one request and publishes them: as they arrive if
 * the transport streams, else from one buffer.  What is not published is abandoned. */
static int fetch_piece(struct rmt *r, uint64_t p, uint64_t q)
{
	uint64_t off = p * r->page, end = q * r->page + page_len(r, q);
	uint64_t done = p; /* pages published */
	int err;

	atomic_fetch_add(&r->requests, 1);
	if (r->x.stream) {
		struct filler f = {.r = r, .page = p};
		err = r->x.stream(r->x.opaque, off, end - off, fill, &f);
		done = f.page;
		atomic_fetch_add(&r->bytes, (done - p) * r->page + (f.cb ? f.fill : 0));
		cache_buf_put(f.cb); /* a page that did not fill */
	} else {
		uint8_t *buf = malloc((size_t)(end - off));
		err = buf ? r->x.get(r->x.opaque, buf, (size_t)(end - off), off) : -ENOMEM;
		for (; !err && done <= q; done++) {
			struct cache_key k = key_of(r, done);
			struct cache_buf *cb = cache_buf_new(page_len(r, done));
			if (!cb) {
				err = -ENOMEM;
				break;
			}
			memcpy(cb->data, buf + (done - p) * r->page, cb->len);
			cache_publish(r->cache, &k, cb);
			cache_buf_put(cb);
		}
		free(buf);
		if (!err)
			atomic_fetch_add(&r->bytes, end - off);
	}
	for (; done <= q; done++) {
		struct cache_key k = key_of(r, done);
		cache_abandon(r->cache, &k);
	}
	return err;
}

/* Fetches pages [a, b] (all reserved by the caller) in requests of at most max_request.  On
 * error every reservation not yet published is abandoned. */
static int fetch_run(struct rmt *r, uint64_t a, uint64_t b)
{
	uint64_t per = r->max_request / r->page ? r->max_request / r->page : 1;
	int err = 0;

	for (uint64_t p = a; p <= b; p += per) {
		uint64_t q = b - p + 1 > per ? p + per - 1 : b;
		if (err) { /* after a failure: only given back */
			for (uint64_t i = p; i <= q; i++)
				cache_abandon(r->cache, &(struct cache_key){r->stream, i});
			continue;
		}
		err = fetch_piece(r, p, q);
	}
	return err;
}

/* Fetches the reserved pages [a, b]: now, or in the background in pieces of max_request. */
static int fetch_some(struct rmt *r, uint64_t a, uint64_t b, bool bg)
{
	uint64_t per = r->max_request / r->page ? r->max_request / r->page : 1;

	if (!bg || !r->fetch || !r->x.stream)
		return fetch_run(r, a, b);
	for (uint64_t p = a; p <= b; p += per) {
		uint64_t q = b - p + 1 > per ? p + per - 1 : b;
		if (!queue_job(r, p, q))
			return fetch_run(r, p, b);
	}
	return 0;
}

/* Reserves what nobody holds of pages [p0, p1] and, ahead pages past p1 while they are free,
 * and fetches them as runs.  0 or the first error (every reservation given back). */
static int fetch_missing(struct rmt *r, uint64_t p0, uint64_t p1, uint64_t ahead, bool bg)
{
	uint64_t last = p1 + ahead < r->npages ? p1 + ahead : r->npages - 1;
	uint64_t run_start = 0, end = p1;
	bool in_run = false;
	int err = 0;

	for (uint64_t p = p0; p <= last; p++) {
		struct cache_key k = key_of(r, p);
		/* pages may come back from the cache's disk tier; reading ahead stops at one
		 * that someone else is fetching */
		int held = cache_claim(r->cache, &k);
		bool mine = held == 1;
		if (p > p1 && held == 2)
			break;
		if (mine && !in_run) {
			run_start = p;
			in_run = true;
		} else if (!mine && in_run) {
			int e = fetch_some(r, run_start, p - 1, bg);
			err = err ? err : e;
			in_run = false;
		}
		if (!mine)
			atomic_fetch_add(&r->page_hits, 1);
		end = p;
	}
	if (in_run) {
		int e = fetch_some(r, run_start, end, bg);
		err = err ? err : e;
	}
	return err;
}

static ssize_t rmt_pread(void *opaque, void *buf, size_t len, uint64_t off)
{
	struct rmt *r = opaque;
	uint64_t p0, p1, ahead = 0;
	size_t done = 0;
	int err;

	may_block(); /* the server may be asked */
	if (off >= r->size || len == 0)
		return 0;
	if (len > r->size - off)
		len = (size_t)(r->size - off);
	p0 = off / r->page;
	p1 = (off + len - 1) / r->page;
	/* a read that starts where one of the last few ended continues a scan: if it has to
	 * fetch, it fetches ahead, more each time; one elsewhere that fetches starts over */
	unsigned slot = SEQ_STREAMS;
	for (unsigned i = 0; i < SEQ_STREAMS && off; i++)
		if (atomic_load(&r->ends[i]) == off)
			slot = i;
	/* missing: neither held nor being fetched (a read waiting for a background fetch is
	 * no reason to fetch more) */
	bool missing = !cache_known(r->cache, &(struct cache_key){r->stream, p0}) ||
		       !cache_known(r->cache, &(struct cache_key){r->stream, p1});
	if (slot < SEQ_STREAMS && missing) {
		uint64_t run = atomic_load(&r->seq_run), most = r->max_request / r->page;
		ahead = run + (p1 - p0 + 1) > most ? (most > p1 - p0 + 1 ? most - (p1 - p0 + 1) : 0)
						     : run; /* one request of at most max_request */
		atomic_store(&r->seq_run, run * 2 > most ? most : run * 2);
	} else if (missing) {
		atomic_store(&r->seq_run, r->seq_first / r->page ? r->seq_first / r->page : 1);
	}
	if (slot == SEQ_STREAMS)
		slot = atomic_fetch_add(&r->next_slot, 1) % SEQ_STREAMS;
	atomic_store(&r->ends[slot], off + len);
	err = fetch_missing(r, p0, p1, ahead, false);
	if (err)
		return err;
	for (uint64_t p = p0; p <= p1; p++) {
		struct cache_key k = key_of(r, p);
		struct cache_buf *cb;
		if (cache_get(r->cache, &k, &cb) == 1) { /* evicted, or its fetch failed: again */
			err = fetch_run(r, p, p);
			if (err)
				return err;
			if (cache_get(r->cache, &k, &cb) == 1) {
				cache_abandon(r->cache, &k); /* a buffer larger than the whole cache */
				return -ENOMEM;
			}
		}
		size_t in = p == p0 ? (size_t)(off - p0 * r->page) : 0;
		size_t n = cb->len - in < len - done ? cb->len - in : len - done;
		memcpy((uint8_t *)buf + done, cb->data + in, n);
		done += n;
		cache_buf_put(cb);
	}
	return (ssize_t)done;
}

static void rmt_advise(void *opaque, uint64_t off, uint64_t len)
{
	struct rmt *r = opaque;
	uint64_t before = atomic_load(&r->requests);

	if (off >= r->size || len == 0)
		return;
	if (len > r->advise_max)
		len = r->advise_max;
	if (len > r->size - off)
		len = r->size - off;
	/* errors: the read says */
	(void)fetch_missing(r, off / r->page, (off + len - 1) / r->page, 0, true);
	if (atomic_load(&r->requests) != before)
		atomic_fetch_add(&r->advised, 1);
}

static void rmt_close(void *opaque)
{
	struct rmt *r = opaque;

	wait_jobs(r);
	cache_drop_stream(r->cache, r->stream);
	if (r->x.close)
		r->x.close(r->x.opaque);
	free(r);
}

static const struct src_ops rmt_ops = {
	.pread = rmt_pread,
	.close = rmt_close,
	.advise = rmt_advise,
};

struct src *rmt_src_new(const struct rmt_xfer *x, uint64_t size, struct cache *cache,
			const struct rmt_opts *o)
{
	struct rmt *r = calloc(1, sizeof(*r));
	struct src *s;

	if (!r) {
		if (x->close)
			x->close(x->opaque);
		return NULL;
	}
	r->x = *x;
	r->size = size;
	r->cache = cache;
	r->stream = cache_new_stream_id(cache);
	r->page = o && o->page ? o->page : DEFAULT_PAGE;
	r->npages = (size + r->page - 1) / r->page;
	r->max_request = o && o->max_request ? o->max_request : DEFAULT_MAX_REQUEST;
	r->seq_first = o && o->seq_first ? o->seq_first : DEFAULT_SEQ_FIRST;
	r->advise_max = o && o->advise_max ? o->advise_max : DEFAULT_ADVISE_MAX;
	r->fetch = o ? o->background : NULL;
	/* a request must not evict its own first pages before they are read */
	struct cache_stats cs;
	cache_get_stats(cache, &cs);
	if (cs.budget / 4 >= r->page) {
		r->max_request = r->max_request < cs.budget / 4 ? r->max_request : cs.budget / 4;
		r->advise_max = r->advise_max < cs.budget / 4 ? r->advise_max : cs.budget / 4;
	}
	if (r->max_request < r->page)
		r->max_request = r->page;
	for (unsigned i = 0; i < SEQ_STREAMS; i++)
		atomic_init(&r->ends[i], 0);
	atomic_init(&r->next_slot, 0);
	atomic_init(&r->seq_run, r->seq_first / r->page ? r->seq_first / r->page : 1);
	s = src_new(&rmt_ops, r, size);
	if (!s)
		rmt_close(r);
	return s;
}

void rmt_get_stats(struct src *s, struct rmt_stats *out)
{
	const struct rmt *r = src_opaque_if(s, &rmt_ops);

	memset(out, 0, sizeof(*out));
	if (!r)
		return;
	out->requests = atomic_load(&r->requests);
	out->bytes = atomic_load(&r->bytes);
	out->advised = atomic_load(&r->advised);
	out->page_hits = atomic_load(&r->page_hits);
}
