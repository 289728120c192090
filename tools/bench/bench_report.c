/* The text report of tarseek-bench (see bench_report.h), and the statistics of its tables.
 *
 * The text table copies the layout of the `benchmark` Python library, which users of archive
 * mounters already know from published comparisons: one table per metric, rows by rank, the
 * columns name | rank | runs | mean | sd | timesBaseline, with min and median added because a
 * cold-cache run is skewed by the odd slow outlier and the median shows it.  The summary ranks
 * the configurations by their median md5 time with their sizes and I/O; the JSON shows the
 * same rows (bench_summary_rows).  Names are shown with control characters as '?' in cells
 * and escaped like GNU tar elsewhere; numbers use the C locale's '.'; NaN is "n/a".
 *
 * The other writers: bench_fields.c (CSV and JSON, from one table of fields), bench_svg.c (a
 * bar chart); bench_escape.c has the escapes they all use.
 */
#include "tools/bench/bench_report_int.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common/size.h"

int bench_table_compute(struct bench_table *t, size_t want)
{
	double *means = NULL, base = NAN;
	int *ranks = NULL, ret = 0;

	t->baseline = NULL;
	means = malloc((t->n ? t->n : 1) * sizeof(*means));
	ranks = malloc((t->n ? t->n : 1) * sizeof(*ranks));
	if (!means || !ranks) {
		ret = -ENOMEM;
		goto out;
	}
	for (size_t i = 0; i < t->n; i++) {
		struct bench_result *r = &t->results[i];

		ret = bench_summarize(r->samples, r->nsamples, &r->s);
		if (ret)
			goto out;
		means[i] = r->s.mean;
	}
	bench_rank(means, t->n, ranks);
	if (want < t->n && t->results[want].nsamples) {
		base = means[want];
		t->baseline = t->results[want].name;
	} else {
		for (size_t i = 0; i < t->n; i++) {
			if (t->results[i].nsamples) {
				base = means[i];
				t->baseline = t->results[i].name;
				break;
			}
		}
	}
	for (size_t i = 0; i < t->n; i++) {
		t->results[i].rank = ranks[i];
		t->results[i].times_baseline = bench_times(means[i], base);
	}
out:
	free(ranks);
	free(means);
	return ret;
}

static void fmt_num(char *buf, size_t len, double v, int precision)
{
	if (isnan(v))
		snprintf(buf, len, "n/a");
	else
		snprintf(buf, len, "%.*f", precision, v);
}

enum {
	COL_NAME,
	COL_RANK,
	COL_RUNS,
	COL_MEAN,
	COL_SD,
	COL_MIN,
	COL_MEDIAN,
	COL_TIMES,
	COL_SIZE, /* these two only when the table has sizes */
	COL_RATIO,
	NCOLS
};

static const char *const col_head[NCOLS] = {
    "name", "rank", "runs", "mean", "sd", "min", "median", "timesBaseline", "size", "sizeRatio",
};

/* A size cell: format_size()'s "1.23 MB", "n/a" when unknown. */
static void fmt_size(char *buf, size_t len, double bytes)
{
	if (isnan(bytes))
		snprintf(buf, len, "n/a");
	else
		format_size(buf, len, bytes);
}

/* A size ratio cell: three decimals, blank when unknown. */
static void fmt_ratio(char *buf, size_t len, double ratio)
{
	if (isnan(ratio))
		buf[0] = '\0';
	else
		snprintf(buf, len, "%.3f", ratio);
}

#define CELL 40

/* Rows with data, by rank, ties in configuration order: an insertion sort on indices. */
static size_t rows_by_rank(const struct bench_table *t, size_t *row)
{
	size_t n = 0;

	for (size_t i = 0; i < t->n; i++) {
		size_t j;

		if (!t->results[i].nsamples)
			continue;
		for (j = n; j > 0 && t->results[row[j - 1]].rank > t->results[i].rank; j--)
			row[j] = row[j - 1];
		row[j] = i;
		n++;
	}
	return n;
}

static void put_rule(FILE *f, char c, size_t n)
{
	while (n--)
		fputc(c, f);
}

/* The header line, the rule under it and the rows of a text table (cells of columns 1 ..
 * ncols-1 right-aligned, names left-aligned), then an empty line. */
