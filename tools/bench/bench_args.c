/* tarseek-bench's command line (see bench_args.h).  One table (bench_opts, tools/topt.h)
 * drives getopt_long and the option list of --help.  It is parsed in order: every ARCHIVE
 * comes back where it stands (TOPT_ARGUMENT), so a configuration is made there and --name /
 * --mount-cmd bind to what follows them.  The options are handled in the groups --help shows
 * them in, one function a group.
 */
#include "tools/bench/bench_args.h"

#include <errno.h>
#include <stdbool.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "config.h"
#include "tools/bench/bench.h"
#include "tools/bench/bench_ui.h"
#include "tools/bench/bench_util.h"
#include "tools/topt.h"

static const char *base_name(const char *path)
{
	size_t len = strlen(path);
	const char *p;

	while (len > 1 && path[len - 1] == '/')
		len--;
	for (p = path + len; p > path && p[-1] != '/'; p--)
		;
	return p;
}

/* The base name without trailing slashes, malloc'd. */
static char *base_dup(const char *path)
{
	const char *b = base_name(path);
	size_t len = strlen(b);

	while (len > 1 && b[len - 1] == '/')
		len--;
	char *s = bench_xmalloc(len + 1);

	memcpy(s, b, len);
	s[len] = '\0';
	return s;
}

bool bench_is_url(const char *s)
{
	return !strncmp(s, "http://", 7) || !strncmp(s, "https://", 8) || !strncmp(s, "s3://", 5);
}

enum {
	OPT_MOUNT_CMD = 256,
	OPT_NAME,
	OPT_UNQUOTE,
	OPT_COLD,
	OPT_WARM,
	OPT_SEED,
	OPT_EXEC,
	OPT_MOUNT_RUNS,
	OPT_MOUNT_TIMEOUT,
	OPT_TARSEEK,
	OPT_TARSEEK_OPT,
	OPT_INDEX_DIR,
	OPT_KEEP_INDEX,
	OPT_CSV,
	OPT_JSON,
	OPT_SVG,
	OPT_WORKLOAD,
	OPT_PATTERN,
	OPT_ORDER,
	OPT_THROTTLE,
	OPT_CONVERT,
	OPT_CONVERT_OPT,
	OPT_CONVERT_DIR,
};

/* The options, in --help's order, with its headings (topt.h); an option's id is its letter,
 * or an OPT_* for a long option alone. */
