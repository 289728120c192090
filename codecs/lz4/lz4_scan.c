/* lz4's indexing scan (codec_lz4's scan_*): the walk's jobs decoded by the pipeline's workers,
 * each frame's content size and checksum checked on the caller's thread.  The format and the
 * checkpoints are described in lz4.c.
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
 */
#include "codecs/lz4/lz4_int.h"

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
#include "codecs/pipeline.h"

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

void lz4_scan_free(struct codec_scan *s)
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

int lz4_scan_new(struct src *in, const struct codec_opts *opts, const struct codec_sink *sink,
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

ssize_t lz4_scan_read(struct codec_scan *s, void *buf, size_t len)
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

uint64_t lz4_scan_verified(struct codec_scan *s)
{
	uint64_t v = pl_verified(s->pl);

	if (s->fail_at != UINT64_MAX && v > s->bad_start)
		v = s->bad_start;
	return v;
}
