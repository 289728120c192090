/* The union's tables (see union_int.h): its sources and its virtual nodes, and what a mount
 * inode number is.
 *
 * Virtual nodes -- merged folders, .versions folders, the root -- live in a table that only
 * grows: a node's contents are fixed when it is made, so readers use it without a lock once
 * they have its pointer; the table is a two-level array of pointers so it never moves.  The
 * one hash table (common/htable.h) over (parent inode, name) gives every virtual node one
 * inode for the mount's lifetime, however often it is looked up or listed.  Sources are
 * likewise a fixed array of pointers filled in order; their count is an atomic published
 * after the source is in place, so a reader that sees a source number sees the source.
 *
 * A leaf of the union: it calls no other file of it.
 */
#include "mount/union_int.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/hash.h"

struct vnode *un_vnode_at(struct un *u, uint64_t n)
{
	struct vnode *v = NULL;

	pthread_mutex_lock(&u->lock);
	if (n < u->nnodes)
		v = u->chunks[n / CHUNK][n % CHUNK];
	pthread_mutex_unlock(&u->lock);
	return v;
}

int un_decode(struct un *u, uint64_t ino, struct vnode **v, const struct source **s,
	      unsigned *src, uint64_t *local)
{
	*v = NULL;
	*s = NULL;
	if (ino == UN_ROOT || (ino & VIRT)) {
		*v = un_vnode_at(u, ino == UN_ROOT ? 0 : ino & ~VIRT);
		return *v ? 0 : -ENOENT;
	}
	uint64_t si = (ino >> SRC_SHIFT);
	if (si == 0 || si > atomic_load(&u->nsrc))
		return -ENOENT;
	*src = (unsigned)(si - 1);
	*s = u->src[*src];
	*local = ino & LOCAL_MASK;
	return 0;
}

static uint64_t name_hash(uint64_t parent, const char *name, size_t len)
{
	return hash_pair(parent, hash_bytes(name, len));
}

void un_vnode_free(struct vnode *v)
{
	if (!v)
		return;
	free(v->name);
	free(v->c);
	free(v->v);
	free(v);
}

/* The node already made for v's (parent, name, kind), or NULL (lock held). */
static struct vnode *vnode_find(struct un *u, const struct vnode *v, uint64_t h)
{
	for (struct htable_node *n = htable_first(&u->names, h); n; n = htable_next(n)) {
		struct vnode *found = htable_entry(n, struct vnode, h);
		if (found->parent == v->parent && found->len == v->len &&
		    memcmp(found->name, v->name, v->len) == 0 && found->kind == v->kind)
			return found;
	}
	return NULL;
}

struct vnode *un_vnode_add(struct un *u, struct vnode *v)
{
	uint64_t h = name_hash(v->parent, v->name, v->len);
	struct vnode *found = NULL;

	pthread_mutex_lock(&u->lock);
	if (v->kind != V_SOURCES)
		found = vnode_find(u, v, h);
	if (found) {
		pthread_mutex_unlock(&u->lock);
		un_vnode_free(v);
		return found;
	}
	size_t n = u->nnodes;
	if (n / CHUNK >= MAX_CHUNKS)
		goto fail;
	if (!u->chunks[n / CHUNK] && !(u->chunks[n / CHUNK] = calloc(CHUNK, sizeof(struct vnode *))))
		goto fail;
	if (htable_add(&u->names, &v->h, h) < 0)
		goto fail;
	v->ino = n == 0 ? UN_ROOT : (VIRT | n);
	v->attr.ino = v->ino;
	u->chunks[n / CHUNK][n % CHUNK] = v;
	u->nnodes++;
	pthread_mutex_unlock(&u->lock);
	return v;
fail:
	pthread_mutex_unlock(&u->lock);
	un_vnode_free(v);
	return NULL;
}

struct vnode *un_vnode_new(enum vkind kind, uint64_t parent, const char *name, size_t len)
{
	struct vnode *v = calloc(1, sizeof(*v));

	if (!v)
		return NULL;
	v->kind = kind;
	v->parent = parent;
	v->name = malloc(len + 1);
	if (!v->name) {
		free(v);
		return NULL;
	}
	memcpy(v->name, name, len);
	v->name[len] = '\0';
	v->len = len;
	return v;
}

/* A folder name for a new top source n (lock held): its name, else name.2, name.3, ...,
 * the first that no earlier source's folder has. */
static char *unique_folder(struct un *u, unsigned n, const char *name)
{
	char *cand = strdup(name);

	for (unsigned k = 2; cand; k++) {
		bool taken = false;
		for (unsigned j = 0; j < n && !taken; j++)
			taken = u->src[j]->folder && strcmp(u->src[j]->folder, cand) == 0;
		if (!taken)
			return cand;
		free(cand);
		if (asprintf(&cand, "%s.%u", name, k) < 0)
			cand = NULL;
	}
	return NULL;
}

/* The root merges every top source's root: source n's joins it (lock held).  0 or -ENOMEM. */
static int root_add(struct vnode *root, unsigned n, uint64_t local)
{
	struct contrib *c = realloc(root->c, (root->nc + 1) * sizeof(*c));

	if (!c)
		return -ENOMEM;
	c[root->nc] = (struct contrib){n, local};
	root->c = c;
	root->nc++;
	return 0;
}

int un_add_source(struct un *u, const struct tree_ops *ops, void *t, const char *name,
		  bool top, unsigned *idx)
{
	struct source *s = calloc(1, sizeof(*s));
	struct vnode *root = un_vnode_at(u, 0);
	struct arch_attr ra;
	unsigned n;
	int err = 0;

	if (!s || !(s->name = strdup(name))) {
		free(s);
		return -ENOMEM;
	}
	s->ops = ops;
	s->t = t;
	pthread_mutex_lock(&u->lock);
	n = atomic_load(&u->nsrc);
	if (n == MAX_SOURCES)
		err = -EOVERFLOW;
	else if (top && u->no_union && !(s->folder = unique_folder(u, n, name)))
		err = -ENOMEM;
	else if (top && !u->no_union) /* set up before the source is visible */
		err = root_add(root, n, ops->root);
	if (err) {
		pthread_mutex_unlock(&u->lock);
		free(s->folder);
		free(s->name);
		free(s);
		return err;
	}
	u->src[n] = s;
	*idx = n;
	atomic_store(&u->nsrc, n + 1);
	pthread_mutex_unlock(&u->lock);
	if (!top)
		return 0;
	err = ops->getattr(t, ops->root, &ra);
	if (!err && !u->no_union) { /* the root looks like the last source's root */
		ra.ino = UN_ROOT;
		if (n > 0)
			ra.nlink = 1; /* merged: unknown */
		root->attr = ra;
	}
	return 0;
}

void un_source_folder(struct un *u, unsigned i, char *buf, size_t size)
{
	snprintf(buf, size, "%s", u->src[i]->folder ? u->src[i]->folder : u->src[i]->name);
}
