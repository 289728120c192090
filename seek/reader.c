/* Random reads from a compressed archive (see reader.h).
 *
 * Layout: checkpoint i covers [ck[i].uoff, ck[i].uoff + ck[i].ulen); its segments have the
 * global numbers seg_base[i] .. seg_base[i+1]-1 (the cache keys) and CRCs crcs[seg_base[i]..].
 *
 * Decoders: a pool of idle decoders, each remembering its position, which is always a
 * segment boundary.  To fill segment k of chunk i we take the idle decoder with the highest
 * position in [start of chunk i, start of segment k] -- a continuing sequential read finds
 * its decoder exactly at its segment -- or start one at checkpoint i.  Decoding from there
 * to the target, the segments passed are checked and published when nobody else has them
 * (cache_try_reserve) or decoded into scratch and dropped.  A decoder that cannot continue
 * past a chunk end (block codecs return 0 there) is replaced by one at the next checkpoint.
 *
 * Locks: pool_lock guards the pool, the stats and the background jobs of this reader; it is
 * never held while decoding, while freeing a decoder, while calling into the cache or into
 * the worker pool (workers.c): nothing is taken under it.
 */
#include "seek/reader.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <unistd.h>
#include <string.h>
#include <zlib.h>

#include "common/crc32.h"
#include "common/list.h"
#include "common/log.h"
#include "seek/segment.h"
#include "seek/workers.h"

#define DEFAULT_MAX_DECODERS 4
#define POOL_MEMORY_LIMIT (40ull << 20) /* idle + busy decoders; xz -6: 4 of them */

struct rd_live {
	struct codec_dec *dec;
	uint64_t pos;	/* decoded offset of its next byte (a segment boundary) */
	size_t chunk;	/* the chunk pos is in */
	size_t started; /* the checkpoint the decoder was started at */
	uint64_t stamp; /* for LRU */
};

struct bg_job;

struct creader {
	const struct codec *codec;
	struct src *in;
	struct codec_ckpt *ck;
	size_t n;
	uint64_t *seg_base; /* n + 1 entries */
	unsigned seg_shift; /* segments of 1 << seg_shift bytes (segment.h) */
	uint32_t *crcs; /* NULL: the codec checks every block */
	uint64_t usize;
	int (*load_aux)(void *opaque, size_t idx, void **aux, size_t *len);
	void *aux_opaque;
	struct cache *cache;
	struct workers *workers; /* decoding ahead, or NULL */
	struct creader_range *ranges; /* whole mode: sorted by off; NULL otherwise */
	size_t nranges;
	void *params;
	size_t params_len;
	uint64_t stream;
	bool secret; /* its segments are marked secret (cache.h: never on the disk tier) */
	unsigned max_decoders;

	atomic_bool closing; /* creader_free has begun: background jobs stop */
	pthread_mutex_t pool_lock;
	pthread_cond_t bg_done;	 /* a background job of this reader ended */
	pthread_cond_t dec_cond; /* a decoder was returned or freed */
	/* protected by pool_lock: */
	unsigned bg_jobs;	 /* background jobs queued or running */
	struct list_node bg_list; /* those jobs (acquire() may wait for one's decoder) */
	unsigned live, live_max; /* decoders that exist (idle or decoding), and the limit */
	bool live_max_known;	 /* live_max was set from a decoder's memory */
	struct rd_live *pool;
	size_t npool;
	uint64_t clock;
	struct creader_stats stats;
};

