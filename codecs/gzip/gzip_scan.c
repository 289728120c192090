/* gzip's indexing scan (codec_gzip's and codec_deflate's scan_*): a producer that inflates and
 * marks checkpoints, and a consumer on scan_read's thread that checks members, packs windows
 * and calls the sink (the format and the checkpoints are described in gzip.c).
 *
 * Speed.  The scan is the first-mount hot path, and zlib's inflate (~350 MB/s out here) is its
 * bottleneck.  Work other than inflating is therefore moved off the inflating thread: with
 * opts->threads >= 2 a worker (a job of the pool, common/pool.h) only reads and inflates, into
 * a ring of four 1 MiB buffers, while scan_read's thread copies the bytes out, computes the
 * CRC-32 (zlib's, ~4 GB/s), compresses the windows and calls the sink.  A checkpoint or the end
 * of a member always ends a buffer, so "what happens between these bytes" travels with the
 * buffer (a checkpoint and its raw window at its start; the stored CRC and ISIZE at its end),
 * and the consumer acts on it in stream order, on its own thread, as the sink's contract
 * demands.  Between checkpoints the worker inflates with Z_NO_FLUSH and an output limit that
 * ends at the spacing mark; only past the mark does it switch to Z_BLOCK, so it stops at block
 * boundaries just once per checkpoint.  With one thread the same producer runs inline,
 * inflating straight into the caller's buffer when the read is large (64 KiB or more) and
 * through one buffer of its own otherwise.
 */
#include "codecs/gzip/gzip_int.h"

#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "common/byteio.h"
#include "common/crc32.h"
#include "common/log.h"
#include "common/pool.h"
#include "codecs/gzip/gzip_ckpt.h"
#include "codecs/gzip/gzip_sparse.h"
#include "codecs/liberr.h"
#include "codecs/pipeline.h"

_Static_assert(GZ_QBUF <= UINT_MAX, "zlib and ISA-L count in 32 bits");

/* ---- The scan: producer ------------------------------------------------------------------ */

/* A buffer of decompressed bytes and what happens at its edges.  Filled by the producer,
 * then owned by the consumer until it releases it (the queue's mutex hands it over). */
struct gz_buf {
	uint8_t *data;	      /* cap bytes: own (GZ_QBUF) or, inline, the caller's */
	uint8_t *own;	      /* GZ_QBUF bytes, followed by the window */
	uint8_t *win;	      /* GZ_WINSIZE bytes */
	size_t cap;
	size_t len;	      /* decompressed bytes in data */
	size_t pos;	      /* consumer: bytes already returned */
	bool has_ck;	      /* a checkpoint at data[0]; its window is win[0..ck.extra) */
	bool member_end;      /* a member ends after data[len - 1]: */
	uint32_t crc, isize;  /*   its stored trailer */
	uint64_t member, end; /*   its header's and its end's compressed offsets */
	bool last;	      /* nothing follows: err is 0 at the end of the data, or -errno */
	bool truncated;	      /* last because the file ends inside a member */
	int err;
	struct codec_ckpt ck;
};

enum gz_pstate {
	GZ_P_INFLATE, /* inside a member's deflate data */
	GZ_P_NEXT,    /* after a trailer: another member, or the end */
	GZ_P_END,     /* err: 0 at the end of the data, or -errno */
};

