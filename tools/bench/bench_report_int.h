/* What the report writers of tarseek-bench share (bench_report.c the text, bench_fields.c CSV
 * and JSON, bench_svg.c the chart): the escapes that give arbitrary bytes the one form each
 * format can carry (bench_escape.c, the leaf), and the summary's rows (bench_report.c), which
 * the text and the JSON both show.  Private to tools/bench/; bench_report.h is the contract.
 */
#ifndef TARSEEK_BENCH_REPORT_INT_H
#define TARSEEK_BENCH_REPORT_INT_H

#include <stddef.h>
#include <stdio.h>

#include "tools/bench/bench_report.h"

/* ---- bench_escape.c ---------------------------------------------------------------------- */

/* 0, or -EIO if f reported an error (a failed fflush or ferror): what every writer returns. */
int bench_report_finish(FILE *f);

/* Length of the valid UTF-8 sequence at s (1..4), or 0 if the bytes there are not one. */
size_t bench_utf8_len(const unsigned char *s);

/* Characters a terminal shows for s: control bytes count one ('?'), UTF-8 sequences one. */
size_t bench_display_width(const char *s);

/* s in a text table cell: control characters become '?' so rows stay one line each. */
void bench_put_display(FILE *f, const char *s);

/* s as a CSV field (RFC 4180: quoted when it holds a comma, a quote or a line break); NULL
 * writes an empty field. */
void bench_csv_str(FILE *f, const char *s);

/* s as a JSON string (escaped, invalid UTF-8 as U+FFFD); NULL writes null. */
void bench_json_str(FILE *f, const char *s);

/* s as XML character data or attribute value: invalid UTF-8 and characters XML 1.0 forbids
 * become U+FFFD; at most max characters, then an ellipsis. */
void bench_xml_str(FILE *f, const char *s, size_t max);

/* ---- bench_report.c: the summary --------------------------------------------------------- */

struct bench_sum_row {
	size_t cfg;	  /* index in the tables' results */
	const char *name; /* the configuration's */
	int rank;
	double median, times, size, ratio;
	double io[3]; /* medians of bytes read, read calls, disk bytes; NaN: none */
};

/* The table with id, or NULL. */
const struct bench_table *bench_table_by_id(const struct bench_report *r, const char *id);

/* The summary's rows (see bench_report_summary_text), by rank, ties in configuration order,
 * into *out (malloc'd, the caller frees it); their number, 0 if there is no md5 table with
 * data, -ENOMEM. */
long bench_summary_rows(const struct bench_report *r, struct bench_sum_row **out);

#endif
