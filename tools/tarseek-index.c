/* tarseek-index: builds or checks the indexes of archives without mounting them -- for cron
 * jobs, and for preparing an index to share beside an archive on a file server (an index is
 * valid on any machine for the same archive).  The index goes where tarseek would look for
 * it (see index/open.h), so a later mount with the same options reuses it.
 *
 * Exit status: 0 if every archive has a valid index now, 1 if one could not be built (or,
 * with --check, is missing or stale), 2 on a usage error.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "codecs/codec.h"
#include "common/dl.h"
#include "common/log.h"
#include "common/parts.h"
#include "common/pool.h"
#include "common/size.h"
#include "net/net.h"
#include "cache/cache.h"
#include "config.h"
#include "containers/container.h"
#include "index/open.h"
#include "index/shadow_make.h"
#include "tools/topt.h"
#include "tools/tprog.h"
#if HAVE_LIBARCHIVE
#include "codecs/libarchive/libarchive_src.h"
#endif

enum {
	OPT_INDEX_FILE = 256,
	OPT_INDEX_FOLDER,
	OPT_RECREATE,
	OPT_GZIP_SPACING,
	OPT_THREADS,
	OPT_RECURSION_DEPTH,
	OPT_STRIP_EXT,
	OPT_OCI_RAW,
	OPT_S3_ENDPOINT,
	OPT_REMOTE_TIMEOUT,
	OPT_SHADOW,
	OPT_SHADOW_MAX,
};

/* The options, in --help's order (topt.h). */
static const struct topt opts[] = {
    {'c', "check", 'c', NULL, "only check: report archives without a valid index", 0},
    {OPT_INDEX_FILE, "index-file", 0, "PATH", "the index of the (single) ARCHIVE goes to PATH", 0},
    {OPT_INDEX_FOLDER, "index-folder", 0, "DIR", "indexes go to DIR", 0},
    {OPT_RECREATE, "recreate-index", 0, NULL, "rebuild even valid indexes", 0},
    {OPT_GZIP_SPACING, "gzip-spacing", 0, "SIZE",
     "decompressed bytes between checkpoints, e.g. 1M\n"
     "(default 256K in gzip streams, else 4M; a bare number\n"
     "means MiB)",
     0},
    {'r', "recursive", 'r', NULL, "index archives inside archives too", 0},
    {OPT_RECURSION_DEPTH, "recursion-depth", 0, "N", "at most N levels of them", 0},
    {OPT_STRIP_EXT, "strip-extension", 0, NULL, "their folders lose the archive extension", 0},
    {'i', "ignore-zeros", 'i', NULL, "read past the end-of-archive marker (tar --ignore-zeros)", 0},
    {OPT_OCI_RAW, "oci-raw", 0, NULL, "container images as the tars they are, not merged", 0},
    {OPT_THREADS, "threads", 0, "N", "decoder threads (default: all cores)", 0},
    {OPT_SHADOW, "shadow", 0, "MODE",
     "auto (default), always, never: keep the decoded\n"
     "streams beside the index, as tarseek does (an index\n"
     "without its shadow gets one)",
     0},
    {OPT_SHADOW_MAX, "shadow-max", 0, "SIZE", "the most a shadow may take", 0},
    {OPT_S3_ENDPOINT, "s3-endpoint", 0, "URL", "an S3-compatible store for s3:// URLs", 0},
    {OPT_REMOTE_TIMEOUT, "remote-timeout", 0, "S",
     "a request fails after S seconds, retries included", 0},
    {'q', "quiet", 'q', NULL, "only errors and warnings", 0},
    {'h', "help", 'h', NULL, NULL, TOPT_JOIN},
    {'V', "version", 'V', NULL, NULL, 0},
};

#define NOPTS (sizeof(opts) / sizeof(opts[0]))

