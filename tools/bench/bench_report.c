/* Writers for tarseek-bench reports (see bench_report.h).
 *
 * The text table copies the layout of the `benchmark` Python library, which users of archive
 * mounters already know from published comparisons: one table per metric, rows by rank, the
 * columns name | rank | runs | mean | sd | timesBaseline, with min and median added because a
 * cold-cache run is skewed by the odd slow outlier and the median shows it.  CSV has one row per
 * metric and configuration for spreadsheets; JSON carries everything (samples, the file list,
 * every failed check) for scripts; the SVG is a bar chart meant to be read at a glance.
 *
 * Names and paths are arbitrary bytes.  Each format gets them in the one form it can carry:
 * escaped like GNU tar in the text, quoted in CSV, escaped with invalid UTF-8 replaced in JSON
 * and SVG (both must parse).  Numbers use the C locale's '.'; NaN is "n/a", an empty CSV field
 * or JSON null.
 */
#include "tools/bench/bench_report.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common/size.h"

static int finish(FILE *f)
{
	if (fflush(f) || ferror(f))
		return -EIO;
	return 0;
}

/* Length of the valid UTF-8 sequence at s (1..4), or 0 if the bytes there are not one. */
static size_t utf8_len(const unsigned char *s)
{
	unsigned c = s[0];
	size_t n;
	unsigned min;

	if (c < 0x80)
		return 1;
	if (c >= 0xc2 && c <= 0xdf) {
		n = 2;
		min = 0x80;
	} else if (c >= 0xe0 && c <= 0xef) {
		n = 3;
		min = 0x800;
	} else if (c >= 0xf0 && c <= 0xf4) {
		n = 4;
		min = 0x10000;
	} else {
		return 0;
	}
	unsigned cp = c & (0x3f >> (n - 1));

	for (size_t i = 1; i < n; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
		cp = cp << 6 | (s[i] & 0x3f);
	}
	if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
		return 0;
	return n;
}

/* Characters a terminal shows for s: control bytes count one ('?'), UTF-8 sequences one. */
static size_t display_width(const char *s)
{
	size_t w = 0;

	for (const unsigned char *p = (const unsigned char *)s; *p; w++) {
		size_t n = utf8_len(p);

		p += n ? n : 1;
	}
	return w;
}

/* A name in a table cell: control characters become '?' so rows stay one line each. */
static void put_display(FILE *f, const char *s)
{
	for (const unsigned char *p = (const unsigned char *)s; *p; p++)
		fputc(*p < 0x20 || *p == 0x7f ? '?' : *p, f);
}

void bench_put_escaped(FILE *f, const char *s)
{
	for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
		switch (*p) {
		case '\\':
			fputs("\\\\", f);
			break;
		case '\n':
			fputs("\\n", f);
			break;
		case '\t':
			fputs("\\t", f);
			break;
		case '\r':
			fputs("\\r", f);
			break;
		default:
			if (*p < 0x20 || *p == 0x7f)
				fprintf(f, "\\%03o", *p);
			else
				fputc(*p, f);
		}
	}
}

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
		if (display_width(names[k]) > width[0])
			width[0] = display_width(names[k]);
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
		put_display(f, names[k]);
		put_rule(f, ' ', width[0] - display_width(names[k]));
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
	size_t len = display_width(title);

	put_display(f, title);
	if (unit) {
		fprintf(f, " (%s; %s ", unit, base_word);
		put_display(f, baseline);
		fputc(')', f);
		len += strlen(unit) + strlen(base_word) + display_width(baseline) + 6;
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
	return finish(f);
}

/* ---- the summary ---- */

struct sum_row {
	size_t cfg; /* index in the tables' results */
	int rank;
	double median, times, size, ratio;
	double io[3]; /* medians of bytes read, read calls, disk bytes; NaN: none */
};

static const struct bench_table *table_by_id(const struct bench_report *r, const char *id)
{
	for (size_t t = 0; t < r->ntables; t++)
		if (!strcmp(r->tables[t].id, id))
			return &r->tables[t];
	return NULL;
}

/* The summary's rows, by rank (ties in configuration order), into *out (malloc'd); their
 * number, 0 if there is no md5 table with data, -ENOMEM. */
