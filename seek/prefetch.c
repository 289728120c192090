/* Whole-archive prefetch (see prefetch.h).
 *
 * The items are kept as a list of readers with their chunk counts; a shared cursor (reader,
 * chunk) hands out the next item under the lock, so the threads take chunks in archive order
 * and no two take the same one.  The threads are jobs of the process's pool (common/pool.h)
 * run at nice PF_NICE, so decoding ahead yields to the requests being served; pf_free joins
 * them.
 */
#include "seek/prefetch.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/log.h"
#include "common/pool.h"

struct pf_item {
	struct creader *r; /* or NULL: a file read into the page cache */
	bool fast;	   /* r decodes fast (pf_add) */
	int fd;
	uint64_t size;
	size_t nchunks;
};

struct prefetch {
	unsigned nthreads;
	uint64_t budget;
	struct pool_job **threads; /* started of them, joined by pf_free */
	unsigned started;
	atomic_bool stop;
	atomic_bool active; /* threads started and not all done: pf_running, lock-free */

	pthread_mutex_t lock;
	/* protected by lock (items and queued_bytes are fixed once started): */
	struct pf_item *items;
	size_t nitems, cap;
	size_t cur_item, cur_chunk; /* the next item to hand out */
	unsigned running;	    /* threads not yet done */
	uint64_t locked;	    /* chunks no password opens (-EACCES: counted failed, but
				       nothing was logged: the reads that meet them say so) */
	struct pf_stats st;
};

struct prefetch *pf_new(unsigned threads, uint64_t budget)
{
	struct prefetch *pf = calloc(1, sizeof(*pf));

	if (!pf)
		return NULL;
	pf->nthreads = threads ? threads : 1;
	pf->budget = budget;
	pf->threads = calloc(pf->nthreads, sizeof(*pf->threads));
	if (!pf->threads) {
		free(pf);
		return NULL;
	}
	atomic_init(&pf->stop, false);
	atomic_init(&pf->active, false);
	pthread_mutex_init(&pf->lock, NULL);
	return pf;
}

/* Queues it if its size fits what is left of the budget (before pf_start): true if queued. */
static bool pf_push(struct prefetch *pf, const struct pf_item *it, uint64_t size)
{
	bool ok = false;

	pthread_mutex_lock(&pf->lock);
	if (!pf->started && size <= pf->budget - pf->st.queued_bytes) {
		if (pf->nitems == pf->cap) {
			size_t cap = pf->cap ? pf->cap * 2 : 8;
			struct pf_item *n = realloc(pf->items, cap * sizeof(*n));
			if (n) {
				pf->items = n;
				pf->cap = cap;
			}
		}
		if (pf->nitems < pf->cap) {
			pf->items[pf->nitems++] = *it;
			pf->st.queued_bytes += size;
			pf->st.chunks += it->nchunks;
			ok = true;
		}
	}
	pthread_mutex_unlock(&pf->lock);
	return ok;
}

bool pf_add(struct prefetch *pf, struct creader *r, bool fast)
{
	struct pf_item it = {.r = r, .fd = -1, .fast = fast, .nchunks = creader_nchunks(r)};

	return pf_push(pf, &it, creader_size(r));
}

bool pf_add_file(struct prefetch *pf, int fd, uint64_t size)
{
	struct pf_item it = {.r = NULL, .fd = fd, .size = size,
			     .nchunks = (size_t)((size + PF_FILE_STEP - 1) / PF_FILE_STEP)};

	return size && pf_push(pf, &it, size);
}

void pf_note_skipped(struct prefetch *pf)
{
	pthread_mutex_lock(&pf->lock);
	pf->st.skipped++;
	pthread_mutex_unlock(&pf->lock);
}

uint64_t pf_budget(struct prefetch *pf)
{
	return pf->budget;
}

uint64_t pf_room(struct prefetch *pf)
{
	pthread_mutex_lock(&pf->lock);
	uint64_t room = pf->budget - pf->st.queued_bytes;
	pthread_mutex_unlock(&pf->lock);
	return room;
}

/* The next item's piece to do, or false when there is none left. */
static bool pf_take(struct prefetch *pf, struct pf_item *it, size_t *chunk)
{
	bool ok = false;

	pthread_mutex_lock(&pf->lock);
	while (pf->cur_item < pf->nitems && pf->cur_chunk >= pf->items[pf->cur_item].nchunks) {
		pf->cur_item++;
		pf->cur_chunk = 0;
	}
	if (pf->cur_item < pf->nitems && !atomic_load(&pf->stop)) {
		*it = pf->items[pf->cur_item];
		*chunk = pf->cur_chunk++;
		ok = true;
	}
	pthread_mutex_unlock(&pf->lock);
	return ok;
}

