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
 * The scan runs opts->threads workers through the decode pipeline (pipeline.h): the dispatch
 * turn walks the next group's block headers (a linked frame's every header, to find where it
 * ends), a worker reads the group's compressed bytes with one pread and decodes its blocks
 * into one buffer: the block checksum if present (before decoding: it covers the stored
 * bytes), then the block.  A linked frame's worker decodes its blocks in turn, handing over
 * buffer after buffer.  The content checksum and the content size are the frame's whole
 * content, which several workers decode: the caller's thread checks them on the bytes as
 * scan_read returns them (the pipeline's begin() marks where each job starts), and a
 * mismatch fails the scan with -EIO after the frame's last byte; scan_verified() is then the
 * frame's start.  The bytes of a block that fails are never returned: the scan returns every
 * good block before it, then -EIO, logged with the block's number and compressed offset.
 * Empty frames (no block) are checked by the walk itself.
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

#include <lz4.h>
#define XXH_STATIC_LINKING_ONLY /* XXH32_state_t by value */
#include <xxhash.h>

#include "common/byteio.h"
#include "common/log.h"
#include "codecs/inwin.h"
#include "codecs/lzout.h"
#include "codecs/pipeline.h"
#include "codecs/trailing.h"

#define LZ4_FRAME_MAGIC 0x184D2204u
#define LZ4_SKIP_MAGIC 0x184D2A50u /* ..5F */
#define LZ4_SKIP_MASK 0xFFFFFFF0u
#define LZ4_LEGACY_MAGIC 0x184C2102u
#define LZ4_LEGACY_BLOCK (8u << 20)			     /* decoded bytes per legacy block */
#define LZ4_LEGACY_BOUND LZ4_COMPRESSBOUND(LZ4_LEGACY_BLOCK) /* its largest compressed size */
#define LZ4_HDR_MAX 19	       /* magic, FLG, BD, content size, dictionary id, HC */
#define LZ4_HIST (64u << 10)   /* what a linked block may copy from */
#define LZ4_GROUP (128u << 10) /* decompressed bytes per checkpoint, about */
#define LZ4_STORED 0x80000000u /* high bit of a block size */
#define LZ4_MAX_THREADS 64
#define LZ4_DEC_AHEAD_MAX ((size_t)8 << 20) /* a decoder's read within its group */

/* FLG bits */
#define LZ4_F_VERSION 0xC0
#define LZ4_F_INDEP 0x20
#define LZ4_F_BSUM 0x10
#define LZ4_F_CSIZE 0x08
#define LZ4_F_CSUM 0x04
#define LZ4_F_RESERVED 0x02
#define LZ4_F_DICTID 0x01

/* Checkpoint kinds (flags >> 16). */
enum { LZ4_K_INDEP = 1, LZ4_K_LINKED = 2, LZ4_K_LEGACY = 3 };

_Static_assert(LZ4_LEGACY_BOUND < LZ4_STORED, "legacy sizes fit 31 bits");
_Static_assert((4u << 20) + LZ4_HIST < (unsigned)INT32_MAX, "block sizes fit liblz4's int");

static bool lz4_probe(const uint8_t *head, size_t len)
{
	uint32_t m;

	if (len < 4)
		return false;
	m = le32(head);
	return m == LZ4_FRAME_MAGIC || m == LZ4_LEGACY_MAGIC;
}

/* ---- Frame headers and blocks -------------------------------------------------------------- */

struct lz4_fhdr {
	uint8_t flg, bd;
	uint32_t bmax; /* maximum block size */
	uint64_t csize; /* content size, if FLG has C.Size */
	size_t hlen;	/* header bytes, magic included */
};

enum { LZ4_H_OK = 1, LZ4_H_SHORT = 2 };

/* The maximum block size BD gives, or 0 if it gives none. */
static uint32_t lz4_bd_max(uint8_t bd)
{
	unsigned id = (bd >> 4) & 7;

	return id >= 4 ? 1u << (2 * id + 8) : 0;
}

/* Checks FLG and BD (after the header checksum matched).  0, or -ENOTSUP with why set. */
static int lz4_fhdr_check(uint8_t flg, uint8_t bd, const char **why)
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
static int lz4_parse_fhdr(const uint8_t *p, size_t n, struct lz4_fhdr *h, const char **why)
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

/* A valid lz4 frame header, or the legacy magic and a legacy block size, starts at p: data
 * after the last frame is damage, not garbage. */
static bool lz4_frame_starts(const uint8_t *p, size_t n)
{
	struct lz4_fhdr h;
	const char *why;
	uint32_t v;

	if (n < 8)
		return false;
	if (le32(p) == LZ4_LEGACY_MAGIC)
		return (v = le32(p + 4)) != 0 && v <= LZ4_LEGACY_BOUND;
	return le32(p) == LZ4_FRAME_MAGIC && lz4_parse_fhdr(p, n, &h, &why) == LZ4_H_OK;
}

struct lz4_blk {
	uint32_t size;	/* bytes of data */
	bool stored;	/* not compressed */
	bool end;	/* the EndMark */
	uint64_t total; /* header + data + checksum */
};

/* Parses the 4-byte block size v of a frame with header h.  0, or -EIO with why set. */
static int lz4_parse_blk(uint32_t v, const struct lz4_fhdr *h, struct lz4_blk *b, const char **why)
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
static ssize_t lz4_decode_blk(const struct lz4_blk *b, const uint8_t *p, uint8_t flg, uint8_t *out,
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
static void lz4_hist_add(uint8_t *hist, size_t *hlen, const uint8_t *p, size_t n)
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
static int lz4_read32(struct src *in, uint64_t off, uint32_t *v, size_t *n)
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

/* ---- Walking the headers --------------------------------------------------------------------- */

/* One job of the scan: a group of independent blocks, a linked frame, or a legacy block. */
struct lz4_job {
	int kind;
	struct lz4_fhdr fh;	 /* the frame's (not for legacy) */
	uint64_t coff, clen;	 /* the checkpoint's */
	uint64_t blocks_at;	 /* the first block header */
	uint64_t first_block;	 /* 1-based, in the whole file */
	uint32_t nblocks;
	uint64_t frame_no;	 /* 1-based, lz4 frames counted */
	uint64_t frame_coff;	 /* the frame's magic */
	bool frame_first;	 /* the job starts its frame */
	bool frame_last;	 /* ... ends it (its EndMark and content checksum were read) */
	uint32_t content_sum;	 /* stored, if frame_last and C.Checksum */
};

enum { LZ4_W_BETWEEN, LZ4_W_FRAME, LZ4_W_LEGACY };

/* The header hopper of the scan's dispatch turn. */
struct lz4_walk {
	struct src *in;
	uint64_t size;	  /* src_size() */
	uint64_t pos;	  /* the next magic, block header or EndMark */
	int state;	  /* LZ4_W_* */
	bool started;	  /* something was recognised */
	struct lz4_fhdr fh; /* the current frame's */
	uint64_t frame_no, frame_coff;
	bool frame_begun; /* a job of the current frame was made */
	uint64_t blockno; /* blocks walked */
	bool done;	  /* no more jobs: end_err is 0 at the end of the data, or -errno */
	int end_err;
	struct lzout_msg msg; /* what ended the walk (an error, or a notice of garbage) */
};

/* Ends the walk with err (0: the end of the data); a job already begun is returned first. */
static int lz4_walk_stop(struct lz4_walk *w, const struct lz4_job *j, int err)
{
	w->done = true;
	w->end_err = err;
	return j->nblocks ? 1 : err;
}

static int lz4_walk_read_error(struct lz4_walk *w, const struct lz4_job *j, int err, uint64_t at)
{
	return lz4_walk_stop(w, j,
			     lzout_fail(&w->msg, err,
					"lz4: read error at compressed offset %" PRIu64 ": %s", at,
					strerror(-err)));
}

/* After the last frame, at w->pos: zero padding (silent), garbage (a notice), or an lz4 frame
 * after something that is not one (damage).  Ends the walk. */
static int lz4_walk_trailing(struct lz4_walk *w)
{
	struct trailing t;
	int err = trailing_scan(w->in, w->pos, lz4_frame_starts, LZ4_HDR_MAX, &t);

	w->done = true;
	if (err)
		return w->end_err =
			   lzout_fail(&w->msg, err,
				      "lz4: read error after compressed offset %" PRIu64, w->pos);
	if (t.data_at != TRAILING_NONE)
		return w->end_err = lzout_fail(&w->msg, -EIO,
					       "lz4: unexpected data at compressed offset %" PRIu64
					       ", before more lz4 data at offset %" PRIu64
					       " (damaged); the rest of the file is not read",
					       w->pos, t.data_at);
	if (t.first_nonzero == TRAILING_NONE) {
		TFS_DEBUG("lz4: zero padding after the last frame at offset %" PRIu64, w->pos);
		return w->end_err = 0;
	}
	trailing_note(w->msg.text, sizeof(w->msg.text), "lz4", w->in, w->pos);
	w->msg.level = TFS_LOG_NOTICE;
	return w->end_err = 0;
}

/* The EndMark of the current frame at w->pos: reads the content checksum, checks an empty
 * frame (no job) in full.  0 with the walk after the frame, or -errno (w->msg set). */
static int lz4_walk_endmark(struct lz4_walk *w, struct lz4_job *j)
{
	uint64_t at = w->pos + 4;
	uint32_t sum = 0;
	size_t n;
	int r;

	if (w->fh.flg & LZ4_F_CSUM) {
		r = lz4_read32(w->in, at, &sum, &n);
		if (r < 0)
			return lzout_fail(&w->msg, r,
					  "lz4: read error at compressed offset %" PRIu64, at);
		if (r == 0)
			return lzout_fail(&w->msg, -EIO,
					  "lz4: the file ends inside the content checksum of frame "
					  "%" PRIu64 " at compressed offset %" PRIu64
					  " (truncated)",
					  w->frame_no, w->frame_coff);
		at += 4;
	}
	w->pos = at;
	w->state = LZ4_W_BETWEEN;
	if (!w->frame_begun) { /* no block at all: the frame is checked here */
		static const uint8_t none[1];

		if ((w->fh.flg & LZ4_F_CSIZE) && w->fh.csize != 0)
			return lzout_fail(&w->msg, -EIO,
					  "lz4: frame %" PRIu64 " at compressed offset %" PRIu64
					  " has no block but declares %" PRIu64 " bytes of content",
					  w->frame_no, w->frame_coff, w->fh.csize);
		if ((w->fh.flg & LZ4_F_CSUM) && sum != XXH32(none, 0, 0))
			return lzout_fail(&w->msg, -EIO,
					  "lz4: frame %" PRIu64 " at compressed offset %" PRIu64
					  ": content checksum mismatch (an empty frame)",
					  w->frame_no, w->frame_coff);
		return 0;
	}
	j->frame_last = true;
	j->content_sum = sum;
	return 0;
}

/* lz4_walk_next's steps return this to go on walking. */
#define LZ4_WALK_ON 2

/* Between frames at w->pos: enters an lz4 frame or a legacy stream, skips a skippable frame,
 * or ends the walk (the end of the data, trailing data, damage). */
static int lz4_walk_between(struct lz4_walk *w, struct lz4_job *j)
{
	uint8_t hb[LZ4_HDR_MAX];
	const char *why = "";
	uint32_t v = 0;
	size_t n = 0;
	ssize_t got;
	int r;

	got = src_pread(w->in, hb, sizeof(hb), w->pos);
	if (got < 0)
		return lz4_walk_read_error(w, j, (int)got, w->pos);
	n = (size_t)got;
	if (!w->started && n == 0)
		return lz4_walk_stop(w, j, lzout_fail(&w->msg, -EIO, "lz4: the file is empty"));
	if (n == 0)
		return lz4_walk_stop(w, j, 0);
	if (n >= 4)
		v = le32(hb);
	if (n >= 4 && v == LZ4_FRAME_MAGIC) {
		r = lz4_parse_fhdr(hb, n, &w->fh, &why);
		if (r == LZ4_H_SHORT)
			why = "the file ends inside it (truncated)";
		if (r != LZ4_H_OK)
			return lz4_walk_stop(
			    w, j,
			    lzout_fail(&w->msg, r < 0 ? r : -EIO,
				       "lz4: the frame header at compressed offset "
				       "%" PRIu64 ": %s",
				       w->pos, why));
		w->started = true;
		w->frame_no++;
		w->frame_coff = w->pos;
		w->frame_begun = false;
		w->pos += w->fh.hlen;
		w->state = LZ4_W_FRAME;
		return LZ4_WALK_ON;
	}
	if (n >= 4 && (v & LZ4_SKIP_MASK) == LZ4_SKIP_MAGIC) {
		uint64_t at = w->pos, end;
		uint8_t last;

		if (n < 8)
			return lz4_walk_stop(
			    w, j,
			    lzout_fail(&w->msg, -EIO,
				       "lz4: the file ends inside the skippable frame "
				       "at compressed offset %" PRIu64 " (truncated)",
				       at));
		end = at + 8 + le32(hb + 4);
		if (end > at + 8) { /* its last byte must be there */
			got = src_pread(w->in, &last, 1, end - 1);
			if (got < 0)
				return lz4_walk_read_error(w, j, (int)got, end - 1);
			if (got == 0)
				return lz4_walk_stop(
				    w, j,
				    lzout_fail(&w->msg, -EIO,
					       "lz4: the file ends inside the "
					       "skippable frame at compressed offset "
					       "%" PRIu64 " (truncated)",
					       at));
		}
		w->started = true;
		w->pos = end;
		return LZ4_WALK_ON;
	}
	if (n >= 4 && v == LZ4_LEGACY_MAGIC) {
		w->started = true;
		w->pos += 4;
		w->state = LZ4_W_LEGACY;
		return LZ4_WALK_ON;
	}
	if (!w->started)
		return lz4_walk_stop(
		    w, j,
		    lzout_fail(&w->msg, -EIO, "lz4: not an lz4 file (no lz4 magic at offset 0)"));
	return lz4_walk_stop(w, j, lz4_walk_trailing(w));
}

/* In a legacy stream at w->pos: its next block is a job, or the stream ends. */
static int lz4_walk_legacy(struct lz4_walk *w, struct lz4_job *j)
{
	uint32_t v = 0;
	size_t n = 0;
	int r;

	if (j->nblocks)
		return 1;
	r = lz4_read32(w->in, w->pos, &v, &n);
	if (r < 0)
		return lz4_walk_read_error(w, j, r, w->pos);
	if (r == 0 && n == 0)
		return lz4_walk_stop(w, j, 0);
	if (r == 0 || v == 0 || v > LZ4_LEGACY_BOUND) {
		/* not a block: the legacy stream ends here */
		w->state = LZ4_W_BETWEEN;
		return LZ4_WALK_ON;
	}
	if (w->size != SRC_SIZE_UNKNOWN && (w->size < w->pos || w->size - w->pos < 4 + (uint64_t)v))
		return lz4_walk_stop(w, j,
				     lzout_fail(&w->msg, -EIO,
						"lz4: the file ends inside legacy block "
						"%" PRIu64 " at compressed offset %" PRIu64
						" (truncated)",
						w->blockno + 1, w->pos));
	j->kind = LZ4_K_LEGACY;
	j->coff = j->blocks_at = w->pos;
	j->clen = 4 + (uint64_t)v;
	j->first_block = ++w->blockno;
	j->nblocks = 1;
	w->pos += 4 + (uint64_t)v;
	return 1;
}

/* In an lz4 frame at w->pos: the next block joins the job (or starts the next one), or the
 * EndMark ends the frame. */
static int lz4_walk_block(struct lz4_walk *w, struct lz4_job *j)
{
	const char *why = "";
	struct lz4_blk b;
	uint32_t v = 0;
	size_t n = 0;
	int r;

	r = lz4_read32(w->in, w->pos, &v, &n);
	if (r < 0)
		return lz4_walk_read_error(w, j, r, w->pos);
	if (r == 0)
		return lz4_walk_stop(w, j,
				     lzout_fail(&w->msg, -EIO,
						"lz4: the file ends at compressed offset %" PRIu64
						", inside frame %" PRIu64 " at %" PRIu64
						", before its EndMark (truncated)",
						w->pos, w->frame_no, w->frame_coff));
	r = lz4_parse_blk(v, &w->fh, &b, &why);
	if (r < 0)
		return lz4_walk_stop(w, j,
				     lzout_fail(&w->msg, r,
						"lz4: block %" PRIu64
						" at compressed offset %" PRIu64 ": %s",
						w->blockno + 1, w->pos, why));
	if (b.end) {
		r = lz4_walk_endmark(w, j);
		if (r < 0)
			return lz4_walk_stop(w, j, r);
		if (j->nblocks)
			return 1;
		return LZ4_WALK_ON;
	}
	bool indep = w->fh.flg & LZ4_F_INDEP;
	uint32_t group = indep && w->fh.bmax < LZ4_GROUP ? LZ4_GROUP / w->fh.bmax : 1;

	if (indep && j->nblocks >= group)
		return 1;
	if (!indep && j->nblocks == UINT32_MAX)
		return lz4_walk_stop(w, j,
				     lzout_fail(&w->msg, -ENOTSUP,
						"lz4: frame %" PRIu64
						" at compressed offset %" PRIu64
						" has more than 2^32 linked blocks; not supported",
						w->frame_no, w->frame_coff));
	if (w->size != SRC_SIZE_UNKNOWN && (w->size < w->pos || w->size - w->pos < b.total))
		return lz4_walk_stop(w, j,
				     lzout_fail(&w->msg, -EIO,
						"lz4: the file ends inside block %" PRIu64
						" at compressed offset %" PRIu64 " (truncated)",
						w->blockno + 1, w->pos));
	if (!j->nblocks) {
		j->kind = indep ? LZ4_K_INDEP : LZ4_K_LINKED;
		j->fh = w->fh;
		j->blocks_at = w->pos;
		j->coff = indep ? w->pos : w->frame_coff;
		j->first_block = w->blockno + 1;
		j->frame_no = w->frame_no;
		j->frame_coff = w->frame_coff;
		j->frame_first = !w->frame_begun;
		w->frame_begun = true;
	}
	j->nblocks++;
	w->blockno++;
	w->pos += b.total;
	j->clen = w->pos - j->coff;
	return LZ4_WALK_ON;
}

/* The next job: 1 with *j set, 0 at the end of the data, or -errno (w->msg says why).  What
 * ends the walk after a job is returned by the next call. */
static int lz4_walk_next(struct lz4_walk *w, struct lz4_job *j)
{
	int r;

	memset(j, 0, sizeof(*j));
	if (w->done)
		return w->end_err;
	do {
		switch (w->state) {
		case LZ4_W_BETWEEN:
			r = lz4_walk_between(w, j);
			break;
		case LZ4_W_LEGACY:
			r = lz4_walk_legacy(w, j);
			break;
		default: /* LZ4_W_FRAME */
			r = lz4_walk_block(w, j);
			break;
		}
	} while (r == LZ4_WALK_ON);
	return r;
}

static void lz4_job_ckpt(const struct lz4_job *j, struct codec_ckpt *ck)
{
	memset(ck, 0, sizeof(*ck));
	ck->coff = j->coff;
	ck->clen = j->clen;
	ck->extra = j->first_block;
	ck->bits = j->nblocks;
	ck->flags = (uint32_t)j->kind << 16 | (uint32_t)j->fh.bd << 8 | j->fh.flg;
}

/* ---- The scan ------------------------------------------------------------------------------ */

/* A worker's buffers. */
struct lz4_worker {
	struct inwin win;
	uint8_t *hist; /* LZ4_HIST bytes, for linked frames */
};

/* The caller's thread checks each frame's content size and checksum on the bytes scan_read
 * returns: begin() is told where each job starts, while the bytes before it are already in
 * the caller's buffer (call_buf). */
struct lz4_check {
	bool open;	   /* a frame's bytes are being counted */
	bool hashing;	   /* ... and hashed */
	bool ends;	   /* the job being read ends its frame */
	struct lz4_job job; /* the frame's last job seen (expected values) */
	uint64_t start;	   /* the frame's decompressed offset */
	uint64_t count;	   /* its bytes so far */
	XXH32_state_t xxh;
};

struct codec_scan {
	struct src *in;
	struct codec_sink sink;
	struct lz4_walk walk; /* the dispatch turn's */
	struct lz4_worker *wk;
	unsigned nworkers;
	struct pipeline *pl;

	/* the caller's thread: */
	struct lz4_check chk;
	const uint8_t *call_buf; /* scan_read's buffer during pl_read; its bytes start at pos */
	uint64_t pos;		 /* bytes returned */
	uint64_t upto;		 /* bytes counted into chk */
	uint64_t fail_at;	 /* a frame check failed: its end (UINT64_MAX: none) */
	uint64_t bad_start;	 /* ... and its start */
	int err;
};

/* Counts (and hashes) the returned bytes up to decompressed offset to. */
static void lz4_chk_upto(struct codec_scan *s, uint64_t to)
{
	if (to <= s->upto)
		return;
	if (s->chk.open) {
		size_t n = (size_t)(to - s->upto);

		if (s->chk.hashing)
			XXH32_update(&s->chk.xxh, s->call_buf + (s->upto - s->pos), n);
		s->chk.count += n;
	}
	s->upto = to;
}

/* The frame being counted ends at s->upto: its size and checksum. */
static void lz4_chk_end(struct codec_scan *s)
{
	const struct lz4_job *j = &s->chk.job;
	struct lzout_msg m = {0};

	if (!s->chk.open || !s->chk.ends)
		return;
	s->chk.open = false;
	if ((j->fh.flg & LZ4_F_CSIZE) && s->chk.count != j->fh.csize)
		lzout_fail(&m, -EIO,
			   "lz4: frame %" PRIu64 " at compressed offset %" PRIu64
			   " decodes to %" PRIu64 " bytes, its header says %" PRIu64,
			   j->frame_no, j->frame_coff, s->chk.count, j->fh.csize);
	else if (s->chk.hashing && XXH32_digest(&s->chk.xxh) != j->content_sum)
		lzout_fail(&m, -EIO,
			   "lz4: frame %" PRIu64 " at compressed offset %" PRIu64
			   ": content checksum mismatch (stored %08" PRIx32 ", computed %08" PRIx32
			   ")",
			   j->frame_no, j->frame_coff, j->content_sum,
			   (uint32_t)XXH32_digest(&s->chk.xxh));
	if (m.text[0] && s->fail_at == UINT64_MAX) {
		lzout_log(&m);
		s->fail_at = s->upto;
		s->bad_start = s->chk.start;
	}
}

static void lz4_pl_begin(void *ctx, const struct pl_job *job, uint64_t uoff)
{
	struct codec_scan *s = ctx;
	const struct lz4_job *j = job->own;

	lz4_chk_upto(s, uoff);
	lz4_chk_end(s);
	if (j->kind == LZ4_K_LEGACY) {
		s->chk.open = false;
		return;
	}
	if (j->frame_first) {
		s->chk.open = true;
		s->chk.hashing = j->fh.flg & LZ4_F_CSUM;
		s->chk.start = uoff;
		s->chk.count = 0;
		if (s->chk.hashing)
			XXH32_reset(&s->chk.xxh, 0);
	}
	s->chk.job = *j;
	s->chk.ends = j->frame_last;
}

static int lz4_pl_first(void *ctx, const struct pl_job *job, uint64_t uoff)
{
	struct codec_scan *s = ctx;
	struct codec_ckpt ck = job->ck;

	if (s->fail_at != UINT64_MAX)
		return -EIO; /* a frame before failed its checks: no byte of this job goes out */
	ck.uoff = uoff;
	return s->sink.checkpoint(s->sink.opaque, &ck, NULL, 0);
}

static int lz4_pl_next(void *ctx, unsigned worker, struct pl_job *job, struct pl_note *end)
{
	struct codec_scan *s = ctx;
	struct lz4_job *j = job->own;
	int r = lz4_walk_next(&s->walk, j);

	(void)worker;
	if (r > 0)
		lz4_job_ckpt(j, &job->ck);
	else
		lzout_end_note(&s->walk.msg, end);
	return r;
}

/* A group of independent blocks, or a legacy block: all of it into one buffer.  What the
 * blocks that passed their checks decoded is handed over, and the checkpoint covers only
 * them. */
static int lz4_run_group(struct codec_scan *s, struct lz4_worker *wk, struct pl_job *job,
			 struct pl_note *fail)
{
	const struct lz4_job *j = job->own;
	bool legacy = j->kind == LZ4_K_LEGACY;
	size_t bmax = legacy ? LZ4_LEGACY_BLOCK : j->fh.bmax;
	struct lzout_msg msg = {0};
	const uint8_t *p;
	uint8_t *out;
	uint64_t at = j->coff;
	size_t off = 0, len = 0, cap;
	uint32_t good = 0;
	ssize_t n;
	int err = pl_buf(job, bmax * j->nblocks, &out, &cap);

	(void)s;
	if (err)
		return err;
	n = inwin_get(&wk->win, j->coff, (size_t)j->clen, 0, &p);
	if (n < 0) {
		err =
		    lzout_fail(&msg, (int)n, "lz4: read error at compressed offset %" PRIu64 ": %s",
			       j->coff, strerror((int)-n));
		goto out;
	}
	for (uint32_t i = 0; i < j->nblocks; i++) {
		uint64_t blockno = j->first_block + i;
		const char *why = "";
		struct lz4_blk b;
		ssize_t r;

		if ((size_t)n - off < 4) {
			err = -EIO;
		} else if (legacy) {
			memset(&b, 0, sizeof(b));
			b.size = le32(p + off);
			b.total = 4 + (uint64_t)b.size;
			err = b.size == 0 || b.size > LZ4_LEGACY_BOUND ? -EINVAL : 0;
		} else {
			err = lz4_parse_blk(le32(p + off), &j->fh, &b, &why) || b.end ? -EINVAL : 0;
		}
		if (!err && (size_t)n - off < b.total)
			err = -EIO;
		if (err == -EIO) {
			err = lzout_fail(&msg, -EIO,
					 "lz4: the file ends inside %sblock %" PRIu64
					 " at compressed offset %" PRIu64 " (truncated)",
					 legacy ? "legacy " : "", blockno, at);
			goto out;
		}
		if (err) {
			/* the walk saw these very bytes a moment ago: the file changed */
			err = lzout_fail(&msg, -EIO,
					 "lz4: block %" PRIu64 " at compressed offset %" PRIu64
					 ": the block header changed while the file was read",
					 blockno, at);
			goto out;
		}
		r = lz4_decode_blk(&b, p + off, legacy ? 0 : j->fh.flg, out + len, bmax, NULL, 0,
				   blockno, at, "", &msg);
		if (r < 0) {
			err = (int)r;
			goto out;
		}
		off += b.total;
		at += b.total;
		len += (size_t)r;
		good++;
	}
out:
	return lzout_group_done(job, len, off, good, err, &msg, fail);
}

/* A linked frame: its blocks in turn, each with the 64 KiB decoded before it. */
static int lz4_run_linked(struct lz4_worker *wk, struct pl_job *job, struct pl_note *fail)
{
	const struct lz4_job *j = job->own;
	size_t bmax = j->fh.bmax, hlen = 0, len = 0, cap = 0;
	uint64_t at = j->blocks_at, end = j->coff + j->clen;
	struct lzout_msg msg = {0};
	uint8_t *out = NULL;
	int err = 0;

	if (!wk->hist && !(wk->hist = malloc(LZ4_HIST)))
		return -ENOMEM;
	for (uint32_t i = 0; i < j->nblocks; i++) {
		uint64_t blockno = j->first_block + i;
		const uint8_t *p;
		const char *why = "";
		struct lz4_blk b;
		ssize_t n, r;
		size_t ahead = end - at < ((size_t)4 << 20) ? (size_t)(end - at) : (size_t)4 << 20;

		if (!out || cap - len < bmax) {
			pl_commit(job, len);
			len = 0;
			err = pl_buf(job, bmax, &out, &cap);
			if (err)
				return err;
		}
		n = inwin_get(&wk->win, at, 4, ahead, &p);
		if (n >= 4) {
			err = lz4_parse_blk(le32(p), &j->fh, &b, &why) || b.end ? -EINVAL : 0;
			if (!err)
				n = inwin_get(&wk->win, at, (size_t)b.total, ahead, &p);
		}
		if (n < 0) {
			err = lzout_fail(&msg, (int)n,
					 "lz4: read error at compressed offset %" PRIu64 ": %s", at,
					 strerror((int)-n));
			break;
		}
		if (err) {
			err = lzout_fail(&msg, -EIO,
					 "lz4: block %" PRIu64 " at compressed offset %" PRIu64
					 ": the block header changed while the file was read",
					 blockno, at);
			break;
		}
		if ((size_t)n < 4 || (size_t)n < b.total) {
			err = lzout_fail(&msg, -EIO,
					 "lz4: the file ends inside block %" PRIu64
					 " at compressed offset %" PRIu64 " (truncated)",
					 blockno, at);
			break;
		}
		r = lz4_decode_blk(&b, p, j->fh.flg, out + len, bmax, wk->hist, hlen, blockno, at,
				   "", &msg);
		if (r < 0) {
			err = (int)r;
			break;
		}
		lz4_hist_add(wk->hist, &hlen, out + len, (size_t)r);
		len += (size_t)r;
		at += b.total;
		if (pl_stopping(job)) {
			err = -ECANCELED;
			break;
		}
	}
	pl_commit(job, len);
	if (err == -ECANCELED || err == -ENOMEM)
		return err;
	return err ? pl_fail(fail, err, true, "%s", msg.text) : 0;
}

static int lz4_pl_run(void *ctx, unsigned worker, struct pl_job *job, struct pl_note *fail)
{
	struct codec_scan *s = ctx;
	const struct lz4_job *j = job->own;

	if (j->kind == LZ4_K_LINKED)
		return lz4_run_linked(&s->wk[worker], job, fail);
	return lz4_run_group(s, &s->wk[worker], job, fail);
}

static const struct pl_ops lz4_pl_ops = {
	.job_size = sizeof(struct lz4_job),
	.next = lz4_pl_next,
	.run = lz4_pl_run,
	.begin = lz4_pl_begin,
	.first = lz4_pl_first,
};

static void lz4_scan_free(struct codec_scan *s)
{
	if (!s)
		return;
	pl_free(s->pl);
	for (unsigned i = 0; s->wk && i < s->nworkers; i++) {
		free(s->wk[i].win.buf);
		free(s->wk[i].hist);
	}
	free(s->wk);
	free(s);
}

static int lz4_scan_new(struct src *in, const struct codec_opts *opts, const struct codec_sink *sink,
			struct codec_scan **out)
{
	struct codec_scan *s;
	int err;

	*out = NULL;
	if (!in || !sink || !sink->checkpoint)
		return -EINVAL;
	s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	s->in = in;
	s->sink = *sink;
	s->fail_at = UINT64_MAX;
	s->nworkers = pl_threads(opts, LZ4_MAX_THREADS);
	s->walk.in = in;
	s->walk.size = src_size(in);
	s->wk = calloc(s->nworkers, sizeof(*s->wk));
	if (!s->wk) {
		err = -ENOMEM;
		goto fail;
	}
	for (unsigned i = 0; i < s->nworkers; i++)
		s->wk[i].win.in = in;
	err = pl_start(&lz4_pl_ops, s, &s->sink, "lz4", s->nworkers, (size_t)s->nworkers + 2,
		       2 * (size_t)LZ4_LEGACY_BLOCK, &s->pl);
	if (err)
		goto fail;
	*out = s;
	return 0;
fail:
	lz4_scan_free(s);
	return err;
}

static ssize_t lz4_scan_read(struct codec_scan *s, void *buf, size_t len)
{
	ssize_t n;

	if (s->err)
		return s->err;
	s->call_buf = buf;
	n = pl_read(s->pl, buf, len);
	if (n > 0)
		lz4_chk_upto(s, s->pos + (uint64_t)n);
	else if (n == 0)
		lz4_chk_end(s);
	s->call_buf = NULL;
	if (s->fail_at != UINT64_MAX) {
		uint64_t keep = s->fail_at > s->pos ? s->fail_at - s->pos : 0;

		s->err = -EIO;
		s->pos += keep;
		return keep ? (ssize_t)keep : s->err;
	}
	if (n > 0)
		s->pos += (uint64_t)n;
	else
		s->err = (int)n; /* 0 at the end stays 0 */
	return n;
}

static uint64_t lz4_scan_verified(struct codec_scan *s)
{
	uint64_t v = pl_verified(s->pl);

	if (s->fail_at != UINT64_MAX && v > s->bad_start)
		v = s->bad_start;
	return v;
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