int creader_new(const struct creader_params *p, struct creader **out)
{
	struct creader *r;
	uint64_t total = 0;

	*out = NULL;
	if (p->nckpts == 0 || p->ckpts[0].uoff != 0)
		return -EINVAL;
	for (size_t i = 0; i < p->nckpts; i++) {
		if (p->ckpts[i].uoff != total)
			return -EINVAL;
		total += p->ckpts[i].ulen;
	}
	if (total != p->usize)
		return -EINVAL;
	if (!seg_shift_ok(p->seg_shift))
		return -EINVAL;
	r = calloc(1, sizeof(*r));
	if (!r)
		return -ENOMEM;
	r->codec = p->codec;
	r->in = p->in;
	r->n = p->nckpts;
	r->seg_shift = p->seg_shift ? p->seg_shift : SEG_SHIFT;
	r->usize = p->usize;
	r->load_aux = p->load_aux;
	r->aux_opaque = p->aux_opaque;
	r->cache = p->cache;
	r->workers = p->workers;
	r->max_decoders = p->max_decoders ? p->max_decoders : DEFAULT_MAX_DECODERS;
	/* adopted: the caller's again if this fails */
	r->ck = p->adopt_ckpts ? (struct codec_ckpt *)p->ckpts : malloc(r->n * sizeof(*r->ck));
	r->seg_base = malloc((r->n + 1) * sizeof(*r->seg_base));
	r->pool = calloc(r->max_decoders, sizeof(*r->pool));
	if (!r->ck || !r->seg_base || !r->pool)
		goto nomem;
	if (!p->adopt_ckpts)
		memcpy(r->ck, p->ckpts, r->n * sizeof(*r->ck));
	r->seg_base[0] = 0;
	for (size_t i = 0; i < r->n; i++)
		r->seg_base[i + 1] = r->seg_base[i] + seg_count(r->ck[i].ulen, r->seg_shift);
	if (p->crcs) {
		r->crcs = malloc((r->seg_base[r->n] ? r->seg_base[r->n] : 1) * sizeof(*r->crcs));
		if (!r->crcs)
			goto nomem;
		memcpy(r->crcs, p->crcs, r->seg_base[r->n] * sizeof(*r->crcs));
	}
	if (p->nranges) { /* whole mode */
		if (p->crcs || p->nckpts != 1)
			goto inval;
		r->ranges = malloc(p->nranges * sizeof(*r->ranges));
		r->params = p->params_len ? malloc(p->params_len) : NULL;
		if (!r->ranges || (p->params_len && !r->params))
			goto nomem;
		memcpy(r->ranges, p->ranges, p->nranges * sizeof(*r->ranges));
		r->nranges = p->nranges;
		for (size_t i = 0; i < r->nranges; i++)
			if (r->ranges[i].off > r->usize || r->ranges[i].len > r->usize - r->ranges[i].off)
				goto inval;
		if (p->params_len)
			memcpy(r->params, p->params, p->params_len);
		r->params_len = p->params_len;
	}
	r->stream = cache_new_stream_id(r->cache);
	r->secret = p->secret;
	list_init(&r->bg_list);
	pthread_mutex_init(&r->pool_lock, NULL);
	pthread_cond_init(&r->bg_done, NULL);
	pthread_cond_init(&r->dec_cond, NULL);
	r->live_max = 2; /* until the first decoder tells its memory */
	atomic_init(&r->closing, false);
	*out = r;
	return 0;
nomem:
	if (!p->adopt_ckpts)
		free(r->ck);
	free(r->seg_base);
	free(r->pool);
	free(r->crcs);
	free(r->ranges);
	free(r->params);
	free(r);
	return -ENOMEM;
inval:
	if (!p->adopt_ckpts)
		free(r->ck);
	free(r->seg_base);
	free(r->pool);
	free(r->ranges);
	free(r->params);
	free(r);
	return -EINVAL;
}

uint64_t creader_size(const struct creader *r)
{
	return r->usize;
}

/* The non-empty chunk holding off (off < usize). */
static size_t chunk_of(const struct creader *r, uint64_t off)
{
	size_t lo = 0, hi = r->n; /* ck[lo].uoff <= off < ck[hi].uoff */

	while (hi - lo > 1) {
		size_t mid = lo + (hi - lo) / 2;
		if (r->ck[mid].uoff <= off)
			lo = mid;
		else
			hi = mid;
	}
	while (r->ck[lo].ulen == 0) /* uoff ties: the last of them holds the data */
		lo++;
	return lo;
}

static size_t pool_memory(const struct creader *r)
{
	size_t m = 0;

	for (size_t j = 0; j < r->npool; j++)
		m += r->codec->dec_memory ? r->codec->dec_memory(r->pool[j].dec) : 0;
	return m;
}

static size_t pool_oldest(const struct creader *r)
{
	size_t old = 0;

	for (size_t j = 1; j < r->npool; j++)
		if (r->pool[j].stamp < r->pool[old].stamp)
			old = j;
	return old;
}

/* Frees a decoder that was in use (not in the pool). */
static void dec_release(struct creader *r, struct codec_dec *d)
{
	r->codec->dec_free(d);
	pthread_mutex_lock(&r->pool_lock);
	r->live--;
	pthread_cond_broadcast(&r->dec_cond);
	pthread_mutex_unlock(&r->pool_lock);
}

#define ADVISE_SLACK ((uint64_t)64 << 10) /* decoders read their input 64 KiB at a time */
#define ADVISE_SLACK_EXACT ((uint64_t)4 << 10) /* the next header (codec.h: exact_input) */

static int start_decoder(struct creader *r, size_t i, struct rd_live *l);
static bool bg_will_pass(struct creader *r, size_t i, uint64_t target);