/* Reads step k of a file into the page cache, one PF_FILE_PIECE at a time: readahead only
 * queues a piece; a one-byte read of its last byte waits for it. */
static int pf_read_file(const struct pf_item *it, size_t k)
{
	uint64_t off = (uint64_t)k * PF_FILE_STEP;
	uint64_t end = it->size - off < PF_FILE_STEP ? it->size : off + PF_FILE_STEP;

	for (uint64_t o = off; o < end; o += PF_FILE_PIECE) {
		uint64_t n = end - o < PF_FILE_PIECE ? end - o : PF_FILE_PIECE;
		char c;

		if (readahead(it->fd, (off64_t)o, (size_t)n) < 0 ||
		    pread(it->fd, &c, 1, (off_t)(o + n - 1)) < 0)
			return -errno;
	}
	return 0;
}

static void *pf_thread(void *arg)
{
	struct prefetch *pf = arg;
	struct pf_item it;
	size_t chunk;

	while (pf_take(pf, &it, &chunk)) {
		int err = it.r ? creader_fill_chunk(it.r, chunk, &pf->stop) : pf_read_file(&it, chunk);
		pthread_mutex_lock(&pf->lock);
		if (err == 0)
			pf->st.chunks_done++;
		else if (err != -ECANCELED)
			pf->st.chunks_failed++;
		if (err == -EACCES)
			pf->locked++;
		pthread_mutex_unlock(&pf->lock);
	}
	pthread_mutex_lock(&pf->lock);
	if (--pf->running == 0)
		atomic_store(&pf->active, false);
	if (pf->running == 0 && !atomic_load(&pf->stop)) {
		pf->st.finished = true;
		tfs_log(TFS_LOG_INFO, "prefetch done: %llu chunks decoded%s%s",
			(unsigned long long)pf->st.chunks_done,
			pf->st.chunks_failed > pf->locked ? ", some failed (see above)" : "",
			pf->locked ? ", some encrypted (no password given opens them)" : "");
	}
	pthread_mutex_unlock(&pf->lock);
	return NULL;
}

int pf_start(struct prefetch *pf)
{
	int err = 0;

	pthread_mutex_lock(&pf->lock);
	if (pf->started || !pf->nitems) {
		pf->st.finished = !pf->nitems;
		pthread_mutex_unlock(&pf->lock);
		return 0;
	}
	bool slow = false;
	for (size_t i = 0; i < pf->nitems; i++)
		slow |= pf->items[i].r && !pf->items[i].fast;
	if (!slow)
		pf->nthreads = 1;
	pf->running = pf->nthreads;
	atomic_store(&pf->active, true);
	pthread_mutex_unlock(&pf->lock);
	for (; pf->started < pf->nthreads; pf->started++) {
		err = pool_start(pf_thread, pf, "tarseek-prefetch", PF_NICE,
				 &pf->threads[pf->started]);
		if (err)
			break;
	}
	if (err) { /* fewer threads: those that started do the work */
		pthread_mutex_lock(&pf->lock);
		pf->running -= pf->nthreads - pf->started;
		if (pf->running == 0)
			atomic_store(&pf->active, false);
		pthread_mutex_unlock(&pf->lock);
		tfs_log(TFS_LOG_WARNING, "prefetch: %u of %u threads: %s", pf->started,
			pf->nthreads, strerror(-err));
	}
	return pf->started ? 0 : err;
}

bool pf_running(struct prefetch *pf)
{
	return pf && atomic_load_explicit(&pf->active, memory_order_relaxed);
}

void pf_get_stats(struct prefetch *pf, struct pf_stats *out)
{
	pthread_mutex_lock(&pf->lock);
	*out = pf->st;
	out->started = pf->started > 0;
	pthread_mutex_unlock(&pf->lock);
}

void pf_free(struct prefetch *pf)
{
	if (!pf)
		return;
	atomic_store(&pf->stop, true);
	for (unsigned i = 0; i < pf->started; i++)
		pool_join(pf->threads[i]);
	if (pf->started && !pf->st.finished)
		tfs_log(TFS_LOG_INFO, "prefetch stopped: %llu of %llu chunks decoded",
			(unsigned long long)pf->st.chunks_done, (unsigned long long)pf->st.chunks);
	pthread_mutex_destroy(&pf->lock);
	free(pf->threads);
	free(pf->items);
	free(pf);
}
