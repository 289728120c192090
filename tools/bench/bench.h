/* The state of one tarseek-bench run, shared by the files of the program: the options, the
 * configurations with their samples and digests, the file list.
 *
 * One struct bench lives in main() for the whole run and owns everything reachable from it:
 * every pointer below is malloc'd (or, for the const char * options, points into argv) and is
 * freed once, by free_bench() in tarseek-bench.c.  The modules fill it in order: bench_args
 * (o, cfg), bench_list (files), bench_cfg (tmpdir, each cfg's paths, argv and mount, the
 * sizes), bench_digest (each cfg's dig), bench_io (the cgroup); the phases in tarseek-bench.c
 * add the samples and the read orders.
 * Single-threaded: nothing here is locked.
 */
#ifndef TARSEEK_BENCH_H
#define TARSEEK_BENCH_H

#include <stddef.h>
#include <stdint.h>

#include "tools/bench/bench_io.h"
#include "tools/bench/bench_stats.h"
#include "tools/bench/bench_ui.h"

/* Exit statuses (tarseek-bench --help lists them). */
enum {
	BENCH_EXIT_MISMATCH = 1, /* a digest differs or a read failed */
	BENCH_EXIT_USAGE = 2,
	BENCH_EXIT_FAILED = 3, /* the benchmark could not run */
	BENCH_EXIT_INTERRUPTED = 130,
};

#define BENCH_READ_BUF (128 * 1024) /* coreutils' IO_BUFSIZE, what md5sum reads with */
#define BENCH_MAX_DIGEST 32	    /* bytes kept of a digest; md5 uses 16 */

enum bench_cfg_kind { BENCH_CFG_DIR, BENCH_CFG_TARSEEK, BENCH_CFG_COMMAND };

/* What a run times: md5 of the listed files (in-process or --exec), or a walk of the whole tree
 * by a real tool (grep -r, tar -c), whose output is the one "digest" compared. */
enum bench_workload { BENCH_W_MD5, BENCH_W_GREP, BENCH_W_TAR };

struct bench_samples {
	double *v;
	size_t n, cap;
};

/* What one configuration read for one file, over all its runs. */
struct bench_digest {
	uint8_t state; /* 0: not read yet, 1: digest valid, 2: error (message in error) */
	uint8_t len;
	uint8_t bytes[BENCH_MAX_DIGEST];
	char *error;
};

enum bench_metric {
	BENCH_M_MD5,
	BENCH_M_FIRST,
	BENCH_M_SECOND,
	BENCH_M_INDEX,
	BENCH_M_RSS_FIRST,
	BENCH_M_RSS_MD5,
	/* the mounter's reads during each timed pass (bench_io.h): rchar, syscr, read_bytes */
	BENCH_M_IO_BYTES,
	BENCH_M_IO_CALLS,
	BENCH_M_IO_DISK,
	BENCH_NMETRICS
};

/* The order a pass reads the files in (--order). */
enum bench_order { BENCH_ORDER_LIST, BENCH_ORDER_ARCHIVE, BENCH_ORDER_RANDOM };

struct bench_cfg {
	enum bench_cfg_kind kind;
	char *name;
	char *source;	  /* canonical path of the archive or directory */
	char *command;	  /* --mount-cmd template (BENCH_CFG_COMMAND) */
	char *index_path; /* tarseek's --index-file, or a command's {index}; else NULL */
	char *mountpoint; /* canonical; NULL for BENCH_CFG_DIR */
	char *log_path;
	char **argv; /* the mounter's argv (NULL-terminated), NULL for BENCH_CFG_DIR */
	struct bench_mount *mount;
	int died; /* the daemon of the current mount died (reported) */
	struct bench_samples m[BENCH_NMETRICS];
	struct bench_digest *dig; /* one per file */
	double size;		  /* bytes of the archive, or of the tree's files; NaN: unknown */
	double size_ratio;	  /* size / b->plain_size, NaN if either is unknown */
	size_t *archive_order;	  /* --order archive: the files by data offset; NULL: list */
	size_t *orders;		  /* unless --order list: each timed pass's order, nfiles each */
	size_t norders;		  /* passes recorded in orders */
	int index_given;	  /* index_path is the archive's own (tarseek-convert wrote it):
				     used by the first mount, never removed */
};

struct bench_opts {
	const char *list;
	int null;
	int unquote;
	size_t sample;
	uint64_t seed;
	int seed_set;
	unsigned runs;
	unsigned mount_runs;
	int cold;
	const char *baseline;
	const char *tarseek;
	char **tarseek_opts;
	size_t ntarseek_opts;
	int keep_index;
	const char *index_dir;
	char **exec_argv; /* --exec split at spaces, NULL if in-process */
	const char *exec;
	enum bench_workload workload;
	const char *pattern; /* --pattern, for grep */
	char *workload_name; /* "md5", the --exec program, "grep -r PATTERN", "tar -c" */
	const char *csv, *json, *svg;
	enum bench_order order;
	const char *throttle;		     /* --throttle as given, NULL: none */
	struct bench_throttle throttle_spec; /* what it says */
	double mount_timeout;
	int quiet, verbose;
	const char *convert;	  /* --convert FORMS, NULL: none */
	char **convert_opts;	  /* --convert-opt words */
	size_t nconvert_opts;
	const char *convert_dir; /* --convert-dir, NULL: a temporary folder */
};

struct bench {
	struct bench_opts o;
	struct bench_cfg *cfg;
	size_t ncfg;
	size_t baseline;
	char **files;
	size_t nfiles;
	struct bench_rng rng;
	char *tmpdir;
	char *tarseek; /* resolved daemon path */
	uint8_t *buf;  /* BENCH_READ_BUF bytes */
	struct bench_ui ui;
	double plain_size;	     /* the plain tar's size, NaN: unknown (bench_cfg_sizes) */
	const char *plain_from;	     /* the configuration it comes from, NULL if unknown */
	struct bench_cgroup *cgroup; /* --throttle's cgroup while the bench is in it */
	char *convert_dir;	     /* where --convert's outputs are (bench_convert.c) */
};

#endif