static const struct topt bench_opts[] = {
    {0, NULL, 0, NULL,
     "Configurations, in command-line order (the first is the baseline):", TOPT_HEADING},
    {0, NULL, 0, "ARCHIVE",
     "mounted with the tarseek daemon; named by its file name\n"
     "(a path, or an http://, https:// or s3:// URL)",
     TOPT_OPERAND},
    {'d', "dir", 'd', "PATH",
     "an extracted tree, read in place: the physical baseline;\n"
     "named \"extracted\" (a second --dir: its directory's name)",
     0},
    {OPT_MOUNT_CMD, "mount-cmd", 0, "CMD",
     "mount the ARCHIVEs that follow with CMD instead of tarseek:\n"
     "sh -c CMD with {archive}, {mnt} and {index} replaced by\n"
     "shell-quoted paths, unmounted with fusermount3 -u (or\n"
     "umount); named \"ARCHIVE (PROGRAM)\"; --mount-cmd ''\n"
     "goes back to tarseek.  Put {index} where the tool takes\n"
     "its index file, so the first mount builds it afresh.",
     0},
    {OPT_NAME, "name", 0, "NAME", "the name of the next configuration", 0},
    {0, NULL, 0, NULL, "\nFiles:", TOPT_HEADING},
    {'l', "list", 'l', "FILE",
     "paths relative to the archive's root, one a line, as for\n"
     "tar --files-from (spaces and odd characters are fine)",
     0},
    {'0', "null", '0', NULL, "the list's entries end with NUL instead of newline", 0},
    {OPT_UNQUOTE, "unquote", 0, NULL,
     "undo backslash escapes in the list (\\n \\t \\\\ \\ooo), as\n"
     "in the names `tar -t` prints",
     0},
    {'s', "sample", 's', "N",
     "no list: draw N regular files at random from the\n"
     "baseline's tree (use --seed to draw the same ones again)",
     0},
    {0, NULL, 0, NULL, "\nRuns:", TOPT_HEADING},
    {'r', "runs", 'r', "N", "md5 runs per configuration (default 5)", 0},
    {OPT_COLD, "cold", 0, NULL,
     "before every run: sync, drop the page cache (writes 3 to\n"
     "/proc/sys/vm/drop_caches: root only) and mount afresh",
     0},
    {OPT_WARM, "warm", 0, NULL,
     "(default) one mount per configuration for all its runs,\n"
     "after one untimed pass that fills the caches",
     0},
    {OPT_SEED, "seed", 0, "S", "seed of the run order and of --sample (default: random)", 0},
    {'b', "baseline", 'b', "NAME", "the configuration timesBaseline divides by", 0},
    {OPT_EXEC, "exec", 0, "PROG",
     "run `PROG ./PATH` in the mount for every file, as the\n"
     "published workload runs md5sum (--exec md5sum), and take\n"
     "the digest from its output; default: md5 in this process,\n"
     "reading each file whole in 128 KiB read()s as md5sum does",
     0},
    {OPT_WORKLOAD, "workload", 0, "W",
     "md5 (default): the files of the list, as above; grep:\n"
     "`grep -r -F -e PATTERN .` in the root, its output lines\n"
     "sorted and compared; tar: `tar -cf - .` in the root, its\n"
     "members (type, name, size, md5, link) compared (a walk of\n"
     "the whole tree: readdir, stat and read of every file)",
     0},
    {OPT_PATTERN, "pattern", 0, "P", "what grep looks for (default: error)", 0},
    {OPT_ORDER, "order", 0, "O",
     "the order each run reads the files in: list (default),\n"
     "archive (by data offset, from the tarseek mount's\n"
     "user.tarseek.data_offset; files without one last;\n"
     "--dir and --mount-cmd: list order), random (shuffled\n"
     "per run from --seed: the same for every configuration)",
     0},
    {OPT_THROTTLE, "throttle", 0, "riops=N,rbps=SIZE[,device=DEV]",
     "read the archives as from a slow disk: the mounters and\n"
     "readers run in a block-I/O cgroup (v2 io.max, or v1\n"
     "blkio.throttle) limiting read IOs/s and bytes/s (SIZE:\n"
     "150M, 2G; a bare number is MiB) of DEV (a device path or\n"
     "MAJ:MIN; default: the disk holding the first archive).\n"
     "Root only.  Models a disk's IOPS and bandwidth, not seek\n"
     "distance or rotation; only reads that reach the device\n"
     "are slowed, so use it with --cold (riops=100,rbps=150M\n"
     "is a 7200 rpm disk's random reads)",
     0},
    {OPT_MOUNT_RUNS, "mount-runs", 0, "N", "first mounts per configuration (default 1)", 0},
    {OPT_MOUNT_TIMEOUT, "mount-timeout", 0, "S",
     "seconds a mount may take to come up (default 600)", 0},
    {0, NULL, 0, NULL, "\nThe tarseek daemon:", TOPT_HEADING},
    {OPT_TARSEEK, "tarseek", 0, "PATH",
     "the daemon (default: $TARSEEK, else fs/tarseek of the\n"
     "build this program belongs to, else tarseek on PATH)",
     0},
    {OPT_TARSEEK_OPT, "tarseek-opt", 0, "OPT",
     "more daemon options, split at spaces (repeatable), e.g.\n"
     "--tarseek-opt '--cache-size 512M'",
     0},
    {OPT_INDEX_DIR, "index-dir", 0, "DIR",
     "where index files go (default: a temporary folder that\n"
     "is removed at exit)",
     0},
    {OPT_KEEP_INDEX, "keep-index", 0, NULL,
     "keep an existing index for the first mount (with\n"
     "--index-dir; otherwise each first mount builds it anew)",
     0},
    {OPT_CONVERT, "convert", 0, "FORMS",
     "before anything is mounted, convert the first archive with\n"
     "tarseek-convert into each of FORMS (comma-separated: zst,\n"
     "xz, gz, lzo, tar) and measure the results beside it, each\n"
     "with the index the conversion wrote (its first mount\n"
     "builds nothing); named \"NAME.tar.FORM (converted)\"",
     0},
    {OPT_CONVERT_OPT, "convert-opt", 0, "OPT",
     "tarseek-convert options, split at spaces (repeatable),\n"
     "e.g. --convert-opt '--block-size 4M'",
     0},
    {OPT_CONVERT_DIR, "convert-dir", 0, "DIR",
     "where the conversions go, kept (default: a temporary\n"
     "folder removed at exit; with --throttle, put it on the\n"
     "throttled disk)",
     0},
    {0, NULL, 0, NULL,
     "\nOutput (the tables always go to stdout, or to stderr when a FILE is '-'):", TOPT_HEADING},
    {OPT_CSV, "csv", 0, "FILE", "one line per metric and configuration", 0},
    {OPT_JSON, "json", 0, "FILE", "everything: samples, files, failed checks", 0},
    {OPT_SVG, "svg", 0, "FILE", "bar chart of the md5 workload, mean with sd error bars", 0},
    {'q', "quiet", 'q', NULL, "no progress line on the terminal", 0},
    {'v', "verbose", 'v', NULL, "one line per run on stderr", 0},
    {'h', "help", 'h', NULL, "this text", 0},
    {'V', "version", 'V', NULL, "the version", 0},
};

