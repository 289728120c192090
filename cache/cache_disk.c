/* The chunk cache's disk tier (see cache.h and cache_int.h).
 *
 * A ring log in an unlinked file: writes go at the head, in order; a FIFO of the slots in
 * write order tells which ones the next write overwrites (at a wrap, the slots left past the
 * old head go too).  An eviction from RAM queues the buffer for a writer thread (at most
 * WQ_MAX bytes queued; past that the evicting publisher waits), which claims the slot under
 * the lock, writes and checksums outside it, then maps the slot: the decoders never wait for
 * the page cache, and no reader waits behind a write.  A miss looks in the queue too.  Reads happen outside the lock
 * and check the slot's CRC, so a read racing with a write that reused its bytes is a miss,
 * never wrong data.
 *
 * The writer is a pool job (common/pool.h) that the disk tier owns: started by the first write
 * queued, joined by cdisk_free, or by cdisk_park once it has written what is queued (before a
 * fork: the next write starts it again, in the child).
 */
#include "cache/cache_int.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

#include "common/crc32.h"
#include "common/hash.h"
#include "common/htable.h"
#include "common/list.h"
#include "common/log.h"
#include "common/pool.h"

struct dslot {
	struct htable_node hnode; /* in the map while not dead (first, then the key: a lookup) */
	struct cache_key key;
	uint64_t off;
	uint32_t len, crc;
	bool dead; /* out of the map (failed its CRC, or superseded); still in the FIFO */
	struct list_node fifo; /* in cdisk.fifo, oldest first */
};

struct wjob { /* a buffer waiting for the writer */
	struct cache_key key;
	struct cache_buf *buf; /* referenced */
	struct list_node node; /* in cdisk.queue */
};

#define WQ_MAX (16u << 20) /* bytes queued for the writer */

struct cdisk {
	int fd;
	uint64_t size, head, used;
	struct htable map;     /* the slots that hold a segment, by key */
	struct list_node fifo; /* every slot, in write order */
	uint64_t hits, writes;
	/* the writer thread and its queue */
	struct pool_job *writer;      /* NULL: not running (started by the next write) */
	pthread_cond_t wwork, wspace; /* queued work, stop or park; room in the queue */
	struct list_node queue;	      /* struct wjob, oldest first */
	struct wjob *inflight; /* the job the writer is writing (out of the queue) */
	bool inflight_dropped; /* its stream was dropped meanwhile: neither served nor mapped */
	uint64_t wbytes;
	pthread_mutex_t *lock; /* the cache's */
	bool parking; /* cdisk_park: the writer ends once the queue is empty */
	bool stop;    /* cache_free, or no writer could be made: nothing more is queued */
};

static uint64_t dhash(const struct cache_key *k)
{
	return hash_pair(k->stream, k->seg);
}

static bool same_key(const struct cache_key *a, const struct cache_key *b)
{
	return a->stream == b->stream && a->seg == b->seg;
}

static struct dslot *dfind(struct cdisk *d, const struct cache_key *k)
{
	for (struct htable_node *n = htable_first(&d->map, dhash(k)); n; n = htable_next(n)) {
		struct dslot *s = htable_entry(n, struct dslot, hnode);
		if (same_key(&s->key, k))
			return s;
	}
	return NULL;
}

/* Takes a slot out of the map (it stays in the FIFO until its bytes are reused). */
static void dunmap(struct cdisk *d, struct dslot *s)
{
	if (s->dead)
		return;
	htable_del(&d->map, &s->hnode);
	s->dead = true;
}

/* The oldest slot, or NULL. */
static struct dslot *doldest(struct cdisk *d)
{
	struct list_node *n = list_first(&d->fifo);

	return n ? list_entry(n, struct dslot, fifo) : NULL;
}

/* Frees the oldest slot. */
static void dpop(struct cdisk *d)
{
	struct dslot *s = doldest(d);

	list_del(&s->fifo);
	dunmap(d, s);
	d->used -= s->len;
	free(s);
}

/* Claims the ring bytes for a copy of b (lock held): the oldest slots it overlaps go.  The
 * slot joins the FIFO now, out of the map (dead) until its bytes are written. */
