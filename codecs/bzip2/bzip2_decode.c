/* A bzip2 block decoded whole into a list of chunks, for the scan (bzip2_scan.c): with our
 * decoder (bzip2_block.h), or with stock libbz2 for randomised blocks and TARSEEK_BZIP2=libbz2.
 *
 * Decoding one block with stock libbz2.  libbz2 cannot start in the middle of a stream, so,
 * like bzip2recover, we build a small stream around the block: "BZh" + level, the block's bits
 * shifted to start on a byte boundary, the end-of-stream magic, and the block's own CRC as the
 * combined CRC (a one-block stream's combined CRC is its block's CRC).  libbz2 then checks the
 * block CRC and that the end-of-stream magic follows the block's last code exactly.
 *
 * The decoder (bzip2.c) builds the same one-block stream (bz_build) when libbz2 decodes its
 * block.
 */
#include "codecs/bzip2/bzip2_int.h"

#include <bzlib.h>
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "codecs/liberr.h"

/* ORs the n low bits of v into p at bit offset bit (the bits there must be 0). */
static void bz_put_bits(uint8_t *p, uint64_t bit, uint64_t v, unsigned n)
{
	for (unsigned k = 0; k < n; k++, bit++)
		if ((v >> (n - 1 - k)) & 1)
			p[bit / 8] |= (uint8_t)(0x80 >> (bit % 8));
}

/* Turns buf into a one-block stream, in place, and returns its length.  On entry buf + 4 holds
 * the block's raw bytes: the block starts at bit `shift` of buf[4] and is nbits >= 80 long,
 * and buf has room for 4 + ceil((shift + nbits) / 8) + BZ_TRAILER bytes.  *crc = the block's
 * stored CRC. */
size_t bz_build(uint8_t *buf, unsigned shift, uint64_t nbits, unsigned level, uint32_t *crc)
{
	uint8_t *p = buf + 4;
	size_t nraw = (size_t)((shift + nbits + 7) / 8), nout = (size_t)((nbits + 7) / 8);

	if (shift) {
		for (size_t i = 0; i < nout; i++)
			p[i] =
			    (uint8_t)(p[i] << shift | (i + 1 < nraw ? p[i + 1] >> (8 - shift) : 0));
	}
	if (nbits % 8)
		p[nout - 1] &= (uint8_t)(0xff << (8 - nbits % 8));
	memset(p + nout, 0, BZ_TRAILER);
	*crc = (uint32_t)bz_get_bits(p, 48, 32);
	bz_put_bits(p, nbits, BZ_MAGIC_EOS, 48);
	bz_put_bits(p, nbits + 48, *crc, 32);
	memcpy(buf, "BZh", 3);
	buf[3] = (uint8_t)('0' + level);
	return 4 + (size_t)((nbits + 80 + 7) / 8);
}

void bz_out_free(struct bz_out *o)
{
	while (o->head) {
		struct bz_chunk *c = o->head;
		o->head = c->next;
		free(c);
	}
	o->tail = NULL;
	o->len = 0;
}

/* The chunk out's next bytes go to, with room for at least one; NULL if out of memory. */
static struct bz_chunk *bz_out_room(struct bz_out *out)
{
	struct bz_chunk *c = out->tail;

	if (c && c->len < BZ_CHUNK)
		return c;
	c = malloc(sizeof(*c));
	if (!c)
		return NULL;
	c->next = NULL;
	c->len = 0;
	if (out->tail)
		out->tail->next = c;
	else
		out->head = c;
	out->tail = c;
	return c;
}

/* Decodes the one-block stream in[0..inlen) into out (empty on entry) with libbz2.  0, -EIO
 * if it does not decode to its end with matching CRCs (not logged: the caller knows whether
 * that is damage or a false candidate), or -ENOMEM.  out is empty on error. */
