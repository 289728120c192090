/* The .Z codec: Unix compress (LZW), "compress".  Written here from the format.
 *
 * The format.  Three header bytes: the magic 0x1f 0x9d, then a flags byte -- its low 5 bits
 * the largest code width the compressor used (maxbits, 9..16; `compress -b`), 0x80 "block
 * mode" (code 256 is CLEAR, which empties the table; compress sets it unless told -C), 0x60
 * reserved.  Then LZW codes, packed least significant bit first, with no end marker and no
 * checksum.  Codes 0..255 are the bytes; each code after the first (after the start or a
 * CLEAR) adds one string to the table: the previous code's string followed by the first byte
 * of this code's string.  New strings take the next free code, from 257 in block mode (256
 * otherwise), until the table holds 1 << maxbits codes; then it stays as it is (until a
 * CLEAR).  A code equal to the next free code is the string being defined (the previous
 * string plus its own first byte: LZW's KwKwK case); a larger one cannot be.
 *
 * The quirks, all from the original implementation, which read and wrote codes in groups of
 * eight (n bits x 8 = n bytes):
 *  - codes are 9 bits wide at the start and after a CLEAR; the width grows by one when, before
 *    a code is read, the next free code is past the largest code of the width (511 at 9 bits,
 *    1023 at 10, ...), and the largest width is maxbits;
 *  - when the width grows, and after a CLEAR, the rest of the current group of eight codes is
 *    skipped: reading resumes at the next multiple of n bytes (n the old width) counted from
 *    where codes of that width started (after the header, the last width change or CLEAR).
 * Decoders that do not skip decode the first few hundred bytes and then garbage.
 *
 * Limits of the format.  Without a checksum, damage that leaves valid codes decodes to wrong
 * bytes that nothing can detect (the index's segment CRCs check later reads against what this
 * scan returned; that is all).  Without an end marker, a file cut where a code ends looks
 * complete: we call the file truncated only when it ends with a whole byte or more that holds
 * no complete code (compress pads its last code to a byte, never more), so about half of the
 * cuts of a 16-bit file, fewer at smaller widths, go unnoticed.  We do not ask the padding
 * bits to be zero (ncompress writes zeros; we do not rely on other writers doing so).  For the
 * same reason bytes appended to a .Z file, a second .Z file among them, decode as codes: to
 * wrong bytes or an invalid code, as with compress itself.  Invalid codes (past the next free
 * one, or a string code where only a byte can come) are damage: -EIO, logged with the
 * compressed offset, after the bytes decoded before them have been returned.  maxbits below 9
 * is damage (-EIO); above 16 (no compress we know writes it) and the reserved bits are
 * features we refuse (-ENOTSUP), both logged.  (ncompress 4.2.4 refuses maxbits 17 too, but
 * ignores the reserved bits, and gzip only warns about them: we would rather refuse a variant
 * we do not know than decode it to bytes that may be wrong.)  An empty file is -EIO here;
 * compress -dc makes nothing of it, without an error.
 *
 * Two kinds of file that ncompress 4.2.4 writes but that no decoder reads -- neither its own,
 * nor gzip's, nor libarchive's, nor this one, which decodes what they decode: with -b 9 its
 * encoder keeps 9-bit codes when the table is full, where every decoder widens them to 10
 * bits (as the original compress 4.0's encoder did, as far as we can tell); and with -C (no
 * block mode) its codes apparently start at 257, where the decoders start at 256.  Both
 * decode to wrong bytes or an invalid code; test_compress checks we do as compress -dc does.
 *
 * Checkpoints.  LZW cannot be entered in the middle (the table is built from everything since
 * the last CLEAR, and compress writes CLEARs only when the ratio drops, often never): the only
 * checkpoint is the start (uoff 0, coff 0, nothing else), and a decoder started there is the
 * scan itself.  Reads far into the stream are served by the decoded-data cache and its disk
 * tier, as for the other single-checkpoint streams.
 *
 * Decoding.  The table is a prefix code (16 bits) and a suffix byte per code, plus the
 * string's length, so a string is written straight into the caller's buffer from its end
 * backwards by walking its prefixes (no stack, no second copy); a string that does not fit in
 * what is left of the caller's buffer is decoded into a pending buffer and handed out from
 * there.  Codes are taken with one unaligned 32-bit load from a padded input buffer.
 *
 * Memory: ~450 KiB per scan or decoder (the tables 320 KiB for 16-bit codes, 64 KiB of input,
 * 64 KiB of pending output), whatever maxbits says.
 */