static struct dslot *dclaim(struct cdisk *d, const struct cache_key *k, const struct cache_buf *b)
{
	struct dslot *s;

	if (b->len == 0 || b->len > d->size / 4)
		return NULL;
	if (d->head + b->len > d->size) { /* wrap: what is left past the head goes */
		while ((s = doldest(d)) && s->off >= d->head)
			dpop(d);
		d->head = 0;
	}
	while ((s = doldest(d)) && s->off >= d->head && s->off < d->head + b->len)
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
	list_add_tail(&d->fifo, &s->fifo);
	return s;
}

/* Maps a written slot (lock held), replacing an older copy of its key. */
static void dcommit(struct cdisk *d, struct dslot *s)
{
	struct dslot *old = dfind(d, &s->key);

	if (old)
		dunmap(d, old);
	if (htable_add(&d->map, &s->hnode, dhash(&s->key)) < 0)
		return; /* cannot happen: the map has its buckets from cdisk_new */
	s->dead = false;
	d->writes++;
}

/* The writer: takes queued buffers in order and writes them into the ring.  Only this thread
 * claims slots and pops the FIFO, so a slot being written is never reused meanwhile. */
static void *disk_writer(void *arg)
{
	struct cdisk *d = arg;

	pthread_mutex_lock(d->lock);
	for (;;) {
		while (list_empty(&d->queue) && !d->stop && !d->parking)
			pthread_cond_wait(&d->wwork, d->lock);
		if (list_empty(&d->queue))
			break; /* stop or park, and nothing left */
		struct wjob *j = list_entry(list_first(&d->queue), struct wjob, node);
		list_del(&j->node);
		d->inflight = j;
		d->inflight_dropped = false;
		struct dslot *slot = dclaim(d, &j->key, j->buf);
		uint64_t off = slot ? slot->off : 0;
		pthread_mutex_unlock(d->lock);
		bool ok = slot && pwrite(d->fd, j->buf->data, j->buf->len, (off_t)off) ==
					  (ssize_t)j->buf->len;
		uint32_t crc = ok ? tfs_crc32(0, j->buf->data, j->buf->len) : 0;
		pthread_mutex_lock(d->lock);
		if (ok && !d->inflight_dropped) { /* else (disk full or failing): the slot stays dead */
			slot->crc = crc;
			dcommit(d, slot);
		}
		d->wbytes -= j->buf->len;
		d->inflight = NULL;
		pthread_cond_broadcast(&d->wspace);
		cache_buf_put(j->buf);
		free(j);
	}
	pthread_mutex_unlock(d->lock);
	return NULL;
}

void cdisk_queue(struct cdisk *d, const struct cache_key *k, struct cache_buf *b)
{
	struct wjob *j;

	if (b->len == 0 || b->len > d->size / 4 || d->stop)
		return;
	if (!d->writer) {
		int err = pool_start(disk_writer, d, "tarseek-disk", 0, &d->writer);
		if (err) {
			tfs_log(TFS_LOG_WARNING, "disk cache: no writer thread: %s; going on without",
				strerror(-err));
			d->stop = true;
			return;
		}
	}
	while (d->wbytes && d->wbytes + b->len > WQ_MAX && !d->stop)
		pthread_cond_wait(&d->wspace, d->lock);
	j = malloc(sizeof(*j));
	if (!j)
		return;
	cache_buf_ref(b);
	j->key = *k;
	j->buf = b;
	list_add_tail(&d->queue, &j->node);
	d->wbytes += b->len;
	pthread_cond_signal(&d->wwork);
}

/* The write in progress or the queued write of k, or NULL (lock held). */
static struct wjob *dqueued(struct cdisk *d, const struct cache_key *k)
{
	struct wjob *j = d->inflight_dropped ? NULL : d->inflight;
	struct list_node *n;

	if (j && same_key(&j->key, k))
		return j;
	for (n = d->queue.next; n != &d->queue; n = n->next) {
		j = list_entry(n, struct wjob, node);
		if (same_key(&j->key, k))
			return j;
	}
	return NULL;
}

bool cdisk_has(struct cdisk *d, const struct cache_key *k)
{
	return dqueued(d, k) || dfind(d, k);
}

