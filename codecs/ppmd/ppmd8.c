/* PPMd var.I (revision 1) decoding with its carry-less range coder (ppmd8.h has the contract).
 *
 * The same machine as var.H (ppmd7.c's essay): the longest context seen before predicts the
 * next byte; an escape moves to the next shorter context with the symbols already tried
 * excluded; binary contexts code one bit with an adaptive probability; escapes from larger
 * contexts are estimated by SEE; after a symbol the model adds it to the contexts it escaped
 * from and makes the successor contexts one order longer.  What var.I changes, all of which
 * a decoder must do exactly as the encoder did:
 *   - each context has a Flags byte (ppmd8_int.h) that chooses among the binary
 *     probabilities and the SEE counters (32 per row, not 16), where var.H used the last
 *     two symbols' high bits;
 *   - making successors (create_successors) also raises the symbol's count in every suffix
 *     it passes; a symbol with no successor at all makes the text its successor at every
 *     order it lacks one (reduce_order), where var.H gave up on the longer orders;
 *   - new symbols get other initial counts, binary counts climb to 196, and a rescale that
 *     leaves one symbol sets its count from the escape's share;
 *   - when the memory is full the model restarts or cuts itself down (ppmd8_restore.c), as
 *     the stream's parameters say;
 *   - the range coder carries nothing: it keeps its low end and, when the top byte of low
 *     and low + range differ while the range is small, shrinks the range to the next 2^15
 *     boundary, so that a byte once written never changes.
 *
 * Memory: one block of the stated size (the text grows from its start, the units fill its
 * last 7/8: ppmd8_alloc.c).  All links are 32-bit offsets from the block's base.
 *
 * The model's structure does not depend on the input: whatever the range coder yields, the
 * decoder picks one of the context's symbols, as the encoder could have.  The searches that
 * rely on the model being whole are bounded all the same, and a model found broken stops
 * the stream with PPMD8_BAD instead of reading outside its block; fuzz_ppmd8 checks that.
 */
#include "codecs/ppmd/ppmd8.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "codecs/ppmd/ppmd8_int.h"

static const uint8_t exp_escape[16] = {25, 14, 9, 7, 5, 5, 4, 4, 4, 3, 3, 3, 2, 2, 2, 2};

/* ---- the model ----------------------------------------------------------------------------- */

static void tables_init(struct ppmd8 *p)
{
	unsigned i, k, m;

	ppmd_units_init(p->i2u, p->u2i);
	p->ns2bs[0] = 0;
	p->ns2bs[1] = 2;
	memset(p->ns2bs + 2, 4, 9);
	memset(p->ns2bs + 11, 6, 256 - 11);
	for (i = 0; i < 5; i++)
		p->ns2i[i] = (uint8_t)i;
	for (m = i, k = 1; i < 260; i++) {
		p->ns2i[i] = (uint8_t)m;
		if (--k == 0)
			k = (++m) - 4;
	}
}

/* Symbol sym in c (not binary), or NULL if the model broke. */
static struct pst *find_sym(struct ppmd8 *p, struct p8ctx *c, unsigned sym)
{
	struct pst *s = stats_of(p, c);

	for (unsigned n = c->nstats + 1u; n; n--, s++)
		if (s->sym == sym)
			return s;
	p->broken = "PPMd model lost a symbol (damaged data?)";
	return NULL;
}

/* The count a new context's one symbol (sym, as in c) starts with. */
static unsigned new_freq(struct ppmd8 *p, struct p8ctx *c, unsigned sym)
{
	struct pst *s;
	uint32_t cf, s0;

	if (c->nstats == 0)
		return one_state(c)->freq;
	s = find_sym(p, c, sym);
	if (!s)
		return 1;
	cf = s->freq - 1u;
	s0 = c->summ - c->nstats - cf;
	if (2 * cf <= s0)
		return 1 + (5 * cf > s0);
	if (s0 == 0) {
		p->broken = "PPMd model has no escape count (damaged data?)";
		return 1;
	}
	return 1 + (cf + 2 * s0 - 3) / s0;
}