#define NBENCH_OPTS (sizeof(bench_opts) / sizeof(bench_opts[0]))

static void usage(FILE *f)
{
	fputs("Usage: tarseek-bench [OPTION]... (--list FILE | --sample N) CONFIGURATION...\n"
	      "       tarseek-bench [OPTION]... --workload grep|tar CONFIGURATION...\n"
	      "\n"
	      "Times md5 of files read whole through mounts of archives, the workload of the\n"
	      "published archive-mounter comparisons, and reports the first mount (index built),\n"
	      "the second mount (index present), the index size and the mounter's peak RSS.\n"
	      "Every configuration runs --runs times; the runs of all configurations are\n"
	      "interleaved in a random, non-consecutive order (seeded; the seed is printed).\n"
	      "Every digest is checked: all configurations must read the same bytes.\n"
	      "\n",
	      f);
	topt_help(f, bench_opts, NBENCH_OPTS, 24);
	fputs("\n"
	      "Cold runs: a daemon's own cache of decoded data would make every run after the\n"
	      "first one warm, so with --cold each md5 run of a mounted configuration starts a\n"
	      "new mount right after the page cache is dropped; that mount (index present) is\n"
	      "timed as a second mount, then the md5 pass is timed, then the daemon's peak RSS\n"
	      "is read and it is unmounted.  The first mount of every configuration is timed\n"
	      "before all md5 runs, with its index removed first.\n"
	      "\n"
	      "Sizes: every row shows the configuration's size (an archive's bytes; a folder's:\n"
	      "its regular files' sizes summed) and sizeRatio, that over the plain tar's (an\n"
	      "archive named .tar, else the --dir tree; blank if neither); the summary table\n"
	      "ranks the configurations by median md5 time, fastest first, with their sizes.\n"
	      "\n"
	      "Reads: bytes read (rchar), read calls (syscr) and disk bytes (read_bytes) of the\n"
	      "mounter during each timed pass, from /proc/PID/io: tarseek's daemon (its index\n"
	      "and /dev/fuse included; what of a plain tar it splices shows in disk bytes\n"
	      "only; its prefetching after the mount is not in the pass); a --mount-cmd\n"
	      "tool's processes while it stays in the foreground, else a process naming the\n"
	      "mount point, else blank; for a --dir tree this process's own reads (the\n"
	      "reader's, --exec's programs included).\n"
	      "\n"
	      "Exit status: 0 all digests agree; 1 a digest differs between configurations or\n"
	      "runs, or a read failed (every such path is listed); 2 usage error (or --cold not\n"
	      "permitted); 3 the benchmark could not run (a mount failed); 130 interrupted.\n",
	      f);
}

