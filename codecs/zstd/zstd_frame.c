/* zstd frames: parsing their headers, finding them one after another (from the seek table or
 * by hopping block headers, and what follows the last one), and decoding them with libzstd,
 * checking what the seek table says of each.  Shared by the scan's workers and by decoders;
 * the format and the design are described in zstd.c. */
#include "codecs/zstd/zstd_int.h"

#include <inttypes.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/byteio.h"
#include "common/log.h"
#include "codecs/liberr.h"
#include "codecs/trailing.h"

/* ---- Frame headers ------------------------------------------------------------------------- */

/* Parses the frame header at p[0..n).  ZS_HDR_SHORT if n is too small to hold it, ZS_HDR_NOT_ZSTD
 * if no magic number starts p, ZS_HDR_BAD (*why set) if the header is invalid. */
int zs_hdr_parse(const uint8_t *p, size_t n, struct zs_hdr *h, const char **why)
{
	static const uint8_t did_size[4] = {0, 1, 2, 4};
	static const uint8_t fcs_size[4] = {0, 2, 4, 8};
	uint32_t magic;
	uint8_t fhd;
	bool single;
	size_t at, ds, fs;

	memset(h, 0, sizeof(*h));
	h->content = ZS_UNKNOWN;
	if (n < 4)
		return ZS_HDR_SHORT;
	magic = le32(p);
	if ((magic & ZS_SKIP_MASK) == ZS_SKIP_MAGIC) {
		if (n < 8)
			return ZS_HDR_SHORT;
		h->skippable = true;
		h->skip_size = le32(p + 4);
		h->size = 8;
		return ZS_HDR_OK;
	}
	if (magic != ZS_MAGIC)
		return ZS_HDR_NOT_ZSTD;
	if (n < 5)
		return ZS_HDR_SHORT;
	fhd = p[4];
	single = fhd & 0x20;
	ds = did_size[fhd & 3];
	fs = fcs_size[fhd >> 6];
	if (single && fs == 0)
		fs = 1;
	h->size = 5 + !single + ds + fs;
	if (fhd & 0x08) {
		*why = "reserved bit set in the frame header descriptor";
		return ZS_HDR_BAD;
	}
	if (n < h->size)
		return ZS_HDR_SHORT;
	h->checksum = fhd & 0x04;
	at = 5;
	if (!single) {
		unsigned wlog = 10 + (p[at] >> 3);
		uint64_t base = (uint64_t)1 << wlog;

		h->window = base + (base >> 3) * (p[at] & 7);
		at++;
	}
	for (size_t i = 0; i < ds; i++)
		h->dict_id |= (uint32_t)p[at + i] << (8 * i);
	at += ds;
	if (fs) {
		uint64_t v = 0;

		for (size_t i = 0; i < fs; i++)
			v |= (uint64_t)p[at + i] << (8 * i);
		h->content = fs == 2 ? v + 256 : v;
	}
	if (single)
		h->window = h->content;
	return ZS_HDR_OK;
}

/* 1 if the byte at off exists, 0 if the source ends before it, or -errno. */
static int zs_exists(struct src *in, uint64_t off)
{
	uint8_t b;
	ssize_t n = src_pread(in, &b, 1, off);

	return n < 0 ? (int)n : n == 1;
}

/* ---- Finding frames ------------------------------------------------------------------------ */

__attribute__((format(printf, 3, 4))) static int zs_loc_fail(struct zs_loc *l, int err,
							     const char *fmt, ...);

static int zs_loc_fail(struct zs_loc *l, int err, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(l->msg, sizeof(l->msg), fmt, ap);
	va_end(ap);
	l->level = TFS_LOG_ERR;
	return err;
}

/* A zstd frame (not a skippable one) starts at p: data after the last frame is damage. */
static bool zs_frame_starts(const uint8_t *p, size_t n)
{
	struct zs_hdr h;
	const char *why;

	return p[0] == 0x28 && zs_hdr_parse(p, n, &h, &why) == ZS_HDR_OK && !h.skippable;
}

