/* Unit tests of common/'s primitives: the thread pool, the hash table, the list, the log
 * ring. */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/hash.h"
#include "common/htable.h"
#include "common/list.h"
#include "common/log.h"
#include "common/pool.h"
#include "testutil.h"

static void *add_one(void *arg)
{
	return (void *)((uintptr_t)arg + 1);
}

/* Two jobs that wait for each other: a queue behind one thread would deadlock. */
struct pingpong {
	atomic_int a_ready, b_ready;
};

static void *ping(void *arg)
{
	struct pingpong *p = arg;
	atomic_store(&p->a_ready, 1);
	while (!atomic_load(&p->b_ready))
		sched_yield();
	return NULL;
}

static void *pong(void *arg)
{
	struct pingpong *p = arg;
	atomic_store(&p->b_ready, 1);
	while (!atomic_load(&p->a_ready))
		sched_yield();
	return NULL;
}

static void *my_nice(void *arg)
{
	(void)arg;
	errno = 0;
	int n = getpriority(PRIO_PROCESS, (id_t)syscall(SYS_gettid));
	return (void *)(intptr_t)(n + 100);
}

static pthread_key_t own_key;
static atomic_int own_freed;

static void own_destructor(void *v)
{
	free(v);
	atomic_fetch_add(&own_freed, 1);
}

/* Keeps something under a thread-local key, as libfuse keeps its pipe per thread. */
static void *keep_local(void *arg)
{
	pthread_setspecific(own_key, malloc(24));
	return arg;
}

/* pool_start_own: a thread of the job's own, joined by pool_join, so its thread-local
 * storage is freed (the key's destructor has run) when pool_join returns; it is never kept
 * idle or reused. */
static void test_pool_own(void)
{
	struct pool_job *j = NULL;
	unsigned threads, idle, t0, i0;
	unsigned long started, s0;

	CHECK_EQ(pthread_key_create(&own_key, own_destructor), 0);
	pool_counts(&t0, &i0, &s0);
	for (int round = 1; round <= 2; round++) {
		CHECK_EQ(pool_start_own(keep_local, (void *)7, "t-own", 0, &j), 0);
		CHECK_EQ((uintptr_t)pool_join(j), 7);
		CHECK_EQ(atomic_load(&own_freed), round);
		pool_counts(&threads, &idle, &started);
		CHECK_EQ(threads, t0);
		CHECK_EQ(idle, i0);
		CHECK_EQ(started, s0 + (unsigned long)round);
	}
	/* a plain pool job keeps its thread, and with it what it keeps under the key */
	CHECK_EQ(pool_start(keep_local, NULL, "t-kept", 0, &j), 0);
	pool_join(j);
	CHECK_EQ(atomic_load(&own_freed), 2);
	pool_shutdown(); /* the idle thread ends: its destructor runs */
	CHECK_EQ(atomic_load(&own_freed), 3);
	pthread_key_delete(own_key);
}