/* The inflating half of a scan: used by one thread (the worker, or scan_read's). */
struct gz_prod {
	struct inflater *inf;
	struct gz_in in;
	uint64_t spacing;
	uint64_t uoff;	  /* decompressed bytes produced */
	uint64_t last_ck; /* uoff of the last checkpoint */
	uint64_t prev_ck; /* and of the one before */
	uint64_t hunt_from; /* uoff where the spacing is counted from: last_ck, or where a
			     * hunt for a boundary gave up */
	uint64_t member;  /* compressed offset of the current member's header */
	enum gz_pstate state;
	int err;
	bool pending; /* pend goes at the start of the next buffer */
	struct codec_ckpt pend;
	bool in_end;  /* the file has ended (zlib may still hold output) */
	bool raw;     /* raw deflate: one stream, no header or trailer */
	/* where zlib can take over when ISA-L's hunt sees no boundary (gz_fallback): the last
	 * checkpoint, or the start of the current member's deflate data if that is later */
	uint64_t re_uoff, re_coff;
	uint32_t re_bits;
	size_t re_wlen;
	uint8_t *re_win; /* GZ_WINSIZE */
	bool fallback;	 /* zlib stands in for ISA-L until the next boundary */
	unsigned fallbacks; /* how often: from GZ_FALLBACKS_MAX on, zlib stays */
};

static void gz_restart_point(struct gz_prod *p, uint64_t uoff, uint64_t coff, uint32_t bits,
			     const uint8_t *win, size_t wlen)
{
	p->re_uoff = uoff;
	p->re_coff = coff;
	p->re_bits = bits;
	p->re_wlen = wlen;
	if (wlen)
		memcpy(p->re_win, win, wlen);
}

/* ISA-L's hunt saw no block boundary in INFL_HUNT_MAX bytes of input (short or fixed-Huffman
 * headers): zlib stands in until the next boundary.  It starts at the restart point,
 * inflates up to the current offset again (discarding the bytes) and goes on from there,
 * finding the boundary with Z_BLOCK; gz_back_to_isal hands over again.  0 or -errno. */
static int gz_fallback(struct gz_prod *p)
{
	struct inflater *z = infl_new(INFL_ZLIB, true);
	uint64_t skip = p->uoff - p->re_uoff, at;
	uint8_t *scratch = NULL, byte = 0;
	int err = -ENOMEM, ret;
	size_t made;

	tfs_log(TFS_LOG_INFO, "gzip: no block boundary visible to ISA-L after offset %llu "
		"(fixed-Huffman blocks?): zlib stands in from offset %llu",
		(unsigned long long)p->hunt_from, (unsigned long long)p->re_uoff);
	scratch = malloc(GZ_SCAN_INBUF);
	if (!z || !scratch)
		goto fail;
	if (p->re_bits) {
		err = src_pread_full(p->in.src, &byte, 1, p->re_coff - 1);
		if (err)
			goto fail;
	}
	err = infl_resume(z, p->re_bits, byte >> (8 - p->re_bits), p->re_win, p->re_wlen);
	if (err)
		goto fail;
	gz_in_seek(&p->in, p->re_coff);
	p->in_end = false;
	while (skip) {
		if (!p->in.avail) {
			ssize_t n = gz_in_fill(&p->in);
			err = n < 0 ? (int)n : -EIO; /* it was there a moment ago */
			if (n <= 0)
				goto fail;
		}
		ret = gz_inflate(z, &p->in, scratch, skip < GZ_SCAN_INBUF ? skip : GZ_SCAN_INBUF,
				 INFL_RUN, &made, &at);
		err = ret < 0 ? ret : -EIO;
		if (ret < 0 || ret == INFL_END)
			goto fail;
		skip -= made;
	}
	free(scratch);
	infl_free(p->inf);
	p->inf = z;
	p->fallback = ++p->fallbacks < GZ_FALLBACKS_MAX;
	if (!p->fallback)
		tfs_log(TFS_LOG_INFO, "gzip: zlib inflates the rest of this file");
	return 0;
fail:
	tfs_log(TFS_LOG_ERR, "gzip: zlib could not take over at offset %llu: %s",
		(unsigned long long)p->re_uoff, strerror(-err));
	free(scratch);
	infl_free(z);
	return err;
}

/* zlib, standing in, stopped at the block boundary at coff/bits: ISA-L resumes there (with
 * zlib's window).  If it cannot, zlib goes on. */
