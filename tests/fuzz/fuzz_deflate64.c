/* libFuzzer harness: inflate64.c, our Deflate64 decoder, and the "deflate64" codec over it.
 *
 * Input: a raw Deflate64 stream (seeds: the entries of zips 7zz wrote with -mm=Deflate64,
 * cut out by make-seeds.sh).
 *
 * Contracts: the decoder stays in bounds and ends with INF64_END or INF64_BAD once its input
 * has ended (never INF64_MORE without progress); what it decodes does not depend on how the
 * input is fed and the output taken (two decodes in pieces of sizes drawn from the input's
 * hash give the same status and bytes); the codec's scan gives those bytes too, and -EIO
 * exactly where the decoder says INF64_BAD.  Output is followed up to OUT_CAP bytes (a stream
 * of a few KiB can decode to GiBs: code 285 copies 65,538 bytes); past that the input is
 * dropped.
 */
#include "codecs/inflate64.h"
#include "fuzz_common.h"

#define OUT_CAP (4u << 20)

/* Decodes data in pieces from rng (pieces 0: all at once).  Returns INF64_END, INF64_BAD, or
 * INF64_MORE when the output reached OUT_CAP; *got bytes in out. */
static int run(const uint8_t *data, size_t size, struct fz_rng *rng, uint8_t *out, size_t *got)
{
	struct inf64 *s = inf64_new();
	size_t fed = 0;
	int ended = 0, r = INF64_BAD;

	*got = 0;
	if (!s)
		return -ENOMEM;
	while (*got < OUT_CAP) {
		size_t n, room = OUT_CAP - *got, feed = size - fed;

		if (rng) {
			room = 1 + fz_rng_below(rng, room < 70000 ? room : 70000);
			feed = feed ? 1 + fz_rng_below(rng, feed) : 0;
		}
		r = inf64_out(s, out + *got, room, &n);
		*got += n;
		if (r != INF64_MORE)
			break;
		if (n)
			continue;
		if (fed < size) {
			fed += inf64_feed(s, data + fed, feed);
		} else {
			FZ_ASSERT(!ended); /* no progress after the input ended */
			inf64_input_end(s);
			ended = 1;
		}
	}
	FZ_ASSERT(*got <= OUT_CAP);
	if (r == INF64_END)
		FZ_ASSERT(inf64_unused(s) <= size);
	inf64_free(s);
	return r;
}

/* The codec's scan of data, compared with out[0..got) and status r. */
static void scan(const uint8_t *data, size_t size, const uint8_t *out, size_t got, int r)
{
	static uint8_t buf[65536];
	struct codec_opts o = {.threads = 1};
	struct codec_sink sink = {.checkpoint = fz_null_ckpt};
	struct src *in = src_from_mem(data, size);
	struct codec_scan *s = NULL;
	size_t pos = 0;
	ssize_t n = in ? codec_deflate64.scan_new(in, &o, &sink, &s) : -ENOMEM;

	while (n == 0 && pos < got) {
		n = codec_deflate64.scan_read(s, buf, sizeof(buf));
		if (n > 0) {
			FZ_ASSERT((size_t)n <= got - pos && memcmp(buf, out + pos, (size_t)n) == 0);
			pos += (size_t)n;
			n = 0;
		} else if (n == 0) {
			break;
		}
	}
	if (n == 0 && r != INF64_MORE) { /* all of it: now the end, or the error */
		n = codec_deflate64.scan_read(s, buf, sizeof(buf));
		FZ_ASSERT(pos == got);
		FZ_ASSERT(r == INF64_END ? n == 0 : n == -EIO);
	}
	FZ_ASSERT(n == 0 || n == -EIO || n == -ENOMEM);
	codec_deflate64.scan_free(s);
	src_free(in);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static uint8_t *a, *b;
	struct fz_rng rng;
	size_t na, nb;
	int ra, rb;

	fz_init_log();
	if (!a && !(a = malloc(OUT_CAP)))
		return 0;
	if (!b && !(b = malloc(OUT_CAP)))
		return 0;
	fz_rng_init(&rng, data, size);
	ra = run(data, size, NULL, a, &na);
	if (ra == -ENOMEM)
		return 0;
	rb = run(data, size, &rng, b, &nb);
	if (rb == -ENOMEM)
		return 0;
	if (ra == INF64_MORE || rb == INF64_MORE) { /* a bomb: compare what both have */
		size_t n = na < nb ? na : nb;
		FZ_ASSERT(memcmp(a, b, n) == 0);
		return 0;
	}
	FZ_ASSERT(ra == rb);
	FZ_ASSERT(na == nb && memcmp(a, b, na) == 0);
	scan(data, size, a, na, ra);
	return 0;
}
