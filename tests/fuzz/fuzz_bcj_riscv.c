/* libFuzzer harness: bcj_riscv.c, our RISC-V branch converter (decoder).
 *
 * Input: 4 bytes of start position, then the bytes to convert (seeds: the packed streams of
 * 7z archives 7zz wrote with -m0=RISCV -m1=Copy, and RISC-V-like instruction streams).
 *
 * Contracts: the converter stays in bounds and returns at most the size it was given, and
 * leaves fewer than 8 bytes unconverted; what it converts does not depend on how the stream is
 * cut: converting in pieces of sizes drawn from the input's hash, carrying the unconverted
 * tail into the next piece as the 7z node does (sz_riscv_read), and passing the last tail as
 * it is, gives the bytes one call over the whole stream gives.
 */
#include "codecs/7z/bcj_riscv.h"
#include "fuzz_common.h"

#define FZ_MAX (1u << 20)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static uint8_t whole[FZ_MAX], piece[FZ_MAX], out[FZ_MAX];
	struct fz_rng rng;
	uint32_t pos;
	size_t n, done, at = 0, have = 0, outlen = 0;

	fz_init_log();
	if (size < 4 || size - 4 > FZ_MAX)
		return 0;
	pos = (uint32_t)data[0] | (uint32_t)data[1] << 8 | (uint32_t)data[2] << 16 |
	      (uint32_t)data[3] << 24;
	data += 4;
	size -= 4;
	fz_rng_init(&rng, data, size);
	memcpy(whole, data, size);
	done = bcj_riscv_decode(whole, size, pos);
	FZ_ASSERT(done <= size && size - done < 8);

	/* piece holds [0, have): the tail left unconverted, then the next bytes of the input */
	while (at < size) {
		size_t step = 1 + (size_t)fz_rng_below(&rng, fz_rng_next(&rng) & 1 ? 16 : 70000);

		if (step > size - at)
			step = size - at;
		memcpy(piece + have, data + at, step);
		at += step;
		have += step;
		n = bcj_riscv_decode(piece, have, pos);
		FZ_ASSERT(n <= have);
		memcpy(out + outlen, piece, n);
		outlen += n;
		pos += (uint32_t)n;
		memmove(piece, piece + n, have - n);
		have -= n;
	}
	memcpy(out + outlen, piece, have);
	outlen += have;
	FZ_ASSERT(outlen == size && memcmp(out, whole, size) == 0);
	return 0;
}
