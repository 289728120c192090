/* lzop codec (liblzo2): checkpoints are groups of the file's own blocks, found by hopping from
 * block header to block header.
 *
 * An .lzo file made by lzop is a file header (magic, versions, method, level, flags, mode,
 * mtime, the original name, a header checksum, maybe an extra field) followed by blocks, each a
 * small header -- uncompressed size, compressed size, then the checksums the flags ask for --
 * and its payload, and an end marker (an uncompressed size of 0).  Every block is compressed on
 * its own (LZO1X has no dictionary that outlives a block), so any block boundary is a perfect
 * checkpoint, and the sizes in the block headers give every boundary without decompressing
 * anything: the next header is at this header + its length + the compressed size.  A block
 * whose compressed size equals its uncompressed size is stored as is; it then carries no
 * checksum of compressed data (that would be the checksum of the decompressed data again).
 * `cat a.lzo b.lzo` is valid lzop input (`lzop -d` reads the parts in turn), so after an end
 * marker another file header may follow; its blocks continue the decompressed stream.  Files
 * made from several inputs at once (`lzop -c a b`, the F_MULTIPART flag) and files made with
 * `lzop --filter` are refused with -ENOTSUP and a message saying so, as are compression
 * methods other than LZO1X (lzop builds with NRV or zlib) and headers that need a newer lzop.
 *
 * lzop writes 256 KiB blocks, so one checkpoint per block would mean ~7,300 rows for a 1.9 GB
 * tar.  Instead consecutive blocks of one part are grouped: a group ends after the block that
 * brings it to LZOP_GROUP (1 MiB) decompressed bytes, after LZOP_GROUP_BLOCKS (1024) blocks,
 * or at its part's end marker -- four lzop blocks, one index segment (segment.h), ~1,800 rows.
 * The rule depends on the block sizes alone, so the scan and index_blocks agree by
 * construction.  The format's own limit on a block is 64 MiB decompressed (lzop itself writes
 * no more than 256 KiB); a larger size, a compressed size of 0 or larger than the uncompressed
 * one, or the 0xffffffff of split files are refused as damage before anything is allocated.
 *
 * The scan runs opts->threads workers.  A worker takes the next job slot (at most `depth`,
 * 2 x workers + 1, ahead of the slot the caller is reading), walks the block headers of the
 * next group with small preads (under walk_lock, so groups are cut in file order), then outside
 * any lock reads the group's compressed bytes with one pread and decodes its blocks one after
 * the other into the slot's buffer: checksum of the compressed data if present, then
 * lzo1x_decompress_safe (never the unsafe decoder) into exactly the declared size, then the
 * checksum of the decompressed data.  The caller's thread only copies finished groups out and
 * calls the sink, which keeps the sink's rules trivially; a group's checkpoint goes out just
 * before its first byte.  Memory stays near depth x group size plus a group's compressed bytes
 * per worker, ~6 MiB with two workers.  The bytes of a block that fails are never returned (they
 * are known to be wrong): the scan returns every good block before it, then -EIO, logged with the
 * block's number and compressed offset; scan_verified() is the end of the last good block, and a
 * checkpoint emitted for a group cut short by damage covers only its good blocks.  After the
 * last end marker, zeros are ignored silently and anything that does not start with the lzop
 * magic is ignored with a notice; the magic followed by a bad header is damage.
 *
 * index_blocks walks the same headers on the caller's thread and emits the same checkpoints,
 * with ulen set, without reading a payload: the time it takes to pread ~30 bytes per block
 * (30 ms for 7,300 blocks from the page cache; from a cold cache the kernel's readahead turns
 * the hops, ~114 KB apart, into a read of the whole file, still without decoding).
 * It is offered only for files whose every part carries a checksum of the decompressed data
 * (F_ADLER32_D or F_CRC32_D, lzop's default), because decoders verify it: a decoder decodes a
 * whole block into its buffer and checks it before handing out a byte of it.  Without such a
 * checksum (lzop -F) it returns -ENOTSUP and the caller scans (and keeps segment CRCs).
 *
 * A decoder starts at a group's first block header and continues block after block, past its
 * chunk and into the next part when there is one; it returns 0 at the end of the data.  On
 * its first read it fetches its group's compressed bytes with one pread; past its group it
 * reads ahead one default lzop block at a time.  When it has passed the `bits` blocks of its
 * group it checks that they ended at coff + clen and decoded to ulen: a file that no longer
 * matches its index gives -EIO instead of misplaced bytes.  It holds its compressed window and
 * one decoded block: ~750 KiB for lzop's blocks.
 *
 * Checkpoint fields for lzo:
 *   uoff   decompressed offset of the group's first block, counted across all parts;
 *   ulen   decompressed bytes of the group (set by the scan and by index_blocks alike);
 *   coff   compressed offset of the group's first block header;
 *   clen   compressed bytes of the group: from coff to the end of its last block's payload;
 *   extra  the number of the group's first block in the file, 1-based, all parts counted
 *          (for messages);
 *   bits   the number of blocks in the group (1..LZOP_GROUP_BLOCKS);
 *   flags  the header flags of the group's part (F_ADLER32_D, F_CRC32_C, ...): which checksums
 *          each block header carries.
 * No aux blob.
 *
 * Checksums are Adler-32 (starting at 1) and CRC-32 (starting at 0), the same functions zlib
 * has, so zlib's implementations (already linked, as fast or faster) are used.
 */
#include "codecs/codec.h"

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include <lzo/lzo1x.h>
#include <lzo/lzoconf.h>

