/* lz4 frame headers and blocks, parsed and decoded: what the walk (lz4_walk.c), the scan's
 * workers (lz4_scan.c) and the decoders (lz4.c) read the file with.  Blocks are decoded with
 * liblz4's safe decoders only, a linked block with the 64 KiB decoded before it as its
 * dictionary; checksums (XXH32) are checked before the data they cover is decoded.
 */
#include "codecs/lz4/lz4_int.h"

#include <errno.h>
#include <inttypes.h>
#include <string.h>

#include <xxhash.h>

#include "common/byteio.h"

/* The maximum block size BD gives, or 0 if it gives none. */
uint32_t lz4_bd_max(uint8_t bd)
{
	unsigned id = (bd >> 4) & 7;

	return id >= 4 ? 1u << (2 * id + 8) : 0;
}

/* Checks FLG and BD (after the header checksum matched).  0, or -ENOTSUP with why set. */
int lz4_fhdr_check(uint8_t flg, uint8_t bd, const char **why)
{
	if ((flg & LZ4_F_VERSION) != 0x40) {
		*why = "has a frame format version other than 01 (a newer lz4?)";
		return -ENOTSUP;
	}
	if ((flg & LZ4_F_RESERVED) || (bd & 0x8F) || !lz4_bd_max(bd)) {
		*why = "has reserved header bits set or an unknown block size (a newer lz4?)";
		return -ENOTSUP;
	}
	if (flg & LZ4_F_DICTID) {
		*why = "needs a dictionary (DictID), which tarseek does not have: decompress it "
		       "with lz4 -d -D";
		return -ENOTSUP;
	}
	return 0;
}

/* Parses an lz4 frame header in the n bytes at p (the magic included).  LZ4_H_OK,
 * LZ4_H_SHORT (n is less than the header), or -EIO / -ENOTSUP with why set. */
int lz4_parse_fhdr(const uint8_t *p, size_t n, struct lz4_fhdr *h, const char **why)
{
	size_t len = 7;
	uint8_t hc;
	int err;

	memset(h, 0, sizeof(*h));
	if (n < 7)
		return LZ4_H_SHORT;
	h->flg = p[4];
	h->bd = p[5];
	len += (h->flg & LZ4_F_CSIZE) ? 8 : 0;
	len += (h->flg & LZ4_F_DICTID) ? 4 : 0;
	if (n < len)
		return LZ4_H_SHORT;
	hc = (uint8_t)(XXH32(p + 4, len - 5, 0) >> 8);
	if (hc != p[len - 1]) {
		*why = "header checksum mismatch (damaged header)";
		return -EIO;
	}
	err = lz4_fhdr_check(h->flg, h->bd, why);
	if (err)
		return err;
	h->bmax = lz4_bd_max(h->bd);
	if (h->flg & LZ4_F_CSIZE)
		h->csize = le64(p + 6);
	h->hlen = len;
	return LZ4_H_OK;
}

/* Parses the 4-byte block size v of a frame with header h.  0, or -EIO with why set. */
int lz4_parse_blk(uint32_t v, const struct lz4_fhdr *h, struct lz4_blk *b, const char **why)
{
	memset(b, 0, sizeof(*b));
	if (v == 0) {
		b->end = true;
		b->total = 4;
		return 0;
	}
	b->stored = v & LZ4_STORED;
	b->size = v & ~LZ4_STORED;
	if (b->size > h->bmax) {
		*why = "declares a block larger than the frame's maximum block size: refusing it "
		       "(damaged or hostile file)";
		return -EIO;
	}
	if (b->size == 0 && !b->stored) {
		*why = "corrupt block header (a compressed block of 0 bytes)";
		return -EIO;
	}
	b->total = 4 + (uint64_t)b->size + ((h->flg & LZ4_F_BSUM) ? 4 : 0);
	return 0;
}

/* Decodes one block whose header is at p (b->total bytes there): its checksum if the frame
 * has them, then the data into out (room for cap bytes), with dict (dictlen bytes, may be 0)
 * as the history of a linked block.  The decoded size, or -EIO with m set (blockno and coff,
 * the offset of its header, name it). */
ssize_t lz4_decode_blk(const struct lz4_blk *b, const uint8_t *p, uint8_t flg, uint8_t *out,
		       size_t cap, const uint8_t *dict, size_t dictlen, uint64_t blockno,
		       uint64_t coff, const char *who, struct lzout_msg *m)
{
	const uint8_t *data = p + 4;
	int r;

	if (flg & LZ4_F_BSUM) {
		uint32_t stored = le32(data + b->size), sum = XXH32(data, b->size, 0);

		if (stored != sum)
			return lzout_fail(m, -EIO,
					  "lz4: %sblock %" PRIu64 " at compressed offset %" PRIu64
					  ": block checksum mismatch (stored %08" PRIx32
					  ", computed %08" PRIx32 ")",
					  who, blockno, coff, stored, sum);
	}
	if (b->stored) {
		if (b->size > cap)
			return lzout_fail(m, -EIO,
					  "lz4: %sblock %" PRIu64 " at compressed offset %" PRIu64
					  ": stored block larger than its room",
					  who, blockno, coff);
		memcpy(out, data, b->size);
		return b->size;
	}
	if (dictlen)
		r = LZ4_decompress_safe_usingDict((const char *)data, (char *)out, (int)b->size,
						  (int)cap, (const char *)dict, (int)dictlen);
	else
		r = LZ4_decompress_safe((const char *)data, (char *)out, (int)b->size, (int)cap);
	if (r < 0)
		return lzout_fail(m, -EIO,
				  "lz4: %sblock %" PRIu64 " at compressed offset %" PRIu64
				  ": corrupt data (LZ4 block does not decode within %zu bytes)",
				  who, blockno, coff, cap);
	return r;
}

/* Keeps the last LZ4_HIST bytes of hist (*hlen of them) followed by the n bytes at p. */
void lz4_hist_add(uint8_t *hist, size_t *hlen, const uint8_t *p, size_t n)
{
	if (n >= LZ4_HIST) {
		memcpy(hist, p + n - LZ4_HIST, LZ4_HIST);
		*hlen = LZ4_HIST;
		return;
	}
	size_t keep = *hlen < LZ4_HIST - n ? *hlen : LZ4_HIST - n;

	memmove(hist, hist + *hlen - keep, keep);
	memcpy(hist + keep, p, n);
	*hlen = keep + n;
}

/* Reads the 4 bytes at off into *v.  1, 0 if fewer than 4 remain (*n says how many), or
 * -errno. */
int lz4_read32(struct src *in, uint64_t off, uint32_t *v, size_t *n)
{
	uint8_t b[4];
	ssize_t r = src_pread(in, b, 4, off);

	if (r < 0)
		return (int)r;
	*n = (size_t)r;
	if (r < 4)
		return 0;
	*v = le32(b);
	return 1;
}
