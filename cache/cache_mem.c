/* Memory for decoded segments (cache_buf): mapped in regions of our own, and kept for the
 * next segment when a buffer is freed (see cache_int.h); and the buffers themselves
 * (cache_buf_new/ref/put, see cache.h), which the table (cache.c) and the disk tier
 * (cache_disk.c) both make and drop: here, below both, so that neither calls the other back.
 *
 * Why: a cold read of a compressed archive decodes into fresh memory, and fresh memory is
 * paid at its first touch.  On the 2-core VMs this project is measured on, the hypervisor
 * backs a page at its first touch, so faulting in memory costs far more than rewriting it;
 * a profile of the cold md5 workload on lz4 -B4 put 40 % of the daemon's time in the page
 * faults of memcpy into new cache buffers.  So segments get their memory from regions mapped
 * here, and a freed buffer's memory goes back to a free list of its size class instead of to
 * the kernel: the next segment of that size reuses pages that are already there.
 *
 * In transparent huge pages (MADV_HUGEPAGE), unless TARSEEK_THP=0.  What a first touch
 * costs depends on the VM kind.  On the kind measured until 2026-12-05 (free page reporting)
 * a huge page was a free 2 MiB block handed back to the host, and its first touch paid the
 * host's faults for all of it, 2-4 ms, varying from one mount to the next: huge pages were
 * off from then (cold md5 of 1000 files of a shadowed telemetry.tar.bz2 / .xz / .pxz, 9 runs:
 * 0.08-0.39 / 0.08-0.42 / 0.08-0.18 s with them, 0.07-0.12 / 0.08-0.16 / 0.08-0.14 s
 * without).  On the kind of 2026-12-06 on (Firecracker with PVM), where every 4 KiB fault
 * costs 10-40 us, the ahead thread's 22,000 faults per cold pass of telemetry.tar.xz took a
 * core's worth of the pass: with huge pages 1,800 faults, the daemon's CPU 0.34 -> 0.21 s,
 * the cold md5 pass of the 1000 listed files 0.21 -> 0.145 s (medians of 5, interleaved).
 * Regions stay 2 MiB aligned either way.
 *
 * Size classes: a request (the buffer's header included) rounds up to 4 KiB below 256 KiB
 * and to 64 KiB up to CM_MAX (2 MiB), so no buffer wastes more than a rounding step; bigger
 * ones (none of the cache's: segments are at most 1.5 MiB) come from malloc.  Memory is
 * carved from the current region in order (a bump pointer); a region that cannot hold the
 * next request is left with its tail unused (at most one step below CM_MAX) and a new one is
 * mapped.  Regions are never unmapped: they are the process's segment memory, as malloc's
 * arena is its heap.
 *
 * A request takes, in order: a block from its class's free list or from one of the next
 * classes up to 5/4 of its size (segments of one stream vary a little: gzip's chunk tails,
 * bzip2's blocks), a cold block (below) of those classes, else new memory.  Freed blocks stay
 * mapped while the free lists hold at most CM_KEEP bytes; past that a freed block is handed
 * back to the kernel (MADV_DONTNEED) and kept as a cold block, which costs its faults again
 * when reused but no resident memory meanwhile.  So resident memory is at most what is in
 * use, plus CM_KEEP, plus the rounding.
 *
 * Faulting ahead: new memory is slow on such a VM (2-4 ms per 2 MiB when the process has not
 * used it before, 0.13 ms when it has), and a cold read pays it in the
 * foreground: a quarter of the daemon's time in a cold md5 pass of backup.tar.gz.  So a thread
 * keeps the CM_AHEAD bytes after the bump pointer populated (touch_pages: a write fault per
 * page that changes no byte, so it may run while the foreground carves the same range), and
 * maps and populates the next region before the current one runs out.  Only
 * where the pool will grow anyway: while what was carved plus what is populated ahead stays
 * under the caches' budgets (cmem_expect), and while fewer than CM_AHEAD free bytes are
 * resident -- so resident memory stays within what is in use plus CM_KEEP, as without it.  A
 * cache at its budget recycles its blocks and has nothing populated for it.
 *
 * Not MADV_POPULATE_WRITE: it holds the process's mmap lock (for reading) while it clears the
 * range, and the thread runs at nice CM_AHEAD_NICE, so it is often preempted holding it; every
 * brk, mmap or munmap of the request threads (malloc's) then waits for a core to give the
 * thread back, and every page fault queues behind that waiting writer (profiles of the slow
 * passes: its calls 150-190 ms in all, against 12-17 ms in the fast ones).  touch_pages' faults
 * take only the region's own lock (per-VMA locks, Linux 6.4), which no request thread wants.
 * Cold md5 passes of the 1000 listed files of shadowed telemetry.tar.xz / .tar.gz, 25
 * interleaved runs each: medians the same (0.099 / 0.104 s with the call, 0.097 / 0.104 s
 * without), but passes over 0.15 s 4 / 2 with it (up to 0.245 s), none without (up to 0.136 s).
 *
 * The thread is a pool job (common/pool.h) owned by the caches together: started with the
 * first new memory carved while some cache expects to grow (cmem_expect > 0), stopped and
 * joined when the last cache withdraws its budget (cache_free), or by cmem_park before a fork
 * (cache_park); the next carve starts it again.
 *
 * One mutex guards the lists, the bump pointer and the thread's state (a lock per segment
 * decoded: thousands a second at most); the pool's lock is taken under it (pool_start in
 * carve), nothing else.  Under AddressSanitizer, free blocks are poisoned so that a use after free
 * is still reported.
 */
