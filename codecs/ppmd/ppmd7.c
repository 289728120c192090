/* PPMd var.H decoding with 7z's range coder (ppmd7.h has the contract).
 *
 * PPM predicts the next byte from the longest context (the last 1..order bytes) seen before.
 * Each context keeps the symbols that followed it with frequencies; the coder codes the
 * symbol's share of the context's total, or an escape, after which the next shorter context
 * (the suffix) codes it with the symbols already excluded, down to the order-0 context that
 * holds all 256.  Var.H's refinements, all of which a decoder must reproduce exactly since the
 * encoder's model is the same state machine:
 *   - a context with one symbol (a "binary" context) codes one bit with an adaptive
 *     probability from bin_summ, indexed by the symbol's frequency, the suffix's size, whether
 *     the last prediction succeeded, the high bits of the last two symbols and the run length;
 *   - escapes from larger contexts are estimated by SEE (secondary escape estimation): an
 *     adaptive counter chosen by how many symbols are left, the context's shape and history;
 *   - after a symbol the model adds it to every context from the longest down to the one that
 *     coded it, and creates the successor contexts one order longer (create_successors); a
 *     successor not made yet points into the text area (the raw bytes), made on first use;
 *   - frequencies are halved (rescale) when one passes 124; symbols that reach 0 are dropped.
 *
 * Memory: one block of the stated size.  The text (past bytes) grows up from its start; the
 * units area (the last 7/8, 12-byte units) holds contexts and symbol arrays, handed out by a
 * small allocator with 38 free lists of 1..128 units, which glues adjacent free blocks when a
 * size runs out and may take units from the text area's top.  When nothing is left the model
 * restarts from scratch -- exactly when the encoder's did, so the allocator's every choice is
 * part of the format.  All links are 32-bit offsets from the block's base (0 is none).
 *
 * The model's invariants do not depend on the input: whatever the range coder yields, the
 * decoder picks one of the context's existing symbols, as the encoder could have; the input
 * only fails the range coder (a count past the total) or ends.  So damaged input cannot lead
 * the model outside its block; fuzz_ppmd checks that.
 */
#include "codecs/ppmd/ppmd7.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "codecs/ppmd/ppmd7_int.h"

static const uint8_t exp_escape[16] = {25, 14, 9, 7, 5, 5, 4, 4, 4, 3, 3, 3, 2, 2, 2, 2};
static const uint16_t init_bin_esc[8] = {0x3CDD, 0x1F3F, 0x59BF, 0x48F3,
					 0x64A1, 0x5ABC, 0x6632, 0x6051};

/* ---- the model ----------------------------------------------------------------------------- */

static void tables_init(struct ppmd7 *p)
{
	unsigned i, k, m;

	ppmd_units_init(p->i2u, p->u2i);
	p->ns2bs[0] = 0;
	p->ns2bs[1] = 2;
	memset(p->ns2bs + 2, 4, 9);
	memset(p->ns2bs + 11, 6, 256 - 11);
	for (i = 0; i < 3; i++)
		p->ns2i[i] = (uint8_t)i;
	for (m = i, k = 1; i < 256; i++) {
		p->ns2i[i] = (uint8_t)m;
		if (--k == 0)
			k = (++m) - 2;
	}
	memset(p->hb2flag, 0, 0x40);
	memset(p->hb2flag + 0x40, 8, 0x100 - 0x40);
}

static void restart_model(struct ppmd7 *p)
{
	struct pst *s;

	memset(p->free_list, 0, sizeof(p->free_list));
	p->text = p->base + p->align;
	p->hi = p->text + p->size;
	p->lo = p->units_start = p->hi - p->size / 8 / UNIT * 7 * UNIT;
	p->glue_count = 0;
	p->order_fall = p->max_order;
	p->run = p->init_rl = -(int32_t)(p->max_order < 12 ? p->max_order : 12) - 1;
	p->prev_success = 0;

	p->hi -= UNIT;
	p->minc = p->maxc = (struct pctx *)(void *)p->hi;
	p->minc->suffix = 0;
	p->minc->nstats = 256;
	p->minc->summ = 256 + 1;
	s = (struct pst *)(void *)p->lo;
	p->found = s;
	p->lo += U2B(256 / 2);
	p->minc->stats = ref_of(p, s);
	for (unsigned i = 0; i < 256; i++) {
		s[i].sym = (uint8_t)i;
		s[i].freq = 1;
		set_succ(&s[i], 0);
	}
	for (unsigned i = 0; i < 128; i++)
		for (unsigned k = 0; k < 8; k++) {
			uint16_t v = (uint16_t)(BIN_SCALE - init_bin_esc[k] / (i + 2));

			for (unsigned m = 0; m < 64; m += 8)
				p->bin[i][k + m] = v;
		}
	for (unsigned i = 0; i < 25; i++)
		for (unsigned k = 0; k < 16; k++) {
			p->see[i][k].shift = PERIOD_BITS - 4;
			p->see[i][k].summ = (uint16_t)((5 * i + 10) << p->see[i][k].shift);
			p->see[i][k].count = 4;
		}
}

