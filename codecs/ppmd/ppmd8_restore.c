/* What PPMd var.I does when its memory is full (ppmd8_int.h has the interface).
 *
 * update_model (ppmd8.c) was adding the symbol just coded to a run of contexts when an
 * allocation failed.  First that half-done step is undone: the contexts that got the symbol
 * lose it again (and their frequencies are refreshed), those below get a little more escape.
 * Then, as the stream's restore method says:
 *   - restart: the model starts from scratch -- also the cut-off method's choice when less
 *     than half of the memory is in use (a fragmented block is not worth cutting);
 *   - cut-off: the model is pruned from the order-0 context up (cut_off): successors that
 *     still point into the text, and every successor at the maximum order, are dropped; a
 *     binary context above order 9 left without a successor goes; symbol arrays near the
 *     units' start move up into free blocks, and the text area takes the free units above
 *     it.  Repeated until at most 3/4 of the memory is in use; the text starts over.
 * The encoder did exactly this at the same symbol, so every step is part of the format.
 * ppmd8_restart, the model from scratch, is here too: the decoder's start is a restart.
 */
#include <string.h>

#include "codecs/ppmd/ppmd8_int.h"

static const uint16_t init_bin_esc[8] = {0x3CDD, 0x1F3F, 0x59BF, 0x48F3,
					 0x64A1, 0x5ABC, 0x6632, 0x6051};

void ppmd8_restart(struct ppmd8 *p)
{
	struct pst *s;
	unsigned i, k, m;

	memset(p->free_list, 0, sizeof(p->free_list));
	memset(p->nfree, 0, sizeof(p->nfree));
	p->text = p->base + p->align;
	p->hi = p->text + p->size;
	p->lo = p->units_start = p->hi - p->size / 8 / UNIT * 7 * UNIT;
	p->glue_count = 0;
	p->order_fall = p->max_order;
	p->run = p->init_rl = -(int32_t)(p->max_order < 12 ? p->max_order : 12) - 1;
	p->prev_success = 0;

	p->hi -= UNIT;
	p->minc = p->maxc = (struct p8ctx *)(void *)p->hi;
	p->minc->suffix = 0;
	p->minc->nstats = 255;
	p->minc->flags = 0;
	p->minc->summ = 256 + 1;
	s = (struct pst *)(void *)p->lo;
	p->found = s;
	p->lo += U2B(256 / 2);
	p->minc->stats = ref_of(p, s);
	for (i = 0; i < 256; i++) {
		s[i].sym = (uint8_t)i;
		s[i].freq = 1;
		set_succ(&s[i], 0);
	}
	/* row m of the binary probabilities starts at i, the first count of that row */
	for (i = m = 0; m < 25; m++) {
		while (p->ns2i[i] == m)
			i++;
		for (k = 0; k < 8; k++) {
			uint16_t v = (uint16_t)(BIN_SCALE - init_bin_esc[k] / (i + 1));

			for (unsigned r = 0; r < 64; r += 8)
				p->bin[m][k + r] = v;
		}
	}
	for (i = m = 0; m < 24; m++) {
		while (p->ns2i[i + 3] == m + 3)
			i++;
		for (k = 0; k < 32; k++) {
			p->see[m][k].shift = PERIOD_BITS - 4;
			p->see[m][k].summ = (uint16_t)((2 * i + 5) << (PERIOD_BITS - 4));
			p->see[m][k].count = 7;
		}
	}
	p->dummy.shift = PERIOD_BITS;
	p->dummy.summ = 0;
	p->dummy.count = 64;
}

/* ctx lost symbols: its array shrinks to fit (old_nu units before), frequencies are halved if
 * scale, the escape gets what the lost symbols had, the flags are made again. */
static void refresh(struct ppmd8 *p, struct p8ctx *ctx, unsigned old_nu, unsigned scale)
{
	unsigned i = ctx->nstats, esc, sum, flags;
	struct pst *s = ppmd8_shrink(p, stats_of(p, ctx), old_nu, (i + 2) >> 1);

	ctx->stats = ref_of(p, s);
	scale |= ctx->summ >= 0x8000u; /* 7-Zip: a total that large would upset the coder */
	flags = high_flag(s->sym);
	esc = ctx->summ - s->freq;
	s->freq = (uint8_t)((s->freq + scale) >> scale);
	sum = s->freq;
	do {
		s++;
		esc -= s->freq;
		s->freq = (uint8_t)((s->freq + scale) >> scale);
		sum += s->freq;
		flags |= high_flag(s->sym);
	} while (--i);
	ctx->summ = (uint16_t)(sum + ((esc + scale) >> scale));
	ctx->flags = (uint8_t)((ctx->flags & (F_PREV_HIGH + F_SCALED * scale)) + flags);
}

