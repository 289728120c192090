/* Deflate64, decoded (see inflate64.h).
 *
 * The state between calls: the bit buffer and the input held (in[], a copy of what was fed,
 * compacted as it is consumed), the 64 KiB window (every decoded byte, for matches), where
 * the decoder is (before a block header, in a stored block with `stored` bytes left, in a
 * Huffman block before a symbol), a match with `mlen` bytes left to copy from `mdist` back,
 * and the current block's code tables.  A table is a canonical Huffman code kept as its count
 * of codes per length and its symbols in code order; decoding reads a code a bit at a time
 * (about 50 MB/s of output: Deflate64 is rare, and a simple decoder is easy to check).
 */
#include "codecs/inflate64.h"

#include <stdlib.h>
#include <string.h>

#define W64 65536u	    /* the window */
#define IN_CAP (128u << 10) /* input held */
#define HDR_NEED 1024u	    /* bytes a block header fits in (at most ~4,600 bits) */
#define SYM_NEED 8u	    /* bytes a symbol and its extra bits fit in (60 bits) */
#define MAXBITS 15

struct huff {
	uint16_t count[MAXBITS + 1];
	uint16_t symbol[288];
};

enum { ST_HEADER, ST_STORED, ST_HUFF, ST_DONE, ST_BAD };

struct inf64 {
	uint8_t in[IN_CAP];
	size_t inlen, inpos;
	bool in_end;
	uint64_t bitbuf;
	unsigned bitcnt;
	bool short_input; /* a read past what is held (only with in_end: damage) */

	uint8_t win[W64];
	uint64_t total; /* bytes decoded */
	int state;
	bool last;
	uint32_t stored;
	uint32_t mlen, mdist;
	struct huff lit, dist;
	const char *msg;
};

static const uint16_t lbase[29] = {3,  4,  5,  6,  7,  8,  9,  10, 11,	13,  15,  17,  19,  23, 27,
				   31, 35, 43, 51, 59, 67, 83, 99, 115, 131, 163, 195, 227, 3};
static const uint8_t lext[29] = {0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2,
				 2, 3, 3, 3, 3, 4, 4, 4, 4, 5, 5, 5, 5, 16};
static const uint16_t dbase[32] = {1,	 2,    3,    4,	    5,	   7,	  9,	 13,
				   17,	 25,   33,   49,    65,	   97,	  129,	 193,
				   257,	 385,  513,  769,   1025,  1537,  2049,	 3073,
				   4097, 6145, 8193, 12289, 16385, 24577, 32769, 49153};
static const uint8_t dext[32] = {0, 0, 0, 0, 1, 1, 2,  2,  3,  3,  4,  4,  5,  5,  6,  6,
				 7, 7, 8, 8, 9, 9, 10, 10, 11, 11, 12, 12, 13, 13, 14, 14};

struct inf64 *inf64_new(void)
{
	return calloc(1, sizeof(struct inf64));
}

void inf64_free(struct inf64 *s)
{
	free(s);
}

size_t inf64_memory(void)
{
	return sizeof(struct inf64);
}

const char *inf64_msg(const struct inf64 *s)
{
	return s->msg ? s->msg : "invalid Deflate64 data";
}

size_t inf64_unused(const struct inf64 *s)
{
	return s->inlen - s->inpos + s->bitcnt / 8;
}

size_t inf64_feed(struct inf64 *s, const void *p, size_t len)
{
	if (s->inpos && s->inpos > s->inlen / 2) { /* compact */
		memmove(s->in, s->in + s->inpos, s->inlen - s->inpos);
		s->inlen -= s->inpos;
		s->inpos = 0;
	}
	if (len > IN_CAP - s->inlen)
		len = IN_CAP - s->inlen;
	memcpy(s->in + s->inlen, p, len);
	s->inlen += len;
	return len;
}

void inf64_input_end(struct inf64 *s)
{
	s->in_end = true;
}

/* Bytes held, counting the bit buffer's whole ones. */
static size_t held(const struct inf64 *s)
{
	return s->inlen - s->inpos + s->bitcnt / 8;
}

static uint32_t bits(struct inf64 *s, unsigned n)
{
	while (s->bitcnt < n) {
		if (s->inpos == s->inlen) {
			s->short_input = true;
			return 0;
		}
		s->bitbuf |= (uint64_t)s->in[s->inpos++] << s->bitcnt;
		s->bitcnt += 8;
	}
	uint32_t v = (uint32_t)(s->bitbuf & ((1ull << n) - 1));
	s->bitbuf >>= n;
	s->bitcnt -= n;
	return v;
}