/* The contexts one order longer than those from minc's suffixes up to where a successor
 * already exists, for the symbol just found; NULL when memory ran out. */
static struct pctx *create_successors(struct ppmd7 *p, bool skip)
{
	struct pctx *c = p->minc;
	uint32_t up_branch = succ(p->found);
	struct pst *ps[PPMD7_ORDER_MAX + 1], up;
	unsigned nps = 0;

	if (!skip)
		ps[nps++] = p->found;
	while (c->suffix) {
		struct pst *s;
		uint32_t sc;

		c = suffix_of(p, c);
		if (c->nstats != 1) {
			for (s = stats_of(p, c); s->sym != p->found->sym; s++)
				;
		} else {
			s = one_state(c);
		}
		sc = succ(s);
		if (sc != up_branch) {
			c = ctx_of(p, sc);
			if (nps == 0)
				return c;
			break;
		}
		if (nps == PPMD7_ORDER_MAX + 1) /* deeper than any order: cannot happen */
			return NULL;
		ps[nps++] = s;
	}
	up.sym = *(const uint8_t *)ptr_of(p, up_branch);
	set_succ(&up, up_branch + 1);
	if (c->nstats == 1) {
		up.freq = one_state(c)->freq;
	} else {
		struct pst *s;
		uint32_t cf, s0;

		for (s = stats_of(p, c); s->sym != up.sym; s++)
			;
		cf = s->freq - 1u;
		s0 = c->summ - c->nstats - cf;
		up.freq = (uint8_t)(1 + (2 * cf <= s0 ? (5 * cf > s0)
						      : (2 * cf + 3 * s0 - 1) / (2 * s0)));
	}
	do {
		struct pctx *c1;

		if (p->hi != p->lo) {
			p->hi -= UNIT;
			c1 = (struct pctx *)(void *)p->hi;
		} else if (p->free_list[0]) {
			c1 = ppmd7_remove(p, 0);
		} else {
			c1 = ppmd7_alloc_rare(p, 0);
			if (!c1)
				return NULL;
		}
		c1->nstats = 1;
		*one_state(c1) = up;
		c1->suffix = ref_of(p, c);
		set_succ(ps[--nps], ref_of(p, c1));
		c = c1;
	} while (nps);
	return c;
}

/* Adds the symbol just found to every context from maxc down to minc (and a little to minc's
 * suffix), and moves to the next context.  On running out of memory the model restarts. */
