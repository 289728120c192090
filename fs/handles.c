/* Open files and directories by inode (see handles.h).
 *
 * A chained hash table of handles keyed by (inode, kind), and an LRU list of all of them,
 * most recent first.  A handle in use (refs > 0) is never closed: one that is replaced (a
 * fresh listing) or evicted while in use is taken out of the table and the list, marked
 * dead, and closed by the th_put that drops its last use.
 */
#include "fs/handles.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>

#include "common/hash.h"

struct th_ref {
	uint64_t ino;
	bool dir;
	bool dead; /* out of the table: closed when the last use ends */
	unsigned refs;
	void *obj; /* struct un_file * or struct un_dir * */
	struct th_ref *hnext;
	struct th_ref *prev, *next; /* LRU, head = most recent */
};

#define TH_BUCKETS 4096

struct th {
	struct un *un;
	size_t max;
	pthread_mutex_t lock;
	/* protected by lock: */
	struct th_ref *table[TH_BUCKETS];
	struct th_ref *head, *tail;
	size_t n;
};

static size_t th_bucket(uint64_t ino, bool dir)
{
	return (size_t)(hash_pair(ino, dir) & (TH_BUCKETS - 1));
}

static void th_close(struct th_ref *r)
{
	if (r->dir)
		un_closedir(r->obj);
	else
		un_close(r->obj);
	free(r);
}

static void lru_unlink(struct th *h, struct th_ref *r)
{
	if (r->prev)
		r->prev->next = r->next;
	else
		h->head = r->next;
	if (r->next)
		r->next->prev = r->prev;
	else
		h->tail = r->prev;
	r->prev = r->next = NULL;
}

static void lru_push(struct th *h, struct th_ref *r)
{
	r->prev = NULL;
	r->next = h->head;
	if (h->head)
		h->head->prev = r;
	h->head = r;
	if (!h->tail)
		h->tail = r;
}

/* Takes r out of the table and the list (lock held).  Returns r if it can be closed now. */
static struct th_ref *th_remove(struct th *h, struct th_ref *r)
{
	struct th_ref **p = &h->table[th_bucket(r->ino, r->dir)];

	while (*p != r)
		p = &(*p)->hnext;
	*p = r->hnext;
	lru_unlink(h, r);
	h->n--;
	r->dead = true;
	return r->refs ? NULL : r;
}

static struct th_ref *th_find(struct th *h, uint64_t ino, bool dir)
{
	for (struct th_ref *r = h->table[th_bucket(ino, dir)]; r; r = r->hnext)
		if (r->ino == ino && r->dir == dir)
			return r;
	return NULL;
}

struct th *th_new(struct un *u, size_t max)
{
	struct th *h = calloc(1, sizeof(*h));

	if (!h)
		return NULL;
	h->un = u;
	h->max = max ? max : 1;
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
		lru_unlink(h, r);
		lru_push(h, r);
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
		if (dir)
			un_closedir(made);
		else
			un_close(made);
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
		lru_unlink(h, r);
		lru_push(h, r);
		stale = nr;
		nr = r;
	} else {
		if (r)
			drop[ndrop++] = th_remove(h, r);
		size_t b = th_bucket(ino, dir);
		nr->hnext = h->table[b];
		h->table[b] = nr;
		lru_push(h, nr);
		h->n++;
		/* past max: the least recently used idle handles go (a few per call) */
		for (struct th_ref *old = h->tail, *prev; old && h->n > h->max && ndrop < 8;
		     old = prev) {
			prev = old->prev;
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
	while (h->head) {
		struct th_ref *r = h->head;
		th_remove(h, r);
		th_close(r);
	}
	pthread_mutex_destroy(&h->lock);
	free(h);
}