static long summary_rows(const struct bench_report *r, struct sum_row **out)
{
	static const char *const io_id[3] = {BENCH_ID_IO_BYTES, BENCH_ID_IO_CALLS,
					     BENCH_ID_IO_DISK};
	static const double io_scale[3] = {1024.0 * 1024.0, 1, 1024.0 * 1024.0};
	const struct bench_table *md5 = table_by_id(r, "md5"), *io[3];
	struct sum_row *v;
	double *med, fastest = NAN;
	int *rank;
	size_t n = 0;

	*out = NULL;
	if (!md5 || !md5->n)
		return 0;
	for (int k = 0; k < 3; k++)
		io[k] = table_by_id(r, io_id[k]);
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
		struct sum_row row = {.cfg = i, .rank = rank[i], .median = med[i]};
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
	const struct bench_table *md5 = table_by_id(r, "md5");
	char(*cell)[NCOLS][CELL] = NULL, title[200];
	const char **names = NULL;
	struct sum_row *v;
	long n = summary_rows(r, &v);

	_Static_assert((int)NSUM <= (int)NCOLS, "the summary's cells fit a table's");
	if (n <= 0)
		return n < 0 ? -ENOMEM : finish(f);
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
		put_display(f, r->plain_from);
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
	return finish(f);
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
					put_display(f, ca->config);
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
					put_display(f, r->checks[b].config);
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
		put_display(f, r->baseline);
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
		put_display(f, c->name);
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
	return finish(f);
}

/* CSV (RFC 4180): a field is quoted when it holds a comma, a quote or a line break. */
static void csv_str(FILE *f, const char *s)
{
	if (!s)
		return;
	if (!strpbrk(s, ",\"\r\n")) {
		fputs(s, f);
		return;
	}
	fputc('"', f);
	for (; *s; s++) {
		if (*s == '"')
			fputc('"', f);
		fputc(*s, f);
	}
	fputc('"', f);
}

static void csv_num(FILE *f, double v)
{
	if (!isnan(v))
		fprintf(f, "%.9g", v);
}

int bench_report_csv(FILE *f, const struct bench_report *r)
{
	fputs("metric,unit,name,rank,runs,mean,sd,min,median,max,times_baseline,baseline,size,"
	      "size_ratio\n",
	      f);
	for (size_t t = 0; t < r->ntables; t++) {
		const struct bench_table *tb = &r->tables[t];

		for (size_t i = 0; i < tb->n; i++) {
			const struct bench_result *res = &tb->results[i];

			if (!res->nsamples)
				continue;
			csv_str(f, tb->id);
			fputc(',', f);
			csv_str(f, tb->unit);
			fputc(',', f);
			csv_str(f, res->name);
			fprintf(f, ",%d,%zu,", res->rank, res->s.n);
			csv_num(f, res->s.mean);
			fputc(',', f);
			csv_num(f, res->s.sd);
			fputc(',', f);
			csv_num(f, res->s.min);
			fputc(',', f);
			csv_num(f, res->s.median);
			fputc(',', f);
			csv_num(f, res->s.max);
			fputc(',', f);
			csv_num(f, res->times_baseline);
			fputc(',', f);
			csv_str(f, tb->baseline);
			fputc(',', f);
			if (tb->sizes && !isnan(res->size))
				fprintf(f, "%.0f", res->size);
			fputc(',', f);
			if (tb->sizes)
				csv_num(f, res->size_ratio);
			fputc('\n', f);
		}
	}
	return finish(f);
}

static void json_str(FILE *f, const char *s)
{
	if (!s) {
		fputs("null", f);
		return;
	}
	fputc('"', f);
	for (const unsigned char *p = (const unsigned char *)s; *p;) {
		size_t n = utf8_len(p);

		if (!n) {
			fputs("\\ufffd", f);
			p++;
			continue;
		}
		if (*p == '"' || *p == '\\')
			fprintf(f, "\\%c", *p);
		else if (*p == '\n')
			fputs("\\n", f);
		else if (*p == '\t')
			fputs("\\t", f);
		else if (*p < 0x20 || *p == 0x7f)
			fprintf(f, "\\u%04x", *p);
		else
			fwrite(p, 1, n, f);
		p += n;
	}
	fputc('"', f);
}

static void json_num(FILE *f, double v)
{
	if (isnan(v) || isinf(v))
		fputs("null", f);
	else
		fprintf(f, "%.9g", v);
}

