/* CSV and JSON reports of tarseek-bench (see bench_report.h), from tables of fields.
 *
 * CSV has one row per metric and configuration, for spreadsheets; JSON carries everything
 * (samples, the file list, every failed check, the read orders) for scripts.  What a row of
 * each holds is written once, in a table of fields -- the name each format gives it, its type,
 * where it is (an offset in the record) -- that both writers walk: a metric's row
 * (metric_fields: the CSV's columns, and the JSON's tables and their results), a
 * configuration and a row of the summary (JSON only).  A type says how each format prints
 * it: numbers with the C locale's '.' and 9 significant digits, sizes in whole bytes, strings
 * quoted as RFC 4180 says or escaped for JSON (invalid UTF-8 as U+FFFD); a missing number (NaN)
 * is an empty CSV field or a JSON null.  What is not a scalar (samples, read orders, checks)
 * is written out by the JSON writer where it goes.
 */
#include "tools/bench/bench_report_int.h"

#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

/* ---- the fields ---------------------------------------------------------------------------- */

enum bench_ftype {
	BF_STR,	  /* const char *: NULL is an empty CSV field, a JSON null */
	BF_INT,	  /* int */
	BF_COUNT, /* size_t */
	BF_NUM,	  /* double: %.9g; NaN missing (infinities too, in JSON) */
	BF_BYTES, /* double, a size in bytes: a whole number; NaN missing (infinities too, JSON) */
};

enum {
	BF_OUTER = 1, /* a field of the outer record (a metric's table), not of the row */
	BF_SIZES = 2, /* a metric's size field: missing unless its table has sizes */
};

struct bench_field {
	const char *csv;  /* the CSV column; NULL: not in the CSV */
	const char *json; /* the JSON key */
	enum bench_ftype type;
	unsigned flags; /* BF_* */
	size_t off;	/* where it is: offsetof() in the outer record or in the row */
};

#define NFIELDS(a) (sizeof(a) / sizeof((a)[0]))
#define METRIC(csv, json, type, field)                                                             \
	{csv, json, type, BF_OUTER, offsetof(struct bench_table, field)}
#define RESULT(name, type, flags, field)                                                           \
	{name, name, type, flags, offsetof(struct bench_result, field)}

/* A metric's row, in CSV column order: the table's fields are the JSON table's, the others
 * those of each of its results (with its samples after them). */
static const struct bench_field metric_fields[] = {
    METRIC("metric", "id", BF_STR, id),
    METRIC(NULL, "title", BF_STR, title),
    METRIC("unit", "unit", BF_STR, unit),
    RESULT("name", BF_STR, 0, name),
    RESULT("rank", BF_INT, 0, rank),
    RESULT("runs", BF_COUNT, 0, s.n),
    RESULT("mean", BF_NUM, 0, s.mean),
    RESULT("sd", BF_NUM, 0, s.sd),
    RESULT("min", BF_NUM, 0, s.min),
    RESULT("median", BF_NUM, 0, s.median),
    RESULT("max", BF_NUM, 0, s.max),
    RESULT("times_baseline", BF_NUM, 0, times_baseline),
    METRIC("baseline", "baseline", BF_STR, baseline),
    RESULT("size", BF_BYTES, BF_SIZES, size),
    RESULT("size_ratio", BF_NUM, BF_SIZES, size_ratio),
};

#define CONFIG(name, type, field)                                                                  \
	{NULL, name, type, 0, offsetof(struct bench_config_info, field)}

/* A configuration (with its read orders after them). */
static const struct bench_field config_fields[] = {
    CONFIG("name", BF_STR, name),
    CONFIG("kind", BF_STR, kind),
    CONFIG("source", BF_STR, source),
    CONFIG("command", BF_STR, command),
    CONFIG("size", BF_BYTES, size),
    CONFIG("size_ratio", BF_NUM, size_ratio),
};

#define SUMMARY(name, type, field)                                                                 \
	{NULL, name, type, 0, offsetof(struct bench_sum_row, field)}

/* A row of the summary. */
static const struct bench_field summary_fields[] = {
    SUMMARY("name", BF_STR, name),
    SUMMARY("rank", BF_INT, rank),
    SUMMARY("median", BF_NUM, median),
    SUMMARY("times_fastest", BF_NUM, times),
    SUMMARY("size", BF_BYTES, size),
    SUMMARY("size_ratio", BF_NUM, ratio),
    SUMMARY("bytes_read", BF_BYTES, io[0]),
    SUMMARY("read_calls", BF_BYTES, io[1]),
    SUMMARY("disk_bytes", BF_BYTES, io[2]),
};

/* The field's value in outer (a metric's table, or NULL) or row; *missing for a size field of
 * a table without sizes. */
static const void *field_at(const struct bench_field *fd, const void *outer, const void *row,
			    bool *missing)
{
	*missing = (fd->flags & BF_SIZES) && !((const struct bench_table *)outer)->sizes;
	return (const char *)(fd->flags & BF_OUTER ? outer : row) + fd->off;
}

/* ---- CSV ----------------------------------------------------------------------------------- */

static void csv_field(FILE *f, const struct bench_field *fd, const void *outer, const void *row)
{
	bool missing;
	const void *p = field_at(fd, outer, row, &missing);
	double v;

	switch (fd->type) {
	case BF_STR:
		bench_csv_str(f, *(const char *const *)p);
		break;
	case BF_INT:
		fprintf(f, "%d", *(const int *)p);
		break;
	case BF_COUNT:
		fprintf(f, "%zu", *(const size_t *)p);
		break;
	case BF_NUM:
	case BF_BYTES:
		v = missing ? NAN : *(const double *)p;
		if (!isnan(v))
			fprintf(f, fd->type == BF_NUM ? "%.9g" : "%.0f", v);
		break;
	}
}

