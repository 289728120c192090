/* lzop's file headers, block headers and blocks: parsed, checked and decoded, for the walk
 * (lzo_walk.c), the scan's workers (lzo_scan.c) and the decoders (lzo.c).  Blocks decode with
 * lzo1x_decompress_safe only, into exactly their declared size, between the checksums their
 * part's flags ask for; a header's checksum and its extra field's are checked as it is read.
 */
#include "codecs/lzo/lzo_int.h"

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include <lzo/lzo1x.h>

#include "common/byteio.h"
#include "common/crc32.h"
#include "common/log.h"
#include "codecs/liberr.h"
#include "codecs/trailing.h"

const uint8_t lzop_magic[LZOP_MAGIC_LEN] = {0x89, 0x4c, 0x5a, 0x4f, 0x00, 0x0d, 0x0a, 0x1a, 0x0a};

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
int lzop_lib_init(void)
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

/* The checksum flags must be usable: a checksum of compressed data comes with one of the
 * decompressed data (a stored block carries only the latter; lzop refuses such files too), and
 * nothing refused is set.  0, or -errno with why set. */
int lzop_flags_check(uint32_t flags, const char **why)
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
int lzop_read_header(struct src *in, uint64_t off, bool first, bool quiet, struct lzop_hdr *h,
		     struct lzout_msg *m)
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

/* Parses the block header in the n bytes at p.  LZOP_BH_BLOCK, LZOP_BH_END (an end marker,
 * 4 bytes), LZOP_BH_SHORT (n is less than the header), or -EIO with why set. */
int lzop_parse_bhdr(const uint8_t *p, size_t n, uint32_t flags, struct lzop_bhdr *b,
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
int lzop_decode(const struct lzop_bhdr *b, const uint8_t *payload, uint32_t flags, uint8_t *out,
		uint64_t blockno, uint64_t coff, const char *who, struct lzout_msg *m)
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
