/* gzip codec: sequential scan with zran-style checkpoints, and decoders that resume at them.
 *
 * A deflate stream cannot be entered in the middle: a block's codes refer to up to 32 KiB of
 * output before it, and blocks start at arbitrary bit positions.  So the scan (the one
 * indexing pass) inflates the whole file with zlib and, every opts->spacing decompressed
 * bytes, stops at the next deflate block boundary (inflate with Z_BLOCK until
 * (data_type & 0xC0) == 0x80: at a block boundary, not after the last block) and records
 * where it is: the compressed byte offset, the number of bits of the previous byte not yet
 * consumed, and the 32 KiB of output that precede (inflateGetDictionary).  A decoder resumes
 * there with a raw inflater (windowBits -15): inflatePrime() feeds it the leftover bits,
 * inflateSetDictionary() the window, and reading continues at the byte offset.  This is the
 * technique of zlib's examples/zran.c.  The window is what makes a checkpoint expensive
 * (32 KiB against a few dozen bytes of offsets), so it is made sparse and stored compressed:
 * the bytes the next 32 KiB of output never copy are zeroed (gzip_sparse.c finds them: a
 * tenth of the window is kept on text, a third on binaries), then deflate level 1 packs it
 * to about 3 KiB on average for a backup of /usr (12 KiB when windows were whole), and a
 * decoder inflates it back in a fraction of the time.  A member of
 * a multi-member file (cat a.gz b.gz, pigz, BGZF) starts with an empty window, so a
 * checkpoint at a member start costs no aux blob at all; the scan puts one at each member
 * start once spacing bytes have passed since the last checkpoint.
 *
 * Checkpoint fields for gzip:
 *   uoff   decompressed offset, counted across all members;
 *   coff   flags & GZ_CK_MEMBER: offset of the first byte of a member header (bits is 0);
 *          otherwise: offset of the first compressed byte not yet (even partly) consumed;
 *   bits   0..7: the top `bits` bits of the byte at coff - 1 are the first deflate bits to
 *          read (0: decoding starts on a byte boundary at coff);
 *   flags  GZ_CK_MEMBER (1): coff is a member header; no window, no aux;
 *   extra  length of the window in bytes (0..32768): the decompressed bytes of the same
 *          member just before uoff (shorter than 32 KiB near the start of a member);
 *   clen   0 (unused);
 *   aux    the window (extra bytes) as a zlib stream (RFC 1950, level 1, so its Adler-32
 *          checks the blob when it is read back); none when extra is 0.  Bytes of it that
 *          nothing after the checkpoint copies may be 0 (indexes before 2026-12 have whole
 *          windows; decoders take either).
 * uoff 0 is always a member checkpoint at coff 0: the scan reads the file from its start.
 *
 * Integrity: the scan checks every header (magic, method, reserved flags, FHCRC), every
 * member's CRC-32 and ISIZE, and treats an inflate error or a file that ends inside a member
 * as an error (logged with the compressed offset; scan_read fails with -EIO from then on).
 * scan_verified tells the end of the last member that passed -- or, when the file merely
 * ends early with no sign of damage, everything decoded (a half-finished copy).  After the last member,
 * zeros are ignored silently and anything else that does not start with the gzip magic is
 * ignored with a notice (tape padding, appended signatures); a second magic followed by a
 * bad header is an error, not garbage.  Decoders do not check CRCs: they start in the middle
 * of a member, and what they return was verified by the scan and is checked again by the
 * index's segment CRCs.  They do fail with -EIO on an inflate error or a truncated file.
 *
 * Raw deflate ("deflate", for zip entries): the same scan and decoders without gzip's framing:
 * no header, no trailer, one deflate stream; checkpoint 0 is a plain one at coff 0 with no
 * window.  Nothing in the stream checks it (a zip keeps the CRC-32 in its directory: the
 * index checks it), so everything decoded counts as verified.
 *
 * Speed: the scan is the first-mount hot path, and zlib's inflate (~350 MB/s out here) is its
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
 * through one buffer of its own otherwise.  A decoder holds about 110 KiB: its 64 KiB input
 * buffer, zlib's state and the 32 KiB window.
 */