#include "common/crc32.h"
#include "common/byteio.h"
#include "common/log.h"
#include "codecs/inwin.h"
#include "codecs/liberr.h"
#include "codecs/lzout.h"
#include "codecs/pipeline.h"
#include "codecs/trailing.h"

/* Header flags (lzop's conf.h). */
#define LZOP_F_ADLER32_D 0x00000001u
#define LZOP_F_ADLER32_C 0x00000002u
#define LZOP_F_H_EXTRA_FIELD 0x00000040u
#define LZOP_F_CRC32_D 0x00000100u
#define LZOP_F_CRC32_C 0x00000200u
#define LZOP_F_MULTIPART 0x00000400u
#define LZOP_F_H_FILTER 0x00000800u
#define LZOP_F_H_CRC32 0x00001000u
/* Reserved: neither in F_MASK (0x3fff), the OS byte (0xff << 24) nor the CS nibble (0xf << 20). */
#define LZOP_F_RESERVED 0x000fc000u
#define LZOP_F_D (LZOP_F_ADLER32_D | LZOP_F_CRC32_D)

/* Methods a stock lzop writes; all three decode with lzo1x_decompress_safe. */
#define LZOP_M_LZO1X_1 1
#define LZOP_M_LZO1X_1_15 2
#define LZOP_M_LZO1X_999 3

#define LZOP_MAGIC_LEN 9
#define LZOP_VERSION_MIN 0x0900		/* the first public lzop */
#define LZOP_VERSION_FIELDS 0x0940	/* from here: version needed, level, mtime high */
#define LZOP_NEEDED_MAX 0x1040		/* what lzop 1.04 extracts */
#define LZOP_HDR_READ 512		/* a file header without extra field is <= 297 bytes */
#define LZOP_BHDR_MAX 24		/* sizes + four checksums */
#define LZOP_BLOCK_MAX (64u << 20)	/* lzop's MAX_BLOCK_SIZE */
#define LZOP_BLOCK_DEFAULT (256u << 10) /* lzop's BLOCK_SIZE */
#define LZOP_GROUP ((uint64_t)1 << 20)	/* decompressed bytes per checkpoint */
#define LZOP_GROUP_BLOCKS 1024u		/* ... and at most this many blocks */
#define LZOP_DEC_AHEAD (LZOP_BLOCK_DEFAULT + LZOP_BHDR_MAX) /* past its group */
#define LZOP_DEC_AHEAD_MAX ((size_t)2 << 20)		    /* within its group */
#define LZOP_MAX_THREADS 64
#define LZOP_EXTRA_BUF ((size_t)64 << 10) /* bytes of an extra field read at once */

_Static_assert(LZOP_BLOCK_MAX <= UINT32_MAX / 2, "block sizes fit zlib's uInt with room");
_Static_assert(sizeof(lzo_uint) >= sizeof(uint32_t), "lzo_uint holds a block size");

static const uint8_t lzop_magic[LZOP_MAGIC_LEN] = {0x89, 0x4c, 0x5a, 0x4f, 0x00,
						   0x0d, 0x0a, 0x1a, 0x0a};

/* ---- Errors and messages --------------------------------------------------------------------- */

static const char *lzop_strerror(int r)
{
	switch (r) {
	case LZO_E_INPUT_OVERRUN:
		return "corrupt data (input overrun)";
	case LZO_E_OUTPUT_OVERRUN:
		return "corrupt data (decodes to more than the block size)";
	case LZO_E_LOOKBEHIND_OVERRUN:
		return "corrupt data (lookbehind overrun)";
	case LZO_E_INPUT_NOT_CONSUMED:
		return "corrupt data (the block ends before its compressed data)";
	case LZO_E_EOF_NOT_FOUND:
		return "corrupt data (no end of stream)";
	case LZO_E_OUT_OF_MEMORY:
		return "out of memory";
	default:
		return "corrupt data or liblzo error";
	}
}

static pthread_once_t lzop_once = PTHREAD_ONCE_INIT;
static int lzop_init_ret;

static void lzop_init_once(void)
{
	lzop_init_ret = lzo_init();
}

/* liblzo wants lzo_init() once before any other call.  0 or -EINVAL (logged). */
static int lzop_lib_init(void)
{
	pthread_once(&lzop_once, lzop_init_once);
	if (lzop_init_ret != LZO_E_OK) {
		tfs_log(TFS_LOG_ERR,
			"lzo: lzo_init() failed (%d): liblzo2 does not match its headers",
			lzop_init_ret);
		return -EINVAL;
	}
	return 0;
}

/* Adler-32 (from 1) or CRC-32 (from 0) of a buffer, continuing from sum. */
static uint32_t lzop_sum(bool crc, uint32_t sum, const uint8_t *p, size_t n)
{
	return crc ? tfs_crc32(sum, p, n) : (uint32_t)adler32(sum, p, (uInt)n);
}

static uint32_t lzop_sum_init(bool crc)
{
	return crc ? 0 : 1;
}

static bool lzop_probe(const uint8_t *head, size_t len)
{
	return len >= LZOP_MAGIC_LEN && memcmp(head, lzop_magic, LZOP_MAGIC_LEN) == 0;
}

/* ---- File headers ------------------------------------------------------------------------ */

struct lzop_hdr {
	unsigned version, lib_version, needed;
	unsigned method, level;
	uint32_t flags, filter, mode;
	uint64_t mtime;
	char name[256]; /* base name of the stored name, "" if none or unusable */
	uint64_t end;	/* compressed offset of the first block header */
};

/* The checksum flags must be usable: a checksum of compressed data comes with one of the
 * decompressed data (a stored block carries only the latter; lzop refuses such files too), and
 * nothing refused is set.  0, or -errno with why set. */