static void gz_back_to_isal(struct gz_prod *p, uint64_t coff, uint32_t bits)
{
	struct inflater *x = infl_new(INFL_ISAL, true);
	size_t wl = infl_window(p->inf, p->re_win);
	uint8_t byte = 0;

	if (!x)
		return;
	if ((bits && src_pread_full(p->in.src, &byte, 1, coff - 1)) ||
	    infl_resume(x, bits, byte >> (8 - bits), p->re_win, wl)) {
		infl_free(x);
		return;
	}
	gz_in_seek(&p->in, coff);
	infl_free(p->inf);
	p->inf = x;
	p->fallback = false;
}

static void gz_mark(struct gz_prod *p, uint64_t coff, uint32_t bits, uint32_t flags)
{
	memset(&p->pend, 0, sizeof(p->pend));
	p->pend.uoff = p->uoff;
	p->pend.coff = coff;
	p->pend.bits = bits;
	p->pend.flags = flags;
	p->pending = true;
}

/* Puts the pending checkpoint at the start of b (which is empty) with its window. */
static void gz_attach(struct gz_prod *p, struct gz_buf *b)
{
	b->has_ck = true;
	b->ck = p->pend;
	if (!(b->ck.flags & GZ_CK_MEMBER)) {
		b->ck.extra = infl_window(p->inf, b->win);
		gz_restart_point(p, b->ck.uoff, b->ck.coff, b->ck.bits, b->win, b->ck.extra);
	}
	p->prev_ck = p->last_ck;
	p->last_ck = p->hunt_from = p->pend.uoff;
	p->pending = false;
}

static void gz_prod_fail(struct gz_prod *p, struct gz_buf *b, int err)
{
	p->state = GZ_P_END;
	p->err = err;
	b->last = true;
	b->err = err;
}

/* The file ends inside a member: what was decoded is all there is, with no sign of damage. */
static void gz_prod_truncated(struct gz_prod *p, struct gz_buf *b, int err)
{
	gz_prod_fail(p, b, err);
	b->truncated = true;
}

/* Fills b with the next decompressed bytes.  b ends when it is full, before a checkpoint
 * (which then starts the next buffer), after a member's last byte, or at the end or an
 * error (b->last). */