#include "cache/cache.h"
#include "cache/cache_int.h"

#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "common/env.h"
#include "common/pool.h"

#if defined(__SANITIZE_ADDRESS__)
#define CM_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define CM_ASAN 1
#endif
#endif
#ifdef CM_ASAN
#include <sanitizer/asan_interface.h>
#define CM_POISON(p, n) ASAN_POISON_MEMORY_REGION(p, n)
#define CM_UNPOISON(p, n) ASAN_UNPOISON_MEMORY_REGION(p, n)
#else
#define CM_POISON(p, n) ((void)(p), (void)(n))
#define CM_UNPOISON(p, n) ((void)(p), (void)(n))
#endif

#define CM_PAGE ((size_t)4 << 10)    /* touch_pages writes once in each: no page is smaller */
#define CM_HUGE ((size_t)2 << 20)    /* a transparent huge page */
#define CM_REGION ((size_t)64 << 20) /* mapped at a time */
/* The ahead thread's nice: the prefetch's (PF_NICE).  Most of what it faults in is for the
 * prefetch's decoding; at the requests' priority it took a core from the reader it is there to
 * serve (a cold md5 pass of a shadowed telemetry.tar.bz2: 35 % of the machine's samples in its
 * page clearing, md5 median 0.18 s; at nice 10, 0.08 s). */
#define CM_AHEAD_NICE 10
#define CM_SMALL_STEP ((size_t)4 << 10)
#define CM_SMALL_MAX ((size_t)256 << 10)
#define CM_STEP ((size_t)64 << 10)
#define CM_NSMALL (CM_SMALL_MAX / CM_SMALL_STEP)		  /* classes 0 .. 63 */
#define CM_NCLASS (CM_NSMALL + (CM_MAX - CM_SMALL_MAX) / CM_STEP) /* .. 91 */
#define CM_KEEP ((size_t)64 << 20)				  /* free bytes kept resident */
#define CM_AHEAD ((size_t)16 << 20)				  /* populated past the bump */

_Static_assert(CM_MAX % CM_STEP == 0 && CM_SMALL_MAX % CM_STEP == 0, "classes tile");
_Static_assert(CM_REGION % CM_HUGE == 0 && CM_REGION >= 4 * CM_MAX, "regions hold blocks");

struct cm_block {
	struct cm_block *next;
};

