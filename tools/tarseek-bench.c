/* tarseek-bench: which compression should an archive be kept in, and what does a mount cost?
 *
 * For every configuration (an archive mounted by tarseek, an archive mounted by another tool
 * through --mount-cmd, or an extracted tree read in place) the tool measures the first mount
 * (index built from scratch), the second mount (index present), the index size, the mounter's
 * peak RSS, and the workload users publish for archive mounters: md5 of a list of member files
 * read whole through the mount.  Runs of all configurations are interleaved in a seeded random
 * order, round by round, so a machine that slows down or speeds up during the benchmark
 * affects all configurations alike; the report is one table per metric in the layout of the
 * `benchmark` Python library, plus CSV, JSON and an SVG chart.
 *
 * Cold runs are the ones that matter for archives on slow disks, and they need care: dropping
 * the page cache is not enough, because a tarseek daemon keeps decoded chunks in its own cache
 * and would make every run after the first warm.  So with --cold each md5 run gets a fresh
 * mount (a "second mount": the index exists) right after sync and drop_caches, and that mount's
 * time is the second-mount sample.  Warm runs share one mount per configuration and follow an
 * untimed pass that fills the caches.
 *
 * Every digest is kept per configuration and file: all configurations hold the same tree, so
 * they must agree file by file, and one configuration must agree with itself from run to run.
 * Disagreements and read errors are listed by path and make the exit status 1.
 *
 * The orchestration lives here: the phases (first mounts, the sample, the md5 runs), the check
 * across configurations, the reports.  The other parts, each with a header stating its
 * contract:
 *   bench.h          the state they all work on (struct bench)
 *   bench_args.c     the command line
 *   bench_list.c     the file list: --list, -0, --unquote, --sample
 *   bench_cfg.c      the temporary folder, the mounters' command lines, mounting, unmounting
 *   bench_digest.c   one pass over the files: md5 in-process or --exec, recorded per file
 *   bench_order.c    the order a pass reads them in: --order list, archive, random
 *   bench_io.c       the mounter's reads (/proc/PID/io) and --throttle's cgroup
 *   bench_ui.c       the progress line and the log sink
 *   bench_util.c     allocation that exits on failure, sample lists, word splitting
 *   bench_stats.c, bench_mount.c, md5.c: statistics and run order, mount mechanics, MD5
 *                    (libcrypto's)
 *   bench_report.c, bench_fields.c, bench_svg.c, bench_escape.c: the report writers (text,
 *                    CSV and JSON from one table of fields, SVG; the escapes they share)
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <math.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>

#include "config.h"
#include "common/log.h"
#include "tools/bench/bench.h"
#include "tools/bench/bench_args.h"
#include "tools/bench/bench_cfg.h"
#include "tools/bench/bench_convert.h"
#include "tools/bench/bench_digest.h"
#include "tools/bench/bench_list.h"
#include "tools/bench/bench_mount.h"
#include "tools/bench/bench_order.h"
#include "tools/bench/bench_report.h"
#include "tools/bench/bench_stats.h"
#include "tools/bench/bench_ui.h"
#include "tools/bench/bench_util.h"
#include "tools/bench/md5.h"

#define MAX_BAD_SHOWN 20 /* failed files listed in the text report */

static const char *const kind_name[] = {"directory", "tarseek", "command"};

static void on_signal(int sig)
{
	bench_interrupted = 1;
}

/* ---- the phases ---- */

/* Reads a file whole so the page cache holds it (warm first mounts start alike). */
static void prime_file(struct bench *b, const char *path)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	struct stat st;

	if (fd < 0)
		return;
	if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode))
		while (read(fd, b->buf, BENCH_READ_BUF) > 0 && !bench_interrupted)
			;
	close(fd);
}

static int drop_caches(void)
{
	int ret = bench_drop_caches();

	if (ret)
		bench_err(
		    "--cold: cannot drop the page cache (/proc/sys/vm/drop_caches): %s; run as "
		    "root, with /proc/sys writable (in a container: privileged), or leave out "
		    "--cold",
		    strerror(-ret));
	return ret;
}

static size_t count_mounted(const struct bench *b)
{
	size_t n = 0;

	for (size_t i = 0; i < b->ncfg; i++)
		n += b->cfg[i].kind != BENCH_CFG_DIR;
	return n;
}

