/* What the chunk cache (cache.c), its buffers' memory (cache_mem.c) and its disk tier
 * (cache_disk.c) share.  Private to them.
 *
 * The disk tier works under the cache's one lock: every cdisk_* function but cdisk_new and
 * cdisk_free is called with it held (cdisk_read releases it while it reads, and holds it
 * again when it returns; cdisk_queue may wait on it for room in the writer's queue).
 */
#ifndef TARSEEK_CACHE_INT_H
#define TARSEEK_CACHE_INT_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "cache.h"

struct cdisk;

/* ---- cache_mem.c: the memory of cache_buf ---- */

#define CM_MAX ((size_t)2 << 20) /* larger requests are malloc's */
#define CM_BIG 0xFFFFu		 /* the class of those */

/* At least size bytes, from a huge-page region, reused after cmem_free; *cls is the class to
 * give back with it.  NULL if out of memory.  Thread-safe. */
void *cmem_alloc(size_t size, unsigned *cls);

/* Gives back what cmem_alloc returned (NULL does nothing).  Thread-safe. */
void cmem_free(void *p, unsigned cls);

/* A cache's budget of bytes comes (bytes > 0) or goes (< 0): memory is faulted in ahead only
 * while the pool is below the sum.  Thread-safe. */
void cmem_expect(int64_t bytes);

/* Bytes a block of class cls occupies (0 for CM_BIG: malloc's). */
size_t cmem_size(unsigned cls);

struct cmem_stats {
	uint64_t mapped;     /* bytes of regions in use (not the one mapped ahead) */
	uint64_t carved;     /* of those, bytes handed out at least once, or skipped */
	uint64_t used_bytes; /* in blocks handed out */
	uint64_t hot_bytes;  /* free and resident */
	uint64_t cold_bytes; /* free, handed back to the kernel */
	uint64_t prefaulted; /* bytes the ahead thread populated */
	bool ahead_busy;     /* the ahead thread was woken for work or is at it (false once it
			      * sleeps with nothing wanted, or has ended) */
};

void cmem_get_stats(struct cmem_stats *out);

/* ---- cache_disk.c: the disk tier ---- */

/* A disk tier of size bytes in an unlinked file made in dir, working under *lock.  0 or
 * -errno. */
int cdisk_new(const char *dir, uint64_t size, pthread_mutex_t *lock, struct cdisk **out);

/* Stops the writer (what is queued is dropped), joins it, frees everything (lock not held). */
void cdisk_free(struct cdisk *d);

/* Queues b to be written (referenced until then); waits while the queue is full. */
void cdisk_queue(struct cdisk *d, const struct cache_key *k, struct cache_buf *b);

/* True if the queue, the write in progress or the ring holds k (a ring slot may still fail its
 * CRC when read). */
bool cdisk_has(struct cdisk *d, const struct cache_key *k);

/* A copy of k, referenced, from the writer's queue or the ring (read and CRC-checked with the
 * lock released), or NULL. */
struct cache_buf *cdisk_get(struct cdisk *d, const struct cache_key *k);

/* Forgets every segment of stream (queued ones are dropped). */
void cdisk_drop_stream(struct cdisk *d, uint64_t stream);

/* Hits, writes, bytes in use and capacity. */
void cdisk_stats(const struct cdisk *d, struct cache_stats *out);

uint64_t cdisk_size(const struct cdisk *d);

#endif