static struct {
	pthread_mutex_t lock;
	pthread_cond_t wake;	/* the bump pointer came near the populated end, or stop */
	pthread_cond_t stopped; /* ahead_stopping went back to false */
	/* protected by lock: */
	struct cm_block *hot[CM_NCLASS];  /* free, resident */
	struct cm_block *cold[CM_NCLASS]; /* free, handed back to the kernel */
	uint8_t *cur, *end;		  /* the bump region */
	uint8_t *filled;		  /* [cur, filled) is populated (the ahead thread's) */
	uint8_t *spare;			  /* the next region, mapped ahead (or NULL) */
	uint8_t *spare_filled;		  /* and populated up to here */
	uint64_t expect;		  /* the caches' budgets (cmem_expect) */
	struct pool_job *ahead;		  /* the ahead thread, to join (it may have ended) */
	bool ahead_stopping;		  /* ahead_stop is joining it: it ends, none starts */
	bool ahead_off; /* no region could be mapped, or no thread could be had: none again */
	struct cmem_stats st;
} cm = {.lock = PTHREAD_MUTEX_INITIALIZER,
	.wake = PTHREAD_COND_INITIALIZER,
	.stopped = PTHREAD_COND_INITIALIZER};

static size_t class_size(unsigned cls)
{
	return cls < CM_NSMALL ? (cls + 1) * CM_SMALL_STEP
			       : CM_SMALL_MAX + (cls - CM_NSMALL + 1) * CM_STEP;
}

static unsigned class_of(size_t size) /* size <= CM_MAX */
{
	if (size <= CM_SMALL_MAX)
		return size ? (unsigned)((size - 1) / CM_SMALL_STEP) : 0;
	return (unsigned)(CM_NSMALL + (size - CM_SMALL_MAX - 1) / CM_STEP);
}

static struct cm_block *pop(struct cm_block **list, unsigned first, unsigned last, unsigned *cls)
{
	for (unsigned k = first; k <= last; k++)
		if (list[k]) {
			struct cm_block *b = list[k];
			CM_UNPOISON(b, sizeof(*b));
			list[k] = b->next;
			*cls = k;
			return b;
		}
	return NULL;
}

/* A new region: CM_REGION bytes aligned to a huge page, or NULL.  Any thread, no lock. */
static uint8_t *map_region(void)
{
	uint8_t *p = mmap(NULL, CM_REGION + CM_HUGE, PROT_READ | PROT_WRITE,
			  MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);

	if (p == MAP_FAILED)
		return NULL;
	/* aligned to a huge page: the part before and after is given back */
	uint8_t *a = (uint8_t *)(((uintptr_t)p + CM_HUGE - 1) & ~(uintptr_t)(CM_HUGE - 1));
	if (a > p)
		munmap(p, (size_t)(a - p));
	if (a + CM_REGION < p + CM_REGION + CM_HUGE)
		munmap(a + CM_REGION, (size_t)(p + CM_REGION + CM_HUGE - (a + CM_REGION)));
	if (env_thp()) /* see the top of the file */
		madvise(a, CM_REGION, MADV_HUGEPAGE); /* advice: no error matters */
	CM_POISON(a, CM_REGION);
	return a;
}

/* Populated bytes ahead of the bump pointer, the spare region's included (lock held). */
static size_t ahead_bytes(void)
{
	size_t n = cm.filled > cm.cur ? (size_t)(cm.filled - cm.cur) : 0;

	return n + (cm.spare ? (size_t)(cm.spare_filled - cm.spare) : 0);
}

/* Whether more should be populated ahead (lock held): see the top of the file. */
static bool ahead_wanted(size_t margin)
{
	uint64_t ahead = ahead_bytes();

	return cm.cur && ahead + cm.st.hot_bytes + margin < CM_AHEAD &&
	       cm.st.carved + ahead < cm.expect;
}

/* Faults in [p, p + n) for writing: one atomic OR of zero per page, a write that changes
 * nothing, so a foreground carving the same pages meanwhile loses none of its bytes.  Outside
 * AddressSanitizer's view: the range may be poisoned (not carved yet). */
