/* Archives inside the sources (-r; see union_int.h): a member of an archive flagged
 * ARCH_A_NESTED, or an archive file in a folder source, is shown as a folder whose content is
 * that archive, opened the first time it is reached (lookup, listing, getattr) as a source of
 * its own and then found again in a map by (source, member): the one hash table
 * (common/htable.h) under nested_lock.
 *
 * The archive is opened without nested_lock (arch_nested reads the index and may take the
 * archive's and the cache's locks; a folder source's archive is opened as a top-level one,
 * its index built if needed); two threads may both open it, and the one that comes second
 * closes its copy.  nested_lock is held across adding the source, which takes lock: the lock
 * order is nested_lock, then lock (the top of union.c).
 */
#include "mount/union_int.h"

#include <errno.h>
#include <stdlib.h>

#include "common/hash.h"
#include "common/may_block.h"
#include "index/archive.h"
#include "mount/dirtree.h"

/* An archive opened inside a source: member local of source src is source ns. */
struct nested {
	struct htable_node h; /* in u->nested, by hash_pair(src, local) */
	unsigned src;
	uint64_t local;
	unsigned ns;
};

/* The source already opened for member local of source src, if any (nested_lock held). */
static bool nested_find(struct un *u, unsigned src, uint64_t local, unsigned *ns)
{
	struct htable_node *n;

	for (n = htable_first(&u->nested, hash_pair(src, local)); n; n = htable_next(n)) {
		struct nested *e = htable_entry(n, struct nested, h);
		if (e->src == src && e->local == local) {
			*ns = e->ns;
			return true;
		}
	}
	return false;
}

/* Adds na (an archive opened for member local of source src) as a source and maps the member
 * to it (nested_lock held).  0, or -errno: na is still the caller's. */
static int nested_add(struct un *u, unsigned src, uint64_t local, struct arch *na, unsigned *ns)
{
	struct nested *e = calloc(1, sizeof(*e));
	int err;

	if (!e)
		return -ENOMEM;
	err = un_add_source(u, &tree_archive_ops, na, arch_get_info(na)->path, false, ns);
	if (err) {
		free(e);
		return err;
	}
	*e = (struct nested){.src = src, .local = local, .ns = *ns};
	(void)htable_add(&u->nested, &e->h, hash_pair(src, local)); /* has buckets: un_new's */
	return 0;
}

int un_resolve_nested(struct un *u, unsigned *src, struct arch_attr *a)
{
	struct source *s = u->src[*src];
	struct arch *na = NULL;
	unsigned ns = 0;
	bool found;
	int err = 0;

	if (!(a->flags & ARCH_A_NESTED) ||
	    (s->ops != &tree_archive_ops && !(s->ops == &tree_dir_ops && u->opener)))
		return 0;
	pthread_mutex_lock(&u->nested_lock);
	found = nested_find(u, *src, a->ino, &ns);
	pthread_mutex_unlock(&u->nested_lock);
	if (!found) {
		may_block(); /* opening it may mean indexing it */
		if (s->ops == &tree_archive_ops) {
			err = arch_nested(s->t, a->ino, &na);
		} else { /* an archive file in a folder source: opened as a top-level one */
			char *path = dirtree_path(s->t, a->ino);
			err = path ? u->opener(u->opener_opaque, path, &na) : -ENOMEM;
			free(path);
		}
		if (err)
			return err;
		pthread_mutex_lock(&u->nested_lock);
		found = nested_find(u, *src, a->ino, &ns);
		if (!found) {
			err = nested_add(u, *src, a->ino, na, &ns);
			if (!err)
				na = NULL; /* the union's now */
		}
		pthread_mutex_unlock(&u->nested_lock);
		arch_close(na); /* another thread's copy won, or adding it failed */
		if (err)
			return err;
	}
	s = u->src[ns];
	err = s->ops->getattr(s->t, s->ops->root, a);
	if (!err)
		*src = ns;
	return err;
}

void un_nested_free(struct un *u)
{
	struct htable_node *n;

	while ((n = htable_pop(&u->nested)))
		free(htable_entry(n, struct nested, h));
	htable_fini(&u->nested);
}
