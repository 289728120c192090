/* A window on a compressed file, read ahead: for block codecs whose decoders want a whole
 * block (or group of blocks) in memory at once, found by hopping from header to header
 * (lzo/, lz4/).  One window per worker or decoder; not thread-safe.
 */
#ifndef TARSEEK_INWIN_H
#define TARSEEK_INWIN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "common/source.h"

struct inwin {
	struct src *in;
	uint8_t *buf;
	size_t cap;
	uint64_t off; /* file offset of buf[0] */
	size_t len;   /* bytes in buf */
	bool eof;     /* the source ends at off + len */
};

/* Makes [off, off + want) available, reading max(want, ahead) bytes when it is not.  Returns
 * the bytes available at off up to want (fewer only at the end of the source) with *p set,
 * or -errno. */
ssize_t inwin_get(struct inwin *w, uint64_t off, size_t want, size_t ahead, const uint8_t **p);

/* Frees the buffer (the window can be used again). */
void inwin_free(struct inwin *w);

/* Grows a buffer to at least n bytes.  0 or -ENOMEM. */
int inwin_buf_reserve(uint8_t **buf, size_t *cap, size_t n);

#endif
