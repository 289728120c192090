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
 * Files: lzo.c (this one) holds the format, the decoders and the codec table; lzo_scan.c the
 * scan (its workers: its opening paragraph); lzo_walk.c the walk of the block headers that cuts
 * the groups, for the scan and for index_blocks (which it holds); lzo_format.c file headers,
 * block headers and blocks, parsed, checked and decoded, for all of them; ../lzout.c what lzop
 * and lz4 share on the output side.
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
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "codecs/inwin.h"
#include "codecs/lzo/lzo_int.h"
#include "codecs/lzout.h"

static bool lzop_probe(const uint8_t *head, size_t len)
{
	return len >= LZOP_MAGIC_LEN && memcmp(head, lzop_magic, LZOP_MAGIC_LEN) == 0;
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
