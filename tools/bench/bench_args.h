/* tarseek-bench's command line: the options into b->o, the configurations into b->cfg.
 *
 * Options are taken in the order given, because --name and --mount-cmd apply to the
 * configurations after them; every ARCHIVE and --dir becomes a configuration at once (its path
 * made canonical, its name chosen: --name, else "extracted" or the file name, or "ARCHIVE
 * (PROGRAM)" for a --mount-cmd).  bench_args_check() then checks what only the whole command
 * line can tell, picks the baseline and finds the tarseek daemon.
 *
 * Both return 0 or -EINVAL (-EPERM: --throttle without root) after printing
 * "tarseek-bench: ..." on stderr (the caller exits with BENCH_EXIT_USAGE).  Some paths do not
 * return: --help and --version print and exit(0), an ARCHIVE or --dir that does not exist or
 * is of the wrong kind exits with BENCH_EXIT_USAGE.  What they store in b is owned by b (see
 * bench.h); strings of b->o that are not lists point into argv.
 */
#ifndef TARSEEK_BENCH_ARGS_H
#define TARSEEK_BENCH_ARGS_H

#include <stdbool.h>

#include "tools/bench/bench.h"

/* Parses argv into b->o (defaults first) and b->cfg. */
int bench_args_parse(struct bench *b, int argc, char **argv);

/* Cross-option checks, the baseline (b->baseline), the daemon's path (b->tarseek) when a
 * configuration needs it: --tarseek, else $TARSEEK, else fs/tarseek beside this program's
 * build, else tarseek on PATH. */
int bench_args_check(struct bench *b);

/* Adds a configuration after parsing (--convert's outputs), named name (NULL: as the command
 * line would name it).  The pointer is valid until the next configuration is added. */
/* True if s is an http://, https:// or s3:// URL (an archive the mounter reads remotely). */
bool bench_is_url(const char *s);

struct bench_cfg *bench_cfg_add(struct bench *b, enum bench_cfg_kind kind, const char *path,
				const char *name);

#endif
