/* Reports of tarseek-bench: the human tables, CSV, JSON and an SVG bar chart.
 *
 * The caller gathers samples per metric and configuration in a bench_table, lets
 * bench_table_compute() fill in the statistics, then hands the tables and the md5 check to a
 * bench_report and calls a writer.  The writers only read; every string they are given is
 * borrowed and may hold any bytes (names and paths come from file names): the text writer
 * shows control characters escaped, CSV quotes as RFC 4180 says, JSON and SVG escape and
 * replace invalid UTF-8 with U+FFFD so that the output always parses.
 *
 * All writers return 0, or -EIO if the stream reported an error (ferror or a failed fflush).
 */
#ifndef TARSEEK_BENCH_REPORT_H
#define TARSEEK_BENCH_REPORT_H

#include <stdint.h>
#include <stdio.h>

#include "tools/bench/bench_stats.h"

struct bench_result {
	const char *name;	/* in: configuration name */
	const double *samples;	/* in: borrowed */
	size_t nsamples;	/* in: 0 = no data for this configuration (row left out) */
	struct bench_summary s; /* out */
	int rank;		/* out: 1 = smallest mean; 0 = no data */
	double times_baseline;	/* out: mean / baseline mean, NaN if either is missing */
	double size;		/* in: the configuration's size in bytes (shown when the
				   table's `sizes` is set), NaN: unknown */
	double size_ratio;	/* in: size / the plain tar's size, NaN: unknown */
};

struct bench_table {
	const char *id;	      /* machine name for CSV/JSON: "md5", "first_mount", ... */
	const char *title;    /* for people: "md5 workload, cold page cache" */
	const char *unit;     /* "s", "MiB" */
	int precision;	      /* digits after the point in the text table and the chart */
	int sizes;	      /* the rows' size and size_ratio are set: show them */
	const char *baseline; /* out: name of the baseline used, NULL if no row has data */
	size_t n;
	struct bench_result *results; /* in configuration order */
};

/* Fills in s, rank and times_baseline of every result.  The baseline is results[want] if that
 * row has data, else the first row (in configuration order) that has: a directory baseline has
 * no mount time, and the mount tables should still compare the mounts with each other.
 * Returns 0 or -ENOMEM. */
int bench_table_compute(struct bench_table *t, size_t want);

struct bench_config_info {
	const char *name;
	const char *kind;     /* "directory", "tarseek" or "command" */
	const char *source;   /* the directory or archive */
	const char *command;  /* the mount command (kind "command"), else NULL */
	double size;	      /* bytes, NaN: unknown */
	double size_ratio;    /* to the plain tar, NaN: unknown */
	const size_t *orders; /* norders passes of nfiles file numbers each: the order read */
	size_t norders;
};

/* One configuration's view of one file that failed the check (digest differs from another
 * configuration's, or the read failed).  A report lists, for each such file, one entry per
 * configuration, entries of one path next to each other. */
struct bench_check {
	const char *path;
	const char *config;
	const char *digest; /* hex; NULL if the read failed */
	const char *error;  /* NULL if the read worked */
};

struct bench_report {
	const char *version;
	const char *when; /* date and host, free text, or NULL */
	uint64_t seed;
	int cold;	  /* page cache dropped before each run */
	unsigned runs;	  /* md5 runs per configuration */
	const char *list; /* the list file, or NULL when the files were sampled */
	size_t sample;	  /* --sample N, 0 when a list was given */
	const char *exec; /* program run per file, or the tool that walks the whole tree (no list
			     and no sample), NULL: md5 computed in-process */
	size_t nfiles;
	const char *const *files;
	size_t nconfigs;
	const struct bench_config_info *configs;
	const char *baseline;	/* the configuration asked for as baseline */
	const char *order;	/* --order: "list", "archive" or "random"; NULL: list */
	double plain_size;	/* the size ratios' denominator, NaN: none */
	const char *plain_from; /* the configuration it is the size of, NULL: none */
	const char *throttle;	/* --throttle as given, NULL: none */
	size_t ntables;
	const struct bench_table *tables;
	size_t nchecks;
	const struct bench_check *checks;
	size_t nbad; /* files with a mismatch or a read error */
};

/* One table in the `benchmark` library's layout (rows by rank):
 *    name      | rank | runs |  mean |    sd |   min | median | timesBaseline
 * and, when t->sizes, two more columns: size (as format_size() prints it) | sizeRatio (three
 * decimals; blank when unknown).  Tables whose rows all lack data print nothing. */
int bench_report_table_text(FILE *f, const struct bench_table *t);

/* The ids of the tables the summary reads besides "md5": the mounter's I/O in MiB and calls
 * during the timed passes. */
#define BENCH_ID_IO_BYTES "io_bytes_read"
#define BENCH_ID_IO_CALLS "io_read_calls"
#define BENCH_ID_IO_DISK "io_disk_bytes"

/* The trade-off at a glance, after the other tables: the configurations of the "md5" table
 * ranked by their median (fastest first; rank 1 = smallest median, ties share a rank), with
 * timesFastest (median / the fastest's), size, sizeRatio and the medians of the I/O tables
 * (blank where a table or a row has no data):
 *    name | rank | median | timesFastest | size | sizeRatio | bytes read | read calls |
 *    disk bytes
 * Nothing without an "md5" table. */
int bench_report_summary_text(FILE *f, const struct bench_report *r);

/* The whole report for people: what was run, every table, the summary, the md5 check (at
 * most max_bad files listed; the JSON has them all). */
int bench_report_text(FILE *f, const struct bench_report *r, size_t max_bad);

/* One line per metric and configuration with data, after a header line:
 * metric,unit,name,rank,runs,mean,sd,min,median,max,times_baseline,baseline,size,size_ratio
 * (size in bytes).  Missing numbers are empty fields. */
int bench_report_csv(FILE *f, const struct bench_report *r);

/* Everything, samples, sizes, the summary, the read orders and the file list included;
 * missing numbers are null. */
int bench_report_json(FILE *f, const struct bench_report *r);

/* 1 if the chart of t uses a logarithmic value axis: every bar (the mean of a row with data)
 * is above 0 and the largest is more than 20 times the smallest; else 0 (linear). */
int bench_svg_log_scale(const struct bench_table *t);

/* A horizontal bar chart of one table: one bar per configuration (mean), sd error bars, the
 * value and times-baseline beside each bar, an x axis with ticks and a labelled unit; the
 * axis is logarithmic (powers of ten, "log scale" in its label) when bench_svg_log_scale(). */
int bench_report_svg(FILE *f, const struct bench_table *t, const char *subtitle);

/* Writes s with control characters and backslashes escaped the way GNU tar lists names
 * ("\n", "\t", "\\", "\ooo"), so a path in the report can be pasted into a list read with
 * --unquote. */
void bench_put_escaped(FILE *f, const char *s);

#endif
