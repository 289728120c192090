/* What bzip2.c (the format, the decoders, the codec table), bzip2_decode.c (a block decoded whole)
 * and bzip2_scan.c (the indexing scan) share.  The format and the design are described in
 * bzip2.c; bzip2_block.h is our own decoder of one block.
 */
#ifndef TARSEEK_BZIP2_INT_H
#define TARSEEK_BZIP2_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "common/byteio.h"
#include "codecs/codec.h"
#include "codecs/bzip2/bzip2_block.h"

#define BZ_MAGIC_BLOCK 0x314159265359ULL
#define BZ_MAGIC_EOS 0x177245385090ULL
#define BZ_READ (1u << 20)	   /* bytes the scan reads at a time */
#define BZ_CHUNK ((1u << 20) - 64) /* decoded bytes per output chunk */
#define BZ_PAD 16		   /* zero bytes kept after the window's data */
#define BZ_TRAILER 11		   /* stream trailer: 80 bits + padding, + slack */
#define BZ_SLACK 16		   /* bytes kept after a block's copy: >= BZ_TRAILER, BZB_PAD */
#define BZ_MAX_THREADS 256
#define BZ_STEP_ITEMS 64 /* magics one search step may find, at most */

/* ---- Bits ---- */

/* Bits [bit, bit + n) of p, most significant first, n <= 48.  Reads the 8 bytes from
 * p + bit / 8, which must be readable. */
static inline uint64_t bz_get_bits(const uint8_t *p, uint64_t bit, unsigned n)
{
	return (be64(p + bit / 8) << (bit % 8)) >> (64 - n);
}

/* The most bits a block of a level-`level` stream takes as any real encoder writes it: magic,
 * CRC, randomised bit, origPtr (48 + 32 + 1 + 24), symbol map (16 + 256), group and selector
 * counts (3 + 15), at most 32 767 selectors of at most 7 bits, 6 tables of 258 code lengths
 * (a 5-bit start, then for each length a delta of at most 19 steps of 2 bits and a stop bit),
 * and at most level x 100 000 + 1 symbols of at most 20 bits.  Only the deltas are unbounded
 * in the format (a crafted table may step up and down forever); no encoder writes that. */
static inline uint64_t bz_max_block_bits(unsigned level)
{
	return 48 + 32 + 1 + 24 + 16 + 256 + 3 + 15 + 32767ULL * 7 + 6ULL * (5 + 258ULL * 39) +
	       (level * 100000ULL + 1) * 20;
}

/* ---- A block decoded whole (bzip2_decode.c) ---- */

/* A piece of a decoded block. */
struct bz_chunk {
	struct bz_chunk *next;
	size_t len;
	uint8_t data[BZ_CHUNK];
};

/* A decoded block.  Owns its chunks. */
struct bz_out {
	struct bz_chunk *head, *tail;
	uint64_t len;
};

void bz_out_free(struct bz_out *o);

/* Turns buf into a one-block stream for libbz2, in place, and returns its length: on entry
 * buf + 4 holds the block's raw bytes (from bit shift, nbits >= 80 long), with room for
 * BZ_TRAILER more.  *crc = the block's stored CRC. */
size_t bz_build(uint8_t *buf, unsigned shift, uint64_t nbits, unsigned level, uint32_t *crc);

/* Decodes the block at bit shift of raw, nbits long, into out (empty on entry) with our
 * decoder b, or with libbz2 if b is NULL or the block is randomised; raw must be readable for
 * BZB_PAD bytes past the block.  *crc = its stored CRC.  0, -EIO (not logged: the caller knows
 * whether that is damage or a false candidate) or -ENOMEM; out is empty on error. */
int bz_decode_raw(struct bzb *b, const uint8_t *raw, unsigned shift, uint64_t nbits, unsigned level,
		  struct bz_out *out, uint32_t *crc);

/* Logs "bzip2: <what> at byte B bit b" for the block at file bit offset bit. */
void bz_log_block(const char *what, uint64_t bit);

/* ---- The scan (bzip2_scan.c): codec.h's scan_* of codec_bzip2 ---- */

int bz_scan_new(struct src *in, const struct codec_opts *opts, const struct codec_sink *sink,
		struct codec_scan **out);
ssize_t bz_scan_read(struct codec_scan *cs, void *buf, size_t len);
uint64_t bz_scan_verified(struct codec_scan *cs);
void bz_scan_free(struct codec_scan *cs);

#endif
