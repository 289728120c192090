/* A read-ahead window on a compressed file: see inwin.h. */
#include "codecs/inwin.h"

#include <errno.h>
#include <stdlib.h>

ssize_t inwin_get(struct inwin *w, uint64_t off, size_t want, size_t ahead, const uint8_t **p)
{
	size_t n = want > ahead ? want : ahead;
	ssize_t got;

	if (w->buf && off >= w->off && off - w->off <= w->len) {
		size_t at = (size_t)(off - w->off), have = w->len - at;

		if (have >= want || w->eof) {
			*p = w->buf + at;
			return (ssize_t)(have < want ? have : want);
		}
	}
	if (n > w->cap) {
		free(w->buf);
		w->len = w->cap = 0;
		w->buf = malloc(n);
		if (!w->buf)
			return -ENOMEM;
		w->cap = n;
	}
	got = src_pread(w->in, w->buf, n, off);
	if (got < 0) {
		w->len = 0;
		return got;
	}
	w->off = off;
	w->len = (size_t)got;
	w->eof = (size_t)got < n;
	*p = w->buf;
	return (ssize_t)((size_t)got < want ? (size_t)got : want);
}

void inwin_free(struct inwin *w)
{
	free(w->buf);
	w->buf = NULL;
	w->cap = w->len = 0;
}

int inwin_buf_reserve(uint8_t **buf, size_t *cap, size_t n)
{
	uint8_t *b;

	if (*cap >= n)
		return 0;
	b = realloc(*buf, n);
	if (!b)
		return -ENOMEM;
	*buf = b;
	*cap = n;
	return 0;
}