static void put_grid(FILE *f, size_t ncols, const char *const *head, const char *const *names,
		     char (*cell)[NCOLS][CELL], size_t nrows)
{
	size_t width[NCOLS];

	for (size_t c = 0; c < ncols; c++)
		width[c] = strlen(head[c]);
	for (size_t k = 0; k < nrows; k++) {
		if (bench_display_width(names[k]) > width[0])
			width[0] = bench_display_width(names[k]);
		for (size_t c = 1; c < ncols; c++)
			if (strlen(cell[k][c]) > width[c])
				width[c] = strlen(cell[k][c]);
	}
	fprintf(f, " %-*s", (int)width[0], head[0]);
	for (size_t c = 1; c < ncols; c++)
		fprintf(f, " | %*s", (int)width[c], head[c]);
	fputc('\n', f);
	put_rule(f, '-', width[0] + 2);
	for (size_t c = 1; c < ncols; c++) {
		fputc('|', f);
		put_rule(f, '-', width[c] + (c == ncols - 1 ? 1 : 2));
	}
	fputc('\n', f);
	for (size_t k = 0; k < nrows; k++) {
		fputc(' ', f);
		bench_put_display(f, names[k]);
		put_rule(f, ' ', width[0] - bench_display_width(names[k]));
		for (size_t c = 1; c < ncols; c++)
			fprintf(f, " | %*s", (int)width[c], cell[k][c]);
		fputc('\n', f);
	}
	fputc('\n', f);
}

/* A table's title, underlined. */
static void put_title(FILE *f, const char *title, const char *unit, const char *baseline,
		      const char *base_word)
{
	size_t len = bench_display_width(title);

	bench_put_display(f, title);
	if (unit) {
		fprintf(f, " (%s; %s ", unit, base_word);
		bench_put_display(f, baseline);
		fputc(')', f);
		len += strlen(unit) + strlen(base_word) + bench_display_width(baseline) + 6;
	}
	fputc('\n', f);
	put_rule(f, '-', len);
	fputs("\n\n", f);
}

int bench_report_table_text(FILE *f, const struct bench_table *t)
{
	size_t *row, nrows, ncols = t->sizes ? NCOLS : COL_SIZE;
	char(*cell)[NCOLS][CELL];
	const char **names;

	row = malloc((t->n ? t->n : 1) * sizeof(*row));
	cell = malloc((t->n ? t->n : 1) * sizeof(*cell));
	names = malloc((t->n ? t->n : 1) * sizeof(*names));
	if (!row || !cell || !names) {
		free(row);
		free(cell);
		free(names);
		return -ENOMEM;
	}
	nrows = rows_by_rank(t, row);
	if (!nrows)
		goto out;

	for (size_t k = 0; k < nrows; k++) {
		const struct bench_result *r = &t->results[row[k]];

		names[k] = r->name;
		snprintf(cell[k][COL_RANK], CELL, "%d", r->rank);
		snprintf(cell[k][COL_RUNS], CELL, "%zu", r->s.n);
		fmt_num(cell[k][COL_MEAN], CELL, r->s.mean, t->precision);
		fmt_num(cell[k][COL_SD], CELL, r->s.sd, t->precision);
		fmt_num(cell[k][COL_MIN], CELL, r->s.min, t->precision);
		fmt_num(cell[k][COL_MEDIAN], CELL, r->s.median, t->precision);
		fmt_num(cell[k][COL_TIMES], CELL, r->times_baseline, 2);
		fmt_size(cell[k][COL_SIZE], CELL, r->size);
		fmt_ratio(cell[k][COL_RATIO], CELL, r->size_ratio);
	}
	put_title(f, t->title, t->unit, t->baseline, "baseline");
	put_grid(f, ncols, col_head, names, cell, nrows);
out:
	free(names);
	free(cell);
	free(row);
	return bench_report_finish(f);
}

/* ---- the summary ---- */

const struct bench_table *bench_table_by_id(const struct bench_report *r, const char *id)
{
	for (size_t t = 0; t < r->ntables; t++)
		if (!strcmp(r->tables[t].id, id))
			return &r->tables[t];
	return NULL;
}

/* The summary's rows, by rank (ties in configuration order), into *out (malloc'd); their
 * number, 0 if there is no md5 table with data, -ENOMEM. */
