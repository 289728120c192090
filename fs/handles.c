/* Open files and directories by inode (see handles.h).
 *
 * A hash table of handles keyed by (inode, kind) (common/htable.h, hash_pair of the two) and an
 * LRU list of all of them, most recent first (common/list.h), both through nodes embedded in
 * the handle: a lookup allocates nothing.  A handle in use (refs > 0) is never closed: one
 * that is replaced (a fresh listing) or evicted while in use is taken out of the table and the
 * list, marked dead, and closed by the th_put that drops its last use.
 */
#include "fs/handles.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>

#include "common/hash.h"
#include "common/htable.h"
#include "common/list.h"

struct th_ref {
	struct htable_node hnode; /* in th.table while not dead (first: a lookup reads it, then
				     the key) */
	uint64_t ino;
	bool dir;
	bool dead; /* out of the table: closed when the last use ends */
	unsigned refs;
	void *obj;	      /* struct un_file * or struct un_dir * */
	struct list_node lru; /* in th.lru while not dead, head = most recent */
};

struct th {
	struct un *un;
	size_t max;
	pthread_mutex_t lock;
	/* protected by lock: */
	struct htable table; /* the live handles */
	struct list_node lru;
};

static uint64_t th_hash(uint64_t ino, bool dir)
{
	return hash_pair(ino, dir);
}

/* Closes what un_open (dir false) or un_opendir made. */
static void close_obj(bool dir, void *obj)
{
	if (dir)
		un_closedir(obj);
	else
		un_close(obj);
}

static void th_close(struct th_ref *r)
{
	close_obj(r->dir, r->obj);
	free(r);
}

/* Takes r out of the table and the list (lock held).  Returns r if it can be closed now. */
static struct th_ref *th_remove(struct th *h, struct th_ref *r)
{
	htable_del(&h->table, &r->hnode);
	list_del(&r->lru);
	r->dead = true;
	return r->refs ? NULL : r;
}

static struct th_ref *th_find(struct th *h, uint64_t ino, bool dir)
{
	for (struct htable_node *n = htable_first(&h->table, th_hash(ino, dir)); n;
	     n = htable_next(n)) {
		struct th_ref *r = htable_entry(n, struct th_ref, hnode);
		if (r->ino == ino && r->dir == dir)
			return r;
	}
	return NULL;
}

struct th *th_new(struct un *u, size_t max)
{
	struct th *h = calloc(1, sizeof(*h));

	if (!h)
		return NULL;
	h->un = u;
	h->max = max ? max : 1;
	if (htable_init(&h->table, h->max) < 0) {
		free(h);
		return NULL;
	}
	list_init(&h->lru);
	pthread_mutex_init(&h->lock, NULL);
	return h;
}

/* The handle of (ino, dir), made with un_open/un_opendir if there is none (or if fresh). */
static int th_get(struct th *h, uint64_t ino, bool dir, bool fresh, void **obj,
		  struct th_ref **ref)
{
	struct th_ref *r, *stale = NULL;
	void *made = NULL;
	int err;

	*obj = NULL;
	*ref = NULL;
	pthread_mutex_lock(&h->lock);
	r = th_find(h, ino, dir);
	if (r && !fresh) {
		r->refs++;
		list_move_head(&h->lru, &r->lru);
		pthread_mutex_unlock(&h->lock);
		*obj = r->obj;
		*ref = r;
		return 0;
	}
	pthread_mutex_unlock(&h->lock);

	err = dir ? un_opendir(h->un, ino, (struct un_dir **)&made)
		  : un_open(h->un, ino, (struct un_file **)&made);
	if (err)
		return err;
	struct th_ref *nr = calloc(1, sizeof(*nr));
	if (!nr) {
		close_obj(dir, made);
		return -ENOMEM;
	}
	nr->ino = ino;
	nr->dir = dir;
	nr->obj = made;
	nr->refs = 1;

	struct th_ref *drop[8];
	size_t ndrop = 0;
	pthread_mutex_lock(&h->lock);
	r = th_find(h, ino, dir);
	if (r && !fresh) { /* another thread made one meanwhile: use it, close ours */
		r->refs++;
		list_move_head(&h->lru, &r->lru);
		stale = nr;
		nr = r;
	} else if (htable_add(&h->table, &nr->hnode, th_hash(ino, dir)) < 0) {
		stale = nr; /* cannot happen: the table has its buckets from th_new */
		nr = NULL;
	} else {
		if (r)
			drop[ndrop++] = th_remove(h, r);
		list_add_head(&h->lru, &nr->lru);
		/* past max: the least recently used idle handles go (a few per call) */
		for (struct list_node *n = h->lru.prev, *prev;
		     n != &h->lru && h->table.count > h->max && ndrop < 8; n = prev) {
			struct th_ref *old = list_entry(n, struct th_ref, lru);
			prev = n->prev;
			if (!old->refs)
				drop[ndrop++] = th_remove(h, old);
		}
	}
	pthread_mutex_unlock(&h->lock);
	if (stale)
		th_close(stale);
	for (size_t i = 0; i < ndrop; i++)
		if (drop[i])
			th_close(drop[i]);
	if (!nr)
		return -ENOMEM;
	*obj = nr->obj;
	*ref = nr;
	return 0;
}

int th_file(struct th *h, uint64_t ino, struct un_file **f, struct th_ref **ref)
{
	void *obj;
	int err = th_get(h, ino, false, false, &obj, ref);

	*f = obj;
	return err;
}

int th_dir(struct th *h, uint64_t ino, bool fresh, struct un_dir **d, struct th_ref **ref)
{
	void *obj;
	int err = th_get(h, ino, true, fresh, &obj, ref);

	*d = obj;
	return err;
}

void th_put(struct th *h, struct th_ref *r)
{
	bool close_now;

	if (!r)
		return;
	pthread_mutex_lock(&h->lock);
	close_now = --r->refs == 0 && r->dead;
	pthread_mutex_unlock(&h->lock);
	if (close_now)
		th_close(r);
}

void th_free(struct th *h)
{
	if (!h)
		return;
	while (!list_empty(&h->lru)) {
		struct th_ref *r = list_entry(list_first(&h->lru), struct th_ref, lru);
		th_remove(h, r);
		th_close(r);
	}
	htable_fini(&h->table);
	pthread_mutex_destroy(&h->lock);
	free(h);
}
