/* The builder's path table (see pathmap.h): the one hash table (common/htable.h) over
 * (parent, name) hashes, each node keeping its full hash so a lookup compares names only on
 * a hash match and growing never hashes a name again; nodes and names are copied into an
 * arena of large blocks, so a million members cost two allocations per block, not one per
 * name, and a lookup allocates nothing.
 */
#include "index/pathmap.h"

#include <stdlib.h>
#include <string.h>

#include "common/hash.h"
#include "common/htable.h"

#define ARENA_BLOCK (1u << 20)

struct arena_block {
	struct arena_block *next;
	size_t used, size;
	uint8_t data[];
};

/* A node as the table holds it: its links, then what the builder sees. */
struct pm_entry {
	struct htable_node h;
	struct pm_node n;
};

struct pathmap {
	struct htable t;
	struct arena_block *arena;
};

static uint64_t hash(uint64_t parent, const uint8_t *name, size_t len)
{
	return hash_pair(parent, hash_bytes(name, len));
}

struct pathmap *pm_new(void)
{
	struct pathmap *m = calloc(1, sizeof(*m));

	if (!m)
		return NULL;
	if (htable_init(&m->t, 1024) < 0) {
		free(m);
		return NULL;
	}
	return m;
}

void pm_free(struct pathmap *m)
{
	if (!m)
		return;
	while (m->arena) {
		struct arena_block *b = m->arena;
		m->arena = b->next;
		free(b);
	}
	htable_fini(&m->t);
	free(m);
}

static void *arena_alloc(struct pathmap *m, size_t len)
{
	struct arena_block *b = m->arena;

	len = (len + 7) & ~(size_t)7;
	if (!b || b->size - b->used < len) {
		size_t size = len > ARENA_BLOCK ? len : ARENA_BLOCK;
		b = malloc(sizeof(*b) + size);
		if (!b)
			return NULL;
		b->size = size;
		b->used = 0;
		b->next = m->arena;
		m->arena = b;
	}
	void *p = b->data + b->used;
	b->used += len;
	return p;
}

struct pm_node *pm_find(struct pathmap *m, uint64_t parent, const uint8_t *name, size_t len)
{
	for (struct htable_node *h = htable_first(&m->t, hash(parent, name, len)); h;
	     h = htable_next(h)) {
		struct pm_node *n = &htable_entry(h, struct pm_entry, h)->n;
		if (n->parent == parent && n->name_len == len && memcmp(n->name, name, len) == 0)
			return n;
	}
	return NULL;
}

struct pm_node *pm_add(struct pathmap *m, uint64_t parent, const uint8_t *name, size_t len)
{
	struct pm_entry *e = arena_alloc(m, sizeof(*e));
	uint8_t *copy = arena_alloc(m, len ? len : 1);

	if (!e || !copy)
		return NULL;
	memset(e, 0, sizeof(*e));
	memcpy(copy, name, len);
	e->n.parent = parent;
	e->n.name = copy;
	e->n.name_len = (uint32_t)len;
	if (htable_add(&m->t, &e->h, hash(parent, name, len)) < 0)
		return NULL; /* never: the table has its buckets from pm_new */
	return &e->n;
}

int path_split(const uint8_t *path, size_t len, const uint8_t **comps, size_t *lens, int max)
{
	int n = 0;
	size_t i = 0;

	while (i < len) {
		size_t j = i;
		while (j < len && path[j] != '/')
			j++;
		size_t cl = j - i;
		if (cl == 0 || (cl == 1 && path[i] == '.')) {
			/* "" or "." */
		} else if (cl == 2 && path[i] == '.' && path[i + 1] == '.') {
			if (n > 0)
				n--;
		} else {
			if (n == max)
				return -1;
			comps[n] = path + i;
			lens[n] = cl;
			n++;
		}
		i = j + 1;
	}
	return n;
}
