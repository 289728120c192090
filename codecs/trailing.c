/* What follows the last stream of a compressed file (see trailing.h). */
#include "codecs/trailing.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

#define TRAILING_BUF ((size_t)64 << 10)

int trailing_scan(struct src *in, uint64_t at, bool (*is_data)(const uint8_t *p, size_t n),
		  size_t want, struct trailing *t)
{
	uint8_t *buf = malloc(TRAILING_BUF);
	uint64_t off = at;
	int err = 0;

	*t = (struct trailing){.end = at, .first_nonzero = TRAILING_NONE, .data_at = TRAILING_NONE};
	if (!buf)
		return -ENOMEM;
	if (want >= TRAILING_BUF / 2)
		want = TRAILING_BUF / 2;
	for (;;) {
		ssize_t n = src_pread(in, buf, TRAILING_BUF, off);
		size_t lim;

		if (n < 0) {
			err = (int)n;
			break;
		}
		t->end = off + (uint64_t)n;
		/* offsets whose `want` bytes are all here; the rest comes again in the next read */
		lim = (size_t)n == TRAILING_BUF ? TRAILING_BUF - want : (size_t)n;
		for (size_t i = 0; i < lim; i++) {
			if (t->first_nonzero == TRAILING_NONE && buf[i])
				t->first_nonzero = off + i;
			if (is_data && is_data(buf + i, (size_t)n - i)) {
				t->data_at = off + i;
				goto out;
			}
		}
		if ((size_t)n < TRAILING_BUF || (!is_data && t->first_nonzero != TRAILING_NONE))
			break;
		off += lim;
	}
out:
	free(buf);
	return err;
}

void trailing_note(char *buf, size_t size, const char *codec, struct src *in, uint64_t at)
{
	uint64_t total = src_size(in);

	if (total != SRC_SIZE_UNKNOWN && total > at)
		snprintf(buf, size,
			 "%s: ignoring %" PRIu64 " bytes of trailing garbage at offset %" PRIu64,
			 codec, total - at, at);
	else
		snprintf(buf, size, "%s: ignoring trailing garbage at offset %" PRIu64, codec, at);
}