static int parse_u64(const char *s, uint64_t *v)
{
	char *end;

	if (!*s || *s == '-')
		return -EINVAL;
	errno = 0;
	*v = strtoull(s, &end, 0);
	if (errno || *end)
		return -EINVAL;
	return 0;
}

static int parse_count(const char *opt, const char *s, uint64_t max, uint64_t *v)
{
	if (parse_u64(s, v) || *v < 1 || *v > max) {
		fprintf(stderr,
			"tarseek-bench: %s wants a whole number from 1 to %" PRIu64 ", not '%s'\n",
			opt, max, s);
		return -EINVAL;
	}
	return 0;
}

static char *canonical(const char *path)
{
	char *p = realpath(path, NULL);

	if (!p) {
		fprintf(stderr, "tarseek-bench: %s: %s\n", path, strerror(errno));
		exit(BENCH_EXIT_USAGE);
	}
	return p;
}

static struct bench_cfg *add_cfg(struct bench *b, enum bench_cfg_kind kind, const char *path,
				 char **name, const char *command)
{
	struct bench_cfg *c;
	struct stat st;

	b->cfg = bench_xrealloc(b->cfg, (b->ncfg + 1) * sizeof(*b->cfg));
	c = &b->cfg[b->ncfg++];
	memset(c, 0, sizeof(*c));
	c->kind = kind;
	if (kind != BENCH_CFG_DIR && bench_is_url(path)) { /* a remote archive: the mounter checks it */
		c->source = bench_xstrdup(path);
		char *q = strpbrk(c->source, "?#"), *shown = bench_xstrdup(c->source);
		shown[q ? (size_t)(q - c->source) : strlen(shown)] = '\0';
		c->command = command ? bench_xstrdup(command) : NULL;
		c->name = *name ? *name : base_dup(shown); /* never a presigned URL's signature */
		*name = NULL;
		free(shown);
		return c;
	}
	c->source = canonical(path);
	if (stat(c->source, &st) < 0 || (kind == BENCH_CFG_DIR && !S_ISDIR(st.st_mode)) ||
	    (kind == BENCH_CFG_TARSEEK && S_ISDIR(st.st_mode))) {
		fprintf(stderr, "tarseek-bench: %s: %s\n", path,
			kind == BENCH_CFG_DIR ? "not a directory"
					      : "is a directory, not an archive");
		exit(BENCH_EXIT_USAGE);
	}
	c->command = command ? bench_xstrdup(command) : NULL;
	if (*name) {
		c->name = *name;
		*name = NULL;
	} else if (kind == BENCH_CFG_DIR) {
		int taken = 0;

		for (size_t i = 0; i + 1 < b->ncfg; i++)
			taken |= !strcmp(b->cfg[i].name, "extracted");
		c->name = taken ? base_dup(path) : bench_xstrdup("extracted");
	} else if (kind == BENCH_CFG_COMMAND) {
		/* "archive (program)": the first word of the command that is not a variable
		 * assignment or exec/env/sudo. */
		char **w = NULL, *prog = NULL, *bn = base_dup(path);
		size_t nw = 0;

		bench_split_words(command, &w, &nw);
		for (size_t i = 0; i < nw && !prog; i++)
			if (!strchr(w[i], '=') && strcmp(w[i], "exec") && strcmp(w[i], "env") &&
			    strcmp(w[i], "sudo"))
				prog = w[i];
		c->name = bench_xasprintf("%s (%s)", bn, prog ? base_name(prog) : "command");
		for (size_t i = 0; i < nw; i++)
			free(w[i]);
		free(w);
		free(bn);
	} else {
		c->name = base_dup(path);
	}
	return c;
}

/* Options are taken in order (every ARCHIVE comes back where it stands), because --name and
 * --mount-cmd apply to the configurations that follow them. */
struct parse_state {
	char *pending_name; /* --name waiting for its configuration */
	char *mount_cmd;    /* --mount-cmd in force, NULL: tarseek */
	int mount_cmd_used; /* the last --mount-cmd has been applied to an archive */
};