#include "codecs/codec.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"

#define LZW_MAGIC0 0x1f
#define LZW_MAGIC1 0x9d
#define LZW_HEAD 3
#define LZW_BITS_MASK 0x1f
#define LZW_BLOCK_MODE 0x80
#define LZW_RESERVED 0x60
#define LZW_MIN_BITS 9
#define LZW_MAX_BITS 16
#define LZW_CODES (1u << LZW_MAX_BITS)
#define LZW_CLEAR 256
#define LZW_INBUF (64u << 10)
#define LZW_INPAD 8	      /* zero bytes after the input, for the 32-bit loads */
#define LZW_PEND LZW_CODES /* longer than any string (at most 65281 bytes) */

_Static_assert(LZW_INBUF % 4 == 0, "the input buffer holds whole words");

struct lzw {
	struct src *in;
	int err;	/* sticky: -errno, or 1 at the clean end */
	bool started;	/* the header has been read */
	bool block;	/* block mode: 256 is CLEAR */
	bool have_prev; /* a code has been read since the start or the last CLEAR */
	unsigned maxbits, nbits;
	uint32_t maxcode;  /* the next free code past this makes the width grow */
	uint32_t maxmax;   /* 1 << maxbits: the table is full */
	uint32_t free_ent; /* the next free code */
	uint32_t prev;	   /* the previous code */
	uint8_t fin;	   /* the first byte of the previous code's string */

	/* input: inbuf[0] is compressed byte buf_off; bits [bp, have * 8) are not read yet */
	uint64_t buf_off;
	uint64_t seg;	   /* compressed byte where codes of the current width start */
	uint64_t last_end; /* compressed bit after the last code read */
	size_t have;
	uint64_t bp;
	bool eof; /* the source has no bytes past inbuf[have] */

	/* a string decoded that did not fit the caller's buffer */
	uint32_t pend_pos, pend_len;

	uint64_t out; /* decoded bytes handed out */

	uint16_t prefix[LZW_CODES];
	uint16_t len[LZW_CODES];
	uint8_t suffix[LZW_CODES];
	uint8_t inbuf[LZW_INBUF + LZW_INPAD];
	uint8_t pend[LZW_PEND];
};

static struct lzw *lzw_new(struct src *in)
{
	struct lzw *z = malloc(sizeof(*z));

	if (!z)
		return NULL;
	/* the tables are filled as codes are defined; only the state is cleared */
	memset(z, 0, offsetof(struct lzw, prefix));
	z->in = in;
	for (unsigned c = 0; c < 256; c++) {
		z->suffix[c] = (uint8_t)c;
		z->len[c] = 1;
		z->prefix[c] = 0;
	}
	return z;
}

static int lzw_fail(struct lzw *z, int err)
{
	return z->err = err;
}

