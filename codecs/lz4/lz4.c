/* lz4 codec (liblz4's block decoder, libxxhash): checkpoints are groups of a frame's own
 * blocks, found by hopping from block header to block header, where the blocks are
 * independent; whole frames where they are linked; single blocks of the legacy format.
 *
 * An .lz4 file is a sequence of frames (`cat a.lz4 b.lz4` is valid: `lz4 -d` decodes them in
 * turn and their contents continue one stream), of three kinds:
 *  - an lz4 frame: magic 0x184D2204, a descriptor -- FLG (version 01, B.Indep, B.Checksum,
 *    C.Size, C.Checksum, DictID), BD (the maximum block size: 64 KiB, 256 KiB, 1 MiB or
 *    4 MiB), an optional 8-byte content size, an optional 4-byte dictionary id -- and a
 *    header checksum (the second byte of the XXH32 of the descriptor); then blocks, each a
 *    4-byte little-endian size (high bit set: the data is stored as is), the data, and, with
 *    B.Checksum, an XXH32 of the data as stored; an EndMark (a size of 0); with C.Checksum,
 *    an XXH32 of the frame's whole content.
 *  - a skippable frame: magic 0x184D2A50..5F, a 4-byte size, that many bytes: skipped.
 *  - the legacy format (`lz4 -l`): magic 0x184C2102, then blocks, each a 4-byte compressed
 *    size and LZ4 block data that decodes to at most 8 MiB, all independent, no checksums;
 *    it ends at the end of the file or at a size that cannot be one (0, or more than
 *    LZ4_COMPRESSBOUND(8 MiB): `lz4 -d` reads that as the next frame's magic).
 *
 * Frames with independent blocks (B.Indep: the lz4 tool's default) decode from any block
 * header, so the scan cuts them, from their block headers alone, into groups of consecutive
 * blocks: a group ends after 128 KiB / the maximum block size blocks (2 of 64 KiB, one of
 * 256 KiB, 1 MiB or 4 MiB -- about 128 KiB decompressed or one block, since the lz4 tool fills
 * every block but a frame's last; small groups keep a random read of a small member small) or
 * at its frame's EndMark.  The rule depends on headers only, because the decompressed size of
 * a block is known only by decoding it.  Frames with linked blocks (-BD: a block may copy from
 * the 64 KiB decoded before it) decode only from their start: one checkpoint per frame.  They are
 * decoded block by block with LZ4_decompress_safe_usingDict and a 64 KiB history kept beside
 * the output, not with LZ4F: the same block parser, checksums, size limits and messages with
 * compressed offsets then serve every kind of frame, and a block decodes straight into the
 * pipeline's buffer.  Legacy blocks are one checkpoint each (8 MiB).  Only safe decoders are
 * used (LZ4_decompress_safe*, never LZ4_decompress_fast).
 *
 * Files: lz4.c (this one) holds the format, the decoders and the codec table; lz4_scan.c the
 * scan (how it checks what several workers decode: its opening paragraph); lz4_walk.c the walk
 * of the headers that cuts the file into the scan's jobs; lz4_block.c frame headers and blocks,
 * parsed and decoded, for all of them; ../lzout.c what lz4 and lzop share on the output side.
 *
 * index_blocks is not offered (NULL).  A checkpoint needs uoff and ulen, and the
 * decompressed size of an lz4 block is written nowhere: not in the block header, and the
 * frame's maximum block size is a bound, not a size -- the lz4 tool happens to fill its
 * blocks, but LZ4F_flush() and other writers emit short blocks, and a content size (when
 * present) sums the blocks without fixing any one of them.  Headers alone cannot place the
 * checkpoints, so every lz4 file is scanned (and its segments get CRCs).
 *
 * After the last frame, zeros are ignored silently; anything else is ignored with a notice,
 * unless a valid lz4 frame header shows up later in it (a damaged stream: -EIO).  Damage --
 * a bad header checksum, a block larger than the frame's maximum block size (refused before
 * anything is allocated), a block that fails to decode or whose checksum differs, a file
 * that ends inside a frame -- is -EIO, logged with a compressed offset.  A valid header that
 * asks for a dictionary (DictID), another format version or reserved bits is -ENOTSUP.
 *
 * A decoder starts at its checkpoint and continues block after block, past its chunk and
 * into the following frames; it returns 0 at the end of the data.  On its first read it
 * fetches its group's compressed bytes with one pread, then reads ahead one maximum block at
 * a time.  When it has passed the `bits` blocks of its checkpoint it checks that they ended
 * at coff + clen and decoded to ulen (-EIO otherwise: the file no longer matches its index).
 * A decoder that has seen a frame from its header verifies its content size and checksum at
 * its end (a mismatch fails the call after the frame's last byte).  It holds its compressed
 * window, one decoded block and, in linked frames, a 64 KiB history: ~8.3 MiB for 4 MiB
 * blocks, ~16.2 MiB for legacy ones.  The scan holds up to depth (workers + 2) jobs' decoded
 * bytes, one group's compressed bytes per worker and a 64 KiB history per worker: ~35 MiB
 * with two workers and 4 MiB blocks, ~10 MiB with 64 KiB blocks.
 *
 * Checkpoint fields for lz4:
 *   uoff   decompressed offset of the chunk's first byte, counted across all frames;
 *   ulen   decompressed bytes of the chunk (set by the scan for groups and legacy blocks; 0
 *          for a linked frame, which the index completes);
 *   coff   independent blocks and legacy: compressed offset of the first block header;
 *          linked blocks: compressed offset of the frame's magic;
 *   clen   compressed bytes from coff to the end of the chunk's last block (its checksum
 *          included);
 *   extra  the number of the chunk's first block in the file, 1-based, all frames counted
 *          (for messages);
 *   bits   the number of blocks in the chunk;
 *   flags  LZ4_K_* << 16 (the kind: independent, linked, legacy) | BD << 8 | FLG.
 * No aux blob.
 */
