/* zstd codec (libzstd): checkpoints are the file's own frames.
 *
 * A .zst file is a sequence of frames, each independent of the others: a zstd frame (magic,
 * header, blocks, an optional XXH64 checksum of its content) or a skippable frame (magic
 * 0x184D2A5?, a length, bytes nobody decodes).  A frame start is therefore a perfect
 * checkpoint -- no window to store, nothing from before it needed -- and the only one the
 * format offers: inside a frame, blocks refer back up to a window of up to 2 GiB.  What a file
 * looks like depends on the tool: plain `zstd`, `zstd -T0` and `zstd --rsyncable` write one frame
 * for the whole input, which can only be read sequentially (the reader decodes it once and
 * caches what it passes, as for single-block xz); `cat a.zst b.zst`, pzstd (a skippable frame
 * with the next frame's size before each frame) and the seekable format write many.  The
 * seekable format (zstd's contrib/seekable_format) ends with a skippable frame holding a seek
 * table: per frame its compressed size, decoded size and optionally the low 32 bits of the XXH64
 * of its content, and a footer whose last four bytes are the magic 0x8F92EAB1.
 *
 * Checkpoints.  One per frame would make 10,000 rows for 10,000 tiny frames, so consecutive
 * frames are merged into one chunk until it holds ZS_CHUNK_MIN (64 KiB) of decoded data: a new
 * chunk opens at the first zstd frame that starts at least 64 KiB after the previous checkpoint,
 * and its checkpoint is emitted with its first decoded byte (so empty frames never make an empty
 * chunk, and uoffs strictly increase).  The rule depends on decoded sizes only, so the scan,
 * index_blocks, one thread and many threads all place the same checkpoints.
 *
 * The scan.  With opts->threads >= 2, worker threads decode whole frames in parallel, each job
 * one frame, handed out in order and at most `depth` (workers + 1) ahead of the one the caller
 * reads; each job's bytes queue in 1 MiB chunks, at most job_cap per job, so memory stays bounded
 * whatever the frame sizes.  A worker can take frame k+1 only once frame k's end is known: from
 * the seek table when there is a valid one (read directly, without decoding anything), else by
 * hopping the frame's block headers with pread (each 3-byte header gives the block's compressed
 * size, so finding the end of a 1.9 GB frame costs ~15,000 tiny reads, not a decode).  Whoever
 * takes the next job walks to its end and then decodes it, so a single frame streams through one
 * worker while the caller's thread -- which only copies bytes and calls the sink, as the sink's
 * contract wants -- runs the tar parser: decoding and parsing overlap.  With one thread the
 * caller's thread decodes frame after frame itself, straight into the caller's buffer.
 *
 * Integrity.  libzstd checks each frame's content checksum when there is one and its content
 * size when the header states it.  A seek table's sizes and offsets are checked against the
 * frames, and its checksums are verified (XXH64, libxxhash) for frames that carry none of
 * their own, as a seekable compressor may write them.  A checksum mismatch, corrupt data, a frame
 * that does not match the seek table or a file that ends inside a frame is logged (TFS_LOG_ERR,
 * with the frame's number and compressed offset) and fails the scan with -EIO; the bytes decoded
 * before are still returned (up to the block in hand: ZSTD_decompressStream reports no progress
 * when it fails, so it is asked for 128 KiB per call), and scan_verified() stays at the end of
 * the last frame that passed (for a frame without checksum: the last frame that decoded
 * completely).  After the last frame, zeros are ignored silently and anything else with a notice
 * -- unless it holds what looks like another frame header, or starts with a frame magic number
 * one byte off: that is a damaged frame, not garbage (ignoring it would silently drop that frame
 * and those after it).  A frame whose window exceeds 2 GiB (ZSTD_d_windowLogMax 31, what libzstd
 * allows at most) is refused with a message rather than allocated; one that needs a dictionary
 * is refused too.  Each decoder holds the last byte it decoded until it knows whether the frame
 * ends there, so the call that returns a frame's last byte is the one that verified the frame:
 * that is what index_blocks needs (codec.h).
 *
 * index_blocks: the checkpoints from a seek table, when it has checksums or every frame has its
 * own, else from the frame headers and block walks when every frame states its content size and
 * has a checksum (what `zstd --stream-size` or zstd on a regular file writes; from a pipe the
 * size is unknown); otherwise -ENOTSUP and the caller scans.  452 frames of 4 MiB (1.9 GB): 3 ms
 * from the seek table, 35 ms hopping ~15,000 block headers.
 *
 * Speed and memory (2 cores, 1.9 GB tar in one frame, zstd -dc 1.7-2.2 s): the scan with one
 * thread decodes straight into the caller's buffer and costs no more CPU than zstd -dc; with two,
 * the worker is the bottleneck (libzstd and its copy out of the window) and the caller's
 * CRC-32, copying and tar parsing overlap with it.  A scan queues at most ZS_BUDGET (64 MiB) of
 * decoded data (4-16 MiB per job); each worker holds a DCtx with the frame's window (2 MiB at
 * -3) and a 256 KiB input buffer.  A decoder starts in ~0.02 ms and holds its window plus a
 * 64 KiB input buffer; its first MiB takes ~1 ms.
 *
 * Checkpoint fields for zstd:
 *   uoff   decoded offset of the chunk (all frames before it counted);
 *   coff   compressed offset of the chunk's first zstd frame (its magic number);
 *   clen   0, or the compressed length of the chunk when it is one zstd frame, which the
 *          decoder then reads without looking for its end: a shadow's checkpoints
 *          (shadow/shadow_read.c, from its seek table; never stored in an index), read at
 *          random a frame at a time.  The frame's header and its end are still checked;
 *          not with ZS_CK_TABLE;
 *   extra  0 (unused);
 *   bits   ZS_CK_TABLE (1) if aux holds the chunk's seek table entries, else 0;
 *   flags  the 1-based number of the chunk's first zstd frame in the file (UINT32_MAX if larger;
 *          for messages);
 *   aux    with ZS_CK_TABLE: the seek table entries (12 bytes each, as in the file: compressed
 *          size, decoded size, checksum, little-endian) of the frames from the chunk's first
 *          one to its last one with data, skippable frames included; else none.
 * A decoder starts at coff and decodes frame after frame (skipping skippable frames, checking
 * each frame against its aux entry) until it has returned ulen bytes, then checks that a frame
 * ends there and returns 0: it does not continue into the next chunk.
 *
 * Files: this one is the codec (probe, the scan on the decode pipeline, index_blocks,
 * decoders); zstd_frame.c parses frame headers, finds frames and decodes them; zstd_table.c
 * reads the seek table and decides where checkpoints go; zstd_int.h is what they share.
 */
