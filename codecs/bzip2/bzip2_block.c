/* bzip2_block: one bzip2 block decoded (see bzip2_block.h for the contract).
 *
 * The stages, as the format defines them (a block is the output of: run-length encoding of
 * runs of 4..255 equal bytes (RLE1), the Burrows-Wheeler transform, move-to-front, run-length
 * coding of zeros as RUNA/RUNB digits, Huffman coding with up to 6 tables switched every 50
 * symbols):
 *
 *  1. The header: magic, CRC, randomised bit, origPtr (24 bits), the two-level map of the
 *     bytes used, the table and selector counts, the MTF-coded selectors and each table's code
 *     lengths as deltas.
 *  2. Symbols.  libbz2 decodes every code bit by bit.  Here each table has a 2^BZB_LUT_BITS
 *     entry lookup table giving the symbol and length of every code up to BZB_LUT_BITS long
 *     (all codes of real blocks but the rare ones), and longer codes are resolved by canonical
 *     order from the first length past the table.  Bits are read 32 at a time from an
 *     unaligned big-endian load at the bit position, so there is no bit buffer to refill.
 *     RUNA/RUNB digits accumulate a run of the MTF front byte; other symbols are MTF indices.
 *     Each resulting BWT byte goes into the low 8 bits of tt[i], and its count into freq.
 *  3. The inverse BWT as libbz2's fast mode does it: one pass over tt links each position to
 *     the next (tt[cum[byte]++] |= i << 8), then the output is a walk along the links from
 *     origPtr, one dependent load per byte, RLE1 undone on the way.  The walk is bound by
 *     memory latency (tt is 3.6 MB at level 9, past the L2 cache), and by nothing else.
 *     Measured on this project's 2-core VM (issue 21's closing note), other walks were
 *     slower: two walks at once, forward along these links and backward along LF from the
 *     block's last byte (each making half; their misses overlap, but over two arrays, twice
 *     the working set) took 1.7 x the time of this one; one 6-byte entry per position with
 *     both links, and two blocks walked together, slower still.  The array gets huge pages
 *     where the kernel gives them (the walk's TLB misses).
 *
 * The walk and RLE1 are resumable, so bzb_read produces any amount at a time, and a caller
 * that needs only the start of a block pays only for that start.
 */
#include "codecs/bzip2/bzip2_block.h"

#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#ifdef __SSE2__
#include <emmintrin.h>
#endif

#include "config.h"
#include "common/byteio.h"

#if HAVE_ISAL
#include <isa-l/crc.h>
#endif

#define BZB_MAGIC 0x314159265359ULL
#define BZB_HUGE (2u << 20) /* a huge page */
#define BZB_LUT_BITS 10
#define BZB_MAX_LEN 20
#define BZB_MAX_GROUPS 6
#define BZB_MAX_ALPHA 258
#define BZB_MAX_SELECTORS 18002 /* libbz2 1.0.8 ignores selectors past this many */
#define BZB_GROUP 50		/* symbols coded with one selector's table */
#define BZB_MAX_RUN (2u << 20)	/* a RUNA/RUNB digit weight past this is damage, as in libbz2 */

struct bzb_table {
	/* code of <= BZB_LUT_BITS bits at the top of the index: sym << 5 | len; 0 = longer or
	 * invalid */
	uint16_t lut[1u << BZB_LUT_BITS];
	/* canonical order: codes of length l are first[l] .. first[l] + count[l] - 1, for the
	 * symbols perm[start[l] ..] */
	uint32_t first[BZB_MAX_LEN + 2];
	uint16_t count[BZB_MAX_LEN + 2];
	uint16_t start[BZB_MAX_LEN + 2];
	uint16_t perm[BZB_MAX_ALPHA];
	unsigned maxlen;
};

struct bzb {
	uint32_t *tt; /* BWT bytes (low 8 bits), then forward links (high 24) */
	size_t memlen; /* bytes allocated for tt */
	size_t cap;    /* entries of tt */
	bool loaded;
	uint32_t stored_crc;

	/* the walk */
	uint32_t nblock; /* symbols in the block */
	uint32_t left;	 /* BWT bytes not yet walked */
	uint32_t tpos;
	int last;	 /* last byte output, -1 before the first */
	unsigned rl;	 /* how many times in a row `last` was output (1..4) */
	unsigned rep;	 /* copies of `last` still owed by an RLE1 count */
	uint32_t crc;	 /* running CRC of the bytes produced */
	bool finished;	 /* every byte returned and the CRC matched */