static void json_table(FILE *f, const struct bench_table *t)
{
	int first = 1;

	fputs("    {\"id\": ", f);
	json_str(f, t->id);
	fputs(", \"title\": ", f);
	json_str(f, t->title);
	fputs(", \"unit\": ", f);
	json_str(f, t->unit);
	fputs(", \"baseline\": ", f);
	json_str(f, t->baseline);
	fputs(",\n     \"results\": [", f);
	for (size_t i = 0; i < t->n; i++) {
		const struct bench_result *r = &t->results[i];

		if (!r->nsamples)
			continue;
		fputs(first ? "\n      {\"name\": " : ",\n      {\"name\": ", f);
		first = 0;
		json_str(f, r->name);
		fprintf(f, ", \"rank\": %d, \"runs\": %zu, \"mean\": ", r->rank, r->s.n);
		json_num(f, r->s.mean);
		fputs(", \"sd\": ", f);
		json_num(f, r->s.sd);
		fputs(", \"min\": ", f);
		json_num(f, r->s.min);
		fputs(", \"median\": ", f);
		json_num(f, r->s.median);
		fputs(", \"max\": ", f);
		json_num(f, r->s.max);
		fputs(", \"times_baseline\": ", f);
		json_num(f, r->times_baseline);
		fputs(", \"size\": ", f);
		json_num(f, t->sizes ? r->size : NAN);
		fputs(", \"size_ratio\": ", f);
		json_num(f, t->sizes ? r->size_ratio : NAN);
		fputs(", \"samples\": [", f);
		for (size_t k = 0; k < r->nsamples; k++) {
			if (k)
				fputs(", ", f);
			json_num(f, r->samples[k]);
		}
		fputs("]}", f);
	}
	fputs("]}", f);
}

static void json_checks(FILE *f, const struct bench_report *r)
{
	size_t i = 0;
	int first = 1;

	fprintf(f, "  \"check\": {\"files\": %zu, \"bad\": %zu, \"ok\": %s, \"problems\": [",
		r->nfiles, r->nbad, r->nbad ? "false" : "true");
	while (i < r->nchecks) {
		size_t end = i;

		while (end < r->nchecks && !strcmp(r->checks[end].path, r->checks[i].path))
			end++;
		fputs(first ? "\n    {\"path\": " : ",\n    {\"path\": ", f);
		first = 0;
		json_str(f, r->checks[i].path);
		fputs(", \"results\": [", f);
		for (size_t k = i; k < end; k++) {
			fputs(k > i ? ", {\"configuration\": " : "{\"configuration\": ", f);
			json_str(f, r->checks[k].config);
			fputs(", \"digest\": ", f);
			json_str(f, r->checks[k].digest);
			fputs(", \"error\": ", f);
			json_str(f, r->checks[k].error);
			fputc('}', f);
		}
		fputs("]}", f);
		i = end;
	}
	fputs("]},\n", f);
}

/* A size in bytes: a whole number, or null. */
static void json_size(FILE *f, double v)
{
	if (isnan(v) || isinf(v))
		fputs("null", f);
	else
		fprintf(f, "%.0f", v);
}

/* The orders a configuration read the files in, one list of file numbers per timed pass;
 * null when they were not recorded (--order list). */
static void json_orders(FILE *f, const struct bench_config_info *c, size_t nfiles)
{
	if (!c->orders) {
		fputs("null", f);
		return;
	}
	fputc('[', f);
	for (size_t p = 0; p < c->norders; p++) {
		fputs(p ? ", [" : "[", f);
		for (size_t i = 0; i < nfiles; i++)
			fprintf(f, i ? ", %zu" : "%zu", c->orders[p * nfiles + i]);
		fputc(']', f);
	}
	fputc(']', f);
}

static int json_summary(FILE *f, const struct bench_report *r)
{
	const struct bench_table *md5 = table_by_id(r, "md5");
	struct sum_row *v;
	long n = summary_rows(r, &v);

	if (n < 0)
		return -ENOMEM;
	fputs("  \"summary\": [", f);
	for (long k = 0; k < n; k++) {
		fputs(k ? ",\n    {\"name\": " : "\n    {\"name\": ", f);
		json_str(f, md5->results[v[k].cfg].name);
		fprintf(f, ", \"rank\": %d, \"median\": ", v[k].rank);
		json_num(f, v[k].median);
		fputs(", \"times_fastest\": ", f);
		json_num(f, v[k].times);
		fputs(", \"size\": ", f);
		json_size(f, v[k].size);
		fputs(", \"size_ratio\": ", f);
		json_num(f, v[k].ratio);
		fputs(", \"bytes_read\": ", f);
		json_size(f, v[k].io[0]);
		fputs(", \"read_calls\": ", f);
		json_size(f, v[k].io[1]);
		fputs(", \"disk_bytes\": ", f);
		json_size(f, v[k].io[2]);
		fputc('}', f);
	}
	fputs("],\n", f);
	free(v);
	return 0;
}

