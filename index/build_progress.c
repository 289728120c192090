/* The progress of a build (see build_int.h): a line on the terminal about once a second
 * (position, rate, time left, members), or, with no terminal (a mount from fstab or
 * systemd), a line in the log every PROGRESS_LOG_SECONDS; and a source over the archive that
 * reports progress between steps of a long skip (the tar parser jumps over large members).
 * A leaf: the row writer (build_rows.c) and both passes (build.c, build_cont.c) call it.
 */
#include "index/build_int.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

#include "common/clock.h"
#include "common/log.h"
#include "common/size.h"

#define PROGRESS_STEP (16ull << 20)
#define PROGRESS_LOG_SECONDS 10.0 /* without a terminal: a progress line this often */

void bld_progress(struct builder *b, bool force)
{
	double t = mono_now();
	char pos[32], size[32];

	if (!b->show && b->log_progress && t - b->last >= PROGRESS_LOG_SECONDS) {
		/* no terminal (a mount from fstab or systemd): a line in the log now and then,
		 * so that a long first mount does not look like a hang */
		uint64_t at = src_high_water(b->file);
		b->last = t;
		tfs_log(TFS_LOG_NOTICE, "indexing %s: %.0f%% after %.0f s", b->name,
			b->file_size ? 100.0 * (at > b->file_size ? b->file_size : at) / b->file_size
				     : 100.0, t - b->t0);
		return;
	}
	if (!b->show || (!force && t - b->last < 1.0))
		return;
	b->last = t;
	uint64_t at = src_high_water(b->file);
	if (at > b->file_size)
		at = b->file_size;
	double el = t - b->t0, rate = el > 0 ? at / el : 0;
	double left = rate > 0 ? (b->file_size - at) / rate : 0;
	format_size(pos, sizeof(pos), (double)at);
	format_size(size, sizeof(size), (double)b->file_size);
	fprintf(stderr, "\r\033[Kindexing %s: %s / %s (%.0f%%), %.1f MB/s, %.0f s left, %" PRIu64 " members",
		b->name, pos, size, b->file_size ? 100.0 * at / b->file_size : 100.0, rate / 1e6, left,
		b->members);
	fflush(stderr);
}

/* A source that forwards to another and reports progress between steps of a long skip. */
struct prog_src {
	struct src *inner;
	struct builder *b;
	uint64_t pos;
};

static ssize_t prog_pread(void *opaque, void *buf, size_t len, uint64_t off)
{
	struct prog_src *p = opaque;
	uint8_t one;

	while (off > p->pos + PROGRESS_STEP) {
		p->pos += PROGRESS_STEP;
		ssize_t n = src_pread(p->inner, &one, 1, p->pos);
		if (n <= 0)
			return n;
		bld_progress(p->b, false);
	}
	ssize_t n = src_pread(p->inner, buf, len, off);
	if (n > 0 && off + (uint64_t)n > p->pos)
		p->pos = off + (uint64_t)n;
	return n;
}

static void prog_close(void *opaque)
{
	free(opaque);
}

static const struct src_ops prog_ops = {.pread = prog_pread, .close = prog_close};

int bld_progress_src(struct builder *b, struct src *inner, struct src **out)
{
	struct prog_src *ps = calloc(1, sizeof(*ps));

	*out = NULL;
	if (!ps || !(*out = src_new(&prog_ops, ps, src_size(inner)))) {
		free(ps);
		return -ENOMEM;
	}
	ps->inner = inner;
	ps->b = b;
	return 0;
}

