/* The nested pass (-r): archives inside an archive.  Between idx_build_base and
 * idx_build_finish (build.h), every regular member named like an archive and confirmed by its
 * magic bytes gets an index of its own -- built the same way, recursively, to
 * o->recursion - 1 levels -- stored whole (an SQLite image) in the nested table, and its entry
 * becomes a folder (IDX_F_NESTED; with o->strip_ext it loses its extension unless a sibling
 * has that name).  The members are read through an archive object over the index being
 * built, so they are decoded like any file of the mount.
 *
 * Sits above build.c and archive.c (it uses both); open.c calls it.
 */
#ifndef TARSEEK_NESTED_H
#define TARSEEK_NESTED_H

#include "index/build.h"

/* Runs the nested pass over the index at tmp, the index of in.  A member that turns out not
 * to be an archive (or is damaged) stays a file, with a notice.  0 or -errno (-ENOMEM, or an
 * error writing the index). */
int idx_nest(const char *tmp, const struct idx_input *in, const struct idx_build_opts *o);

/* Builds the index of in, with its own nested pass, and returns it as an SQLite image
 * (malloc'd, in *image and *len); tmp is the scratch file it is built in (removed).  0 or
 * -errno as idx_build_base. */
int idx_build_image(const struct idx_input *in, const char *tmp, const struct idx_build_opts *o,
		    void **image, size_t *len);

#endif
