/* What lies after the last complete stream of a compressed file.  Zeros are padding (tape
 * blocks, a disk image's tail): ignored silently.  Other bytes are garbage (an appended
 * signature, a half-overwritten file): ignored with a notice.  But bytes that start the codec's
 * own data (a stream header, a frame, a footer) are a damaged stream, not garbage: the codec
 * must report them, or a stream would vanish without a word.
 */
#ifndef TARSEEK_TRAILING_H
#define TARSEEK_TRAILING_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/source.h"

#define TRAILING_NONE UINT64_MAX

struct trailing {
	uint64_t end;		/* where the source ended (the scan reads to its end) */
	uint64_t first_nonzero; /* TRAILING_NONE: only zeros */
	uint64_t data_at;	/* where the codec's data starts again, or TRAILING_NONE */
};

/* Scans the source from at to its end in 64 KiB reads.  is_data (NULL: not searched) is
 * asked at every offset whether the codec's data starts there; it gets the bytes from there
 * to the end of what was read, at least want of them unless the source ends first.  The scan
 * stops at the first such offset.  0 or -errno (a read error). */
int trailing_scan(struct src *in, uint64_t at, bool (*is_data)(const uint8_t *p, size_t n),
		  size_t want, struct trailing *t);

/* The notice for garbage at offset at: "CODEC: ignoring N bytes of trailing garbage at offset
 * AT" (without N when the source's size is unknown), into buf. */
void trailing_note(char *buf, size_t size, const char *codec, struct src *in, uint64_t at);

#endif