/* Reads and checks the header.  0, or -errno (logged). */
static int lzw_header(struct lzw *z)
{
	uint8_t h[LZW_HEAD];
	ssize_t n = src_pread(z->in, h, sizeof(h), 0);

	if (n < 0)
		return lzw_fail(z, (int)n);
	if (n == 0) {
		tfs_log(TFS_LOG_ERR, "compress: the file is empty");
		return lzw_fail(z, -EIO);
	}
	if (n < 2 || h[0] != LZW_MAGIC0 || h[1] != LZW_MAGIC1) {
		tfs_log(TFS_LOG_ERR, "compress: not a .Z file (no compress magic at offset 0)");
		return lzw_fail(z, -EIO);
	}
	if (n < 3) {
		tfs_log(TFS_LOG_ERR, "compress: the header is truncated");
		return lzw_fail(z, -EIO);
	}
	if (h[2] & LZW_RESERVED) {
		tfs_log(TFS_LOG_ERR, "compress: reserved flag bits 0x%02x set (a format we do not know)",
			h[2] & LZW_RESERVED);
		return lzw_fail(z, -ENOTSUP);
	}
	z->maxbits = h[2] & LZW_BITS_MASK;
	if (z->maxbits < LZW_MIN_BITS) {
		tfs_log(TFS_LOG_ERR, "compress: invalid header: codes of at most %u bits",
			z->maxbits);
		return lzw_fail(z, -EIO);
	}
	if (z->maxbits > LZW_MAX_BITS) {
		tfs_log(TFS_LOG_ERR, "compress: compressed with %u-bit codes, at most %u supported",
			z->maxbits, LZW_MAX_BITS);
		return lzw_fail(z, -ENOTSUP);
	}
	z->block = h[2] & LZW_BLOCK_MODE;
	z->maxmax = 1u << z->maxbits;
	z->nbits = LZW_MIN_BITS;
	/* as the original: 511 at the start, whatever maxbits (with -b 9 the width still grows
	 * to 10 bits when the table is full, as in compress 4.0 and every decoder) */
	z->maxcode = (1u << LZW_MIN_BITS) - 1;
	z->free_ent = z->block ? 257 : 256;
	z->buf_off = LZW_HEAD;
	z->seg = LZW_HEAD;
	z->last_end = LZW_HEAD * 8;
	z->started = true;
	return 0;
}

/* Moves bp to the next boundary of a group of eight nbits-bit codes (the quirk). */
static void lzw_skip_group(struct lzw *z, unsigned nbits)
{
	uint64_t gbits = (uint64_t)nbits * 8;
	uint64_t abs = z->buf_off * 8 + z->bp, rel = abs - z->seg * 8;

	rel = (rel + gbits - 1) / gbits * gbits;
	z->bp = z->seg * 8 + rel - z->buf_off * 8;
	z->seg += rel / 8;
}

/* Refills the input so that bits [bp, bp + nbits) are in it, if the file has them.
 * 0 (check have), or -errno. */
static int lzw_refill(struct lzw *z)
{
	uint64_t skip = z->bp >> 3;
	size_t keep = skip < z->have ? z->have - (size_t)skip : 0;
	ssize_t n;

	if (keep)
		memmove(z->inbuf, z->inbuf + skip, keep);
	z->buf_off += skip;
	z->bp &= 7;
	z->have = keep;
	n = src_pread(z->in, z->inbuf + keep, LZW_INBUF - keep, z->buf_off + keep);
	if (n < 0)
		return (int)n;
	z->have += (size_t)n;
	if ((size_t)n < LZW_INBUF - keep)
		z->eof = true;
	memset(z->inbuf + z->have, 0, LZW_INPAD);
	return 0;
}

/* The end of the input, where the next code would be: the clean end, or truncated. */
static int lzw_at_end(struct lzw *z)
{
	uint64_t end = (z->buf_off + z->have) * 8;

	if (end >= z->last_end + 8) {
		tfs_log(TFS_LOG_ERR,
			"compress: truncated: the file ends %llu bits after the last whole code, at "
			"compressed offset %llu",
			(unsigned long long)(end - z->last_end), (unsigned long long)(end >> 3));
		return lzw_fail(z, -EIO);
	}
	return z->err = 1;
}

static int lzw_bad_code(struct lzw *z, uint32_t code, uint64_t at)
{
	tfs_log(TFS_LOG_ERR,
		"compress: invalid code %u (next free code %u) at compressed offset %llu (bit %u)",
		code, z->free_ent, (unsigned long long)(at >> 3), (unsigned)(at & 7));
	return lzw_fail(z, -EIO);
}

static inline uint32_t lzw_load32(const uint8_t *p)
{
	uint32_t v;

	memcpy(&v, p, 4);
#if __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
	v = __builtin_bswap32(v);
#endif
	return v;
}

/* Takes up to len bytes of the pending string into buf; returns their count. */
static size_t lzw_pend_take(struct lzw *z, uint8_t *buf, size_t len)
{
	size_t k = z->pend_len < len ? z->pend_len : len;

	memcpy(buf, z->pend + z->pend_pos, k);
	z->pend_pos += (uint32_t)k;
	z->pend_len -= (uint32_t)k;
	return k;
}

