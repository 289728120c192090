/* What PPMd var.H (ppmd7*.c) and var.I (ppmd8*.c) really share: the 6-byte symbol record, the
 * SEE counter and its update, the constants of the frequency model and the 38 block sizes of
 * the units allocator.  Private to those files.
 *
 * What is NOT here, because the two variants differ: the context record (var.I has a Flags
 * byte and counts its symbols from 0), the free-block record (var.I stamps free blocks and
 * counts them per size), the glue, the range coders, the model's update and restore.
 */
#ifndef TARSEEK_PPMD_COMMON_H
#define TARSEEK_PPMD_COMMON_H

#include <stdint.h>

#define UNIT 12u /* bytes in a unit: a context, two symbols, a free block's record */
#define NIDX 38u /* block sizes of the allocator */
#define MAX_FREQ 124u
#define INT_BITS 7
#define PERIOD_BITS 7
#define BIN_SCALE (1u << (INT_BITS + PERIOD_BITS))

struct pst { /* a symbol in a context: 6 bytes */
	uint8_t sym, freq;
	uint16_t succ_lo, succ_hi; /* the successor: a context, or a place in the text */
};

struct psee { /* an adaptive escape estimate */
	uint16_t summ;
	uint8_t shift, count;
};

_Static_assert(sizeof(struct pst) == 6, "a state is 6 bytes");

static inline uint32_t succ(const struct pst *s)
{
	return (uint32_t)s->succ_lo | ((uint32_t)s->succ_hi << 16);
}

static inline void set_succ(struct pst *s, uint32_t v)
{
	s->succ_lo = (uint16_t)v;
	s->succ_hi = (uint16_t)(v >> 16);
}

static inline void swap_states(struct pst *a, struct pst *b)
{
	struct pst t = *a;

	*a = *b;
	*b = t;
}

/* After a symbol was found past an escape estimated by see: its period grows up to 2^7. */
static inline void see_update(struct psee *see)
{
	if (see->shift < PERIOD_BITS && --see->count == 0) {
		see->summ = (uint16_t)(see->summ << 1);
		see->count = (uint8_t)(3 << see->shift++);
	}
}

/* The allocator's block sizes: 1, 2, 3, 4, 6, 8, 10, 12, 15, 18, 21, 24, then every 4 up to
 * 128 units (i2u), and the smallest list whose blocks hold nu units (u2i[nu - 1]). */
static inline void ppmd_units_init(uint8_t i2u[NIDX], uint8_t u2i[128])
{
	unsigned k = 0;

	for (unsigned i = 0; i < NIDX; i++) {
		unsigned step = i >= 12 ? 4 : (i >> 2) + 1;

		while (step--)
			u2i[k++] = (uint8_t)i;
		i2u[i] = (uint8_t)k;
	}
}

#endif