#include "codecs/codec.h"

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
#include "codecs/gzip/inflater.h"
#include "codecs/liberr.h"
#include "codecs/pipeline.h"
#include "codecs/trailing.h"

#define GZ_WINSIZE INFL_WINSIZE		/* deflate's window */
#define GZ_SCAN_INBUF (256u << 10)	/* compressed bytes the scan reads at once */
#define GZ_DEC_INBUF (64u << 10)	/* compressed bytes a decoder reads at once */
#define GZ_QBUF (1u << 20)		/* decompressed bytes per scan buffer */
#define GZ_QLEN 4			/* scan buffers when a worker thread inflates */
#define GZ_DIRECT_MIN (64u << 10)	/* inline: inflate straight into reads this big */
#define GZ_NAME_MAX 4096		/* longer FNAMEs are dropped */
#define GZ_DEFAULT_SPACING (1ull << 20) /* when opts->spacing is 0 */
#define GZ_FALLBACKS_MAX 2		/* ISA-L hunts that fail before zlib inflates the rest */

/* Header flags (RFC 1952). */
#define GZ_FHCRC 0x02
#define GZ_FEXTRA 0x04
#define GZ_FNAME 0x08
#define GZ_FCOMMENT 0x10
#define GZ_FRESERVED 0xe0

_Static_assert(GZ_DEC_INBUF >= GZ_WINSIZE, "a decoder unpacks its window into its input buffer");
_Static_assert(GZ_QBUF <= UINT_MAX, "zlib and ISA-L count in 32 bits");

static bool gz_probe(const uint8_t *head, size_t len)
{
	return len >= 3 && head[0] == 0x1f && head[1] == 0x8b && head[2] == 8;
}

/* ---- Compressed input ------------------------------------------------------------------ */

/* A window on the compressed file.  next / avail are the cursor: the inflater advances them
 * (gz_inflate), and so do the header and trailer readers below. */
struct gz_in {
	struct src *src;
	const uint8_t *next;
	size_t avail;
	uint8_t *buf;
	size_t cap;
	size_t len;   /* bytes in buf */
	uint64_t off; /* file offset of buf[0] */
};

static void gz_in_init(struct gz_in *in, struct src *src, uint8_t *buf, size_t cap, uint64_t off)
{
	in->src = src;
	in->buf = buf;
	in->cap = cap;
	in->len = 0;
	in->off = off;
	in->next = buf;
	in->avail = 0;
}

/* File offset of the next unread byte. */
static uint64_t gz_in_pos(const struct gz_in *in)
{
	return in->off + (uint64_t)(in->next - in->buf);
}

/* Moves the cursor to file offset pos: within the buffer, or the next fill reads there. */
static void gz_in_seek(struct gz_in *in, uint64_t pos)
{
	if (pos >= in->off && pos <= in->off + in->len) {
		in->next = in->buf + (pos - in->off);
		in->avail = in->len - (size_t)(pos - in->off);
		return;
	}
	in->off = pos;
	in->len = 0;
	in->next = in->buf;
	in->avail = 0;
}

/* Refills the buffer once it is used up.  Returns the bytes available, 0 at the end of the
 * source, or -errno (logged). */
static ssize_t gz_in_fill(struct gz_in *in)
{
	ssize_t n;

	if (in->avail)
		return (ssize_t)in->avail;
	in->off += in->len;
	in->len = 0;
	in->next = in->buf;
	n = src_pread(in->src, in->buf, in->cap, in->off);
	if (n < 0) {
		tfs_log(TFS_LOG_ERR, "gzip: read error at compressed offset %llu: %s",
			(unsigned long long)in->off, strerror((int)-n));
		return n;
	}
	in->len = (size_t)n;
	in->avail = (size_t)n;
	return n;
}

/* One byte: 1, 0 at the end of the source, or -errno.  *crc (if not NULL) takes it in. */
static int gz_in_byte(struct gz_in *in, uint8_t *b, uLong *crc)
{
	if (!in->avail) {
		ssize_t n = gz_in_fill(in);
		if (n <= 0)
			return (int)n;
	}
	*b = *in->next++;
	in->avail--;
	if (crc)
		*crc = crc32(*crc, b, 1);
	return 1;
}

