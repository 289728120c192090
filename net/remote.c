/* A source over ranged requests, with a page cache and request planning (see remote.h). */
#include "remote.h"

#include <errno.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "../codecs/cache.h"

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
};

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
static int fetch_run(struct rmt *r, uint64_t a, uint64_t b)
{
	uint64_t per = r->max_request / r->page ? r->max_request / r->page : 1;
	int err = 0;

	for (uint64_t p = a; p <= b; p += per) {
		uint64_t q = b - p + 1 > per ? p + per - 1 : b;
		uint64_t off = p * r->page, end = q * r->page + page_len(r, q);
		uint8_t *buf = err ? NULL : malloc((size_t)(end - off));
		if (!err && !buf)
			err = -ENOMEM;
		if (!err) {
			atomic_fetch_add(&r->requests, 1);
			err = r->x.get(r->x.opaque, buf, (size_t)(end - off), off);
			if (!err)
				atomic_fetch_add(&r->bytes, end - off);
		}
		for (uint64_t i = p; i <= q; i++) {
			struct cache_key k = key_of(r, i);
			struct cache_buf *cb = err ? NULL : cache_buf_new(page_len(r, i));
			if (!cb) {
				cache_abandon(r->cache, &k);
				continue;
			}
			memcpy(cb->data, buf + (i - p) * r->page, cb->len);
			cache_publish(r->cache, &k, cb);
			cache_buf_put(cb);
		}
		free(buf);
	}
	return err;
}

/* Reserves what nobody holds of pages [p0, p1] and, ahead pages past p1 while they are free,
 * and fetches them as runs.  0 or the first error (every reservation given back). */
static int fetch_missing(struct rmt *r, uint64_t p0, uint64_t p1, uint64_t ahead)
{
	uint64_t last = p1 + ahead < r->npages ? p1 + ahead : r->npages - 1;
	uint64_t run_start = 0, end = p1;
	bool in_run = false;
	int err = 0;

	for (uint64_t p = p0; p <= last; p++) {
		struct cache_key k = key_of(r, p);
		/* read ahead only into pages nobody has; the ones asked for may come back from
		 * the cache's disk tier */
		bool mine = p > p1 ? cache_try_reserve(r->cache, &k) : cache_claim(r->cache, &k) == 1;
		if (p > p1 && !mine)
			break; /* read ahead only while the pages are free */
		if (mine && !in_run) {
			run_start = p;
			in_run = true;
		} else if (!mine && in_run) {
			int e = fetch_run(r, run_start, p - 1);
			err = err ? err : e;
			in_run = false;
		}
		if (!mine)
			atomic_fetch_add(&r->page_hits, 1);
		end = p;
	}
	if (in_run) {
		int e = fetch_run(r, run_start, end);
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
	bool missing = !cache_contains(r->cache, &(struct cache_key){r->stream, p0}) ||
		       !cache_contains(r->cache, &(struct cache_key){r->stream, p1});
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
	err = fetch_missing(r, p0, p1, ahead);
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
	(void)fetch_missing(r, off / r->page, (off + len - 1) / r->page, 0); /* errors: the read says */
	if (atomic_load(&r->requests) != before)
		atomic_fetch_add(&r->advised, 1);
}

static void rmt_close(void *opaque)
{
	struct rmt *r = opaque;

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
