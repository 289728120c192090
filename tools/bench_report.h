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

#include "bench_stats.h"

struct bench_result {
	const char *name;	/* in: configuration name */
	const double *samples;	/* in: borrowed */
	size_t nsamples;	/* in: 0 = no data for this configuration (row left out) */
	struct bench_summary s; /* out */
	int rank;		/* out: 1 = smallest mean; 0 = no data */
	double times_baseline;	/* out: mean / baseline mean, NaN if either is missing */
};

struct bench_table {
	const char *id;	      /* machine name for CSV/JSON: "md5", "first_mount", ... */
	const char *title;    /* for people: "md5 workload, cold page cache" */
	const char *unit;     /* "s", "MiB" */
	int precision;	      /* digits after the point in the text table and the chart */
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
	const char *kind;    /* "directory", "tarseek" or "command" */
	const char *source;  /* the directory or archive */
	const char *command; /* the mount command (kind "command"), else NULL */
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
	const char *baseline; /* the configuration asked for as baseline */
	size_t ntables;
	const struct bench_table *tables;
	size_t nchecks;
	const struct bench_check *checks;
	size_t nbad; /* files with a mismatch or a read error */
};

/* One table in the `benchmark` library's layout (rows by rank):
 *    name      | rank | runs |  mean |    sd |   min | median | timesBaseline
 * Tables whose rows all lack data print nothing. */
int bench_report_table_text(FILE *f, const struct bench_table *t);

/* The whole report for people: what was run, every table, the md5 check (at most max_bad
 * files listed; the JSON has them all). */
int bench_report_text(FILE *f, const struct bench_report *r, size_t max_bad);

/* One line per metric and configuration with data, after a header line:
 * metric,unit,name,rank,runs,mean,sd,min,median,max,times_baseline,baseline
 * Missing numbers are empty fields. */
int bench_report_csv(FILE *f, const struct bench_report *r);

/* Everything, samples and file list included; missing numbers are null. */
int bench_report_json(FILE *f, const struct bench_report *r);

/* A horizontal bar chart of one table: one bar per configuration (mean), sd error bars, the
 * value and times-baseline beside each bar, an x axis with ticks and a labelled unit. */
int bench_report_svg(FILE *f, const struct bench_table *t, const char *subtitle);

/* Writes s with control characters and backslashes escaped the way GNU tar lists names
 * ("\n", "\t", "\\", "\ooo"), so a path in the report can be pasted into a list read with
 * --unquote. */
void bench_put_escaped(FILE *f, const char *s);

#endif