/* After the last frame at l->pos: zero padding (silent), garbage (a notice in l->msg), or
 * more frames after something that is not one (damage: -EIO).  0 or -errno. */
static int zs_trailing(struct zs_loc *l)
{
	struct trailing t;
	int err = trailing_scan(l->in, l->pos, zs_frame_starts, ZS_HDR_MAX, &t);

	if (err)
		return zs_loc_fail(l, err, "zstd: read error after offset %" PRIu64, l->pos);
	if (t.data_at != TRAILING_NONE)
		return zs_loc_fail(l, -EIO,
				   "zstd: unexpected data at compressed offset %" PRIu64
				   " after frame %" PRIu64
				   ", before more zstd data at offset %" PRIu64
				   " (damaged); the rest of the file is not read",
				   l->pos, l->nframes, t.data_at);
	if (t.first_nonzero == TRAILING_NONE) {
		TFS_DEBUG("zstd: zero padding after the last frame at offset %" PRIu64, l->pos);
		return 0;
	}
	trailing_note(l->msg, sizeof(l->msg), "zstd", l->in, l->pos);
	l->level = TFS_LOG_NOTICE;
	return 0;
}

/* Hops the block headers of the frame at fd->coff to find its end, without decoding.  Sets
 * fd->end, or on damage leaves it unknown and makes the next zs_loc_next() fail: the frame's
 * decoder usually tells first what is wrong, and better. */
void zs_loc_blocks(struct zs_loc *l, struct zs_fdesc *fd)
{
	uint8_t b[ZS_HDR_MAX];
	struct zs_hdr h;
	const char *why = "";
	uint64_t pos;
	ssize_t n;
	int r;

	n = src_pread(l->in, b, sizeof(b), fd->coff);
	if (n < 0) {
		l->broken = zs_loc_fail(l, (int)n, "zstd: read error at offset %" PRIu64, fd->coff);
		return;
	}
	r = zs_hdr_parse(b, (size_t)n, &h, &why);
	if (r != ZS_HDR_OK) {
		l->broken = zs_loc_fail(
		    l, -EIO, "zstd: frame %" PRIu64 " at compressed offset %" PRIu64 ": %s",
		    fd->number, fd->coff,
		    r == ZS_HDR_SHORT ? "the file ends in its header (truncated)" : why);
		return;
	}
	for (pos = fd->coff + h.size;;) {
		uint32_t bh, bsize, type;

		n = src_pread(l->in, b, 3, pos);
		if (n < 0) {
			l->broken =
			    zs_loc_fail(l, (int)n, "zstd: read error at offset %" PRIu64, pos);
			return;
		}
		if (n < 3)
			goto truncated;
		bh = (uint32_t)b[0] | (uint32_t)b[1] << 8 | (uint32_t)b[2] << 16;
		type = (bh >> 1) & 3;
		bsize = bh >> 3;
		if (type == 3 || bsize > ZS_BLOCK_MAX) {
			l->broken =
			    zs_loc_fail(l, -EIO,
					"zstd: frame %" PRIu64 " at compressed offset %" PRIu64
					": invalid block header at offset %" PRIu64 " (corrupt)",
					fd->number, fd->coff, pos);
			return;
		}
		pos += 3 + (type == 1 ? 1 : bsize);
		if (bh & 1)
			break;
	}
	if (h.checksum)
		pos += 4;
	r = zs_exists(l->in, pos - 1);
	if (r < 0) {
		l->broken = zs_loc_fail(l, r, "zstd: read error at offset %" PRIu64, pos - 1);
		return;
	}
	if (r == 0)
		goto truncated;
	fd->end = pos;
	l->pos = pos;
	return;
truncated:
	l->broken = zs_loc_fail(l, -EIO,
				"zstd: frame %" PRIu64 " at compressed offset %" PRIu64
				": the file ends inside it (truncated)",
				fd->number, fd->coff);
}

/* Up to 8 bytes at l->pos into b: how many, or -errno (failed, with its message). */
static ssize_t zs_loc_peek(struct zs_loc *l, uint8_t b[8])
{
	ssize_t n = src_pread(l->in, b, 8, l->pos);

	if (n < 0)
		return zs_loc_fail(l, (int)n, "zstd: read error at offset %" PRIu64, l->pos);
	return n;
}

