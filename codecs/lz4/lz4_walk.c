/* The walk of an lz4 file's headers, from frame to frame and block header to block header,
 * without decoding: it cuts the file into the scan's jobs (groups of independent blocks, linked
 * frames, legacy blocks; lz4.c says why), checks what headers alone can tell (truncation, an
 * empty frame's content, sizes over the frame's maximum) and what follows the last frame.  It
 * runs on the scan's dispatch turn, one call at a time.
 */
#include "codecs/lz4/lz4_int.h"

#include <errno.h>
#include <inttypes.h>
#include <string.h>

#include <xxhash.h>

#include "common/byteio.h"
#include "common/log.h"
#include "codecs/trailing.h"

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
int lz4_walk_next(struct lz4_walk *w, struct lz4_job *j)
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

void lz4_job_ckpt(const struct lz4_job *j, struct codec_ckpt *ck)
{
	memset(ck, 0, sizeof(*ck));
	ck->coff = j->coff;
	ck->clen = j->clen;
	ck->extra = j->first_block;
	ck->bits = j->nblocks;
	ck->flags = (uint32_t)j->kind << 16 | (uint32_t)j->fh.bd << 8 | j->fh.flg;
}