/* Skips n bytes: 1, 0 if the source ends first, or -errno.  *crc takes them in. */
static int gz_in_skip(struct gz_in *in, size_t n, uLong *crc)
{
	while (n) {
		if (!in->avail) {
			ssize_t r = gz_in_fill(in);
			if (r <= 0)
				return (int)r;
		}
		size_t k = in->avail < n ? in->avail : n;
		*crc = crc32(*crc, in->next, (uInt)k);
		in->next += k;
		in->avail -= k;
		n -= k;
	}
	return 1;
}

/* Called on a first byte that does not start a member, after the last member: zeros up to
 * the end are padding; anything else is noted (unless quiet) and ignored.  Returns 0 (the
 * end of the data) or -errno. */
static int gz_trailing(struct gz_in *in, uint64_t at, bool quiet)
{
	struct trailing t;
	char note[160];
	int err;

	if (quiet)
		return 0;
	err = trailing_scan(in->src, at, NULL, 0, &t);
	if (err) {
		tfs_log(TFS_LOG_ERR, "gzip: read error after compressed offset %llu: %s",
			(unsigned long long)at, strerror(-err));
		return err;
	}
	if (t.first_nonzero == TRAILING_NONE) {
		TFS_DEBUG("gzip: zero padding after the last member at compressed offset %llu",
			  (unsigned long long)at);
		return 0;
	}
	trailing_note(note, sizeof(note), "gzip", in->src, at);
	tfs_log(TFS_LOG_NOTICE, "%s", note);
	return 0;
}

/* Reads a member header at the cursor.  first: a member must start here (the start of the
 * file, or a member checkpoint), so anything else is an error rather than the end.
 * name/namecap: where to store FNAME (NUL-terminated; "" if absent or too long), or NULL.
 * Returns 1 with the header consumed, 0 if no member follows (end of source, padding,
 * trailing garbage), or -errno: -EIO, logged, for a truncated or invalid header. */
static int gz_member_start(struct gz_in *in, bool first, bool quiet, char *name, size_t namecap)
{
	uint64_t at = gz_in_pos(in);
	uLong crc = crc32(0, NULL, 0);
	const char *what = "truncated header";
	uint8_t h[10], b;
	size_t nlen = 0;
	int r, i;

	if (name && namecap)
		name[0] = '\0';
	r = gz_in_byte(in, &h[0], &crc);
	if (r < 0)
		return r;
	if (r == 0 && !first)
		return 0;
	if (r == 0) {
		what = "end of file instead of a gzip header";
		goto bad;
	}
	if (h[0] != 0x1f && !first)
		return gz_trailing(in, at, quiet);
	r = gz_in_byte(in, &h[1], &crc);
	if (r <= 0)
		goto eof;
	if (h[0] != 0x1f || h[1] != 0x8b) {
		if (!first)
			return gz_trailing(in, at, quiet);
		what = "not a gzip header";
		goto bad;
	}
	for (i = 2; i < 10; i++) {
		r = gz_in_byte(in, &h[i], &crc);
		if (r <= 0)
			goto eof;
	}
	if (h[2] != 8) {
		what = "unknown compression method";
		goto bad;
	}
	if (h[3] & GZ_FRESERVED) {
		what = "reserved header flags set";
		goto bad;
	}
	if (h[3] & GZ_FEXTRA) {
		uint8_t x[2];
		for (i = 0; i < 2; i++) {
			r = gz_in_byte(in, &x[i], &crc);
			if (r <= 0)
				goto eof;
		}
		r = gz_in_skip(in, (size_t)x[0] | (size_t)x[1] << 8, &crc);
		if (r <= 0)
			goto eof;
	}
	if (h[3] & GZ_FNAME) {
		do {
			r = gz_in_byte(in, &b, &crc);
			if (r <= 0)
				goto eof;
			if (name && nlen < namecap)
				name[nlen] = (char)b;
			nlen++;
		} while (b);
		if (name && nlen > namecap) {
			name[0] = '\0';
			tfs_log(TFS_LOG_INFO, "gzip: ignoring a stored file name of %zu bytes",
				nlen);
		}
	}
	if (h[3] & GZ_FCOMMENT) {
		do {
			r = gz_in_byte(in, &b, &crc);
			if (r <= 0)
				goto eof;
		} while (b);
	}
	if (h[3] & GZ_FHCRC) {
		uint8_t c[2];
		uLong want = crc & 0xffff;
		for (i = 0; i < 2; i++) {
			r = gz_in_byte(in, &c[i], NULL);
			if (r <= 0)
				goto eof;
		}
		if (((uLong)c[0] | (uLong)c[1] << 8) != want) {
			what = "header CRC mismatch";
			goto bad;
		}
	}
	return 1;
eof:
	if (r < 0)
		return r;
bad:
	tfs_log(TFS_LOG_ERR, "gzip: %s in the member at compressed offset %llu", what,
		(unsigned long long)at);
	return -EIO;
}