static void update_model(struct ppmd7 *p)
{
	struct pst *fs = p->found;
	uint32_t fsucc = succ(fs), successor;
	unsigned ns, s0;
	struct pctx *c;

	if (fs->freq < MAX_FREQ / 4 && p->minc->suffix) {
		c = suffix_of(p, p->minc);
		if (c->nstats == 1) {
			struct pst *s = one_state(c);

			if (s->freq < 32)
				s->freq++;
		} else {
			struct pst *s = stats_of(p, c);

			if (s->sym != fs->sym) {
				do
					s++;
				while (s->sym != fs->sym);
				if (s[0].freq >= s[-1].freq) {
					swap_states(&s[0], &s[-1]);
					s--;
				}
			}
			if (s->freq < MAX_FREQ - 9) {
				s->freq += 2;
				c->summ += 2;
			}
		}
	}
	if (p->order_fall == 0) {
		p->minc = p->maxc = create_successors(p, true);
		if (!p->minc)
			goto restart;
		set_succ(p->found, ref_of(p, p->minc));
		return;
	}
	*p->text++ = fs->sym;
	successor = ref_of(p, p->text);
	if (p->text >= p->units_start)
		goto restart;
	if (fsucc) {
		if (fsucc <= successor) { /* still raw text: make the context */
			struct pctx *cs = create_successors(p, false);

			if (!cs)
				goto restart;
			fsucc = ref_of(p, cs);
		}
		if (--p->order_fall == 0) {
			successor = fsucc;
			p->text -= (p->maxc != p->minc);
		}
	} else {
		set_succ(fs, successor);
		fsucc = ref_of(p, p->minc);
	}

	ns = p->minc->nstats;
	s0 = p->minc->summ - ns - (fs->freq - 1u);
	for (c = p->maxc; c != p->minc; c = suffix_of(p, c)) {
		unsigned ns1 = c->nstats;
		uint32_t cf, sf;
		struct pst *s;

		if (ns1 != 1) {
			if ((ns1 & 1) == 0) { /* the array is full: one unit more */
				unsigned old_nu = ns1 >> 1, i = U2I(old_nu);

				if (i != U2I(old_nu + 1)) {
					void *np = ppmd7_alloc(p, i + 1), *op;

					if (!np)
						goto restart;
					op = stats_of(p, c);
					memcpy(np, op, U2B(old_nu));
					ppmd7_insert(p, op, i);
					c->stats = ref_of(p, np);
				}
			}
			c->summ = (uint16_t)(c->summ + (2 * ns1 < ns) +
					     2 * ((4 * ns1 <= ns) & (c->summ <= 8 * ns1)));
		} else {
			s = ppmd7_alloc(p, 0);
			if (!s)
				goto restart;
			*s = *one_state(c);
			c->stats = ref_of(p, s);
			if (s->freq < MAX_FREQ / 4 - 1)
				s->freq <<= 1;
			else
				s->freq = MAX_FREQ - 4;
			c->summ = (uint16_t)(s->freq + p->init_esc + (ns > 3));
		}
		cf = 2 * (uint32_t)fs->freq * (c->summ + 6u);
		sf = (uint32_t)s0 + c->summ;
		if (cf < 6 * sf) {
			cf = 1 + (cf > sf) + (cf >= 4 * sf);
			c->summ += 3;
		} else {
			cf = 4 + (cf >= 9 * sf) + (cf >= 12 * sf) + (cf >= 15 * sf);
			c->summ = (uint16_t)(c->summ + cf);
		}
		s = stats_of(p, c) + ns1;
		set_succ(s, successor);
		s->sym = fs->sym;
		s->freq = (uint8_t)cf;
		c->nstats = (uint16_t)(ns1 + 1);
	}
	p->maxc = p->minc = ctx_of(p, fsucc);
	return;
restart:
	restart_model(p);
}

/* Halves minc's frequencies (found's first, moved to the front), drops the symbols at 0. */
static void rescale(struct ppmd7 *p)
{
	struct pctx *mc = p->minc;
	struct pst *stats = stats_of(p, mc), *s = p->found;
	unsigned i, adder, sum, esc;

	{
		struct pst t = *s;

		for (; s != stats; s--)
			s[0] = s[-1];
		*s = t;
	}
	esc = mc->summ - s->freq;
	s->freq += 4;
	adder = p->order_fall != 0;
	s->freq = (uint8_t)((s->freq + adder) >> 1);
	sum = s->freq;
	i = mc->nstats - 1u;
	do {
		esc -= (++s)->freq;
		s->freq = (uint8_t)((s->freq + adder) >> 1);
		sum += s->freq;
		if (s[0].freq > s[-1].freq) {
			struct pst *s1 = s, t = *s1;

			do
				s1[0] = s1[-1];
			while (--s1 != stats && t.freq > s1[-1].freq);
			*s1 = t;
		}
	} while (--i);
	if (s->freq == 0) {
		unsigned old_ns = mc->nstats, n0, n1;

		do
			i++;
		while ((--s)->freq == 0);
		esc += i;
		mc->nstats = (uint16_t)(mc->nstats - i);
		if (mc->nstats == 1) {
			struct pst t = *stats;

			do {
				t.freq = (uint8_t)(t.freq - (t.freq >> 1));
				esc >>= 1;
			} while (esc > 1);
			ppmd7_insert(p, stats, U2I((old_ns + 1) >> 1));
			p->found = one_state(mc);
			*p->found = t;
			return;
		}
		n0 = (old_ns + 1) >> 1;
		n1 = (mc->nstats + 1u) >> 1;
		if (n0 != n1)
			mc->stats = ref_of(p, ppmd7_shrink(p, stats, n0, n1));
	}
	mc->summ = (uint16_t)(sum + esc - (esc >> 1));
	p->found = stats_of(p, mc);
}

