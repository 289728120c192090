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
 * Files: gzip.c (this one) holds the format, the decoders and the codec tables; gzip_scan.c the
 * indexing scan (and how it keeps zlib busy: its own opening paragraph); gzip_in.c the
 * compressed side both read through (a cursor, member headers and trailers, inflating from the
 * cursor); gzip_sparse.c the sparse windows; inflater.c zlib or ISA-L behind one interface.  A
 * decoder holds about 110 KiB: its 64 KiB input buffer, zlib's state and the 32 KiB window.
 */
#include "codecs/codec.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "codecs/gzip/gzip_ckpt.h"
#include "codecs/gzip/gzip_int.h"

_Static_assert(GZ_DEC_INBUF >= GZ_WINSIZE, "a decoder unpacks its window into its input buffer");

static bool gz_probe(const uint8_t *head, size_t len)
{
	return len >= 3 && head[0] == 0x1f && head[1] == 0x8b && head[2] == 8;
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
	.scan_new = gz_deflate_scan_new,
	.scan_read = gz_scan_read,
	.scan_verified = gz_scan_verified,
	.scan_free = gz_scan_free,
	.dec_new = deflate_dec_new,
	.dec_read = gz_dec_read,
	.dec_memory = gz_dec_memory,
	.dec_free = gz_dec_free,
};