static int lzop_flags_check(uint32_t flags, const char **why)
{
	if (flags & LZOP_F_MULTIPART) {
		*why =
		    "holds several files (made by lzop -c with more than one input, a multi-part "
		    "file), which tarseek does not support: extract it with lzop -dN";
		return -ENOTSUP;
	}
	if (flags & LZOP_F_H_FILTER) {
		*why = "was made with lzop --filter, which tarseek does not support: decompress it "
		       "with lzop -d";
		return -ENOTSUP;
	}
	if (flags & LZOP_F_RESERVED) {
		*why = "has unknown header flags (made by a newer lzop?)";
		return -ENOTSUP;
	}
	if (((flags & LZOP_F_ADLER32_C) && !(flags & LZOP_F_ADLER32_D)) ||
	    ((flags & LZOP_F_CRC32_C) && !(flags & LZOP_F_CRC32_D))) {
		*why = "declares a checksum of compressed data without the matching checksum of "
		       "decompressed data (lzop cannot read that either)";
		return -EIO;
	}
	return 0;
}

/* Keeps the base name of a stored name (up to its first NUL), or "" if nothing usable. */
static void lzop_set_name(char *dst, const uint8_t *p, size_t n)
{
	const uint8_t *nul = memchr(p, 0, n), *slash;

	if (nul)
		n = (size_t)(nul - p);
	while (n && (slash = memchr(p, '/', n))) {
		n -= (size_t)(slash - p) + 1;
		p = slash + 1;
	}
	memcpy(dst, p, n);
	dst[n] = '\0';
	if (strcmp(dst, ".") == 0 || strcmp(dst, "..") == 0)
		dst[0] = '\0';
}

/* After the last part, at off: zeros to the end of the file are padding; anything else is
 * garbage, noted unless quiet.  0 or -errno. */
static int lzop_trailing(struct src *in, uint64_t off, bool quiet, struct lzout_msg *m)
{
	struct trailing t;
	int err;

	if (quiet)
		return 0;
	err = trailing_scan(in, off, NULL, 0, &t);
	if (err)
		return lzout_fail(m, err, "lzo: read error after compressed offset %" PRIu64 ": %s",
				  off, strerror(-err));
	if (t.first_nonzero == TRAILING_NONE) {
		TFS_DEBUG("lzo: zero padding after the last part at compressed offset %" PRIu64,
			  off);
		return 0;
	}
	trailing_note(m->text, sizeof(m->text), "lzo", in, off);
	m->level = TFS_LOG_NOTICE;
	return 0;
}

/* Skips the extra field at *pos, checking its checksum (which covers its length too).  0 with
 * *pos after it, or -errno. */
static int lzop_extra_field(struct src *in, const struct lzop_hdr *h, uint64_t hoff, uint64_t *pos,
			    struct lzout_msg *m)
{
	bool crc = h->flags & LZOP_F_H_CRC32;
	uint32_t sum = lzop_sum_init(crc), len;
	uint64_t at = *pos, size = src_size(in);
	uint8_t b4[4], *buf;
	int err = 0;

	err = src_pread_full(in, b4, 4, at);
	if (err)
		goto short_read;
	sum = lzop_sum(crc, sum, b4, 4);
	len = be32(b4);
	at += 4;
	if (size != SRC_SIZE_UNKNOWN && (size < at || size - at < (uint64_t)len + 4)) {
		err = -EIO;
		goto short_read;
	}
	buf = malloc(LZOP_EXTRA_BUF);
	if (!buf)
		return -ENOMEM;
	while (len) {
		size_t k = len < LZOP_EXTRA_BUF ? len : LZOP_EXTRA_BUF;

		err = src_pread_full(in, buf, k, at);
		if (err)
			break;
		sum = lzop_sum(crc, sum, buf, k);
		at += k;
		len -= (uint32_t)k;
	}
	free(buf);
	if (!err)
		err = src_pread_full(in, b4, 4, at);
	if (err)
		goto short_read;
	if (be32(b4) != sum)
		return lzout_fail(m, -EIO,
				  "lzo: checksum mismatch in the extra field of the header at "
				  "compressed offset %" PRIu64,
				  hoff);
	*pos = at + 4;
	return 0;
short_read:
	if (err != -EIO)
		return lzout_fail(m, err, "lzo: read error at compressed offset %" PRIu64 ": %s",
				  at, strerror(-err));
	return lzout_fail(m, -EIO,
			  "lzo: the file ends inside the extra field of the header at compressed "
			  "offset %" PRIu64 " (truncated)",
			  hoff);
}

/* Reads a file header at off.  first: the start of the file, where a header must be; else
 * after an end marker, where the file may end (or hold padding or garbage, noted unless quiet).
 * 1 with *h set, 0 if no part starts here, or -errno with m set: -EIO for a damaged or
 * truncated header, -ENOTSUP for one tarseek refuses. */
static int lzop_read_header(struct src *in, uint64_t off, bool first, bool quiet,
			    struct lzop_hdr *h, struct lzout_msg *m)
{
	uint8_t buf[LZOP_HDR_READ];
	size_t i = LZOP_MAGIC_LEN, n, nlen;
	uint32_t stored, sum;
	const char *why;
	ssize_t r;
	int err;

