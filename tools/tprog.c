/* The front ends' progress lines (see tprog.h): the figures the core reports, formatted the one
 * way, redrawn in place on a terminal or, for an index build without one, logged now and then.
 */
#include "tools/tprog.h"

#include <inttypes.h>
#include <stdio.h>
#include <unistd.h>

#include "common/log.h"
#include "common/size.h"

/* When this thread's build last logged its progress (seconds since it started; 0: not yet). */
static _Thread_local double logged_at;

void tprog_index(void *opaque, const struct idx_progress *p)
{
	bool tty = isatty(STDERR_FILENO);
	char pos[32], size[32];

	(void)opaque;
	if (p->end) {
		logged_at = 0;
		if (tty)
			fputs(p->err ? "\n" : "\r\033[K", stderr);
		return;
	}
	double pct = p->total ? 100.0 * p->done / p->total : 100.0;
	if (!tty) {
		if (p->seconds - logged_at < TPROG_LOG_SECONDS)
			return;
		logged_at = p->seconds;
		tfs_log(TFS_LOG_NOTICE, "indexing %s: %.0f%% after %.0f s", p->name, pct,
			p->seconds);
		return;
	}
	double rate = p->seconds > 0 ? p->done / p->seconds : 0;
	double left = rate > 0 ? (p->total - p->done) / rate : 0;
	format_size(pos, sizeof(pos), (double)p->done);
	format_size(size, sizeof(size), (double)p->total);
	fprintf(stderr,
		"\r\033[Kindexing %s: %s / %s (%.0f%%), %.1f MB/s, %.0f s left, %" PRIu64 " members",
		p->name, pos, size, pct, rate / 1e6, left, p->members);
	fflush(stderr);
}

void tprog_convert(void *opaque, const struct cv_progress *p)
{
	char pos[32], size[32], out[32];

	(void)opaque;
	if (p->end) {
		fprintf(stderr, "\r\033[K");
		return;
	}
	double rate = p->seconds > 0 ? p->done / p->seconds : 0;
	double left = rate > 0 ? (p->total - p->done) / rate : 0;
	format_size(pos, sizeof(pos), (double)p->done);
	format_size(size, sizeof(size), (double)p->total);
	format_size(out, sizeof(out), (double)p->written);
	fprintf(stderr,
		"\r\033[Kconverting to %s: %s / %s (%.0f%%), %.1f MB/s, %.0f s left, %s written",
		p->output, pos, size, p->total ? 100.0 * p->done / p->total : 100.0, rate / 1e6,
		left, out);
	fflush(stderr);
}