int bench_report_json(FILE *f, const struct bench_report *r)
{
	int ret;

	fputs("{\n  \"tool\": \"tarseek-bench\",\n  \"version\": ", f);
	json_str(f, r->version);
	fputs(",\n  \"when\": ", f);
	json_str(f, r->when);
	fprintf(f, ",\n  \"seed\": %llu,\n  \"cold\": %s,\n  \"runs\": %u,\n  \"digest\": ",
		(unsigned long long)r->seed, r->cold ? "true" : "false", r->runs);
	json_str(f, r->exec ? r->exec : "md5");
	fputs(",\n  \"exec\": ", f);
	json_str(f, r->exec);
	fputs(",\n  \"list\": ", f);
	json_str(f, r->list);
	fprintf(f, ",\n  \"sample\": %zu,\n  \"baseline\": ", r->sample);
	json_str(f, r->baseline);
	fputs(",\n  \"order\": ", f);
	json_str(f, r->order ? r->order : "list");
	fputs(",\n  \"throttle\": ", f);
	json_str(f, r->throttle);
	fputs(",\n  \"plain_size\": ", f);
	json_size(f, r->plain_size);
	fputs(",\n  \"plain_from\": ", f);
	json_str(f, r->plain_from);
	fputs(",\n  \"configurations\": [", f);
	for (size_t i = 0; i < r->nconfigs; i++) {
		const struct bench_config_info *c = &r->configs[i];

		fputs(i ? ",\n    {\"name\": " : "\n    {\"name\": ", f);
		json_str(f, c->name);
		fputs(", \"kind\": ", f);
		json_str(f, c->kind);
		fputs(", \"source\": ", f);
		json_str(f, c->source);
		fputs(", \"command\": ", f);
		json_str(f, c->command);
		fputs(", \"size\": ", f);
		json_size(f, c->size);
		fputs(", \"size_ratio\": ", f);
		json_num(f, c->size_ratio);
		fputs(", \"read_orders\": ", f);
		json_orders(f, c, r->nfiles);
		fputc('}', f);
	}
	fputs("],\n  \"metrics\": [\n", f);
	for (size_t t = 0; t < r->ntables; t++) {
		if (t)
			fputs(",\n", f);
		json_table(f, &r->tables[t]);
	}
	fputs("],\n", f);
	ret = json_summary(f, r);
	if (ret)
		return ret;
	json_checks(f, r);
	fputs("  \"files\": [", f);
	for (size_t i = 0; i < r->nfiles; i++) {
		fputs(i ? ",\n    " : "\n    ", f);
		json_str(f, r->files[i]);
	}
	fputs("]\n}\n", f);
	return finish(f);
}

/* XML character data or attribute value; invalid UTF-8 and characters XML 1.0 forbids
 * become U+FFFD; at most max characters, then an ellipsis. */
static void xml_str(FILE *f, const char *s, size_t max)
{
	size_t count = 0;

	for (const unsigned char *p = (const unsigned char *)s; *p; count++) {
		size_t n = utf8_len(p);

		if (count == max) {
			fputs("\xe2\x80\xa6", f);
			break;
		}
		if (!n || (*p < 0x20 && *p != '\t' && *p != '\n') || *p == 0x7f) {
			fputs("\xef\xbf\xbd", f);
			p += n ? n : 1;
			continue;
		}
		switch (*p) {
		case '&':
			fputs("&amp;", f);
			break;
		case '<':
			fputs("&lt;", f);
			break;
		case '>':
			fputs("&gt;", f);
			break;
		case '"':
			fputs("&quot;", f);
			break;
		case '\'':
			fputs("&apos;", f);
			break;
		default:
			fwrite(p, 1, n, f);
		}
		p += n;
	}
}

/* A round tick step (1, 2 or 5 times a power of ten) giving about five ticks up to max. */
static double nice_step(double max)
{
	double raw = max / 5, mag = pow(10, floor(log10(raw))), r = raw / mag;

	if (r <= 1)
		return mag;
	if (r <= 2)
		return 2 * mag;
	if (r <= 5)
		return 5 * mag;
	return 10 * mag;
}