/* lzw_read's input ends before its next code, at bit bp (last: bp after the last code read
 * from this buffer, UINT64_MAX if none): refills it.  true if it did, false at the end of the
 * data or on an error (z->err set). */
static bool lzw_more(struct lzw *z, uint64_t bp, uint64_t last)
{
	int err;

	if (last != UINT64_MAX)
		z->last_end = z->buf_off * 8 + last;
	z->bp = bp;
	if (z->eof) {
		lzw_at_end(z);
		return false;
	}
	err = lzw_refill(z);
	if (err) {
		lzw_fail(z, err);
		return false;
	}
	return true;
}

/* Decodes into buf (len > 0).  > 0 bytes, 0 at the end, or -errno (sticky; bytes decoded
 * before an error are returned first). */
static ssize_t lzw_read(struct lzw *z, uint8_t *buf, size_t len)
{
	size_t pos = 0;

	if (z->pend_len) {
		size_t k = lzw_pend_take(z, buf, len);
		z->out += k;
		return (ssize_t)k;
	}
	if (z->err)
		return z->err < 0 ? z->err : 0;
	if (!z->started && lzw_header(z))
		return z->err;

	/* the hot loop keeps its state in locals */
	uint64_t bp = z->bp, limit = (uint64_t)z->have * 8;
	unsigned nbits = z->nbits;
	uint32_t mask = (1u << nbits) - 1, free_ent = z->free_ent, maxcode = z->maxcode;
	uint32_t prev = z->prev;
	uint8_t fin = z->fin;
	bool have_prev = z->have_prev;
	const uint8_t *in = z->inbuf;
	uint16_t *prefix = z->prefix;
	uint8_t *suffix = z->suffix;
	uint16_t *lens = z->len;
	/* (locals too: every byte stored through buf may alias *z for the compiler) */
	const uint32_t maxmax = z->maxmax;
	const unsigned maxbits = z->maxbits;
	const bool block = z->block;
	uint64_t last = UINT64_MAX; /* bp after the last code read from this buffer */

	while (pos < len) {
		if (free_ent > maxcode) { /* the width grows: skip the rest of the group */
			z->bp = bp;
			lzw_skip_group(z, nbits);
			bp = z->bp;
			nbits++;
			mask = (1u << nbits) - 1;
			maxcode = nbits >= maxbits ? maxmax : mask;
		}
		if (bp + nbits > limit) {
			bool more = lzw_more(z, bp, last);

			last = UINT64_MAX;
			if (!more)
				break;
			bp = z->bp;
			limit = (uint64_t)z->have * 8;
			in = z->inbuf;
			continue;
		}
		uint32_t code = (lzw_load32(in + (bp >> 3)) >> (bp & 7)) & mask;
		uint64_t at = bp;
		bp += nbits;
		last = bp;

		if (code == LZW_CLEAR && block) {
			z->bp = bp;
			lzw_skip_group(z, nbits);
			bp = z->bp;
			nbits = LZW_MIN_BITS;
			mask = (1u << nbits) - 1;
			maxcode = mask;
			free_ent = 257;
			have_prev = false;
			continue;
		}
		if (!have_prev) { /* the first code: a byte */
			if (code >= 256) {
				z->free_ent = free_ent;
				lzw_bad_code(z, code, z->buf_off * 8 + at);
				break;
			}
			buf[pos++] = (uint8_t)code;
			prev = code;
			fin = (uint8_t)code;
			have_prev = true;
			continue;
		}
		uint32_t c = code, slen;
		if (code >= free_ent) {
			if (code > free_ent || free_ent >= maxmax) {
				z->free_ent = free_ent;
				lzw_bad_code(z, code, z->buf_off * 8 + at);
				break;
			}
			slen = (uint32_t)lens[prev] + 1; /* KwKwK: prev's string + its first byte */
			c = prev;
		} else {
			slen = lens[code];
		}
		uint8_t *dst;
		bool pending = slen > len - pos;
		if (!pending) {
			dst = buf + pos;
			pos += slen;
		} else { /* hand it out from the pending buffer */
			dst = z->pend;
			z->pend_pos = 0;
			z->pend_len = slen;
		}
		uint8_t *p = dst + slen;
		if (c != code)
			*--p = fin;
		while (c >= 256) {
			*--p = suffix[c];
			c = prefix[c];
		}
		*--p = (uint8_t)c;
		fin = (uint8_t)c;
		if (free_ent < maxmax) {
			prefix[free_ent] = (uint16_t)prev;
			suffix[free_ent] = fin;
			lens[free_ent] = (uint16_t)(lens[prev] + 1);
			free_ent++;
		}
		prev = code;
		if (pending)
			break;
	}
	if (last != UINT64_MAX)
		z->last_end = z->buf_off * 8 + last;
	z->bp = bp;
	z->nbits = nbits;
	z->free_ent = free_ent;
	z->maxcode = maxcode;
	z->prev = prev;
	z->fin = fin;
	z->have_prev = have_prev;

	if (pos == 0 && z->pend_len) /* (pend_pos is 0: the string was just put there) */
		pos = lzw_pend_take(z, buf, len);
	z->out += pos;
	if (pos)
		return (ssize_t)pos;
	return z->err < 0 ? z->err : 0;
}