long bench_summary_rows(const struct bench_report *r, struct bench_sum_row **out)
{
	static const char *const io_id[3] = {BENCH_ID_IO_BYTES, BENCH_ID_IO_CALLS,
					     BENCH_ID_IO_DISK};
	static const double io_scale[3] = {1024.0 * 1024.0, 1, 1024.0 * 1024.0};
	const struct bench_table *md5 = bench_table_by_id(r, "md5"), *io[3];
	struct bench_sum_row *v;
	double *med, fastest = NAN;
	int *rank;
	size_t n = 0;

	*out = NULL;
	if (!md5 || !md5->n)
		return 0;
	for (int k = 0; k < 3; k++)
		io[k] = bench_table_by_id(r, io_id[k]);
	v = calloc(md5->n, sizeof(*v));
	med = calloc(md5->n, sizeof(*med));
	rank = calloc(md5->n, sizeof(*rank));
	if (!v || !med || !rank) {
		free(v);
		free(med);
		free(rank);
		return -ENOMEM;
	}
	for (size_t i = 0; i < md5->n; i++) {
		med[i] = md5->results[i].nsamples ? md5->results[i].s.median : NAN;
		if (!isnan(med[i]) && !(med[i] >= fastest))
			fastest = med[i];
	}
	bench_rank(med, md5->n, rank);
	for (size_t i = 0; i < md5->n; i++) {
		const struct bench_result *res = &md5->results[i];
		struct bench_sum_row row = {
		    .cfg = i, .name = res->name, .rank = rank[i], .median = med[i]};
		size_t j;

		if (!res->nsamples)
			continue;
		row.times = bench_times(med[i], fastest);
		row.size = md5->sizes ? res->size : NAN;
		row.ratio = md5->sizes ? res->size_ratio : NAN;
		for (int k = 0; k < 3; k++)
			row.io[k] = io[k] && i < io[k]->n && io[k]->results[i].nsamples
					? io[k]->results[i].s.median * io_scale[k]
					: NAN;
		for (j = n; j > 0 && v[j - 1].rank > row.rank; j--)
			v[j] = v[j - 1];
		v[j] = row;
		n++;
	}
	free(med);
	free(rank);
	*out = v;
	return (long)n;
}

enum { SUM_NAME, SUM_RANK, SUM_MEDIAN, SUM_TIMES, SUM_SIZE, SUM_RATIO, SUM_IO, NSUM = SUM_IO + 3 };

static const char *const sum_head[NSUM] = {
    "name",	 "rank",       "median",     "timesFastest", "size",
    "sizeRatio", "bytes read", "read calls", "disk bytes",
};

int bench_report_summary_text(FILE *f, const struct bench_report *r)
{
	const struct bench_table *md5 = bench_table_by_id(r, "md5");
	char(*cell)[NCOLS][CELL] = NULL, title[200];
	const char **names = NULL;
	struct bench_sum_row *v;
	long n = bench_summary_rows(r, &v);

	_Static_assert((int)NSUM <= (int)NCOLS, "the summary's cells fit a table's");
	if (n <= 0)
		return n < 0 ? -ENOMEM : bench_report_finish(f);
	cell = malloc((size_t)n * sizeof(*cell));
	names = malloc((size_t)n * sizeof(*names));
	if (!cell || !names) {
		free(cell);
		free(names);
		free(v);
		return -ENOMEM;
	}
	for (long k = 0; k < n; k++) {
		names[k] = md5->results[v[k].cfg].name;
		snprintf(cell[k][SUM_RANK], CELL, "%d", v[k].rank);
		fmt_num(cell[k][SUM_MEDIAN], CELL, v[k].median, md5->precision);
		fmt_num(cell[k][SUM_TIMES], CELL, v[k].times, 2);
		fmt_size(cell[k][SUM_SIZE], CELL, v[k].size);
		fmt_ratio(cell[k][SUM_RATIO], CELL, v[k].ratio);
		for (int i = 0; i < 3; i++) {
			char *c = cell[k][SUM_IO + i];

			if (isnan(v[k].io[i]))
				c[0] = '\0';
			else if (i == 1)
				snprintf(c, CELL, "%.0f", v[k].io[i]);
			else
				format_size(c, CELL, v[k].io[i]);
		}
	}
	snprintf(title, sizeof(title), "summary: %s workload by median time (%s), fastest first",
		 r->exec ? r->exec : "md5", md5->unit);
	put_title(f, title, NULL, NULL, NULL);
	put_grid(f, NSUM, sum_head, names, cell, (size_t)n);
	if (r->plain_from) {
		int tree = 0;

		for (size_t i = 0; i < r->nconfigs; i++)
			if (!strcmp(r->configs[i].name, r->plain_from))
				tree = !strcmp(r->configs[i].kind, "directory");
		fputs("sizeRatio: size / the size of ", f);
		bench_put_display(f, r->plain_from);
		fprintf(f, " (%.0f bytes, %s).\n", r->plain_size,
			tree ? "its files' total: no archive named .tar to compare with"
			     : "the plain tar");
	}
	fputs("bytes read, read calls, disk bytes: the mounter's rchar, syscr and read_bytes "
	      "(/proc/PID/io),\nmedians per timed pass.\n\n",
	      f);
	free(names);
	free(cell);
	free(v);
	return bench_report_finish(f);
}

