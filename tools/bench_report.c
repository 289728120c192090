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
#include "bench_report.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

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

enum { COL_NAME, COL_RANK, COL_RUNS, COL_MEAN, COL_SD, COL_MIN, COL_MEDIAN, COL_TIMES, NCOLS };

static const char *const col_head[NCOLS] = {
    "name", "rank", "runs", "mean", "sd", "min", "median", "timesBaseline",
};

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

int bench_report_table_text(FILE *f, const struct bench_table *t)
{
	size_t *row, nrows, width[NCOLS];
	char(*cell)[NCOLS][CELL];

	row = malloc((t->n ? t->n : 1) * sizeof(*row));
	cell = malloc((t->n ? t->n : 1) * sizeof(*cell));
	if (!row || !cell) {
		free(row);
		free(cell);
		return -ENOMEM;
	}
	nrows = rows_by_rank(t, row);
	if (!nrows)
		goto out;

	for (int c = 0; c < NCOLS; c++)
		width[c] = strlen(col_head[c]);
	for (size_t k = 0; k < nrows; k++) {
		const struct bench_result *r = &t->results[row[k]];
		size_t w = display_width(r->name);

		snprintf(cell[k][COL_RANK], CELL, "%d", r->rank);
		snprintf(cell[k][COL_RUNS], CELL, "%zu", r->s.n);
		fmt_num(cell[k][COL_MEAN], CELL, r->s.mean, t->precision);
		fmt_num(cell[k][COL_SD], CELL, r->s.sd, t->precision);
		fmt_num(cell[k][COL_MIN], CELL, r->s.min, t->precision);
		fmt_num(cell[k][COL_MEDIAN], CELL, r->s.median, t->precision);
		fmt_num(cell[k][COL_TIMES], CELL, r->times_baseline, 2);
		if (w > width[COL_NAME])
			width[COL_NAME] = w;
		for (int c = COL_RANK; c < NCOLS; c++)
			if (strlen(cell[k][c]) > width[c])
				width[c] = strlen(cell[k][c]);
	}

	fprintf(f, "%s (%s; baseline ", t->title, t->unit);
	put_display(f, t->baseline);
	fputs(")\n", f);
	put_rule(f, '-',
		 display_width(t->title) + strlen(t->unit) + display_width(t->baseline) + 14);
	fputs("\n\n", f);

	fprintf(f, " %-*s", (int)width[COL_NAME], col_head[COL_NAME]);
	for (int c = COL_RANK; c < NCOLS; c++)
		fprintf(f, " | %*s", (int)width[c], col_head[c]);
	fputc('\n', f);
	put_rule(f, '-', width[COL_NAME] + 2);
	for (int c = COL_RANK; c < NCOLS; c++) {
		fputc('|', f);
		put_rule(f, '-', width[c] + (c == NCOLS - 1 ? 1 : 2));
	}
	fputc('\n', f);
	for (size_t k = 0; k < nrows; k++) {
		const char *name = t->results[row[k]].name;

		fputc(' ', f);
		put_display(f, name);
		put_rule(f, ' ', width[COL_NAME] - display_width(name));
		for (int c = COL_RANK; c < NCOLS; c++)
			fprintf(f, " | %*s", (int)width[c], cell[k][c]);
		fputc('\n', f);
	}
	fputc('\n', f);
out:
	free(cell);
	free(row);
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
	fputs("metric,unit,name,rank,runs,mean,sd,min,median,max,times_baseline,baseline\n", f);
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

int bench_report_json(FILE *f, const struct bench_report *r)
{
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
		fputc('}', f);
	}
	fputs("],\n  \"metrics\": [\n", f);
	for (size_t t = 0; t < r->ntables; t++) {
		if (t)
			fputs(",\n", f);
		json_table(f, &r->tables[t]);
	}
	fputs("],\n", f);
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

int bench_report_svg(FILE *f, const struct bench_table *t, const char *subtitle)
{
	double top = 0, step, axis_max, x0, x1;
	size_t label_chars = 4, rows = t->n ? t->n : 1;
	int precision = t->precision;
	double axis_y, height;

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
	step = nice_step(top);
	axis_max = ceil(top / step - 1e-9) * step;
	/* 7.5 px per character is generous for a 13 px sans-serif font. */
	x0 = 20 + 7.5 * (double)label_chars;
	x1 = SVG_W - 190;
	axis_y = SVG_TOP + (double)rows * SVG_ROW;
	height = axis_y + 64;

#define X(v) (x0 + (x1 - x0) * (v) / axis_max)

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
	for (double v = 0; v <= axis_max + step / 2; v += step) {
		fprintf(f,
			"<line x1=\"%.1f\" y1=\"%d\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#ddd\"/>\n",
			X(v), SVG_TOP - 6, X(v), axis_y);
		fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">%g</text>\n", X(v),
			axis_y + 18, v);
	}
	fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#333\"/>\n", x0,
		axis_y, x1, axis_y);
	fprintf(f, "<line x1=\"%.1f\" y1=\"%d\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#333\"/>\n", x0,
		SVG_TOP - 6, x0, axis_y);
	fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">", (x0 + x1) / 2,
		axis_y + 42);
	xml_str(f, t->title, (size_t)-1);
	fputs(" (", f);
	xml_str(f, t->unit, (size_t)-1);
	fputs(")</text>\n", f);

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
