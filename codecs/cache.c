/* The chunk cache (see cache.h for the protocol).
 *
 * A chained hash table of entries keyed by (stream, segment), and a doubly linked LRU list
 * of the published ones (reserved entries are not on the list and cannot be evicted).  The
 * table grows by doubling when it holds more entries than buckets.  One mutex guards it all;
 * reservations are waited for on one condition variable, broadcast on publish and abandon --
 * waits are rare (two readers wanting the same segment at the same moment) and short.
 *
 * The disk tier is a ring log in an unlinked file: writes go at the head, in order; a FIFO of
 * the slots in write order tells which ones the next write overwrites (at a wrap, the slots
 * left past the old head go too).  Publishing queues the buffer for a writer thread (at most
 * WQ_MAX bytes queued; past that the publisher waits), which claims the slot under the lock,
 * writes and checksums outside it, then maps the slot: the decoders never wait for the page
 * cache, and no reader waits behind a write.  A miss looks in the queue too.  Reads happen
 * outside the lock and check the slot's CRC, so a read racing with a write that reused its
 * bytes is a miss, never wrong data.
 *
 * Locks: cache.lock only; no other lock is taken while holding it.
 */
#include "cache.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

#include "../common/hash.h"
#include "../common/log.h"

struct entry {
	struct cache_key key;
	struct cache_buf *buf; /* NULL while reserved */
	struct entry *hnext;   /* hash chain */
	struct entry *prev, *next; /* LRU list (published only); head = most recent */
};

struct dslot {
	struct cache_key key;
	uint64_t off;
	uint32_t len, crc;
	bool dead;	     /* out of the map (failed its CRC, or superseded); still in the FIFO */
	struct dslot *hnext; /* map chain */
	struct dslot *qnext; /* FIFO, oldest first */
};

struct wjob { /* a buffer waiting for the writer */
	struct cache_key key;
	struct cache_buf *buf; /* referenced */
	struct wjob *next;
};

#define WQ_MAX (16u << 20) /* bytes queued for the writer */

struct disk {
	int fd;
	uint64_t size, head, used;
	struct dslot **table;
	size_t nbuckets, n;
	struct dslot *qhead, *qtail;
	uint64_t hits, writes;
	/* the writer thread and its queue */
	pthread_t writer;
	pthread_cond_t wwork, wspace; /* queued work or stop; room in the queue */
	struct wjob *whead, *wtail;
	struct wjob *inflight; /* the job the writer is writing (out of the queue) */
	uint64_t wbytes;
	bool started; /* the writer exists (made on the first write, so after a fork) */
	bool stop;    /* cache_free, or no writer could be made: nothing more is queued */
};

struct cache {
	pthread_mutex_t lock;
	pthread_cond_t filled; /* a reservation ended (publish or abandon) */
	/* protected by lock: */
	struct entry **table;
	size_t nbuckets, nentries;
	struct entry *lru_head, *lru_tail;
	uint64_t bytes, budget;
	uint64_t next_stream;
	uint64_t hits, misses, evictions;
	struct disk *disk; /* NULL: no disk tier */
};

/* Bytes a published buffer is charged: its data plus bookkeeping. */
static uint64_t charge(const struct cache_buf *b)
{
	return b->len + sizeof(*b) + sizeof(struct entry);
}

static size_t bucket(const struct cache *c, const struct cache_key *k)
{
	return (size_t)(hash_pair(k->stream, k->seg) & (c->nbuckets - 1));
}

struct cache *cache_new(uint64_t budget)
{
	struct cache *c = calloc(1, sizeof(*c));

	if (!c)
		return NULL;
	c->nbuckets = 256;
	c->table = calloc(c->nbuckets, sizeof(*c->table));
	if (!c->table) {
		free(c);
		return NULL;
	}
	c->budget = budget;
	c->next_stream = 1;
	pthread_mutex_init(&c->lock, NULL);
	pthread_cond_init(&c->filled, NULL);
	return c;
}

struct cache_buf *cache_buf_new(size_t len)
{
	struct cache_buf *b = malloc(sizeof(*b) + len);

	if (!b)
		return NULL;
	atomic_init(&b->refs, 1);
	b->len = len;
	return b;
}

void cache_buf_ref(struct cache_buf *b)
{
	atomic_fetch_add(&b->refs, 1);
}

void cache_buf_put(struct cache_buf *b)
{
	if (b && atomic_fetch_sub(&b->refs, 1) == 1)
		free(b);
}

