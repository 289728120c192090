/* bzip2 codec: one checkpoint per block, blocks found by their magic and decoded in parallel.
 *
 * A bzip2 stream is "BZh" + a level digit ('1'..'9', the block size in units of 100 000
 * bytes), then blocks, then a 48-bit end-of-stream magic 0x177245385090, a 32-bit combined
 * CRC and zero bits up to a byte boundary.  Each block starts with the 48-bit magic
 * 0x314159265359 and its own CRC, and is a complete Burrows-Wheeler transform of at most
 * level x 100 000 bytes: blocks share nothing, so a block boundary is a checkpoint that needs
 * no window.  But blocks are not byte-aligned -- a block ends wherever its last Huffman code
 * ends and the next magic follows at that bit -- and no header says how long a block is.
 *
 * Bounds.  The format only bounds a block's compressed size loosely (the code lengths are
 * coded as deltas that may wander), so we take the largest block a real encoder can write
 * (bz_max_block_bits: at most 20 bits for each of level x 100 000 + 1 symbols, plus tables)
 * and treat a longer span without a magic as damage.  That bounds the memory a scan or a
 * decoder holds, whatever the input.
 *
 * Integrity.  Every block's CRC, each stream's combined CRC (multi-stream files: `cat a.bz2
 * b.bz2`, pbzip2), and the structure (a stream header before the first block, a magic where
 * the previous block ended).  Damage or a truncated file is logged with its position and
 * scan_read fails with -EIO from then on; scan_verified is the end of the last good block.
 * Bytes after the last stream that do not start a new stream ("BZh" + level) are trailing
 * data: a notice, not an error.  A stream with no blocks is valid and emits no checkpoint.
 *
 * Files: bzip2.c (this one) holds the format, the decoder and the codec table; bzip2_scan.c
 * the scan (finding blocks, chance magics, the parallel decode: its opening paragraphs);
 * bzip2_decode.c a block decoded whole, and the one-block stream libbz2 needs (how, there);
 * bzip2_block.c our own decoder of one block.
 *
 * Checkpoint fields for bzip2 (one per block):
 *   uoff   decompressed offset of the block's first byte
 *   ulen   decompressed length of the block (set by the scan)
 *   coff   offset of the byte holding the block magic's first bit
 *   bits   that bit's position in the byte, 0..7, 0 being the most significant bit; the block
 *          starts at bit coff * 8 + bits of the file
 *   clen   length of the block in bits, from its magic to the next magic (the next block's or
 *          the end-of-stream magic)
 *   extra  the stream's level, 1..9
 *   flags  0
 * A decoder decodes exactly one block: dec_read returns 0 at its end (the caller opens the
 * next checkpoint).  It returns bytes as they come; the block's CRC is checked when its last
 * byte is produced, and a mismatch makes that dec_read call fail with -EIO.
 */
#include "codecs/codec.h"

#include <bzlib.h>
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "codecs/bzip2/bzip2_int.h"
#include "codecs/liberr.h"

static bool bz_probe(const uint8_t *head, size_t len)
{
	uint64_t m = 0;

	if (len < 10 || memcmp(head, "BZh", 3) != 0 || head[3] < '1' || head[3] > '9')
		return false;
	for (int i = 4; i < 10; i++)
		m = m << 8 | head[i];
	return m == BZ_MAGIC_BLOCK || m == BZ_MAGIC_EOS;
}

/* ---- the decoder ----------------------------------------------------------------------------- */

struct bz_dec {
	bz_stream z;
	uint8_t *stream; /* the block's bytes from offset 4; then, for libbz2, the one-block
			  * stream; freed once loaded */
	size_t slen;
	uint64_t bit;  /* where the block starts (messages) */
	uint64_t nbits;
	unsigned shift;
	size_t bzmem; /* bytes libbz2 holds */
	unsigned level;
	struct bzb *fast; /* our decoder, when it holds the block */
	int err;	  /* sticky */
	bool lib;	  /* libbz2 for this block (TARSEEK_BZIP2=libbz2, or a randomised block) */
	bool started;	  /* the block is loaded (fast) or libbz2 initialised (lib) */
	bool live;	  /* z is initialised */
	bool ended;
};

