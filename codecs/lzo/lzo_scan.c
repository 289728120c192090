/* lzop's indexing scan (codec_lzo's scan_*): the walk's groups decoded by the pipeline's
 * workers.  The format and the checkpoints are described in lzo.c.
 *
 * The scan runs opts->threads workers.  A worker takes the next job slot (at most `depth`,
 * 2 x workers + 1, ahead of the slot the caller is reading), walks the block headers of the
 * next group with small preads (under walk_lock, so groups are cut in file order), then outside
 * any lock reads the group's compressed bytes with one pread and decodes its blocks one after
 * the other into the slot's buffer: checksum of the compressed data if present, then
 * lzo1x_decompress_safe (never the unsafe decoder) into exactly the declared size, then the
 * checksum of the decompressed data.  The caller's thread only copies finished groups out and
 * calls the sink, which keeps the sink's rules trivially; a group's checkpoint goes out just
 * before its first byte.  Memory stays near depth x group size plus a group's compressed bytes
 * per worker, ~6 MiB with two workers.  The bytes of a block that fails are never returned (they
 * are known to be wrong): the scan returns every good block before it, then -EIO, logged with the
 * block's number and compressed offset; scan_verified() is the end of the last good block, and a
 * checkpoint emitted for a group cut short by damage covers only its good blocks.  After the
 * last end marker, zeros are ignored silently and anything that does not start with the lzop
 * magic is ignored with a notice; the magic followed by a bad header is damage.
 *
 */
#include "codecs/lzo/lzo_int.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "codecs/inwin.h"
#include "codecs/pipeline.h"

/* The groups are the jobs of a decode pipeline (pipeline.h): the dispatch turn walks the next
 * group's block headers, a worker decodes the group into one buffer. */
struct codec_scan {
	struct src *in;
	struct codec_sink sink;
	struct lzop_walk walk; /* the dispatch turn's (name: read-only after scan_new) */
	struct inwin *win;  /* one per worker */
	unsigned nworkers;
	struct pipeline *pl;
};

static int lzop_pl_next(void *ctx, unsigned worker, struct pl_job *job, struct pl_note *end)
{
	struct codec_scan *s = ctx;
	struct lzop_group *g = job->own;
	int r = lzop_walk_group(&s->walk, g);

	if (r > 0)
		lzop_group_ckpt(g, &job->ck);
	else
		lzout_end_note(&s->walk.msg, end);
	return r;
}

/* Decodes the group's blocks one after the other into one buffer.  What the blocks that
 * passed their checks decoded is handed over, and the checkpoint covers only them: the bytes
 * of a block that fails are never returned (they are known to be wrong). */
static int lzop_pl_run(void *ctx, unsigned worker, struct pl_job *job, struct pl_note *fail)
{
	struct codec_scan *s = ctx;
	const struct lzop_group *g = job->own;
	struct inwin *w = &s->win[worker];
	struct lzout_msg msg = {0};
	const uint8_t *p;
	uint8_t *out;
	uint64_t at = g->coff;
	size_t off = 0, len = 0, cap;
	uint32_t good = 0;
	ssize_t n;
	int err = pl_buf(job, (size_t)g->ulen, &out, &cap);

	if (err)
		return err;
	n = inwin_get(w, g->coff, (size_t)g->clen, 0, &p);
	if (n < 0) {
		err =
		    lzout_fail(&msg, (int)n, "lzo: read error at compressed offset %" PRIu64 ": %s",
			       g->coff, strerror((int)-n));
		goto out;
	}
	for (uint32_t i = 0; i < g->nblocks; i++) {
		uint64_t blockno = g->first_block + i;
		struct lzop_bhdr b;
		const char *why = "";
		int t = lzop_parse_bhdr(p + off, (size_t)n - off, g->flags, &b, &why);

		if (t == LZOP_BH_BLOCK && (size_t)n - off - b.hlen < b.clen)
			t = LZOP_BH_SHORT;
		if (t == LZOP_BH_SHORT) {
			err = lzout_fail(&msg, -EIO,
					 "lzo: the file ends inside block %" PRIu64
					 " at compressed offset %" PRIu64 " (truncated)",
					 blockno, at);
			goto out;
		}
		if (t != LZOP_BH_BLOCK || len + b.ulen > g->ulen) {
			/* The walk saw these very bytes a moment ago: the file changed. */
			err = lzout_fail(&msg, t < 0 ? t : -EIO,
					 "lzo: block %" PRIu64 " at compressed offset %" PRIu64
					 ": the block header changed while the file was read",
					 blockno, at);
			goto out;
		}
		err = lzop_decode(&b, p + off + b.hlen, g->flags, out + len, blockno, at, "", &msg);
		if (err)
			goto out;
		off += b.hlen + b.clen;
		at += b.hlen + b.clen;
		len += b.ulen;
		good++;
	}
	if (len != g->ulen || off != g->clen)
		err = lzout_fail(&msg, -EIO,
				 "lzo: the blocks at compressed offset %" PRIu64
				 " changed while the file was read",
				 g->coff);
out:
	return lzout_group_done(job, len, off, good, err, &msg, fail);
}

static const struct pl_ops lzop_pl_ops = {
	.job_size = sizeof(struct lzop_group),
	.next = lzop_pl_next,
	.run = lzop_pl_run,
};

void lzop_scan_free(struct codec_scan *s)
{
	if (!s)
		return;
	pl_free(s->pl);
	for (unsigned i = 0; s->win && i < s->nworkers; i++)
		free(s->win[i].buf);
	free(s->win);
	free(s);
}

int lzop_scan_new(struct src *in, const struct codec_opts *opts, const struct codec_sink *sink,
		  struct codec_scan **out)
{
	struct codec_scan *s;
	int err;

	*out = NULL;
	if (!in || !sink || !sink->checkpoint)
		return -EINVAL;
	err = lzop_lib_init();
	if (err)
		return err;
	s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	s->in = in;
	s->sink = *sink;
	s->nworkers = pl_threads(opts, LZOP_MAX_THREADS);

	/* The first header is read here, so that scan_name works at once; an error in it is
	 * reported by the first scan_read, like any other. */
	lzop_walk_start(&s->walk, in);

	s->win = calloc(s->nworkers, sizeof(*s->win));
	if (!s->win) {
		err = -ENOMEM;
		goto fail;
	}
	for (unsigned i = 0; i < s->nworkers; i++)
		s->win[i].in = in;
	err = pl_start(&lzop_pl_ops, s, &s->sink, "lzo", s->nworkers, 2 * (size_t)s->nworkers + 1,
		       PL_CHUNK, &s->pl);
	if (err)
		goto fail;
	*out = s;
	return 0;
fail:
	lzop_scan_free(s);
	return err;
}

ssize_t lzop_scan_read(struct codec_scan *s, void *buf, size_t len)
{
	return pl_read(s->pl, buf, len);
}

uint64_t lzop_scan_verified(struct codec_scan *s)
{
	return pl_verified(s->pl);
}

const char *lzop_scan_name(struct codec_scan *s)
{
	return s->walk.name[0] ? s->walk.name : NULL;
}