uint64_t cache_new_stream_id(struct cache *c)
{
	pthread_mutex_lock(&c->lock);
	uint64_t id = c->next_stream++;
	pthread_mutex_unlock(&c->lock);
	return id;
}

static struct entry *find(struct cache *c, const struct cache_key *k, struct entry ***link)
{
	struct entry **p = &c->table[bucket(c, k)];

	for (; *p; p = &(*p)->hnext)
		if ((*p)->key.stream == k->stream && (*p)->key.seg == k->seg)
			break;
	if (link)
		*link = p;
	return *p;
}

static void lru_unlink(struct cache *c, struct entry *e)
{
	if (e->prev)
		e->prev->next = e->next;
	else
		c->lru_head = e->next;
	if (e->next)
		e->next->prev = e->prev;
	else
		c->lru_tail = e->prev;
	e->prev = e->next = NULL;
}

static void lru_push(struct cache *c, struct entry *e)
{
	e->prev = NULL;
	e->next = c->lru_head;
	if (c->lru_head)
		c->lru_head->prev = e;
	c->lru_head = e;
	if (!c->lru_tail)
		c->lru_tail = e;
}

static void grow(struct cache *c)
{
	size_t n = c->nbuckets * 2;
	struct entry **t = calloc(n, sizeof(*t));

	if (!t)
		return; /* longer chains, still correct */
	for (size_t i = 0; i < c->nbuckets; i++) {
		struct entry *e = c->table[i], *next;
		for (; e; e = next) {
			next = e->hnext;
			c->nbuckets = n; /* bucket() uses it */
			size_t b = bucket(c, &e->key);
			c->nbuckets = n / 2;
			e->hnext = t[b];
			t[b] = e;
		}
	}
	free(c->table);
	c->table = t;
	c->nbuckets = n;
}

/* Adds a reserved entry for k (caller checked it is absent).  NULL if out of memory. */
static struct entry *reserve(struct cache *c, const struct cache_key *k)
{
	struct entry *e = calloc(1, sizeof(*e));
	size_t b;

	if (!e)
		return NULL;
	if (c->nentries >= c->nbuckets)
		grow(c);
	e->key = *k;
	b = bucket(c, k);
	e->hnext = c->table[b];
	c->table[b] = e;
	c->nentries++;
	return e;
}

static void remove_entry(struct cache *c, struct entry *e)
{
	struct entry **link;

	find(c, &e->key, &link);
	*link = e->hnext;
	c->nentries--;
	if (e->buf) {
		lru_unlink(c, e);
		c->bytes -= charge(e->buf);
		cache_buf_put(e->buf);
	}
	free(e);
}

/* ---- the disk tier (lock held) ---- */

static size_t dbucket(const struct disk *d, const struct cache_key *k)
{
	return (size_t)(hash_pair(k->stream, k->seg) & (d->nbuckets - 1));
}

static struct dslot *dfind(struct disk *d, const struct cache_key *k)
{
	for (struct dslot *s = d->table[dbucket(d, k)]; s; s = s->hnext)
		if (s->key.stream == k->stream && s->key.seg == k->seg)
			return s;
	return NULL;
}

/* Takes a slot out of the map (it stays in the FIFO until its bytes are reused). */
static void dunmap(struct disk *d, struct dslot *s)
{
	struct dslot **p = &d->table[dbucket(d, &s->key)];

	if (s->dead)
		return;
	while (*p && *p != s)
		p = &(*p)->hnext;
	if (*p)
		*p = s->hnext;
	s->dead = true;
	d->n--;
}

/* Frees the oldest slot. */
static void dpop(struct disk *d)
{
	struct dslot *s = d->qhead;

	d->qhead = s->qnext;
	if (!d->qhead)
		d->qtail = NULL;
	dunmap(d, s);
	d->used -= s->len;
	free(s);
}

static void dmap_grow(struct disk *d)
{
	size_t n = d->nbuckets * 2;
	struct dslot **t = calloc(n, sizeof(*t));

	if (!t)
		return;
	for (size_t i = 0; i < d->nbuckets; i++)
		for (struct dslot *s = d->table[i], *next; s; s = next) {
			next = s->hnext;
			size_t b = (size_t)(hash_pair(s->key.stream, s->key.seg) & (n - 1));
			s->hnext = t[b];
			t[b] = s;
		}
	free(d->table);
	d->table = t;
	d->nbuckets = n;
}

/* Claims the ring bytes for a copy of b (lock held): the oldest slots it overlaps go.  The
 * slot joins the FIFO now, out of the map (dead) until its bytes are written. */
