/* The hashes of the in-memory tables (common/htable.h).  A pair of numbers (the chunk cache's
 * (stream, segment), a folder source's (dev, ino)): each half multiplied by a large odd constant (the
 * golden ratio's and one of xxHash's primes), XORed, and folded so that the low bits a table
 * uses depend on all 64. */
#ifndef TARSEEK_HASH_H
#define TARSEEK_HASH_H

#include <stddef.h>
#include <stdint.h>

static inline uint64_t hash_pair(uint64_t a, uint64_t b)
{
	uint64_t h = a * 0x9E3779B97F4A7C15ull ^ b * 0xC2B2AE3D27D4EB4Full;

	return h ^ h >> 29;
}

/* One number (an inode, a stream id). */
static inline uint64_t hash_u64(uint64_t a)
{
	return hash_pair(a, 0x165667B19E3779F9ull);
}

/* Bytes (a name, a path): FNV-1a over 64 bits, then mixed like hash_pair so the low bits a
 * table uses depend on every byte. */
static inline uint64_t hash_bytes(const void *p, size_t len)
{
	const unsigned char *s = p;
	uint64_t h = 0xCBF29CE484222325ull;

	for (size_t i = 0; i < len; i++)
		h = (h ^ s[i]) * 0x100000001B3ull;
	return hash_pair(h, len);
}

#endif