/* A decoder for the segment at target in chunk i: the idle one closest before it in the
 * chunk, else the one a background job is taking towards it (waiting for the job: it is
 * nearer to target than checkpoint i, so this costs less decoding than a new decoder and
 * never more time), else a new one at checkpoint i.  At most live_max decoders exist at
 * once (idle or decoding), whatever the number of threads: past that, an idle one is
 * evicted, or the caller waits for one to be returned (decoders never wait while held, so
 * one comes). */
static int acquire(struct creader *r, size_t i, uint64_t target, struct rd_live *out)
{
	struct codec_dec *evict = NULL;
	bool waited = false;
	int err;

	pthread_mutex_lock(&r->pool_lock);
	for (;;) {
		size_t best = SIZE_MAX;
		for (size_t j = 0; j < r->npool; j++) {
			struct rd_live *l = &r->pool[j];
			if (l->pos > target || l->pos < r->ck[i].uoff)
				continue;
			if (best == SIZE_MAX || l->pos > r->pool[best].pos)
				best = j;
		}
		if (best != SIZE_MAX) {
			*out = r->pool[best];
			r->pool[best] = r->pool[--r->npool];
			pthread_mutex_unlock(&r->pool_lock);
			return 0;
		}
		if (bg_will_pass(r, i, target)) {
			if (!waited)
				r->stats.ahead_waits++;
			waited = true;
			pthread_cond_wait(&r->dec_cond, &r->pool_lock);
			continue;
		}
		if (r->live < r->live_max) {
			r->live++;
			break;
		}
		if (r->npool) { /* its place goes to the new decoder */
			size_t old = pool_oldest(r);
			evict = r->pool[old].dec;
			r->pool[old] = r->pool[--r->npool];
			break;
		}
		pthread_cond_wait(&r->dec_cond, &r->pool_lock);
	}
	pthread_mutex_unlock(&r->pool_lock);
	if (evict)
		r->codec->dec_free(evict);
	err = start_decoder(r, i, out);
	if (err) {
		pthread_mutex_lock(&r->pool_lock);
		r->live--;
		pthread_cond_broadcast(&r->dec_cond);
		pthread_mutex_unlock(&r->pool_lock);
	}
	return err;
}

/* Returns a decoder to the pool, evicting the least recently used beyond the limits. */
static void pool_put(struct creader *r, struct rd_live *l)
{
	struct codec_dec *drop[2] = {NULL, NULL};
	size_t ndrop = 0;

	pthread_mutex_lock(&r->pool_lock);
	l->stamp = ++r->clock;
	if (r->npool == r->max_decoders) {
		size_t old = pool_oldest(r);
		drop[ndrop++] = r->pool[old].dec;
		r->pool[old] = *l;
		r->live--;
	} else {
		r->pool[r->npool++] = *l;
	}
	/* keep idle decoders' memory bounded (an xz -9 decoder holds 64 MiB) */
	while (r->npool > 1 && pool_memory(r) > POOL_MEMORY_LIMIT && ndrop < 2) {
		size_t old = pool_oldest(r);
		drop[ndrop++] = r->pool[old].dec;
		r->pool[old] = r->pool[--r->npool];
		r->live--;
	}
	pthread_cond_broadcast(&r->dec_cond);
	pthread_mutex_unlock(&r->pool_lock);
	for (size_t k = 0; k < ndrop; k++)
		r->codec->dec_free(drop[k]);
}

static int start_decoder(struct creader *r, size_t i, struct rd_live *l)
{
	void *aux = NULL;
	size_t auxlen = 0;
	int err = 0;

	if (r->load_aux) {
		err = r->load_aux(r->aux_opaque, i, &aux, &auxlen);
		if (err)
			return err;
	}
	/* a source that reads by requests fetches the chunk's compressed span now, in one
	 * request: from the byte before the checkpoint (a gzip checkpoint's unread bits) to the
	 * next one, plus what a decoder's last read of its input buffer takes past it */
	uint64_t from = r->ck[i].coff ? r->ck[i].coff - 1 : 0;
	uint64_t slack = r->codec->exact_input ? ADVISE_SLACK_EXACT : ADVISE_SLACK;
	uint64_t to = i + 1 < r->n && r->ck[i + 1].coff > from ? r->ck[i + 1].coff + slack
							     : UINT64_MAX;
	src_advise(r->in, from, to - from);
	err = r->codec->dec_new(r->in, &r->ck[i], aux, auxlen, &l->dec);
	free(aux);
	if (err == -EINVAL) { /* fields the codec cannot use: the index is damaged */
		tfs_log(TFS_LOG_ERR, "%s: checkpoint %zu of the index is damaged (rejected by the "
			"decoder): rebuild the index (--recreate-index)", r->codec->name, i);
		return -EIO;
	}
	if (err)
		return err;
	l->pos = r->ck[i].uoff;
	l->chunk = i;
	l->started = i;
	size_t mem = r->codec->dec_memory ? r->codec->dec_memory(l->dec) : 0;
	pthread_mutex_lock(&r->pool_lock);
	r->stats.decoders_started++;
	if (!r->live_max_known) { /* as many as fit in the decoder budget, 2 to 16 */
		size_t n = mem ? POOL_MEMORY_LIMIT / mem : 16;
		r->live_max = n < 2 ? 2 : (n > 16 ? 16 : (unsigned)n);
		r->live_max_known = true;
		pthread_cond_broadcast(&r->dec_cond);
	}
	pthread_mutex_unlock(&r->pool_lock);
	return 0;
}

