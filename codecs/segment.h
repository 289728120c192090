/* Segments: the unit of caching and of integrity checks for compressed archives.
 *
 * The decompressed stream is cut at checkpoints into chunks; each chunk is cut into
 * segments of SEG_SIZE bytes, except that a short tail (< SEG_SIZE / 2) is merged into the
 * segment before it.  So a gzip chunk of 1.05 MiB is one segment, an xz block of 24 MiB is
 * 24, a bzip2 block of 900 kB is one.  The indexing pass stores the CRC32 of every segment;
 * a read decodes whole segments, checks them against the stored CRC and caches them.
 *
 * Everything here is derived from a chunk's decompressed length (ulen), so the indexer
 * (stream.c) and the reader (reader.c) agree by construction.
 */
#ifndef TARSEEK_SEGMENT_H
#define TARSEEK_SEGMENT_H

#include <stdint.h>

#define SEG_SHIFT 20
#define SEG_SIZE ((uint64_t)1 << SEG_SHIFT)

/* Number of segments of a chunk of ulen bytes (0 for an empty chunk). */
static inline uint64_t seg_count(uint64_t ulen)
{
	uint64_t n = (ulen + SEG_SIZE / 2) >> SEG_SHIFT;

	return ulen == 0 ? 0 : (n ? n : 1);
}

/* Length of segment k of a chunk of ulen bytes (it starts at k * SEG_SIZE). */
static inline uint64_t seg_len(uint64_t ulen, uint64_t k)
{
	return k + 1 < seg_count(ulen) ? SEG_SIZE : ulen - (k << SEG_SHIFT);
}

/* The segment holding offset rel (0 <= rel < ulen) of a chunk. */
static inline uint64_t seg_at(uint64_t ulen, uint64_t rel)
{
	uint64_t k = rel >> SEG_SHIFT, n = seg_count(ulen);

	return k < n ? k : n - 1;
}

#endif