struct cache_buf *cdisk_get(struct cdisk *d, const struct cache_key *k)
{
	struct wjob *j = dqueued(d, k);
	struct cache_buf *b;
	struct dslot *ds;

	if (j) { /* still on its way to the disk */
		cache_buf_ref(j->buf);
		d->hits++;
		return j->buf;
	}
	ds = dfind(d, k);
	if (!ds)
		return NULL;
	uint64_t off = ds->off;
	uint32_t len = ds->len, crc = ds->crc;
	pthread_mutex_unlock(d->lock);
	b = cache_buf_new(len);
	bool ok = b && pread(d->fd, b->data, len, (off_t)off) == (ssize_t)len &&
		  tfs_crc32(0, b->data, len) == crc;
	pthread_mutex_lock(d->lock);
	if (ok) {
		d->hits++;
		return b;
	}
	cache_buf_put(b);
	ds = dfind(d, k); /* reused meanwhile, or bad: forget it */
	if (ds)
		dunmap(d, ds);
	return NULL;
}

/* Drops a queued write (lock held). */
static void wjob_drop(struct cdisk *d, struct wjob *j)
{
	list_del(&j->node);
	d->wbytes -= j->buf->len;
	cache_buf_put(j->buf);
	free(j);
}

void cdisk_drop_stream(struct cdisk *d, uint64_t stream)
{
	struct list_node *n, *tmp;

	/* stream ids are never reused, but keep the map small */
	if (d->inflight && d->inflight->key.stream == stream)
		d->inflight_dropped = true;
	list_for_each_safe(n, tmp, &d->fifo) {
		struct dslot *s = list_entry(n, struct dslot, fifo);
		if (s->key.stream == stream)
			dunmap(d, s);
	}
	list_for_each_safe(n, tmp, &d->queue) {
		struct wjob *j = list_entry(n, struct wjob, node);
		if (j->key.stream == stream)
			wjob_drop(d, j);
	}
	pthread_cond_broadcast(&d->wspace);
}

void cdisk_stats(const struct cdisk *d, struct cache_stats *out)
{
	out->disk_hits = d->hits;
	out->disk_writes = d->writes;
	out->disk_bytes = d->used;
	out->disk_size = d->size;
}

uint64_t cdisk_size(const struct cdisk *d)
{
	return d->size;
}

int cdisk_new(const char *dir, uint64_t size, pthread_mutex_t *lock, struct cdisk **out)
{
	struct cdisk *d;
	int fd;

	*out = NULL;
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
	if (!d)
		goto nomem;
	if (htable_init(&d->map, 1024) < 0)
		goto nomem_d;
	list_init(&d->fifo);
	list_init(&d->queue);
	d->fd = fd;
	d->size = size;
	d->lock = lock;
	pthread_cond_init(&d->wwork, NULL);
	pthread_cond_init(&d->wspace, NULL);
	*out = d;
	return 0;
nomem_d:
	free(d);
nomem:
	close(fd);
	return -ENOMEM;
}

void cdisk_park(struct cdisk *d)
{
	struct pool_job *j;

	pthread_mutex_lock(d->lock);
	j = d->parking ? NULL : d->writer;
	if (j) {
		d->parking = true;
		pthread_cond_broadcast(&d->wwork);
	}
	pthread_mutex_unlock(d->lock);
	if (!j)
		return;
	pool_join(j); /* it writes what is queued first */
	pthread_mutex_lock(d->lock);
	d->writer = NULL;
	d->parking = false;
	pthread_mutex_unlock(d->lock);
}

void cdisk_free(struct cdisk *d)
{
	if (!d)
		return;
	pthread_mutex_lock(d->lock); /* the writer first: it uses the lock and the buffers */
	d->stop = true;
	while (!list_empty(&d->queue)) /* not written */
		wjob_drop(d, list_entry(list_first(&d->queue), struct wjob, node));
	pthread_cond_broadcast(&d->wwork);
	pthread_cond_broadcast(&d->wspace);
	pthread_mutex_unlock(d->lock);
	pool_join(d->writer);
	pthread_cond_destroy(&d->wwork);
	pthread_cond_destroy(&d->wspace);
	while (doldest(d))
		dpop(d);
	close(d->fd);
	htable_fini(&d->map);
	free(d);
}
