/* What ppmd7.c (the model, the range decoder, the interface) and ppmd7_alloc.c (the units
 * allocator) share: the layout of the model's block and the decoder's state.  Private to those
 * two files.
 *
 * Everything in the block is reached by a 32-bit offset from its base (0 is none): a context
 * (one 12-byte unit), a context's array of symbols (6 bytes each, in whole units), a free
 * block while the allocator glues.  A context with one symbol keeps it in place of its summ
 * and stats fields (one_state), as var.H does.
 */
#ifndef TARSEEK_PPMD7_INT_H
#define TARSEEK_PPMD7_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "codecs/ppmd/ppmd7.h"
#include "codecs/ppmd/ppmd_common.h" /* the symbol record, SEE, the constants, the block sizes */

#define RC_TOP (1u << 24)
#define IBUF ((size_t)64 << 10)

struct pctx { /* a context: one unit; a binary context keeps its symbol in summ..stats */
	uint16_t nstats, summ;
	uint32_t stats, suffix;
};

struct pnode { /* a free block while glue_free runs */
	uint16_t stamp, nu;
	uint32_t next, prev;
};

_Static_assert(sizeof(struct pctx) == UNIT && sizeof(struct pnode) == UNIT, "one unit");

struct ppmd7 {
	uint8_t *base;
	uint32_t size, align;
	uint8_t *lo, *hi, *text, *units_start;
	struct pctx *minc, *maxc;
	struct pst *found;
	unsigned order_fall, init_esc, prev_success, max_order, hibits;
	int32_t run, init_rl;
	unsigned glue_count;
	uint32_t free_list[NIDX];
	uint8_t i2u[NIDX], u2i[128], ns2i[256], ns2bs[256], hb2flag[256];
	struct psee dummy, see[25][16];
	uint16_t bin[128][64];

	uint32_t range, code;
	bool started, ended, over;
	uint8_t *in;
	size_t in_pos, in_len;
	bool in_end;
	const char *msg;
};

/* ---- offsets and pointers ------------------------------------------------------------------ */

static inline void *ptr_of(const struct ppmd7 *p, uint32_t ref)
{
	return p->base + ref;
}

static inline uint32_t ref_of(const struct ppmd7 *p, const void *ptr)
{
	return (uint32_t)((const uint8_t *)ptr - p->base);
}

static inline struct pctx *ctx_of(const struct ppmd7 *p, uint32_t ref)
{
	return (struct pctx *)ptr_of(p, ref);
}

static inline struct pst *stats_of(const struct ppmd7 *p, const struct pctx *c)
{
	return (struct pst *)ptr_of(p, c->stats);
}

static inline struct pctx *suffix_of(const struct ppmd7 *p, const struct pctx *c)
{
	return ctx_of(p, c->suffix);
}

static inline struct pst *one_state(struct pctx *c)
{
	return (struct pst *)(void *)&c->summ;
}

#define I2U(i) (p->i2u[i])
#define U2I(nu) (p->u2i[(nu)-1])
#define U2B(nu) ((uint32_t)(nu)*UNIT)

/* The units allocator (ppmd7_alloc.c): 38 free lists of blocks of I2U(i) units.  ppmd7_alloc
 * and ppmd7_alloc_rare give a block of list i's size or NULL (the model then restarts: the
 * encoder's did there too); ppmd7_insert puts a block on list i; ppmd7_remove takes list i's
 * first (which must not be empty); ppmd7_shrink makes a block of old_nu units new_nu long,
 * perhaps moving it. */
void ppmd7_insert(struct ppmd7 *p, void *node, unsigned i);
void *ppmd7_remove(struct ppmd7 *p, unsigned i);
void *ppmd7_alloc_rare(struct ppmd7 *p, unsigned i);
void *ppmd7_alloc(struct ppmd7 *p, unsigned i);
void *ppmd7_shrink(struct ppmd7 *p, void *old, unsigned old_nu, unsigned new_nu);

#endif
