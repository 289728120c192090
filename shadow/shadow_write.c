/* Writing a shadow (see shadow.h).
 *
 * Cutting frames.  The writer sees a stream's bytes in order and where its chunks start.  A
 * frame always ends where a chunk ends.  Inside a chunk it may end at a segment boundary: the
 * first one at or after the frame's target size.  But whether k * S (S the segment size) is a
 * boundary depends on where the chunk ends -- a tail shorter than S / 2 joins the segment
 * before it (segment.h) -- so the cut is only a candidate until the chunk has reached k * S +
 * S / 2 (then seg_count of the chunk is at least k + 1, whatever its length), and is dropped
 * if the chunk ends first: the frame then runs on to the chunk's end.
 *
 * Compressing.  Frames go into a ring of slots, compressed by `threads` pool jobs (niced:
 * the decoder comes first) in ring order, and written by the caller's thread in order as they
 * are done.  When the caller needs a slot and the ring is full, the oldest frame is stored
 * (raw blocks) if no job has taken it yet, else the caller waits for that one job: so the
 * pass is never held up by more than one frame's compression, and where the decoder is fast
 * (gzip) part of the shadow is stored rather than compressed.
 *
 * No fsync: a shadow cut short by a crash is refused when it is opened (its seek table) or,
 * if the table happens to be whole, by the frames' checksums and the segment CRCs when read.
 *
 * Locks: w->lock guards the slots' states and w->stop; a leaf (nothing else is taken under
 * it; the jobs compress and the caller writes without it).
 */
#include "shadow/shadow.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

#include "codecs/zstd/zstd_seekable.h"
#include "common/byteio.h"
#include "common/log.h"
#include "common/pool.h"

#define SW_NICE 5
#define SW_MAX_JOBS 16

enum { SLOT_FREE, SLOT_QUEUED, SLOT_RUNNING, SLOT_DONE };

struct slot {
	uint8_t *in, *out;
	size_t len, out_len;
	int state; /* lock */
	int err;
};

struct map_ent {
	uint64_t id, usize;
	uint32_t first, count, shift;
};

struct shadow_writer {
	char *path, *tmp, *name, *fp;
	uint64_t id;
	int fd;
	int level;
	size_t target;
	uint64_t max_bytes;
	bool failed, finished;

	struct zsk_table_w table;
	uint64_t pos;	  /* bytes written to the file */
	uint64_t emitted; /* frames handed to the ring */
	struct shadow_wstats st;

	struct map_ent *map;
	size_t nmap, map_cap;

	/* the stream being written */
	bool in_stream;
	uint64_t sid, s_bytes, s_first;
	unsigned shift;
	uint64_t seg;	      /* 1 << shift */
	uint64_t chunk_pos;   /* bytes of the current chunk so far */
	uint8_t *cur;	      /* the frame being filled */
	size_t cur_len, cur_cap;
	size_t cand;	      /* candidate cut in cur, or 0: none */
	uint64_t cand_chunk;  /* its chunk position */

	/* the ring */
	struct slot *slots;
	size_t nslots, head, tail, used; /* lock; tail: the next slot to fill */
	pthread_mutex_t lock;
	pthread_cond_t cond;
	bool stop;
	struct pool_job *jobs[SW_MAX_JOBS];
	unsigned njobs;
};

char *shadow_path(const char *index_path)
{
	size_t n = strlen(index_path);
	const char *sfx = ".sqlite";
	size_t k = strlen(sfx);
	char *p = malloc(n + 16);

	if (!p)
		return NULL;
	if (n > k && strcmp(index_path + n - k, sfx) == 0)
		n -= k;
	memcpy(p, index_path, n);
	strcpy(p + n, ".shadow.zst");
	return p;
}

/* The first error: logged once, and everything after is ignored. */
static void fail(struct shadow_writer *w, int err, const char *what)
{
	if (w->failed)
		return;
	w->failed = true;
	tfs_log(TFS_LOG_WARNING, "%s: no shadow is kept (%s: %s); reads decode the archive", w->name,
		what, strerror(-err));
}

