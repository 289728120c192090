/* "squashfs": the data of the files of a SquashFS image (containers/squashfs/), one after the
 * other, as one stream of pieces (codecs/pieces.h).  A codec of container streams only (its
 * probe never says yes).
 *
 * A file's data is its blocks, each compressed on its own (or stored, or a hole), and maybe a
 * tail kept in a fragment block it shares with other small files; so every piece is one block
 * decoded whole and a slice of it taken.  The decoded block is kept until the next piece needs
 * another, so the small files of one fragment block, which follow one another in the stream
 * as they do in the image, decode it once.
 *
 * Header (8 bytes): le16 compressor id (sqfs_block.h), le16 0, le32 block size.  A record (32
 * bytes): le64 size (the bytes the piece gives), le64 the block's position in the image, le32
 * its size word as the inode has it (on-disk size, bit 24 set when stored as it is; 0 a hole,
 * a block of zeros), le32 skip (the bytes of the decoded block before the piece's), le32 kind
 * (0 a data block, which must decode to exactly size bytes; 1 a fragment block, which must
 * hold skip + size; 2 a run of holes, size zeros however many blocks: a sparse file's params
 * grow with its data, not with its size), le32 0.
 *
 * Checks: the decoded sizes above (SquashFS has no checksum of its data; the index's segment
 * CRCs check every read against what the scan decoded).
 */
#include "codecs/pieces.h"
#include "codecs/squashfs/sqfs_block.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "common/byteio.h"
#include "common/log.h"

#define SQC_REC 32
#define SQC_HDR 8
#define SQC_BLOCK_MAX ((uint32_t)1 << 20)
#define SQC_UNCOMPRESSED ((uint32_t)1 << 24)

struct sqc_ctx {
	struct src *in;
	unsigned comp;
	uint32_t block_size;
	uint64_t have_pos;   /* the block decoded in out, or UINT64_MAX */
	uint32_t have_word;
	size_t have_len;
	uint8_t *raw, *out;
};

static int sqc_open(struct src *in, const uint8_t *hdr, size_t hlen, void **ctx)
{
	struct sqc_ctx *c;

	*ctx = NULL;
	if (hlen != SQC_HDR || le32(hdr + 4) == 0 || le32(hdr + 4) > SQC_BLOCK_MAX)
		return -EINVAL;
	if (!sqfs_block_supported(le16(hdr))) {
		tfs_log(TFS_LOG_ERR, "squashfs: compressor %s is not in this build",
			sqfs_block_name(le16(hdr)));
		return -ENOTSUP;
	}
	c = calloc(1, sizeof(*c));
	if (!c)
		return -ENOMEM;
	c->in = in;
	c->comp = le16(hdr);
	c->block_size = le32(hdr + 4);
	c->have_pos = UINT64_MAX;
	c->raw = malloc(c->block_size);
	c->out = malloc(c->block_size);
	if (!c->raw || !c->out) {
		free(c->raw);
		free(c->out);
		free(c);
		return -ENOMEM;
	}
	*ctx = c;
	return 0;
}

static void sqc_close(void *ctx)
{
	struct sqc_ctx *c = ctx;

	if (!c)
		return;
	free(c->raw);
	free(c->out);
	free(c);
}

/* The block at pos with size word into c->out (kept for the next piece).  0 or -errno. */
static int sqc_block(struct sqc_ctx *c, uint64_t pos, uint32_t word)
{
	uint32_t disk = word & ~SQC_UNCOMPRESSED;
	ssize_t n;
	int err;

	if (c->have_pos == pos && c->have_word == word)
		return 0;
	c->have_pos = UINT64_MAX;
	if (disk == 0) { /* a hole */
		memset(c->out, 0, c->block_size);
		c->have_len = c->block_size;
		goto done;
	}
	if (disk > c->block_size) {
		tfs_log(TFS_LOG_ERR, "squashfs: block at %" PRIu64 " of %" PRIu32 " bytes, more "
			"than the block size: damaged", pos, disk);
		return -EIO;
	}
	err = src_pread_full(c->in, (word & SQC_UNCOMPRESSED) ? c->out : c->raw, disk, pos);
	if (err) {
		if (err == -EIO)
			tfs_log(TFS_LOG_ERR, "squashfs: the image ends inside the block at %" PRIu64
				" (truncated)", pos);
		return err;
	}
	if (word & SQC_UNCOMPRESSED) {
		c->have_len = disk;
		goto done;
	}
	n = sqfs_block_decode(c->comp, c->raw, disk, c->out, c->block_size);
	if (n < 0) {
		if (n == -EIO)
			tfs_log(TFS_LOG_ERR, "squashfs: the %s block at %" PRIu64 " does not decode: "
				"damaged", sqfs_block_name(c->comp), pos);
		return (int)n;
	}
	c->have_len = (size_t)n;
done:
	c->have_pos = pos;
	c->have_word = word;
	return 0;
}

static ssize_t sqc_read(void *ctx, const uint8_t *rec, uint64_t off, void *buf, size_t len)
{
	struct sqc_ctx *c = ctx;
	uint64_t size = le64(rec), pos = le64(rec + 8);
	uint32_t word = le32(rec + 16), skip = le32(rec + 20), kind = le32(rec + 24);
	int err;

	if (kind == 2) { /* a run of holes */
		if (off >= size)
			return 0;
		if (len > size - off)
			len = (size_t)(size - off);
		memset(buf, 0, len);
		return (ssize_t)len;
	}
	if ((err = sqc_block(c, pos, word)))
		return err;
	if (kind > 1 || (kind == 0 && (word & ~SQC_UNCOMPRESSED) != 0 && c->have_len != size) ||
	    skip > c->have_len || size > c->have_len - skip) {
		tfs_log(TFS_LOG_ERR, "squashfs: the block at %" PRIu64 " decodes to %zu bytes, not "
			"the %" PRIu64 " the file wants: damaged", pos, c->have_len, size + skip);
		return -EIO;
	}
	if (off >= size)
		return 0;
	if (len > size - off)
		len = (size_t)(size - off);
	memcpy(buf, c->out + skip + off, len);
	return (ssize_t)len;
}

static const struct pcs_ops sqc_ops = {
	.name = "squashfs",
	.rec_len = SQC_REC,
	.memory = 2 * SQC_BLOCK_MAX,
	.spacing = (uint64_t)256 << 10, /* a cold read decodes a few blocks, not 4 MiB */
	.open = sqc_open,
	.read = sqc_read,
	.close = sqc_close,
};

static int sqc_scan_new(struct src *in, const struct codec_opts *opts,
			const struct codec_sink *sink, struct codec_scan **out)
{
	return pcs_scan_new(&sqc_ops, in, opts, sink, out);
}

static int sqc_dec_new(struct src *in, const struct codec_ckpt *ck, const void *aux,
		       size_t auxlen, struct codec_dec **out)
{
	return pcs_dec_new(&sqc_ops, in, ck, aux, auxlen, out);
}

static bool sqc_probe(const uint8_t *head, size_t len)
{
	return false; /* only the container names it */
}

const struct codec codec_squashfs = {
	.name = "squashfs",
	.probe = sqc_probe,
	.scan_new = sqc_scan_new,
	.scan_read = pcs_scan_read,
	.scan_verified = pcs_scan_verified,
	.scan_free = pcs_scan_free,
	.dec_new = sqc_dec_new,
	.dec_read = pcs_dec_read,
	.dec_memory = pcs_dec_memory,
	.dec_free = pcs_dec_free,
};