	memset(h, 0, sizeof(*h));
	r = src_pread(in, buf, sizeof(buf), off);
	if (r < 0)
		return lzout_fail(m, (int)r, "lzo: read error at compressed offset %" PRIu64 ": %s",
				  off, strerror((int)-r));
	n = (size_t)r;
	if (first && n == 0)
		return lzout_fail(m, -EIO, "lzo: the file is empty");
	if (first && (n < LZOP_MAGIC_LEN || memcmp(buf, lzop_magic, LZOP_MAGIC_LEN) != 0))
		return lzout_fail(m, -EIO, "lzo: not an lzop file (no lzop magic at offset 0)");
	if (n == 0)
		return 0;
	if (n < LZOP_MAGIC_LEN || memcmp(buf, lzop_magic, LZOP_MAGIC_LEN) != 0)
		return lzop_trailing(in, off, quiet, m);

		/* The largest header fits buf; a shorter read is the end of the file. */
#define NEED(k)                                                                                    \
	do {                                                                                       \
		if (n - i < (size_t)(k))                                                           \
			goto truncated;                                                            \
	} while (0)
	NEED(4);
	h->version = be16(buf + i);
	h->lib_version = be16(buf + i + 2);
	i += 4;
	if (h->version < LZOP_VERSION_MIN)
		return lzout_fail(
		    m, -EIO, "lzo: corrupt header at compressed offset %" PRIu64 " (version %#x)",
		    off, h->version);
	h->needed = LZOP_VERSION_MIN;
	if (h->version >= LZOP_VERSION_FIELDS) {
		NEED(2);
		h->needed = be16(buf + i);
		i += 2;
	}
	NEED(1);
	h->method = buf[i++];
	if (h->version >= LZOP_VERSION_FIELDS) {
		NEED(1);
		h->level = buf[i++];
	}
	NEED(4);
	h->flags = be32(buf + i);
	i += 4;
	if (h->flags & LZOP_F_H_FILTER) {
		NEED(4);
		h->filter = be32(buf + i);
		i += 4;
	}
	NEED(8);
	h->mode = be32(buf + i);
	h->mtime = be32(buf + i + 4);
	i += 8;
	if (h->version >= LZOP_VERSION_FIELDS) {
		NEED(4);
		h->mtime |= (uint64_t)be32(buf + i) << 32;
		i += 4;
	}
	NEED(1);
	nlen = buf[i++];
	NEED(nlen + 4);
	lzop_set_name(h->name, buf + i, nlen);
	i += nlen;
#undef NEED
	sum = lzop_sum(h->flags & LZOP_F_H_CRC32, lzop_sum_init(h->flags & LZOP_F_H_CRC32),
		       buf + LZOP_MAGIC_LEN, i - LZOP_MAGIC_LEN);
	stored = be32(buf + i);
	i += 4;
	if (stored != sum)
		return lzout_fail(
		    m, -EIO,
		    "lzo: header checksum mismatch in the header at compressed offset "
		    "%" PRIu64 " (stored %08" PRIx32 ", computed %08" PRIx32 ")",
		    off, stored, sum);

	if (h->needed < LZOP_VERSION_MIN)
		return lzout_fail(m, -EIO,
				  "lzo: corrupt header at compressed offset %" PRIu64
				  " (version needed %#x)",
				  off, h->needed);
	if (h->needed > LZOP_NEEDED_MAX)
		return lzout_fail(m, -ENOTSUP,
				  "lzo: the part at compressed offset %" PRIu64
				  " needs lzop %x.%03x or newer to extract; not supported",
				  off, h->needed >> 12, h->needed & 0xfff);
	if (h->method != LZOP_M_LZO1X_1 && h->method != LZOP_M_LZO1X_1_15 &&
	    h->method != LZOP_M_LZO1X_999)
		return lzout_fail(
		    m, -ENOTSUP,
		    "lzo: the part at compressed offset %" PRIu64
		    " uses compression method %u, not LZO1X (an lzop built with other "
		    "methods made it); not supported",
		    off, h->method);
	err = lzop_flags_check(h->flags, &why);
	if (err)
		return lzout_fail(m, err, "lzo: the part at compressed offset %" PRIu64 " %s", off,
				  why);
	h->end = off + i;
	if (h->flags & LZOP_F_H_EXTRA_FIELD) {
		err = lzop_extra_field(in, h, off, &h->end, m);
		if (err)
			return err;
	}
	return 1;
truncated:
	return lzout_fail(m, -EIO,
			  "lzo: the file ends inside the header at compressed offset %" PRIu64
			  " (truncated)",
			  off);
}

/* ---- Block headers and blocks -------------------------------------------------------------- */

struct lzop_bhdr {
	uint32_t ulen, clen;
	uint32_t d_adler, d_crc, c_adler, c_crc;
	size_t hlen; /* bytes of this header */
};

enum { LZOP_BH_END = 0, LZOP_BH_BLOCK = 1, LZOP_BH_SHORT = 2 };

/* Parses the block header in the n bytes at p.  LZOP_BH_BLOCK, LZOP_BH_END (an end marker,
 * 4 bytes), LZOP_BH_SHORT (n is less than the header), or -EIO with why set. */
