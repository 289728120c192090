/* MD5 as RFC 1321 describes it: 64-byte blocks, four rounds of sixteen steps, a little-endian
 * length in the last block.  Written straight from the RFC with the step function as a macro
 * so the compiler keeps the state in registers; on the machines we run on this hashes at
 * several hundred MB/s, well above what the mounts deliver, so the in-process check costs the
 * benchmark little.  Input is read with memcpy (no unaligned loads, no endianness guesses).
 */
#include "md5.h"

#include <string.h>

#define F(x, y, z) ((z) ^ ((x) & ((y) ^ (z))))
#define G(x, y, z) ((y) ^ ((z) & ((x) ^ (y))))
#define H(x, y, z) ((x) ^ (y) ^ (z))
#define I(x, y, z) ((y) ^ ((x) | ~(z)))

#define ROTL(x, s) (((x) << (s)) | ((x) >> (32 - (s))))

#define STEP(f, a, b, c, d, k, s, t)                                                               \
	do {                                                                                       \
		(a) += f((b), (c), (d)) + x[k] + (uint32_t)(t);                                    \
		(a) = (b) + ROTL((a), (s));                                                        \
	} while (0)

static uint32_t load_le32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static void store_le32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)v;
	p[1] = (uint8_t)(v >> 8);
	p[2] = (uint8_t)(v >> 16);
	p[3] = (uint8_t)(v >> 24);
}

static void md5_blocks(uint32_t state[4], const uint8_t *p, size_t nblocks)
{
	uint32_t x[16];

	for (; nblocks; nblocks--, p += 64) {
		uint32_t a = state[0], b = state[1], c = state[2], d = state[3];

		for (int i = 0; i < 16; i++)
			x[i] = load_le32(p + 4 * i);

		STEP(F, a, b, c, d, 0, 7, 0xd76aa478);
		STEP(F, d, a, b, c, 1, 12, 0xe8c7b756);
		STEP(F, c, d, a, b, 2, 17, 0x242070db);
		STEP(F, b, c, d, a, 3, 22, 0xc1bdceee);
		STEP(F, a, b, c, d, 4, 7, 0xf57c0faf);
		STEP(F, d, a, b, c, 5, 12, 0x4787c62a);
		STEP(F, c, d, a, b, 6, 17, 0xa8304613);
		STEP(F, b, c, d, a, 7, 22, 0xfd469501);
		STEP(F, a, b, c, d, 8, 7, 0x698098d8);
		STEP(F, d, a, b, c, 9, 12, 0x8b44f7af);
		STEP(F, c, d, a, b, 10, 17, 0xffff5bb1);
		STEP(F, b, c, d, a, 11, 22, 0x895cd7be);
		STEP(F, a, b, c, d, 12, 7, 0x6b901122);
		STEP(F, d, a, b, c, 13, 12, 0xfd987193);
		STEP(F, c, d, a, b, 14, 17, 0xa679438e);
		STEP(F, b, c, d, a, 15, 22, 0x49b40821);

		STEP(G, a, b, c, d, 1, 5, 0xf61e2562);
		STEP(G, d, a, b, c, 6, 9, 0xc040b340);
		STEP(G, c, d, a, b, 11, 14, 0x265e5a51);
		STEP(G, b, c, d, a, 0, 20, 0xe9b6c7aa);
		STEP(G, a, b, c, d, 5, 5, 0xd62f105d);
		STEP(G, d, a, b, c, 10, 9, 0x02441453);
		STEP(G, c, d, a, b, 15, 14, 0xd8a1e681);
		STEP(G, b, c, d, a, 4, 20, 0xe7d3fbc8);
		STEP(G, a, b, c, d, 9, 5, 0x21e1cde6);
		STEP(G, d, a, b, c, 14, 9, 0xc33707d6);
		STEP(G, c, d, a, b, 3, 14, 0xf4d50d87);
		STEP(G, b, c, d, a, 8, 20, 0x455a14ed);
		STEP(G, a, b, c, d, 13, 5, 0xa9e3e905);
		STEP(G, d, a, b, c, 2, 9, 0xfcefa3f8);
		STEP(G, c, d, a, b, 7, 14, 0x676f02d9);
		STEP(G, b, c, d, a, 12, 20, 0x8d2a4c8a);

		STEP(H, a, b, c, d, 5, 4, 0xfffa3942);
		STEP(H, d, a, b, c, 8, 11, 0x8771f681);
		STEP(H, c, d, a, b, 11, 16, 0x6d9d6122);
		STEP(H, b, c, d, a, 14, 23, 0xfde5380c);
		STEP(H, a, b, c, d, 1, 4, 0xa4beea44);
		STEP(H, d, a, b, c, 4, 11, 0x4bdecfa9);
		STEP(H, c, d, a, b, 7, 16, 0xf6bb4b60);
		STEP(H, b, c, d, a, 10, 23, 0xbebfbc70);
		STEP(H, a, b, c, d, 13, 4, 0x289b7ec6);
		STEP(H, d, a, b, c, 0, 11, 0xeaa127fa);
		STEP(H, c, d, a, b, 3, 16, 0xd4ef3085);
		STEP(H, b, c, d, a, 6, 23, 0x04881d05);
		STEP(H, a, b, c, d, 9, 4, 0xd9d4d039);
		STEP(H, d, a, b, c, 12, 11, 0xe6db99e5);
		STEP(H, c, d, a, b, 15, 16, 0x1fa27cf8);
		STEP(H, b, c, d, a, 2, 23, 0xc4ac5665);

		STEP(I, a, b, c, d, 0, 6, 0xf4292244);
		STEP(I, d, a, b, c, 7, 10, 0x432aff97);
		STEP(I, c, d, a, b, 14, 15, 0xab9423a7);
		STEP(I, b, c, d, a, 5, 21, 0xfc93a039);
		STEP(I, a, b, c, d, 12, 6, 0x655b59c3);
		STEP(I, d, a, b, c, 3, 10, 0x8f0ccc92);
		STEP(I, c, d, a, b, 10, 15, 0xffeff47d);
		STEP(I, b, c, d, a, 1, 21, 0x85845dd1);
		STEP(I, a, b, c, d, 8, 6, 0x6fa87e4f);
		STEP(I, d, a, b, c, 15, 10, 0xfe2ce6e0);
		STEP(I, c, d, a, b, 6, 15, 0xa3014314);
		STEP(I, b, c, d, a, 13, 21, 0x4e0811a1);
		STEP(I, a, b, c, d, 4, 6, 0xf7537e82);
		STEP(I, d, a, b, c, 11, 10, 0xbd3af235);
		STEP(I, c, d, a, b, 2, 15, 0x2ad7d2bb);
		STEP(I, b, c, d, a, 9, 21, 0xeb86d391);

		state[0] += a;
		state[1] += b;
		state[2] += c;
		state[3] += d;
	}
}