static void *job_main(void *arg)
{
	struct shadow_writer *w = arg;
	struct zsk_cctx *cc = zsk_cctx_new();

	pthread_mutex_lock(&w->lock);
	for (;;) {
		struct slot *s = NULL;
		while (!w->stop) { /* the oldest queued frame */
			for (size_t i = 0, k = w->head; i < w->used; i++, k = (k + 1) % w->nslots) {
				if (w->slots[k].state == SLOT_QUEUED) {
					s = &w->slots[k];
					break;
				}
			}
			if (s)
				break;
			pthread_cond_wait(&w->cond, &w->lock);
		}
		if (!s)
			break;
		s->state = SLOT_RUNNING;
		pthread_mutex_unlock(&w->lock);
		int err = cc ? zsk_frame(cc, w->level, s->in, s->len, s->out, zsk_bound(s->len),
					 &s->out_len)
			     : zsk_frame(NULL, ZSK_STORE, s->in, s->len, s->out, zsk_bound(s->len),
					 &s->out_len);
		pthread_mutex_lock(&w->lock);
		s->err = err;
		s->state = SLOT_DONE;
		pthread_cond_broadcast(&w->cond);
	}
	pthread_mutex_unlock(&w->lock);
	zsk_cctx_free(cc);
	return NULL;
}

static int write_all(struct shadow_writer *w, const uint8_t *p, size_t len)
{
	if (w->max_bytes && w->pos + len > w->max_bytes)
		return -EFBIG;
	while (len) {
		ssize_t n = pwrite(w->fd, p, len, (off_t)w->pos);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return n < 0 ? -errno : -EIO;
		p += n;
		len -= (size_t)n;
		w->pos += (uint64_t)n;
		w->st.written += (uint64_t)n;
	}
	return 0;
}

/* Writes the done slots at the head of the ring, in order (lock held; released while
 * writing). */
static void flush_done(struct shadow_writer *w)
{
	while (w->used && w->slots[w->head].state == SLOT_DONE) {
		struct slot *s = &w->slots[w->head];
		pthread_mutex_unlock(&w->lock);
		int err = s->err;
		if (!err && !w->failed)
			err = write_all(w, s->out, s->out_len);
		if (!err && !w->failed)
			err = zsk_table_add(&w->table, s->out_len, s->len);
		if (err)
			fail(w, err, err == -EFBIG ? "it would pass its size limit" : "writing it");
		pthread_mutex_lock(&w->lock);
		s->state = SLOT_FREE;
		w->head = (w->head + 1) % w->nslots;
		w->used--;
	}
}

/* Hands cur[0..len) to the ring as the next frame. */
static void emit(struct shadow_writer *w, size_t len)
{
	struct slot *s;

	if (w->failed)
		return;
	pthread_mutex_lock(&w->lock);
	flush_done(w);
	while (w->used == w->nslots) {
		struct slot *h = &w->slots[w->head];
		if (h->state == SLOT_QUEUED) { /* no job took it: stored, now */
			h->err = zsk_frame(NULL, ZSK_STORE, h->in, h->len, h->out, zsk_bound(h->len),
					   &h->out_len);
			h->state = SLOT_DONE;
			w->st.stored_frames++;
		} else if (h->state == SLOT_RUNNING) {
			pthread_cond_wait(&w->cond, &w->lock);
		}
		flush_done(w);
	}
	s = &w->slots[w->tail];
	memcpy(s->in, w->cur, len);
	s->len = len;
	s->err = 0;
	s->state = w->njobs ? SLOT_QUEUED : SLOT_DONE;
	if (!w->njobs) {
		s->err = zsk_frame(NULL, ZSK_STORE, s->in, len, s->out, zsk_bound(len), &s->out_len);
		w->st.stored_frames++;
	}
	w->tail = (w->tail + 1) % w->nslots;
	w->used++;
	w->emitted++;
	w->st.frames++;
	pthread_cond_broadcast(&w->cond);
	pthread_mutex_unlock(&w->lock);
}

/* Ends the frame being filled at its end (a chunk's end). */
static void cut_all(struct shadow_writer *w)
{
	if (w->cur_len)
		emit(w, w->cur_len);
	w->cur_len = 0;
	w->cand = 0;
}