	struct bzb_table tab[BZB_MAX_GROUPS];
	uint8_t sel[BZB_MAX_SELECTORS];
};

bool bzb_use_libbz2(void)
{
	const char *e = getenv("TARSEEK_BZIP2");

	return e && strcmp(e, "libbz2") == 0;
}

/* ---- CRC ------------------------------------------------------------------------------------- */

static uint32_t bzb_crc_tab[8][256];
static pthread_once_t bzb_crc_once = PTHREAD_ONCE_INIT;

static void bzb_crc_init(void)
{
	for (unsigned i = 0; i < 256; i++) {
		uint32_t c = (uint32_t)i << 24;
		for (int k = 0; k < 8; k++)
			c = c & 0x80000000u ? c << 1 ^ 0x04c11db7u : c << 1;
		bzb_crc_tab[0][i] = c;
	}
	for (unsigned i = 0; i < 256; i++)
		for (int t = 1; t < 8; t++) {
			uint32_t c = bzb_crc_tab[t - 1][i];
			bzb_crc_tab[t][i] = c << 8 ^ bzb_crc_tab[0][c >> 24];
		}
}

uint32_t bzb_crc_update(uint32_t crc, const uint8_t *p, size_t len)
{
#if HAVE_ISAL
	/* ISA-L's crc32_ieee is this CRC (most significant bit first, 0x04c11db7) with its
	 * register inverted on the way in and out; with PCLMULQDQ it runs at memory speed, where
	 * the tables took 3 % of a bzip2 pass */
	if (len >= 64)
		return ~crc32_ieee(~crc, (const unsigned char *)p, len);
#endif
	pthread_once(&bzb_crc_once, bzb_crc_init);
	const uint32_t(*t)[256] = (const uint32_t(*)[256])bzb_crc_tab;
	while (len >= 8) {
		uint32_t hi = crc ^ be32(p);
		crc = t[7][hi >> 24] ^ t[6][(hi >> 16) & 0xff] ^ t[5][(hi >> 8) & 0xff] ^
		      t[4][hi & 0xff] ^ t[3][p[4]] ^ t[2][p[5]] ^ t[1][p[6]] ^ t[0][p[7]];
		p += 8;
		len -= 8;
	}
	while (len--)
		crc = crc << 8 ^ t[0][(crc >> 24) ^ *p++];
	return crc;
}

/* ---- bits ------------------------------------------------------------------------------------ */

/* The 32 bits at bit position pos of p, most significant first. */
static inline uint32_t bzb_peek32(const uint8_t *p, uint64_t pos)
{
	return (uint32_t)((be64(p + (pos >> 3)) << (pos & 7)) >> 32);
}

/* A cursor over the block's bits; reads past `end` fail (the buffer holds BZB_PAD bytes more,
 * so a read that starts at or before end is always in bounds). */
struct bzb_bits {
	const uint8_t *p;
	uint64_t pos, end;
};

/* n bits, 1 <= n <= 32; false past the end. */
static inline bool bzb_get(struct bzb_bits *r, unsigned n, uint32_t *v)
{
	if (r->pos > r->end)
		return false;
	*v = bzb_peek32(r->p, r->pos) >> (32 - n);
	r->pos += n;
	return r->pos <= r->end;
}

/* ---- Huffman tables -------------------------------------------------------------------------- */

/* Builds t from the code lengths len[0..alpha) (each 1..20).  false if they do not form a
 * prefix code (more codes of some length than fit). */