#include "codecs/zstd/zstd_int.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/byteio.h"
#include "common/log.h"
#include <pthread.h>

static bool zs_probe(const uint8_t *head, size_t len)
{
	uint64_t off = 0;
	bool skipped = false;

	/* Skippable frames may come first (pzstd writes one before each frame); a file that is
	 * only skippable frames is not zstd data.  When the head ends before the next frame can
	 * be seen, a full head (the file goes on) is taken as zstd, a short one (the whole file)
	 * is not. */
	while (off + 4 <= len) {
		uint32_t magic = le32(head + off);

		if (magic == ZS_MAGIC)
			return true;
		if ((magic & ZS_SKIP_MASK) != ZS_SKIP_MAGIC || off + 8 > len)
			return skipped && len >= 512 && (magic & ZS_SKIP_MASK) == ZS_SKIP_MAGIC;
		off += 8 + (uint64_t)le32(head + off + 4);
		skipped = true;
	}
	return skipped && len >= 512;
}

/* ---- The scan ------------------------------------------------------------------------------ */

/* With several threads the frames are the jobs of a decode pipeline (pipeline.h): the dispatch
 * turn walks the next frame's block headers to find its end, a worker decodes it; with one
 * thread the caller's thread decodes frame after frame (zs_inline_read). */
struct codec_scan {
	struct src *in;
	struct codec_sink sink;
	struct zs_table *tab; /* a valid seek table, or NULL */
	struct zs_loc loc;    /* inline: the caller's; threaded: the dispatch turn's */
	struct zs_chunker ch; /* the caller's */

	/* inline (one thread): the caller's thread decodes */
	struct zs_fr seq;
	bool in_frame;	 /* seq is inside a frame */
	bool frame_data; /* ... which has returned bytes */
	uint64_t pos;	 /* bytes returned so far */
	uint64_t verified;
	int err; /* sticky */
	bool eof;

