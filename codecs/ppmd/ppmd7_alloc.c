/* The units allocator of PPMd var.H (ppmd7_int.h has the interface, ppmd7.c the model).
 *
 * The last 7/8 of the model's block are 12-byte units; contexts take one from the top
 * (hi, going down), symbol arrays take blocks of 1..128 units from the bottom (lo, going up),
 * and freed blocks go on 38 lists by size (1, 2, 3, 4, 6, 8, 10, 12, 15, 18, 21, 24, then
 * every 4 up to 128).  A request its list cannot meet takes from the gap between lo and hi,
 * else splits a larger free block (the rest back on the lists), else -- once in 255 such
 * failures -- glues every run of adjacent free blocks into one and tries again, and as a last
 * resort takes units from the top of the text area below.  Every choice here decides when
 * the model runs out and restarts, which the encoder did at the same symbol, so this is part
 * of the format: the order of the lists' walks is the encoder's.
 */
#include <string.h>

#include "codecs/ppmd/ppmd7_int.h"

void ppmd7_insert(struct ppmd7 *p, void *node, unsigned i)
{
	*(uint32_t *)node = p->free_list[i];
	p->free_list[i] = ref_of(p, node);
}

void *ppmd7_remove(struct ppmd7 *p, unsigned i)
{
	uint32_t *node = ptr_of(p, p->free_list[i]);

	p->free_list[i] = *node;
	return node;
}

/* The tail of a block of list old that a block of list want leaves, back on the lists. */
static void split_block(struct ppmd7 *p, void *ptr, unsigned old, unsigned want)
{
	unsigned nu = I2U(old) - I2U(want), i;
	uint8_t *rest = (uint8_t *)ptr + U2B(I2U(want));

	i = U2I(nu);
	if (I2U(i) != nu) {
		unsigned k = I2U(--i);

		ppmd7_insert(p, rest + U2B(k), nu - k - 1);
	}
	ppmd7_insert(p, rest, i);
}

/* Every free block onto one doubly linked list (head: the spare unit past the block's end),
 * each merged with the free blocks that follow it in memory, then back onto the lists in
 * pieces of at most 128 units.  In-use units never read as a zero stamp (a context's nstats
 * and a symbol array's first frequency are never 0), LoUnit gets a stamp, the head has one. */
static void glue_free(struct ppmd7 *p)
{
	uint32_t head = p->align + p->size, n = head;
	struct pnode *hn = ptr_of(p, head);

	p->glue_count = 255;
	for (unsigned i = 0; i < NIDX; i++) {
		uint16_t nu = I2U(i);
		uint32_t next = p->free_list[i];

		p->free_list[i] = 0;
		while (next) {
			struct pnode *node = ptr_of(p, next);
			uint32_t after = *(uint32_t *)node;

			node->next = n;
			((struct pnode *)ptr_of(p, n))->prev = next;
			n = next;
			node->stamp = 0;
			node->nu = nu;
			next = after;
		}
	}
	hn->stamp = 1;
	hn->next = n;
	((struct pnode *)ptr_of(p, n))->prev = head;
	if (p->lo != p->hi)
		((struct pnode *)(void *)p->lo)->stamp = 1;

	while (n != head) {
		struct pnode *node = ptr_of(p, n);
		uint32_t nu = node->nu;

		for (;;) {
			struct pnode *n2 = node + nu;

			nu += n2->nu;
			if (n2->stamp != 0 || nu >= 0x10000)
				break;
			((struct pnode *)ptr_of(p, n2->prev))->next = n2->next;
			((struct pnode *)ptr_of(p, n2->next))->prev = n2->prev;
			node->nu = (uint16_t)nu;
		}
		n = node->next;
	}

	for (n = hn->next; n != head;) {
		struct pnode *node = ptr_of(p, n);
		uint32_t next = node->next;
		unsigned nu = node->nu, i;

		for (; nu > 128; nu -= 128, node += 128)
			ppmd7_insert(p, node, NIDX - 1);
		i = U2I(nu);
		if (I2U(i) != nu) {
			unsigned k = I2U(--i);

			ppmd7_insert(p, node + k, nu - k - 1);
		}
		ppmd7_insert(p, node, i);
		n = next;
	}
}

void *ppmd7_alloc_rare(struct ppmd7 *p, unsigned want)
{
	unsigned i;
	void *r;

	if (p->glue_count == 0) {
		glue_free(p);
		if (p->free_list[want])
			return ppmd7_remove(p, want);
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
	r = ppmd7_remove(p, i);
	split_block(p, r, i, want);
	return r;
}

void *ppmd7_alloc(struct ppmd7 *p, unsigned i)
{
	uint32_t bytes;

	if (p->free_list[i])
		return ppmd7_remove(p, i);
	bytes = U2B(I2U(i));
	if (bytes <= (uint32_t)(p->hi - p->lo)) {
		void *r = p->lo;

		p->lo += bytes;
		return r;
	}
	return ppmd7_alloc_rare(p, i);
}

void *ppmd7_shrink(struct ppmd7 *p, void *old, unsigned old_nu, unsigned new_nu)
{
	unsigned i0 = U2I(old_nu), i1 = U2I(new_nu);

	if (i0 == i1)
		return old;
	if (p->free_list[i1]) {
		void *r = ppmd7_remove(p, i1);

		memcpy(r, old, U2B(new_nu));
		ppmd7_insert(p, old, i0);
		return r;
	}
	split_block(p, old, i0, i1);
	return old;
}