/* Messages name the member by its header's offset ("member at N"); a decoder that started
 * inside a member knows only an offset in it ("member containing N"). */
struct gz_where {
	const char *who; /* "" for the scan, "decoder: " */
	const char *rel; /* "at", "containing" */
	uint64_t off;
};

/* Reads a member's 8-byte trailer.  1, or -errno (-EIO, logged, if the file ends first). */
static int gz_trailer(struct gz_in *in, const struct gz_where *w, uint8_t t[8])
{
	int i, r;

	for (i = 0; i < 8; i++) {
		r = gz_in_byte(in, &t[i], NULL);
		if (r < 0)
			return r;
		if (r == 0) {
			tfs_log(TFS_LOG_ERR, "gzip: %sfile ends in the trailer (member %s %llu)",
				w->who, w->rel, (unsigned long long)w->off);
			return -EIO;
		}
	}
	return 1;
}

/* Logs a failed inflate (err: -errno, f says why) or, with err 0, a source that ended inside
 * deflate data.  Returns -errno. */
static int gz_inflate_fail(const struct gz_in *in, const struct gz_where *w,
			   const struct inflater *f, int err)
{
	unsigned long long at = gz_in_pos(in), off = w->off;

	if (err == 0) {
		tfs_log(TFS_LOG_ERR,
			"gzip: %sunexpected end of file at compressed offset %llu (member %s %llu)",
			w->who, at, w->rel, off);
		return -EIO;
	}
	if (err != -EIO) {
		tfs_log(TFS_LOG_ERR, "gzip: %sinflate failed at compressed offset %llu: %s", w->who,
			at, strerror(-err));
		return err;
	}
	tfs_log(TFS_LOG_ERR,
		"gzip: %scorrupt deflate data near compressed offset %llu (member %s %llu): %s",
		w->who, at, w->rel, off, infl_msg(f));
	return -EIO;
}

/* Inflates from the cursor into out[0..room), advancing the cursor; *made: the bytes written.
 * Returns what infl_run does, or -EAGAIN: no progress although there was input and room
 * (never with good data: looping on it would hang).  After INFL_END the cursor is at the
 * first byte after the deflate data; after INFL_BLOCK, *at is the next block's bit offset. */
static int gz_inflate(struct inflater *f, struct gz_in *in, uint8_t *out, size_t room,
		      enum infl_mode mode, size_t *made, uint64_t *at)
{
	struct infl_io io = {.in = in->next, .in_len = in->avail, .in_off = gz_in_pos(in),
			     .out = out, .out_len = room};
	int ret = infl_run(f, &io, mode);
	size_t used = in->avail - io.in_len;

	in->next += used;
	in->avail -= used;
	*made = room - io.out_len;
	*at = io.at;
	if (ret == INFL_END)
		gz_in_seek(in, io.at / 8);
	if (ret == INFL_MORE && !used && !*made && in->avail && room)
		return -EAGAIN;
	return ret;
}

/* A bit offset as a checkpoint has it: the first byte not even partly consumed, and how many
 * of the top bits of the byte before it are still to be read. */
