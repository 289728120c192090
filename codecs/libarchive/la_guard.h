/* A watched walk of an archive's headers by libarchive, in a child process, before tarseek
 * trusts libarchive with the archive in the daemon.
 *
 * libarchive's readers loop on some hostile archives (3.6: a xar whose files carry two
 * <link>s spins for ever; an iso whose Rock Ridge continuation entry points at itself grows
 * past 4 GiB), and a call into libarchive cannot be interrupted.  So la_guard runs libarchive
 * over the headers (every header, each entry's data skipped, as bsdtar -t does) in a forked
 * child that does nothing else: it reads the archive through the parent (a pipe of requests,
 * a shared buffer), and the parent watches it.  The child is killed and the archive refused,
 * with a log line at level err naming the cause, when
 *   - it makes no progress for TARSEEK_LA_WATCHDOG seconds (default 10): no new header and no
 *     read past the furthest byte read so far;
 *   - its resident memory grows by more than TARSEEK_LA_MEMORY MiB (default 1024);
 *   - it lists more than LAG_ENTRIES entries;
 *   - it dies of a signal (libarchive crashed).
 * libarchive is deterministic: an archive whose walk ends here (at its end, or at an error
 * libarchive reports -- damage is the container's business) is read the same way again in
 * the daemon.  (A reader that reads the same bytes again and again is stopped in every
 * process, by libarchive_src.h's LA_REREADS: an error, the archive damaged from there on.)
 * TARSEEK_LA_GUARD=0 turns the guard off (the fuzzers: they want libarchive's crashes in
 * their own process).
 *
 * Threads: safe to call from any thread.  The child touches only libarchive (loaded before
 * the fork), malloc, the pipes and the shared buffer: never a lock another thread might have
 * held at the fork (the logger, a source's), and it leaves by _exit.
 */
#ifndef TARSEEK_LA_GUARD_H
#define TARSEEK_LA_GUARD_H

#include "common/source.h"

#define LAG_ENTRIES ((uint64_t)1 << 26)

/* 0 if libarchive walks the archive's headers within the bounds above, or the guard is off,
 * or the child cannot be started (no memory, no process: a warning says the archive is read
 * unguarded); -EINVAL if it was refused (logged, naming the archive); -ENOTSUP if libarchive
 * cannot be loaded (la_load logged why).  A read error of the source is not an error here:
 * the child's walk ends, and the container's own reads meet it again. */
int la_guard(struct src *in, const char *name);

#endif
