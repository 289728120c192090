/* Segments: the unit of caching and of integrity checks for compressed archives.
 *
 * The decompressed stream is cut at checkpoints into chunks; each chunk is cut into
 * segments of a stream's segment size (below), except that a short tail (< half a segment)
 * is merged into the segment before it.  So with 1 MiB segments an xz block of 24 MiB is 24
 * segments and a bzip2 block of 900 kB is one; with 64 KiB ones a gzip chunk of 300 KiB is
 * 5.  The indexing pass stores the CRC32 of every segment; a read decodes whole segments,
 * checks them against the stored CRC and caches them.
 *
 * Everything here is derived from a chunk's decompressed length (ulen) and the segment size,
 * so the indexer (stream.c) and the reader (reader.c) agree by construction.
 */
#ifndef TARSEEK_SEGMENT_H
#define TARSEEK_SEGMENT_H

#include <stdbool.h>
#include <stdint.h>

/* A stream's segments are 1 << shift bytes: SEG_SHIFT (1 MiB) unless its index says
 * otherwise.  gzip streams, whose chunks are short (256 KiB apart by default), use
 * SEG_SHIFT_FINE (64 KiB), so that a read decodes from its checkpoint to the end of what it
 * wants plus at most 64 KiB, not to the end of the chunk. */
#define SEG_SHIFT 20
#define SEG_SHIFT_FINE 16
#define SEG_SIZE ((uint64_t)1 << SEG_SHIFT) /* the largest segment size */

/* Whether a segment size asked for is one of those (0: the default, SEG_SHIFT). */
static inline bool seg_shift_ok(unsigned shift)
{
	return shift == 0 || (shift >= SEG_SHIFT_FINE && shift <= SEG_SHIFT);
}

/* Number of segments of a chunk of ulen bytes (0 for an empty chunk): ulen / 2^shift rounded
 * to the nearest, without adding first (ulen comes from the archive, up to UINT64_MAX: a
 * zstd frame header may claim it, and the sum wrapped to a count so small that its last
 * segment's length was the whole claim). */
static inline uint64_t seg_count(uint64_t ulen, unsigned shift)
{
	uint64_t half = ((uint64_t)1 << shift) / 2;
	uint64_t n = (ulen >> shift) + ((ulen & (((uint64_t)1 << shift) - 1)) >= half && half);

	return ulen == 0 ? 0 : (n ? n : 1);
}

/* Length of segment k of a chunk of ulen bytes (it starts at k << shift). */
static inline uint64_t seg_len(uint64_t ulen, uint64_t k, unsigned shift)
{
	return k + 1 < seg_count(ulen, shift) ? (uint64_t)1 << shift : ulen - (k << shift);
}

/* The segment holding offset rel (0 <= rel < ulen) of a chunk. */
static inline uint64_t seg_at(uint64_t ulen, uint64_t rel, unsigned shift)
{
	uint64_t k = rel >> shift, n = seg_count(ulen, shift);

	return k < n ? k : n - 1;
}

#endif
