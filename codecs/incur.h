/* A cursor over a codec's compressed input: a buffer refilled with large preads from a source,
 * an optional limit past which nothing is read (the end of a frame, a zip entry's data), and
 * the file offset of every byte.  Decoders that take "next input, available bytes" pointers
 * (zlib's next_in/avail_in, libzstd's ZSTD_inBuffer) read from incur_ptr()/incur_avail() and
 * tell the cursor what they used with incur_used().
 *
 * Not thread-safe: one cursor per decoder.  The buffer is the caller's.
 */
#ifndef TARSEEK_INCUR_H
#define TARSEEK_INCUR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "common/source.h"

#define INCUR_NO_LIMIT UINT64_MAX

struct incur {
	struct src *src;
	uint8_t *buf;
	size_t cap, len, pos; /* bytes in buf, the next one to use */
	uint64_t off;	      /* file offset of buf[0] */
	uint64_t limit;	      /* nothing at or past this offset is read */
	bool eof;	      /* nothing more to read after buf: the limit or the source's end */
	bool src_short;	      /* ... the source's end */
};

static inline void incur_init(struct incur *c, struct src *src, uint8_t *buf, size_t cap,
			      uint64_t off)
{
	*c =
	    (struct incur){.src = src, .buf = buf, .cap = cap, .off = off, .limit = INCUR_NO_LIMIT};
}

/* File offset of the next unused byte. */
static inline uint64_t incur_pos(const struct incur *c)
{
	return c->off + c->pos;
}

static inline const uint8_t *incur_ptr(const struct incur *c)
{
	return c->buf + c->pos;
}

static inline size_t incur_avail(const struct incur *c)
{
	return c->len - c->pos;
}

static inline void incur_used(struct incur *c, size_t n)
{
	c->pos += n;
}

/* Moves the cursor to off (keeping what is buffered when off is in it) and sets the limit. */
static inline void incur_seek(struct incur *c, uint64_t off, uint64_t limit)
{
	if (off >= c->off && off - c->off <= c->len) {
		c->pos = (size_t)(off - c->off);
	} else {
		c->off = off;
		c->len = c->pos = 0;
	}
	c->limit = limit;
	if (limit != INCUR_NO_LIMIT && c->off + c->len > limit)
		c->len = limit > incur_pos(c) ? (size_t)(limit - c->off) : c->pos;
	c->eof = c->src_short = false;
}

/* Bytes available at the cursor, reading more once the buffer is used up: > 0, 0 when there
 * is nothing more (c->eof), or -errno from the source. */
static inline ssize_t incur_fill(struct incur *c)
{
	size_t want = c->cap;
	ssize_t n;

	if (c->pos < c->len)
		return (ssize_t)(c->len - c->pos);
	if (c->eof)
		return 0;
	c->off += c->len;
	c->len = c->pos = 0;
	if (c->limit != INCUR_NO_LIMIT)
		want = c->limit <= c->off	  ? 0
		       : c->limit - c->off < want ? (size_t)(c->limit - c->off)
						  : want;
	if (!want) {
		c->eof = true;
		return 0;
	}
	n = src_pread(c->src, c->buf, want, c->off);
	if (n < 0)
		return n;
	c->len = (size_t)n;
	if ((size_t)n < want)
		c->eof = c->src_short = true;
	return n;
}

/* One byte: 1, 0 at the end, or -errno. */
static inline int incur_byte(struct incur *c, uint8_t *b)
{
	if (c->pos == c->len) {
		ssize_t n = incur_fill(c);
		if (n <= 0)
			return (int)n;
	}
	*b = c->buf[c->pos++];
	return 1;
}

#endif