	/* threaded */
	struct pipeline *pl;
	struct zs_fr *fr; /* one per worker */
	unsigned nworkers;
};

/* Calls the sink for a chunk starting at the frame's first byte, at decoded offset uoff. */
static int zs_emit(struct codec_scan *s, uint64_t uoff)
{
	struct codec_ckpt ck;
	const void *aux;
	size_t auxlen;

	if (!zs_chunk_data(&s->ch, s->tab, uoff, &ck, &aux, &auxlen))
		return 0;
	return s->sink.checkpoint(s->sink.opaque, &ck, aux, auxlen);
}

static int zs_pl_next(void *ctx, unsigned worker, struct pl_job *job, struct pl_note *end)
{
	struct codec_scan *s = ctx;
	int r = zs_loc_next(&s->loc, true, job->own);

	if (r <= 0 && s->loc.msg[0])
		pl_end_note(end, s->loc.level, "%s", s->loc.msg);
	return r;
}

static ssize_t zs_fr_pump(void *fr, uint8_t *buf, size_t len)
{
	return zs_fr_read(fr, buf, len);
}

static int zs_pl_run(void *ctx, unsigned worker, struct pl_job *job, struct pl_note *fail)
{
	struct codec_scan *s = ctx;
	struct zs_fr *fr = &s->fr[worker];
	int err;

	if (zs_fr_start(fr, job->own))
		return pl_fail(fail, fr->err, false, "%s", fr->msg);
	err = pl_pump(job, zs_fr_pump, fr);
	if (err && fr->err)
		return pl_fail(fail, err, fr->truncated, "%s", fr->msg);
	return err;
}

static void zs_pl_begin(void *ctx, const struct pl_job *job, uint64_t uoff)
{
	struct codec_scan *s = ctx;

	zs_chunk_frame(&s->ch, job->own, uoff);
}

static int zs_pl_first(void *ctx, const struct pl_job *job, uint64_t uoff)
{
	return zs_emit(ctx, uoff);
}

static const struct pl_ops zs_pl_ops = {
	.job_size = sizeof(struct zs_fdesc),
	.next = zs_pl_next,
	.run = zs_pl_run,
	.begin = zs_pl_begin,
	.first = zs_pl_first,
};

/* One thread: frame after frame, decoded straight into the caller's buffer. */
static ssize_t zs_inline_read(struct codec_scan *s, uint8_t *out, size_t len)
{
	size_t done = 0;

	while (done < len && !s->err && !s->eof) {
		ssize_t n;

		if (!s->in_frame) {
			struct zs_fdesc fd;
			int r = zs_loc_next(&s->loc, false, &fd);

			if (r <= 0) {
				if (s->loc.msg[0])
					tfs_log(s->loc.level, "%s", s->loc.msg);
				if (r < 0)
					s->err = r;
				else
					s->eof = true;
				break;
			}
			zs_chunk_frame(&s->ch, &fd, s->pos + done);
			if (zs_fr_start(&s->seq, &fd)) {
				tfs_log(TFS_LOG_ERR, "%s", s->seq.msg);
				s->err = s->seq.err;
				break;
			}
			s->in_frame = true;
			s->frame_data = false;
		}
		n = zs_fr_read(&s->seq, out + done, len - done);
		if (n > 0) {
			if (!s->frame_data) {
				int err = zs_emit(s, s->pos + done);

				s->frame_data = true;
				if (err) {
					s->err = err;
					break;
				}
			}
			done += (size_t)n;
		} else if (n == 0) {
			s->in_frame = false;
			s->loc.pos = incur_pos(&s->seq.in);
			s->verified = s->pos + done;
		} else {
			tfs_log(TFS_LOG_ERR, "%s", s->seq.msg);
			s->err = (int)n;
			if (s->seq.truncated) /* the file merely ends early: what came is trusted */
				s->verified = s->pos + done;
		}
	}
	s->pos += done;
	if (s->eof)
		s->verified = s->pos;
	return done ? (ssize_t)done : s->err;
}

static ssize_t zs_scan_read(struct codec_scan *s, void *buf, size_t len)
{
	if (s->pl)
		return pl_read(s->pl, buf, len);
	if (s->err)
		return s->err;
	if (s->eof || !len)
		return 0;
	return zs_inline_read(s, buf, len);
}

static uint64_t zs_scan_verified(struct codec_scan *s)
{
	return s->pl ? pl_verified(s->pl) : s->verified;
}