/* ctx with one symbol left, at i in its array of nu units: a binary context again. */
static void make_binary(struct ppmd8 *p, struct p8ctx *ctx, struct pst *stats, unsigned nu,
			bool special)
{
	struct pst s = *stats;

	ctx->flags = (uint8_t)((ctx->flags & F_PREV_HIGH) + high_flag(s.sym));
	s.freq = (uint8_t)((s.freq + 11u) >> 3);
	*one_state(ctx) = s;
	if (special)
		ppmd8_free_unit(p, stats);
	else
		ppmd8_insert(p, stats, U2I(nu));
}

/* Prunes the model below ctx (at order): returns ctx's offset, or 0 if ctx itself went. */
static uint32_t cut_off(struct ppmd8 *p, struct p8ctx *ctx, unsigned order)
{
	int ns = ctx->nstats;
	unsigned nu, i;
	struct pst *stats;

	if (ns == 0) {
		struct pst *s = one_state(ctx);
		uint32_t sc = succ(s);

		if (is_ctx(p, sc)) {
			sc = order < p->max_order ? cut_off(p, ctx_of(p, sc), order + 1) : 0;
			set_succ(s, sc);
			if (sc || order <= 9)
				return ref_of(p, ctx);
		}
		ppmd8_free_unit(p, ctx);
		return 0;
	}

	nu = ((unsigned)ns + 2) >> 1;
	i = U2I(nu);
	stats = stats_of(p, ctx);
	/* an array close above the units' start moves up into a free block at a lower offset's
	 * list head (so that the text area can grow over where it was) */
	if ((uint32_t)((uint8_t *)stats - p->units_start) <= (1u << 14) &&
	    ctx->stats <= p->free_list[i]) {
		struct pst *to = ppmd8_remove(p, i);

		ctx->stats = ref_of(p, to);
		memcpy(to, stats, U2B(nu));
		if ((uint8_t *)stats != p->units_start)
			ppmd8_insert(p, stats, i);
		else
			p->units_start += U2B(I2U(i));
		stats = to;
	}

	for (int k = ns; k >= 0; k--) {
		struct pst *s = stats + k;
		uint32_t sc = succ(s);

		if (!is_ctx(p, sc)) { /* into the text, or none: the symbol goes (not at order 0) */
			struct pst *last = stats + ns--;

			if (order) {
				if (s != last)
					*s = *last;
			} else {
				swap_states(s, last);
				set_succ(last, 0);
			}
		} else if (order < p->max_order) {
			set_succ(s, cut_off(p, ctx_of(p, sc), order + 1));
		} else {
			set_succ(s, 0);
		}
	}

	if (ns != ctx->nstats && order) {
		if (ns < 0) {
			ppmd8_insert(p, stats, U2I(nu));
			ppmd8_free_unit(p, ctx);
			return 0;
		}
		ctx->nstats = (uint8_t)ns;
		if (ns == 0)
			make_binary(p, ctx, stats, nu, false);
		else
			refresh(p, ctx, nu, ctx->summ > 16u * (unsigned)ns);
	}
	return ref_of(p, ctx);
}

void ppmd8_restore(struct ppmd8 *p, struct p8ctx *failed)
{
	struct p8ctx *c;

	p->text = p->base + p->align;
	for (c = p->maxc; c != failed; c = suffix_of(p, c)) {
		if (!c->suffix || c->nstats == 0) /* the order-0 context never got the symbol */
			goto broken;
		if (--c->nstats == 0)
			make_binary(p, c, stats_of(p, c), 1, true);
		else
			refresh(p, c, (c->nstats + 3u) >> 1, 0);
	}
	for (; c != p->minc; c = suffix_of(p, c)) {
		if (!c->suffix)
			goto broken;
		if (c->nstats == 0) {
			struct pst *s = one_state(c);

			s->freq = (uint8_t)((s->freq + 1u) >> 1);
		} else if ((c->summ = (uint16_t)(c->summ + 4)) > 128u + 4u * c->nstats) {
			refresh(p, c, (c->nstats + 2u) >> 1, 1);
		}
	}

	if (p->restore == PPMD8_RESTART || ppmd8_used(p) < (p->size >> 1)) {
		ppmd8_restart(p);
		return;
	}
	while (p->maxc->suffix)
		p->maxc = suffix_of(p, p->maxc);
	for (unsigned stalls = 0;;) {
		uint32_t before = ppmd8_used(p), now;

		cut_off(p, p->maxc, 0);
		ppmd8_expand_text(p);
		now = ppmd8_used(p);
		if (now <= 3 * (p->size >> 2))
			break;
		if (now >= before && ++stalls == 8) { /* the encoder would loop for ever */
			p->broken = "PPMd model cannot be cut down (damaged data?)";
			ppmd8_restart(p);
			return;
		}
	}
	p->glue_count = 0;
	p->order_fall = p->max_order;
	p->minc = p->maxc;
	return;
broken: /* cannot happen: maxc's suffixes lead to failed and minc */
	p->broken = "PPMd context chain lost (damaged data?)";
	ppmd8_restart(p);
}