static struct dslot *dclaim(struct disk *d, const struct cache_key *k, const struct cache_buf *b)
{
	struct dslot *s;

	if (b->len == 0 || b->len > d->size / 4)
		return NULL;
	if (d->head + b->len > d->size) { /* wrap: what is left past the head goes */
		while (d->qhead && d->qhead->off >= d->head)
			dpop(d);
		d->head = 0;
	}
	while (d->qhead && d->qhead->off >= d->head && d->qhead->off < d->head + b->len)
		dpop(d);
	s = calloc(1, sizeof(*s));
	if (!s)
		return NULL;
	s->key = *k;
	s->off = d->head;
	s->len = (uint32_t)b->len;
	s->dead = true;
	d->head += b->len;
	d->used += b->len;
	if (d->qtail)
		d->qtail->qnext = s;
	else
		d->qhead = s;
	d->qtail = s;
	return s;
}

/* Maps a written slot (lock held), replacing an older copy of its key. */
static void dcommit(struct disk *d, struct dslot *s)
{
	struct dslot *old = dfind(d, &s->key);

	if (old)
		dunmap(d, old);
	if (d->n >= d->nbuckets)
		dmap_grow(d);
	size_t bk = dbucket(d, &s->key);
	s->dead = false;
	s->hnext = d->table[bk];
	d->table[bk] = s;
	d->n++;
	d->writes++;
}

/* The writer: takes queued buffers in order and writes them into the ring.  Only this thread
 * claims slots and pops the FIFO, so a slot being written is never reused meanwhile. */
static void *disk_writer(void *arg)
{
	struct cache *c = arg;
	struct disk *d = c->disk;

	pthread_mutex_lock(&c->lock);
	for (;;) {
		while (!d->whead && !d->stop)
			pthread_cond_wait(&d->wwork, &c->lock);
		if (!d->whead)
			break; /* stop, and nothing left */
		struct wjob *j = d->whead;
		d->whead = j->next;
		if (!d->whead)
			d->wtail = NULL;
		d->inflight = j;
		struct dslot *slot = dclaim(d, &j->key, j->buf);
		uint64_t off = slot ? slot->off : 0;
		pthread_mutex_unlock(&c->lock);
		bool ok = slot && pwrite(d->fd, j->buf->data, j->buf->len, (off_t)off) ==
					  (ssize_t)j->buf->len;
		uint32_t crc = ok ? (uint32_t)crc32(0, j->buf->data, (uInt)j->buf->len) : 0;
		pthread_mutex_lock(&c->lock);
		if (ok) { /* else: disk full or failing; the slot stays dead, the tier stops helping */
			slot->crc = crc;
			dcommit(d, slot);
		}
		d->wbytes -= j->buf->len;
		d->inflight = NULL;
		pthread_cond_broadcast(&d->wspace);
		cache_buf_put(j->buf);
		free(j);
	}
	pthread_mutex_unlock(&c->lock);
	return NULL;
}

/* Queues b for the disk (lock held); waits while the queue is full. */
static void dqueue(struct cache *c, const struct cache_key *k, struct cache_buf *b)
{
	struct disk *d = c->disk;
	struct wjob *j;

	if (b->len == 0 || b->len > d->size / 4 || d->stop)
		return;
	if (!d->started) {
		int err = pthread_create(&d->writer, NULL, disk_writer, c);
		if (err) {
			tfs_log(TFS_LOG_WARNING, "disk cache: no writer thread: %s; going on without",
				strerror(err));
			d->stop = true;
			return;
		}
		d->started = true;
	}
	while (d->wbytes && d->wbytes + b->len > WQ_MAX && !d->stop)
		pthread_cond_wait(&d->wspace, &c->lock);
	j = malloc(sizeof(*j));
	if (!j)
		return;
	cache_buf_ref(b);
	j->key = *k;
	j->buf = b;
	j->next = NULL;
	if (d->wtail)
		d->wtail->next = j;
	else
		d->whead = j;
	d->wtail = j;
	d->wbytes += b->len;
	pthread_cond_signal(&d->wwork);
}

/* A queued buffer for k, referenced, or NULL (lock held). */
static struct cache_buf *dqueued(struct disk *d, const struct cache_key *k)
{
	struct wjob *j = d->inflight;