static void gz_produce(struct gz_prod *p, struct gz_buf *b)
{
	b->len = 0;
	b->pos = 0;
	b->has_ck = false;
	b->member_end = false;
	b->last = false;
	b->truncated = false;
	b->err = 0;

	if (p->state == GZ_P_NEXT) {
		uint64_t at = gz_in_pos(&p->in);
		int r = gz_member_start(&p->in, false, false, NULL, 0);

		if (r <= 0) {
			p->state = GZ_P_END;
			p->err = r;
		} else {
			r = infl_restart(p->inf);
			if (r < 0) {
				p->state = GZ_P_END;
				p->err = r;
			}
			p->member = at;
			if (!r) {
				p->state = GZ_P_INFLATE;
				gz_restart_point(p, p->uoff, gz_in_pos(&p->in), 0, NULL, 0);
			}
			if (!r && p->uoff - p->last_ck >= p->spacing)
				gz_mark(p, at, 0, GZ_CK_MEMBER);
		}
	}
	if (p->state == GZ_P_END) {
		b->last = true;
		b->err = p->err;
		return;
	}
	if (p->pending)
		gz_attach(p, b);

	for (;;) {
		size_t room = b->cap - b->len, made;
		uint64_t since = p->uoff - p->hunt_from, at;
		enum infl_mode mode = INFL_RUN;
		int ret;

		if (!room)
			return;
		if (since >= p->spacing)
			mode = INFL_TO_BLOCK;
		else if (p->spacing - since < room)
			room = (size_t)(p->spacing - since);
		/* At the end of a truncated file, the inflater may still hold output (the rest of
		 * a match, bits it has already read): asked with no input, it gives it. */
		if (!p->in.avail && !p->in_end) {
			ssize_t n = gz_in_fill(&p->in);
			if (n < 0) {
				gz_prod_fail(p, b, (int)n);
				return;
			}
			p->in_end = n == 0;
		}
		ret = gz_inflate(p->inf, &p->in, b->data + b->len, room, mode, &made, &at);
		b->len += made;
		p->uoff += made;
		if (ret == INFL_MORE && !made && p->in_end) {
			struct gz_where w = {"", "at", p->member};
			gz_prod_truncated(p, b, gz_inflate_fail(&p->in, &w, p->inf, 0));
			return;
		}

		if (ret == INFL_END && p->raw) { /* the one stream ended: the end */
			if (b->has_ck && !b->len && b->ck.uoff) {
				b->has_ck = false;
				p->last_ck = p->prev_ck;
			}
			p->state = GZ_P_END;
			p->err = 0;
			b->last = true;
			return;
		}
		if (ret == INFL_END) {
			uint8_t t[8];
			struct gz_where w = {"", "at", p->member};
			int r = gz_trailer(&p->in, &w, t);
			if (r == -EIO) { /* the file ends in the trailer */
				gz_prod_truncated(p, b, r);
				return;
			}
			if (r < 0) {
				gz_prod_fail(p, b, r);
				return;
			}
			/* A checkpoint with no bytes after it in its member (a block boundary
			 * before an empty last block, an empty member) would start an empty
			 * chunk, or one past the end; the next member's start is better. */
			if (b->has_ck && !b->len && b->ck.uoff) {
				b->has_ck = false;
				p->last_ck = p->prev_ck;
			}
			b->member_end = true;
			b->crc = le32(t);
			b->isize = le32(t + 4);
			b->member = p->member;
			b->end = gz_in_pos(&p->in);
			p->state = GZ_P_NEXT;
			return;
		}
		if (ret < 0) {
			struct gz_where w = {"", "at", p->member};
			gz_prod_fail(p, b, gz_inflate_fail(&p->in, &w, p->inf,
							   ret == -EAGAIN ? -EIO : ret));
			return;
		}
		if (ret == INFL_NOBLOCK) {
			int err = gz_fallback(p);
			if (err) {
				gz_prod_fail(p, b, err);
				return;
			}
			continue;
		}
		if (ret == INFL_BLOCK) {
			uint64_t coff;
			uint32_t bits;

			gz_bitpos(at, &coff, &bits);
			if (p->fallback)
				gz_back_to_isal(p, coff, bits);
			gz_mark(p, coff, bits, 0);
			if (b->len)
				return;
			gz_attach(p, b);
		}
	}
}

/* ---- The scan: consumer and queue --------------------------------------------------------- */

struct codec_scan {
	struct gz_prod prod; /* the worker's when threaded, else scan_read's */
	struct codec_sink sink;
	char name[GZ_NAME_MAX]; /* first member's FNAME, set in scan_new */

	/* scan_read's thread only */
	struct gz_buf *cur;
	uint64_t uout;	   /* decompressed bytes returned */
	uint64_t verified; /* end of the last member whose CRC and ISIZE matched */
	bool truncated;	   /* the scan failed only because the file ends inside a member */
	uLong crc;	   /* CRC-32 and length of the current member so far */
	bool raw;	   /* raw deflate: nothing to verify */
	uint64_t msize;
	int err;
	bool done;
	z_stream ds; /* packs windows */
	bool dinit;
	struct gz_sparse *sparse; /* thins them first; NULL: no memory, full windows */
	uint8_t *aux;
	size_t auxcap;

	/* the queue: bufs[ri .. ri + filled) are ready (mod nbuf) */
	struct gz_buf *bufs;
	unsigned nbuf;
	bool threaded;
	bool direct; /* inline, large reads are inflated in place (zlib only: see scan_start) */
	struct pool_job *worker;
	pthread_mutex_t mu;
	pthread_cond_t more; /* filled went up, or the worker ended */
	pthread_cond_t room; /* filled went down, or stop */
	unsigned ri;	     /* consumer only */
	unsigned filled;     /* mu */
	bool stop;	     /* mu */
};