static int bz_decode_all(uint8_t *in, size_t inlen, struct bz_out *out)
{
	bz_stream z;
	int rc, err;

	memset(&z, 0, sizeof(z));
	rc = BZ2_bzDecompressInit(&z, 0, 0);
	if (rc != BZ_OK)
		return liberr_bz2(rc);
	z.next_in = (char *)in;
	z.avail_in = (unsigned)inlen;
	for (;;) {
		struct bz_chunk *c = bz_out_room(out);
		if (!c) {
			err = -ENOMEM;
			break;
		}
		z.next_out = (char *)c->data + c->len;
		z.avail_out = (unsigned)(BZ_CHUNK - c->len);
		rc = BZ2_bzDecompress(&z);
		size_t got = BZ_CHUNK - c->len - z.avail_out;
		c->len += got;
		out->len += got;
		if (rc == BZ_STREAM_END) {
			err = z.avail_in ? -EIO : 0;
			break;
		}
		if (rc != BZ_OK) {
			err = liberr_bz2(rc);
			break;
		}
		if (z.avail_out) { /* wants more input: the block does not end where we cut it */
			err = -EIO;
			break;
		}
	}
	BZ2_bzDecompressEnd(&z);
	if (err)
		bz_out_free(out);
	return err;
}

/* Copies raw[0..) (the file's bytes from the block's first byte; the block starts at bit
 * `shift` and is nbits long) into a new stream buffer and decodes it with libbz2.  *crc = the
 * block's stored CRC.  0, -EIO, -ENOMEM. */
static int bz_decode_lib(const uint8_t *raw, unsigned shift, uint64_t nbits, unsigned level,
			 struct bz_out *out, uint32_t *crc)
{
	size_t nraw = (size_t)((shift + nbits + 7) / 8), slen;
	uint8_t *buf;
	int rc;

	if (nbits < 80)
		return -EIO;
	buf = malloc(4 + nraw + BZ_TRAILER);
	if (!buf)
		return -ENOMEM;
	memcpy(buf + 4, raw, nraw);
	slen = bz_build(buf, shift, nbits, level, crc);
	rc = bz_decode_all(buf, slen, out);
	free(buf);
	return rc;
}

static int bz_out_fill(struct bzb *b, struct bz_out *out, uint32_t *crc);

/* The same with our decoder b (bzip2_block.h), or with libbz2 if b is NULL or the block is
 * randomised; raw must be readable for BZB_PAD bytes past the block. */
int bz_decode_raw(struct bzb *b, const uint8_t *raw, unsigned shift, uint64_t nbits, unsigned level,
		  struct bz_out *out, uint32_t *crc)
{
	int rc = b ? bzb_load(b, raw, shift, nbits, level) : BZB_RANDOMISED;

	if (rc == BZB_RANDOMISED)
		return bz_decode_lib(raw, shift, nbits, level, out, crc);
	if (rc)
		return rc;
	return bz_out_fill(b, out, crc);
}

/* Reads the block loaded in b into out (empty on entry); *crc = its stored CRC.  0, -EIO,
 * -ENOMEM; out is empty on error. */
static int bz_out_fill(struct bzb *b, struct bz_out *out, uint32_t *crc)
{
	int rc;

	*crc = bzb_stored_crc(b);
	for (;;) {
		struct bz_chunk *c = bz_out_room(out);
		ssize_t n;
		if (!c) {
			rc = -ENOMEM;
			break;
		}
		n = bzb_read(b, c->data + c->len, BZ_CHUNK - c->len);
		if (n <= 0) {
			rc = (int)n;
			break;
		}
		c->len += (size_t)n;
		out->len += (uint64_t)n;
	}
	if (rc)
		bz_out_free(out);
	return rc;
}

void bz_log_block(const char *what, uint64_t bit)
{
	tfs_log(TFS_LOG_ERR, "bzip2: %s at byte %" PRIu64 " bit %u (bit offset %" PRIu64 ")", what,
		bit / 8, (unsigned)(bit % 8), bit);
}