#include "codecs/codec.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define XXH_STATIC_LINKING_ONLY /* XXH32_state_t by value */
#include <xxhash.h>

#include "common/byteio.h"
#include "common/log.h"
#include "codecs/inwin.h"
#include "codecs/lz4/lz4_int.h"
#include "codecs/lzout.h"

static bool lz4_probe(const uint8_t *head, size_t len)
{
	uint32_t m;

	if (len < 4)
		return false;
	m = le32(head);
	return m == LZ4_FRAME_MAGIC || m == LZ4_LEGACY_MAGIC;
}

/* ---- Decoders ------------------------------------------------------------------------------ */

struct codec_dec {
	struct inwin win;
	struct codec_ckpt ck;
	int state;	     /* LZ4_W_* */
	struct lz4_fhdr fh;  /* the current frame's */
	uint64_t frame_coff; /* ... its magic */
	uint64_t pos;	     /* next magic, block header or EndMark */
	uint64_t blockno;    /* the number of the next block */
	uint32_t left;	     /* blocks of the checkpoint's chunk still to decode */
	uint64_t cdecoded;   /* decompressed bytes of the chunk so far */
	bool whole;	     /* the current frame was entered at its header: check it */
	uint64_t fcount;     /* ... its bytes so far */
	XXH32_state_t xxh;
	struct lzout o; /* the last decoded block */
	uint8_t *hist;	/* linked frames */
	size_t hlen;
};

static void lz4_dec_free(struct codec_dec *d)
{
	if (!d)
		return;
	free(d->win.buf);
	lzout_free(&d->o);
	free(d->hist);
	free(d);
}

static int lz4_dec_new(struct src *in, const struct codec_ckpt *ck, const void *aux, size_t auxlen,
		       struct codec_dec **out)
{
	struct codec_dec *d;
	unsigned kind = ck ? ck->flags >> 16 : 0;
	const char *why;

	(void)aux;
	(void)auxlen;
	*out = NULL;
	if (!in || !ck)
		return -EINVAL;
	if (kind < LZ4_K_INDEP || kind > LZ4_K_LEGACY || ck->bits == 0 ||
	    ck->clen < 4 * (uint64_t)ck->bits ||
	    (kind != LZ4_K_LEGACY &&
	     (lz4_fhdr_check((uint8_t)ck->flags, (uint8_t)(ck->flags >> 8), &why) ||
	      !(ck->flags & LZ4_F_INDEP) != (kind == LZ4_K_LINKED)))) {
		tfs_log(TFS_LOG_ERR, "lz4: invalid checkpoint at decompressed offset %" PRIu64,
			ck->uoff);
		return -EINVAL;
	}
	d = calloc(1, sizeof(*d));
	if (!d)
		return -ENOMEM;
	d->win.in = in;
	d->ck = *ck;
	d->pos = ck->coff;
	d->blockno = ck->extra;
	d->left = ck->bits;
	if (kind == LZ4_K_LEGACY) {
		d->state = LZ4_W_LEGACY;
	} else if (kind == LZ4_K_LINKED) {
		d->state = LZ4_W_BETWEEN; /* the frame header at coff */
	} else {
		d->state = LZ4_W_FRAME;
		d->fh.flg = (uint8_t)ck->flags;
		d->fh.bd = (uint8_t)(ck->flags >> 8);
		d->fh.bmax = lz4_bd_max(d->fh.bd);
	}
	*out = d;
	return 0;
}