static void *gz_worker(void *arg)
{
	struct codec_scan *s = arg;
	unsigned wi = 0;
	bool stop;

	for (;;) {
		struct gz_buf *b = &s->bufs[wi];

		pthread_mutex_lock(&s->mu);
		while (s->filled == s->nbuf && !s->stop)
			pthread_cond_wait(&s->room, &s->mu);
		stop = s->stop;
		pthread_mutex_unlock(&s->mu);
		if (stop)
			break;
		gz_produce(&s->prod, b);
		pthread_mutex_lock(&s->mu);
		s->filled++;
		pthread_cond_signal(&s->more);
		pthread_mutex_unlock(&s->mu);
		if (b->last)
			break;
		wi = (wi + 1) % s->nbuf;
	}
	return NULL;
}

/* The next buffer.  Inline, a read of at least GZ_DIRECT_MIN bytes is inflated straight into
 * the caller's buf (saving a copy); its bytes then count as returned at once. */
static struct gz_buf *gz_next_buf(struct codec_scan *s, void *buf, size_t len)
{
	if (!s->threaded) {
		struct gz_buf *b = &s->bufs[0];
		bool direct = s->direct && len >= GZ_DIRECT_MIN;

		b->data = direct ? buf : b->own;
		b->cap = direct ? (len < UINT_MAX ? len : UINT_MAX) : GZ_QBUF;
		gz_produce(&s->prod, b);
		return b;
	}
	pthread_mutex_lock(&s->mu);
	while (!s->filled)
		pthread_cond_wait(&s->more, &s->mu);
	pthread_mutex_unlock(&s->mu);
	return &s->bufs[s->ri];
}

static void gz_release_buf(struct codec_scan *s)
{
	if (!s->threaded)
		return;
	pthread_mutex_lock(&s->mu);
	s->filled--;
	s->ri = (s->ri + 1) % s->nbuf;
	pthread_cond_signal(&s->room);
	pthread_mutex_unlock(&s->mu);
}

/* Compresses a window into s->aux.  0 or -errno. */
static int gz_pack_window(struct codec_scan *s, const uint8_t *win, size_t len, size_t *packed)
{
	int ret;

	if (!s->dinit) {
		ret = deflateInit2(&s->ds, 1, Z_DEFLATED, 15, 8, Z_DEFAULT_STRATEGY);
		if (ret != Z_OK)
			return liberr_zlib(ret);
		s->dinit = true;
		s->auxcap = deflateBound(&s->ds, GZ_WINSIZE);
		s->aux = malloc(s->auxcap);
		if (!s->aux)
			return -ENOMEM;
	} else {
		deflateReset(&s->ds);
	}
	s->ds.next_in = (Bytef *)win;
	s->ds.avail_in = (uInt)len;
	s->ds.next_out = s->aux;
	s->ds.avail_out = (uInt)s->auxcap;
	ret = deflate(&s->ds, Z_FINISH);
	if (ret != Z_STREAM_END)
		return ret == Z_OK ? -EINVAL : liberr_zlib(ret);
	*packed = s->auxcap - s->ds.avail_out;
	return 0;
}

static int gz_emit(struct codec_scan *s, struct gz_buf *b)
{
	size_t packed = 0;
	int err;

	if (b->ck.extra && s->sparse) { /* (made only where a sink takes checkpoints) */
		/* the stream ends after b's bytes: a member's end, or the end of raw deflate */
		bool ends = b->member_end || (b->last && !b->err);
		int kept = gz_sparse_window(s->sparse, s->prod.in.src, b->ck.coff, b->ck.bits,
					    b->win, (size_t)b->ck.extra, b->data, b->len, ends);
		if (kept < 0)
			TFS_DEBUG("gzip: the window at offset %llu stays whole: %s",
				  (unsigned long long)b->ck.uoff, strerror(-kept));
	}
	if (b->ck.extra) {
		err = gz_pack_window(s, b->win, (size_t)b->ck.extra, &packed);
		if (err)
			return err;
	}
	if (!s->sink.checkpoint)
		return 0;
	return s->sink.checkpoint(s->sink.opaque, &b->ck, packed ? s->aux : NULL, packed);
}