static off_t file_size(const char *path)
{
	struct stat st;
	off_t total = 0;

	if (stat(path, &st) < 0)
		return -1;
	total = st.st_size;
	char *wal = bench_xasprintf("%s-wal", path);

	if (stat(wal, &st) == 0)
		total += st.st_size;
	free(wal);
	return total;
}

/* First mounts: each mounted configuration --mount-runs times (interleaved), its index removed
 * first unless --keep-index; the index size is measured after the daemon has closed it. */
static int phase_first_mounts(struct bench *b)
{
	size_t nm = count_mounted(b), *map, *order = NULL, total;
	int ret = 0;

	if (!nm)
		return 0;
	map = bench_xmalloc(nm * sizeof(*map));
	for (size_t i = 0, k = 0; i < b->ncfg; i++)
		if (b->cfg[i].kind != BENCH_CFG_DIR)
			map[k++] = i;
	ret = bench_schedule(&b->rng, nm, b->o.mount_runs, &order);
	if (ret)
		goto out;
	total = nm * b->o.mount_runs;
	for (size_t s = 0; s < total && !bench_interrupted; s++) {
		struct bench_cfg *c = &b->cfg[map[order[s]]];
		char what[64];

		bench_ui_status(&b->ui, "[first mount %zu/%zu] %s", s + 1, total, c->name);
		if (b->o.cold) {
			ret = drop_caches();
			if (ret)
				goto out;
		} else if (s < nm) {
			bench_ui_show(&b->ui, 1, "reading the archive into the page cache");
			prime_file(b, c->source);
		}
		int build = c->index_path && !b->o.keep_index && !c->index_given;
		if (build)
			bench_cfg_remove_index(c->index_path);
		snprintf(what, sizeof(what), "first mount (%s)",
			 build ? "building the index" : "mounting");
		ret = bench_cfg_mount(b, c, &c->m[BENCH_M_FIRST], what);
		if (ret)
			goto out;
		if (c->kind == BENCH_CFG_COMMAND) {
			/* Give a command that mounts and returns the time to return, so that
			 * it is not mistaken for one that stays in the foreground. */
			struct timespec settle = {0, 200 * 1000 * 1000};

			nanosleep(&settle, NULL);
		}
		bench_cfg_unmount(b, c, &c->m[BENCH_M_RSS_FIRST]);
		if (c->index_path) {
			off_t size = file_size(c->index_path);

			if (size >= 0)
				bench_samples_add(&c->m[BENCH_M_INDEX],
						  (double)size / (1024.0 * 1024.0));
			else if (s < nm)
				bench_warn("%s: no index at %s after the first mount", c->name,
					   c->index_path);
		}
	}
	if (bench_interrupted)
		ret = -EINTR;
out:
	free(order);
	free(map);
	return ret;
}

static int phase_sample(struct bench *b)
{
	struct bench_cfg *c = &b->cfg[b->baseline];
	int ret;

	bench_ui_status(&b->ui, "[sample] %s", c->name);
	if (c->kind == BENCH_CFG_DIR)
		return bench_list_sample(b, c->source);
	ret = bench_cfg_mount(b, c, NULL, "mounting to draw the sample");
	if (ret)
		return ret;
	bench_ui_show(&b->ui, 1, "listing the tree");
	ret = bench_list_sample(b, c->mountpoint);
	bench_cfg_unmount(b, c, NULL);
	return ret;
}

/* --order archive: each tarseek configuration mounted once more (untimed) to learn where
 * its files' data lie, so that no timed mount has looked the files up before its pass. */
static int phase_order(struct bench *b)
{
	for (size_t i = 0; i < b->ncfg && !bench_interrupted; i++) {
		struct bench_cfg *c = &b->cfg[i];
		int ret;

		if (c->kind != BENCH_CFG_TARSEEK)
			continue;
		bench_ui_status(&b->ui, "[order] %s", c->name);
		ret = bench_cfg_mount(b, c, NULL, "mounting to read the data offsets");
		if (ret)
			return ret;
		bench_order_archive(b, c);
		bench_cfg_unmount(b, c, NULL);
	}
	return bench_interrupted ? -EINTR : 0;
}

