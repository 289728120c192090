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
 * Compressing and writing: shadow_ring.h.  A frame is handed to the ring by swapping buffers
 * (the frame's bytes are copied once, from the decoder into the stream's buffer).
 *
 * No fsync: a shadow cut short by a crash is refused when it is opened (its seek table) or,
 * if the table happens to be whole, by the frames' checksums and the segment CRCs when read.
 *
 * Streams decoded at once (a container's, one per thread) each have a handle that cuts their
 * frames; a frame is handed to the ring under w->emit_lock, which serialises the emitters, so
 * each stream's frames are numbered in order and the map records them as runs of consecutive
 * frames.
 *
 * Locks: emit_lock (one emitter at a time: the ring's puts, the map) -> the ring's.
 */
#include "shadow/shadow.h"

#include <errno.h>
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
#include "shadow/shadow_ring.h"

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
	uint8_t *cur;	      /* the frame being filled (cur_cap bytes: a ring buffer) */
	size_t cur_len;
	size_t cand;	      /* candidate cut in cur, or 0: none */
	uint64_t cand_chunk;  /* its chunk position */
	struct run *runs;     /* its frames so far (emit_lock) */
	size_t nruns, runs_cap;
};

struct shadow_writer {
	char *path, *tmp, *name, *fp;
	uint64_t id;
	size_t target, cur_cap;
	_Atomic bool failed;
	bool finished;
	struct shadow_ring *ring;

	pthread_mutex_t emit_lock;
	/* emit_lock: */
	uint64_t emitted; /* frames handed to the ring */
	struct shadow_wstats st;
	struct map_ent *map;
	size_t nmap, map_cap;
};

/* The first error: logged once, and everything after is ignored. */
static void fail(struct shadow_writer *w, int err, const char *what)
{
	if (atomic_exchange(&w->failed, true))
		return;
	tfs_log(TFS_LOG_WARNING, "%s: no shadow is kept (%s: %s); reads decode the archive", w->name,
		what, strerror(-err));
}

/* Room for one more run in ss's list (emit_lock held). */
static bool grow_runs(struct shadow_stream *ss)
{
	size_t cap = ss->runs_cap ? ss->runs_cap * 2 : 4;
	struct run *r = realloc(ss->runs, cap * sizeof(*r));

	if (!r)
		return false;
	ss->runs = r;
	ss->runs_cap = cap;
	return true;
}

static void ring_failed(void *arg, int err, const char *what)
{
	fail(arg, err, what);
}

/* Hands ss->cur[0..len) to the ring as the next frame of its stream; cur then holds what
 * followed it, cur_len - len bytes. */
static void emit(struct shadow_stream *ss, size_t len)
{
	struct shadow_writer *w = ss->w;
	size_t keep = ss->cur_len - len;

	pthread_mutex_lock(&w->emit_lock);
	if (w->failed) {
		/* nothing more */
	} else if (w->emitted >= UINT32_MAX) {
		fail(w, -EFBIG, "too many frames");
	} else if (ss->nruns &&
		   ss->runs[ss->nruns - 1].first + ss->runs[ss->nruns - 1].count == w->emitted) {
		ss->runs[ss->nruns - 1].count++;
	} else if (ss->nruns == ss->runs_cap && !grow_runs(ss)) {
		fail(w, -ENOMEM, "its map");
	} else {
		ss->runs[ss->nruns++] = (struct run){(uint32_t)w->emitted, 1};
	}
	if (!w->failed) {
		ring_put(w->ring, &ss->cur, len, keep);
		w->emitted++;
		w->st.frames++;
	} else {
		memmove(ss->cur, ss->cur + len, keep);
	}
	pthread_mutex_unlock(&w->emit_lock);
	ss->cur_len = keep;
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
	pthread_mutex_init(&w->emit_lock, NULL);
	w->target = o->frame ? o->frame : SHADOW_FRAME;
	w->id = o->id;
	w->path = strdup(path);
	w->name = strdup(o->name ? o->name : path);
	w->tmp = malloc(strlen(path) + 32);
	if (!w->path || !w->name || !w->tmp)
		goto fail;
	snprintf(w->tmp, strlen(path) + 32, "%s.tmp.%ld", path, (long)getpid());
	/* a frame holds at most the target, a segment to reach a boundary and half a segment
	 * after it: segments are at most 1 MiB (segment.h) */
	w->cur_cap = w->target + ((size_t)2 << 20);
	struct ring_opts ro = {.jobs = o->threads,
			       .level = o->level ? o->level : SHADOW_LEVEL,
			       .buf_cap = w->cur_cap,
			       .max_bytes = o->max_bytes,
			       .fail = ring_failed,
			       .arg = w};
	err = ring_new(w->tmp, &ro, &w->ring);
	if (err) {
		tfs_log(TFS_LOG_WARNING, "%s: no shadow is kept (cannot create %s: %s)", w->name,
			w->tmp, strerror(-err));
		goto fail;
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
		s->cur = ring_buf(w->ring);
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
			emit(s, s->cand);
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
	struct ring_stats rs;

	*out = w->st;
	ring_stats(w->ring, &rs);
	out->stored_frames = rs.stored_frames;
	out->written = rs.written;
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

int shadow_writer_finish(struct shadow_writer *w, const char *fingerprint)
{
	uint8_t *map = NULL, *skip = NULL;
	size_t maplen = 0, skiplen = 0;
	int err;

	if (w->failed)
		return -EIO;
	w->fp = strdup(fingerprint ? fingerprint : "");
	err = w->fp ? map_bytes(w, &map, &maplen) : -ENOMEM;
	if (!err)
		err = zsk_skippable(SHADOW_MAP_NIBBLE, map, maplen, &skip, &skiplen);
	free(map);
	if (err) {
		fail(w, err, "its map");
		return -EIO;
	}
	/* the frames still in the ring, then the map and the seek table */
	err = ring_finish(w->ring, skip, skiplen); /* an error is said through ring_failed */
	free(skip);
	if (err || w->failed)
		return -EIO;
	if (rename(w->tmp, w->path) < 0) {
		fail(w, -errno, "renaming it into place");
		return -EIO;
	}
	w->finished = true;
	return 0;
}

void shadow_writer_free(struct shadow_writer *w)
{
	if (!w)
		return;
	ring_free(w->ring);
	if (!w->finished && w->tmp)
		unlink(w->tmp);
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
