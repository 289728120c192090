/* The files tarseek-bench reads: from a list (--list, -0, --unquote) or drawn at random from a
 * tree (--sample).
 *
 * Both append to b->files (paths relative to the configurations' root, leading slashes
 * dropped as tar drops them; empty entries skipped), owned by b.  Symbolic links are not
 * sampled: a link to a file is not a member file of its own.  The sample is drawn from the
 * sorted list of regular files with b->rng, so one seed draws the same files from any mount
 * of the same tree.  Out of memory exits (see bench_util.h).
 */
#ifndef TARSEEK_BENCH_LIST_H
#define TARSEEK_BENCH_LIST_H

#include <stdint.h>

struct bench;

/* Reads b->o.list ("-": stdin), one path a line or NUL-terminated with -0, undoing GNU tar's
 * backslash escapes with --unquote.  0, -errno if the list cannot be opened, -EINVAL if it
 * names no files (messages printed to stderr). */
int bench_list_load(struct bench *b);

/* Draws b->o.sample regular files from the tree at root (all of them, with a warning, if it
 * has fewer).  0, -errno if root cannot be opened, -ENOENT if it holds no regular file
 * (logged); entries that cannot be read are skipped with one warning. */
int bench_list_sample(struct bench *b, const char *root);

/* The apparent size of the tree at root: st_size summed over its regular files (links not
 * followed).  0, -errno if root cannot be opened, -EIO if some entries could not be read
 * (*bytes then holds the rest). */
int bench_list_tree_size(const char *root, uint64_t *bytes);

#endif