/* Decodes the next segment of l (which starts at l->pos, in chunk l->chunk) into dst. */
static int decode_segment(struct creader *r, struct rd_live *l, uint8_t *dst, uint64_t len)
{
	uint64_t done = 0;
	size_t i = l->chunk;

	while (done < len) {
		ssize_t n = r->codec->dec_read(l->dec, dst + done, len - done);
		if (n < 0)
			return (int)n;
		if (n == 0) {
			/* a decoder that stops at its chunk's end: go on from the next checkpoint */
			if (done == 0 && l->pos == r->ck[i].uoff && l->started != i) {
				r->codec->dec_free(l->dec);
				l->dec = NULL;
				int err = start_decoder(r, i, l);
				if (err)
					return err;
				n = r->codec->dec_read(l->dec, dst, len);
				if (n < 0)
					return (int)n;
			}
			if (n == 0) {
				tfs_log(TFS_LOG_ERR, "%s: data ends early at decompressed offset %llu",
					r->codec->name, (unsigned long long)(l->pos + done));
				return -EIO;
			}
		}
		done += (uint64_t)n;
	}
	pthread_mutex_lock(&r->pool_lock);
	r->stats.decoded_bytes += len;
	r->stats.segments_filled++;
	pthread_mutex_unlock(&r->pool_lock);
	return 0;
}

/* Decodes the segment at l->pos (a segment boundary) and checks it.  mine: the caller holds
 * the segment's reservation; the buffer is then returned in *outb (referenced; the caller
 * publishes it).  Else it is decoded into *scratch (allocated on first use) and dropped.  On
 * error nothing is published or abandoned here.  *key is the segment's cache key. */
static int step_segment(struct creader *r, struct rd_live *l, bool mine, uint8_t **scratch,
			struct cache_buf **outb, struct cache_key *key)
{
	size_t j = l->chunk;
	struct cache_buf *b = NULL;
	uint8_t *dst;
	int err;

	*outb = NULL;
	while (l->pos >= r->ck[j].uoff + r->ck[j].ulen)
		j++;
	uint64_t m = (l->pos - r->ck[j].uoff) >> r->seg_shift;
	uint64_t len = seg_len(r->ck[j].ulen, m, r->seg_shift);
	*key = (struct cache_key){r->stream, r->seg_base[j] + m};
	l->chunk = j;
	if (mine) {
		b = cache_buf_new(len);
		if (!b)
			return -ENOMEM;
		b->secret = r->secret;
		dst = b->data;
	} else {
		if (!*scratch && !(*scratch = malloc(((size_t)3 << r->seg_shift) / 2)))
			return -ENOMEM;
		dst = *scratch;
	}
	err = decode_segment(r, l, dst, len);
	if (!err && r->crcs && tfs_crc32(0, dst, len) != r->crcs[key->seg]) {
		tfs_log(TFS_LOG_ERR,
			"%s: decoded data does not match the index (CRC) at decompressed offset %llu, "
			"checkpoint %zu at compressed offset %llu: the archive is corrupt or changed",
			r->codec->name, (unsigned long long)l->pos, j, (unsigned long long)r->ck[j].coff);
		err = -EIO;
	}
	if (err) {
		cache_buf_put(b);
		return err;
	}
	l->pos += len;
	*outb = b;
	return 0;
}

