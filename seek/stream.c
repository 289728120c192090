/* The indexing pass over a compressed file (see stream.h).
 *
 * Data flow: codec scan_read -> buf (1 MiB) -> the parser's reads.  Every byte that enters
 * buf goes through account(), which splits it at segment and checkpoint boundaries and
 * updates the running CRC32s.  Checkpoints arrive from the codec (on_codec_ckpt) before
 * the bytes they start, but possibly while bytes before them are still in flight in the
 * same scan_read call; so new checkpoints wait in a small queue until account() reaches
 * their offset, and only then is the previous chunk finished and sent to the sink.
 *
 * Segment CRCs: within a chunk we checksum pieces of a segment's size (the sink's seg_shift).
 * When the chunk ends, a tail shorter than half a segment is folded into the piece before it
 * with crc32_combine,
 * which matches segment.h's rule without knowing the chunk length in advance.
 */
#include "seek/stream.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "common/crc32.h"
#include "common/log.h"
#include "seek/segment.h"

#define BUF_SIZE (1u << 20)

struct pending {
	struct codec_ckpt ck;
	void *aux;
	size_t auxlen;
};

struct cstream {
	const struct codec *codec;
	struct codec_scan *scan;
	const struct cstream_sink *sink;
	struct codec_sink ck_sink; /* ours, handed to the codec; lives as long as the scan */
	struct src *src; /* the forward-only view */
	int err;	 /* first error, sticky */
	int sink_err;	 /* the first error the sink returned: no salvage after it */
	unsigned seg_shift;
	uint64_t seg_size; /* 1 << seg_shift */

	uint8_t *buf;		  /* decoded bytes [buf_off, buf_off + buf_len) */
	size_t buf_len, buf_pos;  /* buf_pos: next unread byte in buf */
	uint64_t buf_off;	  /* decoded offset of buf[0] */
	uint64_t acct;		  /* decoded bytes accounted (= buf_off + buf_len) */
	bool eof;

	/* the chunk being checksummed */
	bool have_cur;
	struct pending cur;
	uint64_t nckpt;	      /* checkpoints sent to the sink */
	uint32_t *crcs;	      /* finished pieces of the current chunk */
	uint64_t ncrcs, crcs_cap;
	uint32_t piece_crc;   /* running CRC of the current piece */
	uint64_t piece_len;

	/* the CRC state at each refill boundary of the current chunk, so that a salvage can end
	 * the chunk exactly where the codec's checks stopped (a gzip member's end) */
	struct snap {
		uint64_t acct, ncrcs, piece_len;
		uint32_t piece_crc;
	} *snaps;
	size_t nsnaps, snaps_cap;

	/* checkpoints emitted by the codec, not yet reached by account() */
	struct pending *queue;
	size_t nqueue, queue_cap;
};

static int on_codec_ckpt(void *opaque, const struct codec_ckpt *ck, const void *aux, size_t auxlen)
{
	struct cstream *s = opaque;
	struct pending p = {.ck = *ck, .auxlen = auxlen};
	uint64_t last = s->nqueue ? s->queue[s->nqueue - 1].ck.uoff : (s->have_cur ? s->cur.ck.uoff : 0);

	if ((s->nqueue || s->have_cur) && ck->uoff < last) {
		tfs_log(TFS_LOG_ERR, "%s: checkpoint at %llu out of order (internal error)",
			s->codec->name, (unsigned long long)ck->uoff);
		return -EIO;
	}
	if (ck->uoff < s->acct) {
		tfs_log(TFS_LOG_ERR, "%s: checkpoint at %llu after its data (internal error)",
			s->codec->name, (unsigned long long)ck->uoff);
		return -EIO;
	}
	if (auxlen) {
		p.aux = malloc(auxlen);
		if (!p.aux)
			return -ENOMEM;
		memcpy(p.aux, aux, auxlen);
	}
	if (s->nqueue == s->queue_cap) {
		size_t cap = s->queue_cap ? s->queue_cap * 2 : 8;
		struct pending *q = realloc(s->queue, cap * sizeof(*q));
		if (!q) {
			free(p.aux);
			return -ENOMEM;
		}
		s->queue = q;
		s->queue_cap = cap;
	}
	s->queue[s->nqueue++] = p;
	return 0;
}