static void next_context(struct ppmd7 *p)
{
	struct pctx *c = ctx_of(p, succ(p->found));

	if (p->order_fall == 0 && (uint8_t *)c > p->text)
		p->minc = p->maxc = c;
	else
		update_model(p);
}

static void update1(struct ppmd7 *p) /* a symbol past the first of a context */
{
	struct pst *s = p->found;

	s->freq += 4;
	p->minc->summ += 4;
	if (s[0].freq > s[-1].freq) {
		swap_states(&s[0], &s[-1]);
		p->found = --s;
		if (s->freq > MAX_FREQ)
			rescale(p);
	}
	next_context(p);
}

static void update1_0(struct ppmd7 *p) /* the context's first symbol */
{
	p->prev_success = 2u * p->found->freq > p->minc->summ;
	p->run += (int32_t)p->prev_success;
	p->minc->summ += 4;
	if ((p->found->freq += 4) > MAX_FREQ)
		rescale(p);
	next_context(p);
}

static void update_bin(struct ppmd7 *p) /* a binary context's symbol */
{
	p->found->freq = (uint8_t)(p->found->freq + (p->found->freq < 128));
	p->prev_success = 1;
	p->run++;
	next_context(p);
}

static void update2(struct ppmd7 *p) /* a symbol found after escapes */
{
	p->minc->summ += 4;
	if ((p->found->freq += 4) > MAX_FREQ)
		rescale(p);
	p->run = p->init_rl;
	update_model(p);
}

static struct psee *make_esc_freq(struct ppmd7 *p, unsigned masked, uint32_t *esc)
{
	struct pctx *mc = p->minc;
	unsigned left = mc->nstats - masked;
	struct psee *see;
	unsigned r;

	if (mc->nstats == 256) {
		*esc = 1;
		return &p->dummy;
	}
	see = p->see[p->ns2i[left - 1]] + (left < (unsigned)suffix_of(p, mc)->nstats - mc->nstats) +
	      2 * (unsigned)(mc->summ < 11 * mc->nstats) + 4 * (unsigned)(masked > left) +
	      p->hibits;
	r = see->summ >> see->shift;
	see->summ = (uint16_t)(see->summ - r);
	*esc = r + (r == 0);
	return see;
}

/* ---- the range decoder (7z's: 32-bit, a byte at a time) ------------------------------------ */

static inline uint8_t rc_byte(struct ppmd7 *p)
{
	if (p->in_pos < p->in_len)
		return p->in[p->in_pos++];
	p->over = true; /* past the end of the input: the symbol fails */
	return 0;
}

static inline void rc_norm(struct ppmd7 *p) /* twice at most: range >= 2^8 before */
{
	if (p->range < RC_TOP) {
		p->code = (p->code << 8) | rc_byte(p);
		p->range <<= 8;
		if (p->range < RC_TOP) {
			p->code = (p->code << 8) | rc_byte(p);
			p->range <<= 8;
		}
	}
}

static inline uint32_t rc_threshold(struct ppmd7 *p, uint32_t total)
{
	return p->code / (p->range /= total);
}

static inline void rc_decode(struct ppmd7 *p, uint32_t start, uint32_t size)
{
	p->code -= start * p->range;
	p->range *= size;
	rc_norm(p);
}

static inline unsigned rc_bit(struct ppmd7 *p, uint32_t size0, uint32_t total)
{
	uint32_t bound = (p->range / total) * size0;
	unsigned bit;

	if (p->code < bound) {
		p->range = bound;
		bit = 0;
	} else {
		p->code -= bound;
		p->range -= bound;
		bit = 1;
	}
	rc_norm(p);
	return bit;
}

/* ---- decoding a symbol --------------------------------------------------------------------- */

#define BAD_RC -2 /* the range coder's count is past the context's total */
#define END_MARK -1

