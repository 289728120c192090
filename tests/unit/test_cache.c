/* Unit test of the chunk cache (cache/cache.c) against the contract cache/cache.h states:
 * get -> reserve -> publish/abandon, getters of a reserved key waiting for it, references that
 * outlive eviction, the byte budget and LRU order, try_reserve / contains / room / drop_stream,
 * stream ids, the statistics, and the disk tier: its writer thread and queue, the ring of
 * bounded size, CRC-checked reads, and freeing the cache while the writer is busy.
 *
 * Nothing here sleeps and hopes.  Every wait is for something the test observes -- a thread
 * asleep inside a cache call (its state in /proc, after its own "calling" mark), a buffer's
 * reference count, a statistic, a call held at a gate -- and is bounded (TU_WAIT), so the
 * outcome does not depend on the speed or the load of the machine.
 *
 * The gate: to hold the disk tier's writer in the middle of a write, or a miss in the middle
 * of its disk read, the test defines pwrite64() and pread64(), the calls cache.c makes on its
 * file (with _FILE_OFFSET_BITS=64).  The executable's definitions take precedence over libc's;
 * they pass straight through to the system calls unless a test closes the gate or injects a
 * failure.  Only cache.c does file I/O in this test.
 */
#undef _FORTIFY_SOURCE /* it would define pread64 inline: the test defines it below */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "cache/cache.h"
#include "cache/cache_int.h"
#include "common/pool.h"
#include "testutil.h"

/* ---- the disk tier's I/O, held or failed at will ---- */

#define IO_LOG 4096

static struct {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	bool hold_writes, hold_reads; /* the gate: calls wait while true */
	int fail_writes;	      /* 0, or the errno every write fails with (-1: short writes) */
	/* observed by the tests: */
	atomic_uint writes_held, reads_held; /* calls waiting at the gate now */
	atomic_uint nwrites, nreads;	     /* calls so far (reads: of the disk tier's file) */
	atomic_int fd;			     /* the disk tier's file: where the last write went */
	uint64_t woff[IO_LOG];		     /* offset of each write, in order (under lock) */
} io = {.lock = PTHREAD_MUTEX_INITIALIZER, .cond = PTHREAD_COND_INITIALIZER, .fd = -1};

static void io_hold(bool *gate, atomic_uint *held)
{
	pthread_mutex_lock(&io.lock);
	if (*gate) {
		atomic_fetch_add(held, 1);
		while (*gate)
			pthread_cond_wait(&io.cond, &io.lock);
		atomic_fetch_sub(held, 1);
	}
	pthread_mutex_unlock(&io.lock);
}

static void io_gate(bool *gate, bool closed)
{
	pthread_mutex_lock(&io.lock);
	*gate = closed;
	pthread_cond_broadcast(&io.cond);
	pthread_mutex_unlock(&io.lock);
}

static uint64_t io_write_offset(unsigned i)
{
	pthread_mutex_lock(&io.lock);
	uint64_t off = io.woff[i];
	pthread_mutex_unlock(&io.lock);
	return off;
}

ssize_t pwrite64(int fd, const void *buf, size_t n, off64_t off)
{
	int fail;

	pthread_mutex_lock(&io.lock);
	unsigned i = atomic_fetch_add(&io.nwrites, 1);
	if (i < IO_LOG)
		io.woff[i] = (uint64_t)off;
	atomic_store(&io.fd, fd);
	fail = io.fail_writes;
	pthread_mutex_unlock(&io.lock);
	io_hold(&io.hold_writes, &io.writes_held);
	if (fail > 0) {
		errno = fail;
		return -1;
	}
	if (fail < 0 && n > 1)
		n /= 2;
	return syscall(SYS_pwrite64, fd, buf, n, off);
}

ssize_t pread64(int fd, void *buf, size_t n, off64_t off)
{
	if (fd == atomic_load(&io.fd)) {
		atomic_fetch_add(&io.nreads, 1);
		io_hold(&io.hold_reads, &io.reads_held);
	}
	return syscall(SYS_pread64, fd, buf, n, off);
}

/* ---- buffers, keys, threads ---- */

static const char *disk_dir(void)
{
	const char *d = getenv("TMPDIR");

	return d && *d ? d : "/tmp";
}

/* Each key's bytes are its own, so a buffer served for the wrong key or with stale bytes shows. */
static uint32_t seed_of(const struct cache_key *k)
{
	return (uint32_t)(k->stream * 100003u + k->seg * 7u + 1);
}

static struct cache_buf *make_buf(const struct cache_key *k, size_t len)
{
	struct cache_buf *b = cache_buf_new(len);

	if (!b) {
		fprintf(stderr, "out of memory\n");
		exit(1);
	}
	tu_fill(b->data, len, seed_of(k), 0);
	return b;
}

static bool buf_is(const struct cache_buf *b, const struct cache_key *k, size_t len)
{
	struct cache_buf *want;
	bool same;

	if (!b || b->len != len)
		return false;
	want = make_buf(k, len);
	same = memcmp(b->data, want->data, len) == 0;
	cache_buf_put(want);
	return same;
}

/* Reserves k (it must be free), publishes len bytes of its own under it and returns the buffer
 * with the caller's reference, or drops that reference when keep is false (returns NULL). */
static struct cache_buf *publish(struct cache *c, const struct cache_key *k, size_t len, bool keep)
{
	struct cache_buf *b;

	CHECK(cache_try_reserve(c, k));
	b = make_buf(k, len);
	cache_publish(c, k, b);
	if (keep)
		return b;
	cache_buf_put(b);
	return NULL;
}

static void report(int line, const struct cache_key *k, const char *what)
{
	fprintf(stderr, "%s:%d: key %llu/%llu: %s\n", __FILE__, line, (unsigned long long)k->stream,
		(unsigned long long)k->seg, what);
	tu_failures++;
}

/* A cache_get that must hit: the referenced buffer, or NULL after a failed check (the
 * reservation the miss made is dropped, so that the test goes on without a hang). */
static struct cache_buf *get_hit(int line, struct cache *c, const struct cache_key *k)
{
	struct cache_buf *b;

	if (cache_get(c, k, &b) == 0)
		return b;
	report(line, k, "a miss, expected a hit");
	cache_abandon(c, k);
	return NULL;
}

/* A hit on k with the right bytes; the reference is dropped. */
static void expect_hit(int line, struct cache *c, const struct cache_key *k, size_t len)
{
	struct cache_buf *b = get_hit(line, c, k);

	if (b && !buf_is(b, k, len))
		report(line, k, "a hit with wrong bytes");
	cache_buf_put(b);
}

/* A miss on k (the reservation is dropped again). */
static void expect_miss(int line, struct cache *c, const struct cache_key *k)
{
	struct cache_buf *b = NULL;

	if (cache_get(c, k, &b) == 1)
		cache_abandon(c, k);
	else
		report(line, k, buf_is(b, k, b->len) ? "a hit (its own bytes), expected a miss"
						      : "a hit (wrong bytes), expected a miss");
	cache_buf_put(b);
}

