/* The chunk cache: decoded segments of compressed archives, shared by every reader and
 * thread of a process, least recently used first out, bounded in bytes.
 *
 * Protocol (modelled on squashfuse's cache): a reader asks for a key with cache_get().
 *  - hit: it gets a referenced buffer, copies from it, and drops the reference with
 *    cache_buf_put();
 *  - miss: the key is now *reserved* by the caller, who must decode the segment and either
 *    cache_publish() it or cache_abandon() the reservation (on error).  Other threads asking
 *    for a reserved key wait, so concurrent requests for one segment cost one decode;
 *    after an abandon, one waiter takes the reservation over and tries itself.
 * A decoder passing over other segments on its way may store them too: cache_try_reserve()
 * reserves a key only if it is absent, and never waits.
 *
 * Ownership: a struct cache_buf is immutable once published and refcounted; cache_buf_new()
 * returns it with one reference owned by the caller; the cache takes its own reference in
 * cache_publish(); the last cache_buf_put() frees it.  Evicting a buffer drops only the
 * cache's reference, so a reader copying from it is never disturbed.
 *
 * Memory: published bytes stay under the budget (evicting the least recently used); a
 * buffer larger than the whole budget is handed to its reader but not kept.  Buffers take
 * their memory from huge-page regions that keep freed memory for the next buffer
 * (cache_mem.c): decoding into fresh memory costs a page fault per 4 KiB otherwise.
 *
 * Disk tier (optional, cache_set_disk): a buffer evicted from RAM (or too big for it) is
 * written to an unlinked temporary file used as a ring log of bounded size, unless that file
 * holds its segment already, by a writer thread (started on the first write; at most 16 MiB
 * queued, past that the publish that evicted waits); a RAM miss that the disk or the queue
 * holds is served from there (a disk read checks its CRC) instead of being decoded again.
 * A secret buffer (decrypted bytes) is never written there: evicted, it is gone.
 * It is what makes archives that cannot be sought (single-block xz, single-frame zstd) or
 * whose blocks are far larger than the RAM budget (xz -T's 24 MiB) cheap to read at random:
 * each segment is decoded once per mount.  The file is never named in the file system and vanishes with
 * the process; it costs page cache, not resident memory.
 *
 * All functions are thread-safe.  One mutex guards the table, the LRU list and the disk
 * tier's map; waiters sleep on one condition variable (reservations are short: one segment
 * decode or one disk read).  File I/O happens without the mutex.
 */
#ifndef TARSEEK_CACHE_H
#define TARSEEK_CACHE_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct cache;

struct cache_key {
	uint64_t stream; /* from cache_new_stream_id(): one per compressed archive reader */
	uint64_t seg;	 /* global segment number within that stream */
};

struct cache_buf {
	atomic_int refs;
	unsigned mem_class; /* where its memory came from (cache_mem.c) */
	bool secret;	    /* decrypted bytes (an encrypted 7z folder's): never written to the
			       disk tier; false from cache_buf_new, set before publishing */
	size_t len;
	uint8_t data[];
};

struct cache_stats {
	uint64_t hits, misses, evictions;
	uint64_t bytes, entries; /* now; entries counts reservations too */
	uint64_t budget;
	uint64_t disk_hits, disk_writes; /* the disk tier */
	uint64_t disk_bytes, disk_size;	 /* in use now; capacity (0: no disk tier) */
};

/* A cache holding at most budget bytes of decoded data.  NULL if out of memory. */
struct cache *cache_new(uint64_t budget);
void cache_free(struct cache *c); /* NULL does nothing; no reservation may be pending */

/* Adds the disk tier: up to size bytes in an unlinked file created in dir.  May be called
 * once, also while the cache is in use (what RAM holds then is written to disk too); its
 * writer thread starts with the first write (see cache_park for a process that forks).
 * 0 or -errno (the cache then works without it). */
int cache_set_disk(struct cache *c, const char *dir, uint64_t size);

/* Ends the cache's background threads -- its disk tier's writer, once it has written what is
 * queued, and the thread that faults buffer memory in ahead (cache_mem.c, shared by every
 * cache) -- and joins them; they start again when next needed.  For a process about to fork
 * (common/pool.h: no job may run across a fork), called while nothing else uses the cache.
 * NULL does nothing. */
void cache_park(struct cache *c);

uint64_t cache_new_stream_id(struct cache *c);

/* 0: hit, *out referenced.  1: miss, the key is reserved by the caller (*out = NULL). */
int cache_get(struct cache *c, const struct cache_key *k, struct cache_buf **out);

/* Reserves k if it is neither present nor reserved.  Never waits. */
bool cache_try_reserve(struct cache *c, const struct cache_key *k);

/* As cache_get, but never waits: 0 present (in RAM, or brought back from the disk tier),
 * 1 absent and now reserved by the caller, 2 reserved by someone else. */
int cache_claim(struct cache *c, const struct cache_key *k);

/* True if k is present or reserved (being filled).  For heuristics. */
bool cache_known(struct cache *c, const struct cache_key *k);

/* True if k is present (no reference taken, no LRU update).  For tests and heuristics. */
bool cache_contains(struct cache *c, const struct cache_key *k);

/* Fills the caller's reservation of k with b; the caller keeps its own reference. */
void cache_publish(struct cache *c, const struct cache_key *k, struct cache_buf *b);

/* Drops the caller's reservation of k without data; waiters retry. */
void cache_abandon(struct cache *c, const struct cache_key *k);

/* Drops every published entry of a stream (when an archive is closed). */
void cache_drop_stream(struct cache *c, uint64_t stream);

/* The buffers (made in cache_mem.c, below the table and the disk tier that both use them). */
struct cache_buf *cache_buf_new(size_t len); /* NULL if out of memory */
void cache_buf_ref(struct cache_buf *b);
void cache_buf_put(struct cache_buf *b); /* NULL does nothing */

void cache_get_stats(struct cache *c, struct cache_stats *out);

/* Bytes the cache can hold: the disk tier's size if there is one, else the memory budget. */
uint64_t cache_room(struct cache *c);

#endif
