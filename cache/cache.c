/* The chunk cache (see cache.h for the protocol).
 *
 * A hash table of entries keyed by (stream, segment) (common/htable.h: hash_pair of the two,
 * grown by doubling when it holds more entries than buckets), and an LRU list of the published
 * ones (common/list.h; reserved entries are not on the list and cannot be evicted).  An entry
 * embeds its table and list nodes: a lookup allocates nothing.  One mutex guards it all;
 * reservations are waited for on one condition variable, broadcast on publish and abandon --
 * waits are rare (two readers wanting the same segment at the same moment) and short.
 *
 * The disk tier (cache_disk.c) works under the same lock: a miss in RAM asks it, and an
 * eviction hands it the evicted buffer unless it holds that segment already.  Evicted entries
 * are taken off the table and the list first, chained on a local list, and queued for the
 * disk after the eviction loop: queueing may wait for room (letting go of the lock), and no
 * entry pointer is used across that wait.  Written on eviction rather than on publish, a
 * segment that is read while it is in RAM never costs a write (a cold md5 pass over 1000
 * small files of lz4 -B4 decoded 117 MB, all of it written to the disk tier, and none of it
 * was evicted: the write was 23 % of the daemon's time).
 *
 * Locks: cache.lock (the disk tier's too); under it, cache_mem.c's lock when a buffer's last
 * reference goes, and the thread pool's when the disk writer starts (cache_int.h says which
 * and when).
 */
#include "cache/cache.h"
#include "cache/cache_int.h"

#include <pthread.h>
#include <stdlib.h>

#include "common/hash.h"
#include "common/htable.h"
#include "common/list.h"
#include "common/may_block.h"

struct entry {
	struct htable_node hnode; /* in cache.table (first: a lookup reads it, then the key) */
	struct cache_key key;
	struct cache_buf *buf; /* NULL while reserved */
	/* in cache.lru while published (head = most recent), self-linked while reserved; on an
	 * evicted list (spill) once off the table */
	struct list_node lru;
};

struct cache {
	pthread_mutex_t lock;
	pthread_cond_t filled; /* a reservation ended (publish or abandon) */
	/* protected by lock: */
	struct htable table; /* every entry, reserved or published */
	struct list_node lru;
	uint64_t bytes, budget;
	uint64_t next_stream;
	uint64_t hits, misses, evictions;
	struct cdisk *disk; /* NULL: no disk tier */
};

/* Bytes a published buffer is charged: its data plus bookkeeping. */
static uint64_t charge(const struct cache_buf *b)
{
	return b->len + sizeof(*b) + sizeof(struct entry);
}

static uint64_t key_hash(const struct cache_key *k)
{
	return hash_pair(k->stream, k->seg);
}

struct cache *cache_new(uint64_t budget)
{
	struct cache *c = calloc(1, sizeof(*c));

	if (!c)
		return NULL;
	if (htable_init(&c->table, 256) < 0) {
		free(c);
		return NULL;
	}
	list_init(&c->lru);
	c->budget = budget;
	cmem_expect((int64_t)budget); /* the pool may fault that much in ahead */
	c->next_stream = 1;
	pthread_mutex_init(&c->lock, NULL);
	pthread_cond_init(&c->filled, NULL);
	return c;
}

uint64_t cache_new_stream_id(struct cache *c)
{
	pthread_mutex_lock(&c->lock);
	uint64_t id = c->next_stream++;
	pthread_mutex_unlock(&c->lock);
	return id;
}

/* k's entry, reserved or published, or NULL (lock held). */
static struct entry *find(struct cache *c, const struct cache_key *k)
{
	for (struct htable_node *n = htable_first(&c->table, key_hash(k)); n; n = htable_next(n)) {
		struct entry *e = htable_entry(n, struct entry, hnode);
		if (e->key.stream == k->stream && e->key.seg == k->seg)
			return e;
	}
	return NULL;
}

/* Adds a reserved entry for k (caller checked it is absent).  NULL if out of memory. */
static struct entry *reserve(struct cache *c, const struct cache_key *k)
{
	struct entry *e = calloc(1, sizeof(*e));

	if (!e)
		return NULL;
	e->key = *k;
	list_init(&e->lru);
	if (htable_add(&c->table, &e->hnode, key_hash(k)) < 0) { /* the table has buckets */
		free(e);
		return NULL;
	}
	return e;
}

/* Takes e off the table and the LRU list (lock held); its buffer, if any, stays with it. */
static void unlink_entry(struct cache *c, struct entry *e)
{
	htable_del(&c->table, &e->hnode);
	if (e->buf) {
		list_del(&e->lru);
		c->bytes -= charge(e->buf);
	}
}

