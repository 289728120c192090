/* libFuzzer harness: ppmd7.c, our PPMd var.H decoder (7z coder 030401).
 *
 * Input: 5 property bytes as 7z stores them (order, u32 memory size), then the raw stream
 * (seeds: the packed streams of 7z archives 7zz wrote with -m0=PPMd, their properties in
 * front, cut out by make-seeds.sh).  Properties out of bounds are folded into them: order
 * 2..64, memory 2 KiB..16 MiB (the decoder allows 2 GiB; the fuzzer keeps to what it can run
 * many times a second -- small sizes are where the allocator glues and the model restarts).
 *
 * Contracts: the decoder stays in its block and ends with PPMD7_END or PPMD7_BAD once its
 * input has ended and room was given (never PPMD7_MORE without output); what it decodes does
 * not depend on how the input is fed and the output taken (two decodes, one in pieces drawn
 * from the input's hash, give the same status and bytes); ppmd7_finished returns.  Output is
 * followed up to OUT_CAP bytes (a few bytes of input can stand for many).
 */
#include "codecs/ppmd/ppmd7.h"
#include "fuzz_common.h"

#define OUT_CAP (64u << 10)
#define MEM_CAP ((uint32_t)16 << 20)

/* Decodes in pieces from rng (NULL: all at once).  PPMD7_END, PPMD7_BAD, or PPMD7_MORE when
 * the output reached OUT_CAP; *got bytes in out; *fin what ppmd7_finished said. */
static int run(unsigned order, uint32_t mem, const uint8_t *data, size_t size, struct fz_rng *rng,
	       uint8_t *out, size_t *got, bool *fin)
{
	struct ppmd7 *d;
	size_t fed = 0;
	int ended = 0, r = PPMD7_BAD;

	*got = 0;
	*fin = false;
	if (ppmd7_new(order, mem, &d))
		return -ENOMEM;
	while (*got < OUT_CAP) {
		size_t n, room = OUT_CAP - *got, feed = size - fed;

		if (rng) {
			room = 1 + fz_rng_below(rng, room < 5000 ? room : 5000);
			feed = feed ? 1 + fz_rng_below(rng, feed < 3000 ? feed : 3000) : 0;
		}
		r = ppmd7_out(d, out + *got, room, &n);
		FZ_ASSERT(n <= room);
		*got += n;
		if (r != PPMD7_MORE)
			break;
		if (n)
			continue;
		if (fed < size) {
			fed += ppmd7_feed(d, data + fed, feed);
		} else {
			FZ_ASSERT(!ended); /* no progress after the input ended */
			ppmd7_input_end(d);
			ended = 1;
		}
	}
	FZ_ASSERT(*got <= OUT_CAP);
	FZ_ASSERT(ppmd7_unused(d) <= size);
	if (r == PPMD7_MORE)
		*fin = ppmd7_finished(d);
	ppmd7_free(d);
	return r;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static uint8_t *a, *b;
	struct fz_rng rng;
	unsigned order;
	uint32_t mem;
	size_t na, nb;
	bool fa, fb;
	int ra, rb;

	fz_init_log();
	if (size < 5)
		return 0;
	if (!a && !(a = malloc(OUT_CAP)))
		return 0;
	if (!b && !(b = malloc(OUT_CAP)))
		return 0;
	order = data[0];
	if (order < PPMD7_ORDER_MIN || order > PPMD7_ORDER_MAX)
		order = PPMD7_ORDER_MIN + order % (PPMD7_ORDER_MAX - PPMD7_ORDER_MIN + 1);
	mem = (uint32_t)data[1] | (uint32_t)data[2] << 8 | (uint32_t)data[3] << 16 |
	      (uint32_t)data[4] << 24;
	if (mem < PPMD7_MEM_MIN || mem > MEM_CAP)
		mem = PPMD7_MEM_MIN + mem % (MEM_CAP - PPMD7_MEM_MIN + 1);
	fz_rng_init(&rng, data, size);
	ra = run(order, mem, data + 5, size - 5, NULL, a, &na, &fa);
	if (ra == -ENOMEM)
		return 0;
	rb = run(order, mem, data + 5, size - 5, &rng, b, &nb, &fb);
	if (rb == -ENOMEM)
		return 0;
	if (ra == PPMD7_MORE || rb == PPMD7_MORE) { /* at the cap: compare what both have */
		size_t n = na < nb ? na : nb;
		FZ_ASSERT(memcmp(a, b, n) == 0);
		return 0;
	}
	FZ_ASSERT(ra == rb);
	FZ_ASSERT(na == nb && memcmp(a, b, na) == 0);
	return 0;
}