/* The contexts one order longer than c's suffixes, up to where a successor already exists,
 * for the symbol just found (s1: its state in c's suffix, if the caller has it); they count
 * the symbol once more on the way.  NULL when memory ran out (or the model broke). */
static struct p8ctx *create_successors(struct ppmd8 *p, bool skip, struct pst *s1, struct p8ctx *c)
{
	uint32_t up_branch = succ(p->found);
	unsigned sym = p->found->sym, nps = 0, nsym, nfreq, flags;
	struct pst *ps[PPMD8_ORDER_MAX + 1];

	if (!skip)
		ps[nps++] = p->found;
	while (c->suffix) {
		struct pst *s;
		uint32_t sc;

		c = suffix_of(p, c);
		if (s1) {
			s = s1;
			s1 = NULL;
		} else if (c->nstats != 0) {
			s = find_sym(p, c, sym);
			if (!s)
				return NULL;
			if (s->freq < MAX_FREQ - 9) {
				s->freq++;
				c->summ++;
			}
		} else {
			s = one_state(c);
			s->freq = (uint8_t)(s->freq + (!suffix_of(p, c)->nstats & (s->freq < 24)));
		}
		sc = succ(s);
		if (sc != up_branch) {
			c = ctx_of(p, sc);
			if (nps == 0)
				return c;
			break;
		}
		if (nps == PPMD8_ORDER_MAX + 1) {
			p->broken = "PPMd model deeper than its order (damaged data?)";
			return NULL;
		}
		ps[nps++] = s;
	}
	if (nps == 0) {
		p->broken = "PPMd model has no context to extend (damaged data?)";
		return NULL;
	}
	nsym = *(const uint8_t *)ptr_of(p, up_branch);
	flags = (sym >= 0x40 ? F_PREV_HIGH : 0) + high_flag(nsym);
	nfreq = new_freq(p, c, nsym);
	if (p->broken)
		return NULL;
	do {
		struct p8ctx *c1;
		struct pst *os;

		if (p->hi != p->lo) {
			p->hi -= UNIT;
			c1 = (struct p8ctx *)(void *)p->hi;
		} else if (p->free_list[0]) {
			c1 = ppmd8_remove(p, 0);
		} else {
			c1 = ppmd8_alloc_rare(p, 0);
			if (!c1)
				return NULL;
		}
		c1->flags = (uint8_t)flags;
		c1->nstats = 0;
		os = one_state(c1);
		os->sym = (uint8_t)nsym;
		os->freq = (uint8_t)nfreq;
		set_succ(os, up_branch + 1);
		c1->suffix = ref_of(p, c);
		set_succ(ps[--nps], ref_of(p, c1));
		c = c1;
	} while (nps);
	return c;
}

/* The symbol just found has no successor: the text becomes its successor in c and in every
 * suffix that has none for it either; then the first suffix with one gives the context to go
 * on from (made if it still points into the text).  NULL when memory ran out. */
static struct p8ctx *reduce_order(struct ppmd8 *p, struct pst *s1, struct p8ctx *c)
{
	struct pst *s = NULL;
	struct p8ctx *c1 = c;
	uint32_t up_branch = ref_of(p, p->text), sc;
	unsigned sym = p->found->sym;