/* The mounter's I/O counters around one timed pass: the difference summed over the
 * processes that could be read both before and after (a mount command's launcher may exit
 * in between); no sample if there are none. */
struct io_probe {
	pid_t pids[16];
	struct bench_io before[16];
	int ok[16];
	int n;
};

static void io_probe_start(struct bench_cfg *c, struct io_probe *p)
{
	p->n = bench_cfg_io_pids(c, p->pids, sizeof(p->pids) / sizeof(p->pids[0]));
	for (int i = 0; i < p->n; i++)
		p->ok[i] = bench_io_read(p->pids[i], &p->before[i]) == 0;
}

static void io_probe_end(struct bench_cfg *c, struct io_probe *p)
{
	struct bench_io d = {0}, after;
	int counted = 0;

	for (int i = 0; i < p->n; i++) {
		if (!p->ok[i] || bench_io_read(p->pids[i], &after))
			continue;
		d.rchar += after.rchar - p->before[i].rchar;
		d.syscr += after.syscr - p->before[i].syscr;
		d.read_bytes += after.read_bytes - p->before[i].read_bytes;
		counted++;
	}
	if (!counted)
		return;
	bench_samples_add(&c->m[BENCH_M_IO_BYTES], (double)d.rchar / (1024.0 * 1024.0));
	bench_samples_add(&c->m[BENCH_M_IO_CALLS], (double)d.syscr);
	bench_samples_add(&c->m[BENCH_M_IO_DISK], (double)d.read_bytes / (1024.0 * 1024.0));
}

/* One timed pass of c in its order for the run, recorded with the mounter's I/O. */
static double timed_pass(struct bench *b, struct bench_cfg *c, const char *label, size_t *buf)
{
	size_t run = c->m[BENCH_M_MD5].n;
	const size_t *order = bench_order_run(b, c, run, buf);
	struct io_probe io;
	double t;

	if (b->o.order != BENCH_ORDER_LIST) {
		c->orders =
		    bench_xrealloc(c->orders, (c->norders + 1) * b->nfiles * sizeof(*c->orders));
		memcpy(c->orders + c->norders * b->nfiles, order, b->nfiles * sizeof(*order));
		c->norders++;
	}
	io_probe_start(c, &io);
	t = bench_digest_pass(b, c, label, order);
	io_probe_end(c, &io);
	return t;
}

static int phase_md5(struct bench *b)
{
	size_t *order = NULL, total = b->ncfg * b->o.runs;
	size_t *files_order = bench_xmalloc(b->nfiles * sizeof(*files_order));
	char label[64];
	int ret;

	ret = bench_schedule(&b->rng, b->ncfg, b->o.runs, &order);
	if (ret)
		return ret;
	if (!b->o.cold) {
		/* Warm: one mount each, one untimed pass each, then the timed runs. */
		for (size_t i = 0; i < b->ncfg && !bench_interrupted; i++) {
			struct bench_cfg *c = &b->cfg[i];

			bench_ui_status(&b->ui, "[warm-up %zu/%zu] %s", i + 1, b->ncfg, c->name);
			if (c->kind != BENCH_CFG_DIR) {
				ret = bench_cfg_mount(b, c, &c->m[BENCH_M_SECOND], "second mount");
				if (ret)
					goto out;
			}
			bench_digest_pass(b, c, "untimed pass",
					  bench_order_run(b, c, 0, files_order));
		}
	}
	for (size_t s = 0; s < total && !bench_interrupted; s++) {
		struct bench_cfg *c = &b->cfg[order[s]];
		double t;

		bench_ui_status(&b->ui, "[run %zu/%zu] %s", s + 1, total, c->name);
		snprintf(label, sizeof(label), "run %zu of %u", c->m[BENCH_M_MD5].n + 1, b->o.runs);
		if (b->o.cold) {
			ret = drop_caches();
			if (ret)
				goto out;
			if (c->kind != BENCH_CFG_DIR) {
				ret = bench_cfg_mount(b, c, &c->m[BENCH_M_SECOND], "second mount");
				if (ret)
					goto out;
			}
		}
		t = timed_pass(b, c, label, files_order);
		if (!isnan(t))
			bench_samples_add(&c->m[BENCH_M_MD5], t);
		if (c->mount && c->kind == BENCH_CFG_TARSEEK && !c->died &&
		    !bench_mount_alive(c->mount)) {
			bench_err("%s: the daemon died during %s", c->name, label);
			bench_log_tail(TFS_LOG_ERR, c->log_path);
			c->died = 1; /* its reads fail from now on; say it once */
		}
		if (b->o.cold && c->mount)
			bench_cfg_unmount(b, c, &c->m[BENCH_M_RSS_MD5]);
	}
	for (size_t i = 0; i < b->ncfg; i++)
		if (b->cfg[i].mount)
			bench_cfg_unmount(b, &b->cfg[i], &b->cfg[i].m[BENCH_M_RSS_MD5]);
	ret = bench_interrupted ? -EINTR : 0;
out:
	free(files_order);
	free(order);
	return ret;
}