/* What an option group's function returns for an option of another group. */
#define NOT_MINE 1

/* An ARCHIVE: a configuration with the --name and --mount-cmd in force. */
static void take_archive(struct bench *b, struct parse_state *ps, const char *path)
{
	add_cfg(b, ps->mount_cmd ? BENCH_CFG_COMMAND : BENCH_CFG_TARSEEK, path, &ps->pending_name,
		ps->mount_cmd);
	ps->mount_cmd_used = 1;
}

static int set_mount_cmd(struct parse_state *ps, const char *arg)
{
	if (!ps->mount_cmd_used) {
		fprintf(stderr, "tarseek-bench: --mount-cmd '%s' is followed by no archive\n",
			ps->mount_cmd ? ps->mount_cmd : "");
		return -EINVAL;
	}
	if (*arg && !strstr(arg, "{mnt}")) {
		fprintf(stderr,
			"tarseek-bench: --mount-cmd '%s' has no {mnt}: where should it mount?\n",
			arg);
		return -EINVAL;
	}
	free(ps->mount_cmd);
	ps->mount_cmd = *arg ? bench_xstrdup(arg) : NULL;
	ps->mount_cmd_used = 0;
	return 0;
}

static int set_name(struct parse_state *ps, const char *arg)
{
	if (ps->pending_name || !*arg) {
		fprintf(stderr, "tarseek-bench: --name %s%s\n", arg,
			*arg ? " follows another --name; each names the archive or --dir after it"
			     : ": a name cannot be empty");
		return -EINVAL;
	}
	ps->pending_name = bench_xstrdup(arg);
	return 0;
}

static int set_exec(struct bench_opts *o, const char *arg)
{
	size_t n = 0;

	o->exec = arg;
	bench_split_words(arg, &o->exec_argv, &n);
	if (!n) {
		fputs("tarseek-bench: --exec wants a program\n", stderr);
		return -EINVAL;
	}
	return 0;
}

static int set_mount_timeout(struct bench_opts *o, const char *arg)
{
	char *end;

	errno = 0;
	o->mount_timeout = strtod(arg, &end);
	if (errno || *end || !(o->mount_timeout > 0)) {
		fprintf(stderr, "tarseek-bench: --mount-timeout wants seconds, not '%s'\n", arg);
		return -EINVAL;
	}
	return 0;
}

/* The option groups of --help, one function each: 0 (taken), -EINVAL (message printed) or
 * NOT_MINE. */

/* ARCHIVE (an operand where it stands), --dir, --mount-cmd, --name: the configurations. */
static int opt_configs(struct bench *b, struct parse_state *ps, int c, const char *arg)
{
	switch (c) {
	case TOPT_ARGUMENT:
		take_archive(b, ps, arg);
		return 0;
	case 'd':
		add_cfg(b, BENCH_CFG_DIR, arg, &ps->pending_name, NULL);
		return 0;
	case OPT_MOUNT_CMD:
		return set_mount_cmd(ps, arg);
	case OPT_NAME:
		return set_name(ps, arg);
	}
	return NOT_MINE;
}

/* --list, --null, --unquote, --sample: the files. */
static int opt_files(struct bench *b, struct parse_state *ps, int c, const char *arg)
{
	struct bench_opts *o = &b->o;
	uint64_t v;

	switch (c) {
	case 'l':
		o->list = arg;
		return 0;
	case '0':
		o->null = 1;
		return 0;
	case OPT_UNQUOTE:
		o->unquote = 1;
		return 0;
	case 's':
		if (parse_count("--sample", arg, 100000000, &v))
			return -EINVAL;
		o->sample = v;
		return 0;
	}
	return NOT_MINE;
}

/* --runs, --cold, --warm, --seed, --baseline, --exec, --workload, --pattern, --order,
 * --throttle, --mount-runs, --mount-timeout. */