/* libbz2's allocator, counting what it holds (dec_memory).  A size header keeps the count
 * exact on free; 16 bytes keep malloc's alignment. */
static void *bz_dec_alloc(void *opaque, int n, int m)
{
	struct bz_dec *d = opaque;
	size_t sz = (size_t)(n > 0 ? n : 0) * (size_t)(m > 0 ? m : 0);
	uint8_t *p = malloc(sz + 16);

	if (!p)
		return NULL;
	memcpy(p, &sz, sizeof(sz));
	d->bzmem += sz;
	return p + 16;
}

static void bz_dec_free_mem(void *opaque, void *ptr)
{
	struct bz_dec *d = opaque;
	uint8_t *p = ptr;
	size_t sz;

	if (!p)
		return;
	p -= 16;
	memcpy(&sz, p, sizeof(sz));
	d->bzmem -= sz;
	free(p);
}

static void bz_dec_release(struct bz_dec *d)
{
	if (d->live)
		BZ2_bzDecompressEnd(&d->z);
	d->live = false;
	bzb_free(d->fast);
	d->fast = NULL;
	free(d->stream);
	d->stream = NULL;
}

static void bz_dec_free(struct codec_dec *cd)
{
	struct bz_dec *d = (struct bz_dec *)cd;

	if (!d)
		return;
	bz_dec_release(d);
	free(d);
}

static int bz_dec_new(struct src *in, const struct codec_ckpt *ck, const void *aux, size_t auxlen,
		      struct codec_dec **out)
{
	struct bz_dec *d;
	uint64_t nbits = ck->clen, bit;
	unsigned shift = ck->bits, level = (unsigned)ck->extra;
	size_t nraw;
	int rc;

	*out = NULL;
	if (level < 1 || level > 9 || shift > 7 || nbits < 80 || nbits > bz_max_block_bits(level) ||
	    ck->coff > UINT64_MAX / 8 - 1) {
		tfs_log(TFS_LOG_ERR,
			"bzip2: invalid checkpoint (byte %" PRIu64 " bit %u, %" PRIu64
			" bits, level %" PRIu64 ")",
			ck->coff, shift, nbits, ck->extra);
		return -EINVAL;
	}
	bit = ck->coff * 8 + shift;
	nraw = (size_t)((shift + nbits + 7) / 8);
	d = calloc(1, sizeof(*d));
	if (!d)
		return -ENOMEM;
	d->bit = bit;
	d->nbits = nbits;
	d->shift = shift;
	d->level = level;
	d->lib = bzb_use_libbz2();
	d->stream = malloc(4 + nraw + BZ_SLACK);
	if (!d->stream) {
		rc = -ENOMEM;
		goto fail;
	}
	rc = src_pread_full(in, d->stream + 4, nraw, ck->coff);
	if (rc) {
		if (rc == -EIO)
			bz_log_block("truncated file: it ends inside the block", bit);
		goto fail;
	}
	memset(d->stream + 4 + nraw, 0, BZ_SLACK);
	if (bz_get_bits(d->stream + 4, shift, 48) != BZ_MAGIC_BLOCK) {
		bz_log_block("no block magic where the index says a block starts", bit);
		rc = -EIO;
		goto fail;
	}
	*out = (struct codec_dec *)d;
	return 0;
fail:
	bz_dec_free((struct codec_dec *)d);
	return rc;
}

