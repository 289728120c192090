/* bcj_riscv.c, the RISC-V branch converter: two vectors worked out from the instruction
 * encodings (RISC-V spec) and the filter's format (bcj_riscv.h), the bytes it leaves for the
 * next call, and that converting in pieces gives what one call gives.  Archives made by 7zz
 * -mf=RISCV are compared with 7zz x in tests/mount/test_7z.py. */
#include "codecs/7z/bcj_riscv.h"

#include <stdlib.h>
#include <string.h>

#include "testutil.h"

static void vectors(void)
{
	/* JAL ra to pc + 0x2000 at pc 0x1000: stored as the absolute 0x3000 (bits 20:1 in
	 * b1's high nibble, b2, b3); back to the J-type imm (0x2000: imm[19:12] = 2) */
	uint8_t jal[12] = {0xEF, 0x00, 0x18, 0x00};
	static const uint8_t jal_want[4] = {0xEF, 0x20, 0x00, 0x00};
	/* AUIPC ra, 1; JALR ra, 16(ra) at pc 0x10000 (target 0x11010): stored as a special
	 * AUIPC (rd x2, JALR's low 20 bits) and the target big endian */
	uint8_t pair[8] = {0x17, 0x71, 0x0E, 0x08, 0x00, 0x01, 0x10, 0x10};
	static const uint8_t pair_want[8] = {0x97, 0x10, 0x00, 0x00, 0xE7, 0x80, 0x00, 0x01};
	/* JAL zero (a jump, not a call) and AUIPC zero (a landing pad): left alone */
	uint8_t alone[8] = {0x6F, 0x00, 0x18, 0x00, 0x17, 0x00, 0x0E, 0x08};
	uint8_t copy[8];

	CHECK_EQ(bcj_riscv_decode(jal, sizeof(jal), 0x1000), 6); /* 8 bytes needed after 4 */
	CHECK(memcmp(jal, jal_want, 4) == 0);
	CHECK_EQ(bcj_riscv_decode(pair, sizeof(pair), 0x10000), 8);
	CHECK(memcmp(pair, pair_want, 8) == 0);
	memcpy(copy, alone, 8);
	bcj_riscv_decode(alone, sizeof(alone), 0);
	CHECK(memcmp(alone, copy, 8) == 0);
	CHECK_EQ(bcj_riscv_decode(copy, 7, 0), 0); /* fewer than 8: nothing is final yet */
	CHECK_EQ(bcj_riscv_decode(copy, 0, 0), 0);
}

static void pieces(void)
{
	size_t n = 1 << 20;
	uint8_t *data = malloc(n), *whole = malloc(n), *piece = malloc(n), *out = malloc(n);
	uint32_t seed = 1;

	for (size_t i = 0; i < n; i += 2) { /* opcodes the filter looks at, often */
		seed = seed * 1103515245u + 12345u;
		data[i] = (seed >> 16) % 3 == 0 ? 0xEF : (seed >> 16) % 3 == 1 ? 0x17 : (uint8_t)seed;
		data[i + 1] = (uint8_t)(seed >> 24);
	}
	for (int round = 0; round < 20; round++) {
		size_t at = 0, have = 0, got = 0, done;
		uint32_t pos = (uint32_t)round * 0x7FFFFFFEu;

		memcpy(whole, data, n);
		done = bcj_riscv_decode(whole, n, pos);
		CHECK(done <= n && n - done < 8);
		while (at < n) {
			size_t step, k;

			seed = seed * 1103515245u + 12345u;
			step = 1 + (seed >> 8) % (round < 10 ? 17 : 100000);
			if (step > n - at)
				step = n - at;
			memcpy(piece + have, data + at, step);
			at += step;
			have += step;
			k = bcj_riscv_decode(piece, have, pos);
			memcpy(out + got, piece, k);
			got += k;
			pos += (uint32_t)k;
			memmove(piece, piece + k, have - k);
			have -= k;
		}
		memcpy(out + got, piece, have);
		CHECK(got + have == n && memcmp(out, whole, n) == 0);
	}
	free(data);
	free(whole);
	free(piece);
	free(out);
}

int main(void)
{
	vectors();
	pieces();
	return tu_exit();
}