	set_succ(p->found, up_branch);
	p->order_fall++;
	for (;;) {
		if (s1) {
			c = suffix_of(p, c);
			s = s1;
			s1 = NULL;
		} else {
			if (!c->suffix)
				return c;
			c = suffix_of(p, c);
			if (c->nstats) {
				s = find_sym(p, c, sym);
				if (!s)
					return NULL;
				if (s->freq < MAX_FREQ - 9) {
					s->freq += 2;
					c->summ += 2;
				}
			} else {
				s = one_state(c);
				s->freq = (uint8_t)(s->freq + (s->freq < 32));
			}
		}
		if (succ(s))
			break;
		set_succ(s, up_branch);
		p->order_fall++;
	}
	if (succ(s) <= up_branch) {
		struct pst *found = p->found;
		struct p8ctx *cs;

		p->found = s;
		cs = create_successors(p, false, NULL, c);
		set_succ(s, cs ? ref_of(p, cs) : 0);
		p->found = found;
		if (p->broken)
			return NULL;
	}
	sc = succ(s);
	if (p->order_fall == 1 && c1 == p->maxc) {
		set_succ(p->found, sc);
		p->text--;
	}
	return sc ? ctx_of(p, sc) : NULL;
}

/* The suffix of minc counts the symbol just found a little more (moved ahead of the symbol
 * before it if it now counts as much); its state there, or NULL. */
static struct pst *update_suffix(struct ppmd8 *p, unsigned sym)
{
	struct p8ctx *c = suffix_of(p, p->minc);
	struct pst *s;

	if (c->nstats == 0) {
		s = one_state(c);
		if (s->freq < 32)
			s->freq++;
		return s;
	}
	s = stats_of(p, c);
	if (s->sym != sym) {
		s = find_sym(p, c, sym);
		if (!s)
			return NULL;
		if (s[0].freq >= s[-1].freq) {
			swap_states(&s[0], &s[-1]);
			s--;
		}
	}
	if (s->freq < MAX_FREQ - 9) {
		s->freq += 2;
		c->summ += 2;
	}
	return s;
}

/* c gets symbol sym (count ffreq in minc, whose other counts sum to s0 and which has ns + 1
 * symbols) with successor sc.  False when memory ran out. */
static bool add_symbol(struct ppmd8 *p, struct p8ctx *c, unsigned sym, unsigned ffreq, unsigned s0,
		       unsigned ns, uint32_t sc)
{
	unsigned ns1 = c->nstats;
	uint32_t sum, cf, sf;
	struct pst *s;

	if (ns1 != 0) {
		if (ns1 & 1) { /* the array is full: one unit more */
			unsigned old_nu = (ns1 + 1) >> 1, i = U2I(old_nu);

			if (i != U2I(old_nu + 1)) {
				void *np = ppmd8_alloc(p, i + 1), *op;

				if (!np)
					return false;
				op = stats_of(p, c);
				memcpy(np, op, U2B(old_nu));
				ppmd8_insert(p, op, i);
				c->stats = ref_of(p, np);
			}
		}
		sum = c->summ + (3 * ns1 + 1 < ns);
	} else {
		struct pst one = *one_state(c);

		s = ppmd8_alloc(p, 0);
		if (!s)
			return false;
		*s = one;
		c->stats = ref_of(p, s);
		s->freq = (uint8_t)(one.freq < MAX_FREQ / 4 - 1 ? one.freq * 2 : MAX_FREQ - 4);
		sum = s->freq + p->init_esc + (ns > 2);
	}
	s = stats_of(p, c) + ns1 + 1;
	cf = 2 * (sum + 6) * ffreq;
	sf = s0 + sum;
	s->sym = (uint8_t)sym;
	set_succ(s, sc);
	c->nstats = (uint8_t)(ns1 + 1);
	c->flags |= (uint8_t)high_flag(sym);
	if (cf < 6 * sf) {
		cf = 1 + (cf > sf) + (cf >= 4 * sf);
		sum += 4;
	} else {
		cf = 4 + (cf > 9 * sf) + (cf > 12 * sf) + (cf > 15 * sf);
		sum += cf;
	}
	c->summ = (uint16_t)sum;
	s->freq = (uint8_t)cf;
	return true;
}

/* Adds the symbol just found to every context from maxc down to minc, and moves to the next
 * context (minc = maxc).  On running out of memory the model restores itself. */
