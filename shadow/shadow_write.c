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
 * Streams decoded at once (a container's, one per thread) each have a handle that cuts their
 * frames; a frame is handed to the ring under w->emit_lock, which serialises the emitters and
 * the file's writes, so each stream's frames are numbered in order and the map records them
 * as runs of consecutive frames.
 *
 * Locks: emit_lock (one emitter at a time: the ring's tail, the file, the seek table, the
 * map) -> lock (the slots' states and stop; a leaf: the jobs compress and the emitter writes
 * without it).
 */
#include "shadow/shadow.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

#include "codecs/zstd/zstd_seekable.h"
#include "common/byteio.h"
#include "common/log.h"
#include "common/pool.h"

#define SW_NICE 0 /* as the decoder: a full ring stores frames, so the pass never waits long */
#define SW_MAX_JOBS 16
/* frames waiting for a job at most: about 32 MiB of them, so that a fast decoder's bursts are
 * compressed as the jobs catch up rather than stored */
#define SW_SLOTS 256

enum { SLOT_FREE, SLOT_QUEUED, SLOT_RUNNING, SLOT_DONE };

struct slot {
	uint8_t *in, *out; /* made at the first frame the slot holds, grown for a larger one */
	size_t cap;	   /* in's size (out's: zsk_bound(cap)) */
	size_t len, out_len;
	int state; /* lock */
	int err;
};

struct run {
	uint32_t first, count;
};

struct map_ent {
	uint64_t id, usize;
	uint32_t shift;
	struct run *runs;
	size_t nruns;
};

struct shadow_stream {
	struct shadow_writer *w;
	uint64_t id, bytes;
	unsigned shift;
	uint64_t seg;	      /* 1 << shift */
	uint64_t chunk_pos;   /* bytes of the current chunk so far */
	uint8_t *cur;	      /* the frame being filled */
	size_t cur_len;
	size_t cand;	      /* candidate cut in cur, or 0: none */
	uint64_t cand_chunk;  /* its chunk position */
	struct run *runs;     /* its frames so far (emit_lock) */
	size_t nruns, runs_cap;
};

struct shadow_writer {
	char *path, *tmp, *name, *fp;
	uint64_t id;
	int fd;
	int level;
	size_t target, cur_cap;
	uint64_t max_bytes;
	_Atomic bool failed;
	bool finished;

	pthread_mutex_t emit_lock;
	/* emit_lock: */
	struct zsk_table_w table;
	uint64_t pos;	  /* bytes written to the file */
	uint64_t emitted; /* frames handed to the ring */
	struct shadow_wstats st;
	struct map_ent *map;
	size_t nmap, map_cap;

	/* the ring */
	struct slot *slots;
	size_t nslots, head, tail, used; /* lock; tail: the next slot to fill */
	pthread_mutex_t lock;
	pthread_cond_t cond;
	bool stop;
	struct pool_job *jobs[SW_MAX_JOBS];
	unsigned njobs;
};

/* The first error: logged once, and everything after is ignored. */
static void fail(struct shadow_writer *w, int err, const char *what)
{
	if (atomic_exchange(&w->failed, true))
		return;
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

/* Hands s->cur[0..len) to the ring as the next frame of its stream (emit_lock held). */
static void emit_locked(struct shadow_writer *w, struct shadow_stream *ss, size_t len)
{
	struct slot *s;

	if (w->failed)
		return;
	if (w->emitted >= UINT32_MAX) {
		fail(w, -EFBIG, "too many frames");
		return;
	}
	if (ss->nruns && ss->runs[ss->nruns - 1].first + ss->runs[ss->nruns - 1].count == w->emitted) {
		ss->runs[ss->nruns - 1].count++;
	} else {
		if (ss->nruns == ss->runs_cap) {
			size_t cap = ss->runs_cap ? ss->runs_cap * 2 : 4;
			struct run *r = realloc(ss->runs, cap * sizeof(*r));
			if (!r) {
				fail(w, -ENOMEM, "its map");
				return;
			}
			ss->runs = r;
			ss->runs_cap = cap;
		}
		ss->runs[ss->nruns++] = (struct run){(uint32_t)w->emitted, 1};
	}
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
	if (s->cap < len) {
		size_t cap = len > w->target ? len : w->target;
		free(s->in);
		free(s->out);
		s->in = malloc(cap);
		s->out = malloc(zsk_bound(cap));
		s->cap = s->in && s->out ? cap : 0;
		if (!s->cap) {
			pthread_mutex_unlock(&w->lock);
			fail(w, -ENOMEM, "a frame's buffer");
			return;
		}
	}
	memcpy(s->in, ss->cur, len);
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

static void emit(struct shadow_stream *ss, size_t len)
{
	struct shadow_writer *w = ss->w;

	pthread_mutex_lock(&w->emit_lock);
	emit_locked(w, ss, len);
	pthread_mutex_unlock(&w->emit_lock);
}

/* Ends the frame being filled at its end (a chunk's end). */
static void cut_all(struct shadow_stream *s)
{
	if (s->cur_len)
		emit(s, s->cur_len);
	s->cur_len = 0;
	s->cand = 0;
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
	pthread_mutex_init(&w->emit_lock, NULL);
	pthread_cond_init(&w->cond, NULL);
	w->level = o->level ? o->level : SHADOW_LEVEL;
	w->target = o->frame ? o->frame : SHADOW_FRAME;
	w->max_bytes = o->max_bytes;
	w->id = o->id;
	w->path = strdup(path);
	w->name = strdup(o->name ? o->name : path);
	w->tmp = malloc(strlen(path) + 32);
	if (!w->path || !w->name || !w->tmp)
		goto fail;
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
	w->nslots = SW_SLOTS > 2 * (size_t)threads + 2 ? SW_SLOTS : 2 * (size_t)threads + 2;
	w->slots = calloc(w->nslots, sizeof(*w->slots));
	if (!w->slots)
		goto fail;
	/* a frame holds at most the target, a segment to reach a boundary and half a segment
	 * after it: segments are at most 1 MiB (segment.h) */
	w->cur_cap = w->target + ((size_t)2 << 20);
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

/* Room for one more map entry.  0 or -ENOMEM (emit_lock held). */
static int grow_map(struct shadow_writer *w)
{
	size_t n = w->map_cap ? w->map_cap * 2 : 16;
	struct map_ent *r = realloc(w->map, n * sizeof(*r));

	if (!r)
		return -ENOMEM;
	w->map = r;
	w->map_cap = n;
	return 0;
}

struct shadow_stream *shadow_stream_begin(struct shadow_writer *w, uint64_t stream_id,
					  unsigned seg_shift)
{
	struct shadow_stream *s;

	if (!w || w->failed)
		return NULL;
	s = calloc(1, sizeof(*s));
	if (s)
		s->cur = malloc(w->cur_cap);
	if (!s || !s->cur) {
		free(s);
		fail(w, -ENOMEM, "a stream's frame");
		return NULL;
	}
	s->w = w;
	s->id = stream_id;
	s->shift = seg_shift ? seg_shift : 20;
	s->seg = (uint64_t)1 << s->shift;
	return s;
}

void shadow_chunk(struct shadow_stream *s)
{
	if (!s || s->w->failed)
		return;
	cut_all(s);
	s->chunk_pos = 0;
}

void shadow_write(struct shadow_stream *s, const void *p, size_t len)
{
	const uint8_t *b = p;

	if (!s || s->w->failed)
		return;
	s->bytes += len;
	while (len) {
		/* the next point where something may happen: a segment boundary, or the point
		 * that confirms the candidate */
		uint64_t stop = s->cand ? s->cand_chunk + s->seg / 2
					: (s->chunk_pos / s->seg + 1) * s->seg;
		size_t n = len;
		if (stop - s->chunk_pos < n)
			n = (size_t)(stop - s->chunk_pos);
		if (s->cur_len + n > s->w->cur_cap) { /* cannot happen: the cap covers the rule */
			fail(s->w, -EIO, "a frame outgrew its buffer (internal error)");
			return;
		}
		memcpy(s->cur + s->cur_len, b, n);
		s->cur_len += n;
		s->chunk_pos += n;
		b += n;
		len -= n;
		if (s->chunk_pos != stop)
			continue;
		if (s->cand) { /* the candidate is a real boundary now: cut there */
			size_t keep = s->cur_len - s->cand;
			emit(s, s->cand);
			memmove(s->cur, s->cur + s->cand, keep);
			s->cur_len = keep;
			s->cand = 0;
		} else if (s->cur_len >= s->w->target) {
			s->cand = s->cur_len;
			s->cand_chunk = s->chunk_pos;
		}
	}
}

static void stream_free(struct shadow_stream *s)
{
	free(s->cur);
	free(s->runs);
	free(s);
}

void shadow_stream_end(struct shadow_stream *s, uint64_t usize)
{
	struct shadow_writer *w;

	if (!s)
		return;
	w = s->w;
	cut_all(s);
	pthread_mutex_lock(&w->emit_lock);
	if (w->failed) {
		/* nothing more */
	} else if (usize != s->bytes) {
		fail(w, -EIO, "a stream's size disagrees with its bytes (internal error)");
	} else if (w->nmap == w->map_cap && grow_map(w) < 0) {
		fail(w, -ENOMEM, "its map");
	} else {
		w->map[w->nmap++] = (struct map_ent){.id = s->id,
						     .usize = usize,
						     .shift = s->shift,
						     .runs = s->runs,
						     .nruns = s->nruns};
		s->runs = NULL; /* the map's now */
		w->st.streams++;
		w->st.decoded += usize;
	}
	pthread_mutex_unlock(&w->emit_lock);
	stream_free(s);
}

void shadow_stream_drop(struct shadow_stream *s)
{
	if (s)
		stream_free(s); /* frames already emitted stay in the file, unlisted */
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
	size_t fpl = strlen(w->fp), n = 8 + 4 + 4 + 8 + 4 + fpl + 4 + 4;
	uint8_t *p, *q;

	*out = NULL;
	for (size_t i = 0; i < w->nmap; i++)
		n += 8 + 8 + 4 + 4 + w->map[i].nruns * 8;
	p = malloc(n);
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
	for (size_t i = 0; i < w->nmap; i++) {
		const struct map_ent *m = &w->map[i];
		put_le64(q, m->id);
		put_le64(q + 8, m->usize);
		put_le32(q + 16, m->shift);
		put_le32(q + 20, (uint32_t)m->nruns);
		q += 24;
		for (size_t k = 0; k < m->nruns; k++, q += 8) {
			put_le32(q, m->runs[k].first);
			put_le32(q + 4, m->runs[k].count);
		}
	}
	put_le32(q, (uint32_t)crc32(0, p, (uInt)(n - 4)));
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

int shadow_writer_finish(struct shadow_writer *w, const char *fingerprint)
{
	uint8_t *map = NULL, *skip = NULL, *tab = NULL;
	size_t maplen = 0, skiplen = 0, tablen = 0;
	int err;

	/* the frames still in the ring */
	pthread_mutex_lock(&w->emit_lock);
	pthread_mutex_lock(&w->lock);
	while (w->used) {
		flush_done(w);
		if (w->used)
			pthread_cond_wait(&w->cond, &w->lock);
	}
	pthread_mutex_unlock(&w->lock);
	pthread_mutex_unlock(&w->emit_lock);
	stop_jobs(w);
	if (w->failed)
		goto out_fail;
	w->fp = strdup(fingerprint ? fingerprint : "");
	err = w->fp ? map_bytes(w, &map, &maplen) : -ENOMEM;
	if (!err)
		err = zsk_skippable(SHADOW_MAP_NIBBLE, map, maplen, &skip, &skiplen);
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
	pthread_mutex_destroy(&w->emit_lock);
	for (size_t i = 0; i < w->nmap; i++)
		free(w->map[i].runs);
	free(w->map);
	free(w->path);
	free(w->tmp);
	free(w->name);
	free(w->fp);
	free(w);
}
