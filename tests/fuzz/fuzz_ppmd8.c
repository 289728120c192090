/* libFuzzer harness: ppmd8.c, our PPMd var.I decoder (zip method 98), and the "ppmd-zip" codec
 * over it.
 *
 * Input: zip's 2 parameter bytes (little-endian: order - 1, memory in MiB - 1, restore
 * method), then the raw stream -- what a zip entry of method 98 holds (seeds: 7zz's zip entries
 * cut out by make-seeds.sh).  Parameters are folded into what the fuzzer can run many times a
 * second: order 1 is taken as 2; with restore method 0 or 1 the memory is 1..4 MiB (the field
 * modulo 4: 7zz's small entries fit); with the methods zip does not allow (2..15) the input
 * asks for a tiny model instead -- method & 1, 2 KiB << (field % 10) -- where the allocator
 * glues, the model restarts and cuts itself down every few hundred bytes.
 *
 * Contracts: the decoder stays in its block and ends with PPMD8_END or PPMD8_BAD once its
 * input has ended and room was given (never PPMD8_MORE without output); what it decodes does
 * not depend on how the input is fed and the output taken (two decodes, one in pieces drawn
 * from the input's hash, give the same status and bytes); ppmd8_finished returns.  Output is
 * followed up to OUT_CAP bytes (16 KiB: three decodes of that under the sanitizers take a few
 * milliseconds; a 1 MiB model would need 128 KiB of text to run out, the tiny ones do here).  When
 * the parameters were not folded, the codec's scan (the size OUT_CAP) gives those bytes too and
 * then -EIO where the decoder failed or met an end marker, or 0 / -EIO at OUT_CAP (the end check).
 */
#include "codecs/codec.h"
#include "codecs/ppmd/ppmd8.h"
#include "common/byteio.h"
#include "fuzz_common.h"

#define OUT_CAP (16u << 10) /* a tiny model restarts within it; executions stay fast */

/* Decodes in pieces from rng (NULL: all at once).  PPMD8_END, PPMD8_BAD, or PPMD8_MORE when
 * the output reached OUT_CAP; *got bytes in out. */
static int run(unsigned order, uint32_t mem, unsigned restore, const uint8_t *data, size_t size,
	       struct fz_rng *rng, uint8_t *out, size_t *got)
{
	struct ppmd8 *d;
	size_t fed = 0;
	int ended = 0, r = PPMD8_BAD;

	*got = 0;
	if (ppmd8_new(order, mem, restore, &d))
		return -ENOMEM;
	while (*got < OUT_CAP) {
		size_t n, room = OUT_CAP - *got, feed = size - fed;

		if (rng) {
			room = 1 + fz_rng_below(rng, room < 5000 ? room : 5000);
			feed = feed ? 1 + fz_rng_below(rng, feed < 3000 ? feed : 3000) : 0;
		}
		r = ppmd8_out(d, out + *got, room, &n);
		FZ_ASSERT(n <= room);
		*got += n;
		if (r != PPMD8_MORE)
			break;
		if (n)
			continue;
		if (fed < size) {
			fed += ppmd8_feed(d, data + fed, feed);
		} else {
			FZ_ASSERT(!ended); /* no progress after the input ended */
			ppmd8_input_end(d);
			ended = 1;
		}
	}
	FZ_ASSERT(*got <= OUT_CAP);
	FZ_ASSERT(ppmd8_unused(d) <= size);
	if (r == PPMD8_MORE)
		(void)ppmd8_finished(d);
	ppmd8_free(d);
	return r;
}

/* The codec's scan of data (the parameters and the stream), its size OUT_CAP, compared with
 * out[0..got) and status r. */
static void scan(const uint8_t *data, size_t size, const uint8_t *out, size_t got, int r)
{
	static uint8_t buf[65536];
	uint8_t usize[8];
	struct codec_opts o = {.threads = 1, .params = usize, .params_len = sizeof(usize)};
	struct codec_sink sink = {.checkpoint = fz_null_ckpt};
	struct src *in = src_from_mem(data, size);
	struct codec_scan *s = NULL;
	size_t pos = 0;
	ssize_t n;

	put_le64(usize, OUT_CAP);
	n = in ? codec_ppmd_zip.scan_new(in, &o, &sink, &s) : -ENOMEM;
	while (n == 0 && pos < got) {
		n = codec_ppmd_zip.scan_read(s, buf, sizeof(buf));
		if (n > 0) {
			FZ_ASSERT((size_t)n <= got - pos && memcmp(buf, out + pos, (size_t)n) == 0);
			pos += (size_t)n;
			n = 0;
		} else {
			FZ_ASSERT(n != 0); /* not before the size */
		}
	}
	if (n == 0) { /* all of it: now the end check, or the error */
		n = codec_ppmd_zip.scan_read(s, buf, sizeof(buf));
		FZ_ASSERT(pos == got);
		FZ_ASSERT(got == OUT_CAP ? (n == 0 || n == -EIO) : n == -EIO);
		FZ_ASSERT(got == OUT_CAP || r != PPMD8_MORE);
	}
	FZ_ASSERT(n == 0 || n == -EIO || n == -ENOMEM);
	FZ_ASSERT(n != -EIO || pos == got); /* the error exactly where the decoder's was */
	codec_ppmd_zip.scan_free(s);
	src_free(in);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static uint8_t *a, *b;
	struct fz_rng rng;
	unsigned v, order, field, restore;
	uint32_t mem;
	bool folded;
	size_t na, nb;
	int ra, rb;

	fz_init_log();
	if (size < 2)
		return 0;
	if (!a && !(a = malloc(OUT_CAP)))
		return 0;
	if (!b && !(b = malloc(OUT_CAP)))
		return 0;
	v = data[0] | (unsigned)data[1] << 8;
	order = (v & 0xF) + 1;
	field = (v >> 4) & 0xFF;
	restore = v >> 12;
	folded = order < PPMD8_ORDER_MIN || field >= 4 || restore > PPMD8_CUT_OFF;
	if (order < PPMD8_ORDER_MIN)
		order = PPMD8_ORDER_MIN;
	if (restore <= PPMD8_CUT_OFF) {
		mem = (field % 4 + 1) << 20;
	} else {
		restore &= 1;
		mem = PPMD8_MEM_MIN << (field % 10);
	}
	fz_rng_init(&rng, data, size);
	ra = run(order, mem, restore, data + 2, size - 2, NULL, a, &na);
	if (ra == -ENOMEM)
		return 0;
	rb = run(order, mem, restore, data + 2, size - 2, &rng, b, &nb);
	if (rb == -ENOMEM)
		return 0;
	FZ_ASSERT(ra == rb);
	FZ_ASSERT(na == nb && memcmp(a, b, na) == 0);
	if (!folded)
		scan(data, size, a, na, ra);
	return 0;
}