static int push_crc(struct cstream *s, uint32_t crc)
{
	if (s->ncrcs == s->crcs_cap) {
		uint64_t cap = s->crcs_cap ? s->crcs_cap * 2 : 64;
		uint32_t *n = realloc(s->crcs, cap * sizeof(*n));
		if (!n)
			return -ENOMEM;
		s->crcs = n;
		s->crcs_cap = cap;
	}
	s->crcs[s->ncrcs++] = crc;
	return 0;
}

/* Ends the current chunk at decoded offset end and sends it to the sink. */
static int finish_chunk(struct cstream *s, uint64_t end)
{
	int err = 0;

	if (!s->have_cur)
		return 0;
	s->cur.ck.ulen = end - s->cur.ck.uoff;
	if (s->piece_len) {
		if (s->piece_len < s->seg_size / 2 && s->ncrcs > 0)
			s->crcs[s->ncrcs - 1] =
				(uint32_t)crc32_combine(s->crcs[s->ncrcs - 1], s->piece_crc, (z_off_t)s->piece_len);
		else
			err = push_crc(s, s->piece_crc);
	}
	if (!err && s->ncrcs != seg_count(s->cur.ck.ulen, s->seg_shift)) {
		tfs_log(TFS_LOG_ERR, "segment count mismatch (internal error)");
		err = -EIO;
	}
	if (!err) {
		err = s->sink->checkpoint(s->sink->opaque, s->nckpt, &s->cur.ck, s->cur.aux, s->cur.auxlen,
					  s->crcs, s->ncrcs);
		if (err && !s->sink_err)
			s->sink_err = err;
	}
	s->nckpt++;
	free(s->cur.aux);
	s->cur.aux = NULL;
	s->have_cur = false;
	s->ncrcs = 0;
	s->piece_len = 0;
	s->piece_crc = (uint32_t)crc32(0, NULL, 0);
	s->nsnaps = 0;
	return err;
}

/* Starts the chunk of the first queued checkpoint (at decoded offset acct). */
static int start_chunk(struct cstream *s)
{
	int err = finish_chunk(s, s->queue[0].ck.uoff);

	s->cur = s->queue[0];
	s->have_cur = true;
	memmove(s->queue, s->queue + 1, (s->nqueue - 1) * sizeof(*s->queue));
	s->nqueue--;
	/* an empty chunk: a later checkpoint at the same offset replaces it */
	while (!err && s->nqueue && s->queue[0].ck.uoff == s->cur.ck.uoff) {
		free(s->cur.aux);
		s->cur = s->queue[0];
		memmove(s->queue, s->queue + 1, (s->nqueue - 1) * sizeof(*s->queue));
		s->nqueue--;
	}
	return err;
}

/* Checksums len new decoded bytes p that start at decoded offset s->acct. */
static int account(struct cstream *s, const uint8_t *p, size_t len)
{
	int err;

	while (len) {
		if (s->nqueue && s->queue[0].ck.uoff == s->acct) {
			err = start_chunk(s);
			if (err)
				return err;
			if (s->sink->tap_chunk)
				s->sink->tap_chunk(s->sink->tap);
			continue;
		}
		if (!s->have_cur) {
			tfs_log(TFS_LOG_ERR, "%s: data before the first checkpoint (internal error)",
				s->codec->name);
			return -EIO;
		}
		size_t n = len;
		if (n > s->seg_size - s->piece_len)
			n = s->seg_size - s->piece_len;
		if (s->nqueue && s->queue[0].ck.uoff - s->acct < n)
			n = s->queue[0].ck.uoff - s->acct;
		s->piece_crc = tfs_crc32(s->piece_crc, p, n);
		if (s->sink->tap_bytes)
			s->sink->tap_bytes(s->sink->tap, p, n);
		s->piece_len += n;
		s->acct += n;
		p += n;
		len -= n;
		if (s->piece_len == s->seg_size) {
			err = push_crc(s, s->piece_crc);
			if (err)
				return err;
			s->piece_len = 0;
			s->piece_crc = (uint32_t)crc32(0, NULL, 0);
		}
	}
	return 0;
}

