/* tarseek-convert: rewrites an archive (a tar in any codec, a single compressed file, a zip, a
 * 7z or one of libarchive's formats) into a seekable form with its index (convert/convert.h).
 *
 * The front end: the command line (its options' table, tools/topt.h), the progress lines
 * (tools/tprog.h draws what cv_convert and the source's index build report: the engine writes
 * nothing to the terminal) and the summary.
 *
 * Exit status: 0 converted (or, with --check, the output matches the source), 1 failed
 * (nothing written under OUTPUT's name), 2 usage error.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/log.h"
#include "common/pool.h"
#include "common/size.h"
#include "net/net.h"
#include "cache/cache.h"
#include "config.h"
#include "convert/convert.h"
#include "tools/topt.h"
#include "tools/tprog.h"

enum {
	OPT_GZIP_MEMBERS = 256,
	OPT_VERIFY,
	OPT_CHECK,
	OPT_INDEX_FILE,
	OPT_SOURCE_INDEX,
	OPT_INDEX_FOLDER,
	OPT_S3_ENDPOINT,
	OPT_REMOTE_TIMEOUT,
};

/* The options, in --help's order (topt.h). */
static const struct topt opts[] = {
    {'b', "block-size", 'b', "SIZE",
     "decoded bytes per block (default: zst 256K, xz 4M, gz 2M;\n"
     "lzo: always 1M)",
     0},
    {'l', "level", 'l', "N",
     "the compressor's level (default: zstd 3, xz 6, gzip 6,\n"
     "lzop 3)",
     0},
    {OPT_GZIP_MEMBERS, "gzip-members", 0, NULL, ".tar.gz: one gzip member per block", 0},
    {'j', "threads", 'j', "N", "compressing threads (default: all cores)", 0},
    {OPT_VERIFY, "verify", 0, NULL,
     "read OUTPUT back through its index and compare every\n"
     "file with SOURCE before it gets its name (a zip's, a\n"
     "7z's, ... files paired by path)",
     0},
    {OPT_CHECK, "check", 0, NULL, "only compare an existing OUTPUT with SOURCE", 0},
    {'f', "force", 'f', NULL, "replace an existing OUTPUT", 0},
    {OPT_INDEX_FILE, "index-file", 0, "PATH", "OUTPUT's index goes to PATH", 0},
    {OPT_SOURCE_INDEX, "source-index", 0, "PATH",
     "SOURCE's index (default: where tarseek looks for it;\n"
     "built there if missing, as a mount would)",
     0},
    {OPT_INDEX_FOLDER, "index-folder", 0, "DIR", "look for (or build) SOURCE's index in DIR", 0},
    {OPT_S3_ENDPOINT, "s3-endpoint", 0, "URL", "an S3-compatible store for s3:// SOURCEs", 0},
    {OPT_REMOTE_TIMEOUT, "remote-timeout", 0, "S",
     "a request fails after S seconds, retries included", 0},
    {'q', "quiet", 'q', NULL, "no progress line, only errors", 0},
    {'h', "help", 'h', NULL, NULL, TOPT_JOIN},
    {'V', "version", 'V', NULL, NULL, 0},
};

#define NOPTS (sizeof(opts) / sizeof(opts[0]))

static void usage(FILE *f)
{
	fputs("Usage: tarseek-convert [options] SOURCE OUTPUT\n"
	      "\n"
	      "Rewrites SOURCE (anything tarseek mounts: a tar, plain or compressed, a single\n"
	      "compressed file, a zip, 7z, rar, iso, cpio, ar, cab, lha, xar, warc or rpm\n"
	      "archive; a path or an http://, https:// or s3:// URL) into the seekable form\n"
	      "OUTPUT's extension names, with tarseek's index beside it (OUTPUT.index.sqlite),\n"
	      "so OUTPUT mounts at once and reads fast.  A tar inside is copied byte for byte;\n"
	      "the members of the others are written as a new tar (POSIX pax, the tree a mount\n"
	      "shows, in the order of their data).  Every other tool reads OUTPUT as usual.\n"
	      "  .tar.zst  zstd's seekable format: one frame per block and a seek table\n"
	      "  .tar.xz   one xz stream of independent blocks, sizes in every header\n"
	      "  .tar.gz   one gzip member cut at block boundaries (--gzip-members: a member\n"
	      "            per block, for other tools that seek in gzip files)\n"
	      "  .tar.lzo  lzop's 256K blocks, cut so that a checkpoint starts every block\n"
	      "  .tar      the plain tar\n"
	      "Blocks hold about --block-size decoded bytes and are cut where a member starts,\n"
	      "so a small file never spans two.  A single compressed file (vm.img.gz) converts\n"
	      "to one too (vm.img.zst).\n"
	      "\n",
	      f);
	topt_help(f, opts, NOPTS, 26);
	fputs("\n"
	      "Interrupting it (Ctrl-C, SIGTERM) removes what it has written.\n",
	      f);
}