/* ---- decoding ahead --------------------------------------------------------------------
 * After a read decoded the segment it wanted, the rest of that chunk (at most BG_AHEAD bytes)
 * is decoded on a background thread, with its segments reserved first so that readers wanting
 * them wait for that one decode instead of starting their own from the checkpoint.  A random
 * read of an xz block thus decodes the block once, while the reader goes on; a sequential read
 * finds its next segments coming.  Only when the cache can hold what is decoded (a disk tier,
 * or a chunk small against the memory budget).
 *
 * A rest shorter than BG_REST_MIN is left alone (the decoder goes back to the pool where it
 * stopped): a gzip chunk of 64 KiB segments, 256 KiB apart.  A read that wants it later
 * decodes at most that much again, while decoding it now takes the other core, which the
 * reading process and the kernel's side of FUSE need.  1000 small files of backup.tar.gz,
 * read cold: 0.55 s without those rests, 0.63 s with them, as with 1 MiB segments.  Every
 * rest of a stream of 1 MiB segments is at least half a segment, so those always have theirs
 * decoded ahead.
 *
 * A reader that says it reads on (creader_read_ahead: a large file read in order) has the
 * job go on past the chunk's end, up to where it says, so that its decoding keeps ahead of
 * it on another core whatever the spacing of the checkpoints.  Without that a long file in
 * a stream of small chunks would be decoded in the foreground, a segment per request. */

#define BG_AHEAD (64ull << 20)
#define BG_REST_MIN ((uint64_t)512 << 10)

struct bg_job {
	struct creader *r;
	struct rd_live l;
	uint64_t start;	    /* l.pos when submitted */
	uint64_t end;	    /* decode up to here */
	uint64_t first_seg; /* global number of the segment at l.pos */
	size_t nsegs;
	bool *mine; /* per segment from l.pos: reserved by the job */
	struct list_node node; /* in r->bg_list */
};

/* job is no longer queued or running: off r's list, and whoever waits for it told. */
static void bg_forget(struct creader *r, struct bg_job *job)
{
	pthread_mutex_lock(&r->pool_lock);
	r->bg_jobs--;
	list_del(&job->node);
	pthread_cond_broadcast(&r->bg_done);
	pthread_cond_broadcast(&r->dec_cond); /* acquire() may be waiting for this job */
	pthread_mutex_unlock(&r->pool_lock);
}

static void bg_run(void *arg)
{
	struct bg_job *job = arg;
	struct creader *r = job->r;
	uint8_t *scratch = NULL;
	size_t i = 0;
	int err = 0;

	for (; i < job->nsegs; i++) {
		struct cache_buf *b;
		struct cache_key key;
		if (atomic_load(&r->closing)) {
			err = -ECANCELED;
			break;
		}
		err = step_segment(r, &job->l, job->mine[i], &scratch, &b, &key);
		if (err)
			break;
		if (job->mine[i]) {
			cache_publish(r->cache, &key, b);
			cache_buf_put(b);
		}
	}
	for (size_t k = i; k < job->nsegs; k++) { /* give back what was not decoded */
		struct cache_key key = {r->stream, job->first_seg + k};
		if (job->mine[k])
			cache_abandon(r->cache, &key);
	}
	free(scratch);
	if (err || job->l.pos >= r->usize)
		dec_release(r, job->l.dec);
	else
		pool_put(r, &job->l);
	bg_forget(r, job);
	free(job->mine);
	free(job);
}

/* Hands l (positioned after a read's segment) to a background thread to decode the rest of
 * its chunk if that is at least BG_REST_MIN, and on to the segment holding ahead_to - 1 if
 * that is further; true if taken, else the caller keeps l. */
static bool bg_submit(struct creader *r, struct rd_live *l, uint64_t ahead_to)
{
	uint64_t cend = r->ck[l->chunk].uoff + r->ck[l->chunk].ulen, end = 0, pos;
	struct bg_job *job;
	size_t j = l->chunk;

	if (cend - l->pos >= BG_REST_MIN)
		end = cend;
	if (ahead_to > end)
		end = ahead_to < r->usize ? ahead_to : r->usize;
	if (end > l->pos + BG_AHEAD)
		end = l->pos + BG_AHEAD;
	if (!r->workers || l->pos >= end || (end - l->pos) * 4 > cache_room(r->cache) ||
	    atomic_load(&r->closing))
		return false;
	job = calloc(1, sizeof(*job));
	if (!job)
		return false;
	/* whole segments, across chunk ends: their global numbers follow each other */
	job->nsegs = 0;
	for (pos = l->pos; pos < end; job->nsegs++) {
		while (pos >= r->ck[j].uoff + r->ck[j].ulen)
			j++;
		uint64_t k = (pos - r->ck[j].uoff) >> r->seg_shift;
		if (pos == l->pos)
			job->first_seg = r->seg_base[j] + k;
		pos = r->ck[j].uoff + (k << r->seg_shift) + seg_len(r->ck[j].ulen, k, r->seg_shift);
	}
	end = pos;
	job->mine = calloc(job->nsegs ? job->nsegs : 1, sizeof(*job->mine));
	if (!job->mine) {
		free(job);
		return false;
	}
	for (size_t i = 0; i < job->nsegs; i++) {
		struct cache_key key = {r->stream, job->first_seg + i};
		job->mine[i] = cache_try_reserve(r->cache, &key);
	}
	job->r = r;
	job->l = *l;
	job->start = l->pos;
	job->end = end;
	pthread_mutex_lock(&r->pool_lock);
	r->bg_jobs++;
	list_add_head(&r->bg_list, &job->node);
	pthread_mutex_unlock(&r->pool_lock);
	if (workers_try_run(r->workers, bg_run, job)) {
		pthread_mutex_lock(&r->pool_lock);
		r->stats.ahead_jobs++;
		pthread_mutex_unlock(&r->pool_lock);
		return true;
	}
	/* every thread busy: decoding ahead must never pile up */
	bg_forget(r, job);
	for (size_t i = 0; i < job->nsegs; i++) {
		struct cache_key key = {r->stream, job->first_seg + i};
		if (job->mine[i])
			cache_abandon(r->cache, &key);
	}
	free(job->mine);
	free(job);
	return false;
}