/* The symbols of minc not yet excluded: found after escapes, or another escape. */
static int decode_masked(struct ppmd7 *p, uint8_t *mask)
{
	for (;;) {
		struct pst *ps[256], *s;
		unsigned masked = p->minc->nstats, i = 0, n;
		uint32_t hi = 0, sum, count;
		struct psee *see;
		int sym;

		do {
			p->order_fall++;
			if (!p->minc->suffix)
				return END_MARK;
			p->minc = suffix_of(p, p->minc);
		} while (p->minc->nstats == masked);
		s = stats_of(p, p->minc);
		n = p->minc->nstats - masked;
		for (unsigned k = p->minc->nstats; i != n && k; k--, s++) {
			if (mask[s->sym]) { /* n of them, unless the model broke: never past */
				hi += s->freq;
				ps[i++] = s;
			}
		}
		if (i == 0)
			return BAD_RC;
		see = make_esc_freq(p, masked, &sum);
		sum += hi;
		count = rc_threshold(p, sum);
		if (count < hi) {
			struct pst **pp = ps;

			for (hi = 0; (hi += (*pp)->freq) <= count; pp++)
				;
			s = *pp;
			rc_decode(p, hi - s->freq, s->freq);
			see_update(see);
			p->found = s;
			sym = s->sym; /* before the update moves it */
			update2(p);
			return sym;
		}
		if (count >= sum)
			return BAD_RC;
		rc_decode(p, hi, sum - hi);
		see->summ = (uint16_t)(see->summ + sum);
		while (i)
			mask[ps[--i]->sym] = 0;
	}
}

/* One symbol: 0..255, END_MARK or BAD_RC. */
static int decode_symbol(struct ppmd7 *p)
{
	uint8_t mask[256];
	struct pctx *mc = p->minc;
	int sym;

	if (mc->nstats != 1) {
		struct pst *s = stats_of(p, mc);
		uint32_t count = rc_threshold(p, mc->summ), hi = s->freq;
		unsigned i;

		if (count < hi) {
			rc_decode(p, 0, s->freq);
			p->found = s;
			sym = s->sym; /* before the update moves it */
			update1_0(p);
			return sym;
		}
		p->prev_success = 0;
		for (i = mc->nstats - 1u; i; i--) {
			if ((hi += (++s)->freq) > count) {
				rc_decode(p, hi - s->freq, s->freq);
				p->found = s;
				sym = s->sym;
				update1(p);
				return sym;
			}
		}
		if (count >= mc->summ)
			return BAD_RC;
		p->hibits = p->hb2flag[p->found->sym];
		rc_decode(p, hi, mc->summ - hi);
		memset(mask, 0xFF, sizeof(mask));
		for (s = stats_of(p, mc), i = mc->nstats; i; i--, s++)
			mask[s->sym] = 0;
	} else {
		struct pst *os = one_state(mc);
		uint16_t *prob;

		p->hibits = p->hb2flag[p->found->sym];
		prob =
		    &p->bin[os->freq - 1u]
			   [p->prev_success + p->ns2bs[suffix_of(p, mc)->nstats - 1u] + p->hibits +
			    2u * p->hb2flag[os->sym] + (((uint32_t)p->run >> 26) & 0x20)];
		if (rc_bit(p, *prob, BIN_SCALE) == 0) {
			*prob = (uint16_t)(*prob + (1u << INT_BITS) - ((*prob + 32u) >> 7));
			p->found = os;
			sym = os->sym;
			update_bin(p);
			return sym;
		}
		*prob = (uint16_t)(*prob - ((*prob + 32u) >> 7));
		p->init_esc = exp_escape[*prob >> 10];
		memset(mask, 0xFF, sizeof(mask));
		mask[os->sym] = 0;
		p->prev_success = 0;
	}
	return decode_masked(p, mask);
}

/* ---- the interface ------------------------------------------------------------------------- */

int ppmd7_props(const uint8_t *props, size_t len, unsigned *order, uint32_t *mem, const char **why)
{
	*order = 0;
	*mem = 0;
	if (len != 5) {
		*why = "PPMd properties are not 5 bytes";
		return -EINVAL;
	}
	*order = props[0];
	*mem = (uint32_t)props[1] | (uint32_t)props[2] << 8 | (uint32_t)props[3] << 16 |
	       (uint32_t)props[4] << 24;
	if (*order < PPMD7_ORDER_MIN || *order > PPMD7_ORDER_MAX) {
		*why = "PPMd order out of 2..64";
		return -EINVAL;
	}
	if (*mem < PPMD7_MEM_MIN || *mem > PPMD7_MEM_MAX) {
		*why = "PPMd memory size out of 2 KiB..2 GiB";
		return -EINVAL;
	}
	return 0;
}