static void update_model(struct ppmd8 *p)
{
	struct pst *fs = p->found, *s = NULL;
	uint32_t min_succ = succ(fs), max_succ;
	unsigned ffreq = fs->freq, sym = fs->sym, s0, ns;
	struct p8ctx *c = p->maxc, *cs;

	if (ffreq < MAX_FREQ / 4 && p->minc->suffix) {
		s = update_suffix(p, sym);
		if (!s)
			goto broken;
	}
	if (p->order_fall == 0 && min_succ) {
		cs = create_successors(p, true, s, p->minc);
		if (!cs) {
			set_succ(p->found, 0);
			goto restore;
		}
		set_succ(p->found, ref_of(p, cs));
		p->minc = p->maxc = cs;
		return;
	}
	*p->text++ = (uint8_t)sym;
	if (p->text >= p->units_start)
		goto restore;
	max_succ = ref_of(p, p->text);
	if (!min_succ) {
		cs = reduce_order(p, s, p->minc);
		if (!cs)
			goto restore;
		min_succ = ref_of(p, cs);
	} else if (!is_ctx(p, min_succ)) { /* still raw text: make the context */
		cs = create_successors(p, false, s, p->minc);
		if (!cs)
			goto restore;
		min_succ = ref_of(p, cs);
	}
	if (--p->order_fall == 0) {
		max_succ = min_succ;
		p->text -= (p->maxc != p->minc);
	}

	ns = p->minc->nstats;
	s0 = p->minc->summ - ns - ffreq;
	for (; c != p->minc; c = suffix_of(p, c)) {
		if (!c->suffix) {
			p->broken = "PPMd context chain lost (damaged data?)";
			goto broken;
		}
		if (!add_symbol(p, c, sym, ffreq, s0, ns, max_succ))
			goto restore;
	}
	p->maxc = p->minc = ctx_of(p, min_succ);
	return;
restore:
	if (p->broken)
		goto broken;
	ppmd8_restore(p, c);
	return;
broken: /* the stream fails; keep a model that is whole */
	ppmd8_restart(p);
}

/* Halves minc's frequencies (found's first, moved to the front), drops the symbols at 0. */
static void rescale(struct ppmd8 *p)
{
	struct p8ctx *mc = p->minc;
	struct pst *stats = stats_of(p, mc), *s = p->found;
	unsigned i, adder, sum, esc;

	if (s != stats) {
		struct pst t = *s;

		for (; s != stats; s--)
			s[0] = s[-1];
		*s = t;
	}
	sum = s->freq;
	esc = mc->summ - sum;
	adder = p->order_fall != 0;
	sum = (sum + 4 + adder) >> 1;
	s->freq = (uint8_t)sum;
	i = mc->nstats;
	do {
		unsigned f = (++s)->freq;

		esc -= f;
		f = (f + adder) >> 1;
		sum += f;
		s->freq = (uint8_t)f;
		if (f > s[-1].freq) {
			struct pst *s1 = s, t = *s1;

			do
				s1[0] = s1[-1];
			while (--s1 != stats && f > s1[-1].freq);
			*s1 = t;
		}
	} while (--i);
	if (s->freq == 0) {
		unsigned ns = mc->nstats, ns_new, n0, n1;

		i = 0;
		do
			i++;
		while ((--s)->freq == 0);
		esc += i;
		ns_new = ns - i;
		mc->nstats = (uint8_t)ns_new;
		n0 = (ns + 2) >> 1;
		if (ns_new == 0) {
			struct pst t = *stats;
			unsigned f = esc ? (2 * t.freq + esc - 1) / esc : 1;

			t.freq = (uint8_t)(f > MAX_FREQ / 3 ? MAX_FREQ / 3 : f);
			mc->flags = (uint8_t)((mc->flags & F_PREV_HIGH) + high_flag(t.sym));
			p->found = one_state(mc);
			*p->found = t;
			ppmd8_insert(p, stats, U2I(n0));
			return;
		}
		n1 = (ns_new + 2) >> 1;
		if (n0 != n1)
			mc->stats = ref_of(p, ppmd8_shrink(p, stats, n0, n1));
	}
	mc->summ = (uint16_t)(sum + esc - (esc >> 1));
	mc->flags |= F_SCALED;
	p->found = stats_of(p, mc);
}