static int lzop_parse_bhdr(const uint8_t *p, size_t n, uint32_t flags, struct lzop_bhdr *b,
			   const char **why)
{
	size_t i = 8;

	memset(b, 0, sizeof(*b));
	if (n < 4)
		return LZOP_BH_SHORT;
	b->ulen = be32(p);
	if (b->ulen == 0) {
		b->hlen = 4;
		return LZOP_BH_END;
	}
	if (n < 8)
		return LZOP_BH_SHORT;
	b->clen = be32(p + 4);
	if (b->ulen == UINT32_MAX) {
		*why = "block size 0xffffffff (a split lzop file, which lzop never made; damaged?)";
		return -EIO;
	}
	if (b->ulen > LZOP_BLOCK_MAX) {
		*why = "declares a block larger than lzop's limit of 64 MiB: refusing it (damaged "
		       "or hostile file)";
		return -EIO;
	}
	if (b->clen == 0 || b->clen > b->ulen) {
		*why = "corrupt block header (compressed size 0 or larger than the block)";
		return -EIO;
	}
	b->hlen = 8 + 4 * (size_t)(!!(flags & LZOP_F_ADLER32_D) + !!(flags & LZOP_F_CRC32_D));
	if (b->clen < b->ulen)
		b->hlen += 4 * (size_t)(!!(flags & LZOP_F_ADLER32_C) + !!(flags & LZOP_F_CRC32_C));
	if (n < b->hlen)
		return LZOP_BH_SHORT;
	if (flags & LZOP_F_ADLER32_D) {
		b->d_adler = be32(p + i);
		i += 4;
	}
	if (flags & LZOP_F_CRC32_D) {
		b->d_crc = be32(p + i);
		i += 4;
	}
	if (b->clen < b->ulen && (flags & LZOP_F_ADLER32_C)) {
		b->c_adler = be32(p + i);
		i += 4;
	}
	if (b->clen < b->ulen && (flags & LZOP_F_CRC32_C))
		b->c_crc = be32(p + i);
	return LZOP_BH_BLOCK;
}

/* Decodes and verifies one block: the checksums of its compressed data, lzo1x_decompress_safe
 * into exactly ulen bytes at out (a stored block is copied), the checksums of its decompressed
 * data.  0, or -errno with m set (blockno and coff, the offset of its header, name it). */
static int lzop_decode(const struct lzop_bhdr *b, const uint8_t *payload, uint32_t flags,
		       uint8_t *out, uint64_t blockno, uint64_t coff, const char *who,
		       struct lzout_msg *m)
{
	const char *what = NULL;
	uint32_t stored = 0, sum = 0;

	if (b->clen < b->ulen) {
		lzo_uint dlen = b->ulen;
		int r;

		if ((flags & LZOP_F_ADLER32_C) &&
		    (sum = lzop_sum(false, 1, payload, b->clen)) != (stored = b->c_adler))
			what = "Adler-32 of the compressed data";
		else if ((flags & LZOP_F_CRC32_C) &&
			 (sum = lzop_sum(true, 0, payload, b->clen)) != (stored = b->c_crc))
			what = "CRC-32 of the compressed data";
		if (what)
			goto mismatch;
		r = lzo1x_decompress_safe(payload, b->clen, out, &dlen, NULL);
		if (r != LZO_E_OK)
			return lzout_fail(m, liberr_lzo(r),
					  "lzo: %sblock %" PRIu64 " at compressed offset %" PRIu64
					  ": %s",
					  who, blockno, coff, lzop_strerror(r));
		if (dlen != b->ulen)
			return lzout_fail(m, -EIO,
					  "lzo: %sblock %" PRIu64 " at compressed offset %" PRIu64
					  ": decodes to %lu bytes, its header says %" PRIu32,
					  who, blockno, coff, (unsigned long)dlen, b->ulen);
	} else {
		memcpy(out, payload, b->ulen);
	}
	if ((flags & LZOP_F_ADLER32_D) &&
	    (sum = lzop_sum(false, 1, out, b->ulen)) != (stored = b->d_adler))
		what = "Adler-32 of the decompressed data";
	else if ((flags & LZOP_F_CRC32_D) &&
		 (sum = lzop_sum(true, 0, out, b->ulen)) != (stored = b->d_crc))
		what = "CRC-32 of the decompressed data";
	if (!what)
		return 0;
mismatch:
	return lzout_fail(m, -EIO,
			  "lzo: %sblock %" PRIu64 " at compressed offset %" PRIu64
			  ": %s does not match (stored %08" PRIx32 ", computed %08" PRIx32 ")",
			  who, blockno, coff, what, stored, sum);
}

/* ---- Walking the block headers ------------------------------------------------------------- */

/* Consecutive blocks of one part: one checkpoint. */
struct lzop_group {
	uint64_t uoff, ulen;  /* decompressed */
	uint64_t coff, clen;  /* compressed: first block header .. end of the last payload */
	uint64_t first_block; /* 1-based, in the whole file */
	uint32_t nblocks;
	uint32_t flags; /* of the part */
};

/* The header hopper shared by the scan (one at a time, under walk_lock) and index_blocks. */
struct lzop_walk {
	struct src *in;
	uint64_t size;	  /* src_size() */
	uint64_t pos;	  /* next block header, or after an end marker the next file header */
	bool in_part;	  /* pos is a block header of the current part */
	uint32_t flags;	  /* the current part's */
	uint64_t parts;	  /* parts started */
	uint64_t blockno; /* blocks walked */
	uint64_t uoff;	  /* decompressed bytes walked */
	bool done;	  /* no more groups: end_err is 0 at the end of the data, or -errno */
	int end_err;
	struct lzout_msg msg; /* what ended the walk (an error, or a notice of garbage) */
	char name[256];	     /* the first part's stored base name */
};

/* Reads the first file header.  An error is kept for the first lzop_walk_group(). */
static void lzop_walk_start(struct lzop_walk *w, struct src *in)
{
	struct lzop_hdr h;
	int r;

	memset(w, 0, sizeof(*w));
	w->in = in;
	w->size = src_size(in);
	r = lzop_read_header(in, 0, true, false, &h, &w->msg);
	if (r < 0) {
		w->done = true;
		w->end_err = r;
		return;
	}
	snprintf(w->name, sizeof(w->name), "%s", h.name);
	w->in_part = true;
	w->flags = h.flags;
	w->parts = 1;
	w->pos = h.end;
}

