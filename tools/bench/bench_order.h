/* The order a pass of tarseek-bench reads the files in (--order).
 *
 * list: the list's (or the sample's) order, as before --order existed.  archive: by where the
 * data lies in the archive, so that a reader of a compressed stream only moves forward; a
 * tarseek mount tells it per file (getxattr user.tarseek.stream and user.tarseek.data_offset,
 * read on a mount made for that before the runs, so that no timed mount has seen the files
 * first); files without an offset (links, empty files) come last in list order, and a
 * configuration that cannot tell (--dir, --mount-cmd) reads in list order.  random: a
 * shuffle seeded by --seed and the run's number, so the k-th run of every configuration reads
 * the same permutation and a seed repeats them all.
 *
 * Orders are arrays of b->nfiles file numbers (indices of b->files).  Out of memory exits.
 */
#ifndef TARSEEK_BENCH_ORDER_H
#define TARSEEK_BENCH_ORDER_H

#include <stddef.h>

struct bench;
struct bench_cfg;

/* c->archive_order from the mounted configuration c (a tarseek mount).  0; a file whose
 * offset cannot be read is placed last (counted in one warning). */
int bench_order_archive(struct bench *b, struct bench_cfg *c);

/* The order of c's run number `run` (0-based; the untimed pass of --warm uses 0) into
 * buf[0..nfiles).  Returns buf. */
const size_t *bench_order_run(const struct bench *b, const struct bench_cfg *c, size_t run,
			      size_t *buf);

/* "list", "archive" or "random". */
const char *bench_order_name(int order);

#endif