/* ---- the check and the report ---- */

struct check_list {
	struct bench_check *v;
	size_t n, cap;
	size_t nbad;
};

static void check_add(struct check_list *l, const char *path, const char *config, char *digest,
		      const char *error)
{
	if (l->n == l->cap) {
		l->cap = l->cap ? 2 * l->cap : 64;
		l->v = bench_xrealloc(l->v, l->cap * sizeof(*l->v));
	}
	l->v[l->n++] = (struct bench_check){path, config, digest, error};
}

static void check_digests(struct bench *b, struct check_list *l)
{
	for (size_t i = 0; i < b->nfiles; i++) {
		const struct bench_digest *ref = NULL;
		int bad = 0;

		for (size_t k = 0; k < b->ncfg; k++) {
			const struct bench_digest *d = &b->cfg[k].dig[i];

			if (d->state != 1) {
				bad = 1;
			} else if (!ref) {
				ref = d;
			} else if (d->len != ref->len || memcmp(d->bytes, ref->bytes, d->len)) {
				bad = 1;
			}
		}
		if (!bad)
			continue;
		l->nbad++;
		for (size_t k = 0; k < b->ncfg; k++) {
			const struct bench_digest *d = &b->cfg[k].dig[i];
			char *hex = NULL;

			if (d->state == 1) {
				hex = bench_xmalloc(2 * d->len + 1);
				bench_md5_hex(d->bytes, d->len, hex);
			}
			check_add(l, b->files[i], b->cfg[k].name, hex,
				  d->state == 1 ? NULL
				  : d->state	? d->error
						: "not read");
		}
	}
}

static FILE *open_out(const char *path)
{
	FILE *f;

	if (!strcmp(path, "-"))
		return stdout;
	f = fopen(path, "we");
	if (!f)
		bench_err("cannot write %s: %s", path, strerror(errno));
	return f;
}

static int close_out(FILE *f, const char *path, int ret)
{
	if (f != stdout && fclose(f) && !ret)
		ret = -EIO;
	if (ret)
		bench_err("writing %s failed", path);
	return ret;
}

#define TITLE_LEN 160

/* The tables' titles: what each metric measured, and how. */
static void metric_titles(const struct bench *b, char titles[][TITLE_LEN])
{
	if (b->o.workload == BENCH_W_MD5)
		snprintf(titles[BENCH_M_MD5], TITLE_LEN, "%s workload, %zu files, %s page cache",
			 b->o.workload_name, b->nfiles, b->o.cold ? "cold" : "warm");
	else
		snprintf(titles[BENCH_M_MD5], TITLE_LEN,
			 "%s workload, the whole tree, %s page cache", b->o.workload_name,
			 b->o.cold ? "cold" : "warm");
	snprintf(titles[BENCH_M_FIRST], TITLE_LEN, "first mount, %s",
		 b->o.keep_index ? "existing index kept" : "index built from scratch");
	snprintf(titles[BENCH_M_SECOND], TITLE_LEN, "second mount, index present%s",
		 b->o.cold ? ", cold page cache" : "");
	snprintf(titles[BENCH_M_INDEX], TITLE_LEN, "index size on disk");
	snprintf(titles[BENCH_M_RSS_FIRST], TITLE_LEN, "peak RSS of the mounter, first mount");
	snprintf(titles[BENCH_M_RSS_MD5], TITLE_LEN, "peak RSS of the mounter, %s workload",
		 b->o.workload_name);
	snprintf(titles[BENCH_M_IO_BYTES], TITLE_LEN,
		 "bytes read by the mounter per %s pass (rchar; a folder: by the reader)",
		 b->o.workload_name);
	snprintf(titles[BENCH_M_IO_CALLS], TITLE_LEN,
		 "read calls of the mounter per %s pass (syscr; a folder: of the reader)",
		 b->o.workload_name);
	snprintf(titles[BENCH_M_IO_DISK], TITLE_LEN,
		 "disk bytes read for the mounter per %s pass (read_bytes; a folder: for the "
		 "reader)",
		 b->o.workload_name);
}

