/* A source (source.h) over an object that is read by range requests (an HTTP(S) or S3 object,
 * http.h): what the parsers and codecs read is fetched in few large requests and kept in a
 * bounded cache of fixed-size pages, so that a re-read costs no second request.
 *
 * Request planning -- what is fetched for a read:
 *  - the pages the read covers that no one holds or is fetching, as runs of adjacent pages,
 *    one request per run (at most max_request bytes each);
 *  - a read that continues where the previous fetch ended (the first mount's scan, a long
 *    member) is sequential: its run grows ahead, doubling from seq_first up to max_request,
 *    so that a scan costs few large requests;
 *  - src_advise(off, len) -- a decoder starting at a checkpoint says which compressed span it
 *    will read, up to the next checkpoint -- fetches that whole span now, in one request (or
 *    in pieces of max_request, capped at advise_max), instead of in the small reads the codec
 *    then issues.  With background (and a transport that streams), the request runs on one
 *    of a few fetching threads and every page is published as soon as its bytes are in, so
 *    the decoder starts on the first page while the rest of the span arrives.
 * Pages being fetched by one thread are waited for by the others (one request per page, also
 * under contention); a failed fetch leaves nothing behind, and the read fails with the
 * transport's error.
 *
 * The transport is an interface, so that unit tests plan against a fake one.
 * The fetching threads belong to a struct rmt_fetch that the program makes and hands to its
 * sources (rmt_opts.background): the mount makes one for all its remote sources, frees it
 * after them, and parks it before it forks.  src_free waits for the source's background
 * fetches to end.
 * Thread-safe.  The cache (cache.h, keyed by one stream id per source) may be shared by
 * several remote sources; its disk tier, if set, keeps fetched pages on local disk.
 */
#ifndef TARSEEK_REMOTE_H
#define TARSEEK_REMOTE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/source.h"

struct cache;
struct rmt_fetch;

#define RMT_FETCHERS 4 /* background fetches at once, for a mount */

struct rmt_xfer {
	/* Reads exactly len bytes at off into buf: 0 or -errno.  Called from any thread. */
	int (*get)(void *opaque, void *buf, size_t len, uint64_t off);
	/* Optional: the same, handing the bytes to sink in order as they arrive (consecutive
	 * pieces); sink returns non-zero to stop.  0 or -errno. */
	int (*stream)(void *opaque, uint64_t off, uint64_t len,
		      int (*sink)(void *op, const void *data, size_t n), void *op);
	void (*close)(void *opaque); /* may be NULL */
	void *opaque;
};

struct rmt_opts {
	size_t page;	      /* bytes per cache page (0: 64 KiB) */
	uint64_t max_request; /* largest single request (0: 16 MiB) */
	uint64_t seq_first;   /* first sequential run (0: 1 MiB) */
	uint64_t advise_max;  /* most bytes one advice fetches (0: 64 MiB) */
	/* advice fetches run in the background on these threads, when the transport streams;
	 * NULL: in the caller */
	struct rmt_fetch *background;
};

struct rmt_stats {
	uint64_t requests;   /* transport calls */
	uint64_t bytes;	     /* bytes fetched */
	uint64_t advised;    /* src_advise calls that fetched something */
	uint64_t page_hits;  /* pages found in the cache */
};

/* Threads for background fetches: at most n at once (n >= 1; started as fetches come), the
 * rest queued in order.  Borrowed by the sources given it, which it must outlive.  NULL if out
 * of memory.  Thread-safe; its lock guards its queue only (a fetch runs without it). */
struct rmt_fetch *rmt_fetch_new(unsigned n);

/* Lets the threads fetch what is queued, then joins them; the next background fetch starts
 * them again.  For a process about to fork (common/pool.h: no job may run across a fork).
 * NULL does nothing. */
void rmt_fetch_park(struct rmt_fetch *f);

/* Joins the threads (what is queued is fetched first) and frees f; no source may use it any
 * more.  NULL does nothing. */
void rmt_fetch_free(struct rmt_fetch *f);

/* A source of size bytes over x (whose close is called by src_free, also when this fails).
 * cache is borrowed and must outlive the source.  NULL if out of memory. */
struct src *rmt_src_new(const struct rmt_xfer *x, uint64_t size, struct cache *cache,
			const struct rmt_opts *o);

/* The counters of a source made by rmt_src_new (zeros for any other). */
void rmt_get_stats(struct src *s, struct rmt_stats *out);

#endif
