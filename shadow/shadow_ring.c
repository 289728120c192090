/* The shadow's frames on their way to its file (see shadow_ring.h).
 *
 * A slot is FREE, QUEUED (put, waiting for a job), RUNNING (a job compresses it), DONE
 * (compressed) or STORE (the writer took it as it is).  Slots are used in ring order from
 * head; the writer frees the head once its frame is in the file.
 *
 * Locks: lock guards the slots' states, head, used, stop and draining; nothing is taken under
 * it.  Three conditions, each signalled only when its waiters may have something to do (a
 * wake-up for nothing costs two context switches, and there are tens of thousands of frames):
 * work (the jobs: a frame queued), wcond (the writer: the head compressed, or the ring nearly
 * full) and space (the caller: a slot freed).  Nobody holds it while compressing or writing.  The
 * file, its position and the seek table belong to the writer thread, then to ring_finish once it
 * has been joined.
 */
#include "shadow/shadow_ring.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "codecs/zstd/zstd_seekable.h"
#include "common/pool.h"
#include "shadow/shadow_out.h"

#define RING_SLOTS 256 /* frames in flight: ~32 MiB of them */
/* The writer stores the head frame when fewer slots than this are free: the caller then
 * rarely waits for one. */
#define RING_SLACK 16
#define RING_MAX_JOBS 16

enum { SLOT_FREE, SLOT_QUEUED, SLOT_RUNNING, SLOT_DONE, SLOT_STORE };

struct slot {
	uint8_t *in;  /* buf_cap bytes, swapped with the caller's at each put */
	uint8_t *out; /* the compressed frame (out_cap bytes, made by the job) */
	size_t out_cap, len, out_len;
	int state;
	int err;
};

struct shadow_ring {
	struct ring_opts o;
	_Atomic bool failed;

	/* the writer thread's, then ring_finish's */
	struct shadow_out *file;
	struct zsk_table_w table;
	uint64_t pos;

	pthread_mutex_t lock;
	pthread_cond_t work, wcond, space;
	/* lock: */
	struct slot *slots;
	size_t nslots, head, used;
	bool stop, draining;
	_Atomic uint64_t stored_frames, written;

	struct pool_job *jobs[RING_MAX_JOBS];
	unsigned njobs;
	struct pool_job *writer;
};

static void ring_fail(struct shadow_ring *r, int err, const char *what)
{
	if (!atomic_exchange(&r->failed, true) && r->o.fail)
		r->o.fail(r->o.arg, err, what);
}

/* The oldest queued slot (lock held), or NULL. */
static struct slot *pick(struct shadow_ring *r)
{
	for (size_t i = 0; i < r->used; i++) {
		size_t k = (r->head + i) % r->nslots;
		if (r->slots[k].state == SLOT_QUEUED)
			return &r->slots[k];
	}
	return NULL;
}

static void *job_main(void *arg)
{
	struct shadow_ring *r = arg;
	struct zsk_cctx *cc = zsk_cctx_new();

	pthread_mutex_lock(&r->lock);
	for (;;) {
		struct slot *s = NULL;
		while (!r->stop && !(s = pick(r)))
			pthread_cond_wait(&r->work, &r->lock);
		if (!s)
			break;
		s->state = SLOT_RUNNING;
		pthread_mutex_unlock(&r->lock);
		int err = 0;
		size_t need = zsk_bound(s->len);
		if (s->out_cap < need) {
			free(s->out);
			s->out = malloc(need);
			s->out_cap = s->out ? need : 0;
			err = s->out ? 0 : -ENOMEM;
		}
		if (!err)
			err = zsk_frame(cc, cc ? r->o.level : ZSK_STORE, s->in, s->len, s->out,
					s->out_cap, &s->out_len);
		pthread_mutex_lock(&r->lock);
		s->err = err;
		s->state = SLOT_DONE;
		if (s == &r->slots[r->head])
			pthread_cond_signal(&r->wcond);
	}
	pthread_mutex_unlock(&r->lock);
	zsk_cctx_free(cc);
	return NULL;
}

/* Appends p[0..n) to the file (the writer's, or ring_finish's). */
static int put_file(void *arg, const void *p, size_t n)
{
	struct shadow_ring *r = arg;

	if (r->o.max_bytes && r->pos + n > r->o.max_bytes)
		return -EFBIG;
	int err = so_write(r->file, p, n);
	if (!err) {
		r->pos += n;
		atomic_store(&r->written, r->pos);
	}
	return err;
}

/* The next slot the writer writes (lock held), or NULL: the head when compressed, or when it
 * is queued and the ring is nearly full (or nobody compresses, or the shadow has failed). */
static struct slot *writer_next(struct shadow_ring *r)
{
	struct slot *s = r->used ? &r->slots[r->head] : NULL;

	if (!s || s->state == SLOT_DONE)
		return s;
	if (s->state == SLOT_QUEUED &&
	    (!r->njobs || r->failed || (!r->draining && r->nslots - r->used < RING_SLACK))) {
		s->state = SLOT_STORE;
		return s;
	}
	return NULL;
}