static int opt_runs(struct bench *b, struct parse_state *ps, int c, const char *arg)
{
	struct bench_opts *o = &b->o;
	uint64_t v;

	switch (c) {
	case 'r':
		if (parse_count("--runs", arg, 100000, &v))
			return -EINVAL;
		o->runs = (unsigned)v;
		return 0;
	case OPT_COLD:
		o->cold = 1;
		return 0;
	case OPT_WARM:
		o->cold = 0;
		return 0;
	case OPT_SEED:
		if (parse_u64(arg, &o->seed)) {
			fprintf(stderr, "tarseek-bench: --seed wants a number, not '%s'\n", arg);
			return -EINVAL;
		}
		o->seed_set = 1;
		return 0;
	case 'b':
		o->baseline = arg;
		return 0;
	case OPT_EXEC:
		return set_exec(o, arg);
	case OPT_WORKLOAD:
		if (!strcmp(arg, "md5")) {
			o->workload = BENCH_W_MD5;
		} else if (!strcmp(arg, "grep")) {
			o->workload = BENCH_W_GREP;
		} else if (!strcmp(arg, "tar")) {
			o->workload = BENCH_W_TAR;
		} else {
			fprintf(stderr, "tarseek-bench: --workload is md5, grep or tar, not '%s'\n",
				arg);
			return -EINVAL;
		}
		return 0;
	case OPT_PATTERN:
		if (!*arg) {
			fputs("tarseek-bench: --pattern cannot be empty\n", stderr);
			return -EINVAL;
		}
		o->pattern = arg;
		return 0;
	case OPT_ORDER:
		if (!strcmp(arg, "list")) {
			o->order = BENCH_ORDER_LIST;
		} else if (!strcmp(arg, "archive")) {
			o->order = BENCH_ORDER_ARCHIVE;
		} else if (!strcmp(arg, "random")) {
			o->order = BENCH_ORDER_RANDOM;
		} else {
			fprintf(stderr,
				"tarseek-bench: --order is list, archive or random, not '%s'\n",
				arg);
			return -EINVAL;
		}
		return 0;
	case OPT_THROTTLE:
		o->throttle = arg;
		return bench_throttle_parse(arg, &o->throttle_spec);
	case OPT_MOUNT_RUNS:
		if (parse_count("--mount-runs", arg, 100000, &v))
			return -EINVAL;
		o->mount_runs = (unsigned)v;
		return 0;
	case OPT_MOUNT_TIMEOUT:
		return set_mount_timeout(o, arg);
	}
	return NOT_MINE;
}

/* --tarseek, --tarseek-opt, --index-dir, --keep-index, --convert*: the tarseek daemon and
 * tools. */
static int opt_daemon(struct bench *b, struct parse_state *ps, int c, const char *arg)
{
	struct bench_opts *o = &b->o;

	switch (c) {
	case OPT_TARSEEK:
		o->tarseek = arg;
		return 0;
	case OPT_TARSEEK_OPT:
		bench_split_words(arg, &o->tarseek_opts, &o->ntarseek_opts);
		return 0;
	case OPT_INDEX_DIR:
		o->index_dir = arg;
		return 0;
	case OPT_KEEP_INDEX:
		o->keep_index = 1;
		return 0;
	case OPT_CONVERT:
		o->convert = arg;
		return 0;
	case OPT_CONVERT_OPT:
		bench_split_words(arg, &o->convert_opts, &o->nconvert_opts);
		return 0;
	case OPT_CONVERT_DIR:
		o->convert_dir = arg;
		return 0;
	}
	return NOT_MINE;
}

/* --csv, --json, --svg, --quiet, --verbose, --help, --version: the output. */
static int opt_output(struct bench *b, struct parse_state *ps, int c, const char *arg)
{
	struct bench_opts *o = &b->o;

	switch (c) {
	case OPT_CSV:
		o->csv = arg;
		return 0;
	case OPT_JSON:
		o->json = arg;
		return 0;
	case OPT_SVG:
		o->svg = arg;
		return 0;
	case 'q':
		o->quiet = 1;
		return 0;
	case 'v':
		o->verbose = 1;
		return 0;
	case 'h':
		usage(stdout);
		exit(0);
	case 'V':
		printf("tarseek-bench %s\n", TARSEEK_VERSION);
		exit(0);
	}
	return NOT_MINE;
}