static bool bzb_table_build(struct bzb_table *t, const uint8_t *len, unsigned alpha)
{
	uint32_t code = 0;
	unsigned idx = 0;

	memset(t->count, 0, sizeof(t->count));
	for (unsigned s = 0; s < alpha; s++)
		t->count[len[s]]++;
	t->maxlen = 0;
	for (unsigned l = 1; l <= BZB_MAX_LEN; l++) {
		t->first[l] = code;
		t->start[l] = (uint16_t)idx;
		code += t->count[l];
		idx += t->count[l];
		if (code > (1u << l))
			return false; /* oversubscribed */
		if (t->count[l])
			t->maxlen = l;
		code <<= 1;
	}
	/* perm: symbols by (length, symbol) */
	uint16_t fill[BZB_MAX_LEN + 2];
	memcpy(fill, t->start, sizeof(fill));
	for (unsigned s = 0; s < alpha; s++)
		t->perm[fill[len[s]]++] = (uint16_t)s;
	memset(t->lut, 0, sizeof(t->lut));
	for (unsigned l = 1; l <= BZB_LUT_BITS && l <= t->maxlen; l++) {
		unsigned span = 1u << (BZB_LUT_BITS - l);
		for (unsigned k = 0; k < t->count[l]; k++) {
			uint32_t c = t->first[l] + k;
			uint16_t e = (uint16_t)(t->perm[t->start[l] + k] << 5 | l);
			for (unsigned j = 0; j < span; j++)
				t->lut[(c << (BZB_LUT_BITS - l)) + j] = e;
		}
	}
	return true;
}

/* The symbol whose code is at the top of v (32 bits), its length in *n; -1 if no code of
 * the table is a prefix of v. */
static inline int bzb_decode_sym(const struct bzb_table *t, uint32_t v, unsigned *n)
{
	uint16_t e = t->lut[v >> (32 - BZB_LUT_BITS)];

	if (e) {
		*n = e & 31;
		return e >> 5;
	}
	for (unsigned l = BZB_LUT_BITS + 1; l <= t->maxlen; l++) {
		uint32_t c = v >> (32 - l);
		if (c - t->first[l] < t->count[l]) {
			*n = l;
			return t->perm[t->start[l] + (c - t->first[l])];
		}
	}
	return -1;
}

/* ---- move to front -------------------------------------------------------------------------- */

/* Moves mtf[j] to the front (mtf[1 .. j] = mtf[0 .. j - 1]) and returns it; mtf is 16-byte
 * aligned with 16 bytes of room past its 256.  With SSE2, in aligned 16-byte chunks, each
 * shifted by one byte with the last byte of the chunk before carried in: no loop over bytes,
 * and loads that match the earlier stores (a byte store into a chunk the next call loads
 * whole would stall it).  The shifts stop in the chunk holding j: its lanes past j keep their
 * bytes. */
#ifdef __SSE2__
static const uint8_t bzb_lanes[32] = {0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
				      0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff};

static inline uint8_t bzb_mtf_front(uint8_t *mtf, unsigned j)
{
	uint8_t m = mtf[j];
	unsigned last = j / 16;
	__m128i carry = _mm_slli_si128(_mm_cvtsi32_si128(m), 15);

	for (unsigned k = 0; k < last; k++) {
		__m128i cur = _mm_load_si128((const __m128i *)(mtf + 16 * k));
		_mm_store_si128((__m128i *)(mtf + 16 * k),
				_mm_or_si128(_mm_slli_si128(cur, 1), _mm_srli_si128(carry, 15)));
		carry = cur;
	}
	__m128i cur = _mm_load_si128((const __m128i *)(mtf + 16 * last));
	__m128i sh = _mm_or_si128(_mm_slli_si128(cur, 1), _mm_srli_si128(carry, 15));
	__m128i keep = _mm_loadu_si128((const __m128i *)(bzb_lanes + 15 - j % 16));
	_mm_store_si128((__m128i *)(mtf + 16 * last),
			_mm_or_si128(_mm_and_si128(keep, sh), _mm_andnot_si128(keep, cur)));
	return m;
}
#else
static inline uint8_t bzb_mtf_front(uint8_t *mtf, unsigned j)
{
	uint8_t m = mtf[j];

	memmove(mtf + 1, mtf, j);
	mtf[0] = m;
	return m;
}
#endif

/* ---- loading a block ------------------------------------------------------------------------- */

struct bzb *bzb_new(void)
{
	return calloc(1, sizeof(struct bzb));
}

void bzb_free(struct bzb *b)
{
	if (!b)
		return;
	free(b->tt);
	free(b);
}

size_t bzb_memory(const struct bzb *b)
{
	return sizeof(*b) + b->memlen;
}

uint32_t bzb_stored_crc(const struct bzb *b)
{
	return b->stored_crc;
}