/* Canonical Huffman codes (RFC 1951 3.2.2): the codes of one length are consecutive and go
 * to their symbols in symbol order; the first code of a length follows the last one of the
 * length before, shifted left a bit.  So a code is found by reading it a bit at a time (most
 * significant first) and asking, at each length, whether it falls among that length's codes.
 * (code - first never wraps: a code that is not among the codes of its length is at least
 * the first code of the next length once a bit is added.) */

/* The next symbol of h, or -1 (a code h does not have, or the input is short). */
static int decode(struct inf64 *s, const struct huff *h)
{
	uint32_t code = 0, first = 0; /* the bits read; the first code of this length */
	unsigned at = 0;	      /* symbol[] index of that first code's symbol */

	for (unsigned len = 1; len <= MAXBITS; len++) {
		code = code << 1 | bits(s, 1);
		if (s->short_input)
			return -1;
		if (code - first < h->count[len])
			return h->symbol[at + (code - first)];
		at += h->count[len];
		first = (first + h->count[len]) << 1;
	}
	return -1;
}

/* Builds h from the code lengths of n symbols (0: no code).  Returns < 0 if the lengths ask
 * for more codes than there are, 0 for a complete code, > 0 (the codes left over, counted at
 * 15 bits) for an incomplete one -- an empty one included. */
static int construct(struct huff *h, const uint8_t *length, unsigned n)
{
	uint16_t next[MAXBITS + 2];
	int spare = 1; /* codes not yet given out, at the length being looked at */

	memset(h->count, 0, sizeof(h->count));
	for (unsigned i = 0; i < n; i++)
		h->count[length[i]]++;
	for (unsigned len = 1; len <= MAXBITS; len++) {
		spare = 2 * spare - h->count[len];
		if (spare < 0)
			return spare;
	}
	next[1] = 0;
	for (unsigned len = 1; len <= MAXBITS; len++)
		next[len + 1] = (uint16_t)(next[len] + h->count[len]);
	for (unsigned i = 0; i < n; i++)
		if (length[i])
			h->symbol[next[length[i]]++] = (uint16_t)i;
	return spare;
}

static int bad(struct inf64 *s, const char *msg)
{
	s->msg = msg;
	s->state = ST_BAD;
	return INF64_BAD;
}

static void fixed_tables(struct inf64 *s)
{
	uint8_t l[288];
	unsigned i = 0;

	for (; i < 144; i++)
		l[i] = 8;
	for (; i < 256; i++)
		l[i] = 9;
	for (; i < 280; i++)
		l[i] = 7;
	for (; i < 288; i++)
		l[i] = 8;
	construct(&s->lit, l, 288);
	for (i = 0; i < 32; i++)
		l[i] = 5;
	construct(&s->dist, l, 32);
}

static int dynamic_tables(struct inf64 *s)
{
	static const uint8_t order[19] = {16, 17, 18, 0, 8,  7, 9,  6, 10, 5,
					  11, 4,  12, 3, 13, 2, 14, 1, 15};
	uint8_t l[320];
	unsigned nlen = bits(s, 5) + 257, ndist = bits(s, 5) + 1, ncode = bits(s, 4) + 4, i;

	if (nlen > 286)
		return bad(s, "too many length codes");
	memset(l, 0, sizeof(l));
	for (i = 0; i < ncode; i++)
		l[order[i]] = (uint8_t)bits(s, 3);
	if (construct(&s->lit, l, 19) != 0) /* incomplete or empty: refused, as zlib does */
		return bad(s, "incomplete code-length code");
	for (i = 0; i < nlen + ndist;) {
		int sym = decode(s, &s->lit);
		unsigned rep, len = 0;
		if (sym < 0)
			return bad(s, "invalid code-length code");
		if (sym < 16) {
			l[i++] = (uint8_t)sym;
			continue;
		}
		if (sym == 16) {
			if (i == 0)
				return bad(s, "a repeat with no length before it");
			len = l[i - 1];
			rep = 3 + bits(s, 2);
		} else if (sym == 17) {
			rep = 3 + bits(s, 3);
		} else {
			rep = 11 + bits(s, 7);
		}
		if (i + rep > nlen + ndist)
			return bad(s, "too many code lengths");
		while (rep--)
			l[i++] = (uint8_t)len;
	}
	if (l[256] == 0)
		return bad(s, "no end-of-block code");
	if (construct(&s->lit, l, nlen) < 0)
		return bad(s, "over-subscribed literal/length code");
	if (construct(&s->dist, l + nlen, ndist) < 0)
		return bad(s, "over-subscribed distance code");
	return 0;
}

