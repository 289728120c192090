/* tarseek-index: builds or checks the indexes of archives without mounting them -- for cron
 * jobs, and for preparing an index to share beside an archive on a file server (an index is
 * valid on any machine for the same archive).  The index goes where tarseek would look for
 * it (see index/index.h), so a later mount with the same options reuses it.
 *
 * Exit status: 0 if every archive has a valid index now, 1 if one could not be built (or,
 * with --check, is missing or stale), 2 on a usage error.
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "codecs/codec.h"
#include "common/log.h"
#include "common/size.h"
#include "net/net.h"
#include "cache/cache.h"
#include "config.h"
#include "containers/container.h"
#include "index/open.h"
#if HAVE_LIBARCHIVE
#include "codecs/libarchive/libarchive_src.h"
#endif

static void usage(FILE *f)
{
	fprintf(f,
		"Usage: tarseek-index [options] ARCHIVE...\n"
		"\n"
		"Builds the index of each ARCHIVE where tarseek looks for it (ARCHIVE.index.sqlite\n"
		"beside it if that folder is writable, else ~/.cache/tarseek/), or checks it.\n"
		"An ARCHIVE may be an http://, https:// or s3:// URL.  Use the options the mounts\n"
		"will use: they shape the index.  An index built for a local file is valid for\n"
		"the same file once uploaded: publish it beside it as ARCHIVE.index.sqlite.\n"
		"\n"
		"  -c, --check             only check: report archives without a valid index\n"
		"      --index-file PATH   the index of the (single) ARCHIVE goes to PATH\n"
		"      --index-folder DIR  indexes go to DIR\n"
		"      --recreate-index    rebuild even valid indexes\n"
		"      --gzip-spacing SIZE decompressed bytes between checkpoints, e.g. 1M\n"
		"                          (default 256K in gzip streams, else 4M; a bare number\n"
		"                          means MiB)\n"
		"  -r, --recursive         index archives inside archives too\n"
		"      --recursion-depth N at most N levels of them\n"
		"      --strip-extension   their folders lose the archive extension\n"
		"  -i, --ignore-zeros      read past the end-of-archive marker (tar --ignore-zeros)\n"
		"      --threads N         decoder threads (default: all cores)\n"
		"      --s3-endpoint URL   an S3-compatible store for s3:// URLs\n"
		"      --remote-timeout S  a request fails after S seconds, retries included\n"
		"  -q, --quiet             only errors and warnings\n"
		"  -h, --help; -V, --version\n"
		"\n"
		"Exit status: 0 all indexes valid, 1 some missing, stale or failed, 2 usage error.\n");
}

enum {
	OPT_INDEX_FILE = 256,
	OPT_INDEX_FOLDER,
	OPT_RECREATE,
	OPT_GZIP_SPACING,
	OPT_THREADS,
	OPT_RECURSION_DEPTH,
	OPT_STRIP_EXT,
	OPT_S3_ENDPOINT,
	OPT_REMOTE_TIMEOUT,
};

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

int main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{"check", no_argument, NULL, 'c'},
		{"index-file", required_argument, NULL, OPT_INDEX_FILE},
		{"index-folder", required_argument, NULL, OPT_INDEX_FOLDER},
		{"recreate-index", no_argument, NULL, OPT_RECREATE},
		{"gzip-spacing", required_argument, NULL, OPT_GZIP_SPACING},
		{"recursive", no_argument, NULL, 'r'},
		{"recursion-depth", required_argument, NULL, OPT_RECURSION_DEPTH},
		{"strip-extension", no_argument, NULL, OPT_STRIP_EXT},
		{"ignore-zeros", no_argument, NULL, 'i'},
		{"threads", required_argument, NULL, OPT_THREADS},
		{"s3-endpoint", required_argument, NULL, OPT_S3_ENDPOINT},
		{"remote-timeout", required_argument, NULL, OPT_REMOTE_TIMEOUT},
		{"quiet", no_argument, NULL, 'q'},
		{"help", no_argument, NULL, 'h'},
		{"version", no_argument, NULL, 'V'},
		{0},
	};
	struct idx_opts o = {.build = {.gzip_spacing = IDX_SPACING_DEFAULT, .spacing_any = true,
				       .progress = true}};
	struct net_env ne = {0};
	long n = sysconf(_SC_NPROCESSORS_ONLN);
	int c, failed = 0;
	char *end;

	tfs_log_set_prog("tarseek-index");
#if HAVE_LIBARCHIVE
	la_init();
#endif
	o.build.threads = n > 0 ? (unsigned)n : 1;
	while ((c = getopt_long(argc, argv, "criqhV", longopts, NULL)) != -1) {
		switch (c) {
		case 'c':
			o.check_only = true;
			break;
		case OPT_INDEX_FILE:
			o.index_file = optarg;
			break;
		case OPT_INDEX_FOLDER:
			o.index_folder = optarg;
			break;
		case OPT_RECREATE:
			o.recreate = true;
			break;
		case OPT_GZIP_SPACING:
			if (!parse_size(optarg, &o.build.gzip_spacing) ||
			    o.build.gzip_spacing < 64 * 1024) {
				fprintf(stderr, "tarseek-index: --gzip-spacing: '%s' is not a size of at "
					"least 64K\n", optarg);
				return 2;
			}
			o.build.spacing_any = false;
			break;
		case 'i':
			o.build.ignore_zeros = true;
			break;
		case 'r':
			o.build.recursion = 32;
			break;
		case OPT_RECURSION_DEPTH:
			errno = 0;
			n = strtol(optarg, &end, 10);
			if (errno || *end || n < 0 || n > 32) {
				fprintf(stderr, "tarseek-index: --recursion-depth: '%s' is not a number "
					"from 0 to 32\n", optarg);
				return 2;
			}
			o.build.recursion = (unsigned)n;
			break;
		case OPT_STRIP_EXT:
			o.build.strip_ext = true;
			break;
		case OPT_THREADS:
			errno = 0;
			n = strtol(optarg, &end, 10);
			if (errno || *end || n < 1 || n > 256) {
				fprintf(stderr, "tarseek-index: --threads: '%s' is not a number from 1 "
					"to 256\n", optarg);
				return 2;
			}
			o.build.threads = (unsigned)n;
			break;
		case OPT_S3_ENDPOINT:
			ne.http.s3_endpoint = optarg;
			break;
		case OPT_REMOTE_TIMEOUT:
			errno = 0;
			n = strtol(optarg, &end, 10);
			if (errno || *end || n < 1 || n > 86400) {
				fprintf(stderr, "tarseek-index: --remote-timeout: '%s' is not a number "
					"of seconds from 1 to 86400\n", optarg);
				return 2;
			}
			ne.http.timeout_ms = (unsigned)n * 1000u;
			break;
		case 'q':
			tfs_log_level = TFS_LOG_WARNING;
			o.build.progress = false;
			break;
		case 'h':
			usage(stdout);
			return 0;
		case 'V':
			printf("tarseek-index %s\ncodecs: %s\ncontainers: %s\n", TARSEEK_VERSION,
			       codec_list(), cont_list());
			return 0;
		default:
			fprintf(stderr, "Try 'tarseek-index --help'.\n");
			return 2;
		}
	}
	if (optind == argc) {
		fprintf(stderr, "tarseek-index: no archive given\nTry 'tarseek-index --help'.\n");
		return 2;
	}
	if (o.index_file && argc - optind > 1) {
		fprintf(stderr, "tarseek-index: --index-file names the index of one archive only\n");
		return 2;
	}
	for (int i = optind; i < argc; i++) {
		char *path = NULL, *shown = NULL;
		bool built = false;
		int err;
		if (http_is_url(argv[i])) {
			if (!ne.pages && (http_global_init() < 0 || !(ne.pages = cache_new(64u << 20)))) {
				fprintf(stderr, "tarseek-index: cannot initialise libcurl\n");
				return 1;
			}
			shown = http_shown(argv[i]);
			err = prepare_url(argv[i], &ne, &o, &path, &built);
			argv[i] = shown ? shown : "URL"; /* never a password or a signature */
		} else {
			err = idx_prepare(argv[i], &o, &path, &built, NULL);
		}
		if (err) {
			if (!o.check_only || (err != -ENOENT && err != -ESTALE))
				fprintf(stderr, "tarseek-index: %s: no index (%s)\n", argv[i],
					strerror(-err));
			else
				printf("%s: %s\n", argv[i], err == -ENOENT ? "no index" : "stale index");
			failed = 1;
			free(shown);
			continue;
		}
		printf("%s: %s %s\n", argv[i], built ? "index built at" : "index valid at", path);
		free(path);
		free(shown);
	}
	cache_free(ne.pages);
	return failed;
}