static void test_pool(void)
{
	struct pool_job *j = NULL, *k = NULL;
	unsigned threads, idle;
	unsigned long started, before;

	pool_shutdown();
	pool_counts(&threads, &idle, &before);
	CHECK_EQ(threads, 0);
	CHECK_EQ(pool_start(add_one, (void *)41, "t-add", 0, &j), 0);
	CHECK_EQ((uintptr_t)pool_join(j), 42);
	/* the thread is kept and reused: a second job starts none */
	pool_counts(&threads, &idle, &started);
	CHECK_EQ(threads, 1);
	CHECK_EQ(idle, 1);
	CHECK_EQ(started, before + 1);
	CHECK_EQ(pool_start(add_one, (void *)1, "t-add", 0, &j), 0);
	CHECK_EQ((uintptr_t)pool_join(j), 2);
	pool_counts(&threads, &idle, &started);
	CHECK_EQ(started, before + 1);

	/* jobs that wait for each other both run */
	struct pingpong pp = {0};
	CHECK_EQ(pool_start(ping, &pp, "t-ping", 0, &j), 0);
	CHECK_EQ(pool_start(pong, &pp, "t-pong", 0, &k), 0);
	pool_join(j);
	pool_join(k);
	pool_counts(&threads, &idle, &started);
	CHECK_EQ(threads, 2);
	CHECK_EQ(idle, 2);

	/* a niced job runs on a thread of its own niceness, which no plain job takes */
	CHECK_EQ(pool_start(my_nice, NULL, "t-nice", 10, &j), 0);
	CHECK_EQ((intptr_t)pool_join(j), 110);
	CHECK_EQ(pool_start(my_nice, NULL, "t-plain", 0, &j), 0);
	CHECK_EQ((intptr_t)pool_join(j), 100);
	pool_counts(&threads, &idle, &started);
	CHECK_EQ(threads, 3);

	/* a forked child has none of the threads, and the pool works there */
	pid_t pid = fork();
	if (pid == 0) {
		struct pool_job *c = NULL;
		unsigned t2;
		pool_counts(&t2, NULL, NULL);
		if (t2 != 0 || pool_start(add_one, (void *)6, "t-child", 0, &c) < 0)
			_exit(1);
		_exit((uintptr_t)pool_join(c) == 7 ? 0 : 2);
	}
	int status = -1;
	CHECK(pid > 0 && waitpid(pid, &status, 0) == pid);
	CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);

	pool_shutdown();
	pool_counts(&threads, &idle, &started);
	CHECK_EQ(threads, 0);
	CHECK_EQ(idle, 0);
	CHECK_EQ(pool_join(NULL), NULL);
}

struct item {
	uint64_t key;
	struct htable_node node;
	struct list_node link;
	bool seen;
};

static struct item *find(struct htable *t, uint64_t key)
{
	for (struct htable_node *n = htable_first(t, hash_u64(key)); n; n = htable_next(n)) {
		struct item *it = htable_entry(n, struct item, node);
		if (it->key == key)
			return it;
	}
	return NULL;
}

static void test_htable(void)
{
	enum { N = 5000 };
	struct item *items = calloc(N, sizeof(*items));
	struct htable t = {0};

	CHECK(find(&t, 1) == NULL); /* a zeroed table is empty */
	for (unsigned i = 0; i < N; i++) {
		items[i].key = i * 7919ull;
		CHECK_EQ(htable_add(&t, &items[i].node, hash_u64(items[i].key)), 0);
	}
	CHECK_EQ(t.count, N);
	CHECK(t.mask + 1 >= N); /* it grew */
	for (unsigned i = 0; i < N; i++)
		CHECK(find(&t, i * 7919ull) == &items[i]);
	CHECK(find(&t, 3) == NULL);
	/* nodes of one hash: each found by its key */
	struct item same[3] = {{.key = 1}, {.key = 2}, {.key = 3}};
	struct htable u = {0};
	CHECK_EQ(htable_init(&u, 4), 0);
	for (int i = 0; i < 3; i++)
		htable_add(&u, &same[i].node, 99);
	int n = 0;
	for (struct htable_node *x = htable_first(&u, 99); x; x = htable_next(x))
		n++;
	CHECK_EQ(n, 3);
	htable_del(&u, &same[1].node);
	n = 0;
	for (struct htable_node *x = htable_first(&u, 99); x; x = htable_next(x))
		n += htable_entry(x, struct item, node)->key == 2 ? 100 : 1;
	CHECK_EQ(n, 2);
	htable_fini(&u);
	/* removal of every other node */
	for (unsigned i = 0; i < N; i += 2)
		htable_del(&t, &items[i].node);
	CHECK_EQ(t.count, N / 2);
	for (unsigned i = 0; i < N; i++)
		CHECK((find(&t, i * 7919ull) != NULL) == (i % 2 == 1));
	/* a walk sees each node once */
	size_t pos = 0, walked = 0;
	for (struct htable_node *x = htable_walk(&t, &pos, NULL); x; x = htable_walk(&t, &pos, x)) {
		struct item *it = htable_entry(x, struct item, node);
		CHECK(!it->seen);
		it->seen = true;
		walked++;
	}
	CHECK_EQ(walked, N / 2);
	/* pop empties it */
	size_t popped = 0;
	while (htable_pop(&t))
		popped++;
	CHECK_EQ(popped, N / 2);
	CHECK_EQ(t.count, 0);
	CHECK(find(&t, 7919) == NULL);
	htable_fini(&t);
	free(items);
}