static void zs_scan_free(struct codec_scan *s)
{
	if (!s)
		return;
	pl_free(s->pl);
	for (unsigned i = 0; s->fr && i < s->nworkers; i++)
		zs_fr_fini(&s->fr[i]);
	free(s->fr);
	zs_fr_fini(&s->seq);
	zs_table_free(s->tab);
	free(s);
}

static int zs_scan_new(struct src *in, const struct codec_opts *opts, const struct codec_sink *sink,
		       struct codec_scan **out)
{
	struct codec_scan *s;
	unsigned threads;
	size_t depth, job_cap;
	int err;

	*out = NULL;
	if (!in || !sink || !sink->checkpoint)
		return -EINVAL;
	s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	s->in = in;
	s->sink = *sink;
	threads = pl_threads(opts, ZS_MAX_THREADS);
	err = zs_table_read(in, &s->tab);
	if (err)
		goto fail;
	s->loc.in = in;
	s->loc.tab = s->tab;

	if (threads == 1) {
		err = zs_fr_init(&s->seq, in, ZS_SCAN_INBUF, "");
		if (err)
			goto fail;
		*out = s;
		return 0;
	}

	s->nworkers = threads;
	if (s->tab && s->tab->n < threads)
		s->nworkers = s->tab->n ? (unsigned)s->tab->n : 1;
	s->fr = calloc(s->nworkers, sizeof(*s->fr));
	if (!s->fr) {
		err = -ENOMEM;
		goto fail;
	}
	for (unsigned i = 0; i < s->nworkers; i++) {
		err = zs_fr_init(&s->fr[i], in, ZS_SCAN_INBUF, "");
		if (err)
			goto fail;
	}
	depth = s->nworkers + 1;
	job_cap = pl_job_cap(ZS_BUDGET, depth, ZS_JOB_CAP_MIN, ZS_JOB_CAP_MAX);
	err = pl_start(&zs_pl_ops, s, NULL, "zstd", s->nworkers, depth, job_cap, &s->pl);
	if (err)
		goto fail;
	TFS_DEBUG("zstd: %s, %u workers", s->tab ? "seek table" : "walking frame headers",
		  s->nworkers);
	*out = s;
	return 0;
fail:
	zs_scan_free(s);
	return err;
}

/* ---- index_blocks -------------------------------------------------------------------------- */

/* Checkpoints from the seek table (with checksums), or from frame headers and block walks when
 * every frame states its size and has a checksum.  See codec.h. */