/* True if a background job of r started within chunk i (or later) and ends at or before
 * target: its decoder comes back to the pool on the way to target.  Under pool_lock. */
static bool bg_will_pass(struct creader *r, size_t i, uint64_t target)
{
	for (struct list_node *n = r->bg_list.next; n != &r->bg_list; n = n->next) {
		struct bg_job *j = list_entry(n, struct bg_job, node);
		if (j->start >= r->ck[i].uoff && j->end <= target)
			return true;
	}
	return false;
}

/* ---- whole mode ----------------------------------------------------------------------- */

static int whole_ckpt(void *opaque, const struct codec_ckpt *ck, const void *aux, size_t auxlen)
{
	return 0; /* a whole decode keeps no checkpoint */
}

/* Decodes the whole stream with the codec's scan into buffers for all its segments and
 * checks every range; then publishes the segments held in mine[] (the others are dropped) and
 * returns segment `want` (referenced) in *out if it is not NULL.  On error nothing is
 * published; the caller gives back its reservations. */
static int whole_decode(struct creader *r, const bool *mine, uint64_t want, struct cache_buf **out)
{
	uint64_t nseg = r->seg_base[1];
	struct cache_buf **bufs = calloc(nseg ? nseg : 1, sizeof(*bufs));
	struct codec_opts opts = {.spacing = UINT64_MAX, .threads = 1, .params = r->params,
				  .params_len = r->params_len};
	struct codec_sink sink = {.checkpoint = whole_ckpt};
	struct codec_scan *scan = NULL;
	size_t ri = 0; /* ranges before ri are done */
	uint32_t *rcrc = calloc(r->nranges, sizeof(*rcrc));
	int err = 0;

	if (out)
		*out = NULL;
	if (!bufs || !rcrc) {
		err = -ENOMEM;
		goto out;
	}
	err = r->codec->scan_new(r->in, &opts, &sink, &scan);
	for (uint64_t k = 0; !err && k < nseg; k++) {
		uint64_t len = seg_len(r->ck[0].ulen, k, r->seg_shift), start = k << r->seg_shift;
		uint64_t done = 0;
		if (!(bufs[k] = cache_buf_new(len))) {
			err = -ENOMEM;
			break;
		}
		bufs[k]->secret = r->secret;
		while (!err && done < len) {
			ssize_t n = r->codec->scan_read(scan, bufs[k]->data + done, len - done);
			if (n < 0)
				err = (int)n;
			else if (n == 0) { /* shorter than the directory says */
				tfs_log(TFS_LOG_ERR, "%s: the stream ends at %llu of its %llu bytes",
					r->codec->name, (unsigned long long)(start + done),
					(unsigned long long)r->usize);
				err = -EIO;
			} else
				done += (uint64_t)n;
		}
		if (err)
			break;
		/* the ranges this segment covers part of */
		for (size_t j = ri; j < r->nranges && r->ranges[j].off < start + len; j++) {
			const struct creader_range *g = &r->ranges[j];
			uint64_t a = g->off > start ? g->off : start;
			uint64_t b = g->off + g->len < start + len ? g->off + g->len : start + len;
			if (a < b)
				rcrc[j] = tfs_crc32(rcrc[j], bufs[k]->data + (a - start), b - a);
		}
		while (ri < r->nranges && r->ranges[ri].off + r->ranges[ri].len <= start + len) {
			if (rcrc[ri] != r->ranges[ri].crc) {
				tfs_log(TFS_LOG_ERR, "%s: decoded data does not match its CRC-32 (%llu "
					"bytes at decoded offset %llu): the archive is damaged",
					r->codec->name, (unsigned long long)r->ranges[ri].len,
					(unsigned long long)r->ranges[ri].off);
				err = -EIO;
				break;
			}
			ri++;
		}
	}
	if (!err) { /* the decoder must be at the end too */
		uint8_t extra;
		ssize_t n = r->codec->scan_read(scan, &extra, 1);
		if (n > 0) {
			tfs_log(TFS_LOG_ERR, "%s: the stream decodes to more than its %llu bytes",
				r->codec->name, (unsigned long long)r->usize);
			err = -EIO;
		} else if (n < 0) {
			err = (int)n;
		}
	}
	if (!err) {
		pthread_mutex_lock(&r->pool_lock);
		r->stats.decoders_started++;
		r->stats.decoded_bytes += r->usize;
		r->stats.segments_filled += nseg;
		pthread_mutex_unlock(&r->pool_lock);
		for (uint64_t k = 0; k < nseg; k++) {
			struct cache_key key = {r->stream, k};
			if (mine[k])
				cache_publish(r->cache, &key, bufs[k]);
		}
		if (out && want < nseg) {
			*out = bufs[want];
			bufs[want] = NULL;
		}
	}
out:
	if (scan)
		r->codec->scan_free(scan);
	for (uint64_t k = 0; bufs && k < nseg; k++)
		cache_buf_put(bufs[k]);
	free(bufs);
	free(rcrc);
	return err;
}