static void test_list(void)
{
	struct item it[4] = {{.key = 0}, {.key = 1}, {.key = 2}, {.key = 3}};
	struct list_node head, *n, *tmp;

	list_init(&head);
	CHECK(list_empty(&head));
	CHECK(list_first(&head) == NULL);
	for (int i = 0; i < 4; i++) {
		list_init(&it[i].link);
		CHECK(!list_linked(&it[i].link));
		list_add_tail(&head, &it[i].link);
	}
	CHECK(list_entry(list_first(&head), struct item, link)->key == 0);
	CHECK(list_entry(list_last(&head), struct item, link)->key == 3);
	list_move_head(&head, &it[2].link);
	uint64_t order = 0;
	list_for_each_safe(n, tmp, &head) order = order * 10 + list_entry(n, struct item, link)->key;
	CHECK_EQ(order, 2013);
	list_del(&it[0].link);
	list_del(&it[0].link); /* harmless */
	CHECK(!list_linked(&it[0].link));
	list_for_each_safe(n, tmp, &head) list_del(n);
	CHECK(list_empty(&head));
}

static void quiet_sink(int level, const char *msg, void *opaque)
{
	(void)level, (void)msg, (void)opaque;
}

/* The log ring keeps the most recent messages, bounded in number and bytes, debug never;
 * a reader's buffer gets the newest lines that fit, whole, oldest first. */
static void test_log_ring(void)
{
	char *buf = malloc(TFS_LOG_RING_BYTES + 1);
	size_t n, lines = 0;

	tfs_log_set_sink(quiet_sink, NULL);
	CHECK_EQ(tfs_log_ring_read(buf, TFS_LOG_RING_BYTES), 0);
	tfs_log(TFS_LOG_ERR, "first %d", 1);
	tfs_log(TFS_LOG_DEBUG, "never kept");
	n = tfs_log_ring_read(buf, TFS_LOG_RING_BYTES);
	buf[n] = '\0';
	CHECK(strstr(buf, " error: first 1\n") != NULL);
	CHECK(strstr(buf, "never kept") == NULL);
	CHECK_EQ(tfs_log_ring_read(NULL, 0), n);
	/* many messages: the count bound */
	for (int i = 0; i < 10 * TFS_LOG_RING_MAX; i++)
		tfs_log(TFS_LOG_WARNING, "message %d", i);
	n = tfs_log_ring_read(buf, TFS_LOG_RING_BYTES);
	buf[n] = '\0';
	for (size_t i = 0; i < n; i++)
		lines += buf[i] == '\n';
	CHECK_EQ(lines, TFS_LOG_RING_MAX);
	CHECK(strstr(buf, "first 1") == NULL);
	CHECK(strstr(buf, "message 3999\n") != NULL && buf[n - 1] == '\n');
	CHECK(strstr(buf, "warning: message 3600\n") != NULL);
	CHECK(strstr(buf, "message 3599\n") == NULL);
	/* long messages: the byte bound */
	char big[1500];
	memset(big, 'x', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	for (int i = 0; i < 200; i++)
		tfs_log(TFS_LOG_NOTICE, "%d %s", i, big);
	n = tfs_log_ring_read(NULL, 0);
	CHECK(n <= TFS_LOG_RING_BYTES && n > TFS_LOG_RING_BYTES - 1600);
	CHECK_EQ(tfs_log_ring_read(buf, TFS_LOG_RING_BYTES), n);
	/* a small buffer: the newest whole lines that fit */
	n = tfs_log_ring_read(buf, 4000);
	CHECK(n > 1500 && n <= 4000 && buf[n - 1] == '\n');
	buf[n] = '\0';
	CHECK(strstr(buf, "notice: 199 ") != NULL && strstr(buf, "notice: 197 ") == NULL);
	CHECK_EQ(tfs_log_ring_read(buf, 100), 0);
	tfs_log_set_sink(NULL, NULL);
	free(buf);
}

int main(void)
{
	test_log_ring();
	test_pool();
	test_pool_own();
	test_htable();
	test_list();
	return tu_exit();
}