/* A block header, with enough input held. */
static int header(struct inf64 *s)
{
	s->last = bits(s, 1);
	unsigned type = bits(s, 2);

	if (type == 0) {
		s->bitbuf >>= s->bitcnt % 8; /* to a byte boundary */
		s->bitcnt -= s->bitcnt % 8;
		uint32_t len = bits(s, 16), nlen = bits(s, 16);
		if (!s->short_input && len != (~nlen & 0xffff))
			return bad(s, "stored block length does not match its complement");
		s->stored = len;
		s->state = ST_STORED;
	} else if (type == 1) {
		fixed_tables(s);
		s->state = ST_HUFF;
	} else if (type == 2) {
		if (dynamic_tables(s) < 0)
			return INF64_BAD;
		s->state = ST_HUFF;
	} else {
		return bad(s, "invalid block type");
	}
	if (s->short_input)
		return bad(s, "the data ends inside a block header");
	return 0;
}

static void put(struct inf64 *s, uint8_t b)
{
	s->win[s->total++ & (W64 - 1)] = b;
}

/* One symbol of a Huffman block, with enough input held: 1 at its end-of-block, 0, or bad. */
static int symbol(struct inf64 *s, uint8_t *out, size_t *got)
{
	int sym = decode(s, &s->lit);

	if (sym < 0)
		return bad(s, s->short_input ? "the data ends inside a block" : "invalid code");
	if (sym < 256) {
		put(s, (uint8_t)sym);
		out[(*got)++] = (uint8_t)sym;
		return 0;
	}
	if (sym == 256)
		return 1;
	sym -= 257;
	if (sym >= 29)
		return bad(s, "invalid length code");
	uint32_t ml = lbase[sym] + bits(s, lext[sym]);
	int ds = decode(s, &s->dist);
	if (ds < 0 || ds >= 32)
		return bad(s, s->short_input ? "the data ends inside a block"
					     : "invalid distance code");
	uint32_t d = dbase[ds] + bits(s, dext[ds]);
	if (s->short_input)
		return bad(s, "the data ends inside a block");
	if (d > s->total)
		return bad(s, "a distance before the first byte");
	s->mlen = ml;
	s->mdist = d;
	return 0;
}

int inf64_out(struct inf64 *s, uint8_t *out, size_t len, size_t *got)
{
	*got = 0;
	while (*got < len) {
		if (s->mlen) { /* a match being copied */
			uint8_t b = s->win[(s->total - s->mdist) & (W64 - 1)];
			put(s, b);
			out[(*got)++] = b;
			s->mlen--;
			continue;
		}
		switch (s->state) {
		case ST_BAD:
			return INF64_BAD;
		case ST_DONE:
			return INF64_END;
		case ST_HEADER:
			if (held(s) < HDR_NEED && !s->in_end)
				return INF64_MORE;
			if (header(s) < 0)
				return INF64_BAD;
			break;
		case ST_STORED:
			if (!s->stored) {
				s->state = s->last ? ST_DONE : ST_HEADER;
				break;
			}
			if (s->inpos == s->inlen) {
				if (s->in_end)
					return bad(s, "the data ends inside a stored block");
				return INF64_MORE;
			}
			/* bitcnt is 0 here: the header left the input byte-aligned and used
			 * whole bytes */
			put(s, s->in[s->inpos]);
			out[(*got)++] = s->in[s->inpos++];
			s->stored--;
			break;
		case ST_HUFF: {
			if (held(s) < SYM_NEED && !s->in_end)
				return INF64_MORE;
			int r = symbol(s, out, got);
			if (r < 0)
				return INF64_BAD;
			if (r == 1)
				s->state = s->last ? ST_DONE : ST_HEADER;
			break;
		}
		}
	}
	return s->state == ST_DONE && !s->mlen ? INF64_END : INF64_MORE;
}
