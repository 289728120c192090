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

/* An archive behind a codec (a cpio.gz, an initramfs, a zip.xz): the index at tmp, of in,
 * holds the decoded file as its single file, flagged inner by idx_build_base.  Indexes that
 * file as an archive of its own -- built the same way, through an archive object over tmp,
 * so its reads decode through the outer stream's checkpoints, with the same level of -r --
 * stores it as the nested image of the single file and sets the meta 'wrapped' to its id:
 * opening the index (arch_open_index) then opens the inner archive in its place.  Bytes that
 * only looked like an archive stay the single file, with a warning.  When it is indexed, st
 * (idx_build_base's) says so: wrapped, the inner archive's members, container and damage.
 * 0 or -errno (-ENOMEM,
 * or an error writing the index). */
int idx_wrap(const char *tmp, const struct idx_input *in, const struct idx_build_opts *o,
	     struct idx_build_stats *st);

/* Builds the index of in, with its own nested pass, and returns it as an SQLite image
 * (malloc'd, in *image and *len); tmp is the scratch file it is built in (removed); its
 * statistics in *stats if not NULL.  0 or -errno as idx_build_base. */
int idx_build_image(const struct idx_input *in, const char *tmp, const struct idx_build_opts *o,
		    void **image, size_t *len, struct idx_build_stats *stats);

#endif