static int gz_check_member(struct codec_scan *s, const struct gz_buf *b)
{
	uint32_t crc = (uint32_t)s->crc, isize = (uint32_t)s->msize;

	if (crc != b->crc || isize != b->isize) {
		bool bad_crc = crc != b->crc;
		tfs_log(TFS_LOG_ERR,
			"gzip: %s mismatch: stored %08x, decoded %08x (member at compressed offset "
			"%llu, ending at %llu)",
			bad_crc ? "CRC-32" : "length", bad_crc ? b->crc : b->isize,
			bad_crc ? crc : isize, (unsigned long long)b->member,
			(unsigned long long)b->end);
		return -EIO;
	}
	s->verified = s->uout;
	s->crc = crc32(0, NULL, 0);
	s->msize = 0;
	return 0;
}

/* Takes n bytes of b (already in the caller's buffer, or just copied there) as returned. */
static void gz_account(struct codec_scan *s, struct gz_buf *b, size_t n)
{
	s->crc = tfs_crc32((uint32_t)s->crc, b->data + b->pos, n);
	b->pos += n;
	s->uout += n;
	s->msize += n;
}

ssize_t gz_scan_read(struct codec_scan *s, void *buf, size_t len)
{
	struct gz_buf *b;
	int err;

	for (;;) {
		if (s->err)
			return s->err;
		if (s->done || !len)
			return 0;
		b = s->cur;
		if (b && b->pos < b->len) {
			size_t n = b->len - b->pos;
			if (n > len)
				n = len;
			memcpy(buf, b->data + b->pos, n);
			gz_account(s, b, n);
			return (ssize_t)n;
		}
		if (b) {
			bool last = b->last;

			err = b->member_end ? gz_check_member(s, b) : 0;
			if (!err && last) {
				err = b->err;
				s->truncated = b->truncated;
			}
			s->cur = NULL;
			gz_release_buf(s);
			if (err) {
				s->err = err;
				continue;
			}
			if (last) {
				s->done = true;
				continue;
			}
		}
		b = gz_next_buf(s, buf, len);
		s->cur = b;
		if (b->has_ck) {
			err = gz_emit(s, b);
			if (err) {
				s->err = err;
				continue;
			}
		}
		if (b->data == buf && b->len) {
			gz_account(s, b, b->len);
			return (ssize_t)b->len;
		}
	}
}

uint64_t gz_scan_verified(struct codec_scan *s)
{
	if (s->raw) /* nothing in raw deflate vouches: the container's CRC-32 does */
		return s->uout;
	/* a file that merely ends early (a half-finished copy) vouches for everything decoded
	 * before its end, as gzip -dc and tar -xz do; damage only for the members that passed */
	return s->truncated ? s->uout : s->verified;
}

const char *gz_scan_name(struct codec_scan *s)
{
	return s->name[0] ? s->name : NULL;
}

void gz_scan_free(struct codec_scan *s)
{
	unsigned i;

	if (!s)
		return;
	if (s->threaded) {
		pthread_mutex_lock(&s->mu);
		s->stop = true;
		pthread_cond_broadcast(&s->room);
		pthread_mutex_unlock(&s->mu);
		pool_join(s->worker);
		pthread_cond_destroy(&s->room);
		pthread_cond_destroy(&s->more);
		pthread_mutex_destroy(&s->mu);
	}
	infl_free(s->prod.inf);
	gz_sparse_free(s->sparse);
	if (s->dinit)
		deflateEnd(&s->ds);
	free(s->prod.in.buf);
	free(s->prod.re_win);
	free(s->aux);
	if (s->bufs)
		for (i = 0; i < s->nbuf; i++)
			free(s->bufs[i].own);
	free(s->bufs);
	free(s);
}