static struct psee *make_esc_freq(struct ppmd8 *p, unsigned masked, uint32_t *esc)
{
	struct p8ctx *mc = p->minc;
	unsigned ns = mc->nstats, r;
	struct psee *see;

	if (ns == 255) {
		*esc = 1;
		return &p->dummy;
	}
	see = &p->see[p->ns2i[ns + 2] - 3]
		     [((mc->summ > 11 * (ns + 1)) +
		       2 * (unsigned)(2 * ns < (unsigned)suffix_of(p, mc)->nstats + masked) +
		       mc->flags) &
		      31];
	r = see->summ >> see->shift;
	see->summ = (uint16_t)(see->summ - r);
	*esc = r + (r == 0);
	return see;
}

static void next_context(struct ppmd8 *p)
{
	struct p8ctx *c = ctx_of(p, succ(p->found));

	if (p->order_fall == 0 && (uint8_t *)c >= p->units_start)
		p->minc = p->maxc = c;
	else
		update_model(p);
}

static void update1(struct ppmd8 *p) /* a symbol past the first of a context */
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

static void update1_0(struct ppmd8 *p) /* the context's first symbol */
{
	p->prev_success = 2u * p->found->freq >= p->minc->summ;
	p->run = (int32_t)((uint32_t)p->run + p->prev_success);
	p->minc->summ += 4;
	if ((p->found->freq += 4) > MAX_FREQ)
		rescale(p);
	next_context(p);
}

static void update_bin(struct ppmd8 *p) /* a binary context's symbol */
{
	p->found->freq = (uint8_t)(p->found->freq + (p->found->freq < 196));
	p->prev_success = 1;
	p->run = (int32_t)((uint32_t)p->run + 1); /* wraps as the encoder's did */
	next_context(p);
}

static void update2(struct ppmd8 *p) /* a symbol found after escapes */
{
	p->minc->summ += 4;
	if ((p->found->freq += 4) > MAX_FREQ)
		rescale(p);
	p->run = p->init_rl;
	update_model(p);
}

/* ---- the range decoder (Subbotin's carry-less coder) --------------------------------------- */

static inline uint8_t rc_byte(struct ppmd8 *p)
{
	if (p->in_pos < p->in_len)
		return p->in[p->in_pos++];
	p->over = true; /* past the end of the input: the symbol fails */
	return 0;
}

/* code / (range / total), the count the coded value falls on; UINT32_MAX (past any total)
 * when the range is smaller than the total, which valid input never makes it. */
static inline uint32_t rc_threshold(struct ppmd8 *p, uint32_t total)
{
	if (total == 0 || p->range < total)
		return UINT32_MAX;
	return p->code / (p->range /= total);
}

static inline void rc_decode(struct ppmd8 *p, uint32_t start, uint32_t size)
{
	start *= p->range;
	p->low += start;
	p->code -= start;
	p->range *= size;
	for (unsigned n = 0; n < 16; n++) { /* a few at most, on any input: bounded all the same */
		if ((p->low ^ (p->low + p->range)) >= RC_TOP) {
			if (p->range >= RC_BOT)
				return;
			p->range = (0u - p->low) & (RC_BOT - 1);
		}
		p->code = (p->code << 8) | rc_byte(p);
		p->range <<= 8;
		p->low <<= 8;
	}
	p->over = true;
}

/* ---- decoding a symbol --------------------------------------------------------------------- */

#define BAD_RC -2 /* the range coder's count is past the context's total */
#define END_MARK -1

