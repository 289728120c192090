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
#include "common/log.h"

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

struct cdisk {
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
	bool inflight_dropped; /* its stream was dropped meanwhile: neither served nor mapped */
	uint64_t wbytes;
	pthread_mutex_t *lock; /* the cache's */
	bool started; /* the writer exists (made on the first write, so after a fork) */
	bool stop;    /* cache_free, or no writer could be made: nothing more is queued */
};

static size_t dbucket(const struct cdisk *d, const struct cache_key *k)
{
	return (size_t)(hash_pair(k->stream, k->seg) & (d->nbuckets - 1));
}

static struct dslot *dfind(struct cdisk *d, const struct cache_key *k)
{
	for (struct dslot *s = d->table[dbucket(d, k)]; s; s = s->hnext)
		if (s->key.stream == k->stream && s->key.seg == k->seg)
			return s;
	return NULL;
}

/* Takes a slot out of the map (it stays in the FIFO until its bytes are reused). */
static void dunmap(struct cdisk *d, struct dslot *s)
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
static void dpop(struct cdisk *d)
{
	struct dslot *s = d->qhead;

	d->qhead = s->qnext;
	if (!d->qhead)
		d->qtail = NULL;
	dunmap(d, s);
	d->used -= s->len;
	free(s);
}

static void dmap_grow(struct cdisk *d)
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
static struct dslot *dclaim(struct cdisk *d, const struct cache_key *k, const struct cache_buf *b)
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
static void dcommit(struct cdisk *d, struct dslot *s)
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
	struct cdisk *d = arg;

	pthread_mutex_lock(d->lock);
	for (;;) {
		while (!d->whead && !d->stop)
			pthread_cond_wait(&d->wwork, d->lock);
		if (!d->whead)
			break; /* stop, and nothing left */
		struct wjob *j = d->whead;
		d->whead = j->next;
		if (!d->whead)
			d->wtail = NULL;
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
	if (!d->started) {
		int err = pthread_create(&d->writer, NULL, disk_writer, d);
		if (err) {
			tfs_log(TFS_LOG_WARNING, "disk cache: no writer thread: %s; going on without",
				strerror(err));
			d->stop = true;
			return;
		}
		d->started = true;
	}
	while (d->wbytes && d->wbytes + b->len > WQ_MAX && !d->stop)
		pthread_cond_wait(&d->wspace, d->lock);
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

/* The write in progress or the queued write of k, or NULL (lock held). */
static struct wjob *dqueued(struct cdisk *d, const struct cache_key *k)
{
	struct wjob *j = d->inflight_dropped ? NULL : d->inflight;

	if (!j || j->key.stream != k->stream || j->key.seg != k->seg)
		for (j = d->whead; j; j = j->next)
			if (j->key.stream == k->stream && j->key.seg == k->seg)
				break;
	return j;
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

void cdisk_drop_stream(struct cdisk *d, uint64_t stream)
{
	/* stream ids are never reused, but keep the map small */
	if (d->inflight && d->inflight->key.stream == stream)
		d->inflight_dropped = true;
	for (struct dslot *s = d->qhead; s; s = s->qnext)
		if (s->key.stream == stream)
			dunmap(d, s);
	for (struct wjob **p = &d->whead, *j; (j = *p);) {
		if (j->key.stream != stream) {
			d->wtail = j;
			p = &j->next;
			continue;
		}
		*p = j->next;
		d->wbytes -= j->buf->len;
		cache_buf_put(j->buf);
		free(j);
	}
	if (!d->whead)
		d->wtail = NULL;
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
	d->lock = lock;
	pthread_cond_init(&d->wwork, NULL);
	pthread_cond_init(&d->wspace, NULL);
	*out = d;
	return 0;
}

void cdisk_free(struct cdisk *d)
{
	if (!d)
		return;
	pthread_mutex_lock(d->lock); /* the writer first: it uses the lock and the buffers */
	d->stop = true;
	for (struct wjob *j = d->whead, *next; j; j = next) { /* not written */
		next = j->next;
		d->wbytes -= j->buf->len;
		cache_buf_put(j->buf);
		free(j);
	}
	d->whead = d->wtail = NULL;
	pthread_cond_broadcast(&d->wwork);
	pthread_cond_broadcast(&d->wspace);
	pthread_mutex_unlock(d->lock);
	if (d->started)
		pthread_join(d->writer, NULL);
	pthread_cond_destroy(&d->wwork);
	pthread_cond_destroy(&d->wspace);
	while (d->qhead)
		dpop(d);
	close(d->fd);
	free(d->table);
	free(d);
}