/* The next frame from the seek table. */
static int zs_loc_table(struct zs_loc *l, struct zs_fdesc *fd)
{
	const struct zs_table *t = l->tab;

	while (l->tix < t->n) {
		uint32_t csize = zs_tab_csize(t, l->tix), dsize = zs_tab_dsize(t, l->tix);
		uint8_t b[8];
		ssize_t n = zs_loc_peek(l, b);

		if (n < 0)
			return (int)n;
		if (n >= 4 && le32(b) == ZS_MAGIC) {
			fd->number = ++l->nframes;
			fd->coff = l->pos;
			fd->end = l->pos + csize;
			fd->dsize = dsize;
			fd->tix = l->tix;
			fd->from_table = true;
			fd->has_sum = t->sums;
			fd->sum = zs_tab_sum(t, l->tix);
			l->pos += csize;
			l->tix++;
			return 1;
		}
		if (n == 8 && (le32(b) & ZS_SKIP_MASK) == ZS_SKIP_MAGIC) {
			if ((uint64_t)le32(b + 4) + 8 != csize || dsize)
				return zs_loc_fail(l, -EIO,
						   "zstd: the skippable frame at offset %" PRIu64
						   " does not match seek table entry %" PRIu64,
						   l->pos, l->tix + 1);
			l->pos += csize;
			l->tix++;
			continue;
		}
		if (l->dec)
			return zs_loc_fail(l, -EIO,
					   "zstd: decoder: no frame at compressed offset %" PRIu64
					   " (damaged, or the index does not match the file)",
					   l->pos);
		return zs_loc_fail(l, -EIO,
				   n < 8 ? "zstd: the file ends at offset %" PRIu64
					   ", where seek table entry %" PRIu64 " starts (truncated)"
					 : "zstd: no frame at offset %" PRIu64
					   ", where seek table entry %" PRIu64 " starts (damaged)",
				   l->pos, l->tix + 1);
	}
	if (!l->nframes && !l->dec)
		return zs_loc_fail(l, -EIO, "zstd: the seek table lists no zstd frame");
	return 0;
}

/* True if p[0..n) (0 < n < 4) starts a frame's or a skippable frame's magic number. */
static bool zs_magic_prefix(const uint8_t *p, size_t n)
{
	static const uint8_t zm[4] = {0x28, 0xB5, 0x2F, 0xFD}, sm[4] = {0x50, 0x2A, 0x4D, 0x18};

	return memcmp(p, zm, n) == 0 ||
	       ((p[0] & 0xF0) == 0x50 && memcmp(p + 1, sm + 1, n - 1) == 0);
}

/* True if p[0..4) is a frame's magic number with one byte changed: after the last frame, that is
 * a damaged frame, not garbage (it would hide the frame). */
static bool zs_near_magic(const uint8_t *p)
{
	static const uint8_t zm[4] = {0x28, 0xB5, 0x2F, 0xFD};
	int diff = 0;

	for (int i = 0; i < 4; i++)
		diff += p[i] != zm[i];
	return diff == 1;
}

/* The next zstd frame: 1 with *fd set, 0 at the end of the frames (msg may hold a notice), or
 * -errno (msg says what is wrong).  blocks: find the frame's end by walking its blocks (else
 * fd->end is known only from a seek table, and the caller moves l->pos past the frame). */