/* Adds decoded bytes to buf; returns bytes added, 0 at the end of the stream, or -errno
 * (sticky).  Consumed data is kept (and can be read again) until the buffer is half full,
 * so the builder can probe the first blocks and then parse from offset 0. */
static ssize_t refill(struct cstream *s)
{
	ssize_t n;

	if (s->err)
		return s->err;
	if (s->eof)
		return 0;
	if (s->buf_pos == s->buf_len && s->buf_len >= BUF_SIZE / 2) {
		s->buf_off += s->buf_len;
		s->buf_len = s->buf_pos = 0;
	} else if (s->buf_len == BUF_SIZE) {
		memmove(s->buf, s->buf + s->buf_pos, s->buf_len - s->buf_pos);
		s->buf_off += s->buf_pos;
		s->buf_len -= s->buf_pos;
		s->buf_pos = 0;
	}
	n = s->codec->scan_read(s->scan, s->buf + s->buf_len, BUF_SIZE - s->buf_len);
	if (n > 0) {
		int err = account(s, s->buf + s->buf_len, (size_t)n);
		if (err) {
			s->err = err;
			return err;
		}
		s->buf_len += (size_t)n;
		if (s->have_cur) { /* remember this boundary (best effort: only for salvage) */
			if (s->nsnaps == s->snaps_cap) {
				size_t cap = s->snaps_cap ? s->snaps_cap * 2 : 64;
				struct snap *p = realloc(s->snaps, cap * sizeof(*p));
				if (p) {
					s->snaps = p;
					s->snaps_cap = cap;
				}
			}
			if (s->nsnaps < s->snaps_cap)
				s->snaps[s->nsnaps++] = (struct snap){s->acct, s->ncrcs, s->piece_len,
								      s->piece_crc};
		}
		return n;
	}
	if (n == 0)
		s->eof = true;
	else
		s->err = (int)n;
	return n;
}

static ssize_t fwd_pread(void *opaque, void *dst, size_t len, uint64_t off)
{
	struct cstream *s = opaque;
	size_t done = 0;

	if (off < s->buf_off)
		return -ESPIPE;
	while (done < len) {
		uint64_t want = off + done;
		if (want < s->buf_off + s->buf_len) {
			size_t at = (size_t)(want - s->buf_off), n = s->buf_len - at;
			if (n > len - done)
				n = len - done;
			memcpy((uint8_t *)dst + done, s->buf + at, n);
			done += n;
			s->buf_pos = at + n;
			continue;
		}
		s->buf_pos = s->buf_len; /* skip what is left of the buffer */
		ssize_t n = refill(s);
		if (n < 0)
			return done ? (ssize_t)done : n;
		if (n == 0)
			break;
	}
	return (ssize_t)done;
}

static const struct src_ops fwd_ops = {
	.pread = fwd_pread,
};