int ppmd7_new(unsigned order, uint32_t mem, struct ppmd7 **out)
{
	struct ppmd7 *p;

	*out = NULL;
	if (order < PPMD7_ORDER_MIN || order > PPMD7_ORDER_MAX || mem < PPMD7_MEM_MIN ||
	    mem > PPMD7_MEM_MAX)
		return -EINVAL;
	p = calloc(1, sizeof(*p));
	if (!p)
		return -ENOMEM;
	p->align = 4 - (mem & 3);
	/* the block, aligned so that its end is; one spare unit past it: glue_free's list head */
	p->base = malloc((size_t)p->align + mem + UNIT);
	p->in = malloc(IBUF);
	if (!p->base || !p->in) {
		ppmd7_free(p);
		return -ENOMEM;
	}
	p->size = mem;
	p->max_order = order;
	tables_init(p);
	restart_model(p);
	p->dummy.shift = PERIOD_BITS;
	p->dummy.summ = 0;
	p->dummy.count = 64;
	*out = p;
	return 0;
}

void ppmd7_free(struct ppmd7 *d)
{
	if (!d)
		return;
	free(d->base);
	free(d->in);
	free(d);
}

size_t ppmd7_feed(struct ppmd7 *d, const void *p, size_t len)
{
	if (d->in_pos && d->in_pos == d->in_len)
		d->in_pos = d->in_len = 0;
	if (d->in_pos && IBUF - d->in_len < len) { /* move what is left to the front */
		memmove(d->in, d->in + d->in_pos, d->in_len - d->in_pos);
		d->in_len -= d->in_pos;
		d->in_pos = 0;
	}
	if (len > IBUF - d->in_len)
		len = IBUF - d->in_len;
	memcpy(d->in + d->in_len, p, len);
	d->in_len += len;
	return len;
}

void ppmd7_input_end(struct ppmd7 *d)
{
	d->in_end = true;
}

static int ppmd7_bad(struct ppmd7 *d, const char *msg)
{
	if (!d->msg)
		d->msg = msg;
	return PPMD7_BAD;
}

int ppmd7_out(struct ppmd7 *d, uint8_t *out, size_t len, size_t *got)
{
	size_t n = 0;

	*got = 0;
	if (d->msg)
		return PPMD7_BAD;
	if (d->ended)
		return PPMD7_END;
	if (!d->started) {
		if (d->in_len - d->in_pos < 5 && !d->in_end)
			return PPMD7_MORE;
		d->range = 0xFFFFFFFFu;
		d->code = 0;
		if (rc_byte(d) != 0)
			return ppmd7_bad(d, "PPMd stream does not start with 0");
		for (int i = 0; i < 4; i++)
			d->code = (d->code << 8) | rc_byte(d);
		if (d->over)
			return ppmd7_bad(d, "PPMd stream shorter than its range coder's start");
		if (d->code == 0xFFFFFFFFu)
			return ppmd7_bad(d, "PPMd range coder starts out of range");
		d->started = true;
	}
	while (n < len && (d->in_len - d->in_pos >= PPMD7_SYM_IN || d->in_end)) {
		int sym = decode_symbol(d);

		if (d->over) {
			*got = n;
			return ppmd7_bad(d, "PPMd input ends inside the stream (truncated)");
		}
		if (sym == BAD_RC) {
			*got = n;
			return ppmd7_bad(d, "PPMd range coder value outside the context's total");
		}
		if (sym == END_MARK) {
			d->ended = true;
			break;
		}
		out[n++] = (uint8_t)sym;
	}
	*got = n;
	return d->ended ? PPMD7_END : PPMD7_MORE;
}

bool ppmd7_finished(struct ppmd7 *d)
{
	if (d->msg || !d->started)
		return false;
	if (d->code == 0 || d->ended)
		return d->code == 0;
	/* an end marker may follow the data (7zz -m0=PPMd:eos) */
	if (decode_symbol(d) != END_MARK || d->over)
		return false;
	d->ended = true;
	return d->code == 0;
}

size_t ppmd7_unused(const struct ppmd7 *d)
{
	return d->in_len - d->in_pos;
}

const char *ppmd7_msg(const struct ppmd7 *d)
{
	return d->msg ? d->msg : "no error";
}

size_t ppmd7_memory(uint32_t mem)
{
	return sizeof(struct ppmd7) + IBUF + (size_t)mem + UNIT + 4;
}