/* ---- the scan: a decoder from the start, and its one checkpoint ---- */

struct codec_scan {
	struct lzw *z;
	struct codec_sink sink;
	bool emitted;
};

static int cz_scan_new(struct src *in, const struct codec_opts *opts, const struct codec_sink *sink,
		       struct codec_scan **out)
{
	struct codec_scan *s;

	(void)opts;
	*out = NULL;
	s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	s->z = lzw_new(in);
	if (!s->z) {
		free(s);
		return -ENOMEM;
	}
	s->sink = *sink;
	*out = s;
	return 0;
}

static ssize_t cz_scan_read(struct codec_scan *s, void *buf, size_t len)
{
	struct lzw *z = s->z;

	if (!z->started && !z->err && lzw_header(z))
		return z->err;
	if (!s->emitted && z->started) { /* the start: the one place to begin */
		struct codec_ckpt ck = {0};
		s->emitted = true;
		int err = s->sink.checkpoint ? s->sink.checkpoint(s->sink.opaque, &ck, NULL, 0) : 0;
		if (err)
			return lzw_fail(z, err);
	}
	return lzw_read(z, buf, len);
}

static uint64_t cz_scan_verified(struct codec_scan *s)
{
	return s->z->out; /* nothing in .Z checks the data: the index's segment CRCs do */
}

static void cz_scan_free(struct codec_scan *s)
{
	if (!s)
		return;
	free(s->z);
	free(s);
}

struct codec_dec {
	struct lzw *z;
};

static int cz_dec_new(struct src *in, const struct codec_ckpt *ck, const void *aux, size_t auxlen,
		      struct codec_dec **out)
{
	struct codec_dec *d;

	(void)aux;
	(void)auxlen;
	*out = NULL;
	if (ck->uoff || ck->coff)
		return -EINVAL; /* the start is the only checkpoint there is */
	d = calloc(1, sizeof(*d));
	if (!d)
		return -ENOMEM;
	d->z = lzw_new(in);
	if (!d->z) {
		free(d);
		return -ENOMEM;
	}
	*out = d;
	return 0;
}

static ssize_t cz_dec_read(struct codec_dec *d, void *buf, size_t len)
{
	return lzw_read(d->z, buf, len);
}

static size_t cz_dec_memory(const struct codec_dec *d)
{
	return sizeof(*d) + sizeof(*d->z);
}

static void cz_dec_free(struct codec_dec *d)
{
	if (!d)
		return;
	free(d->z);
	free(d);
}

static bool cz_probe(const uint8_t *head, size_t len)
{
	return len >= 2 && head[0] == LZW_MAGIC0 && head[1] == LZW_MAGIC1;
}

const struct codec codec_compress = {
	.name = "compress",
	.probe = cz_probe,
	.scan_new = cz_scan_new,
	.scan_read = cz_scan_read,
	.scan_verified = cz_scan_verified,
	.scan_free = cz_scan_free,
	.dec_new = cz_dec_new,
	.dec_read = cz_dec_read,
	.dec_memory = cz_dec_memory,
	.dec_free = cz_dec_free,
};