/* (variadic: a key written as a compound literal has commas) */
#define GET_HIT(...) get_hit(__LINE__, __VA_ARGS__)
#define EXPECT_HIT(...) expect_hit(__LINE__, __VA_ARGS__)
#define EXPECT_MISS(...) expect_miss(__LINE__, __VA_ARGS__)

static struct cache_stats stats(struct cache *c)
{
	struct cache_stats s;

	cache_get_stats(c, &s);
	return s;
}

static int refs(struct cache_buf *b)
{
	return atomic_load(&b->refs);
}

/* Bytes the cache charges for a buffer of len bytes (data plus bookkeeping), measured. */
static uint64_t charge_of(size_t len)
{
	struct cache *c = cache_new(1u << 30);
	struct cache_key k = {1, 1};
	uint64_t bytes;

	publish(c, &k, len, false);
	bytes = stats(c).bytes;
	cache_free(c);
	CHECK(bytes >= len);
	return bytes;
}

/* A thread that makes one cache call: cache_get(k), or cache_free(c). */
struct caller {
	struct cache *c;
	struct cache_key k;
	bool free_it;
	pthread_t th;
	pid_t tid;
	atomic_int state; /* 0: starting, 1: in the call, 2: returned */
	int ret;
	struct cache_buf *out;
};

static void *caller_main(void *arg)
{
	struct caller *t = arg;

	t->tid = gettid();
	atomic_store(&t->state, 1);
	if (t->free_it)
		cache_free(t->c);
	else
		t->ret = cache_get(t->c, &t->k, &t->out);
	atomic_store(&t->state, 2);
	return NULL;
}

static void start_get(struct caller *t, struct cache *c, const struct cache_key *k)
{
	*t = (struct caller){.c = c, .k = *k};
	if (pthread_create(&t->th, NULL, caller_main, t)) {
		fprintf(stderr, "pthread_create failed\n");
		exit(1);
	}
}

static void start_free(struct caller *t, struct cache *c)
{
	*t = (struct caller){.c = c, .free_it = true};
	if (pthread_create(&t->th, NULL, caller_main, t)) {
		fprintf(stderr, "pthread_create failed\n");
		exit(1);
	}
}

static bool returned(struct caller *t)
{
	return atomic_load(&t->state) == 2;
}

/* In the call and asleep there: blocked inside the cache (nothing else in these tests holds
 * the cache's lock for long, so a sleeping caller waits for a reservation or for room). */
static bool blocked(struct caller *t)
{
	return atomic_load(&t->state) == 1 && tu_thread_state(t->tid) == 'S';
}

/* Waits until t is blocked in its call or has returned; true if blocked. */
static bool wait_blocked(struct caller *t)
{
	TU_WAIT(blocked(t) || returned(t));
	return !returned(t);
}

static void join(struct caller *t)
{
	TU_WAIT(returned(t));
	pthread_join(t->th, NULL);
}

/* ---- memory only ---- */

struct id_job {
	struct cache *c;
	uint64_t ids[1000];
};

