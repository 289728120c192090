/* bzip2_block: our own decoder of one bzip2 block, faster than libbz2's.
 *
 * bzip2.c finds blocks; this file turns one block's bits into its bytes.  The block is given
 * as a bit span of a byte buffer, from the first bit of its 48-bit magic up to the first bit
 * of the magic that follows it (the next block's or the end-of-stream magic), as the scan and
 * the index's checkpoints describe it.  bzb_load does the Huffman, MTF and run-length stages
 * and prepares the inverse BWT; bzb_read then walks it, producing the block's bytes in as
 * many calls as the caller likes, so a caller that needs only the start of a block stops
 * early.  The block's CRC is checked when its last byte is produced.
 *
 * What a block must be to load: the block magic; a symbol map with at least one byte; 2..6
 * Huffman tables of code lengths 1..20 forming a prefix code; at least one selector, each
 * naming a table; no more symbols than the level allows (level x 100 000); origPtr inside the
 * block; and its end-of-block code ending exactly at the span's end.  Anything else is -EIO.
 * Randomised blocks (written by bzip2 0.9.0 and 0.9.5 only) are not decoded here:
 * bzb_load returns BZB_RANDOMISED and the caller uses libbz2 for them.
 *
 * libbz2 stays the reference: tests/unit/test_bzip2.c decodes blocks with both and compares,
 * and TARSEEK_BZIP2=libbz2 makes bzip2.c use libbz2 for every block.
 *
 * A struct bzb holds one block (4 bytes per symbol of the level's block size) and is reused
 * from block to block; it is not shared between threads.
 */
#ifndef TARSEEK_BZIP2_BLOCK_H
#define TARSEEK_BZIP2_BLOCK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* Bytes the buffer given to bzb_load must hold past the span's last byte (their values do
 * not matter). */
#define BZB_PAD 16

/* bzb_load's result for a randomised block. */
#define BZB_RANDOMISED 1

struct bzb;

/* Whether TARSEEK_BZIP2=libbz2 is set: bzip2.c then decodes every block with libbz2 (the
 * tests run both decoders; tarseek --version says which one is in use). */
bool bzb_use_libbz2(void);

/* A decoder with no block loaded; NULL if out of memory. */
struct bzb *bzb_new(void);
void bzb_free(struct bzb *b);

/* Loads the block at bits [shift, shift + nbits) of p (bit 0 is the most significant bit of
 * p[0]) for a stream of level 1..9; p must be readable for ceil((shift + nbits) / 8) + BZB_PAD
 * bytes.  0, BZB_RANDOMISED, -EIO (not a valid block of exactly that span) or -ENOMEM.
 * Replaces the block loaded before, if any. */
int bzb_load(struct bzb *b, const uint8_t *p, unsigned shift, uint64_t nbits, unsigned level);

/* The next bytes of the loaded block, at most len: their count, 0 once the whole block has
 * been returned, or -EIO if the block's CRC does not match (the call that would return the
 * last bytes fails instead).  -EINVAL if no block is loaded. */
ssize_t bzb_read(struct bzb *b, void *buf, size_t len);

/* The CRC stored in the loaded block's header. */
uint32_t bzb_stored_crc(const struct bzb *b);

/* Bytes the decoder holds. */
size_t bzb_memory(const struct bzb *b);

/* bzip2's CRC-32 (MSB first, polynomial 0x04c11db7) of p[0..len), continued from crc: pass
 * 0xffffffff first and complement the result at the end. */
uint32_t bzb_crc_update(uint32_t crc, const uint8_t *p, size_t len);

#endif