/* Ends the walk with err (0: the end of the data); a group already begun is returned first. */
static int lzop_walk_stop(struct lzop_walk *w, const struct lzop_group *g, int err)
{
	w->done = true;
	w->end_err = err;
	return g->nblocks ? 1 : err;
}

/* The next group: 1 with *g set, 0 at the end of the data, or -errno (w->msg says why).  What
 * ends the walk after a group is returned by the next call. */
static int lzop_walk_group(struct lzop_walk *w, struct lzop_group *g)
{
	memset(g, 0, sizeof(*g));
	if (w->done)
		return w->end_err;
	for (;;) {
		uint8_t hb[LZOP_BHDR_MAX];
		struct lzop_bhdr b;
		const char *why = "";
		ssize_t n;
		int t;

		if (!w->in_part) {
			struct lzop_hdr h;
			int r = lzop_read_header(w->in, w->pos, false, false, &h, &w->msg);

			if (r <= 0)
				return lzop_walk_stop(w, g, r);
			w->in_part = true;
			w->flags = h.flags;
			w->parts++;
			w->pos = h.end;
		}
		n = src_pread(w->in, hb, sizeof(hb), w->pos);
		if (n < 0)
			return lzop_walk_stop(
			    w, g,
			    lzout_fail(&w->msg, (int)n,
				       "lzo: read error at compressed offset %" PRIu64 ": %s",
				       w->pos, strerror((int)-n)));
		t = lzop_parse_bhdr(hb, (size_t)n, w->flags, &b, &why);
		if (t == LZOP_BH_SHORT)
			return lzop_walk_stop(
			    w, g,
			    lzout_fail(
				&w->msg, -EIO,
				n == 0 ? "lzo: the file ends at compressed offset %" PRIu64
					 ", after block %" PRIu64
					 ", without an end-of-data marker (truncated)"
				       : "lzo: the file ends inside the header of block %" PRIu64
					 " at compressed offset %" PRIu64 " (truncated)",
				n == 0 ? w->pos : w->blockno + 1, n == 0 ? w->blockno : w->pos));
		if (t < 0)
			return lzop_walk_stop(w, g,
					      lzout_fail(&w->msg, t,
							 "lzo: block %" PRIu64
							 " at compressed offset %" PRIu64 ": %s",
							 w->blockno + 1, w->pos, why));
		if (t == LZOP_BH_END) {
			w->pos += 4;
			w->in_part = false;
			if (g->nblocks)
				return 1;
			continue;
		}
		if (w->size != SRC_SIZE_UNKNOWN &&
		    (w->size < w->pos || w->size - w->pos < b.hlen + (uint64_t)b.clen))
			return lzop_walk_stop(w, g,
					      lzout_fail(&w->msg, -EIO,
							 "lzo: the file ends inside block %" PRIu64
							 " at compressed offset %" PRIu64
							 " (truncated)",
							 w->blockno + 1, w->pos));
		if (!g->nblocks) {
			g->uoff = w->uoff;
			g->coff = w->pos;
			g->first_block = w->blockno + 1;
			g->flags = w->flags;
		}
		g->nblocks++;
		g->ulen += b.ulen;
		w->pos += b.hlen + b.clen;
		g->clen = w->pos - g->coff;
		w->uoff += b.ulen;
		w->blockno++;
		if (g->ulen >= LZOP_GROUP || g->nblocks >= LZOP_GROUP_BLOCKS)
			return 1;
	}
}

static void lzop_group_ckpt(const struct lzop_group *g, struct codec_ckpt *ck)
{
	ck->uoff = g->uoff;
	ck->ulen = g->ulen;
	ck->coff = g->coff;
	ck->clen = g->clen;
	ck->extra = g->first_block;
	ck->bits = g->nblocks;
	ck->flags = g->flags;
}

/* ---- The scan ------------------------------------------------------------------------------ */

/* The groups are the jobs of a decode pipeline (pipeline.h): the dispatch turn walks the next
 * group's block headers, a worker decodes the group into one buffer. */
struct codec_scan {
	struct src *in;
	struct codec_sink sink;
	struct lzop_walk walk; /* the dispatch turn's (name: read-only after scan_new) */
	struct inwin *win;  /* one per worker */
	unsigned nworkers;
	struct pipeline *pl;
};

static int lzop_pl_next(void *ctx, unsigned worker, struct pl_job *job, struct pl_note *end)
{
	struct codec_scan *s = ctx;
	struct lzop_group *g = job->own;
	int r = lzop_walk_group(&s->walk, g);

	if (r > 0)
		lzop_group_ckpt(g, &job->ck);
	else
		lzout_end_note(&s->walk.msg, end);
	return r;
}

/* Decodes the group's blocks one after the other into one buffer.  What the blocks that
 * passed their checks decoded is handed over, and the checkpoint covers only them: the bytes
 * of a block that fails are never returned (they are known to be wrong). */