/* The symbols of minc not yet excluded: found after escapes, or another escape. */
static int decode_masked(struct ppmd8 *p, uint8_t *mask)
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
		if (p->minc->nstats < masked) {
			p->broken = "PPMd suffix has fewer symbols than its context";
			return BAD_RC;
		}
		s = stats_of(p, p->minc);
		n = p->minc->nstats - masked;
		for (unsigned k = p->minc->nstats + 1u; i != n && k; k--, s++) {
			if (mask[s->sym]) { /* n of them, unless the model broke: never past */
				hi += s->freq;
				ps[i++] = s;
			}
		}
		if (i != n) {
			p->broken = "PPMd model lost a symbol (damaged data?)";
			return BAD_RC;
		}
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

/* minc is binary: its symbol, or the escape to decode_masked. */
static int decode_binary(struct ppmd8 *p, uint8_t *mask)
{
	struct p8ctx *mc = p->minc;
	struct pst *os = one_state(mc);
	unsigned row = p->ns2i[(uint8_t)(os->freq - 1)]; /* counts stop at 196: row 24 */
	unsigned col = p->ns2bs[suffix_of(p, mc)->nstats] + p->prev_success + mc->flags +
		       (p->run < 0 ? 0x20u : 0);
	uint16_t *prob = &p->bin[row < 25 ? row : 24][col & 63];
	int sym;

	p->range >>= 14;
	if (p->range == 0) /* never after a whole decode step */
		return BAD_RC;
	if (p->code / p->range < *prob) {
		rc_decode(p, 0, *prob);
		*prob = (uint16_t)(*prob + (1u << INT_BITS) - ((*prob + 32u) >> 7));
		p->found = os;
		sym = os->sym;
		update_bin(p);
		return sym;
	}
	rc_decode(p, *prob, BIN_SCALE - *prob);
	*prob = (uint16_t)(*prob - ((*prob + 32u) >> 7));
	p->init_esc = exp_escape[*prob >> 10];
	memset(mask, 0xFF, 256);
	mask[os->sym] = 0;
	p->prev_success = 0;
	return decode_masked(p, mask);
}

