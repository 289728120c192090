/* The order of the files in a pass (see bench_order.h).  Archive order is a sort of file
 * numbers by (stream, offset), ties and files without an offset in list order, which qsort
 * cannot promise; the lists are at most a few hundred thousand files, read once, so a
 * merge sort on indices is enough.
 */
#include "tools/bench/bench_order.h"

#include <errno.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/xattr.h>

#include "tools/bench/bench.h"
#include "tools/bench/bench_cfg.h"
#include "tools/bench/bench_ui.h"
#include "tools/bench/bench_util.h"

struct place {
	int known; /* the mount told where the file's data is */
	int64_t stream, offset;
};

/* 1 if file a comes before file b in archive order. */
static int before(const struct place *p, size_t a, size_t b)
{
	if (p[a].known != p[b].known)
		return p[a].known;
	if (!p[a].known)
		return a < b;
	if (p[a].stream != p[b].stream)
		return p[a].stream < p[b].stream;
	if (p[a].offset != p[b].offset)
		return p[a].offset < p[b].offset;
	return a < b;
}

static void merge_sort(const struct place *p, size_t *v, size_t *tmp, size_t n)
{
	size_t h = n / 2, i = 0, j = h, k = 0;

	if (n < 2)
		return;
	merge_sort(p, v, tmp, h);
	merge_sort(p, v + h, tmp, n - h);
	while (i < h && j < n)
		tmp[k++] = before(p, v[j], v[i]) ? v[j++] : v[i++];
	while (i < h)
		tmp[k++] = v[i++];
	while (j < n)
		tmp[k++] = v[j++];
	memcpy(v, tmp, n * sizeof(*v));
}

/* A number-valued xattr of path; 0 or -errno. */
static int xattr_num(const char *path, const char *name, int64_t *v)
{
	char buf[32], *end;
	ssize_t n = getxattr(path, name, buf, sizeof(buf) - 1);

	if (n < 0)
		return -errno;
	buf[n] = '\0';
	errno = 0;
	*v = strtoll(buf, &end, 10);
	return errno || end == buf ? -EINVAL : 0;
}

int bench_order_archive(struct bench *b, struct bench_cfg *c)
{
	struct place *p = bench_xcalloc(b->nfiles, sizeof(*p));
	size_t *tmp = bench_xmalloc(b->nfiles * sizeof(*tmp)), unknown = 0;

	free(c->archive_order);
	c->archive_order = bench_xmalloc(b->nfiles * sizeof(*c->archive_order));
	for (size_t i = 0; i < b->nfiles; i++) {
		char *path = bench_xasprintf("%s/%s", c->mountpoint, b->files[i]);

		c->archive_order[i] = i;
		p[i].known = xattr_num(path, "user.tarseek.data_offset", &p[i].offset) == 0;
		if (p[i].known && xattr_num(path, "user.tarseek.stream", &p[i].stream))
			p[i].stream = 0;
		unknown += !p[i].known;
		free(path);
	}
	merge_sort(p, c->archive_order, tmp, b->nfiles);
	if (unknown)
		bench_warn("%s: --order archive: %zu of %zu files have no data offset; they are "
			   "read last, in list order",
			   c->name, unknown, b->nfiles);
	if (b->o.verbose && b->nfiles)
		bench_info("%s: archive order starts with %s (offset %" PRId64 ")", c->name,
			   b->files[c->archive_order[0]], p[c->archive_order[0]].offset);
	free(tmp);
	free(p);
	return 0;
}

const size_t *bench_order_run(const struct bench *b, const struct bench_cfg *c, size_t run,
			      size_t *buf)
{
	struct bench_rng rng;

	if (b->o.order == BENCH_ORDER_ARCHIVE && c->archive_order) {
		memcpy(buf, c->archive_order, b->nfiles * sizeof(*buf));
		return buf;
	}
	for (size_t i = 0; i < b->nfiles; i++)
		buf[i] = i;
	if (b->o.order == BENCH_ORDER_RANDOM) {
		/* one stream per run number, apart from the run order's (seeded by the seed) */
		bench_rng_seed(&rng, b->o.seed ^ (0x9e3779b97f4a7c15ull * (run + 1)));
		bench_shuffle(&rng, buf, b->nfiles);
	}
	return buf;
}

const char *bench_order_name(int order)
{
	return order == BENCH_ORDER_ARCHIVE  ? "archive"
	       : order == BENCH_ORDER_RANDOM ? "random"
					     : "list";
}