static int lzop_pl_run(void *ctx, unsigned worker, struct pl_job *job, struct pl_note *fail)
{
	struct codec_scan *s = ctx;
	const struct lzop_group *g = job->own;
	struct inwin *w = &s->win[worker];
	struct lzout_msg msg = {0};
	const uint8_t *p;
	uint8_t *out;
	uint64_t at = g->coff;
	size_t off = 0, len = 0, cap;
	uint32_t good = 0;
	ssize_t n;
	int err = pl_buf(job, (size_t)g->ulen, &out, &cap);

	if (err)
		return err;
	n = inwin_get(w, g->coff, (size_t)g->clen, 0, &p);
	if (n < 0) {
		err =
		    lzout_fail(&msg, (int)n, "lzo: read error at compressed offset %" PRIu64 ": %s",
			       g->coff, strerror((int)-n));
		goto out;
	}
	for (uint32_t i = 0; i < g->nblocks; i++) {
		uint64_t blockno = g->first_block + i;
		struct lzop_bhdr b;
		const char *why = "";
		int t = lzop_parse_bhdr(p + off, (size_t)n - off, g->flags, &b, &why);

		if (t == LZOP_BH_BLOCK && (size_t)n - off - b.hlen < b.clen)
			t = LZOP_BH_SHORT;
		if (t == LZOP_BH_SHORT) {
			err = lzout_fail(&msg, -EIO,
					 "lzo: the file ends inside block %" PRIu64
					 " at compressed offset %" PRIu64 " (truncated)",
					 blockno, at);
			goto out;
		}
		if (t != LZOP_BH_BLOCK || len + b.ulen > g->ulen) {
			/* The walk saw these very bytes a moment ago: the file changed. */
			err = lzout_fail(&msg, t < 0 ? t : -EIO,
					 "lzo: block %" PRIu64 " at compressed offset %" PRIu64
					 ": the block header changed while the file was read",
					 blockno, at);
			goto out;
		}
		err = lzop_decode(&b, p + off + b.hlen, g->flags, out + len, blockno, at, "", &msg);
		if (err)
			goto out;
		off += b.hlen + b.clen;
		at += b.hlen + b.clen;
		len += b.ulen;
		good++;
	}
	if (len != g->ulen || off != g->clen)
		err = lzout_fail(&msg, -EIO,
				 "lzo: the blocks at compressed offset %" PRIu64
				 " changed while the file was read",
				 g->coff);
out:
	return lzout_group_done(job, len, off, good, err, &msg, fail);
}

static const struct pl_ops lzop_pl_ops = {
	.job_size = sizeof(struct lzop_group),
	.next = lzop_pl_next,
	.run = lzop_pl_run,
};

static void lzop_scan_free(struct codec_scan *s)
{
	if (!s)
		return;
	pl_free(s->pl);
	for (unsigned i = 0; s->win && i < s->nworkers; i++)
		free(s->win[i].buf);
	free(s->win);
	free(s);
}

static int lzop_scan_new(struct src *in, const struct codec_opts *opts,
			 const struct codec_sink *sink, struct codec_scan **out)
{
	struct codec_scan *s;
	int err;

	*out = NULL;
	if (!in || !sink || !sink->checkpoint)
		return -EINVAL;
	err = lzop_lib_init();
	if (err)
		return err;
	s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	s->in = in;
	s->sink = *sink;
	s->nworkers = pl_threads(opts, LZOP_MAX_THREADS);

	/* The first header is read here, so that scan_name works at once; an error in it is
	 * reported by the first scan_read, like any other. */
	lzop_walk_start(&s->walk, in);

	s->win = calloc(s->nworkers, sizeof(*s->win));
	if (!s->win) {
		err = -ENOMEM;
		goto fail;
	}
	for (unsigned i = 0; i < s->nworkers; i++)
		s->win[i].in = in;
	err = pl_start(&lzop_pl_ops, s, &s->sink, "lzo", s->nworkers, 2 * (size_t)s->nworkers + 1,
		       PL_CHUNK, &s->pl);
	if (err)
		goto fail;
	*out = s;
	return 0;
fail:
	lzop_scan_free(s);
	return err;
}

static ssize_t lzop_scan_read(struct codec_scan *s, void *buf, size_t len)
{
	return pl_read(s->pl, buf, len);
}

static uint64_t lzop_scan_verified(struct codec_scan *s)
{
	return pl_verified(s->pl);
}

static const char *lzop_scan_name(struct codec_scan *s)
{
	return s->walk.name[0] ? s->walk.name : NULL;
}

/* ---- index_blocks -------------------------------------------------------------------------- */

static int lzop_index_blocks(struct src *in, const struct codec_opts *opts,
			     const struct codec_sink *sink, uint64_t *usize)
{
	struct lzop_walk w;
	struct lzop_group g;
	int err, r;

	(void)opts;
	*usize = 0;
	if (!in || !sink || !sink->checkpoint)
		return -EINVAL;
	err = lzop_lib_init();
	if (err)
		return err;
	lzop_walk_start(&w, in);
	if (!w.done && !(w.flags & LZOP_F_D)) {
		TFS_DEBUG("lzo: no checksums of decompressed data: the blocks must be scanned");
		return -ENOTSUP;
	}
	while ((r = lzop_walk_group(&w, &g)) > 0) {
		struct codec_ckpt ck;

		if (!(g.flags & LZOP_F_D)) {
			TFS_DEBUG("lzo: part %" PRIu64 " has no checksums of decompressed data",
				  w.parts);
			return -ENOTSUP;
		}
		lzop_group_ckpt(&g, &ck);
		err = sink->checkpoint(sink->opaque, &ck, NULL, 0);
		if (err < 0)
			return err;
	}
	/* Refused features are for the scan to explain; damage is logged here. */
	if (r != -ENOTSUP)
		lzout_log(&w.msg);
	if (r < 0)
		return r;
	*usize = w.uoff;
	return 0;
}

/* ---- Decoders ------------------------------------------------------------------------------ */

struct codec_dec {
	struct inwin win;
	struct codec_ckpt ck;
	uint32_t flags;	   /* the current part's */
	uint64_t pos;	   /* next block header (or end marker) */
	uint64_t blockno;  /* the number of the next block */
	uint32_t left;	   /* blocks of the checkpoint's group still to decode */
	uint64_t gdecoded; /* decompressed bytes of the group so far */
	struct lzout o;	   /* the last decoded block */
};

