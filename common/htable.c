/* The one hash table (see htable.h): power-of-two bucket arrays, singly linked chains, the
 * full hash kept in each node so that growing never asks the owner to hash again. */
#include "common/htable.h"

#include <errno.h>
#include <stdlib.h>

#define HT_MIN 16

static size_t round_pow2(size_t n)
{
	size_t b = HT_MIN;

	while (b < n && b < ((size_t)1 << (sizeof(size_t) * 8 - 2)))
		b <<= 1;
	return b;
}

int htable_init(struct htable *t, size_t hint)
{
	size_t n = round_pow2(hint);

	t->buckets = calloc(n, sizeof(*t->buckets));
	t->mask = t->buckets ? n - 1 : 0;
	t->count = 0;
	t->pop_from = 0;
	return t->buckets ? 0 : -ENOMEM;
}

void htable_fini(struct htable *t)
{
	free(t->buckets);
	t->buckets = NULL;
	t->mask = 0;
	t->count = 0;
	t->pop_from = 0;
}

/* Doubles the bucket array; keeps the old one if memory is short. */
static void grow(struct htable *t)
{
	size_t n = (t->mask + 1) * 2;
	struct htable_node **b = calloc(n, sizeof(*b));

	if (!b)
		return;
	for (size_t i = 0; i <= t->mask; i++) {
		struct htable_node *e = t->buckets[i];
		while (e) {
			struct htable_node *next = e->next;
			size_t k = e->hash & (n - 1);
			e->next = b[k];
			b[k] = e;
			e = next;
		}
	}
	free(t->buckets);
	t->buckets = b;
	t->mask = n - 1;
	t->pop_from = 0;
}

int htable_add(struct htable *t, struct htable_node *n, uint64_t h)
{
	if (!t->buckets && htable_init(t, HT_MIN) < 0)
		return -ENOMEM;
	if (t->count > t->mask)
		grow(t);
	size_t k = h & t->mask;
	n->hash = h;
	n->next = t->buckets[k];
	t->buckets[k] = n;
	t->count++;
	if (k < t->pop_from)
		t->pop_from = k;
	return 0;
}

void htable_del(struct htable *t, struct htable_node *n)
{
	struct htable_node **pp = &t->buckets[n->hash & t->mask];

	while (*pp && *pp != n)
		pp = &(*pp)->next;
	if (*pp) {
		*pp = n->next;
		n->next = NULL;
		t->count--;
	}
}

struct htable_node *htable_pop(struct htable *t)
{
	if (!t->count)
		return NULL;
	for (size_t i = t->pop_from; i <= t->mask; i++) {
		struct htable_node *n = t->buckets[i];
		if (n) {
			t->pop_from = i;
			t->buckets[i] = n->next;
			n->next = NULL;
			t->count--;
			return n;
		}
	}
	return NULL;
}

struct htable_node *htable_walk(const struct htable *t, size_t *pos, struct htable_node *n)
{
	if (n && n->next)
		return n->next;
	if (!t->buckets)
		return NULL;
	if (n)
		(*pos)++;
	for (; *pos <= t->mask; (*pos)++) {
		if (t->buckets[*pos])
			return t->buckets[*pos];
	}
	return NULL;
}