int zs_loc_next(struct zs_loc *l, bool blocks, struct zs_fdesc *fd)
{
	memset(fd, 0, sizeof(*fd));
	fd->end = fd->dsize = fd->tix = ZS_UNKNOWN;
	if (l->broken)
		return l->broken;
	l->msg[0] = '\0';
	if (l->tab)
		return zs_loc_table(l, fd);
	for (;;) {
		uint8_t b[8];
		ssize_t n = zs_loc_peek(l, b);

		if (n < 0)
			return (int)n;
		if (n >= 4 && le32(b) == ZS_MAGIC) {
			fd->number = ++l->nframes;
			fd->coff = l->pos;
			if (blocks)
				zs_loc_blocks(l, fd);
			return 1;
		}
		if (n >= 4 && (le32(b) & ZS_SKIP_MASK) == ZS_SKIP_MAGIC) {
			uint64_t next = l->pos + 8 + (n == 8 ? le32(b + 4) : 0);
			int r = n == 8 ? zs_exists(l->in, next - 1) : 0;

			if (r < 0)
				return zs_loc_fail(l, r, "zstd: read error at offset %" PRIu64,
						   next - 1);
			if (r == 0)
				return zs_loc_fail(
				    l, -EIO,
				    "zstd: the file ends inside the skippable frame at "
				    "offset %" PRIu64 " (truncated)",
				    l->pos);
			l->pos = next;
			l->seen = true;
			continue;
		}
		if (l->dec)
			return n == 0 ? 0
				      : zs_loc_fail(
					    l, -EIO,
					    "zstd: decoder: no frame at compressed offset %" PRIu64
					    " (damaged, or the index does not match the file)",
					    l->pos);
		if (n >= (l->nframes ? 2 : 1) && n < 4 && zs_magic_prefix(b, (size_t)n))
			return zs_loc_fail(
			    l, -EIO,
			    "zstd: the file ends inside the magic number at compressed "
			    "offset %" PRIu64 " (truncated)",
			    l->pos);
		if (l->nframes == 0) {
			if (n == 0)
				return zs_loc_fail(l, -EIO,
						   l->pos ? "zstd: no zstd frame in the file, only "
							    "skippable frames"
							  : "zstd: the file is empty");
			return zs_loc_fail(l, -EIO,
					   l->seen
					       ? "zstd: no zstd frame after the skippable frames "
						 "(offset %" PRIu64 ")"
					       : "zstd: not zstd data at offset %" PRIu64,
					   l->pos);
		}
		if (n == 0)
			return 0;
		if (n >= 4 && zs_near_magic(b))
			return zs_loc_fail(l, -EIO,
					   "zstd: the data at compressed offset %" PRIu64
					   " after frame %" PRIu64
					   " looks like a frame with a damaged "
					   "magic number; the rest of the file is not read",
					   l->pos, l->nframes);
		return zs_trailing(l);
	}
}

/* ---- Decoding frames: shared by the scan and by decoders ----------------------------------- */

/* Decoders' contexts and input buffers kept for the next decoder.  The reader starts a decoder
 * per chunk it reads at random (seek/reader.c) -- a shadow's frame per small file -- and a
 * fresh ZSTD_DCtx allocates its window buffers again at its first frame: in fresh memory, a
 * page fault per 4 KiB, 10-40 us each on the VMs this project is measured on.  Kept: at most
 * ZS_KEEP of them, each holding at most ZS_KEEP_DCTX_MAX (a context sized by a frame with a
 * large window is freed, not kept).  One lock, taken alone. */
#define ZS_KEEP 4
#define ZS_KEEP_DCTX_MAX ((size_t)4 << 20)

static struct {
	pthread_mutex_t lock;
	size_t n;
	ZSTD_DCtx *dctx[ZS_KEEP];
	uint8_t *buf[ZS_KEEP];
} zs_kept = {.lock = PTHREAD_MUTEX_INITIALIZER};

/* A kept context and buffer (of ZS_DEC_INBUF bytes) into fr, if there is one. */
static bool zs_fr_reuse(struct zs_fr *fr)
{
	bool got = false;

	pthread_mutex_lock(&zs_kept.lock);
	if (zs_kept.n) {
		zs_kept.n--;
		fr->dctx = zs_kept.dctx[zs_kept.n];
		fr->in.buf = zs_kept.buf[zs_kept.n];
		got = true;
	}
	pthread_mutex_unlock(&zs_kept.lock);
	return got;
}