static int (*const opt_groups[])(struct bench *b, struct parse_state *ps, int c,
				 const char *arg) = {opt_configs, opt_files, opt_runs, opt_daemon,
						     opt_output};

/* After the options: what follows "--" is archives; no --mount-cmd or --name may be left
 * without a configuration. */
struct bench_cfg *bench_cfg_add(struct bench *b, enum bench_cfg_kind kind, const char *path,
				const char *name)
{
	char *n = name ? bench_xstrdup(name) : NULL;

	return add_cfg(b, kind, path, &n, NULL);
}

static int parse_rest(struct bench *b, int argc, char **argv, struct parse_state *ps)
{
	for (; optind < argc; optind++)
		take_archive(b, ps, argv[optind]);
	if (!ps->mount_cmd_used) {
		fprintf(stderr,
			"tarseek-bench: --mount-cmd '%s' is followed by no archive (it applies to "
			"the archives after it)\n",
			ps->mount_cmd ? ps->mount_cmd : "");
		return -EINVAL;
	}
	if (ps->pending_name) {
		fprintf(stderr, "tarseek-bench: --name %s is followed by no archive or --dir\n",
			ps->pending_name);
		return -EINVAL;
	}
	return 0;
}

static int parse_args_in(struct bench *b, int argc, char **argv, struct parse_state *ps)
{
	struct topt_parser tp;
	const char *arg;
	int c, ret;

	b->o.runs = 5;
	b->o.pattern = "error";
	b->o.mount_runs = 1;
	b->o.mount_timeout = 600;
	opterr = 1;
	if (topt_init(&tp, bench_opts, NBENCH_OPTS, true))
		return -EINVAL; /* never: the table has fewer than TOPT_MAX options */
	while ((c = topt_next(&tp, argc, argv, &arg)) != TOPT_END) {
		ret = NOT_MINE; /* TOPT_ERROR too: no group takes it */
		for (size_t g = 0; ret == NOT_MINE && g < sizeof(opt_groups) / sizeof(*opt_groups);
		     g++)
			ret = opt_groups[g](b, ps, c, arg);
		if (ret == NOT_MINE) {
			fputs("Try 'tarseek-bench --help'.\n", stderr);
			return -EINVAL;
		}
		if (ret)
			return ret;
	}
	return parse_rest(b, argc, argv, ps);
}

int bench_args_parse(struct bench *b, int argc, char **argv)
{
	struct parse_state ps = {.mount_cmd_used = 1};
	int ret = parse_args_in(b, argc, argv, &ps);

	free(ps.pending_name);
	free(ps.mount_cmd);
	return ret;
}

/* The first DIR/name that is executable, for DIR in $PATH (default /usr/bin:/bin); malloc'd,
 * NULL if there is none. */
static char *find_on_path(const char *name)
{
	const char *p = getenv("PATH");
	char *copy = bench_xstrdup(p ? p : "/usr/bin:/bin"), *save = NULL, *found = NULL;

	for (char *d = strtok_r(copy, ":", &save); d && !found; d = strtok_r(NULL, ":", &save)) {
		char *cand = bench_xasprintf("%s/%s", d, name);

		if (!access(cand, X_OK))
			found = cand;
		else
			free(cand);
	}
	free(copy);
	return found;
}

/* b->tarseek: --tarseek, else $TARSEEK, else fs/tarseek of the build this program belongs to,
 * else tarseek on PATH.  0 or -EINVAL (message printed). */