static void gz_bitpos(uint64_t at, uint64_t *coff, uint32_t *bits)
{
	*coff = (at + 7) / 8;
	*bits = (uint32_t)((8 - at % 8) % 8);
}

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

static ssize_t gz_scan_read(struct codec_scan *s, void *buf, size_t len)
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

static uint64_t gz_scan_verified(struct codec_scan *s)
{
	if (s->raw) /* nothing in raw deflate vouches: the container's CRC-32 does */
		return s->uout;
	/* a file that merely ends early (a half-finished copy) vouches for everything decoded
	 * before its end, as gzip -dc and tar -xz do; damage only for the members that passed */
	return s->truncated ? s->uout : s->verified;
}

static const char *gz_scan_name(struct codec_scan *s)
{
	return s->name[0] ? s->name : NULL;
}

static void gz_scan_free(struct codec_scan *s)
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

static int gz_scan_new(struct src *in, const struct codec_opts *opts, const struct codec_sink *sink,
		       struct codec_scan **out)
{
	return gz_scan_start(in, opts, sink, false, out);
}

static int deflate_scan_new(struct src *in, const struct codec_opts *opts,
			    const struct codec_sink *sink, struct codec_scan **out)
{
	return gz_scan_start(in, opts, sink, true, out);
}

/* ---- Decoders ------------------------------------------------------------------------------ */

enum gz_dstate {
	GZ_D_INFLATE,
	GZ_D_NEXT, /* a member's deflate data ended: its trailer, then the next member or the end */
	GZ_D_END,  /* err: 0 at the end of the data, or -errno */
};

struct codec_dec {
	struct inflater *inf;
	struct gz_in in;
	struct gz_where where; /* the current member, for messages */
	enum gz_dstate state;
	int err;
	bool in_end; /* the file has ended: the inflater may still hold output (see gz_produce) */
	bool raw;    /* raw deflate: the stream's end is the end */
	uint8_t inbuf[GZ_DEC_INBUF];
};

static void gz_dec_free(struct codec_dec *d)
{
	if (!d)
		return;
	infl_free(d->inf);
	free(d);
}

static int gz_dec_start(struct src *in, const struct codec_ckpt *ck, const void *aux,
			size_t auxlen, bool raw, struct codec_dec **out)
{
	struct codec_dec *d;
	unsigned value = 0;
	size_t wl = 0;
	int err, r;

	*out = NULL;
	if (ck->bits > 7 || (ck->bits && ck->coff == 0) || ck->extra > GZ_WINSIZE ||
	    ((ck->flags & GZ_CK_MEMBER) && (ck->bits || ck->extra || raw)) || (ck->extra && !aux))
		return -EINVAL;
	d = malloc(sizeof(*d));
	if (!d)
		return -ENOMEM;
	memset(d, 0, offsetof(struct codec_dec, inbuf));
	err = -ENOMEM;
	d->inf = infl_new(infl_default(), false);
	if (!d->inf)
		goto fail;
	d->raw = raw;
	gz_in_init(&d->in, in, d->inbuf, sizeof(d->inbuf), ck->coff);
	d->where = (struct gz_where){"decoder: ", "containing", ck->coff};
	if (ck->flags & GZ_CK_MEMBER)
		d->where.rel = "at";
	d->state = GZ_D_INFLATE;

	if (ck->flags & GZ_CK_MEMBER) {
		r = gz_member_start(&d->in, true, true, NULL, 0);
		if (r < 0) {
			err = r;
			goto fail;
		}
		*out = d;
		return 0;
	}
	if (ck->bits) {
		uint8_t byte;
		err = src_pread_full(in, &byte, 1, ck->coff - 1);
		if (err) {
			tfs_log(TFS_LOG_ERR, "gzip: cannot read compressed offset %llu: %s",
				(unsigned long long)ck->coff - 1, strerror(-err));
			goto fail;
		}
		value = byte >> (8 - ck->bits);
	}
	if (ck->extra) {
		/* The input buffer is empty until the first dec_read: unpack there. */
		wl = GZ_WINSIZE;
		r = infl_unpack(d->inf, aux, auxlen, d->inbuf, &wl);
		if (r == -ENOMEM) {
			err = r;
			goto fail;
		}
		if (r || wl != ck->extra) {
			tfs_log(TFS_LOG_ERR, "gzip: corrupt window for the checkpoint at offset %llu",
				(unsigned long long)ck->uoff);
			err = -EIO;
			goto fail;
		}
	}
	err = infl_resume(d->inf, ck->bits, value, d->inbuf, wl);
	if (err)
		goto fail;
	*out = d;
	return 0;
fail:
	gz_dec_free(d);
	return err;
}