int cstream_new(const struct codec *c, struct src *in, const struct codec_opts *opts,
		const struct cstream_sink *sink, struct cstream **out)
{
	struct cstream *s;
	int err;

	*out = NULL;
	if (!seg_shift_ok(sink->seg_shift))
		return -EINVAL;
	s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	s->codec = c;
	s->sink = sink;
	s->seg_shift = sink->seg_shift ? sink->seg_shift : SEG_SHIFT;
	s->seg_size = (uint64_t)1 << s->seg_shift;
	s->piece_crc = (uint32_t)crc32(0, NULL, 0);
	s->buf = malloc(BUF_SIZE);
	s->src = src_new(&fwd_ops, s, SRC_SIZE_UNKNOWN);
	if (!s->buf || !s->src) {
		err = -ENOMEM;
		goto fail;
	}
	s->ck_sink.checkpoint = on_codec_ckpt;
	s->ck_sink.opaque = s;
	err = c->scan_new(in, opts, &s->ck_sink, &s->scan);
	if (err)
		goto fail;
	*out = s;
	return 0;
fail:
	cstream_free(s);
	return err;
}

struct src *cstream_src(struct cstream *s)
{
	return s->src;
}

int cstream_finish(struct cstream *s, uint64_t *usize)
{
	ssize_t n;
	int err;

	*usize = 0;
	do {
		s->buf_pos = s->buf_len;
		n = refill(s);
	} while (n > 0);
	if (n < 0)
		return (int)n;
	/* checkpoints at the very end (empty chunks) replace nothing: drop them */
	if (!s->have_cur && s->nqueue) {
		err = start_chunk(s); /* an empty stream still has its checkpoint at 0 */
		if (err)
			return s->err = err;
	}
	err = finish_chunk(s, s->acct);
	if (err)
		return s->err = err;
	*usize = s->acct;
	return 0;
}

int cstream_salvage(struct cstream *s, uint64_t limit, uint64_t *usize)
{
	int err;

	*usize = 0;
	if (s->sink_err) /* what the index holds is not what was decoded: nothing to keep */
		return s->sink_err;
	if (limit > s->acct)
		limit = s->acct;
	if (!s->have_cur)
		return 0;
	if (limit < s->cur.ck.uoff)
		limit = s->cur.ck.uoff;
	if (limit < s->acct) {
		/* cut the current chunk at the last complete segment piece before limit, or at a
		 * refill boundary after it up to limit, whose CRC state was kept */
		uint64_t whole = (limit - s->cur.ck.uoff) >> s->seg_shift;
		if (whole > s->ncrcs)
			whole = s->ncrcs;
		const struct snap *best = NULL;
		for (size_t i = 0; i < s->nsnaps; i++)
			if (s->snaps[i].acct <= limit &&
			    s->snaps[i].acct > s->cur.ck.uoff + (whole << s->seg_shift))
				best = &s->snaps[i];
		if (best) {
			s->ncrcs = best->ncrcs;
			s->piece_len = best->piece_len;
			s->piece_crc = best->piece_crc;
			limit = best->acct;
		} else {
			s->ncrcs = whole;
			s->piece_len = 0;
			limit = s->cur.ck.uoff + (whole << s->seg_shift);
		}
	}
	if (limit == s->cur.ck.uoff) { /* nothing of this chunk survives */
		free(s->cur.aux);
		s->cur.aux = NULL;
		s->have_cur = false;
		s->ncrcs = 0;
		s->piece_len = 0;
	}
	err = finish_chunk(s, limit);
	if (err)
		return err;
	*usize = limit;
	return 0;
}

uint64_t cstream_pos(const struct cstream *s)
{
	return s->acct;
}

uint64_t cstream_verified(struct cstream *s)
{
	return s->codec->scan_verified ? s->codec->scan_verified(s->scan) : 0;
}

const char *cstream_name(struct cstream *s)
{
	return s->codec->scan_name ? s->codec->scan_name(s->scan) : NULL;
}

void cstream_free(struct cstream *s)
{
	if (!s)
		return;
	if (s->scan)
		s->codec->scan_free(s->scan);
	src_free(s->src);
	for (size_t i = 0; i < s->nqueue; i++)
		free(s->queue[i].aux);
	free(s->queue);
	free(s->snaps);
	free(s->cur.aux);
	free(s->crcs);
	free(s->buf);
	free(s);
}
