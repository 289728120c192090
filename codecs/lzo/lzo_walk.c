/* The walk of an lzop file's block headers, part after part, without decoding: it cuts the
 * blocks into groups (one checkpoint each; lzo.c says how) for the scan's dispatch turn, one
 * call at a time, and for index_blocks, which emits their checkpoints from the headers alone.
 */
#include "codecs/lzo/lzo_int.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "common/log.h"

/* Reads the first file header.  An error is kept for the first lzop_walk_group(). */
void lzop_walk_start(struct lzop_walk *w, struct src *in)
{
	struct lzop_hdr h;
	int r;

	memset(w, 0, sizeof(*w));
	w->in = in;
	w->size = src_size(in);
	r = lzop_read_header(in, 0, true, false, &h, &w->msg);
	if (r < 0) {
		w->done = true;
		w->end_err = r;
		return;
	}
	snprintf(w->name, sizeof(w->name), "%s", h.name);
	w->in_part = true;
	w->flags = h.flags;
	w->parts = 1;
	w->pos = h.end;
}

/* Ends the walk with err (0: the end of the data); a group already begun is returned first. */
static int lzop_walk_stop(struct lzop_walk *w, const struct lzop_group *g, int err)
{
	w->done = true;
	w->end_err = err;
	return g->nblocks ? 1 : err;
}

/* The next group: 1 with *g set, 0 at the end of the data, or -errno (w->msg says why).  What
 * ends the walk after a group is returned by the next call. */
int lzop_walk_group(struct lzop_walk *w, struct lzop_group *g)
{
	memset(g, 0, sizeof(*g));
	if (w->done)
		return w->end_err;
	for (;;) {
		uint8_t hb[LZOP_BHDR_MAX];
		struct lzop_bhdr b;
		const char *why = "";
		ssize_t n;
		int t;

		if (!w->in_part) {
			struct lzop_hdr h;
			int r = lzop_read_header(w->in, w->pos, false, false, &h, &w->msg);

			if (r <= 0)
				return lzop_walk_stop(w, g, r);
			w->in_part = true;
			w->flags = h.flags;
			w->parts++;
			w->pos = h.end;
		}
		n = src_pread(w->in, hb, sizeof(hb), w->pos);
		if (n < 0)
			return lzop_walk_stop(
			    w, g,
			    lzout_fail(&w->msg, (int)n,
				       "lzo: read error at compressed offset %" PRIu64 ": %s",
				       w->pos, strerror((int)-n)));
		t = lzop_parse_bhdr(hb, (size_t)n, w->flags, &b, &why);
		if (t == LZOP_BH_SHORT)
			return lzop_walk_stop(
			    w, g,
			    lzout_fail(
				&w->msg, -EIO,
				n == 0 ? "lzo: the file ends at compressed offset %" PRIu64
					 ", after block %" PRIu64
					 ", without an end-of-data marker (truncated)"
				       : "lzo: the file ends inside the header of block %" PRIu64
					 " at compressed offset %" PRIu64 " (truncated)",
				n == 0 ? w->pos : w->blockno + 1, n == 0 ? w->blockno : w->pos));
		if (t < 0)
			return lzop_walk_stop(w, g,
					      lzout_fail(&w->msg, t,
							 "lzo: block %" PRIu64
							 " at compressed offset %" PRIu64 ": %s",
							 w->blockno + 1, w->pos, why));
		if (t == LZOP_BH_END) {
			w->pos += 4;
			w->in_part = false;
			if (g->nblocks)
				return 1;
			continue;
		}
		if (w->size != SRC_SIZE_UNKNOWN &&
		    (w->size < w->pos || w->size - w->pos < b.hlen + (uint64_t)b.clen))
			return lzop_walk_stop(w, g,
					      lzout_fail(&w->msg, -EIO,
							 "lzo: the file ends inside block %" PRIu64
							 " at compressed offset %" PRIu64
							 " (truncated)",
							 w->blockno + 1, w->pos));
		if (!g->nblocks) {
			g->uoff = w->uoff;
			g->coff = w->pos;
			g->first_block = w->blockno + 1;
			g->flags = w->flags;
		}
		g->nblocks++;
		g->ulen += b.ulen;
		w->pos += b.hlen + b.clen;
		g->clen = w->pos - g->coff;
		w->uoff += b.ulen;
		w->blockno++;
		if (g->ulen >= LZOP_GROUP || g->nblocks >= LZOP_GROUP_BLOCKS)
			return 1;
	}
}

void lzop_group_ckpt(const struct lzop_group *g, struct codec_ckpt *ck)
{
	ck->uoff = g->uoff;
	ck->ulen = g->ulen;
	ck->coff = g->coff;
	ck->clen = g->clen;
	ck->extra = g->first_block;
	ck->bits = g->nblocks;
	ck->flags = g->flags;
}

int lzop_index_blocks(struct src *in, const struct codec_opts *opts, const struct codec_sink *sink,
		      uint64_t *usize)
{
	struct lzop_walk w;
	struct lzop_group g;
	int err, r;

	(void)opts;
	*usize = 0;
	if (!in || !sink || !sink->checkpoint)
		return -EINVAL;
	err = lzop_lib_init();
	if (err)
		return err;
	lzop_walk_start(&w, in);
	if (!w.done && !(w.flags & LZOP_F_D)) {
		TFS_DEBUG("lzo: no checksums of decompressed data: the blocks must be scanned");
		return -ENOTSUP;
	}
	while ((r = lzop_walk_group(&w, &g)) > 0) {
		struct codec_ckpt ck;

		if (!(g.flags & LZOP_F_D)) {
			TFS_DEBUG("lzo: part %" PRIu64 " has no checksums of decompressed data",
				  w.parts);
			return -ENOTSUP;
		}
		lzop_group_ckpt(&g, &ck);
		err = sink->checkpoint(sink->opaque, &ck, NULL, 0);
		if (err < 0)
			return err;
	}
	/* Refused features are for the scan to explain; damage is logged here. */
	if (r != -ENOTSUP)
		lzout_log(&w.msg);
	if (r < 0)
		return r;
	*usize = w.uoff;
	return 0;
}