/* Loads the block into our decoder, or sets up libbz2 for it.  0 or -errno (logged). */
static int bz_dec_start(struct bz_dec *d)
{
	int rc;
	uint32_t crc;

	d->started = true;
	if (!d->lib) {
		d->fast = bzb_new();
		if (!d->fast)
			return -ENOMEM;
		rc = bzb_load(d->fast, d->stream + 4, d->shift, d->nbits, d->level);
		if (rc == 0) {
			free(d->stream);
			d->stream = NULL;
			return 0;
		}
		bzb_free(d->fast);
		d->fast = NULL;
		if (rc != BZB_RANDOMISED) {
			if (rc == -EIO)
				bz_log_block("corrupt block (data error or CRC mismatch)", d->bit);
			return rc;
		}
		d->lib = true;
	}
	d->slen = bz_build(d->stream, d->shift, d->nbits, d->level, &crc);
	d->z.bzalloc = bz_dec_alloc;
	d->z.bzfree = bz_dec_free_mem;
	d->z.opaque = d;
	rc = liberr_bz2(BZ2_bzDecompressInit(&d->z, 0, 0));
	if (rc)
		return rc;
	d->live = true;
	d->z.next_in = (char *)d->stream;
	d->z.avail_in = (unsigned)d->slen;
	return 0;
}

/* dec_read with libbz2. */
static ssize_t bz_dec_read_lib(struct bz_dec *d, void *buf, size_t len)
{
	size_t got;
	int rc;

	if (len > UINT_MAX)
		len = UINT_MAX;
	d->z.next_out = buf;
	d->z.avail_out = (unsigned)len;
	rc = BZ2_bzDecompress(&d->z);
	got = len - d->z.avail_out;
	if (rc == BZ_STREAM_END && d->z.avail_in == 0) {
		d->ended = true;
		bz_dec_release(d);
		return (ssize_t)got;
	}
	if (rc == BZ_OK && got > 0)
		return (ssize_t)got;
	return rc == BZ_OK || rc == BZ_STREAM_END ? -EIO : liberr_bz2(rc);
}

static ssize_t bz_dec_read(struct codec_dec *cd, void *buf, size_t len)
{
	struct bz_dec *d = (struct bz_dec *)cd;
	ssize_t n;

	if (d->err)
		return d->err;
	if (d->ended || len == 0)
		return 0;
	if (!d->started) {
		int rc = bz_dec_start(d);
		if (rc) {
			d->err = rc;
			bz_dec_release(d);
			return rc;
		}
	}
	if (d->fast) {
		n = bzb_read(d->fast, buf, len);
		if (n == 0) {
			d->ended = true;
			bz_dec_release(d);
		}
	} else {
		n = bz_dec_read_lib(d, buf, len);
	}
	if (n >= 0)
		return n;
	d->err = (int)n;
	if (d->err == -EIO)
		bz_log_block("corrupt block (data error or CRC mismatch)", d->bit);
	bz_dec_release(d);
	return d->err;
}

static size_t bz_dec_memory(const struct codec_dec *cd)
{
	const struct bz_dec *d = (const struct bz_dec *)cd;
	size_t held = sizeof(*d) + (d->stream ? 4 + (size_t)((d->shift + d->nbits + 7) / 8) +
						    BZ_SLACK
					      : 0);

	if (d->ended || d->err)
		return held;
	/* both decoders hold 4 bytes per symbol of the block size once started: count them
	 * before they exist (libbz2 allocates its ~64 KiB state at init) */
	size_t lib = 65536 + (size_t)d->level * 400000;
	if (d->fast && bzb_memory(d->fast) > lib)
		lib = bzb_memory(d->fast);
	if (d->bzmem > lib)
		lib = d->bzmem;
	return held + lib;
}

const struct codec codec_bzip2 = {
	.name = "bzip2",
	.probe = bz_probe,
	.scan_new = bz_scan_new,
	.scan_read = bz_scan_read,
	.scan_verified = bz_scan_verified,
	.scan_name = NULL,
	.scan_free = bz_scan_free,
	.dec_new = bz_dec_new,
	.dec_read = bz_dec_read,
	.dec_memory = bz_dec_memory,
	.dec_free = bz_dec_free,
	.scan_holds_cores = true,
};
