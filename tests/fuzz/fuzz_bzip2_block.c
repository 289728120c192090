/* libFuzzer harness: bzip2_block.c, our bzip2 block decoder, against libbz2.
 *
 * Input: one parameter byte, then a block's bytes from the first byte of its magic (seeds:
 * bzip2 files from their byte 4, where the first block starts).  Parameter byte: level =
 * 1 + p % 9; the block is placed at bit shift (p / 9) % 8 of the decoder's buffer.  The block
 * ends at the first block or end-of-stream magic after its own (as the scan cuts blocks), or
 * at the input's end.
 *
 * Contracts: bzb_load and bzb_read stay in bounds and never fail but with -EIO/-ENOMEM (or
 * BZB_RANDOMISED); the output never exceeds the most a block can decode to; and when both our
 * decoder and libbz2 (given the same block as a one-block stream) decode the block with
 * matching CRCs, they give the same bytes.
 */
#include <bzlib.h>

#include "codecs/bzip2/bzip2_block.h"
#include "fuzz_common.h"

#define MAGIC_BLOCK 0x314159265359ULL
#define MAGIC_EOS 0x177245385090ULL

static unsigned get_bit(const uint8_t *p, uint64_t bit)
{
	return (p[bit / 8] >> (7 - bit % 8)) & 1;
}

static void put_bits(uint8_t *p, uint64_t bit, uint64_t v, unsigned n)
{
	for (unsigned k = 0; k < n; k++, bit++)
		if ((v >> (n - 1 - k)) & 1)
			p[bit / 8] |= (uint8_t)(0x80 >> (bit % 8));
}

/* The bit where the next magic after the block's own starts, or nbits. */
static uint64_t block_end(const uint8_t *p, uint64_t nbits)
{
	uint64_t w = 0;

	for (uint64_t b = 0; b < nbits; b++) {
		w = (w << 1 | get_bit(p, b)) & 0xffffffffffffULL;
		if (b >= 95 && (w == MAGIC_BLOCK || w == MAGIC_EOS))
			return b - 47;
	}
	return nbits;
}

/* libbz2's decode of the block p[0 .. nbits) as a one-block stream; its length, or -1. */
static long lib_decode(const uint8_t *p, uint64_t nbits, unsigned level, uint8_t *out,
		       size_t cap)
{
	size_t slen = 4 + (size_t)((nbits + 80 + 7) / 8);
	uint8_t *s = calloc(1, slen + 8);
	uint32_t crc = 0;
	bz_stream z;
	long got = -1;

	if (!s)
		return -1;
	memcpy(s, "BZh", 3);
	s[3] = (uint8_t)('0' + level);
	for (uint64_t b = 0; b < nbits; b++)
		if (get_bit(p, b))
			s[4 + b / 8] |= (uint8_t)(0x80 >> (b % 8));
	for (unsigned k = 0; k < 32; k++)
		crc = crc << 1 | get_bit(p, 48 + k);
	put_bits(s + 4, nbits, MAGIC_EOS, 48);
	put_bits(s + 4, nbits + 48, crc, 32);
	memset(&z, 0, sizeof(z));
	if (BZ2_bzDecompressInit(&z, 0, 0) == BZ_OK) {
		z.next_in = (char *)s;
		z.avail_in = (unsigned)slen;
		z.next_out = (char *)out;
		z.avail_out = (unsigned)cap;
		int rc = BZ2_bzDecompress(&z);
		if (rc == BZ_STREAM_END)
			got = (long)(cap - z.avail_out);
		BZ2_bzDecompressEnd(&z);
	}
	free(s);
	return got;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct bzb *b;
	static uint8_t *out, *ref;
	/* a block of level L decodes to at most L x 100 000 x 51 bytes (5 BWT bytes -> 259) */
	const size_t cap = (size_t)9 * 100000 * 52;

	fz_init_log();
	if (size < 2 || size > (1u << 20))
		return 0;
	if (!b) {
		b = bzb_new();
		out = malloc(cap);
		ref = malloc(cap);
		if (!b || !out || !ref)
			abort();
	}
	unsigned level = 1 + data[0] % 9, shift = (data[0] / 9) % 8;
	size_t len = size - 1;
	uint64_t nbits = block_end(data + 1, (uint64_t)len * 8);
	size_t blen = (size_t)((shift + nbits + 7) / 8);
	uint8_t *p = calloc(1, blen + BZB_PAD);

	if (!p)
		return 0;
	/* the block at bit `shift`: bytes shifted right, zero bits before it */
	for (uint64_t bit = 0; bit < nbits; bit++)
		if (get_bit(data + 1, bit))
			p[(shift + bit) / 8] |= (uint8_t)(0x80 >> ((shift + bit) % 8));
	memset(p + blen, 0xa5, BZB_PAD);

	int rc = bzb_load(b, p, shift, nbits, level);
	FZ_ASSERT(rc == 0 || rc == BZB_RANDOMISED || rc == -EIO || rc == -ENOMEM);
	long ours = -1;
	if (rc == 0) {
		size_t got = 0, piece = 1 + (size_t)(data[size - 1]) * 509;
		ssize_t n;
		while ((n = bzb_read(b, out + got, cap - got < piece ? cap - got : piece)) > 0) {
			got += (size_t)n;
			FZ_ASSERT(got < cap);
		}
		FZ_ASSERT(n == 0 || n == -EIO);
		if (n == 0)
			ours = (long)got;
	}
	if (ours >= 0) {
		long lib = lib_decode(data + 1, nbits, level, ref, cap);
		if (lib >= 0)
			FZ_ASSERT(lib == ours && memcmp(ref, out, (size_t)ours) == 0);
	}
	free(p);
	return 0;
}
