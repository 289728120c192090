/* What the chunk cache (cache.c), its buffers' memory (cache_mem.c) and its disk tier
 * (cache_disk.c) share.  Private to them.
 *
 * The disk tier works under the cache's one lock: every cdisk_* function but cdisk_new,
 * cdisk_park and cdisk_free is called with it held (cdisk_get releases it while it reads,
 * and holds it again when it returns; cdisk_queue may wait on it for room in the writer's
 * queue).
 */
/* Locks of cache/, and the order in which one may be taken while another is held:
 *
 *   cache.c lock (one per cache) guards its table, LRU list, byte count, statistics and disk
 *     pointer, and the whole of its disk tier (cache_disk.c: the map, the ring FIFO, the write
 *     queue, the writer's state).  cdisk_get lets it go while it reads the file, the writer
 *     while it writes, cdisk_queue while it waits for room in the queue.  Under it:
 *       -> cache_mem.c lock, when a buffer's last reference is dropped (cache_buf_put ->
 *          cmem_free: evictions, abandon, drop_stream, a written or dropped queue entry, a
 *          disk read that failed its CRC);
 *       -> the pool's lock (common/pool.c, a leaf), when the disk writer starts (cdisk_queue).
 *     Callers enter with no lock of theirs held, but for archive.c's streams_lock
 *     (cache_new_stream_id, as a stream's reader is made).
 *   cache_mem.c lock (the process's one) guards the free lists, the bump region and the one
 *     mapped ahead, the statistics and the fault-ahead thread's state.  Under it:
 *       -> the pool's lock, when the fault-ahead thread starts (carve).
 * Nothing else is taken under either, and no file I/O is done under cache.c's lock.
 */
#ifndef TARSEEK_CACHE_INT_H
#define TARSEEK_CACHE_INT_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "cache/cache.h"

struct cdisk;

/* ---- cache_mem.c: the memory of cache_buf (and cache_buf_new/ref/put, cache.h) ---- */

#define CM_MAX ((size_t)2 << 20) /* larger requests are malloc's */
#define CM_BIG 0xFFFFu		 /* the class of those */

/* At least size bytes, from a huge-page region, reused after cmem_free; *cls is the class to
 * give back with it.  NULL if out of memory.  Thread-safe. */
void *cmem_alloc(size_t size, unsigned *cls);

/* Gives back what cmem_alloc returned (NULL does nothing).  Thread-safe. */
void cmem_free(void *p, unsigned cls);

/* A cache's budget of bytes comes (bytes > 0) or goes (< 0): memory is faulted in ahead only
 * while the pool is below the sum, by a thread that starts with the first new memory carved
 * while the sum is positive and is stopped and joined when it comes back to 0.  Thread-safe. */
void cmem_expect(int64_t bytes);

/* Stops the fault-ahead thread, if any, and joins it; the next new memory starts it again
 * (cache_park).  Thread-safe. */
void cmem_park(void);

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

/* Lets the writer write what is queued, then joins it (lock not held); the next cdisk_queue
 * starts it again.  A write queued meanwhile waits for that one.  One caller at a time. */
void cdisk_park(struct cdisk *d);

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