static void on_signal(int sig)
{
	(void)sig;
	cv_interrupt();
}

/* A name whose extension says a form this tool does not write. */
static bool other_form(const char *path)
{
	static const char *const exts[] = {".bz2", ".tbz", ".tbz2", ".lz4", ".lzo", ".tzo", ".lz",
					   ".tlz", ".lzma", ".Z", ".zip", ".7z", ".rar"};
	size_t n = strlen(path);

	for (size_t i = 0; i < sizeof(exts) / sizeof(exts[0]); i++) {
		size_t e = strlen(exts[i]);
		if (n > e && strcmp(path + n - e, exts[i]) == 0)
			return true;
	}
	return false;
}

/* What the command line asks for. */
struct args {
	struct cv_opts o;
	struct net_env ne;
	bool check, quiet;
	const char *source, *output;
};

/* Applies option id (its argument arg) to a.  -1 to go on, else the exit status: 0 after
 * --help or --version, 2 for a bad argument (said on stderr). */
static int apply(int id, const char *arg, struct args *a)
{
	char *end;
	long v;

	switch (id) {
	case 'b':
		if (!parse_size(arg, &a->o.block_size) || !a->o.block_size) {
			fprintf(stderr, "tarseek-convert: bad --block-size '%s'\n", arg);
			return 2;
		}
		return -1;
	case 'l':
		a->o.enc_opts.level = (int)strtol(arg, &end, 10);
		if (!*arg || *end) {
			fprintf(stderr, "tarseek-convert: bad --level '%s'\n", arg);
			return 2;
		}
		return -1;
	case 'j':
		if (topt_long(arg, 1, 256, &v)) {
			fprintf(stderr, "tarseek-convert: bad --threads '%s' (1..256)\n", arg);
			return 2;
		}
		a->o.threads = (unsigned)v;
		a->o.source.build.threads = (unsigned)v;
		return -1;
	case OPT_GZIP_MEMBERS:
		a->o.enc_opts.members = true;
		return -1;
	case OPT_VERIFY:
		a->o.verify = true;
		return -1;
	case OPT_CHECK:
		a->check = true;
		return -1;
	case 'f':
		a->o.force = true;
		return -1;
	case OPT_INDEX_FILE:
		a->o.index_file = arg;
		return -1;
	case OPT_SOURCE_INDEX:
		a->o.source.index_file = arg;
		return -1;
	case OPT_INDEX_FOLDER:
		a->o.source.index_folder = arg;
		return -1;
	case OPT_S3_ENDPOINT:
		a->ne.http.s3_endpoint = arg;
		return -1;
	case OPT_REMOTE_TIMEOUT:
		if (topt_long(arg, 1, 86400, &v)) {
			fprintf(stderr, "tarseek-convert: --remote-timeout: '%s' is not a number of "
				"seconds from 1 to 86400\n", arg);
			return 2;
		}
		a->ne.http.timeout_ms = (unsigned)v * 1000u;
		return -1;
	case 'q':
		a->quiet = true;
		a->o.source.build.progress = NULL;
		tfs_log_level = TFS_LOG_WARNING;
		return -1;
	case 'h':
		usage(stdout);
		return 0;
	case 'V':
		printf("tarseek-convert %s\n", TARSEEK_VERSION);
		return 0;
	}
	usage(stderr); /* an unknown option, or one without its argument: getopt said which */
	return 2;
}

/* Parses the command line into a.  -1 to go on, else the exit status: 0 after --help or
 * --version, 2 for a usage error (said on stderr). */
