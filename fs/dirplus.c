/* Which entries of a listing carry their attributes (see dirplus.h).
 *
 * The folders listed bare are a set of inode numbers (open addressing, linear probing, 0 is
 * never an inode), under one mutex; the listing path takes it once per listing that left an
 * entry bare, which is a few per folder.  Once every attribute is given the set is emptied
 * and stays empty.
 */
#include "tfs.h" /* FUSE_USE_VERSION, fuse_lowlevel.h */
#include "dirplus.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "../common/log.h"

struct dirplus {
	atomic_bool all;	/* every entry carries its attributes */
	_Atomic unsigned lookups; /* of non-folders, while not all */
	_Atomic pid_t walker;
	pthread_mutex_t lock;
	uint64_t *set; /* folders listed bare, 0 = free slot */
	size_t cap, n; /* cap a power of two, or 0 */
};

struct dirplus *dp_new(void)
{
	struct dirplus *dp = calloc(1, sizeof(*dp));

	if (!dp)
		return NULL;
	atomic_init(&dp->all, false);
	atomic_init(&dp->lookups, 0);
	atomic_init(&dp->walker, 0);
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

bool dp_attrs(struct dirplus *dp, pid_t requester, bool folder)
{
	return folder || atomic_load_explicit(&dp->all, memory_order_relaxed) ||
	       (requester && requester == atomic_load_explicit(&dp->walker, memory_order_relaxed));
}

bool dp_all_attrs(struct dirplus *dp)
{
	return atomic_load(&dp->all);
}

static size_t slot(const struct dirplus *dp, uint64_t ino)
{
	return (size_t)((ino * 0x9e3779b97f4a7c15ull) >> 20) & (dp->cap - 1);
}

/* Inserts ino (lock held).  False if there is no memory (then it is not remembered: its
 * listing stays bare until the kernel forgets it -- LOOKUPs, not wrong answers). */
static bool set_add(struct dirplus *dp, uint64_t ino)
{
	if ((dp->n + 1) * 2 > dp->cap) {
		size_t cap = dp->cap ? dp->cap * 2 : 256;
		uint64_t *old = dp->set, *set = calloc(cap, sizeof(*set));
		size_t ocap = dp->cap;
		if (!set)
			return false;
		dp->set = set;
		dp->cap = cap;
		for (size_t i = 0; i < ocap; i++) {
			if (!old[i])
				continue;
			size_t k = slot(dp, old[i]);
			while (set[k])
				k = (k + 1) & (cap - 1);
			set[k] = old[i];
		}
		free(old);
	}
	size_t k = slot(dp, ino);
	while (dp->set[k] && dp->set[k] != ino)
		k = (k + 1) & (dp->cap - 1);
	if (!dp->set[k]) {
		dp->set[k] = ino;
		dp->n++;
	}
	return true;
}

/* Removes ino (lock held): true if it was there. */
static bool set_take(struct dirplus *dp, uint64_t ino)
{
	if (!dp->n)
		return false;
	size_t k = slot(dp, ino);
	while (dp->set[k] != ino) {
		if (!dp->set[k])
			return false;
		k = (k + 1) & (dp->cap - 1);
	}
	dp->set[k] = 0;
	dp->n--;
	/* the entries after it in its run move up, so that no probe stops short of them */
	for (size_t j = (k + 1) & (dp->cap - 1); dp->set[j]; j = (j + 1) & (dp->cap - 1)) {
		uint64_t v = dp->set[j];
		dp->set[j] = 0;
		size_t h = slot(dp, v);
		while (dp->set[h])
			h = (h + 1) & (dp->cap - 1);
		dp->set[h] = v;
	}
	return true;
}

void dp_listed_bare(struct dirplus *dp, uint64_t dir)
{
	pthread_mutex_lock(&dp->lock);
	if (!atomic_load(&dp->all)) /* else the set is done with */
		set_add(dp, dir);
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
	uint64_t *set = dp->set;
	size_t cap = dp->cap;
	dp->set = NULL;
	dp->cap = dp->n = 0;
	pthread_mutex_unlock(&dp->lock);
	for (size_t i = 0; i < cap; i++)
		if (set[i])
			invalidate(se, set[i]);
	free(set);
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
