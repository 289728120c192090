/* What gzip.c (format, decoders, the codec tables), gzip_in.c (the compressed side) and
 * gzip_scan.c (the indexing scan) share.  The format and the design are described in gzip.c.
 * Nothing here is thread-safe: a cursor, a scan or a decoder is used by one thread at a time.
 */
#ifndef TARSEEK_GZIP_INT_H
#define TARSEEK_GZIP_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "common/source.h"
#include "codecs/codec.h"
#include "codecs/gzip/inflater.h"

#define GZ_WINSIZE INFL_WINSIZE		/* deflate's window */
#define GZ_SCAN_INBUF (256u << 10)	/* compressed bytes the scan reads at once */
#define GZ_DEC_INBUF (64u << 10)	/* compressed bytes a decoder reads at once */
#define GZ_QBUF (1u << 20)		/* decompressed bytes per scan buffer */
#define GZ_QLEN 4			/* scan buffers when a worker thread inflates */
#define GZ_DIRECT_MIN (64u << 10)	/* inline: inflate straight into reads this big */
#define GZ_NAME_MAX 4096		/* longer FNAMEs are dropped */
#define GZ_DEFAULT_SPACING (1ull << 20) /* when opts->spacing is 0 */
#define GZ_FALLBACKS_MAX 2		/* ISA-L hunts that fail before zlib inflates the rest */

/* ---- The compressed side (gzip_in.c) ---- */

/* A window on the compressed file.  next / avail are the cursor: the inflater advances them
 * (gz_inflate), and so do the header and trailer readers. */
struct gz_in {
	struct src *src;
	const uint8_t *next;
	size_t avail;
	uint8_t *buf;
	size_t cap;
	size_t len;   /* bytes in buf */
	uint64_t off; /* file offset of buf[0] */
};

/* Messages name the member by its header's offset ("member at N"); a decoder that started
 * inside a member knows only an offset in it ("member containing N"). */
struct gz_where {
	const char *who; /* "" for the scan, "decoder: " */
	const char *rel; /* "at", "containing" */
	uint64_t off;
};

/* A cursor over buf[0..cap) (not owned) at file offset off, nothing read yet. */
void gz_in_init(struct gz_in *in, struct src *src, uint8_t *buf, size_t cap, uint64_t off);

/* File offset of the next unread byte. */
static inline uint64_t gz_in_pos(const struct gz_in *in)
{
	return in->off + (uint64_t)(in->next - in->buf);
}

/* Moves the cursor to file offset pos: within the buffer, or the next fill reads there. */
void gz_in_seek(struct gz_in *in, uint64_t pos);

/* Refills the buffer once it is used up: the bytes available, 0 at the end of the source, or
 * -errno (logged). */
ssize_t gz_in_fill(struct gz_in *in);

/* Reads a member header at the cursor (first: one must start here; quiet: no notice for
 * trailing data; FNAME into name[0..namecap) if name).  1 with the header consumed, 0 if no
 * member follows (the end, padding, trailing data), or -errno (-EIO logged: a bad header). */
int gz_member_start(struct gz_in *in, bool first, bool quiet, char *name, size_t namecap);

/* Reads a member's 8-byte trailer into t.  1, or -errno (-EIO, logged, if the file ends). */
int gz_trailer(struct gz_in *in, const struct gz_where *w, uint8_t t[8]);

/* Logs a failed inflate (err: -errno, f says why) or, with err 0, a source that ended inside
 * deflate data.  Returns -errno. */
int gz_inflate_fail(const struct gz_in *in, const struct gz_where *w, const struct inflater *f,
		    int err);

/* Inflates from the cursor into out[0..room), advancing it; *made: the bytes written; *at:
 * after INFL_BLOCK, the next block's bit offset.  What infl_run returns, or -EAGAIN: no
 * progress although there was input and room. */
int gz_inflate(struct inflater *f, struct gz_in *in, uint8_t *out, size_t room, enum infl_mode mode,
	       size_t *made, uint64_t *at);

/* A bit offset as a checkpoint has it: the first byte not even partly consumed, and how many
 * of the top bits of the byte before it are still to be read. */
static inline void gz_bitpos(uint64_t at, uint64_t *coff, uint32_t *bits)
{
	*coff = (at + 7) / 8;
	*bits = (uint32_t)((8 - at % 8) % 8);
}

/* ---- The scan (gzip_scan.c): codec.h's scan_* of codec_gzip and codec_deflate ---- */

int gz_scan_new(struct src *in, const struct codec_opts *opts, const struct codec_sink *sink,
		struct codec_scan **out);
int gz_deflate_scan_new(struct src *in, const struct codec_opts *opts,
			const struct codec_sink *sink, struct codec_scan **out);
ssize_t gz_scan_read(struct codec_scan *s, void *buf, size_t len);
uint64_t gz_scan_verified(struct codec_scan *s);
const char *gz_scan_name(struct codec_scan *s);
void gz_scan_free(struct codec_scan *s);

#endif
