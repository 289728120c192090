/* The progress of a build (see build_int.h): how far the archive has been read, told to the
 * caller's callback (idx_build_opts.progress) about once a second and once more at the end --
 * the front ends draw the line, or log it when there is no terminal; nothing here writes to
 * the terminal -- and a source over the archive that reports progress between steps of a long
 * skip (the tar parser jumps over large members).  A leaf: the row writer (build_rows.c) and
 * both passes (build.c, build_cont.c) call it.
 */
#include "index/build_int.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/clock.h"

#define PROGRESS_STEP (16ull << 20)

/* The figures at time t. */
static struct idx_progress figures(const struct builder *b, double t)
{
	uint64_t at = src_high_water(b->file);

	return (struct idx_progress){.name = b->name,
				     .done = at > b->file_size ? b->file_size : at,
				     .total = b->file_size,
				     .members = b->members,
				     .seconds = t - b->t0};
}

void bld_progress(struct builder *b, bool force)
{
	double t = mono_now();

	if (!b->o->progress || (!force && t - b->last < 1.0))
		return;
	b->last = t;
	struct idx_progress p = figures(b, t);
	b->o->progress(b->o->progress_opaque, &p);
}

void bld_progress_end(struct builder *b, int err)
{
	if (!b->o->progress)
		return;
	struct idx_progress p = figures(b, mono_now());
	p.end = true;
	p.err = err;
	b->o->progress(b->o->progress_opaque, &p);
}

/* A source that forwards to another and reports progress between steps of a long skip.
 * Over an archive file (not a decoding stream, which buffers already) small reads are served
 * from a window read ahead: a tar of small members costs a read(2) per 256 KiB, not one per
 * 512-byte header (a million of them took 2.7 s of a 1M-member first mount). */
#define PROG_WINDOW ((size_t)256 << 10)

struct prog_src {
	struct src *inner;
	struct builder *b;
	uint64_t pos;
	uint8_t *win; /* [woff, woff + wlen) of inner, or NULL: no window */
	uint64_t woff;
	size_t wlen;
};

static ssize_t prog_pread(void *opaque, void *buf, size_t len, uint64_t off)
{
	struct prog_src *p = opaque;
	uint8_t one;
	ssize_t n;

	while (off > p->pos + PROGRESS_STEP) {
		p->pos += PROGRESS_STEP;
		n = src_pread(p->inner, &one, 1, p->pos);
		if (n <= 0)
			return n;
		bld_progress(p->b, false);
	}
	if (p->win && len <= PROG_WINDOW / 2) {
		if (off < p->woff || off + len > p->woff + p->wlen) { /* not all in the window */
			n = src_pread(p->inner, p->win, PROG_WINDOW, off);
			if (n < 0)
				return n;
			p->woff = off;
			p->wlen = (size_t)n;
		}
		size_t at = (size_t)(off - p->woff), have = p->wlen > at ? p->wlen - at : 0;
		n = (ssize_t)(len < have ? len : have); /* short only at the file's end */
		memcpy(buf, p->win + at, (size_t)n);
	} else {
		n = src_pread(p->inner, buf, len, off);
	}
	if (n > 0 && off + (uint64_t)n > p->pos)
		p->pos = off + (uint64_t)n;
	return n;
}

static void prog_close(void *opaque)
{
	struct prog_src *p = opaque;

	free(p->win);
	free(p);
}

static const struct src_ops prog_ops = {.pread = prog_pread, .close = prog_close};

int bld_progress_src(struct builder *b, struct src *inner, bool window, struct src **out)
{
	struct prog_src *ps = calloc(1, sizeof(*ps));

	*out = NULL;
	if (ps && window && !(ps->win = malloc(PROG_WINDOW))) {
		free(ps);
		ps = NULL;
	}
	if (!ps || !(*out = src_new(&prog_ops, ps, src_size(inner)))) {
		if (ps)
			free(ps->win);
		free(ps);
		return -ENOMEM;
	}
	ps->inner = inner;
	ps->b = b;
	return 0;
}