	if (!j || j->key.stream != k->stream || j->key.seg != k->seg)
		for (j = d->whead; j; j = j->next)
			if (j->key.stream == k->stream && j->key.seg == k->seg)
				break;
	if (!j)
		return NULL;
	cache_buf_ref(j->buf);
	return j->buf;
}

int cache_set_disk(struct cache *c, const char *dir, uint64_t size)
{
	struct disk *d;
	int fd;

	if (size == 0)
		return 0;
	fd = open(dir, O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
	if (fd < 0) { /* no O_TMPFILE here: a named file, unlinked at once */
		char *tmpl;
		if (asprintf(&tmpl, "%s/tarseek-cache-XXXXXX", dir) < 0)
			return -ENOMEM;
		fd = mkostemp(tmpl, O_CLOEXEC);
		if (fd >= 0)
			unlink(tmpl);
		free(tmpl);
		if (fd < 0)
			return -errno;
	}
	d = calloc(1, sizeof(*d));
	if (d) {
		d->nbuckets = 1024;
		d->table = calloc(d->nbuckets, sizeof(*d->table));
	}
	if (!d || !d->table) {
		if (d)
			free(d->table);
		free(d);
		close(fd);
		return -ENOMEM;
	}
	d->fd = fd;
	d->size = size;
	pthread_cond_init(&d->wwork, NULL);
	pthread_cond_init(&d->wspace, NULL);
	pthread_mutex_lock(&c->lock);
	c->disk = d;
	pthread_mutex_unlock(&c->lock);
	return 0;
}

static void publish_locked(struct cache *c, struct entry *e, struct cache_buf *b);

int cache_get(struct cache *c, const struct cache_key *k, struct cache_buf **out)
{
	struct entry *e;

	*out = NULL;
	pthread_mutex_lock(&c->lock);
	for (;;) {
		e = find(c, k, NULL);
		if (!e)
			break;
		if (e->buf) {
			lru_unlink(c, e);
			lru_push(c, e);
			cache_buf_ref(e->buf);
			*out = e->buf;
			c->hits++;
			pthread_mutex_unlock(&c->lock);
			return 0;
		}
		pthread_cond_wait(&c->filled, &c->lock);
	}
	/* Out of memory for the entry: the caller decodes anyway; publish/abandon of an
	 * unknown key are no-ops. */
	e = reserve(c, k);
	struct cache_buf *qb = e && c->disk ? dqueued(c->disk, k) : NULL;
	if (qb) { /* still on its way to the disk */
		publish_locked(c, e, qb);
		c->disk->hits++;
		c->hits++;
		pthread_cond_broadcast(&c->filled);
		pthread_mutex_unlock(&c->lock);
		*out = qb;
		return 0;
	}
	struct dslot *ds = c->disk ? dfind(c->disk, k) : NULL;
	if (e && ds) {
		uint64_t off = ds->off;
		uint32_t len = ds->len, crc = ds->crc;
		int fd = c->disk->fd;
		pthread_mutex_unlock(&c->lock);
		struct cache_buf *b = cache_buf_new(len);
		bool ok = b && pread(fd, b->data, len, (off_t)off) == (ssize_t)len &&
			  (uint32_t)crc32(0, b->data, len) == crc;
		pthread_mutex_lock(&c->lock);
		if (ok) {
			e = find(c, k, NULL);
			if (e && !e->buf)
				publish_locked(c, e, b);
			c->disk->hits++;
			c->hits++;
			pthread_cond_broadcast(&c->filled);
			pthread_mutex_unlock(&c->lock);
			*out = b;
			return 0;
		}
		cache_buf_put(b);
		ds = dfind(c->disk, k); /* reused meanwhile, or bad: forget it */
		if (ds)
			dunmap(c->disk, ds);
	}
	c->misses++;
	pthread_mutex_unlock(&c->lock);
	return 1;
}

bool cache_try_reserve(struct cache *c, const struct cache_key *k)
{
	bool ok = false;

	pthread_mutex_lock(&c->lock);
	if (!find(c, k, NULL))
		ok = reserve(c, k) != NULL;
	pthread_mutex_unlock(&c->lock);
	return ok;
}

bool cache_contains(struct cache *c, const struct cache_key *k)
{
	pthread_mutex_lock(&c->lock);
	struct entry *e = find(c, k, NULL);
	bool ok = e && e->buf;
	pthread_mutex_unlock(&c->lock);
	return ok;
}

/* Fills the reserved entry e with b in RAM (lock held). */
static void publish_locked(struct cache *c, struct entry *e, struct cache_buf *b)
{
	if (charge(b) > c->budget) {
		remove_entry(c, e); /* too big to keep: served to its reader only */
		return;
	}
	cache_buf_ref(b);
	e->buf = b;
	c->bytes += charge(b);
	lru_push(c, e);
	while (c->bytes > c->budget && c->lru_tail != e) {
		remove_entry(c, c->lru_tail);
		c->evictions++;
	}
}

void cache_publish(struct cache *c, const struct cache_key *k, struct cache_buf *b)
{
	pthread_mutex_lock(&c->lock);
	struct entry *e = find(c, k, NULL);
	bool fresh = e && !e->buf;
	if (fresh)
		publish_locked(c, e, b);
	pthread_cond_broadcast(&c->filled);
	if (fresh && c->disk)
		dqueue(c, k, b); /* may wait for room: the entry is served meanwhile */
	pthread_mutex_unlock(&c->lock);
}

void cache_abandon(struct cache *c, const struct cache_key *k)
{
	pthread_mutex_lock(&c->lock);
	struct entry *e = find(c, k, NULL);
	if (e && !e->buf)
		remove_entry(c, e);
	pthread_cond_broadcast(&c->filled);
	pthread_mutex_unlock(&c->lock);
}

void cache_drop_stream(struct cache *c, uint64_t stream)
{
	pthread_mutex_lock(&c->lock);
	for (struct entry *e = c->lru_head, *next; e; e = next) {
		next = e->next;
		if (e->key.stream == stream)
			remove_entry(c, e);
	}
	if (c->disk) { /* stream ids are never reused, but keep the map small */
		for (struct dslot *s = c->disk->qhead; s; s = s->qnext)
			if (s->key.stream == stream)
				dunmap(c->disk, s);
		for (struct wjob **p = &c->disk->whead, *j; (j = *p);) {
			if (j->key.stream != stream) {
				c->disk->wtail = j;
				p = &j->next;
				continue;
			}
			*p = j->next;
			c->disk->wbytes -= j->buf->len;
			cache_buf_put(j->buf);
			free(j);
		}
		if (!c->disk->whead)
			c->disk->wtail = NULL;
		pthread_cond_broadcast(&c->disk->wspace);
	}
	pthread_mutex_unlock(&c->lock);
}

void cache_get_stats(struct cache *c, struct cache_stats *out)
{
	pthread_mutex_lock(&c->lock);
	out->hits = c->hits;
	out->misses = c->misses;
	out->evictions = c->evictions;
	out->bytes = c->bytes;
	out->entries = c->nentries;
	out->budget = c->budget;
	out->disk_hits = c->disk ? c->disk->hits : 0;
	out->disk_writes = c->disk ? c->disk->writes : 0;
	out->disk_bytes = c->disk ? c->disk->used : 0;
	out->disk_size = c->disk ? c->disk->size : 0;
	pthread_mutex_unlock(&c->lock);
}

uint64_t cache_room(struct cache *c)
{
	pthread_mutex_lock(&c->lock);
	uint64_t room = c->disk ? c->disk->size : c->budget;
	pthread_mutex_unlock(&c->lock);
	return room;
}

void cache_free(struct cache *c)
{
	if (!c)
		return;
	if (c->disk) { /* the writer first: it uses the lock and the buffers */
		pthread_mutex_lock(&c->lock);
		c->disk->stop = true;
		for (struct wjob *j = c->disk->whead, *next; j; j = next) { /* not written */
			next = j->next;
			c->disk->wbytes -= j->buf->len;
			cache_buf_put(j->buf);
			free(j);
		}
		c->disk->whead = c->disk->wtail = NULL;
		pthread_cond_broadcast(&c->disk->wwork);
		pthread_cond_broadcast(&c->disk->wspace);
		pthread_mutex_unlock(&c->lock);
		if (c->disk->started)
			pthread_join(c->disk->writer, NULL);
		pthread_cond_destroy(&c->disk->wwork);
		pthread_cond_destroy(&c->disk->wspace);
	}
	for (size_t i = 0; i < c->nbuckets; i++) {
		struct entry *e = c->table[i], *next;
		for (; e; e = next) {
			next = e->hnext;
			cache_buf_put(e->buf);
			free(e);
		}
	}
	free(c->table);
	if (c->disk) {
		while (c->disk->qhead)
			dpop(c->disk);
		close(c->disk->fd);
		free(c->disk->table);
		free(c->disk);
	}
	pthread_mutex_destroy(&c->lock);
	pthread_cond_destroy(&c->filled);
	free(c);
}
