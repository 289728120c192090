/* The front ends' progress lines: what the index builder (index/build.h: struct idx_progress)
 * and tarseek-convert's engine (convert/convert.h: struct cv_progress) report, drawn on stderr.
 * The core writes nothing to the terminal; tarseek-index, tarseek-convert and the daemon
 * (fs/main.c) pass these as their callbacks, so the lines look the same whichever draws them.
 * Compiled into each of them, as topt.c is into the tools.
 *
 * On a terminal a line is redrawn in place ("\r\033[K" before it).  The index line is erased
 * when the build succeeds and ended by a newline when it fails (its error follows); with no
 * terminal (a mount from fstab or systemd, output to a file) it becomes a notice in the log
 * every TPROG_LOG_SECONDS instead, so that a long first mount does not look like a hang.  The
 * conversion line is drawn on a terminal only (tarseek-convert passes it only then).
 *
 * Thread-safe as far as a build is: the log's cadence is kept per thread, and a build reports
 * on the thread that runs it (concurrent builds are the daemon's archives found in folders).
 */
#ifndef TARSEEK_TPROG_H
#define TARSEEK_TPROG_H

#include "convert/convert.h"
#include "index/build.h"

#define TPROG_LOG_SECONDS 10.0 /* without a terminal: an index progress line this often */

/* idx_build_opts.progress: "indexing NAME: 1.20 GB / 3.40 GB (35%), 120.0 MB/s, 18 s left,
 * 4021 members".  opaque is not used. */
void tprog_index(void *opaque, const struct idx_progress *p);

/* cv_opts.progress: "converting to OUTPUT: 1.20 GB / 3.40 GB (35%), 80.0 MB/s, 27 s left, 310.00 MB
 * written", erased at the end.  opaque is not used. */
void tprog_convert(void *opaque, const struct cv_progress *p);

#endif