int zs_fr_init(struct zs_fr *fr, struct src *in, size_t inbuf_size, const char *who)
{
	ZSTD_bounds wb = ZSTD_dParam_getBounds(ZSTD_d_windowLogMax);
	int wlog = ZS_WINDOW_LOG_MAX;
	size_t ret;

	memset(fr, 0, sizeof(*fr));
	fr->who = who;
	incur_init(&fr->in, in, NULL, inbuf_size, 0);
	if (inbuf_size == ZS_DEC_INBUF && zs_fr_reuse(fr))
		return 0; /* its parameters are those set below */
	fr->in.buf = malloc(inbuf_size);
	fr->dctx = ZSTD_createDCtx();
	if (!fr->in.buf || !fr->dctx)
		return -ENOMEM;
	if (!ZSTD_isError(wb.error) && wb.upperBound < wlog)
		wlog = wb.upperBound;
	ret = ZSTD_DCtx_setParameter(fr->dctx, ZSTD_d_windowLogMax, wlog);
	return liberr_zstd(ret);
}

void zs_fr_fini(struct zs_fr *fr)
{
	bool kept = false;

	if (fr->dctx && fr->in.buf && fr->in.cap == ZS_DEC_INBUF &&
	    ZSTD_sizeof_DCtx(fr->dctx) <= ZS_KEEP_DCTX_MAX) {
		pthread_mutex_lock(&zs_kept.lock);
		if (zs_kept.n < ZS_KEEP) {
			zs_kept.dctx[zs_kept.n] = fr->dctx;
			zs_kept.buf[zs_kept.n] = fr->in.buf;
			zs_kept.n++;
			kept = true;
		}
		pthread_mutex_unlock(&zs_kept.lock);
	}
	if (!kept) {
		ZSTD_freeDCtx(fr->dctx);
		free(fr->in.buf);
	}
	fr->dctx = NULL;
	fr->in.buf = NULL;
}

__attribute__((format(printf, 3, 4))) static int zs_fr_fail(struct zs_fr *fr, int err,
							    const char *fmt, ...);

/* Records err (sticky) and a message naming the frame, for the caller to log. */
static int zs_fr_fail(struct zs_fr *fr, int err, const char *fmt, ...)
{
	va_list ap;
	int n;

	n = snprintf(fr->msg, sizeof(fr->msg),
		     "zstd: %sframe %" PRIu64 " at compressed offset %" PRIu64 ": ", fr->who,
		     fr->fd.number, fr->fd.coff);
	if (n < 0 || (size_t)n >= sizeof(fr->msg))
		n = 0;
	va_start(ap, fmt);
	vsnprintf(fr->msg + n, sizeof(fr->msg) - (size_t)n, fmt, ap);
	va_end(ap);
	fr->err = err;
	return err;
}

/* Starts decoding the zstd frame fd: checks its header (window, dictionary, sizes).  0 or
 * -errno (msg set). */