static void put_check_text(FILE *f, const struct bench_report *r, size_t max_bad)
{
	size_t shown = 0, i = 0;

	if (!r->nbad && r->nconfigs == 1) {
		fprintf(f,
			"%s check: all %zu files read the same in every run (one configuration, "
			"no other to compare with).\n",
			r->exec ? r->exec : "md5", r->nfiles);
		return;
	}
	if (!r->nbad && !r->list && !r->sample) {
		fprintf(f, "%s check: all %zu configurations agree on the whole tree.\n", r->exec,
			r->nconfigs);
		return;
	}
	if (!r->nbad) {
		fprintf(f, "%s check: all %zu configurations agree on all %zu files.\n",
			r->exec ? r->exec : "md5", r->nconfigs, r->nfiles);
		return;
	}
	fprintf(f,
		"%s check FAILED: %zu of %zu files differ between configurations or could not "
		"be read:\n",
		r->exec ? r->exec : "md5", r->nbad, r->nfiles);
	while (i < r->nchecks) {
		size_t end = i;

		while (end < r->nchecks && !strcmp(r->checks[end].path, r->checks[i].path))
			end++;
		if (shown++ < max_bad) {
			fputs("  ", f);
			bench_put_escaped(f, r->checks[i].path);
			fputc('\n', f);
			/* One line per distinct digest with every configuration that read it, then
			 * one line per failed read. */
			for (size_t a = i; a < end; a++) {
				const struct bench_check *ca = &r->checks[a];
				int first = 1;

				if (ca->error) {
					fputs("    ", f);
					bench_put_display(f, ca->config);
					fprintf(f, ": read error: %s\n", ca->error);
					continue;
				}
				for (size_t b = i; b < a; b++)
					if (r->checks[b].digest &&
					    !strcmp(r->checks[b].digest, ca->digest))
						goto seen;
				for (size_t b = a; b < end; b++) {
					if (!r->checks[b].digest ||
					    strcmp(r->checks[b].digest, ca->digest))
						continue;
					fputs(first ? "    " : ", ", f);
					bench_put_display(f, r->checks[b].config);
					first = 0;
				}
				fprintf(f, ": %s\n", ca->digest);
			seen:;
			}
		}
		i = end;
	}
	if (shown > max_bad)
		fprintf(f, "  ... and %zu more (all of them are in the JSON report)\n",
			shown - max_bad);
}

int bench_report_text(FILE *f, const struct bench_report *r, size_t max_bad)
{
	int ret;

	fprintf(f, "tarseek-bench %s\n", r->version);
	if (r->list) {
		fprintf(f, "files:     %zu from the list ", r->nfiles);
		bench_put_escaped(f, r->list);
		fputc('\n', f);
	} else if (!r->sample) {
		fprintf(f, "files:     the whole tree, walked by %s\n", r->exec);
	} else {
		fprintf(f, "files:     %zu regular files drawn at random from the tree of ",
			r->nfiles);
		bench_put_display(f, r->baseline);
		fprintf(f, " (--sample %zu)\n", r->sample);
	}
	fprintf(f, "runs:      %u per configuration, %s\n", r->runs,
		r->cold ? "cold (page cache dropped and a fresh mount before each run)"
			: "warm (after one untimed pass, one mount for all runs)");
	fprintf(f, "digest:    %s\n", r->exec ? r->exec : "md5, computed in-process");
	if (r->order)
		fprintf(f, "order:     %s\n", r->order);
	if (r->throttle)
		fprintf(f, "throttle:  %s (reads of the archives' disk, through a cgroup)\n",
			r->throttle);
	fprintf(f, "seed:      %llu\n", (unsigned long long)r->seed);
	fputs("configurations:\n", f);
	for (size_t i = 0; i < r->nconfigs; i++) {
		const struct bench_config_info *c = &r->configs[i];

		fputs("  ", f);
		bench_put_display(f, c->name);
		fprintf(f, ": %s ", c->kind);
		bench_put_escaped(f, c->source);
		if (c->command) {
			fputs(" with `", f);
			bench_put_escaped(f, c->command);
			fputc('`', f);
		}
		fputc('\n', f);
	}
	fputc('\n', f);
	for (size_t t = 0; t < r->ntables; t++) {
		ret = bench_report_table_text(f, &r->tables[t]);
		if (ret)
			return ret;
	}
	ret = bench_report_summary_text(f, r);
	if (ret)
		return ret;
	put_check_text(f, r, max_bad);
	fprintf(f,
		"\nEach configuration ran %u time%s, in random, non-consecutive order (seed %llu), "
		"by tarseek-bench %s%s%s.\n",
		r->runs, r->runs == 1 ? "" : "s", (unsigned long long)r->seed, r->version,
		r->when ? " on " : "", r->when ? r->when : "");
	return bench_report_finish(f);
}