#define SVG_W 860
#define SVG_FONT "font-family=\"DejaVu Sans, Verdana, Arial, sans-serif\""
#define SVG_MAXLABEL 40
#define SVG_ROW 30
#define SVG_BAR 18
#define SVG_TOP 90
#define SVG_LOG_SPAN 20 /* a larger max/min of the bars switches to a log axis */

int bench_svg_log_scale(const struct bench_table *t)
{
	double lo = INFINITY, hi = 0;

	for (size_t i = 0; i < t->n; i++) {
		double m = t->results[i].s.mean;

		if (!t->results[i].nsamples)
			continue;
		if (!(m > 0))
			return 0; /* a zero bar has no place on a log axis */
		if (m < lo)
			lo = m;
		if (m > hi)
			hi = m;
	}
	return hi > 0 && hi / lo > SVG_LOG_SPAN;
}

/* The value axis: linear from 0 to max in round steps, or logarithmic over whole decades
 * [lo, hi) with ticks at 1, 2 and 5 per decade (only the powers of ten past 3 decades). */
struct axis {
	int log;
	double lo, hi, step;
	double x0, x1; /* pixels */
};

static double axis_x(const struct axis *a, double v)
{
	if (!a->log)
		return a->x0 + (a->x1 - a->x0) * v / a->hi;
	if (v < a->lo)
		v = a->lo;
	return a->x0 + (a->x1 - a->x0) * (log10(v) - log10(a->lo)) / (log10(a->hi) - log10(a->lo));
}

static void axis_make(struct axis *a, const struct bench_table *t, double top)
{
	double bottom = INFINITY;

	a->log = bench_svg_log_scale(t);
	if (!a->log) {
		a->lo = 0;
		a->step = nice_step(top);
		a->hi = ceil(top / a->step - 1e-9) * a->step;
		return;
	}
	for (size_t i = 0; i < t->n; i++)
		if (t->results[i].nsamples && t->results[i].s.mean < bottom)
			bottom = t->results[i].s.mean;
	a->lo = pow(10, floor(log10(bottom) + 1e-9));
	a->hi = pow(10, ceil(log10(top) - 1e-9));
	if (a->hi <= a->lo)
		a->hi = a->lo * 10;
}

/* Grid lines and their labels under the bars. */
static void axis_ticks(FILE *f, const struct axis *a, double axis_y)
{
	static const double linear_ticks[] = {1}, log_ticks[] = {1, 2, 5};
	const double *mult = a->log ? log_ticks : linear_ticks;
	size_t nmult = a->log && log10(a->hi / a->lo) <= 3.5 ? 3 : 1;

	if (!a->log) {
		for (double v = 0; v <= a->hi + a->step / 2; v += a->step) {
			fprintf(f,
				"<line x1=\"%.1f\" y1=\"%d\" x2=\"%.1f\" y2=\"%.1f\" "
				"stroke=\"#ddd\"/>\n",
				axis_x(a, v), SVG_TOP - 6, axis_x(a, v), axis_y);
			fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">%g</text>\n",
				axis_x(a, v), axis_y + 18, v);
		}
		return;
	}
	for (double dec = a->lo; dec <= a->hi * 1.0001; dec *= 10) {
		for (size_t k = 0; k < nmult; k++) {
			double v = dec * mult[k];

			if (v > a->hi * 1.0001)
				break;
			fprintf(f,
				"<line x1=\"%.1f\" y1=\"%d\" x2=\"%.1f\" y2=\"%.1f\" "
				"stroke=\"%s\"/>\n",
				axis_x(a, v), SVG_TOP - 6, axis_x(a, v), axis_y,
				k ? "#eee" : "#ccc");
			fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">%g</text>\n",
				axis_x(a, v), axis_y + 18, v);
		}
	}
}