__attribute__((no_sanitize("address"))) static void touch_pages(uint8_t *p, size_t n)
{
	for (size_t o = 0; o < n; o += CM_PAGE)
		__atomic_fetch_or(p + o, (uint8_t)0, __ATOMIC_RELAXED);
}

/* The ahead thread: populates a huge page at a time, lock released, until CM_AHEAD bytes past
 * the bump pointer are there (the spare region's count when the current one is done); ends
 * when stopped, or for good when no region can be mapped. */
static void *ahead_main(void *arg)
{
	(void)arg;
	pthread_mutex_lock(&cm.lock);
	for (;;) {
		while (!cm.ahead_stopping && !ahead_wanted(0)) {
			cm.st.ahead_busy = false;
			pthread_cond_wait(&cm.wake, &cm.lock);
		}
		if (cm.ahead_stopping)
			break;
		cm.st.ahead_busy = true;
		uint8_t *from, *to;
		if (cm.filled < cm.cur)
			cm.filled = cm.cur;
		if (cm.filled < cm.end) {
			from = cm.filled; /* anywhere (the bump pointer's): to its huge page's end */
			to = (uint8_t *)(((uintptr_t)from | (CM_HUGE - 1)) + 1);
			if (to > cm.end)
				to = cm.end; /* past it nothing is mapped */
		} else {
			if (!cm.spare) {
				pthread_mutex_unlock(&cm.lock);
				uint8_t *a = map_region();
				pthread_mutex_lock(&cm.lock);
				if (!a) {
					cm.ahead_off = true;
					break;
				}
				cm.spare = cm.spare_filled = a; /* counted in mapped once in use */
			}
			from = cm.spare_filled; /* aligned, as the region */
			to = from + CM_HUGE;
		}
		pthread_mutex_unlock(&cm.lock);
		touch_pages(from, (size_t)(to - from));
		pthread_mutex_lock(&cm.lock);
		cm.st.prefaulted += (size_t)(to - from);
		/* the spare may have become the bump region meanwhile: where `from` is now */
		if (cm.spare && cm.spare_filled == from)
			cm.spare_filled = to;
		else if (cm.filled == from)
			cm.filled = to;
	}
	cm.st.ahead_busy = false;
	pthread_mutex_unlock(&cm.lock); /* its wake-ups go unheard until it is started again */
	return NULL;
}

/* Starts the ahead thread if it is wanted and not there (lock held).  If it cannot start,
 * memory is faulted in on use. */
static void ahead_start(void)
{
	if (cm.ahead || cm.ahead_off || !cm.expect)
		return;
	if (pool_start(ahead_main, NULL, "tarseek-fault", CM_AHEAD_NICE, &cm.ahead) < 0)
		cm.ahead_off = true;
}

/* Stops the ahead thread, if any, and joins it (lock not held). */
static void ahead_stop(void)
{
	struct pool_job *j;

	pthread_mutex_lock(&cm.lock);
	while (cm.ahead_stopping)
		pthread_cond_wait(&cm.stopped, &cm.lock);
	j = cm.ahead;
	if (j) {
		cm.ahead_stopping = true;
		pthread_cond_broadcast(&cm.wake);
	}
	pthread_mutex_unlock(&cm.lock);
	if (!j)
		return;
	pool_join(j);
	pthread_mutex_lock(&cm.lock);
	cm.ahead = NULL;
	cm.ahead_stopping = false;
	pthread_cond_broadcast(&cm.stopped);
	pthread_mutex_unlock(&cm.lock);
}

void cmem_expect(int64_t bytes)
{
	bool none;

	pthread_mutex_lock(&cm.lock);
	cm.expect = bytes < 0 && (uint64_t)-bytes > cm.expect ? 0 : cm.expect + (uint64_t)bytes;
	none = cm.expect == 0;
	pthread_mutex_unlock(&cm.lock);
	if (none) /* the last cache is gone: its thread with it */
		ahead_stop();
}