static void *writer_main(void *arg)
{
	struct shadow_ring *r = arg;

	pthread_mutex_lock(&r->lock);
	for (;;) {
		struct slot *s;
		while (!(s = writer_next(r)) && !r->stop)
			pthread_cond_wait(&r->wcond, &r->lock);
		if (!s)
			break;
		bool store = s->state == SLOT_STORE;
		if (store)
			atomic_fetch_add(&r->stored_frames, 1);
		pthread_mutex_unlock(&r->lock);
		int err = s->err;
		size_t csize = s->out_len;
		if (!err && !r->failed)
			err = store ? zsk_store_to(s->in, s->len, put_file, r, &csize)
				    : put_file(r, s->out, s->out_len);
		if (!err && !r->failed)
			err = zsk_table_add(&r->table, csize, s->len);
		if (err)
			ring_fail(r, err,
				  err == -EFBIG ? "it would pass its size limit" : "writing it");
		pthread_mutex_lock(&r->lock);
		s->state = SLOT_FREE;
		r->head = (r->head + 1) % r->nslots;
		r->used--;
		pthread_cond_signal(&r->space); /* one caller puts at a time */
	}
	pthread_mutex_unlock(&r->lock);
	return NULL;
}

static void stop_threads(struct shadow_ring *r)
{
	pthread_mutex_lock(&r->lock);
	r->stop = true;
	pthread_cond_broadcast(&r->work);
	pthread_cond_broadcast(&r->wcond);
	pthread_mutex_unlock(&r->lock);
	for (unsigned i = 0; i < r->njobs; i++)
		pool_join(r->jobs[i]);
	if (r->writer)
		pool_join(r->writer);
	r->writer = NULL;
	r->njobs = 0;
}

int ring_new(const char *path, const struct ring_opts *o, struct shadow_ring **out)
{
	struct shadow_ring *r = calloc(1, sizeof(*r));
	int err;

	*out = NULL;
	if (!r)
		return -ENOMEM;
	r->o = *o;
	pthread_mutex_init(&r->lock, NULL);
	pthread_cond_init(&r->work, NULL);
	pthread_cond_init(&r->wcond, NULL);
	pthread_cond_init(&r->space, NULL);
	r->nslots = RING_SLOTS;
	r->slots = calloc(r->nslots, sizeof(*r->slots));
	err = r->slots ? so_open(path, &r->file) : -ENOMEM;
	if (!err)
		err = pool_start(writer_main, r, "tarseek-swrite", 0, &r->writer);
	if (err) {
		r->writer = NULL;
		ring_free(r);
		return err;
	}
	unsigned jobs = o->jobs < RING_MAX_JOBS ? o->jobs : RING_MAX_JOBS;
	for (unsigned i = 0; i < jobs; i++) {
		if (pool_start(job_main, r, "tarseek-shadow", 0, &r->jobs[r->njobs]) < 0)
			break; /* fewer jobs; with none, every frame is stored */
		pthread_mutex_lock(&r->lock);
		r->njobs++;
		pthread_mutex_unlock(&r->lock);
	}
	*out = r;
	return 0;
}

uint8_t *ring_buf(struct shadow_ring *r)
{
	return malloc(r->o.buf_cap);
}

void ring_put(struct shadow_ring *r, uint8_t **buf, size_t len, size_t keep)
{
	struct slot *s;

	pthread_mutex_lock(&r->lock);
	while (r->used == r->nslots)
		pthread_cond_wait(&r->space, &r->lock);
	s = &r->slots[(r->head + r->used) % r->nslots];
	if (!s->in)
		s->in = malloc(r->o.buf_cap);
	if (!s->in || r->failed) {
		pthread_mutex_unlock(&r->lock);
		if (!r->failed)
			ring_fail(r, -ENOMEM, "a frame's buffer");
		memmove(*buf, *buf + len, keep);
		return;
	}
	uint8_t *frame = *buf;
	*buf = s->in;
	s->in = frame;
	memcpy(*buf, frame + len, keep);
	s->len = len;
	s->err = 0;
	s->state = SLOT_QUEUED;
	r->used++;
	if (r->njobs)
		pthread_cond_signal(&r->work);
	if (!r->njobs || r->nslots - r->used < RING_SLACK) /* the writer may store the head */
		pthread_cond_signal(&r->wcond);
	pthread_mutex_unlock(&r->lock);
}

int ring_finish(struct shadow_ring *r, const uint8_t *skip, size_t len)
{
	uint8_t *tab = NULL;
	size_t tablen = 0;
	int err;

	pthread_mutex_lock(&r->lock);
	r->draining = true; /* the jobs compress what is left, the writer waits for them */
	pthread_cond_broadcast(&r->work);
	pthread_cond_broadcast(&r->wcond);
	while (r->used)
		pthread_cond_wait(&r->space, &r->lock);
	pthread_mutex_unlock(&r->lock);
	stop_threads(r);
	if (r->failed)
		return -EIO;
	err = put_file(r, skip, len);
	if (!err)
		err = zsk_table_add(&r->table, len, 0);
	if (!err)
		err = zsk_table_bytes(&r->table, &tab, &tablen);
	if (!err)
		err = put_file(r, tab, tablen);
	free(tab);
	int cerr = so_close(r->file);
	r->file = NULL;
	err = err ? err : cerr;
	if (err)
		ring_fail(r, err, err == -EFBIG ? "it would pass its size limit" : "writing it");
	return err;
}

void ring_stats(const struct shadow_ring *r, struct ring_stats *out)
{
	out->stored_frames = atomic_load(&r->stored_frames);
	out->written = atomic_load(&r->written);
}

void ring_free(struct shadow_ring *r)
{
	if (!r)
		return;
	stop_threads(r);
	so_abort(r->file);
	for (size_t i = 0; r->slots && i < r->nslots; i++) {
		free(r->slots[i].in);
		free(r->slots[i].out);
	}
	free(r->slots);
	zsk_table_w_free(&r->table);
	pthread_cond_destroy(&r->work);
	pthread_cond_destroy(&r->wcond);
	pthread_cond_destroy(&r->space);
	pthread_mutex_destroy(&r->lock);
	free(r);
}