static void remove_entry(struct cache *c, struct entry *e)
{
	unlink_entry(c, e);
	cache_buf_put(e->buf);
	free(e);
}

/* Entries evicted by one publish, on a list of their own (by their lru nodes, the last evicted
 * first):
 * spill() hands their buffers to the disk tier, if there is one, and frees them. */
struct evicted {
	struct list_node head;
};

static void evicted_init(struct evicted *ev)
{
	list_init(&ev->head);
}

/* Takes e off the table and the list onto ev, its buffer with it, for spill() (lock held). */
static void evict(struct cache *c, struct entry *e, struct evicted *ev)
{
	unlink_entry(c, e);
	list_add_head(&ev->head, &e->lru);
}

/* Hands what was evicted to the disk tier, unless it holds those segments already or they are
 * secret (decrypted bytes stay off the disk), and frees the entries (lock held; may wait for
 * room in the writer's queue, letting go of it). */
static void spill(struct cache *c, struct evicted *ev)
{
	struct list_node *n;

	while ((n = list_first(&ev->head))) {
		struct entry *e = list_entry(n, struct entry, lru);
		list_del(n);
		if (e->buf && !e->buf->secret && c->disk && !cdisk_has(c->disk, &e->key))
			cdisk_queue(c->disk, &e->key, e->buf);
		cache_buf_put(e->buf);
		free(e);
	}
}

int cache_set_disk(struct cache *c, const char *dir, uint64_t size)
{
	struct cdisk *d;
	int err;

	if (size == 0)
		return 0;
	err = cdisk_new(dir, size, &c->lock, &d);
	if (err)
		return err;
	/* what RAM holds now goes to the disk when it is evicted, like the rest */
	pthread_mutex_lock(&c->lock);
	c->disk = d;
	pthread_mutex_unlock(&c->lock);
	return 0;
}

static void publish_locked(struct cache *c, struct entry *e, struct cache_buf *b,
			   struct evicted *ev);

/* A miss (lock held): reserves k for the caller, unless the disk tier holds it: then it is
 * published and returned referenced (no reservation left).  Out of memory for the entry:
 * NULL; the caller decodes anyway, and publish/abandon of an unknown key are no-ops. */
static struct cache_buf *miss_locked(struct cache *c, const struct cache_key *k)
{
	struct entry *e = reserve(c, k);
	struct cache_buf *b = e && c->disk ? cdisk_get(c->disk, k) : NULL;
	struct evicted ev;

	evicted_init(&ev);
	if (b) {
		e = find(c, k); /* the lock may have been let go meanwhile */
		if (e && !e->buf)
			publish_locked(c, e, b, &ev);
		c->hits++;
		pthread_cond_broadcast(&c->filled);
		spill(c, &ev);
	}
	return b;
}

int cache_get(struct cache *c, const struct cache_key *k, struct cache_buf **out)
{
	struct entry *e;
	bool told = false;

	*out = NULL;
	pthread_mutex_lock(&c->lock);
	for (;;) {
		e = find(c, k);
		if (e && e->buf) {
			list_move_head(&c->lru, &e->lru);
			cache_buf_ref(e->buf);
			*out = e->buf;
			c->hits++;
			pthread_mutex_unlock(&c->lock);
			return 0;
		}
		/* Not in memory: we wait for the thread decoding it, or read the disk tier, or
		 * the caller decodes it.  A request loop's thread is told first (may_block.h). */
		if (!told && may_block_armed()) {
			told = true;
			pthread_mutex_unlock(&c->lock);
			may_block();
			pthread_mutex_lock(&c->lock);
			continue;
		}
		if (!e)
			break;
		pthread_cond_wait(&c->filled, &c->lock);
	}
	struct cache_buf *b = miss_locked(c, k);
	if (b) {
		pthread_mutex_unlock(&c->lock);
		*out = b;
		return 0;
	}
	c->misses++;
	pthread_mutex_unlock(&c->lock);
	return 1;
}

bool cache_try_reserve(struct cache *c, const struct cache_key *k)
{
	bool ok = false;

	pthread_mutex_lock(&c->lock);
	if (!find(c, k))
		ok = reserve(c, k) != NULL;
	pthread_mutex_unlock(&c->lock);
	return ok;
}