static int zs_index_blocks(struct src *in, const struct codec_opts *opts,
			   const struct codec_sink *sink, uint64_t *usize)
{
	struct zs_loc loc = {.in = in};
	struct zs_chunker ch = {0};
	struct zs_table *tab = NULL;
	struct codec_ckpt prev = {0}, ck;
	const void *prev_aux = NULL, *aux;
	size_t prev_auxlen = 0, auxlen;
	bool have_prev = false;
	uint64_t uoff = 0;
	int err;

	(void)opts;
	*usize = 0;
	if (!in || !sink || !sink->checkpoint)
		return -EINVAL;
	err = zs_table_read(in, &tab);
	if (err)
		return err;
	loc.tab = tab;
	for (;;) {
		uint8_t b[ZS_HDR_MAX];
		struct zs_fdesc fd;
		struct zs_hdr h;
		const char *why = "";
		uint64_t dsize;
		ssize_t n;
		int r = zs_loc_next(&loc, false, &fd);

		if (r < 0) {
			tfs_log(TFS_LOG_ERR, "%s", loc.msg);
			err = r;
			goto out;
		}
		if (r == 0) {
			if (loc.msg[0])
				tfs_log(loc.level, "%s", loc.msg);
			break;
		}
		n = src_pread(in, b, sizeof(b), fd.coff);
		if (n < 0) {
			err = (int)n;
			goto out;
		}
		r = zs_hdr_parse(b, (size_t)n, &h, &why);
		if (r != ZS_HDR_OK || h.window > (uint64_t)1 << ZS_WINDOW_LOG_MAX || h.dict_id) {
			/* the scan's decoders say what exactly; here it is just damage */
			tfs_log(TFS_LOG_ERR,
				"zstd: frame %" PRIu64 " at compressed offset %" PRIu64
				": unusable frame header",
				fd.number, fd.coff);
			err = -EIO;
			goto out;
		}
		if (!h.checksum && !(tab && tab->sums)) {
			TFS_DEBUG("zstd: frame %" PRIu64 " has no checksum: no index from headers",
				  fd.number);
			err = -ENOTSUP;
			goto out;
		}
		dsize = tab ? fd.dsize : h.content;
		if (dsize == ZS_UNKNOWN) {
			TFS_DEBUG("zstd: frame %" PRIu64 " does not state its size: no index from "
				  "headers",
				  fd.number);
			err = -ENOTSUP;
			goto out;
		}
		if (!tab) {
			zs_loc_blocks(&loc, &fd); /* its end: where the next frame starts */
			if (loc.broken) {
				tfs_log(TFS_LOG_ERR, "%s", loc.msg);
				err = loc.broken;
				goto out;
			}
		}
		if (h.content != ZS_UNKNOWN && h.content != dsize) {
			tfs_log(TFS_LOG_ERR,
				"zstd: frame %" PRIu64 " at compressed offset %" PRIu64
				": its header says %" PRIu64
				" decoded bytes, the seek table %" PRIu64,
				fd.number, fd.coff, h.content, dsize);
			err = -EIO;
			goto out;
		}
		zs_chunk_frame(&ch, &fd, uoff);
		if (dsize && zs_chunk_data(&ch, tab, uoff, &ck, &aux, &auxlen)) {
			if (have_prev) {
				prev.ulen = ck.uoff - prev.uoff;
				err = sink->checkpoint(sink->opaque, &prev, prev_aux, prev_auxlen);
				if (err)
					goto out;
			}
			prev = ck;
			prev_aux = aux;
			prev_auxlen = auxlen;
			have_prev = true;
		}
		if (uoff + dsize < uoff) {
			tfs_log(TFS_LOG_ERR, "zstd: decoded size out of range at frame %" PRIu64,
				fd.number);
			err = -EIO;
			goto out;
		}
		uoff += dsize;
	}
	if (have_prev) {
		prev.ulen = uoff - prev.uoff;
		err = sink->checkpoint(sink->opaque, &prev, prev_aux, prev_auxlen);
		if (err)
			goto out;
	}
	*usize = uoff;
	err = 0;
out:
	zs_table_free(tab);
	return err;
}

/* ---- Decoders ------------------------------------------------------------------------------ */

struct codec_dec {
	struct zs_fr fr;
	struct zs_loc loc;
	struct zs_table tab; /* a view of the aux entries, if any */
	uint64_t ulen;	     /* the chunk's decoded length */
	uint64_t clen;	     /* the chunk is one frame of clen compressed bytes (0: unknown) */
	uint64_t out;	     /* bytes returned */
	bool in_frame;
	int err; /* sticky */
};

static void zs_dec_free(struct codec_dec *d)
{
	if (!d)
		return;
	zs_fr_fini(&d->fr);
	free(d->tab.ent);
	free(d);
}

/* Logs and records a decoder error. */
static int zs_dec_fail(struct codec_dec *d, int err, const char *msg)
{
	tfs_log(TFS_LOG_ERR, "%s", msg);
	d->err = err;
	return err;
}

/* The next frame of the chunk.  0 or -errno (logged). */
static int zs_dec_next_frame(struct codec_dec *d)
{
	struct zs_fdesc fd;
	int r;

	if (d->clen) { /* its frame's end is known: nothing to find */
		fd = (struct zs_fdesc){.number = ++d->loc.nframes, .coff = d->loc.pos,
				       .end = d->loc.pos + d->clen, .dsize = d->ulen,
				       .tix = ZS_UNKNOWN, .from_table = true};
		d->loc.pos = fd.end;
		d->clen = 0; /* a frame that stops short is followed by none: the next call fails */
		r = 1;
	} else {
		r = zs_loc_next(&d->loc, d->ulen <= ZS_HOP_MAX, &fd);
	}

	if (r < 0)
		return zs_dec_fail(d, r, d->loc.msg);
	if (r == 0) {
		char msg[ZS_MSG];

		snprintf(msg, sizeof(msg),
			 "zstd: decoder: the data ends at compressed offset %" PRIu64
			 " after %" PRIu64 " of the chunk's %" PRIu64
			 " bytes (damaged, or the index does not match the file)",
			 d->loc.pos, d->out, d->ulen);
		return zs_dec_fail(d, -EIO, msg);
	}
	if (zs_fr_start(&d->fr, &fd))
		return zs_dec_fail(d, d->fr.err, d->fr.msg);
	d->in_frame = true;
	return 0;
}

