/* The digest pass of tarseek-bench: every file of the list read whole through one
 * configuration, its digest computed and recorded.
 *
 * In-process (the default), each file is opened under the configuration's root and read in
 * BENCH_READ_BUF read()s, as md5sum reads, into MD5 (md5.h: libcrypto's).  With --exec PROG,
 * `PROG ./PATH` runs for each file with the root as its working directory and stdin from
 * /dev/null, and the digest is the hex its output (stdout and stderr) starts with, up to
 * BENCH_MAX_DIGEST bytes so that sha256sum works too; a leading backslash, md5sum's mark of
 * an escaped name, is skipped.
 *
 * With --workload grep or tar the one "file" is the whole tree: the tool runs in the root
 * and its output is reduced to one digest that does not depend on the order folders list
 * their entries in (grep's lines sorted; tar's members, one line each, sorted).
 *
 * The outcome for file i goes into c->dig[i] (b->nfiles entries, zeroed before the first
 * pass): the first digest read is kept; a later pass that reads a different digest, or fails,
 * turns the entry into an error that says so, and the first error is kept.  So after all runs
 * an entry means "this configuration read these bytes every time", or says why not.  Error
 * strings are malloc'd and owned by the entry.
 */
#ifndef TARSEEK_BENCH_DIGEST_H
#define TARSEEK_BENCH_DIGEST_H

#include <stddef.h>

struct bench;
struct bench_cfg;

/* One pass over all of b->files through c, the progress line showing `label`, in the order
 * order[0..nfiles) gives (file numbers; NULL: the list's order).  Returns the wall time in
 * seconds, or NAN if bench_interrupted was set or c's root cannot be opened (then every entry
 * records that error).  Files that cannot be read are recorded and counted; one warning
 * names the first. */
double bench_digest_pass(struct bench *b, struct bench_cfg *c, const char *label,
			 const size_t *order);

#endif