/* Verifies that the checkpoint's chunk ended where the checkpoint says.  0 or -EIO. */
static int lz4_dec_chunk_end(struct codec_dec *d)
{
	return lzout_chunk_end("lz4", &d->ck, d->left, d->pos, d->cdecoded);
}

static int lz4_dec_read_error(uint64_t at, ssize_t n)
{
	tfs_log(TFS_LOG_ERR, "lz4: decoder: read error at compressed offset %" PRIu64 ": %s", at,
		strerror((int)-n));
	return (int)n;
}

/* At a frame's EndMark (d->pos): the content checksum, and the frame's checks if the decoder
 * saw all of it.  0 with d->pos after the frame, or -errno (logged). */
static int lz4_dec_endmark(struct codec_dec *d)
{
	uint64_t at = d->pos + 4;
	uint32_t sum = 0;
	size_t n;
	int r;

	if (d->left)
		return lz4_dec_chunk_end(d);
	if (d->fh.flg & LZ4_F_CSUM) {
		r = lz4_read32(d->win.in, at, &sum, &n);
		if (r < 0)
			return lz4_dec_read_error(at, r);
		if (r == 0) {
			tfs_log(TFS_LOG_ERR,
				"lz4: decoder: the file ends inside the content checksum of the "
				"frame at compressed offset %" PRIu64 " (truncated)",
				d->frame_coff);
			return -EIO;
		}
		at += 4;
	}
	if (d->whole) {
		if ((d->fh.flg & LZ4_F_CSIZE) && d->fcount != d->fh.csize) {
			tfs_log(TFS_LOG_ERR,
				"lz4: decoder: the frame at compressed offset %" PRIu64
				" decodes to %" PRIu64 " bytes, its header says %" PRIu64,
				d->frame_coff, d->fcount, d->fh.csize);
			return -EIO;
		}
		if ((d->fh.flg & LZ4_F_CSUM) && XXH32_digest(&d->xxh) != sum) {
			tfs_log(TFS_LOG_ERR,
				"lz4: decoder: the frame at compressed offset %" PRIu64
				": content checksum mismatch",
				d->frame_coff);
			return -EIO;
		}
	}
	d->pos = at;
	d->state = LZ4_W_BETWEEN;
	return 0;
}

/* Between frames at d->pos: enters the next frame or legacy stream.  1, 0 at the end of the
 * data (whatever is not lz4 is for the scan to report), or -errno (logged). */
static int lz4_dec_between(struct codec_dec *d)
{
	uint8_t hb[LZ4_HDR_MAX];
	const char *why = "";
	ssize_t n = src_pread(d->win.in, hb, sizeof(hb), d->pos);
	uint32_t v;
	int r;

	if (n < 0)
		return lz4_dec_read_error(d->pos, n);
	if (n < 4)
		return d->left ? lz4_dec_chunk_end(d) : 0;
	v = le32(hb);
	if (v == LZ4_FRAME_MAGIC) {
		r = lz4_parse_fhdr(hb, (size_t)n, &d->fh, &why);
		if (r == LZ4_H_SHORT)
			why = "the file ends inside it (truncated)";
		if (r != LZ4_H_OK) {
			tfs_log(TFS_LOG_ERR,
				"lz4: decoder: the frame header at compressed offset %" PRIu64
				": %s",
				d->pos, why);
			return r < 0 ? r : -EIO;
		}
		if (d->left && !(d->fh.flg & LZ4_F_INDEP) != ((d->ck.flags >> 16) == LZ4_K_LINKED))
			return lz4_dec_chunk_end(d);
		d->frame_coff = d->pos;
		d->pos += d->fh.hlen;
		d->state = LZ4_W_FRAME;
		d->whole = true;
		d->fcount = 0;
		d->hlen = 0;
		XXH32_reset(&d->xxh, 0);
		return 1;
	}
	if (d->left) /* a linked checkpoint starts at a frame header */
		return lz4_dec_chunk_end(d);
	if ((v & LZ4_SKIP_MASK) == LZ4_SKIP_MAGIC) {
		if (n < 8)
			return 0;
		d->pos += 8 + (uint64_t)le32(hb + 4);
		return 1;
	}
	if (v == LZ4_LEGACY_MAGIC) {
		d->pos += 4;
		d->state = LZ4_W_LEGACY;
		return 1;
	}
	return 0;
}

