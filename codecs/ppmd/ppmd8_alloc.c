/* The units allocator of PPMd var.I (ppmd8_int.h has the interface, ppmd8.c the model).
 *
 * As var.H's (ppmd7_alloc.c): the last 7/8 of the model's block are 12-byte units; contexts
 * take one from the top (hi, going down), symbol arrays take blocks of 1..128 units from the
 * bottom (lo, going up), freed blocks go on 38 lists by size.  A request its list cannot meet
 * takes from the gap between lo and hi, else splits a larger free block, else -- once in 8192
 * such failures -- glues every run of adjacent free blocks into one and tries again, and as a
 * last resort takes units from the top of the text area below.  Var.I differs in how a free
 * block is marked: its first word is a stamp no context or symbol array can start with, its
 * second the next block of its list, its third its size; and each list counts its blocks, so
 * that the model knows how much memory it holds when it decides between restarting and
 * cutting itself down (ppmd8_restore.c).  Every choice here decides when the model runs out,
 * which the encoder's did at the same symbol, so the order of every walk is the encoder's.
 */
#include <string.h>

#include "codecs/ppmd/ppmd8_int.h"

static inline struct p8node *node_of(const struct ppmd8 *p, uint32_t ref)
{
	return (struct p8node *)ptr_of(p, ref);
}

void ppmd8_insert(struct ppmd8 *p, void *ptr, unsigned i)
{
	struct p8node *node = ptr;

	node->stamp = FREE_STAMP;
	node->next = p->free_list[i];
	node->nu = I2U(i);
	p->free_list[i] = ref_of(p, node);
	p->nfree[i]++;
}

void *ppmd8_remove(struct ppmd8 *p, unsigned i)
{
	struct p8node *node = node_of(p, p->free_list[i]);

	p->free_list[i] = node->next;
	p->nfree[i]--;
	return node;
}

/* The tail of a block of list old that a block of list want leaves, back on the lists. */
static void split_block(struct ppmd8 *p, void *ptr, unsigned old, unsigned want)
{
	unsigned nu = I2U(old) - I2U(want), i;
	uint8_t *rest = (uint8_t *)ptr + U2B(I2U(want));

	i = U2I(nu);
	if (I2U(i) != nu) {
		unsigned k = I2U(--i);

		ppmd8_insert(p, rest + U2B(k), nu - k - 1);
	}
	ppmd8_insert(p, rest, i);
}

/* A block of nu units (any number) back on the lists, in pieces of at most 128. */
static void insert_any(struct ppmd8 *p, struct p8node *node, uint32_t nu)
{
	unsigned i;

	for (; nu > 128; nu -= 128, node += 128)
		ppmd8_insert(p, node, NIDX - 1);
	i = U2I(nu);
	if (I2U(i) != nu) {
		unsigned k = I2U(--i);

		ppmd8_insert(p, node + k, nu - k - 1);
	}
	ppmd8_insert(p, node, i);
}

/* Every free block, list by list, merged with the free blocks that follow it in memory (those
 * get size 0 and are passed over), then back on the lists.  lo gets a stamp that is not free
 * (0) so that a merge stops there; the top unit is the order-0 context, never free. */
static void glue_free(struct ppmd8 *p)
{
	uint32_t head = 0, *link = &head;

	p->glue_count = 1u << 13;
	memset(p->nfree, 0, sizeof(p->nfree));
	if (p->lo != p->hi)
		((struct p8node *)(void *)p->lo)->stamp = 0;

	for (unsigned i = 0; i < NIDX; i++) {
		uint32_t n = p->free_list[i];

		p->free_list[i] = 0;
		while (n) {
			struct p8node *node = node_of(p, n);
			uint32_t nu = node->nu;

			*link = n;
			n = node->next;
			/* merged into a block before it: the next one takes its link */
			if (nu == 0)
				continue;
			link = &node->next;
			for (struct p8node *n2; (n2 = node + nu)->stamp == FREE_STAMP;) {
				nu += n2->nu;
				n2->nu = 0;
				node->nu = nu;
			}
		}
	}
	*link = 0;

	while (head) {
		struct p8node *node = node_of(p, head);

		head = node->next;
		if (node->nu)
			insert_any(p, node, node->nu);
	}
}

void *ppmd8_alloc_rare(struct ppmd8 *p, unsigned want)
{
	unsigned i;
	void *r;

	if (p->glue_count == 0) {
		glue_free(p);
		if (p->free_list[want])
			return ppmd8_remove(p, want);
	}
	i = want;
	do {
		if (++i == NIDX) {
			uint32_t bytes = U2B(I2U(want));

			p->glue_count--;
			if ((uint32_t)(p->units_start - p->text) > bytes) {
				p->units_start -= bytes;
				return p->units_start;
			}
			return NULL;
		}
	} while (p->free_list[i] == 0);
	r = ppmd8_remove(p, i);
	split_block(p, r, i, want);
	return r;
}

void *ppmd8_alloc(struct ppmd8 *p, unsigned i)
{
	uint32_t bytes;

	if (p->free_list[i])
		return ppmd8_remove(p, i);
	bytes = U2B(I2U(i));
	if ((uint32_t)(p->hi - p->lo) >= bytes) {
		void *r = p->lo;

		p->lo += bytes;
		return r;
	}
	return ppmd8_alloc_rare(p, i);
}

void *ppmd8_shrink(struct ppmd8 *p, void *old, unsigned old_nu, unsigned new_nu)
{
	unsigned i0 = U2I(old_nu), i1 = U2I(new_nu);

	if (i0 == i1)
		return old;
	if (p->free_list[i1]) {
		void *r = ppmd8_remove(p, i1);

		memcpy(r, old, U2B(new_nu));
		ppmd8_insert(p, old, i0);
		return r;
	}
	split_block(p, old, i0, i1);
	return old;
}

void ppmd8_free_unit(struct ppmd8 *p, void *ptr)
{
	if ((uint8_t *)ptr != p->units_start)
		ppmd8_insert(p, ptr, 0);
	else
		p->units_start += UNIT;
}

/* The free blocks right at units_start go to the text area: off their lists (marked 0 on the
 * way, then counted out of each list in its order). */
void ppmd8_expand_text(struct ppmd8 *p)
{
	uint32_t count[NIDX] = {0};
	struct p8node *node = (struct p8node *)(void *)p->units_start;

	if (p->lo != p->hi)
		((struct p8node *)(void *)p->lo)->stamp = 0;
	while (node->stamp == FREE_STAMP) {
		uint32_t nu = node->nu;

		if (nu == 0 || nu > 128) /* a listed block is 1..128 units: never */
			break;
		node->stamp = 0;
		count[U2I(nu)]++;
		node += nu;
	}
	p->units_start = (uint8_t *)node;

	for (unsigned i = 0; i < NIDX; i++) {
		uint32_t *link = &p->free_list[i];

		if (count[i] == 0)
			continue;
		p->nfree[i] -= count[i];
		while (*link) { /* the marked blocks are on the list: it cannot end first */
			struct p8node *n = node_of(p, *link);

			if (n->stamp != 0) {
				link = &n->next;
				continue;
			}
			*link = n->next;
			if (--count[i] == 0)
				break;
		}
	}
}

uint32_t ppmd8_used(const struct ppmd8 *p)
{
	uint32_t free_units = 0;

	for (unsigned i = 0; i < NIDX; i++)
		free_units += p->nfree[i] * I2U(i);
	return p->size - (uint32_t)(p->hi - p->lo) - (uint32_t)(p->units_start - p->text) -
	       U2B(free_units);
}