static int find_tarseek(struct bench *b)
{
	const char *path = b->o.tarseek ? b->o.tarseek : getenv("TARSEEK");
	char self[PATH_MAX], *found;
	ssize_t n;

	if (path && *path) {
		b->tarseek = bench_xstrdup(path);
	} else if ((n = readlink("/proc/self/exe", self, sizeof(self) - 1)) > 0) {
		self[n] = '\0';
		*strrchr(self, '/') = '\0';
		b->tarseek = bench_xasprintf("%s/../fs/tarseek", self);
		if (access(b->tarseek, X_OK)) {
			free(b->tarseek);
			b->tarseek = bench_xstrdup("tarseek");
		}
	} else {
		b->tarseek = bench_xstrdup("tarseek");
	}
	if (strchr(b->tarseek, '/')) {
		if (access(b->tarseek, X_OK) == 0)
			return 0;
		fprintf(stderr,
			"tarseek-bench: the tarseek daemon %s: %s (give --tarseek PATH or set "
			"TARSEEK)\n",
			b->tarseek, strerror(errno));
		return -EINVAL;
	}
	/* Look it up now rather than fail at the first mount. */
	found = find_on_path(b->tarseek);
	if (!found) {
		if (path && *path)
			fprintf(stderr, "tarseek-bench: %s is not on PATH\n", path);
		else
			fputs("tarseek-bench: no tarseek daemon beside this program nor on PATH: "
			      "give --tarseek PATH or set TARSEEK\n",
			      stderr);
		return -EINVAL;
	}
	free(b->tarseek);
	b->tarseek = found;
	return 0;
}

int bench_args_check(struct bench *b)
{
	struct bench_opts *o = &b->o;
	int dashes = 0, need_tarseek = 0;

	if (!b->ncfg) {
		fputs("tarseek-bench: nothing to measure: give archives and/or --dir PATH\n"
		      "Try 'tarseek-bench --help'.\n",
		      stderr);
		return -EINVAL;
	}
	if (o->workload != BENCH_W_MD5) { /* a tool walks the whole tree */
		if (o->list || o->sample || o->exec) {
			fprintf(stderr, "tarseek-bench: --workload %s walks the whole tree: no "
				"--list, --sample or --exec\n",
				o->workload == BENCH_W_GREP ? "grep" : "tar");
			return -EINVAL;
		}
		if (o->workload == BENCH_W_GREP)
			o->workload_name = bench_xasprintf("grep -r %s", o->pattern);
		else
			o->workload_name = bench_xstrdup("tar -c");
	} else if (!o->list == !o->sample) {
		fputs(o->list ? "tarseek-bench: --list and --sample exclude each other\n"
			      : "tarseek-bench: which files? give --list FILE or --sample N\n",
		      stderr);
		return -EINVAL;
	} else {
		o->workload_name = bench_xstrdup(o->exec ? o->exec_argv[0] : "md5");
	}
	for (size_t i = 0; i < b->ncfg; i++) {
		for (size_t j = 0; j < i; j++) {
			if (!strcmp(b->cfg[i].name, b->cfg[j].name)) {
				fprintf(stderr,
					"tarseek-bench: two configurations are named '%s' (%s and "
					"%s); tell them apart with --name\n",
					b->cfg[i].name, b->cfg[j].source, b->cfg[i].source);
				return -EINVAL;
			}
		}
		need_tarseek |= b->cfg[i].kind == BENCH_CFG_TARSEEK;
	}
	b->baseline = 0;
	if (o->baseline) {
		size_t i;

		for (i = 0; i < b->ncfg && strcmp(b->cfg[i].name, o->baseline); i++)
			;
		if (i == b->ncfg) {
			fprintf(stderr,
				"tarseek-bench: --baseline %s: no such configuration; the "
				"names are:\n",
				o->baseline);
			for (i = 0; i < b->ncfg; i++)
				fprintf(stderr, "  %s\n", b->cfg[i].name);
			return -EINVAL;
		}
		b->baseline = i;
	}
	dashes = (o->csv && !strcmp(o->csv, "-")) + (o->json && !strcmp(o->json, "-")) +
		 (o->svg && !strcmp(o->svg, "-"));
	if (dashes > 1) {
		fputs("tarseek-bench: only one of --csv, --json and --svg can write to stdout\n",
		      stderr);
		return -EINVAL;
	}
	if (o->throttle && geteuid() != 0) {
		fputs("tarseek-bench: --throttle needs root: it makes a block-I/O cgroup and moves "
		      "the bench into it\n",
		      stderr);
		return -EPERM;
	}
	if (o->keep_index && !o->index_dir)
		bench_warn(
		    "--keep-index without --index-dir: the index files live in a new temporary "
		    "folder, so every first mount still builds its index");
	return need_tarseek ? find_tarseek(b) : 0;
}