static void *take_ids(void *arg)
{
	struct id_job *j = arg;

	for (int i = 0; i < 1000; i++)
		j->ids[i] = cache_new_stream_id(j->c);
	return NULL;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* Stream ids are distinct (also when threads take them at once), and two streams' keys with
 * the same segment number are two entries. */
static void test_stream_ids(void)
{
	struct cache *c = cache_new(1u << 20);
	struct id_job *jobs = calloc(4, sizeof(*jobs));
	uint64_t *all = malloc(4002 * sizeof(*all));
	pthread_t th[4];
	size_t n = 0;

	uint64_t a = cache_new_stream_id(c), b = cache_new_stream_id(c);
	CHECK(a != b);
	for (int i = 0; i < 4; i++) {
		jobs[i].c = c;
		CHECK_EQ(pthread_create(&th[i], NULL, take_ids, &jobs[i]), 0);
	}
	for (int i = 0; i < 4; i++) {
		pthread_join(th[i], NULL);
		memcpy(all + n, jobs[i].ids, sizeof(jobs[i].ids));
		n += 1000;
	}
	all[n++] = a;
	all[n++] = b;
	qsort(all, n, sizeof(*all), cmp_u64);
	for (size_t i = 1; i < n; i++)
		CHECK(all[i] != all[i - 1]);

	struct cache_key ka = {a, 5}, kb = {b, 5};
	publish(c, &ka, 1000, false);
	EXPECT_MISS(c, &kb);
	EXPECT_HIT(c, &ka, 1000);
	free(all);
	free(jobs);
	cache_free(c);
}

/* cache_mem.c: sizes round up by at most a step; a freed block is what the next request of
 * its size (or up to 1/4 smaller) gets, bytes still there; past CM_KEEP free bytes, blocks
 * are handed back (cold) and still reused; requests over CM_MAX are malloc's. */
static void test_mem(void)
{
	struct cmem_stats s0, s;
	unsigned c1, c2;

	cmem_get_stats(&s0);
	uint8_t *a = cmem_alloc(100000, &c1);
	CHECK(a);
	CHECK(cmem_size(c1) >= 100000 && cmem_size(c1) < 100000 + (4 << 10));
	memset(a, 0x5a, 100000);
	cmem_get_stats(&s);
	CHECK_EQ(s.used_bytes, s0.used_bytes + cmem_size(c1));
	cmem_free(a, c1);
	uint8_t *b = cmem_alloc(100000, &c2);
	CHECK(b == a && c2 == c1); /* reused ... */
	CHECK(b[64] == 0x5a && b[99999] == 0x5a); /* ... resident: not handed back */
	cmem_free(b, c2);
	b = cmem_alloc(90000, &c2); /* within 5/4 of it */
	CHECK(b == a && c2 == c1);
	cmem_free(b, c2);
	b = cmem_alloc(50000, &c2); /* not */
	CHECK(b && b != a && cmem_size(c2) < 50000 + (4 << 10));
	cmem_free(b, c2);
	b = cmem_alloc(CM_MAX - 100, &c2);
	CHECK(b && cmem_size(c2) == CM_MAX);
	memset(b, 1, CM_MAX - 100);
	cmem_free(b, c2);
	b = cmem_alloc(CM_MAX + 1, &c2);
	CHECK(b && c2 == CM_BIG && cmem_size(c2) == 0);
	memset(b, 1, CM_MAX + 1);
	cmem_free(b, c2);
	cmem_free(NULL, 0);

	/* with a cache's budget to grow into, the ahead thread populates up to 16 MiB (CM_AHEAD)
	 * past what was handed out, and no more */
	cmem_expect(256 << 20);
	b = cmem_alloc(200000, &c2); /* new memory (no free block of its size): it wakes */
	CHECK(b);
	/* the alloc woke it (busy from then on: cache_int.h); once it sleeps with nothing wanted it
	 * has done all it will: at least 8 MiB, at most 16 MiB and the one huge page it was at
	 * when the mark was passed */
	TU_WAIT((cmem_get_stats(&s), !s.ahead_busy));
	CHECK(s.prefaulted - s0.prefaulted >= (8u << 20));
	CHECK(s.prefaulted <= s.carved + (16u << 20) + (2u << 20));
	cmem_free(b, c2);
	cmem_expect(-(256 << 20));

	/* 96 blocks of 1 MiB freed: 64 MiB stay resident, the rest are handed back */
	enum { N = 96 };
	static uint8_t *v[N];
	unsigned cls[N];
	for (int i = 0; i < N; i++) {
		CHECK((v[i] = cmem_alloc(1u << 20, &cls[i])) != NULL);
		memset(v[i], i, 1u << 20);
	}
	for (int i = 0; i < N; i++)
		cmem_free(v[i], cls[i]);
	cmem_get_stats(&s);
	CHECK(s.hot_bytes <= (64u << 20));
	CHECK(s.cold_bytes >= (uint64_t)(N - 64) << 20);
	CHECK_EQ(s.used_bytes, s0.used_bytes);
	uint64_t mapped = s.mapped;
	for (int i = 0; i < N; i++) /* all of them again: no new memory */
		CHECK((v[i] = cmem_alloc(1u << 20, &cls[i])) != NULL);
	cmem_get_stats(&s);
	CHECK_EQ(s.mapped, mapped);
	CHECK_EQ(s.cold_bytes, 0);
	for (int i = 0; i < N; i++) {
		memset(v[i], 0xff, 1u << 20); /* cold ones fault in again */
		cmem_free(v[i], cls[i]);
	}
}

static void test_buffers(void)
{
	struct cache_buf *b = cache_buf_new(100), *z = cache_buf_new(0);

	CHECK(b && z);
	CHECK_EQ(b->len, 100);
	CHECK_EQ(z->len, 0);
	CHECK_EQ(refs(b), 1); /* the caller's */
	cache_buf_ref(b);
	CHECK_EQ(refs(b), 2);
	cache_buf_put(b);
	CHECK_EQ(refs(b), 1);
	cache_buf_put(b); /* the last one frees it (the sanitizer build sees a leak otherwise) */
	cache_buf_put(z);
	cache_buf_put(NULL);
	cache_free(NULL);
}

/* One thread: a miss reserves, publish fills, hits share the published buffer, abandon frees
 * the key; the statistics count it all. */
static void test_protocol(void)
{
	struct cache *c = cache_new(1u << 20);
	struct cache_key k = {1, 1}, k2 = {1, 2};
	struct cache_buf *b, *out = (struct cache_buf *)&k; /* must be cleared */
	uint64_t ch = charge_of(1000);

	CHECK_EQ(cache_get(c, &k, &out), 1);
	CHECK(out == NULL);
	CHECK(!cache_contains(c, &k));	  /* reserved is not present ... */
	CHECK(!cache_try_reserve(c, &k)); /* ... nor free (and try_reserve did not wait) */
	struct cache_stats s = stats(c);
	CHECK_EQ(s.misses, 1);
	CHECK_EQ(s.hits, 0);
	CHECK_EQ(s.bytes, 0);

	b = make_buf(&k, 1000);
	cache_publish(c, &k, b);
	CHECK_EQ(refs(b), 2); /* the caller keeps its own; the cache took one */
	CHECK(cache_contains(c, &k));
	CHECK_EQ(refs(b), 2); /* contains takes no reference */
	CHECK(!cache_try_reserve(c, &k));
	out = GET_HIT(c, &k);
	CHECK(out == b);
	CHECK_EQ(refs(b), 3);
	cache_buf_put(out);
	cache_buf_put(b); /* the cache's reference alone keeps it */
	CHECK_EQ(refs(b), 1);
	EXPECT_HIT(c, &k, 1000);
	s = stats(c);
	CHECK_EQ(s.hits, 2);
	CHECK_EQ(s.misses, 1);
	CHECK_EQ(s.bytes, ch);
	CHECK_EQ(s.entries, 1);
	CHECK_EQ(s.evictions, 0);

	/* abandon: the key is free again, a miss again */
	CHECK(cache_try_reserve(c, &k2));
	CHECK(!cache_try_reserve(c, &k2));
	CHECK(!cache_contains(c, &k2));
	cache_abandon(c, &k2);
	CHECK(!cache_contains(c, &k2));
	CHECK(cache_try_reserve(c, &k2));
	cache_abandon(c, &k2);
	EXPECT_MISS(c, &k2);
	s = stats(c);
	CHECK_EQ(s.misses, 2); /* try_reserve counts no miss */
	CHECK_EQ(s.bytes, ch); /* an abandoned key costs nothing */
	CHECK_EQ(s.entries, 1);

	/* a reference outlives the cache itself */
	out = GET_HIT(c, &k);
	cache_free(c);
	CHECK(out && refs(out) == 1);
	CHECK(buf_is(out, &k, 1000));
	cache_buf_put(out);
}

/* Getters of a reserved key wait for it and all get the published buffer. */
static void test_wait_publish(void)
{
	struct cache *c = cache_new(1u << 20);
	struct cache_key k = {1, 7};
	struct caller t[3];
	struct cache_buf *out;

	CHECK_EQ(cache_get(c, &k, &out), 1);
	for (int i = 0; i < 3; i++)
		start_get(&t[i], c, &k);
	for (int i = 0; i < 3; i++)
		CHECK(wait_blocked(&t[i])); /* no one returns while the key is reserved */
	struct cache_buf *b = make_buf(&k, 5000);
	cache_publish(c, &k, b);
	for (int i = 0; i < 3; i++) {
		join(&t[i]);
		CHECK_EQ(t[i].ret, 0);
		CHECK(t[i].out == b);
	}
	CHECK_EQ(refs(b), 5); /* ours, the cache's, the three getters' */
	struct cache_stats s = stats(c);
	CHECK_EQ(s.misses, 1); /* one decode for four requests */
	CHECK_EQ(s.hits, 3);
	for (int i = 0; i < 3; i++)
		cache_buf_put(t[i].out);
	cache_buf_put(b);
	cache_free(c);
}

/* An abandon wakes the waiters; one of them takes the reservation over (a miss), the other
 * goes on waiting, for that one, and gets what it publishes. */
static void test_wait_abandon(void)
{
	struct cache *c = cache_new(1u << 20);
	struct cache_key k = {1, 8};
	struct caller t[2];
	struct cache_buf *out;

	CHECK_EQ(cache_get(c, &k, &out), 1);
	start_get(&t[0], c, &k);
	start_get(&t[1], c, &k);
	CHECK(wait_blocked(&t[0]));
	CHECK(wait_blocked(&t[1]));
	cache_abandon(c, &k);
	TU_WAIT(returned(&t[0]) || returned(&t[1]));
	struct caller *won = returned(&t[0]) ? &t[0] : &t[1], *other = won == &t[0] ? &t[1] : &t[0];
	pthread_join(won->th, NULL);
	CHECK_EQ(won->ret, 1); /* the reservation is its now */
	CHECK(won->out == NULL);
	CHECK(wait_blocked(other));
	CHECK(!cache_try_reserve(c, &k)); /* reserved (by won) */
	struct cache_buf *b = make_buf(&k, 3000);
	cache_publish(c, &k, b); /* on won's behalf: it decoded the segment */
	join(other);
	CHECK_EQ(other->ret, 0);
	CHECK(other->out == b);
	struct cache_stats s = stats(c);
	CHECK_EQ(s.misses, 2);
	CHECK_EQ(s.hits, 1);
	cache_buf_put(other->out);
	cache_buf_put(b);

	/* an abandon by the last holder with no waiter leaves nothing behind */
	CHECK_EQ(cache_get(c, &(struct cache_key){1, 9}, &out), 1);
	cache_abandon(c, &(struct cache_key){1, 9});
	CHECK_EQ(stats(c).entries, 1);
	cache_free(c);
}

/* The budget holds and the least recently used entry goes first; cache_contains does not
 * count as a use; a reader's reference survives the eviction of its entry. */
static void test_lru(void)
{
	const size_t L = 1000;
	uint64_t ch = charge_of(L), over = ch - L; /* per-entry bookkeeping */
	struct cache *c = cache_new(3 * ch);
	struct cache_key k[10];
	struct cache_buf *held;

	for (uint64_t i = 0; i < 10; i++)
		k[i] = (struct cache_key){1, i};
	publish(c, &k[0], L, false);
	publish(c, &k[1], L, false);
	publish(c, &k[2], L, false);
	struct cache_stats s = stats(c);
	CHECK_EQ(s.bytes, 3 * ch);
	CHECK_EQ(s.entries, 3);
	CHECK_EQ(s.evictions, 0);
	held = GET_HIT(c, &k[0]); /* 0 is used: 1 is now the oldest */
	publish(c, &k[3], L, false);
	CHECK(!cache_contains(c, &k[1]));
	CHECK(cache_contains(c, &k[0]) && cache_contains(c, &k[2]) && cache_contains(c, &k[3]));
	s = stats(c);
	CHECK_EQ(s.evictions, 1);
	CHECK_EQ(s.bytes, 3 * ch);
	/* order, newest first: 3 0 2.  contains(2) is no use: 2 goes next */
	CHECK(cache_contains(c, &k[2]));
	publish(c, &k[4], L, false);
	CHECK(!cache_contains(c, &k[2]));
	CHECK(cache_contains(c, &k[0]) && cache_contains(c, &k[3]) && cache_contains(c, &k[4]));
	/* order: 4 3 0.  0 goes while a reader still holds it */
	publish(c, &k[5], L, false);
	CHECK(!cache_contains(c, &k[0]));
	CHECK(held && refs(held) == 1); /* the reader's alone */
	CHECK(buf_is(held, &k[0], L));
	cache_buf_put(held);
	CHECK_EQ(stats(c).evictions, 3);
	/* order: 5 4 3.  A buffer charged two entries evicts the two oldest */
	publish(c, &k[6], (size_t)(2 * ch - over), false);
	CHECK(!cache_contains(c, &k[3]) && !cache_contains(c, &k[4]));
	CHECK(cache_contains(c, &k[5]) && cache_contains(c, &k[6]));
	s = stats(c);
	CHECK_EQ(s.bytes, 3 * ch);
	CHECK_EQ(s.evictions, 5);
	/* one charged more than the whole budget is handed back, not kept; nothing is evicted */
	struct cache_buf *big = publish(c, &k[7], (size_t)(3 * ch - over + 1), true);
	CHECK_EQ(refs(big), 1);
	CHECK(!cache_contains(c, &k[7]));
	CHECK(cache_contains(c, &k[5]) && cache_contains(c, &k[6]));
	s = stats(c);
	CHECK_EQ(s.evictions, 5);
	CHECK_EQ(s.bytes, 3 * ch);
	cache_buf_put(big);
	EXPECT_MISS(c, &k[7]);
	/* one charged exactly the budget is kept, alone */
	publish(c, &k[8], (size_t)(3 * ch - over), false);
	CHECK(cache_contains(c, &k[8]));
	CHECK(!cache_contains(c, &k[5]) && !cache_contains(c, &k[6]));
	s = stats(c);
	CHECK_EQ(s.bytes, 3 * ch);
	CHECK_EQ(s.entries, 1);
	cache_free(c);
}

/* Random sizes: after every publish the bytes stay within the budget and are exactly the
 * charges of the entries present, and those are the newest ones (nothing is read meanwhile). */
static void test_budget(void)
{
	const uint64_t budget = 100000, over = charge_of(1) - 1;
	struct cache *c = cache_new(budget);
	size_t len[300];
	uint32_t x = 12345;

	for (uint64_t i = 0; i < 300; i++) {
		struct cache_key k = {3, i};
		x = x * 1103515245 + 12345;
		len[i] = 1 + (x >> 8) % 30000;
		publish(c, &k, len[i], false);
		CHECK(cache_contains(c, &k));
		CHECK(stats(c).bytes <= budget);
	}
	uint64_t sum = 0, present = 0, newest_gone = UINT64_MAX;
	for (uint64_t i = 300; i-- > 0;) {
		struct cache_key k = {3, i};
		if (cache_contains(c, &k)) {
			CHECK(newest_gone == UINT64_MAX); /* the present ones are the newest */
			sum += len[i] + over;
			present++;
		} else if (newest_gone == UINT64_MAX) {
			newest_gone = i;
		}
	}
	struct cache_stats s = stats(c);
	CHECK_EQ(s.bytes, sum);
	CHECK_EQ(s.entries, present);
	CHECK_EQ(s.evictions, 300 - present);
	/* no entry went that did not have to: the last one evicted did not fit beside the rest */
	CHECK(newest_gone < 300 && sum + len[newest_gone] + over > budget);
	cache_free(c);
}

/* drop_stream removes that stream's published entries and no other's; a reference held on
 * one stays good; a reservation pending in the stream is not disturbed. */
static void test_drop_stream(void)
{
	uint64_t ch = charge_of(2000);
	struct cache *c = cache_new(1u << 20);
	uint64_t s1 = cache_new_stream_id(c), s2 = cache_new_stream_id(c);
	struct cache_key pend = {s1, 99};
	struct cache_buf *held, *out;

	for (uint64_t i = 0; i < 3; i++) {
		publish(c, &(struct cache_key){s1, i}, 2000, false);
		publish(c, &(struct cache_key){s2, i}, 2000, false);
	}
	held = GET_HIT(c, &(struct cache_key){s1, 1});
	CHECK(cache_try_reserve(c, &pend));
	cache_drop_stream(c, s1);
	for (uint64_t i = 0; i < 3; i++) {
		CHECK(!cache_contains(c, &(struct cache_key){s1, i}));
		CHECK(cache_contains(c, &(struct cache_key){s2, i}));
	}
	CHECK_EQ(stats(c).bytes, 3 * ch);
	CHECK(held && refs(held) == 1);
	CHECK(buf_is(held, &(struct cache_key){s1, 1}, 2000));
	cache_buf_put(held);
	CHECK(!cache_try_reserve(c, &pend)); /* still reserved */
	cache_abandon(c, &pend);
	CHECK_EQ(cache_get(c, &pend, &out), 1);
	cache_abandon(c, &pend);
	cache_drop_stream(c, 12345); /* a stream with nothing cached */
	CHECK_EQ(stats(c).entries, 3);
	cache_free(c);
}

/* cache_room and cache_set_disk's results: the memory budget, or the disk tier's size. */
static void test_room(void)
{
	struct cache *c = cache_new(12345);

	CHECK_EQ(cache_room(c), 12345);
	struct cache_stats s = stats(c);
	CHECK_EQ(s.budget, 12345);
	CHECK_EQ(s.disk_size, 0);
	CHECK_EQ(cache_set_disk(c, disk_dir(), 0), 0); /* size 0: no disk tier */
	CHECK_EQ(cache_room(c), 12345);
	CHECK_EQ(cache_set_disk(c, "/nonexistent/tarseek-test", 1u << 20), -ENOENT);
	CHECK_EQ(cache_room(c), 12345); /* and the cache works without */
	CHECK_EQ(stats(c).disk_size, 0);
	publish(c, &(struct cache_key){1, 1}, 100, false);
	EXPECT_HIT(c, &(struct cache_key){1, 1}, 100);
	cache_free(c);

	c = cache_new(1000);
	CHECK_EQ(cache_set_disk(c, disk_dir(), 3u << 20), 0);
	CHECK_EQ(cache_room(c), 3u << 20);
	s = stats(c);
	CHECK_EQ(s.budget, 1000);
	CHECK_EQ(s.disk_size, 3u << 20);
	CHECK_EQ(s.disk_bytes, 0);
	CHECK_EQ(s.disk_writes, 0);
	cache_free(c); /* the writer was never started */
}

/* Threads hammer a few keys through a small cache (with a disk tier behind it when disk):
 * no two threads ever hold a reservation of one key at once, and every hit has its key's
 * bytes. */
struct stress {
	struct cache *c;
	atomic_int busy[48]; /* a thread is "decoding" the key */
	atomic_uint gets, clashes, wrong;
};

struct stress_job {
	struct stress *st;
	uint32_t seed;
};

static void *stress_main(void *arg)
{
	struct stress_job *j = arg;
	struct stress *st = j->st;
	uint32_t x = j->seed;

	for (int i = 0; i < 3000; i++) {
		x = x * 1103515245 + 12345;
		struct cache_key k = {1, (x >> 8) % 48};
		size_t len = 2000 + (size_t)k.seg * 10;
		struct cache_buf *b;
		atomic_fetch_add(&st->gets, 1);
		if (cache_get(st->c, &k, &b) == 0) {
			if (!buf_is(b, &k, len))
				atomic_fetch_add(&st->wrong, 1);
			cache_buf_put(b);
			continue;
		}
		if (atomic_exchange(&st->busy[k.seg], 1))
			atomic_fetch_add(&st->clashes, 1);
		b = (x >> 4) % 10 ? make_buf(&k, len) : NULL; /* one in ten "fails to decode" */
		atomic_store(&st->busy[k.seg], 0);
		if (b) {
			cache_publish(st->c, &k, b);
			cache_buf_put(b);
		} else {
			cache_abandon(st->c, &k);
		}
	}
	return NULL;
}

static void test_stress(bool disk)
{
	struct stress *st = calloc(1, sizeof(*st));
	struct stress_job jobs[4];
	pthread_t th[4];

	st->c = cache_new(8 * charge_of(2500));
	if (disk)
		CHECK_EQ(cache_set_disk(st->c, disk_dir(), 256u << 10), 0);
	for (int i = 0; i < 4; i++) {
		jobs[i] = (struct stress_job){st, (uint32_t)i * 7919u + 1};
		CHECK_EQ(pthread_create(&th[i], NULL, stress_main, &jobs[i]), 0);
	}
	for (int i = 0; i < 4; i++)
		pthread_join(th[i], NULL);
	CHECK_EQ(atomic_load(&st->clashes), 0);
	CHECK_EQ(atomic_load(&st->wrong), 0);
	struct cache_stats s = stats(st->c);
	CHECK_EQ(s.hits + s.misses, atomic_load(&st->gets));
	CHECK(s.bytes <= s.budget);
	CHECK(s.disk_bytes <= s.disk_size);
	if (disk)
		CHECK(s.disk_hits > 0);
	cache_free(st->c);
	free(st);
}

/* ---- the disk tier ---- */

static uint64_t disk_writes(struct cache *c)
{
	return stats(c).disk_writes;
}

/* A cache whose memory holds nothing (every buffer is charged more than a budget of 0 and is
 * only handed to its reader), with a disk tier of size bytes: every hit is the disk tier's. */
static struct cache *disk_only(uint64_t size)
{
	struct cache *c = cache_new(0);

	CHECK_EQ(cache_set_disk(c, disk_dir(), size), 0);
	return c;
}

/* Segments evicted from memory come back from the disk tier, bytes intact; a segment read
 * back is in memory again and is not written again when evicted once more; a segment is
 * written when it is evicted, never while it is in memory; two getters of a segment on disk
 * cost one disk read. */
static void test_disk_roundtrip(void)
{
	const size_t L = 10000;
	struct cache *c = cache_new(2 * charge_of(L));
	struct caller t[2];

	CHECK_EQ(cache_set_disk(c, disk_dir(), 1u << 20), 0);
	for (uint64_t i = 0; i < 10; i++) {
		struct cache_buf *b = publish(c, &(struct cache_key){1, i}, L, true);
		CHECK_EQ(refs(b), 2); /* ours and memory's: nothing queued for the disk */
		cache_buf_put(b);
	}
	TU_WAIT(disk_writes(c) == 8); /* the 8 evicted; 8 and 9 are in memory */
	struct cache_stats s = stats(c);
	CHECK_EQ(s.disk_bytes, 8 * L);
	CHECK_EQ(s.disk_hits, 0);
	CHECK(!cache_contains(c, &(struct cache_key){1, 0}));
	CHECK(cache_contains(c, &(struct cache_key){1, 9}));
	for (uint64_t i = 0; i < 8; i++) {
		EXPECT_HIT(c, &(struct cache_key){1, i}, L);
		CHECK(cache_contains(c, &(struct cache_key){1, i}));
		CHECK_EQ(stats(c).disk_hits, i + 1);
	}
	s = stats(c);
	CHECK_EQ(s.misses, 0);
	CHECK(s.bytes <= s.budget);
	/* 8 and 9 were evicted on the way (written), 0 .. 5 again (on the disk already: not) */
	TU_WAIT(disk_writes(c) == 10);
	unsigned writes = atomic_load(&io.nwrites);

	/* both getters of segment 9 (on disk only now) get one buffer from one read */
	struct cache_key k9 = {1, 9};
	CHECK(!cache_contains(c, &k9));
	unsigned reads = atomic_load(&io.nreads);
	io_gate(&io.hold_reads, true);
	start_get(&t[0], c, &k9);
	TU_WAIT(atomic_load(&io.reads_held) == 1);
	start_get(&t[1], c, &k9);
	CHECK(wait_blocked(&t[1])); /* waits for the reservation the disk read holds */
	io_gate(&io.hold_reads, false);
	join(&t[0]);
	join(&t[1]);
	CHECK_EQ(t[0].ret, 0);
	CHECK_EQ(t[1].ret, 0);
	CHECK(t[0].out == t[1].out);
	CHECK(buf_is(t[0].out, &k9, L));
	CHECK_EQ(atomic_load(&io.nreads) - reads, 1);
	CHECK_EQ(stats(c).disk_hits, 9);
	cache_buf_put(t[0].out);
	cache_buf_put(t[1].out);
	CHECK_EQ(atomic_load(&io.nwrites), writes); /* 6 evicted by 9: on the disk already */
	CHECK_EQ(disk_writes(c), 10);
	cache_free(c);
}

/* A slot whose bytes changed on disk fails its CRC: a miss, never the wrong bytes, and the
 * slot is forgotten. */
static void test_disk_crc(void)
{
	const size_t L = 10000;
	struct cache *c = disk_only(1u << 20);
	unsigned first = atomic_load(&io.nwrites);

	for (uint64_t i = 0; i < 3; i++)
		publish(c, &(struct cache_key){1, i}, L, false);
	TU_WAIT(disk_writes(c) == 3);
	uint64_t off = io_write_offset(first + 1); /* segment 1's slot */
	uint8_t byte;
	int fd = atomic_load(&io.fd);
	CHECK_EQ(syscall(SYS_pread64, fd, &byte, 1, off + 1234), 1);
	byte ^= 0x20;
	CHECK_EQ(syscall(SYS_pwrite64, fd, &byte, 1, off + 1234), 1);
	EXPECT_MISS(c, &(struct cache_key){1, 1});
	CHECK_EQ(stats(c).disk_hits, 0);
	unsigned reads = atomic_load(&io.nreads);
	EXPECT_MISS(c, &(struct cache_key){1, 1});
	CHECK_EQ(atomic_load(&io.nreads), reads); /* forgotten: not read again */
	EXPECT_HIT(c, &(struct cache_key){1, 0}, L);
	EXPECT_HIT(c, &(struct cache_key){1, 2}, L);
	CHECK_EQ(stats(c).disk_hits, 2);
	cache_free(c);
}

/* A disk read that races with a write reusing its slot's bytes (the ring came round while it
 * read) is a miss, never the new segment's bytes. */
static void test_disk_read_race(void)
{
	const size_t L = 10000;
	struct cache *c = disk_only(4 * L); /* four slots */
	struct cache_key k = {1, 0};
	struct caller t;
	unsigned first = atomic_load(&io.nwrites);

	publish(c, &k, L, false);
	TU_WAIT(disk_writes(c) == 1);
	io_gate(&io.hold_reads, true);
	start_get(&t, c, &k);
	TU_WAIT(atomic_load(&io.reads_held) == 1);
	for (uint64_t i = 1; i <= 4; i++)
		publish(c, &(struct cache_key){1, i}, L, false);
	TU_WAIT(disk_writes(c) == 5);
	CHECK_EQ(io_write_offset(first + 4), io_write_offset(first)); /* segment 4 took 0's bytes */
	io_gate(&io.hold_reads, false);
	join(&t);
	CHECK_EQ(t.ret, 1); /* a miss: t holds the reservation now */
	CHECK(t.out == NULL);
	cache_abandon(c, &k);
	CHECK_EQ(stats(c).disk_hits, 0);
	for (uint64_t i = 1; i <= 4; i++)
		EXPECT_HIT(c, &(struct cache_key){1, i}, L);
	cache_free(c);
}

/* A failed or short write never serves: the segment is a miss. */
static void test_disk_write_error(void)
{
	const size_t L = 10000;
	struct cache *c = disk_only(1u << 20);
	struct cache_buf *b[2];

	for (int i = 0; i < 2; i++) {
		pthread_mutex_lock(&io.lock);
		io.fail_writes = i == 0 ? EIO : -1; /* an error, then a short write */
		pthread_mutex_unlock(&io.lock);
		b[i] = publish(c, &(struct cache_key){1, (uint64_t)i}, L, true);
		TU_WAIT(refs(b[i]) == 1); /* the writer is done with it */
	}
	pthread_mutex_lock(&io.lock);
	io.fail_writes = 0;
	pthread_mutex_unlock(&io.lock);
	EXPECT_MISS(c, &(struct cache_key){1, 0});
	EXPECT_MISS(c, &(struct cache_key){1, 1});
	struct cache_stats s = stats(c);
	CHECK_EQ(s.disk_writes, 0);
	CHECK_EQ(s.disk_hits, 0);
	CHECK(s.disk_bytes <= s.disk_size);
	cache_buf_put(b[0]);
	cache_buf_put(b[1]);
	cache_free(c);
}

/* A miss also looks in the writer's queue (and at the write in progress): while the writer is
 * held in its first write, segments evicted from memory before they reached the disk are
 * served from the queue -- the very buffers published. */
static void test_disk_queue(void)
{
	const size_t L = 10000;
	struct cache *c = cache_new(charge_of(L)); /* memory for one */
	struct cache_buf *b[4];

	CHECK_EQ(cache_set_disk(c, disk_dir(), 1u << 20), 0);
	io_gate(&io.hold_writes, true);
	b[0] = publish(c, &(struct cache_key){1, 0}, L, true);
	CHECK_EQ(refs(b[0]), 2); /* in memory: not queued */
	b[1] = publish(c, &(struct cache_key){1, 1}, L, true); /* evicts 0: the writer takes it */
	TU_WAIT(atomic_load(&io.writes_held) == 1);
	for (uint64_t i = 2; i < 4; i++)
		b[i] = publish(c, &(struct cache_key){1, i}, L, true); /* 1 and 2 queued */
	CHECK(!cache_contains(c, &(struct cache_key){1, 0}));
	CHECK(!cache_contains(c, &(struct cache_key){1, 1}));
	for (uint64_t i = 0; i < 3; i++) {
		struct cache_buf *out = GET_HIT(c, &(struct cache_key){1, i});
		CHECK(out == b[i]);
		cache_buf_put(out);
	}
	struct cache_stats s = stats(c);
	CHECK_EQ(s.disk_writes, 0);
	CHECK_EQ(s.disk_hits, 3);
	CHECK_EQ(s.misses, 0);
	io_gate(&io.hold_writes, false);
	/* 0, 1, 2, and 3 (evicted when 0 came back); 0 and 1, evicted again, were not queued
	 * twice */
	TU_WAIT(disk_writes(c) == 4);
	for (int i = 0; i < 4; i++)
		TU_WAIT(refs(b[i]) <= 2); /* ours and perhaps memory's: the writer's is gone */
	for (uint64_t i = 0; i < 4; i++) {
		cache_buf_put(b[i]);
		EXPECT_HIT(c, &(struct cache_key){1, i}, L);
	}
	CHECK(stats(c).disk_hits >= 6); /* 3 of the 4 come from the disk now */
	CHECK_EQ(disk_writes(c), 4);
	cache_free(c);
}

/* cache_park (before a fork, common/pool.h): the writer writes what is queued and is joined,
 * the fault-ahead thread too -- no job of the cache runs -- and the next eviction starts a
 * writer again. */
static void test_disk_park(void)
{
	const size_t L = 10000;
	struct cache *c = cache_new(charge_of(L)); /* memory for one */
	struct cache_buf *b[4];
	unsigned threads, idle;

	CHECK_EQ(cache_set_disk(c, disk_dir(), 1u << 20), 0);
	io_gate(&io.hold_writes, true);
	for (uint64_t i = 0; i < 3; i++) /* 0 and 1 evicted: one being written, one queued */
		b[i] = publish(c, &(struct cache_key){1, i}, L, true);
	TU_WAIT(atomic_load(&io.writes_held) == 1);
	io_gate(&io.hold_writes, false);
	cache_park(c);
	CHECK_EQ(disk_writes(c), 2);
	pool_counts(&threads, &idle, NULL);
	CHECK_EQ(threads, idle);
	b[3] = publish(c, &(struct cache_key){1, 3}, L, true); /* evicts 2 */
	TU_WAIT(disk_writes(c) == 3);
	for (int i = 0; i < 4; i++)
		cache_buf_put(b[i]);
	EXPECT_HIT(c, &(struct cache_key){1, 1}, L);
	cache_free(c);
	pool_counts(&threads, &idle, NULL);
	CHECK_EQ(threads, idle); /* the last cache freed: no fault-ahead thread either */
}

/* At most 16 MiB wait for the writer: a publish past that waits for room (its segment is
 * served meanwhile), and goes on when the writer moves. */
struct filler {
	struct cache *c;
	atomic_int done; /* publishes returned */
	struct caller self;
};

static void *fill_main(void *arg)
{
	struct filler *f = arg;

	f->self.tid = gettid();
	atomic_store(&f->self.state, 1);
	for (uint64_t i = 0; i < 24; i++) {
		struct cache_key k = {1, i};
		struct cache_buf *b = cache_buf_new(1u << 20);
		memset(b->data, (int)i, b->len);
		CHECK(cache_try_reserve(f->c, &k));
		cache_publish(f->c, &k, b);
		cache_buf_put(b);
		atomic_fetch_add(&f->done, 1);
	}
	atomic_store(&f->self.state, 2);
	return NULL;
}

static void test_disk_backpressure(void)
{
	struct filler f = {.c = cache_new(4u << 20)};
	struct cache_buf *out;
	pthread_t th;

	CHECK_EQ(cache_set_disk(f.c, disk_dir(), 128u << 20), 0);
	io_gate(&io.hold_writes, true);
	CHECK_EQ(pthread_create(&th, NULL, fill_main, &f), 0);
	TU_WAIT(atomic_load(&io.writes_held) == 1);
	/* 3 in memory, then each publish evicts one: 16 MiB waiting (the one in the write
	 * counted), and the filler stays blocked in its 20th publish.  (done >= 19 first: asleep
	 * a moment earlier, in malloc say, is not the queue's doing) */
	TU_WAIT(atomic_load(&f.done) >= 19 && (blocked(&f.self) || returned(&f.self)));
	CHECK(!returned(&f.self));
	int done = atomic_load(&f.done);
	CHECK(done <= 20);
	/* the segment whose publish waits is served meanwhile */
	out = GET_HIT(f.c, &(struct cache_key){1, (uint64_t)done});
	CHECK(out && out->len == 1u << 20 && out->data[0] == done && out->data[(1u << 20) - 1] == done);
	cache_buf_put(out);
	io_gate(&io.hold_writes, false);
	TU_WAIT(returned(&f.self));
	pthread_join(th, NULL);
	TU_WAIT(disk_writes(f.c) == 21); /* the 3 last ones are in memory */
	for (uint64_t i = 0; i < 24; i += 7) {
		out = GET_HIT(f.c, &(struct cache_key){1, i});
		CHECK(out && out->len == 1u << 20 && out->data[12345] == (uint8_t)i);
		cache_buf_put(out);
	}
	cache_free(f.c);
}

/* The ring: with slots of one size, the newest segments that fit are there and the older ones
 * are gone; with mixed sizes, what hits has its bytes, the live slots are the newest ones,
 * they add up to disk_bytes, which stays within the size. */
static void test_disk_ring(void)
{
	const size_t L = 10000, S = 8 * L;
	struct cache *c = disk_only(S);

	for (uint64_t i = 0; i < 20; i++)
		publish(c, &(struct cache_key){1, i}, L, false);
	TU_WAIT(disk_writes(c) == 20);
	struct cache_stats s = stats(c);
	CHECK_EQ(s.disk_bytes, S);
	for (uint64_t i = 0; i < 12; i++)
		EXPECT_MISS(c, &(struct cache_key){1, i});
	for (uint64_t i = 12; i < 20; i++)
		EXPECT_HIT(c, &(struct cache_key){1, i}, L);
	cache_free(c);

	const size_t S2 = 256u << 10;
	size_t len[80];
	uint32_t x = 99;
	c = disk_only(S2);
	for (uint64_t i = 0; i < 80; i++) {
		x = x * 1103515245 + 12345;
		len[i] = S2 / 16 + (x >> 8) % (S2 / 4 - S2 / 16 + 1); /* up to the tier's limit */
		publish(c, &(struct cache_key){2, i}, len[i], false);
	}
	TU_WAIT(disk_writes(c) == 80);
	s = stats(c);
	CHECK(s.disk_bytes <= S2);
	CHECK(s.disk_bytes >= S2 - 2 * (S2 / 4)); /* a wrap wastes less than two slots */
	uint64_t live = 0;
	bool gone = false, suffix = true, newest = false;
	for (uint64_t i = 80; i-- > 0;) {
		struct cache_key k = {2, i};
		struct cache_buf *b;
		if (cache_get(c, &k, &b) == 0) {
			CHECK(buf_is(b, &k, len[i]));
			cache_buf_put(b);
			suffix = suffix && !gone;
			newest = newest || i == 79;
			live += len[i];
		} else {
			cache_abandon(c, &k);
			gone = true;
		}
	}
	CHECK(suffix);
	CHECK(newest);
	CHECK_EQ(live, s.disk_bytes); /* every slot in use is found, nothing else */
	cache_free(c);

	/* A wrap while a slot of the lap before still lies past the head (cache.c: "at a wrap,
	 * the slots left past the old head go too"): in 120 kB, lap one is 30 30 20 20 20 kB;
	 * lap two 30 30 20 15 kB, up to 95 kB, short of lap one's last slot at 100 kB; the
	 * next 30 kB wrap.  Lap one's last slot goes, and so does lap two's first, which the new
	 * one overwrites. */
	static const size_t laps[10] = {30000, 30000, 20000, 20000, 20000,
					30000, 30000, 20000, 15000, 30000};
	c = disk_only(120000);
	for (uint64_t i = 0; i < 10; i++)
		publish(c, &(struct cache_key){4, i}, laps[i], false);
	TU_WAIT(disk_writes(c) == 10);
	CHECK_EQ(stats(c).disk_bytes, 30000 + 20000 + 15000 + 30000);
	for (uint64_t i = 0; i < 6; i++)
		EXPECT_MISS(c, &(struct cache_key){4, i});
	for (uint64_t i = 6; i < 10; i++)
		EXPECT_HIT(c, &(struct cache_key){4, i}, laps[i]);

	/* a buffer larger than a quarter of the tier is not written (nor queued) */
	struct cache_buf *big = publish(c, &(struct cache_key){3, 0}, 120000 / 4 + 1, true);
	CHECK_EQ(refs(big), 1);
	cache_buf_put(big);
	EXPECT_MISS(c, &(struct cache_key){3, 0});
	cache_free(c);
}

/* A segment larger than the whole memory budget is still served by the disk tier. */
static void test_disk_beyond_ram(void)
{
	struct cache *c = cache_new(charge_of(1000));
	struct cache_key k = {1, 1};

	CHECK_EQ(cache_set_disk(c, disk_dir(), 1u << 20), 0);
	publish(c, &k, 200000, false);
	CHECK(!cache_contains(c, &k));
	TU_WAIT(disk_writes(c) == 1);
	EXPECT_HIT(c, &k, 200000);
	EXPECT_HIT(c, &k, 200000);
	CHECK_EQ(stats(c).disk_hits, 2);
	cache_free(c);
}

/* A secret buffer (decrypted bytes) is never written to the disk tier: evicted, it is gone,
 * and the writer never had it (the plain buffer published after it is written alone). */
static void test_disk_secret(void)
{
	const size_t L = 5000;
	struct cache *c = disk_only(1u << 20);
	struct cache_key ks = {1, 0}, kp = {1, 1};
	struct cache_buf *b;

	CHECK(cache_try_reserve(c, &ks));
	b = make_buf(&ks, L);
	b->secret = true;
	cache_publish(c, &ks, b);
	CHECK_EQ(refs(b), 1); /* evicted at once (no memory), and not queued for the disk */
	cache_buf_put(b);
	b = publish(c, &kp, L, true);
	CHECK(!b->secret);
	TU_WAIT(disk_writes(c) == 1);
	TU_WAIT(refs(b) == 1);
	CHECK_EQ(stats(c).disk_bytes, L);
	EXPECT_MISS(c, &ks);
	EXPECT_HIT(c, &kp, L);
	cache_buf_put(b);
	cache_free(c);
}

/* drop_stream also drops the stream's disk slots and its queued writes. */
static void test_disk_drop_stream(void)
{
	const size_t L = 5000;
	struct cache *c = disk_only(1u << 20);
	uint64_t s1 = cache_new_stream_id(c), s2 = cache_new_stream_id(c);

	for (uint64_t i = 0; i < 3; i++) {
		publish(c, &(struct cache_key){s1, i}, L, false);
		publish(c, &(struct cache_key){s2, i}, L, false);
	}
	TU_WAIT(disk_writes(c) == 6);
	io_gate(&io.hold_writes, true);
	publish(c, &(struct cache_key){s2, 3}, L, false); /* in the write */
	TU_WAIT(atomic_load(&io.writes_held) == 1);
	struct cache_buf *q1 = publish(c, &(struct cache_key){s1, 4}, L, true); /* queued */
	struct cache_buf *q2 = publish(c, &(struct cache_key){s2, 4}, L, true);
	CHECK_EQ(refs(q1), 2);
	cache_drop_stream(c, s1);
	CHECK_EQ(refs(q1), 1); /* its write was dropped */
	CHECK_EQ(refs(q2), 2);
	for (uint64_t i = 0; i < 3; i++) {
		EXPECT_MISS(c, &(struct cache_key){s1, i});
		EXPECT_HIT(c, &(struct cache_key){s2, i}, L);
	}
	EXPECT_MISS(c, &(struct cache_key){s1, 4});
	io_gate(&io.hold_writes, false);
	TU_WAIT(refs(q2) == 1);
	CHECK_EQ(disk_writes(c), 8);
	EXPECT_HIT(c, &(struct cache_key){s2, 3}, L);
	EXPECT_HIT(c, &(struct cache_key){s2, 4}, L);
	cache_buf_put(q1);
	cache_buf_put(q2);
	cache_free(c);
}

/* cache_free while the writer is in a write with more queued: the queued buffers are dropped
 * unwritten, cache_free waits for the write in progress, and every reference the cache held
 * (memory, queue, writer) is gone once it returns. */
static void test_free_busy(void)
{
	const size_t L = 10000;
	struct cache *c = cache_new(charge_of(L)); /* memory for one: each publish evicts */
	struct cache_buf *b[3];
	struct caller t;

	CHECK_EQ(cache_set_disk(c, disk_dir(), 1u << 20), 0);
	io_gate(&io.hold_writes, true);
	unsigned writes = atomic_load(&io.nwrites);
	b[0] = publish(c, &(struct cache_key){1, 0}, L, true);
	b[1] = publish(c, &(struct cache_key){1, 1}, L, true); /* 0 to the writer */
	TU_WAIT(atomic_load(&io.writes_held) == 1);
	b[2] = publish(c, &(struct cache_key){1, 2}, L, true); /* 1 queued */
	for (int i = 0; i < 3; i++)
		CHECK_EQ(refs(b[i]), 2); /* ours, and the writer's, the queue's or memory's */
	start_free(&t, c);
	TU_WAIT(refs(b[1]) == 1); /* the queue is emptied ... */
	CHECK(wait_blocked(&t));  /* ... and cache_free waits for the write */
	CHECK_EQ(refs(b[0]), 2);
	CHECK_EQ(refs(b[2]), 2); /* memory is emptied after */
	io_gate(&io.hold_writes, false);
	join(&t);
	for (int i = 0; i < 3; i++) {
		CHECK_EQ(refs(b[i]), 1);
		CHECK(buf_is(b[i], &(struct cache_key){1, (uint64_t)i}, L));
		cache_buf_put(b[i]);
	}
	CHECK_EQ(atomic_load(&io.nwrites) - writes, 1); /* the queued one was not written */
}

/* The write in progress when cache_drop_stream() runs is dropped too: not served while it is
 * written, not mapped once written. */
static void test_drop_in_flight(void)
{
	struct cache *c = disk_only(1u << 20);
	uint64_t s1 = cache_new_stream_id(c);
	struct cache_key k = {s1, 0};
	struct cache_buf *b;

	io_gate(&io.hold_writes, true);
	b = publish(c, &k, 5000, true);
	TU_WAIT(atomic_load(&io.writes_held) == 1);
	cache_drop_stream(c, s1);
	EXPECT_MISS(c, &k); /* not served from the write in progress */
	io_gate(&io.hold_writes, false);
	TU_WAIT(refs(b) == 1);
	EXPECT_MISS(c, &k); /* its slot is not mapped after the drop */
	cache_buf_put(b);
	cache_free(c);
}

int main(void)
{
	tu_watchdog(120); /* for a call that blocks when it should not: the waits are bounded */
	test_mem();
	test_buffers();
	test_stream_ids();
	test_protocol();
	test_wait_publish();
	test_wait_abandon();
	test_lru();
	test_budget();
	test_drop_stream();
	test_room();
	test_stress(false);
	test_disk_roundtrip();
	test_disk_crc();
	test_disk_read_race();
	test_disk_write_error();
	test_disk_queue();
	test_disk_park();
	test_disk_backpressure();
	test_disk_ring();
	test_disk_beyond_ram();
	test_disk_drop_stream();
	test_disk_secret();
	test_free_busy();
	test_stress(true);
	test_drop_in_flight();
	return tu_exit();
}