/* One table per metric that has data, computed, into tables (their results malloc'd: the
 * caller frees them); their number. */
static size_t metric_tables(struct bench *b, char titles[][TITLE_LEN], struct bench_table *tables)
{
	static const struct {
		const char *id, *unit;
		int precision;
	} meta[BENCH_NMETRICS] = {
	    [BENCH_M_MD5] = {"md5", "s", 3},
	    [BENCH_M_FIRST] = {"first_mount", "s", 3},
	    [BENCH_M_SECOND] = {"second_mount", "s", 3},
	    [BENCH_M_INDEX] = {"index_size", "MiB", 2},
	    [BENCH_M_RSS_FIRST] = {"peak_rss_first_mount", "MiB", 1},
	    [BENCH_M_RSS_MD5] = {"peak_rss_md5", "MiB", 1},
	    [BENCH_M_IO_BYTES] = {BENCH_ID_IO_BYTES, "MiB", 2},
	    [BENCH_M_IO_CALLS] = {BENCH_ID_IO_CALLS, "calls", 0},
	    [BENCH_M_IO_DISK] = {BENCH_ID_IO_DISK, "MiB", 2},
	};
	size_t ntables = 0;

	for (int m = 0; m < BENCH_NMETRICS; m++) {
		struct bench_table *t = &tables[ntables];
		size_t with_data = 0;

		*t = (struct bench_table){.id = meta[m].id,
					  .title = titles[m],
					  .unit = meta[m].unit,
					  .precision = meta[m].precision,
					  .sizes = 1,
					  .n = b->ncfg};
		t->results = bench_xcalloc(b->ncfg, sizeof(*t->results));
		for (size_t i = 0; i < b->ncfg; i++) {
			t->results[i].name = b->cfg[i].name;
			t->results[i].samples = b->cfg[i].m[m].v;
			t->results[i].nsamples = b->cfg[i].m[m].n;
			t->results[i].size = b->cfg[i].size;
			t->results[i].size_ratio = b->cfg[i].size_ratio;
			with_data += b->cfg[i].m[m].n > 0;
		}
		if (!with_data) {
			free(t->results);
			continue;
		}
		if (bench_table_compute(t, b->baseline))
			bench_oom();
		ntables++;
	}
	return ntables;
}

/* The configurations as the report shows them (malloc'd: the caller frees it). */
static struct bench_config_info *config_infos(const struct bench *b)
{
	struct bench_config_info *cinfo = bench_xcalloc(b->ncfg, sizeof(*cinfo));

	for (size_t i = 0; i < b->ncfg; i++) {
		const struct bench_cfg *c = &b->cfg[i];

		cinfo[i] = (struct bench_config_info){
		    .name = c->name,
		    .kind = kind_name[c->kind],
		    .source = c->source,
		    .command = c->command,
		    .size = c->size,
		    .size_ratio = c->size_ratio,
		    .orders = c->orders,
		    .norders = c->norders,
		};
	}
	return cinfo;
}

/* When the report was made, and where: "2024-05-01 12:00:00 CEST (host)". */
static void report_when(char *when, size_t len)
{
	char host[64] = "";
	time_t now = time(NULL);

	gethostname(host, sizeof(host) - 1);
	strftime(when, len, "%Y-%m-%d %H:%M:%S %Z", localtime(&now));
	if (*host) {
		size_t n = strlen(when);

		snprintf(when + n, len - n, " (%s)", host);
	}
}

/* The report's outputs: the text on stdout (stderr when one of the files is "-"), then
 * --csv, --json and --svg (the first table's chart).  0 or -EIO (said why). */