static int parse_args(int argc, char **argv, struct args *a)
{
	long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
	struct topt_parser tp;
	const char *arg;
	int id, ret;

	*a = (struct args){.o = {.enc_opts = {.level = ENC_LEVEL_DEFAULT},
				 .threads = ncpu > 0 ? (unsigned)ncpu : 1,
				 .source = {.build = {.gzip_spacing = IDX_SPACING_DEFAULT,
						      .spacing_any = true,
						      .progress = tprog_index}}}};
	if (topt_init(&tp, opts, NOPTS, false))
		return 2;
	while ((id = topt_next(&tp, argc, argv, &arg)) != TOPT_END) {
		ret = apply(id, arg, a);
		if (ret >= 0)
			return ret;
	}
	if (argc - optind != 2) {
		fprintf(stderr, "tarseek-convert: give SOURCE and OUTPUT (--help tells more)\n");
		return 2;
	}
	a->source = argv[optind];
	a->output = argv[optind + 1];
	return -1;
}

/* The line a finished conversion ends with (not with --quiet). */
static void print_summary(const struct args *a, const char *shown, const struct cv_stats *st)
{
	char in[32], us[32], out[32];

	format_size(in, sizeof(in), (double)st->source_size);
	format_size(us, sizeof(us), (double)st->usize);
	format_size(out, sizeof(out), (double)st->output_size);
	fprintf(stderr,
		"%s (%s, %s decoded) -> %s (%s, %.1f%% of the tar): %llu blocks, %llu members, "
		"%.1f s%s",
		shown, in, us, a->output, out,
		st->usize ? 100.0 * st->output_size / st->usize : 0.0,
		(unsigned long long)st->blocks, (unsigned long long)st->members, st->seconds,
		st->built_source_index ? " (the source's index built first)" : "");
	if (a->o.verify)
		fprintf(stderr, "; verified in %.1f s", st->verify_seconds);
	fprintf(stderr, "\n");
}

/* Checks what the output's form allows.  0, or 2 (said on stderr). */
static int check_form(struct args *a)
{
	a->o.enc = enc_for_path(a->output);
	if (!a->o.enc && other_form(a->output)) {
		fprintf(stderr, "tarseek-convert: cannot write the form %s names (it writes %s)\n",
			a->output, enc_list());
		return 2;
	}
	if (a->o.enc_opts.members && (!a->o.enc || strcmp(a->o.enc->codec, "gzip"))) {
		fprintf(stderr, "tarseek-convert: --gzip-members is for .tar.gz outputs\n");
		return 2;
	}
	return 0;
}

/* Converts (interruptible: the signals ask cv_convert to stop and clean up).  0 or 1. */
static int convert(struct args *a, const char *shown)
{
	struct sigaction sa = {.sa_handler = on_signal};
	struct cv_stats st;

	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
	if (!a->quiet && isatty(STDERR_FILENO))
		a->o.progress = tprog_convert;
	if (cv_convert(a->source, a->output, &a->o, &st))
		return 1;
	if (!a->quiet)
		print_summary(a, shown, &st);
	return 0;
}

int main(int argc, char **argv)
{
	struct args a;
	const char *shown;
	char *shown_url = NULL;
	int ret;

	tfs_log_set_prog("tarseek-convert");
	ret = parse_args(argc, argv, &a);
	if (ret >= 0)
		return ret;
	shown = a.source;
	if (http_is_url(a.source)) { /* read through a page cache of its own, like a mount's */
		if (http_global_init() < 0 || !(a.ne.pages = cache_new(64u << 20))) {
			fprintf(stderr, "tarseek-convert: cannot initialise libcurl\n");
			return 1;
		}
		a.o.net = &a.ne;
		shown_url = http_shown(a.source);
		shown = shown_url ? shown_url : "URL"; /* never a password or a signature */
	}
	ret = check_form(&a);
	if (ret)
		goto out;
	if (a.check) {
		ret = cv_check(a.source, a.output, &a.o) ? 1 : 0;
		if (!ret && !a.quiet)
			fprintf(stderr, "%s matches %s\n", a.output, shown);
	} else {
		ret = convert(&a, shown);
	}
out:
	cache_free(a.ne.pages);
	free(shown_url);
	pool_shutdown();
	return ret;
}