int zs_fr_start(struct zs_fr *fr, const struct zs_fdesc *fd)
{
	uint8_t b[ZS_HDR_MAX];
	const char *why = "";
	size_t ret;
	ssize_t n;
	int r;

	fr->fd = *fd;
	fr->out = 0;
	fr->held = fr->done = false;
	fr->stalls = 0;
	fr->err = 0;
	fr->msg[0] = '\0';
	/* the header from the input buffer, filled now from the frame's start (a frame whose
	 * end is known, up to the buffer's size, is then read in one pread: a shadow's frame read
	 * at random was six reads, each a system call); else from a read of its own */
	incur_seek(&fr->in, fd->coff, fd->end);
	n = incur_fill(&fr->in);
	if (n >= (ssize_t)sizeof(b)) {
		memcpy(b, incur_ptr(&fr->in), sizeof(b));
	} else {
		n = src_pread(fr->in.src, b, sizeof(b), fd->coff);
		if (n < 0)
			return zs_fr_fail(fr, (int)n, "read error");
	}
	r = zs_hdr_parse(b, (size_t)n, &fr->hdr, &why);
	if (r == ZS_HDR_SHORT)
		return zs_fr_fail(fr, -EIO, "the file ends in its header (truncated)");
	if (r == ZS_HDR_NOT_ZSTD || fr->hdr.skippable)
		return zs_fr_fail(fr, -EIO,
				  "no zstd frame here (damaged, or the index does not "
				  "match the file)");
	if (r == ZS_HDR_BAD)
		return zs_fr_fail(fr, -EIO, "%s", why);
	if (fr->hdr.window > (uint64_t)1 << ZS_WINDOW_LOG_MAX)
		return zs_fr_fail(
		    fr, -EIO,
		    "decoding needs a window of %" PRIu64
		    " MiB, more than the %u MiB allowed; refusing (hostile or unusual "
		    "file)",
		    fr->hdr.window >> 20, 1u << (ZS_WINDOW_LOG_MAX - 20));
	if (fr->hdr.dict_id)
		return zs_fr_fail(fr, -EIO,
				  "needs dictionary %" PRIu32 ", which tarseek does not have",
				  fr->hdr.dict_id);
	if (fd->dsize != ZS_UNKNOWN && fr->hdr.content != ZS_UNKNOWN &&
	    fd->dsize != fr->hdr.content)
		return zs_fr_fail(
		    fr, -EIO, "its header says %" PRIu64 " decoded bytes, the seek table %" PRIu64,
		    fr->hdr.content, fd->dsize);
	if (fd->end != ZS_UNKNOWN && fd->end < fd->coff + fr->hdr.size)
		return zs_fr_fail(fr, -EIO, "shorter than its header (%s)",
				  fd->from_table ? "seek table" : "block headers");
	fr->est = fr->hdr.window;
	if (fr->hdr.content < fr->est)
		fr->est = fr->hdr.content;
	fr->est += 2 * ZS_BLOCK_MAX;
	fr->check_sum = fd->has_sum && !fr->hdr.checksum;
	if (fr->check_sum)
		XXH64_reset(&fr->xxh, 0);
	ret = ZSTD_DCtx_reset(fr->dctx, ZSTD_reset_session_only);
	if (ZSTD_isError(ret))
		return zs_fr_fail(fr, liberr_zstd(ret), "%s", ZSTD_getErrorName(ret));
	return 0;
}

/* libzstd says the frame is complete (and checked its own checksum): the checks of ours. */
static int zs_fr_end(struct zs_fr *fr)
{
	uint64_t at = incur_pos(&fr->in);

	if (fr->fd.end != ZS_UNKNOWN && at != fr->fd.end)
		return zs_fr_fail(fr, -EIO,
				  "it ends at offset %" PRIu64 ", not at %" PRIu64 " (%s)", at,
				  fr->fd.end, fr->fd.from_table ? "seek table" : "block headers");
	if (fr->fd.dsize != ZS_UNKNOWN && fr->out != fr->fd.dsize)
		return zs_fr_fail(fr, -EIO,
				  "it decodes to %" PRIu64 " bytes, the seek table says %" PRIu64,
				  fr->out, fr->fd.dsize);
	if (fr->check_sum) {
		uint32_t sum = (uint32_t)XXH64_digest(&fr->xxh);

		if (sum != fr->fd.sum)
			return zs_fr_fail(fr, -EIO,
					  "checksum mismatch: the seek table says %08" PRIx32
					  ", the data gives %08" PRIx32,
					  fr->fd.sum, sum);
	}
	fr->done = true;
	return 0;
}

/* Decodes up to len bytes of the frame into out: > 0, 0 once the frame has ended and passed
 * every check, or -errno (msg set).  The last byte decoded is held back until the frame is
 * known to go on, so the call that returns a frame's last byte is the one that verified it.
 * Bytes decoded before an error are returned first, except the last one.  ZSTD_decompressStream
 * reports no progress at all when it fails (it returns before writing the positions back), so
 * each call is asked for one block's worth (ZS_STEP): a failure then loses at most the block in
 * hand, and the offset in the message is that of its input. */