int bench_report_csv(FILE *f, const struct bench_report *r)
{
	const char *sep = "";

	for (size_t k = 0; k < NFIELDS(metric_fields); k++) {
		if (!metric_fields[k].csv)
			continue;
		fprintf(f, "%s%s", sep, metric_fields[k].csv);
		sep = ",";
	}
	fputc('\n', f);
	for (size_t t = 0; t < r->ntables; t++) {
		const struct bench_table *tb = &r->tables[t];

		for (size_t i = 0; i < tb->n; i++) {
			const struct bench_result *res = &tb->results[i];

			if (!res->nsamples)
				continue;
			sep = "";
			for (size_t k = 0; k < NFIELDS(metric_fields); k++) {
				if (!metric_fields[k].csv)
					continue;
				fputs(sep, f);
				csv_field(f, &metric_fields[k], tb, res);
				sep = ",";
			}
			fputc('\n', f);
		}
	}
	return bench_report_finish(f);
}

/* ---- JSON ---------------------------------------------------------------------------------- */

static void json_num(FILE *f, double v)
{
	if (isnan(v) || isinf(v))
		fputs("null", f);
	else
		fprintf(f, "%.9g", v);
}

/* A size in bytes: a whole number, or null. */
static void json_size(FILE *f, double v)
{
	if (isnan(v) || isinf(v))
		fputs("null", f);
	else
		fprintf(f, "%.0f", v);
}

/* The "key": value pairs of a record's fields, ", " between them: those of the outer record
 * when outer_fields, else those of the row. */
static void json_fields(FILE *f, const struct bench_field *fd, size_t n, int outer_fields,
			const void *outer, const void *row)
{
	const char *sep = "";

	for (size_t k = 0; k < n; k++) {
		bool missing;
		const void *p;

		if (!(fd[k].flags & BF_OUTER) != !outer_fields)
			continue;
		fprintf(f, "%s\"%s\": ", sep, fd[k].json);
		sep = ", ";
		p = field_at(&fd[k], outer, row, &missing);
		switch (fd[k].type) {
		case BF_STR:
			bench_json_str(f, *(const char *const *)p);
			break;
		case BF_INT:
			fprintf(f, "%d", *(const int *)p);
			break;
		case BF_COUNT:
			fprintf(f, "%zu", *(const size_t *)p);
			break;
		case BF_NUM:
			json_num(f, missing ? NAN : *(const double *)p);
			break;
		case BF_BYTES:
			json_size(f, missing ? NAN : *(const double *)p);
			break;
		}
	}
}

/* A metric: its table's fields, then its results with data, each with its samples. */
static void json_table(FILE *f, const struct bench_table *t)
{
	int first = 1;

	fputs("    {", f);
	json_fields(f, metric_fields, NFIELDS(metric_fields), 1, t, NULL);
	fputs(",\n     \"results\": [", f);
	for (size_t i = 0; i < t->n; i++) {
		const struct bench_result *r = &t->results[i];

		if (!r->nsamples)
			continue;
		fputs(first ? "\n      {" : ",\n      {", f);
		first = 0;
		json_fields(f, metric_fields, NFIELDS(metric_fields), 0, t, r);
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
		bench_json_str(f, r->checks[i].path);
		fputs(", \"results\": [", f);
		for (size_t k = i; k < end; k++) {
			fputs(k > i ? ", {\"configuration\": " : "{\"configuration\": ", f);
			bench_json_str(f, r->checks[k].config);
			fputs(", \"digest\": ", f);
			bench_json_str(f, r->checks[k].digest);
			fputs(", \"error\": ", f);
			bench_json_str(f, r->checks[k].error);
			fputc('}', f);
		}
		fputs("]}", f);
		i = end;
	}
	fputs("]},\n", f);
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
	struct bench_sum_row *v;
	long n = bench_summary_rows(r, &v);

	if (n < 0)
		return -ENOMEM;
	fputs("  \"summary\": [", f);
	for (long k = 0; k < n; k++) {
		fputs(k ? ",\n    {" : "\n    {", f);
		json_fields(f, summary_fields, NFIELDS(summary_fields), 0, NULL, &v[k]);
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
	bench_json_str(f, r->version);
	fputs(",\n  \"when\": ", f);
	bench_json_str(f, r->when);
	fprintf(f, ",\n  \"seed\": %llu,\n  \"cold\": %s,\n  \"runs\": %u,\n  \"digest\": ",
		(unsigned long long)r->seed, r->cold ? "true" : "false", r->runs);
	bench_json_str(f, r->exec ? r->exec : "md5");
	fputs(",\n  \"exec\": ", f);
	bench_json_str(f, r->exec);
	fputs(",\n  \"list\": ", f);
	bench_json_str(f, r->list);
	fprintf(f, ",\n  \"sample\": %zu,\n  \"baseline\": ", r->sample);
	bench_json_str(f, r->baseline);
	fputs(",\n  \"order\": ", f);
	bench_json_str(f, r->order ? r->order : "list");
	fputs(",\n  \"throttle\": ", f);
	bench_json_str(f, r->throttle);
	fputs(",\n  \"plain_size\": ", f);
	json_size(f, r->plain_size);
	fputs(",\n  \"plain_from\": ", f);
	bench_json_str(f, r->plain_from);
	fputs(",\n  \"configurations\": [", f);
	for (size_t i = 0; i < r->nconfigs; i++) {
		const struct bench_config_info *c = &r->configs[i];

		fputs(i ? ",\n    {" : "\n    {", f);
		json_fields(f, config_fields, NFIELDS(config_fields), 0, NULL, c);
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
		bench_json_str(f, r->files[i]);
	}
	fputs("]\n}\n", f);
	return bench_report_finish(f);
}