void cmem_park(void)
{
	ahead_stop();
}

/* New memory of class cls from the bump region (lock held), or NULL. */
static void *carve(unsigned cls)
{
	size_t n = class_size(cls);

	if (!cm.cur || (size_t)(cm.end - cm.cur) < n) {
		uint8_t *a = cm.spare;
		if (a) {
			cm.filled = cm.spare_filled;
			cm.spare = cm.spare_filled = NULL;
		} else {
			a = map_region();
			if (!a)
				return NULL;
			cm.filled = a;
		}
		if (cm.cur)
			cm.st.carved += (uint64_t)(cm.end - cm.cur); /* the tail left unused */
		cm.st.mapped += CM_REGION;
		cm.cur = a;
		cm.end = a + CM_REGION;
	}
	void *r = cm.cur;
	cm.cur += n;
	cm.st.carved += n;
	ahead_start();
	if (ahead_wanted(CM_AHEAD / 2)) {
		cm.st.ahead_busy = cm.ahead && !cm.ahead_off; /* until it sleeps, nothing wanted */
		pthread_cond_signal(&cm.wake); /* nobody listens if the thread has ended */
	}
	return r;
}

void *cmem_alloc(size_t size, unsigned *cls)
{
	unsigned want, last, got = 0;
	void *p;

	if (size > CM_MAX) {
		*cls = CM_BIG;
		return malloc(size);
	}
	want = class_of(size);
	last = class_of(size + size / 4 < CM_MAX ? size + size / 4 : CM_MAX);
	pthread_mutex_lock(&cm.lock);
	p = pop(cm.hot, want, last, &got);
	if (p) {
		cm.st.hot_bytes -= class_size(got);
	} else if ((p = pop(cm.cold, want, last, &got))) {
		cm.st.cold_bytes -= class_size(got);
	} else {
		got = want;
		p = carve(want);
	}
	if (p)
		cm.st.used_bytes += class_size(got);
	pthread_mutex_unlock(&cm.lock);
	if (p)
		CM_UNPOISON(p, class_size(got));
	*cls = got;
	return p;
}

void cmem_free(void *p, unsigned cls)
{
	struct cm_block *b = p;
	bool keep;

	if (!p)
		return;
	if (cls == CM_BIG) {
		free(p);
		return;
	}
	size_t n = class_size(cls);
	CM_POISON((uint8_t *)p + sizeof(*b), n - sizeof(*b)); /* in no list yet */
	pthread_mutex_lock(&cm.lock);
	cm.st.used_bytes -= n;
	keep = cm.st.hot_bytes + n <= CM_KEEP;
	if (keep) {
		b->next = cm.hot[cls];
		cm.hot[cls] = b;
		cm.st.hot_bytes += n;
		CM_POISON(b, sizeof(*b));
	}
	pthread_mutex_unlock(&cm.lock);
	if (keep)
		return;
	(void)madvise(p, n, MADV_DONTNEED); /* outside the lock: it walks the pages */
	pthread_mutex_lock(&cm.lock);
	b->next = cm.cold[cls];
	cm.cold[cls] = b;
	cm.st.cold_bytes += n;
	CM_POISON(b, sizeof(*b));
	pthread_mutex_unlock(&cm.lock);
}

size_t cmem_size(unsigned cls)
{
	return cls == CM_BIG ? 0 : class_size(cls);
}

void cmem_get_stats(struct cmem_stats *out)
{
	pthread_mutex_lock(&cm.lock);
	*out = cm.st;
	pthread_mutex_unlock(&cm.lock);
}

/* ---- the buffers ---------------------------------------------------------------------------- */

struct cache_buf *cache_buf_new(size_t len)
{
	unsigned cls;
	struct cache_buf *b = cmem_alloc(sizeof(*b) + len, &cls);

	if (!b)
		return NULL;
	atomic_init(&b->refs, 1);
	b->mem_class = cls;
	b->secret = false;
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
		cmem_free(b, b->mem_class);
}