static int write_outputs(struct bench *b, const struct bench_report *r,
			 const struct bench_table *tables, size_t ntables)
{
	FILE *text = stdout, *f;
	int ret;

	if ((b->o.csv && !strcmp(b->o.csv, "-")) || (b->o.json && !strcmp(b->o.json, "-")) ||
	    (b->o.svg && !strcmp(b->o.svg, "-")))
		text = stderr;
	bench_ui_clear(&b->ui);
	ret = bench_report_text(text, r, MAX_BAD_SHOWN);
	if (b->o.csv && (f = open_out(b->o.csv)))
		ret = close_out(f, b->o.csv, bench_report_csv(f, r)) ?: ret;
	else if (b->o.csv)
		ret = -EIO;
	if (b->o.json && (f = open_out(b->o.json)))
		ret = close_out(f, b->o.json, bench_report_json(f, r)) ?: ret;
	else if (b->o.json)
		ret = -EIO;
	if (b->o.svg && (f = open_out(b->o.svg))) {
		char sub[160];

		snprintf(sub, sizeof(sub), "%u run%s per configuration, seed %" PRIu64, b->o.runs,
			 b->o.runs == 1 ? "" : "s", b->o.seed);
		ret = close_out(f, b->o.svg, ntables ? bench_report_svg(f, &tables[0], sub) : 0)
			  ?: ret;
	} else if (b->o.svg) {
		ret = -EIO;
	}
	return ret;
}

static int write_reports(struct bench *b, struct check_list *l)
{
	char titles[BENCH_NMETRICS][TITLE_LEN], when[128];
	struct bench_table tables[BENCH_NMETRICS];
	struct bench_config_info *cinfo = config_infos(b);
	size_t ntables;
	int ret;

	metric_titles(b, titles);
	ntables = metric_tables(b, titles, tables);
	report_when(when, sizeof(when));
	struct bench_report r = {
	    .version = TARSEEK_VERSION,
	    .when = when,
	    .seed = b->o.seed,
	    .cold = b->o.cold,
	    .runs = b->o.runs,
	    .list = b->o.list,
	    .sample = b->o.sample,
	    .exec = b->o.workload == BENCH_W_MD5 ? b->o.exec : b->o.workload_name,
	    .nfiles = b->nfiles,
	    .files = (const char *const *)b->files,
	    .nconfigs = b->ncfg,
	    .configs = cinfo,
	    .baseline = b->cfg[b->baseline].name,
	    .order = b->o.order != BENCH_ORDER_LIST ? bench_order_name(b->o.order) : NULL,
	    .plain_size = b->plain_size,
	    .plain_from = b->plain_from,
	    .throttle = b->o.throttle,
	    .ntables = ntables,
	    .tables = tables,
	    .nchecks = l->n,
	    .checks = l->v,
	    .nbad = l->nbad,
	};

	ret = write_outputs(b, &r, tables, ntables);
	if (l->nbad)
		bench_err("%s check failed for %zu of %zu files (listed in the report)",
			  b->o.workload_name, l->nbad, b->nfiles);
	for (size_t t = 0; t < ntables; t++)
		free(tables[t].results);
	free(cinfo);
	return ret;
}

/* --throttle: into the cgroup before the first mount, the device found from the first
 * archive on a local disk (else the first folder).  0 or -errno (said why). */
static int start_throttle(struct bench *b)
{
	const char *path = NULL;
	struct stat st;

	for (int dir = 0; dir < 2 && !path; dir++)
		for (size_t i = 0; i < b->ncfg && !path; i++)
			if ((b->cfg[i].kind == BENCH_CFG_DIR) == dir &&
			    stat(b->cfg[i].source, &st) == 0)
				path = b->cfg[i].source;
	return bench_cgroup_enter(&b->o.throttle_spec, path, &b->cgroup);
}