static void usage(FILE *f)
{
	fputs("Usage: tarseek-index [options] ARCHIVE...\n"
	      "\n"
	      "Builds the index of each ARCHIVE where tarseek looks for it (ARCHIVE.index.sqlite\n"
	      "beside it if that folder is writable, else ~/.cache/tarseek/), or checks it.\n"
	      "An ARCHIVE may be an http://, https:// or s3:// URL.  Use the options the mounts\n"
	      "will use: they shape the index.  An index built for a local file is valid for\n"
	      "the same file once uploaded: publish it beside it as ARCHIVE.index.sqlite.\n"
	      "\n",
	      f);
	topt_help(f, opts, NOPTS, 26);
	fputs("\n"
	      "Exit status: 0 all indexes valid, 1 some missing, stale or failed, 2 usage error.\n",
	      f);
}

/* Opens a URL for idx_prepare_remote; 0 or -errno (logged). */
static int prepare_url(const char *url, const struct net_env *ne, const struct idx_opts *o,
		       char **path, bool *built)
{
	struct http_obj *obj;
	struct src *src;
	int err = net_open(url, ne, &src, &obj);

	if (err)
		return err;
	err = idx_prepare_remote(obj, src, o, path, built, NULL);
	src_free(src);
	return err;
}

/* Applies option id (its argument arg) to o and ne.  0, 1 to exit with 0 (--help, --version
 * done), or -EINVAL (said why: the exit status is 2). */
static int apply(int id, const char *arg, struct idx_opts *o, struct net_env *ne)
{
	long n;

	switch (id) {
	case 'c':
		o->check_only = true;
		return 0;
	case OPT_INDEX_FILE:
		o->index_file = arg;
		return 0;
	case OPT_INDEX_FOLDER:
		o->index_folder = arg;
		return 0;
	case OPT_RECREATE:
		o->recreate = true;
		return 0;
	case OPT_GZIP_SPACING:
		if (!parse_size(arg, &o->build.gzip_spacing) || o->build.gzip_spacing < 64 * 1024) {
			fprintf(stderr, "tarseek-index: --gzip-spacing: '%s' is not a size of at "
				"least 64K\n", arg);
			return -EINVAL;
		}
		o->build.spacing_any = false;
		return 0;
	case 'i':
		o->build.ignore_zeros = true;
		return 0;
	case 'r':
		o->build.recursion = 32;
		return 0;
	case OPT_RECURSION_DEPTH:
		if (topt_long(arg, 0, 32, &n)) {
			fprintf(stderr, "tarseek-index: --recursion-depth: '%s' is not a number "
				"from 0 to 32\n", arg);
			return -EINVAL;
		}
		o->build.recursion = (unsigned)n;
		return 0;
	case OPT_OCI_RAW:
		o->build.oci_raw = true;
		return 0;
	case OPT_STRIP_EXT:
		o->build.strip_ext = true;
		return 0;
	case OPT_THREADS:
		if (topt_long(arg, 1, 256, &n)) {
			fprintf(stderr, "tarseek-index: --threads: '%s' is not a number from 1 "
				"to 256\n", arg);
			return -EINVAL;
		}
		o->build.threads = (unsigned)n;
		return 0;
	case OPT_S3_ENDPOINT:
		ne->http.s3_endpoint = arg;
		return 0;
	case OPT_REMOTE_TIMEOUT:
		if (topt_long(arg, 1, 86400, &n)) {
			fprintf(stderr, "tarseek-index: --remote-timeout: '%s' is not a number "
				"of seconds from 1 to 86400\n", arg);
			return -EINVAL;
		}
		ne->http.timeout_ms = (unsigned)n * 1000u;
		return 0;
	case OPT_SHADOW:
		if (shadow_mode_parse(arg, &o->build.shadow) < 0) {
			fprintf(stderr, "tarseek-index: --shadow: '%s' is not auto, always or "
				"never\n", arg);
			return -EINVAL;
		}
		return 0;
	case OPT_SHADOW_MAX:
		if (!parse_size(arg, &o->build.shadow_max) || o->build.shadow_max < (1u << 20)) {
			fprintf(stderr, "tarseek-index: --shadow-max: '%s' is not a size of at "
				"least 1M\n", arg);
			return -EINVAL;
		}
		return 0;
	case 'q':
		tfs_log_level = TFS_LOG_WARNING;
		o->build.progress = NULL;
		return 0;
	case 'h':
		usage(stdout);
		return 1;
	case 'V':
		printf("tarseek-index %s\ncodecs: %s\ncontainers: %s\nloaded when needed: %s\n",
		       TARSEEK_VERSION, codec_list(), cont_list(), dl_optional());
		return 1;
	}
	return -EINVAL; /* not in the table */
}

