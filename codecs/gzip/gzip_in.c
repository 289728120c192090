/* gzip's compressed side, shared by the scan (gzip_scan.c) and the decoders (gzip.c): a cursor
 * on the compressed file, a member's header and trailer read through it, what follows the last
 * member, and inflating from the cursor with the messages for what goes wrong.  The format and
 * the design are described in gzip.c.
 */
#include "codecs/gzip/gzip_int.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "common/log.h"
#include "codecs/trailing.h"

/* Header flags (RFC 1952). */
#define GZ_FHCRC 0x02
#define GZ_FEXTRA 0x04
#define GZ_FNAME 0x08
#define GZ_FCOMMENT 0x10
#define GZ_FRESERVED 0xe0

void gz_in_init(struct gz_in *in, struct src *src, uint8_t *buf, size_t cap, uint64_t off)
{
	in->src = src;
	in->buf = buf;
	in->cap = cap;
	in->len = 0;
	in->off = off;
	in->next = buf;
	in->avail = 0;
}

/* Moves the cursor to file offset pos: within the buffer, or the next fill reads there. */
void gz_in_seek(struct gz_in *in, uint64_t pos)
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
ssize_t gz_in_fill(struct gz_in *in)
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
int gz_member_start(struct gz_in *in, bool first, bool quiet, char *name, size_t namecap)
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

/* Reads a member's 8-byte trailer.  1, or -errno (-EIO, logged, if the file ends first). */
int gz_trailer(struct gz_in *in, const struct gz_where *w, uint8_t t[8])
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
int gz_inflate_fail(const struct gz_in *in, const struct gz_where *w, const struct inflater *f,
		    int err)
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
int gz_inflate(struct inflater *f, struct gz_in *in, uint8_t *out, size_t room, enum infl_mode mode,
	       size_t *made, uint64_t *at)
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