/* Whole mode's rd_fill: the caller holds the reservation of segment want. */
static int whole_fill(struct creader *r, uint64_t want, struct cache_buf **out)
{
	uint64_t nseg = r->seg_base[1];
	bool *mine = calloc(nseg ? nseg : 1, sizeof(*mine));
	int err;

	if (!mine)
		return -ENOMEM;
	for (uint64_t k = 0; k < nseg; k++) {
		struct cache_key key = {r->stream, k};
		mine[k] = k == want || cache_try_reserve(r->cache, &key);
	}
	err = whole_decode(r, mine, want, out);
	for (uint64_t k = 0; err && k < nseg; k++) { /* give back what was not published */
		struct cache_key key = {r->stream, k};
		if (mine[k] && k != want) /* want's is the caller's to give back */
			cache_abandon(r->cache, &key);
	}
	free(mine);
	return err;
}

/* Decodes segment k of chunk i, publishing what it passes; returns the target's buffer
 * (referenced) in *out.  The caller holds the reservation of the target.  Then decodes on in
 * the background: the rest of the chunk, or up to ahead_to (see bg_submit). */
static int rd_fill(struct creader *r, size_t i, uint64_t k, uint64_t ahead_to,
		   struct cache_buf **out)
{
	uint64_t target = r->ck[i].uoff + (k << r->seg_shift);
	struct rd_live l = {0};
	uint8_t *scratch = NULL;
	int err = 0;

	*out = NULL;
	if (r->ranges)
		return whole_fill(r, k, out);
	err = acquire(r, i, target, &l);
	if (err)
		return err;
	while (l.pos <= target) {
		bool is_target = l.pos == target, reserved = false;
		struct cache_buf *b;
		struct cache_key key;
		if (!is_target) { /* reserve a passed segment unless someone has it */
			size_t j = chunk_of(r, l.pos);
			struct cache_key pk = {r->stream,
					       r->seg_base[j] + ((l.pos - r->ck[j].uoff) >> r->seg_shift)};
			reserved = cache_try_reserve(r->cache, &pk);
		}
		err = step_segment(r, &l, is_target || reserved, &scratch, &b, &key);
		if (err) {
			if (reserved)
				cache_abandon(r->cache, &key);
			break;
		}
		if (is_target) {
			cache_publish(r->cache, &key, b);
			*out = b;
		} else if (reserved) {
			cache_publish(r->cache, &key, b);
			cache_buf_put(b);
		}
	}
	free(scratch);
	if (err) {
		dec_release(r, l.dec);
		return err;
	}
	if (l.pos >= r->usize)
		dec_release(r, l.dec);
	else if (!bg_submit(r, &l, ahead_to))
		pool_put(r, &l);
	return 0;
}

ssize_t creader_read(struct creader *r, void *buf, size_t len, uint64_t off)
{
	return creader_read_ahead(r, buf, len, off, 0);
}

