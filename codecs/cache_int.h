/* What the chunk cache (cache.c) and its disk tier (cache_disk.c) share.  Private to them.
 *
 * The disk tier works under the cache's one lock: every cdisk_* function but cdisk_new and
 * cdisk_free is called with it held (cdisk_read releases it while it reads, and holds it
 * again when it returns; cdisk_queue may wait on it for room in the writer's queue).
 */
#ifndef TARSEEK_CACHE_INT_H
#define TARSEEK_CACHE_INT_H

#include <pthread.h>
#include <stdint.h>

#include "cache.h"

struct cdisk;

/* A disk tier of size bytes in an unlinked file made in dir, working under *lock.  0 or
 * -errno. */
int cdisk_new(const char *dir, uint64_t size, pthread_mutex_t *lock, struct cdisk **out);

/* Stops the writer (what is queued is dropped), joins it, frees everything (lock not held). */
void cdisk_free(struct cdisk *d);

/* Queues b to be written (referenced until then); waits while the queue is full. */
void cdisk_queue(struct cdisk *d, const struct cache_key *k, struct cache_buf *b);

/* A copy of k, referenced, from the writer's queue or the ring (read and CRC-checked with the
 * lock released), or NULL. */
struct cache_buf *cdisk_get(struct cdisk *d, const struct cache_key *k);

/* Forgets every segment of stream (queued ones are dropped). */
void cdisk_drop_stream(struct cdisk *d, uint64_t stream);

/* Hits, writes, bytes in use and capacity. */
void cdisk_stats(const struct cdisk *d, struct cache_stats *out);

uint64_t cdisk_size(const struct cdisk *d);

#endif