/* The header up to the symbols: fills the tables, the selectors, the map of bytes used. */
static int bzb_header(struct bzb *b, struct bzb_bits *r, uint8_t *unseq, unsigned *nuse,
		      unsigned *nsel, uint32_t *origptr, bool *randomised)
{
	uint32_t v, hi, lo, map;
	unsigned ngroups, alpha, n = 0;

	if (!bzb_get(r, 24, &hi) || !bzb_get(r, 24, &lo) || ((uint64_t)hi << 24 | lo) != BZB_MAGIC)
		return -EIO;
	if (!bzb_get(r, 32, &b->stored_crc) || !bzb_get(r, 1, &v))
		return -EIO;
	*randomised = v != 0;
	if (!bzb_get(r, 24, origptr) || !bzb_get(r, 16, &map))
		return -EIO;
	for (unsigned i = 0; i < 16; i++) {
		if (!(map & (0x8000u >> i)))
			continue;
		if (!bzb_get(r, 16, &v))
			return -EIO;
		for (unsigned j = 0; j < 16; j++)
			if (v & (0x8000u >> j))
				unseq[n++] = (uint8_t)(i * 16 + j);
	}
	if (n == 0)
		return -EIO;
	*nuse = n;
	alpha = n + 2;
	if (!bzb_get(r, 3, &v) || v < 2 || v > BZB_MAX_GROUPS)
		return -EIO;
	ngroups = v;
	if (!bzb_get(r, 15, &v) || v < 1)
		return -EIO;
	unsigned count = v, keep = count < BZB_MAX_SELECTORS ? count : BZB_MAX_SELECTORS;
	uint8_t mtf[BZB_MAX_GROUPS];
	for (unsigned g = 0; g < ngroups; g++)
		mtf[g] = (uint8_t)g;
	for (unsigned i = 0; i < count; i++) {
		unsigned j = 0;
		for (;;) {
			if (!bzb_get(r, 1, &v))
				return -EIO;
			if (!v)
				break;
			if (++j >= ngroups)
				return -EIO;
		}
		uint8_t g = mtf[j];
		memmove(mtf + 1, mtf, j);
		mtf[0] = g;
		if (i < keep)
			b->sel[i] = g;
	}
	*nsel = keep;
	for (unsigned g = 0; g < ngroups; g++) {
		uint8_t len[BZB_MAX_ALPHA];
		uint32_t cur;
		if (!bzb_get(r, 5, &cur))
			return -EIO;
		for (unsigned s = 0; s < alpha; s++) {
			for (;;) {
				if (cur < 1 || cur > BZB_MAX_LEN || !bzb_get(r, 1, &v))
					return -EIO;
				if (!v)
					break;
				if (!bzb_get(r, 1, &v))
					return -EIO;
				cur = v ? cur - 1 : cur + 1;
			}
			len[s] = (uint8_t)cur;
		}
		if (!bzb_table_build(&b->tab[g], len, alpha))
			return -EIO;
	}
	return 0;
}