/* Decodes the next block into d->out.  1, 0 at the end of the data, or -errno (logged). */
static int lz4_dec_block(struct codec_dec *d)
{
	struct lzout_msg m = {0};
	const char *why = "";
	const uint8_t *p;
	struct lz4_blk b;
	size_t ahead, bmax;
	ssize_t n, r;
	uint32_t v;
	int t, err;

	for (;;) {
		if (d->state == LZ4_W_BETWEEN) {
			t = lz4_dec_between(d);
			if (t <= 0)
				return t;
			continue;
		}
		bmax = d->state == LZ4_W_LEGACY ? LZ4_LEGACY_BLOCK : d->fh.bmax;
		ahead = bmax + 8;
		if (d->left && d->ck.coff + d->ck.clen > d->pos) {
			uint64_t rest = d->ck.coff + d->ck.clen - d->pos;
			ahead = rest < LZ4_DEC_AHEAD_MAX ? (size_t)rest : LZ4_DEC_AHEAD_MAX;
		}
		n = inwin_get(&d->win, d->pos, 4, ahead, &p);
		if (n < 0)
			return lz4_dec_read_error(d->pos, n);
		if (d->state == LZ4_W_LEGACY) {
			if (n < 4)
				return d->left ? lz4_dec_chunk_end(d) : 0;
			v = le32(p);
			if (v == 0 || v > LZ4_LEGACY_BOUND) {
				if (d->left)
					return lz4_dec_chunk_end(d);
				d->state = LZ4_W_BETWEEN;
				continue;
			}
			memset(&b, 0, sizeof(b));
			b.size = v;
			b.total = 4 + (uint64_t)v;
		} else {
			if (n < 4) {
				tfs_log(TFS_LOG_ERR,
					"lz4: decoder: the file ends at compressed offset %" PRIu64
					", before the frame's EndMark (truncated)",
					d->pos);
				return -EIO;
			}
			err = lz4_parse_blk(le32(p), &d->fh, &b, &why);
			if (err) {
				tfs_log(TFS_LOG_ERR,
					"lz4: decoder: block %" PRIu64
					" at compressed offset %" PRIu64 ": %s",
					d->blockno, d->pos, why);
				return err;
			}
			if (b.end) {
				err = lz4_dec_endmark(d);
				if (err)
					return err;
				continue;
			}
		}
		n = inwin_get(&d->win, d->pos, (size_t)b.total, ahead, &p);
		if (n < 0)
			return lz4_dec_read_error(d->pos, n);
		if ((size_t)n < b.total) {
			tfs_log(TFS_LOG_ERR,
				"lz4: decoder: the file ends inside block %" PRIu64
				" at compressed offset %" PRIu64 " (truncated)",
				d->blockno, d->pos);
			return -EIO;
		}
		break;
	}
	err = inwin_buf_reserve(&d->o.buf, &d->o.cap, bmax);
	if (err)
		return err;
	bool linked = d->state == LZ4_W_FRAME && !(d->fh.flg & LZ4_F_INDEP);
	if (linked && !d->hist && !(d->hist = malloc(LZ4_HIST)))
		return -ENOMEM;
	r = lz4_decode_blk(&b, p, d->state == LZ4_W_LEGACY ? 0 : d->fh.flg, d->o.buf, bmax,
			   linked ? d->hist : NULL, linked ? d->hlen : 0, d->blockno, d->pos,
			   "decoder: ", &m);
	if (r < 0) {
		lzout_log(&m);
		return (int)r;
	}
	if (linked)
		lz4_hist_add(d->hist, &d->hlen, d->o.buf, (size_t)r);
	if (d->state == LZ4_W_FRAME && d->whole) {
		d->fcount += (uint64_t)r;
		if (d->fh.flg & LZ4_F_CSUM)
			XXH32_update(&d->xxh, d->o.buf, (size_t)r);
	}
	d->pos += b.total;
	d->blockno++;
	if (d->left) {
		d->left--;
		d->cdecoded += (uint64_t)r;
		if (!d->left && lz4_dec_chunk_end(d))
			return -EIO;
	}
	d->o.len = (size_t)r;
	d->o.pos = 0;
	return 1;
}

static ssize_t lz4_dec_read(struct codec_dec *d, void *buf, size_t len)
{
	return lzout_read(&d->o, buf, len, lz4_dec_block, d);
}

static size_t lz4_dec_memory(const struct codec_dec *d)
{
	return sizeof(*d) + d->win.cap + d->o.cap + (d->hist ? LZ4_HIST : 0);
}

const struct codec codec_lz4 = {
	.name = "lz4",
	.probe = lz4_probe,
	.scan_new = lz4_scan_new,
	.scan_read = lz4_scan_read,
	.scan_verified = lz4_scan_verified,
	.scan_name = NULL,
	.scan_free = lz4_scan_free,
	.index_blocks = NULL,
	.dec_new = lz4_dec_new,
	.dec_read = lz4_dec_read,
	.dec_memory = lz4_dec_memory,
	.dec_free = lz4_dec_free,
	.exact_input = true,
};
