/* What ppmd8.c (the model's update, the range decoder, the interface), ppmd8_restore.c (what
 * the model does when its memory is full) and ppmd8_alloc.c (the units allocator) share: the
 * layout of the model's block and the decoder's state.  Private to those files.
 *
 * Everything in the block is reached by a 32-bit offset from its base (0 is none): a context
 * (one unit), a context's array of symbols (6 bytes each, in whole units), a free block (its
 * first unit says so).  A context with one symbol keeps it in place of its summ and stats
 * fields (one_state); var.I counts a context's symbols from 0 (nstats is one less than their
 * number: 0 is a binary context, 255 the order-0 one with all 256).
 *
 * Flags, a byte per context, feed the binary and escape estimates: F_SCALED (its frequencies
 * were halved), F_HIGH (one of its symbols is >= 0x40), F_PREV_HIGH (the symbol that led to it
 * was).
 */
#ifndef TARSEEK_PPMD8_INT_H
#define TARSEEK_PPMD8_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "codecs/ppmd/ppmd8.h"
#include "codecs/ppmd/ppmd_common.h"

#define F_SCALED 0x04u
#define F_HIGH 0x08u
#define F_PREV_HIGH 0x10u
#define FREE_STAMP 0xFFFFFFFFu /* a free block's first word; no context or array starts so */
#define RC_TOP (1u << 24)
#define RC_BOT (1u << 15)
#define IBUF ((size_t)64 << 10)

struct p8ctx { /* a context: one unit; a binary context keeps its symbol in summ..stats */
	uint8_t nstats, flags;
	uint16_t summ;
	uint32_t stats, suffix;
};

struct p8node { /* a free block */
	uint32_t stamp, next, nu;
};

_Static_assert(sizeof(struct p8ctx) == UNIT && sizeof(struct p8node) == UNIT, "one unit");

struct ppmd8 {
	uint8_t *base;
	uint32_t size, align;
	uint8_t *lo, *hi, *text, *units_start;
	struct p8ctx *minc, *maxc;
	struct pst *found;
	unsigned order_fall, init_esc, prev_success, max_order, restore;
	int32_t run, init_rl;
	uint32_t glue_count;
	uint32_t free_list[NIDX], nfree[NIDX]; /* the lists' heads, and their lengths */
	uint8_t i2u[NIDX], u2i[128], ns2bs[256], ns2i[260];
	struct psee dummy, see[24][32];
	uint16_t bin[25][64];
	const char *broken; /* the model's invariants failed (never on valid input) */

	uint32_t range, code, low;
	bool started, ended, over;
	uint8_t *in;
	size_t in_pos, in_len;
	bool in_end;
	const char *msg;
};

/* ---- offsets and pointers ------------------------------------------------------------------ */

static inline void *ptr_of(const struct ppmd8 *p, uint32_t ref)
{
	return p->base + ref;
}

static inline uint32_t ref_of(const struct ppmd8 *p, const void *ptr)
{
	return (uint32_t)((const uint8_t *)ptr - p->base);
}

static inline struct p8ctx *ctx_of(const struct ppmd8 *p, uint32_t ref)
{
	return (struct p8ctx *)ptr_of(p, ref);
}

static inline struct pst *stats_of(const struct ppmd8 *p, const struct p8ctx *c)
{
	return (struct pst *)ptr_of(p, c->stats);
}

static inline struct p8ctx *suffix_of(const struct ppmd8 *p, const struct p8ctx *c)
{
	return ctx_of(p, c->suffix);
}

static inline struct pst *one_state(struct p8ctx *c)
{
	return (struct pst *)(void *)&c->summ;
}

/* A successor at or above units_start is a context; below, a place in the text (or none). */
static inline bool is_ctx(const struct ppmd8 *p, uint32_t ref)
{
	return (const uint8_t *)ptr_of(p, ref) >= p->units_start;
}

static inline unsigned high_flag(unsigned sym) /* F_HIGH for a symbol >= 0x40 */
{
	return sym >= 0x40 ? F_HIGH : 0;
}

#define I2U(i) (p->i2u[i])
#define U2I(nu) (p->u2i[(nu)-1])
#define U2B(nu) ((uint32_t)(nu)*UNIT)

/* The model's start (ppmd8.c), also what the restart method does. */
void ppmd8_restart(struct ppmd8 *p);

/* Memory is full (restore.c): undoes the symbol update_model was adding to the contexts from
 * maxc down to failed (exclusive), then restarts or cuts the model as its method says; minc
 * and maxc are a context of the new model. */
void ppmd8_restore(struct ppmd8 *p, struct p8ctx *failed);

/* The units allocator (ppmd8_alloc.c): 38 free lists of blocks of I2U(i) units, each block
 * stamped free.  ppmd8_alloc and ppmd8_alloc_rare give a block of list i's size or NULL;
 * ppmd8_insert puts a block on list i; ppmd8_remove takes list i's first (which must not be
 * empty); ppmd8_shrink makes a block of old_nu units new_nu long, perhaps moving it;
 * ppmd8_free_unit frees one unit, giving it back to the text area if it is that area's top;
 * ppmd8_expand_text gives the text area the free blocks right above it; ppmd8_used is how
 * many bytes of the block the model holds. */
void ppmd8_insert(struct ppmd8 *p, void *node, unsigned i);
void *ppmd8_remove(struct ppmd8 *p, unsigned i);
void *ppmd8_alloc_rare(struct ppmd8 *p, unsigned i);
void *ppmd8_alloc(struct ppmd8 *p, unsigned i);
void *ppmd8_shrink(struct ppmd8 *p, void *old, unsigned old_nu, unsigned new_nu);
void ppmd8_free_unit(struct ppmd8 *p, void *ptr);
void ppmd8_expand_text(struct ppmd8 *p);
uint32_t ppmd8_used(const struct ppmd8 *p);

#endif