/* One symbol: 0..255, END_MARK or BAD_RC. */
static int decode_symbol(struct ppmd8 *p)
{
	uint8_t mask[256];
	struct p8ctx *mc = p->minc;
	struct pst *s;
	uint32_t count, hi;
	int sym;

	if (mc->nstats == 0)
		return decode_binary(p, mask);
	s = stats_of(p, mc);
	count = rc_threshold(p, mc->summ);
	hi = s->freq;
	if (count < hi) {
		rc_decode(p, 0, s->freq);
		p->found = s;
		sym = s->sym; /* before the update moves it */
		update1_0(p);
		return sym;
	}
	p->prev_success = 0;
	for (unsigned i = mc->nstats; i; i--) {
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
	rc_decode(p, hi, mc->summ - hi);
	memset(mask, 0xFF, sizeof(mask));
	for (s = stats_of(p, mc), hi = mc->nstats + 1u; hi; hi--, s++)
		mask[s->sym] = 0;
	return decode_masked(p, mask);
}

/* ---- the interface ------------------------------------------------------------------------- */

int ppmd8_props(const uint8_t props[2], unsigned *order, uint32_t *mem, unsigned *restore,
		const char **why)
{
	unsigned v = props[0] | (unsigned)props[1] << 8;

	*order = (v & 0xF) + 1;
	*mem = (((v >> 4) & 0xFF) + 1) << 20;
	*restore = v >> 12;
	if (*order < PPMD8_ORDER_MIN) {
		*why = "PPMd order below 2";
		return -EINVAL;
	}
	if (*restore > PPMD8_CUT_OFF) {
		*why = *restore == 2 ? "PPMd restore method 'freeze' (not allowed in zip)"
				     : "PPMd restore method unknown";
		return -EINVAL;
	}
	return 0;
}

int ppmd8_new(unsigned order, uint32_t mem, unsigned restore, struct ppmd8 **out)
{
	struct ppmd8 *p;

	*out = NULL;
	if (order < PPMD8_ORDER_MIN || order > PPMD8_ORDER_MAX || mem < PPMD8_MEM_MIN ||
	    mem > PPMD8_MEM_MAX || restore > PPMD8_CUT_OFF)
		return -EINVAL;
	p = calloc(1, sizeof(*p));
	if (!p)
		return -ENOMEM;
	p->align = 4 - (mem & 3); /* offset 0 is "none": the text starts past it */
	p->base = malloc((size_t)p->align + mem);
	p->in = malloc(IBUF);
	if (!p->base || !p->in) {
		ppmd8_free(p);
		return -ENOMEM;
	}
	p->size = mem;
	p->max_order = order;
	p->restore = restore;
	tables_init(p);
	ppmd8_restart(p);
	*out = p;
	return 0;
}

void ppmd8_free(struct ppmd8 *d)
{
	if (!d)
		return;
	free(d->base);
	free(d->in);
	free(d);
}

size_t ppmd8_feed(struct ppmd8 *d, const void *p, size_t len)
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

void ppmd8_input_end(struct ppmd8 *d)
{
	d->in_end = true;
}

static int ppmd8_bad(struct ppmd8 *d, const char *msg)
{
	if (!d->msg)
		d->msg = msg;
	return PPMD8_BAD;
}

/* The range coder's first 4 bytes: 0, or PPMD8_BAD. */
static int rc_start(struct ppmd8 *d)
{
	d->low = 0;
	d->range = 0xFFFFFFFFu;
	d->code = 0;
	for (int i = 0; i < 4; i++)
		d->code = (d->code << 8) | rc_byte(d);
	if (d->over)
		return ppmd8_bad(d, "PPMd stream shorter than its range coder's start");
	if (d->code == 0xFFFFFFFFu)
		return ppmd8_bad(d, "PPMd range coder starts out of range");
	d->started = true;
	return 0;
}

int ppmd8_out(struct ppmd8 *d, uint8_t *out, size_t len, size_t *got)
{
	size_t n = 0;

	*got = 0;
	if (d->msg)
		return PPMD8_BAD;
	if (d->ended)
		return PPMD8_END;
	if (!d->started) {
		if (d->in_len - d->in_pos < 4 && !d->in_end)
			return PPMD8_MORE;
		if (rc_start(d))
			return PPMD8_BAD;
	}
	while (n < len && (d->in_len - d->in_pos >= PPMD8_SYM_IN || d->in_end)) {
		int sym = decode_symbol(d);

		if (d->broken) {
			*got = n;
			return ppmd8_bad(d, d->broken);
		}
		if (d->over) {
			*got = n;
			return ppmd8_bad(d, "PPMd input ends inside the stream (truncated)");
		}
		if (sym == BAD_RC) {
			*got = n;
			return ppmd8_bad(d, "PPMd range coder value outside the context's total");
		}
		if (sym == END_MARK) {
			d->ended = true;
			break;
		}
		out[n++] = (uint8_t)sym;
	}
	*got = n;
	return d->ended ? PPMD8_END : PPMD8_MORE;
}

bool ppmd8_finished(struct ppmd8 *d)
{
	if (d->msg || (!d->started && rc_start(d))) /* a stream of no symbols is its start */
		return false;
	if (d->code == 0 || d->ended)
		return d->code == 0;
	/* an end marker may follow the data (7-Zip writes one) */
	if (decode_symbol(d) != END_MARK || d->over || d->broken)
		return false;
	d->ended = true;
	return d->code == 0;
}

size_t ppmd8_unused(const struct ppmd8 *d)
{
	return d->in_len - d->in_pos;
}

const char *ppmd8_msg(const struct ppmd8 *d)
{
	return d->msg ? d->msg : "no error";
}

size_t ppmd8_memory(uint32_t mem)
{
	return sizeof(struct ppmd8) + IBUF + (size_t)mem + 4;
}