static int zs_dec_new(struct src *in, const struct codec_ckpt *ck, const void *aux, size_t auxlen,
		      struct codec_dec **out)
{
	struct codec_dec *d;
	int err;

	*out = NULL;
	if (!in || !ck || ck->extra || (ck->bits & ~ZS_CK_TABLE) || !ck->flags ||
	    (ck->clen && (ck->bits & ZS_CK_TABLE)))
		return -EINVAL;
	if ((ck->bits & ZS_CK_TABLE) ? !aux || !auxlen || auxlen % ZS_SEEK_ENTRY : auxlen != 0)
		return -EINVAL;
	d = calloc(1, sizeof(*d));
	if (!d)
		return -ENOMEM;
	err = zs_fr_init(&d->fr, in, ZS_DEC_INBUF, "decoder: ");
	if (err)
		goto fail;
	d->loc.in = in;
	d->loc.pos = ck->coff;
	d->loc.nframes = ck->flags - 1;
	d->loc.dec = true;
	if (ck->bits & ZS_CK_TABLE) {
		d->tab.ent = malloc(auxlen);
		if (!d->tab.ent) {
			err = -ENOMEM;
			goto fail;
		}
		memcpy(d->tab.ent, aux, auxlen);
		d->tab.n = auxlen / ZS_SEEK_ENTRY;
		d->tab.esz = ZS_SEEK_ENTRY;
		d->tab.sums = true;
		d->loc.tab = &d->tab;
	}
	d->ulen = ck->ulen;
	d->clen = ck->clen;
	err = zs_dec_next_frame(d);
	if (err)
		goto fail;
	*out = d;
	return 0;
fail:
	zs_dec_free(d);
	return err;
}

static ssize_t zs_dec_read(struct codec_dec *d, void *buf, size_t len)
{
	if (!d->ulen)
		return 0; /* an empty chunk: nothing to check either */
	while (len) {
		uint64_t left = d->ulen - d->out;
		ssize_t n;

		if (d->err)
			return d->err;
		if (!d->in_frame) {
			if (!left)
				return 0;
			if (zs_dec_next_frame(d))
				continue;
		}
		if (left) {
			n = zs_fr_read(&d->fr, buf, len < left ? len : (size_t)left);
		} else {
			/* all the chunk's bytes are out: a frame must end here */
			uint8_t b;

			n = zs_fr_read(&d->fr, &b, 1);
			if (n > 0) {
				char msg[ZS_MSG];

				snprintf(msg, sizeof(msg),
					 "zstd: decoder: frame %" PRIu64
					 " at compressed offset %" PRIu64
					 " goes on past the end of its chunk (%" PRIu64
					 " bytes; the index does not match the file)",
					 d->fr.fd.number, d->fr.fd.coff, d->ulen);
				return zs_dec_fail(d, -EIO, msg);
			}
		}
		if (n > 0) {
			d->out += (uint64_t)n;
			return n;
		}
		if (n < 0)
			return zs_dec_fail(d, (int)n, d->fr.msg);
		d->in_frame = false;
		d->loc.pos = incur_pos(&d->fr.in);
	}
	return 0;
}

static size_t zs_dec_memory(const struct codec_dec *d)
{
	size_t lib = ZSTD_sizeof_DCtx(d->fr.dctx);

	/* libzstd allocates the window at the first byte decoded; count it from the start */
	if (lib < d->fr.est)
		lib = (size_t)d->fr.est;
	return sizeof(*d) + d->fr.in.cap + (size_t)d->tab.n * ZS_SEEK_ENTRY + lib;
}

const struct codec codec_zstd = {
	.name = "zstd",
	.probe = zs_probe,
	.scan_new = zs_scan_new,
	.scan_read = zs_scan_read,
	.scan_verified = zs_scan_verified,
	.scan_name = NULL,
	.scan_free = zs_scan_free,
	.index_blocks = zs_index_blocks,
	.dec_new = zs_dec_new,
	.dec_read = zs_dec_read,
	.dec_memory = zs_dec_memory,
	.dec_free = zs_dec_free,
	.exact_input = true,
};