static int gz_scan_start(struct src *in, const struct codec_opts *opts,
			 const struct codec_sink *sink, bool raw, struct codec_scan **out)
{
	struct codec_scan *s;
	struct gz_prod *p;
	unsigned i;
	int err, r;

	*out = NULL;
	s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	if (sink)
		s->sink = *sink;
	if (s->sink.checkpoint)
		s->sparse = gz_sparse_new(); /* without it, windows are kept whole */
	s->crc = crc32(0, NULL, 0);
	s->nbuf = opts && opts->threads >= 2 ? GZ_QLEN : 1;
	err = -ENOMEM;
	s->bufs = calloc(s->nbuf, sizeof(*s->bufs));
	if (!s->bufs)
		goto fail;
	for (i = 0; i < s->nbuf; i++) {
		s->bufs[i].own = malloc(GZ_QBUF + GZ_WINSIZE);
		if (!s->bufs[i].own)
			goto fail;
		s->bufs[i].data = s->bufs[i].own;
		s->bufs[i].cap = GZ_QBUF;
		s->bufs[i].win = s->bufs[i].own + GZ_QBUF;
	}

	p = &s->prod;
	p->spacing = opts && opts->spacing ? opts->spacing : GZ_DEFAULT_SPACING;
	p->in.buf = malloc(GZ_SCAN_INBUF);
	p->re_win = malloc(GZ_WINSIZE);
	if (!p->in.buf || !p->re_win)
		goto fail;
	p->inf = infl_new(infl_default(), true);
	if (!p->inf)
		goto fail;
	/* ISA-L copies 32 KiB of history per call, so it gets the whole GZ_QBUF each time; and
	 * where a hunt for a block boundary catches one depends on where calls end, so the
	 * calls must not depend on the caller's read sizes (the same checkpoints inline and
	 * threaded, whatever the reads) */
	s->direct = infl_default() == INFL_ZLIB;
	gz_in_init(&p->in, in, p->in.buf, GZ_SCAN_INBUF, 0);

	/* The first header is read here, so that scan_name works at once; an error in it is
	 * reported by the first scan_read, like any other. */
	s->raw = p->raw = raw;
	r = raw ? 1 : gz_member_start(&p->in, true, false, s->name, sizeof(s->name));
	if (r < 0) {
		p->state = GZ_P_END;
		p->err = r;
	} else {
		p->state = GZ_P_INFLATE;
		p->member = 0;
		gz_mark(p, 0, 0, raw ? 0 : GZ_CK_MEMBER);
		gz_restart_point(p, 0, gz_in_pos(&p->in), 0, NULL, 0);
	}

	if (s->nbuf > 1) {
		pthread_mutex_init(&s->mu, NULL);
		pthread_cond_init(&s->more, NULL);
		pthread_cond_init(&s->room, NULL);
		r = pool_start(gz_worker, s, "tarseek-gzip", pl_nice(), &s->worker);
		if (r == 0) {
			s->threaded = true;
		} else {
			tfs_log(TFS_LOG_INFO, "gzip: no worker thread (%s), inflating inline",
				strerror(-r));
			pthread_cond_destroy(&s->room);
			pthread_cond_destroy(&s->more);
			pthread_mutex_destroy(&s->mu);
		}
	}
	*out = s;
	return 0;
fail:
	gz_scan_free(s);
	return err;
}

int gz_scan_new(struct src *in, const struct codec_opts *opts, const struct codec_sink *sink,
		struct codec_scan **out)
{
	return gz_scan_start(in, opts, sink, false, out);
}

int gz_deflate_scan_new(struct src *in, const struct codec_opts *opts,
			const struct codec_sink *sink, struct codec_scan **out)
{
	return gz_scan_start(in, opts, sink, true, out);
}
