/* The builder's path table (see pathmap.h): open addressing with linear probing over
 * (parent, name) hashes; names are copied into an arena of large blocks, so a million
 * members cost two allocations per block, not one per name.
 */
#include "index/pathmap.h"

#include <stdlib.h>
#include <string.h>

#define ARENA_BLOCK (1u << 20)

struct arena_block {
	struct arena_block *next;
	size_t used, size;
	uint8_t data[];
};

struct pathmap {
	struct pm_node **slots;
	size_t nslots, count;
	struct arena_block *arena;
};

static uint64_t hash(uint64_t parent, const uint8_t *name, size_t len)
{
	uint64_t h = 0xcbf29ce484222325ull ^ (parent * 0x9E3779B97F4A7C15ull);

	for (size_t i = 0; i < len; i++)
		h = (h ^ name[i]) * 0x100000001b3ull;
	return h ^ (h >> 31);
}

struct pathmap *pm_new(void)
{
	struct pathmap *m = calloc(1, sizeof(*m));

	if (!m)
		return NULL;
	m->nslots = 1024;
	m->slots = calloc(m->nslots, sizeof(*m->slots));
	if (!m->slots) {
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
	free(m->slots);
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
	size_t i = hash(parent, name, len) & (m->nslots - 1);

	for (;; i = (i + 1) & (m->nslots - 1)) {
		struct pm_node *n = m->slots[i];
		if (!n)
			return NULL;
		if (n->parent == parent && n->name_len == len && memcmp(n->name, name, len) == 0)
			return n;
	}
}

static int grow(struct pathmap *m)
{
	size_t n = m->nslots * 2;
	struct pm_node **s = calloc(n, sizeof(*s));

	if (!s)
		return -1;
	for (size_t i = 0; i < m->nslots; i++) {
		struct pm_node *node = m->slots[i];
		if (!node)
			continue;
		size_t j = hash(node->parent, node->name, node->name_len) & (n - 1);
		while (s[j])
			j = (j + 1) & (n - 1);
		s[j] = node;
	}
	free(m->slots);
	m->slots = s;
	m->nslots = n;
	return 0;
}

struct pm_node *pm_add(struct pathmap *m, uint64_t parent, const uint8_t *name, size_t len)
{
	struct pm_node *n;
	uint8_t *copy;
	size_t i;

	if ((m->count + 1) * 2 > m->nslots && grow(m) < 0)
		return NULL;
	n = arena_alloc(m, sizeof(*n));
	copy = arena_alloc(m, len ? len : 1);
	if (!n || !copy)
		return NULL;
	memset(n, 0, sizeof(*n));
	memcpy(copy, name, len);
	n->parent = parent;
	n->name = copy;
	n->name_len = (uint32_t)len;
	i = hash(parent, name, len) & (m->nslots - 1);
	while (m->slots[i])
		i = (i + 1) & (m->nslots - 1);
	m->slots[i] = n;
	m->count++;
	return n;
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
