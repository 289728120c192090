/* Which entries of a listing carry their attributes (see dirplus.h).
 *
 * The folders listed bare are a table (common/htable.h, by hash_u64 of the inode) of records
 * holding the number of entries each was given bare since its listing last started over,
 * under one mutex; a listing takes it twice per request, a few times per folder, and a folder
 * costs one small allocation the first time it is listed bare.  Once every attribute is given
 * the table is emptied and stays empty.
 *
 * Lock: dirplus.lock guards the table; nothing is taken under it (the invalidations are sent
 * after it is let go).  It is taken under warmup.c's se_lock (dp_before_walk).
 */
#include "fs/tfs.h" /* FUSE_USE_VERSION, fuse_lowlevel.h */
#include "fs/dirplus.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "common/hash.h"
#include "common/htable.h"
#include "common/log.h"

struct dirplus {
	atomic_bool all;	/* every entry carries its attributes */
	_Atomic unsigned lookups; /* of non-folders, while not all */
	_Atomic pid_t walker;
	_Atomic unsigned long walker_starts; /* see dp_walker_starts */
	pthread_mutex_t lock;
	struct htable set; /* folders listed bare (struct bare), lock */
};

struct bare {
	struct htable_node node;
	uint64_t ino;
	uint32_t n; /* entries given bare since the listing last started over */
};

struct dirplus *dp_new(void)
{
	struct dirplus *dp = calloc(1, sizeof(*dp));

	if (!dp)
		return NULL;
	atomic_init(&dp->all, false);
	atomic_init(&dp->lookups, 0);
	atomic_init(&dp->walker, 0);
	atomic_init(&dp->walker_starts, 0);
	pthread_mutex_init(&dp->lock, NULL); /* a zeroed table is an empty one */
	return dp;
}

/* Frees every record of t and its buckets. */
static void set_clear(struct htable *t)
{
	for (struct htable_node *n; (n = htable_pop(t));)
		free(htable_entry(n, struct bare, node));
	htable_fini(t);
}

void dp_free(struct dirplus *dp)
{
	if (!dp)
		return;
	pthread_mutex_destroy(&dp->lock);
	set_clear(&dp->set);
	free(dp);
}

void dp_set_walker(struct dirplus *dp, pid_t tid)
{
	atomic_store(&dp->walker, tid);
}

bool dp_all_attrs(struct dirplus *dp)
{
	return atomic_load(&dp->all);
}

/* ino's record, or NULL (lock held). */
static struct bare *find(const struct dirplus *dp, uint64_t ino)
{
	for (struct htable_node *n = htable_first(&dp->set, hash_u64(ino)); n;
	     n = htable_next(n)) {
		struct bare *b = htable_entry(n, struct bare, node);
		if (b->ino == ino)
			return b;
	}
	return NULL;
}

/* ino's record, made if need be (lock held).  NULL if there is no memory (then it is not
 * remembered: its listing stays bare until the kernel forgets it -- LOOKUPs, not wrong
 * answers). */
static struct bare *set_add(struct dirplus *dp, uint64_t ino)
{
	struct bare *b = find(dp, ino);

	if (b)
		return b;
	b = calloc(1, sizeof(*b));
	if (!b)
		return NULL;
	b->ino = ino;
	if (htable_add(&dp->set, &b->node, hash_u64(ino)) < 0) {
		free(b);
		return NULL;
	}
	return b;
}

/* Removes ino (lock held): true if it was there. */
static bool set_take(struct dirplus *dp, uint64_t ino)
{
	struct bare *b = find(dp, ino);

	if (!b)
		return false;
	htable_del(&dp->set, &b->node);
	free(b);
	return true;
}

unsigned dp_bare_room(struct dirplus *dp, pid_t requester, uint64_t dir, bool from_start)
{
	unsigned room = DP_BARE_MAX;

	if (atomic_load_explicit(&dp->all, memory_order_relaxed) ||
	    (requester && requester == atomic_load_explicit(&dp->walker, memory_order_relaxed)))
		return 0;
	pthread_mutex_lock(&dp->lock);
	struct bare *b = find(dp, dir);
	if (b) {
		if (from_start)
			b->n = 0;
		room = b->n < DP_BARE_MAX ? DP_BARE_MAX - b->n : 0;
	}
	pthread_mutex_unlock(&dp->lock);
	if (atomic_load_explicit(&dp->walker, memory_order_relaxed))
		room = UINT_MAX; /* the walker lists every folder with every attribute anyway */
	return room;
}

void dp_listed_bare(struct dirplus *dp, uint64_t dir, unsigned n)
{
	pthread_mutex_lock(&dp->lock);
	struct bare *b = atomic_load(&dp->all) ? NULL : set_add(dp, dir); /* all: done with */
	if (b)
		b->n = b->n + n < b->n ? UINT32_MAX : b->n + n;
	pthread_mutex_unlock(&dp->lock);
}

static void invalidate(struct fuse_session *se, uint64_t dir)
{
	int err = se ? fuse_lowlevel_notify_inval_inode(se, dir, 0, 0) : -ENOTCONN;

	if (err && err != -ENOENT) /* ENOENT: the kernel no longer has it, nor its listing */
		tfs_log(TFS_LOG_DEBUG, "cannot drop the kernel's listing of %llu: %s",
			(unsigned long long)dir, strerror(-err));
}

void dp_looked_up(struct dirplus *dp, struct fuse_session *se, bool folder)
{
	if (folder || atomic_load_explicit(&dp->all, memory_order_relaxed) ||
	    atomic_fetch_add(&dp->lookups, 1) + 1 != DP_FLIP)
		return;
	pthread_mutex_lock(&dp->lock);
	atomic_store(&dp->all, true);
	struct htable set = dp->set; /* taken whole: dp's is empty from now on */
	memset(&dp->set, 0, sizeof(dp->set));
	pthread_mutex_unlock(&dp->lock);
	size_t pos = 0;
	for (struct htable_node *n = NULL; (n = htable_walk(&set, &pos, n));)
		invalidate(se, htable_entry(n, struct bare, node)->ino);
	set_clear(&set);
}

void dp_listing_request(struct dirplus *dp, pid_t requester, bool from_start)
{
	if (from_start && requester &&
	    requester == atomic_load_explicit(&dp->walker, memory_order_relaxed))
		atomic_fetch_add(&dp->walker_starts, 1);
}

unsigned long dp_walker_starts(struct dirplus *dp)
{
	return atomic_load(&dp->walker_starts);
}

void dp_drop_listing(struct dirplus *dp, struct fuse_session *se, uint64_t dir)
{
	pthread_mutex_lock(&dp->lock);
	set_take(dp, dir);
	pthread_mutex_unlock(&dp->lock);
	invalidate(se, dir);
}

bool dp_before_walk(struct dirplus *dp, struct fuse_session *se, uint64_t dir)
{
	pthread_mutex_lock(&dp->lock);
	bool bare = set_take(dp, dir);
	pthread_mutex_unlock(&dp->lock);
	if (bare)
		invalidate(se, dir);
	return bare;
}
