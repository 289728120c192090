/* The one hash table: intrusive, chained, keyed by a 64-bit hash that the caller computes
 * (common/hash.h) and stored in each node, so lookups compare hashes first and the caller's
 * own key only on a match.  Elements embed a struct htable_node; the table holds pointers only
 * and never allocates one.  It doubles its bucket array when it holds more nodes than
 * buckets; when that allocation fails it keeps working with the buckets it has (longer chains,
 * no error).
 *
 * Lookup:   for (n = htable_first(t, h); n; n = htable_next(n))
 *                   if (my_key_equals(list_entry(n, struct x, node), key)) ...
 *
 * Not thread-safe: the table's owner says which lock guards it.
 */
#ifndef TARSEEK_HTABLE_H
#define TARSEEK_HTABLE_H

#include <stddef.h>
#include <stdint.h>

struct htable_node {
	struct htable_node *next;
	uint64_t hash;
};

struct htable {
	struct htable_node **buckets; /* NULL until the first add (or htable_init) */
	size_t mask;		      /* buckets - 1 */
	size_t count;
	size_t pop_from; /* htable_pop: no node in a bucket below it */
};

/* The element holding node n (n may not be NULL). */
#define htable_entry(n, type, member) ((type *)((char *)(n) - offsetof(type, member)))

/* An empty table with room for about hint nodes before it grows.  A zeroed struct htable is
 * an empty table too (its buckets come with the first add).  0 or -ENOMEM. */
int htable_init(struct htable *t, size_t hint);

/* Frees the bucket array (the nodes are the owner's); the table is empty and usable again. */
void htable_fini(struct htable *t);

/* Adds n with hash h (several nodes may share a hash, or a key).  0, or -ENOMEM when the
 * table has no buckets yet and none can be had (n is not added). */
int htable_add(struct htable *t, struct htable_node *n, uint64_t h);

/* Removes n, which must be in t. */
void htable_del(struct htable *t, struct htable_node *n);

/* The first node with hash h, or NULL; htable_next: the next one with the same hash.
 * Inline: they are the lookups of the cache's and the tree's hot paths. */
static inline struct htable_node *htable_first(const struct htable *t, uint64_t h)
{
	struct htable_node *n;

	if (!t->buckets)
		return NULL;
	for (n = t->buckets[h & t->mask]; n && n->hash != h; n = n->next)
		;
	return n;
}

static inline struct htable_node *htable_next(const struct htable_node *n)
{
	struct htable_node *m;

	for (m = n->next; m && m->hash != n->hash; m = m->next)
		;
	return m;
}

/* Removes and returns some node, or NULL when empty (to tear a table down). */
struct htable_node *htable_pop(struct htable *t);

/* Every node, in no particular order: start with *pos = 0 and n = NULL, pass the last node
 * returned; NULL at the end.  The table may not change during the walk. */
struct htable_node *htable_walk(const struct htable *t, size_t *pos, struct htable_node *n);

#endif