int bzb_load(struct bzb *b, const uint8_t *p, unsigned shift, uint64_t nbits, unsigned level)
{
	struct bzb_bits r = {.p = p, .pos = shift, .end = shift + nbits};
	uint8_t unseq[256];
	_Alignas(16) uint8_t mtf[256 + 16];
	uint32_t freq[256] = {0}, cum[256];
	unsigned nuse, nsel;
	uint32_t origptr, nmax = level * 100000u;
	bool randomised;
	int rc;

	b->loaded = false;
	if (level < 1 || level > 9)
		return -EIO;
	if (b->cap < nmax) {
		/* the walk touches a random entry of tt per byte: with 4 KiB pages, most are TLB
		 * misses too, so tt gets huge pages where the kernel gives them */
		size_t len = ((size_t)nmax * 4 + BZB_HUGE - 1) / BZB_HUGE * BZB_HUGE;
		void *mem;
		free(b->tt);
		b->tt = NULL;
		b->memlen = b->cap = 0;
		if (posix_memalign(&mem, BZB_HUGE, len))
			return -ENOMEM;
#ifdef MADV_HUGEPAGE
		(void)madvise(mem, len, MADV_HUGEPAGE); /* a hint: failure changes nothing */
#endif
		b->memlen = len;
		b->tt = mem;
		b->cap = nmax;
	}
	rc = bzb_header(b, &r, unseq, &nuse, &nsel, &origptr, &randomised);
	if (rc)
		return rc;
	if (randomised)
		return BZB_RANDOMISED;

	/* symbols */
	uint32_t *tt = b->tt, nblock = 0, run = 0, weight = 1;
	const uint8_t *src = r.p;
	uint64_t pos = r.pos, end = r.end;
	unsigned eob = nuse + 1, gsel = 0, gleft = 0;
	const struct bzb_table *t = NULL;

	memset(mtf, 0, sizeof(mtf)); /* the list holds the bytes themselves; past nuse, kept */
	memcpy(mtf, unseq, nuse);
	for (;;) {
		if (gleft == 0) {
			if (gsel >= nsel)
				return -EIO;
			t = &b->tab[b->sel[gsel++]];
			gleft = BZB_GROUP;
		}
		gleft--;
		if (pos > end)
			return -EIO;
		unsigned n;
		int sym = bzb_decode_sym(t, bzb_peek32(src, pos), &n);
		if (sym < 0)
			return -EIO;
		pos += n;
		if (sym <= 1) { /* RUNA, RUNB: a digit of the run of the front byte */
			if (weight >= BZB_MAX_RUN)
				return -EIO;
			run += (uint32_t)(sym + 1) * weight;
			weight <<= 1;
			continue;
		}
		if (run) {
			uint8_t c = mtf[0];
			if (run > nmax - nblock)
				return -EIO;
			freq[c] += run;
			for (uint32_t k = 0; k < run; k++)
				tt[nblock + k] = c;
			nblock += run;
			run = 0;
			weight = 1;
		}
		if ((unsigned)sym == eob)
			break;
		/* MTF index sym - 1, 1..nuse-1 */
		uint8_t m = bzb_mtf_front((uint8_t *)mtf, (unsigned)sym - 1);
		if (nblock >= nmax)
			return -EIO;
		freq[m]++;
		tt[nblock++] = m;
	}
	if (pos != end || nblock == 0 || origptr >= nblock)
		return -EIO;

	/* links for the inverse BWT */
	uint32_t sum = 0;
	for (unsigned c = 0; c < 256; c++) {
		cum[c] = sum;
		sum += freq[c];
	}
	for (uint32_t i = 0; i < nblock; i++)
		tt[cum[tt[i] & 0xff]++] |= i << 8;

	b->left = nblock;
	b->tpos = tt[origptr] >> 8;
	b->nblock = nblock;
	b->last = -1;
	b->rl = 0;
	b->rep = 0;
	b->crc = 0xffffffffu;
	b->finished = false;
	b->loaded = true;
	return 0;
}

/* ---- output ---------------------------------------------------------------------------------- */

ssize_t bzb_read(struct bzb *b, void *buf, size_t len)
{
	uint8_t *out = buf, *o = out, *oend = out + len;
	const uint32_t *tt = b->tt;
	uint32_t tpos = b->tpos, left = b->left;
	unsigned rl = b->rl, rep = b->rep;
	int last = b->last;

	if (!b->loaded)
		return -EINVAL;
	if (b->finished)
		return 0;
	while (o < oend) {
		if (rep) {
			size_t k = (size_t)(oend - o) < rep ? (size_t)(oend - o) : rep;
			memset(o, last, k);
			o += k;
			rep -= (unsigned)k;
			continue;
		}
		if (!left)
			break;
		/* the hot loop: no RLE1 copies owed */
		while (left && o < oend) {
			uint32_t e = tt[tpos];
			unsigned c = e & 0xff;
			tpos = e >> 8;
			left--;
			if (rl == 4) { /* an RLE1 count: c more copies of last */
				rep = c;
				rl = 0;
				break;
			}
			*o++ = (uint8_t)c;
			if ((int)c == last) {
				rl++;
			} else {
				last = (int)c;
				rl = 1;
			}
		}
	}
	b->tpos = tpos;
	b->left = left;
	b->rl = rl;
	b->rep = rep;
	b->last = last;
	b->crc = bzb_crc_update(b->crc, out, (size_t)(o - out));
	if (!left && !rep) {
		if (~b->crc != b->stored_crc) {
			b->loaded = false;
			return -EIO;
		}
		b->finished = true;
	}
	return o - out;
}