int bench_report_svg(FILE *f, const struct bench_table *t, const char *subtitle)
{
	double top = 0;
	size_t label_chars = 4, rows = t->n ? t->n : 1;
	int precision = t->precision;
	double axis_y, height, x0, x1;
	struct axis ax;

	for (size_t i = 0; i < t->n; i++) {
		const struct bench_result *r = &t->results[i];
		double end = r->s.mean + (isnan(r->s.sd) ? 0 : r->s.sd);
		size_t w = display_width(r->name);

		if (r->nsamples && end > top)
			top = end;
		if (r->nsamples && r->s.max > top)
			top = r->s.max;
		if (w > label_chars)
			label_chars = w;
	}
	if (label_chars > SVG_MAXLABEL + 1)
		label_chars = SVG_MAXLABEL + 1;
	if (!(top > 0))
		top = 1;
	axis_make(&ax, t, top);
	/* 7.5 px per character is generous for a 13 px sans-serif font. */
	x0 = ax.x0 = 20 + 7.5 * (double)label_chars;
	x1 = ax.x1 = SVG_W - 190;
	axis_y = SVG_TOP + (double)rows * SVG_ROW;
	height = axis_y + 64;

#define X(v) axis_x(&ax, (v))

	fprintf(f,
		"<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
		"<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%.0f\" "
		"viewBox=\"0 0 %d %.0f\" " SVG_FONT " font-size=\"13\">\n",
		SVG_W, height, SVG_W, height);
	fputs("<title>", f);
	xml_str(f, t->title, (size_t)-1);
	fputs("</title>\n", f);
	fprintf(f, "<rect width=\"%d\" height=\"%.0f\" fill=\"white\"/>\n", SVG_W, height);
	fputs("<text x=\"20\" y=\"28\" font-size=\"17\" font-weight=\"bold\">", f);
	xml_str(f, t->title, (size_t)-1);
	fputs("</text>\n", f);
	fputs("<text x=\"20\" y=\"50\" fill=\"#444\">", f);
	if (subtitle)
		xml_str(f, subtitle, (size_t)-1);
	fputs("</text>\n<text x=\"20\" y=\"68\" fill=\"#444\">bars: mean; whiskers: \xc2\xb1 one "
	      "standard deviation",
	      f);
	if (t->baseline) {
		fputs("; (n\xc3\x97): times the baseline, ", f);
		xml_str(f, t->baseline, SVG_MAXLABEL);
	}
	fputs("</text>\n", f);

	/* Grid and tick labels. */
	axis_ticks(f, &ax, axis_y);
	fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#333\"/>\n", x0,
		axis_y, x1, axis_y);
	fprintf(f, "<line x1=\"%.1f\" y1=\"%d\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#333\"/>\n", x0,
		SVG_TOP - 6, x0, axis_y);
	fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">", (x0 + x1) / 2,
		axis_y + 42);
	xml_str(f, t->title, (size_t)-1);
	fputs(" (", f);
	xml_str(f, t->unit, (size_t)-1);
	fputs(ax.log ? ", log scale)</text>\n" : ")</text>\n", f);

	for (size_t i = 0; i < t->n; i++) {
		const struct bench_result *r = &t->results[i];
		double y = SVG_TOP + (double)i * SVG_ROW, cy = y + SVG_BAR / 2.0;
		int is_base = t->baseline && !strcmp(r->name, t->baseline);

		fputs("<g>\n<title>", f);
		xml_str(f, r->name, (size_t)-1);
		fputs("</title>\n", f);
		fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\">", x0 - 8, cy + 4.5);
		xml_str(f, r->name, SVG_MAXLABEL);
		fputs("</text>\n", f);
		if (!r->nsamples) {
			fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" fill=\"#666\">n/a</text>\n</g>\n",
				x0 + 6, cy + 4.5);
			continue;
		}
		double lo = r->s.mean, hi = r->s.mean;

		if (!isnan(r->s.sd)) {
			lo = r->s.mean - r->s.sd < 0 ? 0 : r->s.mean - r->s.sd;
			hi = r->s.mean + r->s.sd;
		}
		fprintf(f,
			"<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%d\" fill=\"%s\"/>\n",
			x0, y, X(r->s.mean) - x0, SVG_BAR, is_base ? "#9c9c9c" : "#4c78a8");
		if (hi > lo) {
			fprintf(f,
				"<path d=\"M%.1f %.1fH%.1fM%.1f %.1fV%.1fM%.1f %.1fV%.1f\" "
				"stroke=\"#222\" stroke-width=\"1.5\" fill=\"none\"/>\n",
				X(lo), cy, X(hi), X(lo), cy - 5, cy + 5, X(hi), cy - 5, cy + 5);
		}
		fprintf(f, "<text x=\"%.1f\" y=\"%.1f\">%.*f", X(hi) + 8, cy + 4.5, precision,
			r->s.mean);
		if (!isnan(r->s.sd))
			fprintf(f, " \xc2\xb1 %.*f", precision, r->s.sd);
		if (is_base)
			fputs(" (baseline)", f);
		else if (!isnan(r->times_baseline))
			fprintf(f, " (%.2f\xc3\x97)", r->times_baseline);
		fputs("</text>\n</g>\n", f);
	}
#undef X
	fputs("</svg>\n", f);
	return finish(f);
}