ssize_t zs_fr_read(struct zs_fr *fr, uint8_t *out, size_t len)
{
	size_t pos = 0;

	if (fr->err)
		return fr->err;
	if (!len)
		return 0;
	if (fr->done) {
		if (!fr->held)
			return 0;
		out[0] = fr->hold; /* verified: the frame ended after it */
		fr->held = false;
		return 1;
	}
	for (;;) {
		ZSTD_outBuffer o;
		ZSTD_inBuffer i;
		uint8_t scratch;
		size_t ret, got, used;
		ssize_t avail;
		bool ahead;

		if (fr->held && pos == 0) {
			out[0] = fr->hold;
			fr->held = false;
			pos = 1;
		}
		/* With only the held byte in out, decode one byte ahead to learn its fate. */
		ahead = pos == len;
		o = ahead ? (ZSTD_outBuffer){&scratch, 1, 0}
			  : (ZSTD_outBuffer){out, len - pos > ZS_STEP ? pos + ZS_STEP : len, pos};
		avail = incur_fill(&fr->in);
		if (avail < 0) {
			zs_fr_fail(fr, (int)avail, "read error at compressed offset %" PRIu64,
				   incur_pos(&fr->in));
			break;
		}
		i = (ZSTD_inBuffer){fr->in.buf, fr->in.len, fr->in.pos};
		ret = ZSTD_decompressStream(fr->dctx, &o, &i);
		used = i.pos - fr->in.pos;
		fr->in.pos = i.pos;
		got = ahead ? o.pos : o.pos - pos;
		if (got && fr->check_sum)
			XXH64_update(&fr->xxh, ahead ? &scratch : out + pos, got);
		fr->out += got;
		if (fr->hdr.content != ZS_UNKNOWN && fr->out > fr->hdr.content) {
			/* libzstd checks this only at the frame's end, and a DCtx whose buffer
			 * an earlier, larger frame sized decodes past it where a fresh one
			 * fails: a frame cut short would keep bytes a decoder cannot give */
			zs_fr_fail(fr, -EIO,
				   "it decodes past the %" PRIu64 " bytes its header states",
				   fr->hdr.content);
			break;
		}
		if (ZSTD_isError(ret)) {
			zs_fr_fail(fr, liberr_zstd(ret),
				   "%s, near compressed offset %" PRIu64 ", after %" PRIu64
				   " decoded bytes",
				   ZSTD_getErrorName(ret), incur_pos(&fr->in), fr->out);
			if (!ahead)
				pos = o.pos;
			break;
		}
		if (!ahead)
			pos = o.pos;
		if (ret == 0) {
			if (zs_fr_end(fr))
				break;
			if (ahead && got) { /* the frame's last byte, verified: the next call's */
				fr->hold = scratch;
				fr->held = true;
			}
			return (ssize_t)pos;
		}
		if (ahead && got) {
			fr->hold = scratch;
			fr->held = true;
			return (ssize_t)pos;
		}
		if (pos == len && !ahead) {
			fr->hold = out[len - 1];
			fr->held = true;
			if (--pos)
				return (ssize_t)pos;
			continue;
		}
		if (used || got) {
			fr->stalls = 0;
			continue;
		}
		if (avail == 0) {
			if (fr->in.src_short || fr->fd.end == ZS_UNKNOWN) {
				fr->truncated = fr->in.src_short;
				zs_fr_fail(fr, -EIO,
					   "the file ends inside it (truncated), after %" PRIu64
					   " decoded bytes",
					   fr->out);
			} else
				zs_fr_fail(fr, -EIO,
					   "its data runs past offset %" PRIu64
					   ", where the %s says it ends",
					   fr->fd.end,
					   fr->fd.from_table ? "seek table" : "block walk");
			break;
		}
		if (++fr->stalls > 4) {
			zs_fr_fail(fr, -EIO, "the decoder does not progress");
			break;
		}
	}
	/* failed: the last byte decoded may be the frame's last, unverified; keep it back --
	 * unless the file merely ends here (no sign of damage: all of it is returned, trusted,
	 * as zstd -dc writes it out) */
	fr->held = false;
	if (fr->truncated && pos > 0)
		return (ssize_t)pos;
	if (pos > 1)
		return (ssize_t)(pos - 1);
	return fr->err;
}