int cache_claim(struct cache *c, const struct cache_key *k)
{
	struct cache_buf *b;
	struct entry *e;

	pthread_mutex_lock(&c->lock);
	e = find(c, k);
	if (e) {
		int held = e->buf ? 0 : 2;
		pthread_mutex_unlock(&c->lock);
		return held;
	}
	b = miss_locked(c, k);
	pthread_mutex_unlock(&c->lock);
	if (b) {
		cache_buf_put(b);
		return 0;
	}
	return 1;
}

bool cache_known(struct cache *c, const struct cache_key *k)
{
	pthread_mutex_lock(&c->lock);
	bool ok = find(c, k) != NULL;
	pthread_mutex_unlock(&c->lock);
	return ok;
}

bool cache_contains(struct cache *c, const struct cache_key *k)
{
	pthread_mutex_lock(&c->lock);
	struct entry *e = find(c, k);
	bool ok = e && e->buf;
	pthread_mutex_unlock(&c->lock);
	return ok;
}

/* Fills the reserved entry e with b in RAM (lock held), evicting onto ev what no longer fits.
 * A buffer larger than the whole budget is not kept in RAM: served to its reader only, and
 * handed to the disk tier, if there is one, as if evicted at once. */
static void publish_locked(struct cache *c, struct entry *e, struct cache_buf *b,
			   struct evicted *ev)
{
	cache_buf_ref(b);
	if (charge(b) > c->budget) {
		evict(c, e, ev); /* reserved: off the table only */
		e->buf = b;
		return;
	}
	e->buf = b;
	c->bytes += charge(b);
	list_add_head(&c->lru, &e->lru);
	while (c->bytes > c->budget && list_last(&c->lru) != &e->lru) {
		evict(c, list_entry(list_last(&c->lru), struct entry, lru), ev);
		c->evictions++;
	}
}

void cache_publish(struct cache *c, const struct cache_key *k, struct cache_buf *b)
{
	struct evicted ev;

	evicted_init(&ev);
	pthread_mutex_lock(&c->lock);
	struct entry *e = find(c, k);
	if (e && !e->buf)
		publish_locked(c, e, b, &ev);
	pthread_cond_broadcast(&c->filled);
	spill(c, &ev); /* may wait for room: the segment is served meanwhile */
	pthread_mutex_unlock(&c->lock);
}

void cache_abandon(struct cache *c, const struct cache_key *k)
{
	pthread_mutex_lock(&c->lock);
	struct entry *e = find(c, k);
	if (e && !e->buf)
		remove_entry(c, e);
	pthread_cond_broadcast(&c->filled);
	pthread_mutex_unlock(&c->lock);
}

void cache_drop_stream(struct cache *c, uint64_t stream)
{
	struct list_node *n, *tmp;

	pthread_mutex_lock(&c->lock);
	list_for_each_safe(n, tmp, &c->lru) {
		struct entry *e = list_entry(n, struct entry, lru);
		if (e->key.stream == stream)
			remove_entry(c, e);
	}
	if (c->disk)
		cdisk_drop_stream(c->disk, stream);
	pthread_mutex_unlock(&c->lock);
}

void cache_get_stats(struct cache *c, struct cache_stats *out)
{
	pthread_mutex_lock(&c->lock);
	out->hits = c->hits;
	out->misses = c->misses;
	out->evictions = c->evictions;
	out->bytes = c->bytes;
	out->entries = c->table.count;
	out->budget = c->budget;
	out->disk_hits = out->disk_writes = out->disk_bytes = out->disk_size = 0;
	if (c->disk)
		cdisk_stats(c->disk, out);
	pthread_mutex_unlock(&c->lock);
}

uint64_t cache_room(struct cache *c)
{
	pthread_mutex_lock(&c->lock);
	uint64_t room = c->disk ? cdisk_size(c->disk) : c->budget;
	pthread_mutex_unlock(&c->lock);
	return room;
}

void cache_park(struct cache *c)
{
	struct cdisk *d;

	if (!c)
		return;
	pthread_mutex_lock(&c->lock);
	d = c->disk;
	pthread_mutex_unlock(&c->lock);
	if (d)
		cdisk_park(d);
	cmem_park();
}

void cache_free(struct cache *c)
{
	if (!c)
		return;
	cdisk_free(c->disk); /* the writer first: it uses the lock and the buffers */
	for (struct htable_node *n; (n = htable_pop(&c->table));) {
		struct entry *e = htable_entry(n, struct entry, hnode);
		cache_buf_put(e->buf);
		free(e);
	}
	htable_fini(&c->table);
	pthread_mutex_destroy(&c->lock);
	pthread_cond_destroy(&c->filled);
	cmem_expect(-(int64_t)c->budget);
	free(c);
}