static void lzop_dec_free(struct codec_dec *d)
{
	if (!d)
		return;
	free(d->win.buf);
	lzout_free(&d->o);
	free(d);
}

static int lzop_dec_new(struct src *in, const struct codec_ckpt *ck, const void *aux, size_t auxlen,
			struct codec_dec **out)
{
	struct codec_dec *d;
	const char *why;
	int err;

	(void)aux;
	(void)auxlen;
	*out = NULL;
	if (!in || !ck)
		return -EINVAL;
	err = lzop_lib_init();
	if (err)
		return err;
	if (ck->bits == 0 || ck->bits > LZOP_GROUP_BLOCKS || ck->clen < 9 * (uint64_t)ck->bits ||
	    lzop_flags_check(ck->flags, &why)) {
		tfs_log(TFS_LOG_ERR, "lzo: invalid checkpoint at decompressed offset %" PRIu64,
			ck->uoff);
		return -EINVAL;
	}
	d = calloc(1, sizeof(*d));
	if (!d)
		return -ENOMEM;
	d->win.in = in;
	d->ck = *ck;
	d->flags = ck->flags;
	d->pos = ck->coff;
	d->blockno = ck->extra;
	d->left = ck->bits;
	*out = d;
	return 0;
}

/* Verifies that the checkpoint's group ended where the checkpoint says.  0 or -EIO. */
static int lzop_dec_group_end(struct codec_dec *d)
{
	return lzout_chunk_end("lzo", &d->ck, d->left, d->pos, d->gdecoded);
}

/* Decodes the next block into d->out.  1, 0 at the end of the data, or -errno (logged). */
static int lzop_dec_block(struct codec_dec *d)
{
	struct lzout_msg m = {0};
	const uint8_t *p;
	struct lzop_bhdr b;
	const char *why = "";
	size_t ahead;
	ssize_t n;
	int t, err;

	for (;;) {
		ahead = LZOP_DEC_AHEAD;
		if (d->left && d->ck.coff + d->ck.clen > d->pos) {
			uint64_t rest = d->ck.coff + d->ck.clen - d->pos;
			ahead = rest < LZOP_DEC_AHEAD_MAX ? (size_t)rest : LZOP_DEC_AHEAD_MAX;
		}
		n = inwin_get(&d->win, d->pos, LZOP_BHDR_MAX, ahead, &p);
		if (n < 0) {
			tfs_log(TFS_LOG_ERR,
				"lzo: decoder: read error at compressed offset %" PRIu64 ": %s",
				d->pos, strerror((int)-n));
			return (int)n;
		}
		t = lzop_parse_bhdr(p, (size_t)n, d->flags, &b, &why);
		if (t == LZOP_BH_BLOCK) {
			n = inwin_get(&d->win, d->pos, b.hlen + b.clen, ahead, &p);
			if (n < 0) {
				tfs_log(TFS_LOG_ERR,
					"lzo: decoder: read error at compressed offset %" PRIu64
					": %s",
					d->pos, strerror((int)-n));
				return (int)n;
			}
			if ((size_t)n < b.hlen + b.clen)
				t = LZOP_BH_SHORT;
		}
		if (t == LZOP_BH_SHORT) {
			tfs_log(TFS_LOG_ERR,
				"lzo: decoder: the file ends inside block %" PRIu64
				" at compressed offset %" PRIu64 " (truncated)",
				d->blockno, d->pos);
			return -EIO;
		}
		if (t < 0) {
			tfs_log(TFS_LOG_ERR,
				"lzo: decoder: block %" PRIu64 " at compressed offset %" PRIu64
				": %s",
				d->blockno, d->pos, why);
			return t;
		}
		if (t == LZOP_BH_BLOCK)
			break;
		/* An end marker: the end of the data, or another part. */
		if (d->left)
			return lzop_dec_group_end(d);
		struct lzop_hdr h;
		int r = lzop_read_header(d->win.in, d->pos + 4, false, true, &h, &m);
		if (r <= 0) {
			if (r < 0)
				tfs_log(TFS_LOG_ERR, "%s (decoder)", m.text);
			return r;
		}
		d->flags = h.flags;
		d->pos = h.end;
	}
	err = inwin_buf_reserve(&d->o.buf, &d->o.cap, b.ulen);
	if (err)
		return err;
	err = lzop_decode(&b, p + b.hlen, d->flags, d->o.buf, d->blockno, d->pos, "decoder: ", &m);
	if (err) {
		lzout_log(&m);
		return err;
	}
	d->pos += b.hlen + b.clen;
	d->blockno++;
	if (d->left) {
		d->left--;
		d->gdecoded += b.ulen;
		if (!d->left && lzop_dec_group_end(d))
			return -EIO;
	}
	d->o.len = b.ulen;
	d->o.pos = 0;
	return 1;
}

static ssize_t lzop_dec_read(struct codec_dec *d, void *buf, size_t len)
{
	return lzout_read(&d->o, buf, len, lzop_dec_block, d);
}

static size_t lzop_dec_memory(const struct codec_dec *d)
{
	return sizeof(*d) + d->win.cap + d->o.cap;
}

const struct codec codec_lzo = {
	.name = "lzo",
	.probe = lzop_probe,
	.scan_new = lzop_scan_new,
	.scan_read = lzop_scan_read,
	.scan_verified = lzop_scan_verified,
	.scan_name = lzop_scan_name,
	.scan_free = lzop_scan_free,
	.index_blocks = lzop_index_blocks,
	.dec_new = lzop_dec_new,
	.dec_read = lzop_dec_read,
	.dec_memory = lzop_dec_memory,
	.dec_free = lzop_dec_free,
	.exact_input = true,
};