/* An index that was there already gets the shadow the mode wants, when it lacks one (a
 * message says so; none is no error). */
static void make_shadow(const char *archive, const char *index, const struct idx_opts *o)
{
	struct idx_shadow_make_opts so = {.mode = o->build.shadow, .max = o->build.shadow_max,
					  .threads = o->build.threads};
	struct src *file;

	if (so.mode == SHADOW_NEVER || parts_open(archive, &file) < 0)
		return;
	if (idx_shadow_make(index, file, archive, &so) == 1)
		printf("%s: shadow made beside the index\n", archive);
	src_free(file);
}

/* The index of archive (a path or a URL) built, or checked: printed.  0, 1 if it has no valid
 * index now (said why), or -errno when the tool cannot go on (said why). */
static int index_one(char *archive, const struct idx_opts *o, struct net_env *ne)
{
	char *path = NULL, *shown = NULL;
	bool built = false;
	int err;

	if (http_is_url(archive)) {
		if (!ne->pages && (http_global_init() < 0 || !(ne->pages = cache_new(64u << 20)))) {
			fprintf(stderr, "tarseek-index: cannot initialise libcurl\n");
			return -EIO;
		}
		shown = http_shown(archive);
		err = prepare_url(archive, ne, o, &path, &built);
		archive = shown ? shown : "URL"; /* never a password or a signature */
	} else {
		err = idx_prepare(archive, o, &path, &built, NULL);
	}
	if (err) {
		if (!o->check_only || (err != -ENOENT && err != -ESTALE))
			fprintf(stderr, "tarseek-index: %s: no index (%s)\n", archive,
				strerror(-err));
		else
			printf("%s: %s\n", archive, err == -ENOENT ? "no index" : "stale index");
		free(shown);
		return 1;
	}
	printf("%s: %s %s\n", archive, built ? "index built at" : "index valid at", path);
	if (!shown && !o->check_only && !built)
		make_shadow(archive, path, o);
	free(path);
	free(shown);
	return 0;
}

int main(int argc, char **argv)
{
	struct idx_opts o = {.build = {.gzip_spacing = IDX_SPACING_DEFAULT, .spacing_any = true,
				       .progress = tprog_index, .shadow = shadow_default()}};
	struct net_env ne = {0};
	struct topt_parser tp;
	long n = sysconf(_SC_NPROCESSORS_ONLN);
	const char *arg;
	int id, ret, failed = 0;

	tfs_log_set_prog("tarseek-index");
#if HAVE_LIBARCHIVE
	la_init();
#endif
	o.build.threads = n > 0 ? (unsigned)n : 1;
	if (topt_init(&tp, opts, NOPTS, false))
		return 2;
	while ((id = topt_next(&tp, argc, argv, &arg)) != TOPT_END) {
		if (id == TOPT_ERROR) {
			fprintf(stderr, "Try 'tarseek-index --help'.\n");
			return 2;
		}
		ret = apply(id, arg, &o, &ne);
		if (ret)
			return ret > 0 ? 0 : 2;
	}
	if (optind == argc) {
		fprintf(stderr, "tarseek-index: no archive given\nTry 'tarseek-index --help'.\n");
		return 2;
	}
	if (o.index_file && argc - optind > 1) {
		fprintf(stderr,
			"tarseek-index: --index-file names the index of one archive only\n");
		return 2;
	}
	for (int i = optind; i < argc; i++) {
		ret = index_one(argv[i], &o, &ne);
		if (ret < 0) {
			failed = 1;
			break;
		}
		failed |= ret;
	}
	cache_free(ne.pages);
	pool_shutdown(); /* every job was joined by its owner: the idle threads go */
	return failed;
}
