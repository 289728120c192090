/* One hash for the in-memory tables keyed by a pair of numbers (the chunk cache's (stream,
 * segment), a folder source's (dev, ino)): each half multiplied by a large odd constant (the
 * golden ratio's and one of xxHash's primes), XORed, and folded so that the low bits a table
 * uses depend on all 64. */
#ifndef TARSEEK_HASH_H
#define TARSEEK_HASH_H

#include <stdint.h>

static inline uint64_t hash_pair(uint64_t a, uint64_t b)
{
	uint64_t h = a * 0x9E3779B97F4A7C15ull ^ b * 0xC2B2AE3D27D4EB4Full;

	return h ^ h >> 29;
}

#endif