static int gz_dec_new(struct src *in, const struct codec_ckpt *ck, const void *aux, size_t auxlen,
		      struct codec_dec **out)
{
	return gz_dec_start(in, ck, aux, auxlen, false, out);
}

static int deflate_dec_new(struct src *in, const struct codec_ckpt *ck, const void *aux,
			   size_t auxlen, struct codec_dec **out)
{
	return gz_dec_start(in, ck, aux, auxlen, true, out);
}

static ssize_t gz_dec_read(struct codec_dec *d, void *buf, size_t len)
{
	while (len) {
		size_t got;
		uint64_t at;
		int ret, r;

		if (d->state == GZ_D_END)
			return d->err;
		if (d->state == GZ_D_NEXT) {
			uint8_t t[8];
			uint64_t mstart = 0;

			r = gz_trailer(&d->in, &d->where, t);
			if (r > 0) {
				mstart = gz_in_pos(&d->in);
				r = gz_member_start(&d->in, false, true, NULL, 0);
			}
			if (r > 0)
				r = infl_restart(d->inf) ? -ENOMEM : 1;
			if (r <= 0) {
				d->state = GZ_D_END;
				d->err = r;
				continue;
			}
			d->where.rel = "at";
			d->where.off = mstart;
			d->state = GZ_D_INFLATE;
		}
		if (!d->in.avail && !d->in_end) {
			ssize_t n = gz_in_fill(&d->in);
			if (n < 0) {
				d->err = (int)n;
				d->state = GZ_D_END;
				continue;
			}
			d->in_end = n == 0;
		}
		ret = gz_inflate(d->inf, &d->in, buf, len, INFL_RUN, &got, &at);
		if (ret == INFL_END && d->raw) {
			d->state = GZ_D_END;
			d->err = 0;
		} else if (ret == INFL_END) {
			d->state = GZ_D_NEXT;
		} else if (ret == INFL_MORE && !got && d->in_end) { /* nothing more without input */
			d->err = gz_inflate_fail(&d->in, &d->where, d->inf, 0);
			d->state = GZ_D_END;
		} else if (ret < 0) {
			d->err = gz_inflate_fail(&d->in, &d->where, d->inf, ret == -EAGAIN ? -EIO : ret);
			d->state = GZ_D_END;
		}
		if (got)
			return (ssize_t)got;
	}
	return 0;
}

static size_t gz_dec_memory(const struct codec_dec *d)
{
	return sizeof(*d) + infl_memory(d->inf);
}

const struct codec codec_gzip = {
	.name = "gzip",
	.probe = gz_probe,
	.scan_new = gz_scan_new,
	.scan_read = gz_scan_read,
	.scan_verified = gz_scan_verified,
	.scan_name = gz_scan_name,
	.scan_free = gz_scan_free,
	.dec_new = gz_dec_new,
	.dec_read = gz_dec_read,
	.dec_memory = gz_dec_memory,
	.dec_free = gz_dec_free,
};

static bool deflate_probe(const uint8_t *head, size_t len)
{
	return false; /* raw deflate has no magic: only containers name it */
}

const struct codec codec_deflate = {
	.name = "deflate",
	.probe = deflate_probe,
	.scan_new = deflate_scan_new,
	.scan_read = gz_scan_read,
	.scan_verified = gz_scan_verified,
	.scan_free = gz_scan_free,
	.dec_new = deflate_dec_new,
	.dec_read = gz_dec_read,
	.dec_memory = gz_dec_memory,
	.dec_free = gz_dec_free,
};