ssize_t creader_read_ahead(struct creader *r, void *buf, size_t len, uint64_t off,
			   uint64_t ahead_to)
{
	size_t done = 0;

	if (off >= r->usize)
		return 0;
	if (len > r->usize - off)
		len = (size_t)(r->usize - off);
	while (done < len) {
		uint64_t pos = off + done;
		size_t i = chunk_of(r, pos);
		uint64_t rel = pos - r->ck[i].uoff, k = seg_at(r->ck[i].ulen, rel, r->seg_shift);
		uint64_t seg_start = k << r->seg_shift;
		struct cache_key key = {r->stream, r->seg_base[i] + k};
		struct cache_buf *b;
		int err;

		if (cache_get(r->cache, &key, &b) == 1) {
			err = rd_fill(r, i, k, ahead_to, &b);
			if (err) {
				/* the whole request fails: over FUSE a short read would look like
				 * the end of the file */
				cache_abandon(r->cache, &key);
				return err;
			}
		}
		uint64_t in = rel - seg_start, n = b->len - in;
		if (n > len - done)
			n = len - done;
		memcpy((uint8_t *)buf + done, b->data + in, n);
		cache_buf_put(b);
		done += n;
	}
	return (ssize_t)done;
}

size_t creader_nchunks(const struct creader *r)
{
	return r->n;
}

int creader_fill_chunk(struct creader *r, size_t i, const atomic_bool *stop)
{
	uint64_t nseg = r->seg_base[i + 1] - r->seg_base[i], first = UINT64_MAX, last = 0;
	struct rd_live l = {0};
	uint8_t *scratch = NULL;
	bool *mine;
	int err = 0;

	if (nseg == 0)
		return 0;
	mine = calloc(nseg, sizeof(*mine));
	if (!mine)
		return -ENOMEM;
	for (uint64_t k = 0; k < nseg; k++) {
		struct cache_key key = {r->stream, r->seg_base[i] + k};
		mine[k] = cache_try_reserve(r->cache, &key);
		if (mine[k]) {
			if (first == UINT64_MAX)
				first = k;
			last = k;
		}
	}
	if (first == UINT64_MAX) { /* all there, or on their way */
		free(mine);
		return 0;
	}
	if (r->ranges) { /* whole mode: one chunk, decoded whole */
		err = whole_decode(r, mine, UINT64_MAX, NULL);
		for (uint64_t k = 0; err && k < nseg; k++) {
			struct cache_key key = {r->stream, k};
			if (mine[k])
				cache_abandon(r->cache, &key);
		}
		free(mine);
		return err;
	}
	uint64_t k = first;
	err = acquire(r, i, r->ck[i].uoff + (first << r->seg_shift), &l);
	if (!err) {
		k = (l.pos - r->ck[i].uoff) >> r->seg_shift;
		for (; k <= last; k++) {
			struct cache_buf *b;
			struct cache_key key;
			if (atomic_load(stop) || atomic_load(&r->closing)) {
				err = -ECANCELED;
				break;
			}
			err = step_segment(r, &l, mine[k], &scratch, &b, &key);
			if (err)
				break;
			if (mine[k]) {
				cache_publish(r->cache, &key, b);
				cache_buf_put(b);
				mine[k] = false;
			}
		}
		if (err || l.pos >= r->usize)
			dec_release(r, l.dec);
		else
			pool_put(r, &l);
	}
	for (uint64_t j = 0; j < nseg; j++) { /* give back what was not decoded */
		struct cache_key key = {r->stream, r->seg_base[i] + j};
		if (mine[j])
			cache_abandon(r->cache, &key);
	}
	free(scratch);
	free(mine);
	return err;
}

void creader_get_stats(struct creader *r, struct creader_stats *out)
{
	pthread_mutex_lock(&r->pool_lock);
	*out = r->stats;
	pthread_mutex_unlock(&r->pool_lock);
}

void creader_free(struct creader *r)
{
	if (!r)
		return;
	atomic_store(&r->closing, true);
	pthread_mutex_lock(&r->pool_lock);
	while (r->bg_jobs)
		pthread_cond_wait(&r->bg_done, &r->pool_lock);
	pthread_mutex_unlock(&r->pool_lock);
	for (size_t j = 0; j < r->npool; j++)
		r->codec->dec_free(r->pool[j].dec);
	cache_drop_stream(r->cache, r->stream);
	pthread_mutex_destroy(&r->pool_lock);
	pthread_cond_destroy(&r->bg_done);
	pthread_cond_destroy(&r->dec_cond);
	free(r->pool);
	free(r->ck);
	free(r->seg_base);
	free(r->crcs);
	free(r->ranges);
	free(r->params);
	free(r);
}