int shadow_writer_new(const char *path, const struct shadow_wopts *o, struct shadow_writer **out)
{
	struct shadow_writer *w = calloc(1, sizeof(*w));
	int err = -ENOMEM;

	*out = NULL;
	if (!w)
		return -ENOMEM;
	w->fd = -1;
	pthread_mutex_init(&w->lock, NULL);
	pthread_cond_init(&w->cond, NULL);
	w->level = o->level ? o->level : SHADOW_LEVEL;
	w->target = o->frame ? o->frame : SHADOW_FRAME;
	w->max_bytes = o->max_bytes;
	w->id = o->id;
	w->path = strdup(path);
	w->name = strdup(o->name ? o->name : path);
	w->fp = strdup(o->fingerprint ? o->fingerprint : "");
	w->tmp = malloc(strlen(path) + 32);
	if (!w->path || !w->name || !w->fp || !w->tmp)
		goto fail;
	w->map_cap = 0;
	snprintf(w->tmp, strlen(path) + 32, "%s.tmp.%ld", path, (long)getpid());
	w->fd = open(w->tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (w->fd < 0) {
		err = -errno;
		tfs_log(TFS_LOG_WARNING, "%s: no shadow is kept (cannot create %s: %s)", w->name,
			w->tmp, strerror(errno));
		goto fail;
	}
	unsigned threads = o->threads;
	if (threads > SW_MAX_JOBS)
		threads = SW_MAX_JOBS;
	w->nslots = 2 * (size_t)threads + 2;
	w->slots = calloc(w->nslots, sizeof(*w->slots));
	if (!w->slots)
		goto fail;
	/* a frame holds at most the target, a segment to reach a boundary and half a segment
	 * after it: segments are at most 1 MiB (segment.h) */
	w->cur_cap = w->target + ((size_t)2 << 20);
	w->cur = malloc(w->cur_cap);
	if (!w->cur)
		goto fail;
	for (size_t i = 0; i < w->nslots; i++) {
		w->slots[i].in = malloc(w->cur_cap);
		w->slots[i].out = malloc(zsk_bound(w->cur_cap));
		if (!w->slots[i].in || !w->slots[i].out)
			goto fail;
	}
	for (unsigned i = 0; i < threads; i++) {
		if (pool_start(job_main, w, "tarseek-shadow", SW_NICE, &w->jobs[w->njobs]) < 0)
			break; /* fewer jobs; with none, every frame is stored */
		w->njobs++;
	}
	*out = w;
	return 0;
fail:
	shadow_writer_free(w);
	return err;
}

void shadow_stream_begin(struct shadow_writer *w, uint64_t stream_id, unsigned seg_shift)
{
	if (w->failed)
		return;
	w->in_stream = true;
	w->sid = stream_id;
	w->shift = seg_shift ? seg_shift : 20;
	w->seg = (uint64_t)1 << w->shift;
	w->s_bytes = 0;
	w->s_first = w->emitted;
	w->chunk_pos = 0;
	w->cur_len = 0;
	w->cand = 0;
}

void shadow_chunk(struct shadow_writer *w)
{
	if (w->failed || !w->in_stream)
		return;
	cut_all(w);
	w->chunk_pos = 0;
}

void shadow_write(struct shadow_writer *w, const void *p, size_t len)
{
	const uint8_t *b = p;

	if (w->failed || !w->in_stream)
		return;
	w->st.decoded += len;
	w->s_bytes += len;
	while (len) {
		/* the next point where something may happen: a segment boundary, or the point
		 * that confirms the candidate */
		uint64_t stop = w->cand ? w->cand_chunk + w->seg / 2
					: (w->chunk_pos / w->seg + 1) * w->seg;
		size_t n = len;
		if (stop - w->chunk_pos < n)
			n = (size_t)(stop - w->chunk_pos);
		if (w->cur_len + n > w->cur_cap) { /* cannot happen: the cap covers the rule */
			fail(w, -EIO, "a frame outgrew its buffer (internal error)");
			return;
		}
		memcpy(w->cur + w->cur_len, b, n);
		w->cur_len += n;
		w->chunk_pos += n;
		b += n;
		len -= n;
		if (w->chunk_pos != stop)
			continue;
		if (w->cand) { /* the candidate is a real boundary now: cut there */
			size_t keep = w->cur_len - w->cand;
			emit(w, w->cand);
			memmove(w->cur, w->cur + w->cand, keep);
			w->cur_len = keep;
			w->cand = 0;
		} else if (w->cur_len >= w->target) {
			w->cand = w->cur_len;
			w->cand_chunk = w->chunk_pos;
		}
	}
}

void shadow_stream_end(struct shadow_writer *w, uint64_t usize)
{
	if (w->failed || !w->in_stream)
		return;
	cut_all(w);
	w->in_stream = false;
	if (usize != w->s_bytes) {
		fail(w, -EIO, "a stream's size disagrees with its bytes (internal error)");
		return;
	}
	if (w->nmap == w->map_cap) {
		size_t cap = w->map_cap ? w->map_cap * 2 : 16;
		struct map_ent *m = realloc(w->map, cap * sizeof(*m));
		if (!m) {
			fail(w, -ENOMEM, "its map");
			return;
		}
		w->map = m;
		w->map_cap = cap;
	}
	if (w->emitted > UINT32_MAX) {
		fail(w, -EFBIG, "too many frames");
		return;
	}
	w->map[w->nmap++] = (struct map_ent){.id = w->sid,
					     .usize = usize,
					     .first = (uint32_t)w->s_first,
					     .count = (uint32_t)(w->emitted - w->s_first),
					     .shift = w->shift};
	w->st.streams++;
}

void shadow_stream_drop(struct shadow_writer *w)
{
	if (w->failed || !w->in_stream)
		return;
	w->cur_len = 0; /* frames already emitted stay in the file, unlisted */
	w->cand = 0;
	w->in_stream = false;
}

bool shadow_writer_ok(const struct shadow_writer *w)
{
	return w && !w->failed;
}

void shadow_writer_stats(const struct shadow_writer *w, struct shadow_wstats *out)
{
	*out = w->st;
}

/* The map's bytes (see shadow.h). */
static int map_bytes(struct shadow_writer *w, uint8_t **out, size_t *len)
{
	size_t fpl = strlen(w->fp), n = 8 + 4 + 4 + 8 + 4 + fpl + 4 + w->nmap * 32 + 4;
	uint8_t *p = malloc(n), *q;

	*out = NULL;
	if (!p)
		return -ENOMEM;
	memcpy(p, SHADOW_MAGIC, 8);
	put_le32(p + 8, SHADOW_VERSION);
	put_le32(p + 12, (uint32_t)n);
	put_le64(p + 16, w->id);
	put_le32(p + 24, (uint32_t)fpl);
	memcpy(p + 28, w->fp, fpl);
	q = p + 28 + fpl;
	put_le32(q, (uint32_t)w->nmap);
	q += 4;
	for (size_t i = 0; i < w->nmap; i++, q += 32) {
		put_le64(q, w->map[i].id);
		put_le64(q + 8, w->map[i].usize);
		put_le32(q + 16, w->map[i].first);
		put_le32(q + 20, w->map[i].count);
		put_le32(q + 24, w->map[i].shift);
		put_le32(q + 28, 0);
	}
	*out = p;
	*len = n;
	return 0;
}

static void stop_jobs(struct shadow_writer *w)
{
	pthread_mutex_lock(&w->lock);
	w->stop = true;
	pthread_cond_broadcast(&w->cond);
	pthread_mutex_unlock(&w->lock);
	for (unsigned i = 0; i < w->njobs; i++)
		pool_join(w->jobs[i]);
	w->njobs = 0;
}

int shadow_writer_finish(struct shadow_writer *w)
{
	uint8_t *map = NULL, *skip = NULL, *tab = NULL;
	size_t maplen = 0, skiplen = 0, tablen = 0;
	int err;

	if (w->in_stream)
		shadow_stream_drop(w);
	/* the frames still in the ring */
	pthread_mutex_lock(&w->lock);
	while (w->used) {
		flush_done(w);
		if (w->used)
			pthread_cond_wait(&w->cond, &w->lock);
	}
	pthread_mutex_unlock(&w->lock);
	stop_jobs(w);
	if (w->failed)
		goto out_fail;
	err = map_bytes(w, &map, &maplen);
	if (!err) {
		put_le32(map + maplen - 4, (uint32_t)crc32(0, map, (uInt)(maplen - 4)));
		err = zsk_skippable(SHADOW_MAP_NIBBLE, map, maplen, &skip, &skiplen);
	}
	if (!err)
		err = write_all(w, skip, skiplen);
	if (!err)
		err = zsk_table_add(&w->table, skiplen, 0);
	if (!err)
		err = zsk_table_bytes(&w->table, &tab, &tablen);
	if (!err)
		err = write_all(w, tab, tablen);
	free(map);
	free(skip);
	free(tab);
	if (err) {
		fail(w, err, "writing its map");
		goto out_fail;
	}
	if (close(w->fd) < 0) {
		w->fd = -1;
		fail(w, -errno, "closing it");
		goto out_fail;
	}
	w->fd = -1;
	if (rename(w->tmp, w->path) < 0) {
		fail(w, -errno, "renaming it into place");
		goto out_fail;
	}
	w->finished = true;
	return 0;
out_fail:
	return -EIO;
}

void shadow_writer_free(struct shadow_writer *w)
{
	if (!w)
		return;
	stop_jobs(w);
	if (w->fd >= 0)
		close(w->fd);
	if (!w->finished && w->tmp)
		unlink(w->tmp);
	for (size_t i = 0; w->slots && i < w->nslots; i++) {
		free(w->slots[i].in);
		free(w->slots[i].out);
	}
	free(w->slots);
	zsk_table_w_free(&w->table);
	pthread_cond_destroy(&w->cond);
	pthread_mutex_destroy(&w->lock);
	free(w->cur);
	free(w->map);
	free(w->path);
	free(w->tmp);
	free(w->name);
	free(w->fp);
	free(w);
}