static void free_bench(struct bench *b, struct check_list *l)
{
	for (size_t i = 0; i < l->n; i++)
		free((char *)l->v[i].digest);
	free(l->v);
	for (size_t i = 0; i < b->ncfg; i++) {
		struct bench_cfg *c = &b->cfg[i];

		for (int m = 0; m < BENCH_NMETRICS; m++)
			free(c->m[m].v);
		if (c->dig)
			for (size_t k = 0; k < b->nfiles; k++)
				free(c->dig[k].error);
		free(c->dig);
		free(c->archive_order);
		free(c->orders);
		for (char **a = c->argv; a && *a; a++)
			free(*a);
		free(c->argv);
		free(c->name);
		free(c->source);
		free(c->command);
		free(c->index_path);
		free(c->mountpoint);
		free(c->log_path);
	}
	free(b->cfg);
	for (size_t i = 0; i < b->nfiles; i++)
		free(b->files[i]);
	free(b->files);
	for (size_t i = 0; i < b->o.ntarseek_opts; i++)
		free(b->o.tarseek_opts[i]);
	free(b->o.tarseek_opts);
	for (size_t i = 0; i < b->o.nconvert_opts; i++)
		free(b->o.convert_opts[i]);
	free(b->o.convert_opts);
	for (char **a = b->o.exec_argv; a && *a; a++)
		free(*a);
	free(b->o.exec_argv);
	free(b->o.workload_name);
	free(b->tarseek);
	free(b->tmpdir);
	free(b->buf);
}

int main(int argc, char **argv)
{
	struct bench bench = {0}, *b = &bench;
	struct check_list checks = {0};
	struct sigaction sa = {.sa_handler = on_signal}; /* no SA_RESTART: reads return EINTR */
	int status = 0, ret;

	tfs_log_set_prog("tarseek-bench");
	bench_ui_log_to(&b->ui);
	if (bench_args_parse(b, argc, argv) || bench_args_check(b)) {
		status = BENCH_EXIT_USAGE;
		goto out_free;
	}
	if (!b->o.seed_set) {
		if (getrandom(&b->o.seed, sizeof(b->o.seed), 0) != sizeof(b->o.seed))
			b->o.seed = (uint64_t)time(NULL) ^ (uint64_t)getpid() << 32;
		b->o.seed %= 1000000000; /* short enough to retype */
	}
	bench_rng_seed(&b->rng, b->o.seed);
	b->buf = bench_xmalloc(BENCH_READ_BUF);
	bench_ui_start(&b->ui, b->o.quiet);
	if (b->o.cold && drop_caches()) {
		status = BENCH_EXIT_USAGE;
		goto out_free;
	}
	if (b->o.list && bench_list_load(b)) {
		status = BENCH_EXIT_USAGE;
		goto out_free;
	}
	if (b->o.workload != BENCH_W_MD5) { /* one "file": the whole tree, walked by the tool */
		b->files = bench_xcalloc(1, sizeof(*b->files));
		b->files[0] = bench_xstrdup(".");
		b->nfiles = 1;
	}
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
	bench_info("seed %" PRIu64 " (--seed %" PRIu64 " repeats the order%s)", b->o.seed,
		   b->o.seed, b->o.sample ? " and the sample" : "");

	if (b->o.convert && bench_convert(b)) {
		status = BENCH_EXIT_FAILED;
		goto out_tmp;
	}
	if (b->o.throttle && start_throttle(b)) {
		status = BENCH_EXIT_USAGE;
		goto out_free;
	}
	ret = bench_cfg_setup(b);
	if (!ret) {
		bench_cfg_sizes(b);
		ret = phase_first_mounts(b);
	}
	if (!ret && b->o.sample)
		ret = phase_sample(b);
	if (!ret && b->o.order == BENCH_ORDER_ARCHIVE)
		ret = phase_order(b);
	if (!ret) {
		for (size_t i = 0; i < b->ncfg; i++)
			b->cfg[i].dig = bench_xcalloc(b->nfiles, sizeof(*b->cfg[i].dig));
		ret = phase_md5(b);
	}
	bench_ui_clear(&b->ui);
	if (ret == -EINTR || bench_interrupted) {
		bench_err("interrupted; unmounting");
		status = BENCH_EXIT_INTERRUPTED;
		goto out_tmp;
	}
	if (ret) {
		status = BENCH_EXIT_FAILED;
		goto out_tmp;
	}
	check_digests(b, &checks);
	if (write_reports(b, &checks))
		status = BENCH_EXIT_FAILED;
	else if (checks.nbad)
		status = BENCH_EXIT_MISMATCH;
out_tmp:
	bench_cfg_cleanup(b);
	bench_convert_cleanup(b);
	bench_cgroup_leave(b->cgroup); /* after the mounters have gone */
	b->cgroup = NULL;
out_free:
	bench_ui_clear(&b->ui);
	free_bench(b, &checks);
	return status;
}