void md5_init(struct md5_ctx *ctx)
{
	ctx->state[0] = 0x67452301;
	ctx->state[1] = 0xefcdab89;
	ctx->state[2] = 0x98badcfe;
	ctx->state[3] = 0x10325476;
	ctx->nbytes = 0;
}

void md5_update(struct md5_ctx *ctx, const void *data, size_t len)
{
	const uint8_t *p = data;
	size_t used = ctx->nbytes % 64;

	ctx->nbytes += len;
	if (used) {
		size_t take = 64 - used;

		if (take > len)
			take = len;
		memcpy(ctx->block + used, p, take);
		p += take;
		len -= take;
		if (used + take < 64)
			return;
		md5_blocks(ctx->state, ctx->block, 1);
	}
	md5_blocks(ctx->state, p, len / 64);
	p += len / 64 * 64;
	memcpy(ctx->block, p, len % 64);
}

void md5_final(struct md5_ctx *ctx, uint8_t digest[MD5_DIGEST_LEN])
{
	uint64_t bits = ctx->nbytes * 8;
	size_t used = ctx->nbytes % 64;

	ctx->block[used++] = 0x80;
	if (used > 56) {
		memset(ctx->block + used, 0, 64 - used);
		md5_blocks(ctx->state, ctx->block, 1);
		used = 0;
	}
	memset(ctx->block + used, 0, 56 - used);
	store_le32(ctx->block + 56, (uint32_t)bits);
	store_le32(ctx->block + 60, (uint32_t)(bits >> 32));
	md5_blocks(ctx->state, ctx->block, 1);
	for (int i = 0; i < 4; i++)
		store_le32(digest + 4 * i, ctx->state[i]);
	memset(ctx, 0, sizeof(*ctx));
}

void md5_buffer(const void *data, size_t len, uint8_t digest[MD5_DIGEST_LEN])
{
	struct md5_ctx ctx;

	md5_init(&ctx);
	md5_update(&ctx, data, len);
	md5_final(&ctx, digest);
}

void md5_hex(const uint8_t *digest, size_t len, char *hex)
{
	static const char digits[] = "0123456789abcdef";

	for (size_t i = 0; i < len; i++) {
		hex[2 * i] = digits[digest[i] >> 4];
		hex[2 * i + 1] = digits[digest[i] & 15];
	}
	hex[2 * len] = '\0';
}
