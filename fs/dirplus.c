/* Which entries of a listing carry their attributes (see dirplus.h).
 *
 * The folders listed bare are a table of inode numbers with the number of entries each was
 * given bare since its listing last started over (open addressing, linear probing, 0 is never
 * an inode), under one mutex; a listing takes it twice per request, a few times per folder.
 * Once every attribute is given the table is emptied and stays empty.
 */
#include "tfs.h" /* FUSE_USE_VERSION, fuse_lowlevel.h */
#include "dirplus.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "../common/log.h"

struct dirplus {
	atomic_bool all;	/* every entry carries its attributes */
	_Atomic unsigned lookups; /* of non-folders, while not all */
	_Atomic pid_t walker;
	_Atomic unsigned long walker_starts; /* see dp_walker_starts */
	pthread_mutex_t lock;
	struct bare *set; /* folders listed bare */
	size_t cap, n;	  /* cap a power of two, or 0 */
};

struct bare {
	uint64_t ino; /* 0: a free slot */
	uint32_t n;   /* entries given bare since the listing last started over */
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
	pthread_mutex_init(&dp->lock, NULL);
	return dp;
}

void dp_free(struct dirplus *dp)
{
	if (!dp)
		return;
	pthread_mutex_destroy(&dp->lock);
	free(dp->set);
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

static size_t slot(const struct dirplus *dp, uint64_t ino)
{
	return (size_t)((ino * 0x9e3779b97f4a7c15ull) >> 20) & (dp->cap - 1);
}

/* ino's slot (lock held, table not empty): where it is, or the free slot it would go in. */
static struct bare *find(const struct dirplus *dp, uint64_t ino)
{
	size_t k = slot(dp, ino);

	while (dp->set[k].ino && dp->set[k].ino != ino)
		k = (k + 1) & (dp->cap - 1);
	return &dp->set[k];
}

/* ino's entry, made if need be (lock held).  NULL if there is no memory (then it is not
 * remembered: its listing stays bare until the kernel forgets it -- LOOKUPs, not wrong
 * answers). */
static struct bare *set_add(struct dirplus *dp, uint64_t ino)
{
	if ((dp->n + 1) * 2 > dp->cap) {
		size_t cap = dp->cap ? dp->cap * 2 : 256, ocap = dp->cap;
		struct bare *old = dp->set, *set = calloc(cap, sizeof(*set));
		if (!set)
			return NULL;
		dp->set = set;
		dp->cap = cap;
		for (size_t i = 0; i < ocap; i++)
			if (old[i].ino)
				*find(dp, old[i].ino) = old[i];
		free(old);
	}
	struct bare *b = find(dp, ino);
	if (!b->ino) {
		b->ino = ino;
		b->n = 0;
		dp->n++;
	}
	return b;
}

/* Removes ino (lock held): true if it was there. */
static bool set_take(struct dirplus *dp, uint64_t ino)
{
	if (!dp->n)
		return false;
	struct bare *b = find(dp, ino);
	if (!b->ino)
		return false;
	b->ino = 0;
	dp->n--;
	/* the entries after it in its run go in again, so that no probe stops short of them */
	for (size_t j = ((size_t)(b - dp->set) + 1) & (dp->cap - 1); dp->set[j].ino;
	     j = (j + 1) & (dp->cap - 1)) {
		struct bare v = dp->set[j];
		dp->set[j].ino = 0;
		*find(dp, v.ino) = v;
	}
	return true;
}

unsigned dp_bare_room(struct dirplus *dp, pid_t requester, uint64_t dir, bool from_start)
{
	unsigned room = DP_BARE_MAX;

	if (atomic_load_explicit(&dp->all, memory_order_relaxed) ||
	    (requester && requester == atomic_load_explicit(&dp->walker, memory_order_relaxed)))
		return 0;
	pthread_mutex_lock(&dp->lock);
	struct bare *b = dp->n ? find(dp, dir) : NULL;
	if (b && b->ino) {
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
	struct bare *set = dp->set;
	size_t cap = dp->cap;
	dp->set = NULL;
	dp->cap = dp->n = 0;
	pthread_mutex_unlock(&dp->lock);
	for (size_t i = 0; i < cap; i++)
		if (set[i].ino)
			invalidate(se, set[i].ino);
	free(set);
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
