/* Archives split into parts: the parts read as one source, in order.
 *
 * Names (what `split`, 7-Zip and Info-ZIP zip write), given the first part:
 *   NAME.001, NAME.002, ...    `split --numeric-suffixes=1 -a 3`, 7-Zip's volumes
 *                              (NAME.7z.001, NAME.zip.001): any number of digits, two or
 *                              more, numbered from 1 (or from 0: NAME.00, `split -d`); every
 *                              part has the first part's number of digits;
 *   NAME.z01, ..., NAME.zip    a split zip (`zip -s`), given its NAME.zip or its NAME.z01
 *                              (NAME.z100 follows NAME.z99).
 * Multi-volume rar (NAME.part1.rar) is not joined here: its volumes are not one byte stream.
 * A first part with no second one beside it is a file like any other.  Every part but the
 * last must be as long as the first (all these tools cut parts of one size), and no part may
 * be missing in the middle (a later part beside the run that was found says so), nor a split
 * zip's NAME.zip: otherwise the archive is refused with a message naming the part.  A missing
 * last NAME.NNN cannot be told from the names; the archive's own format finds it short (its
 * directory, its end), as for any truncated archive.
 *
 * The joined source reads its parts through their own sources (stateless pread), so it is as
 * thread-safe as they are: a file source is.  A part found shorter than it was when joined
 * (changed under a mount) fails the read with -EIO, said once; it never serves other bytes.
 * A split zip's directory gives each offset as (part, offset in that part): parts_starts()
 * tells containers/zip.c where each part begins in the joined bytes.
 *
 * Errors are -errno: -ENOENT (a part missing), -EIO (a part of the wrong length), -EINVAL (a
 * part that is not a regular file), -ENOMEM, or the file's own.
 */
#ifndef TARSEEK_PARTS_H
#define TARSEEK_PARTS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>

#include "common/source.h"

/* The name of the whole archive when path names the first part of a split archive by its
 * name alone (NAME.001 or NAME.00 -> NAME, NAME.z01 or NAME.zip -> NAME.zip), malloc'd; NULL
 * if the name is not one (or out of memory).  No file is looked at: a NAME.zip is named
 * "NAME.zip" whether or not it has parts. */
char *parts_whole_name(const char *path);

/* The parts of the split archive whose first part (or a split zip's NAME.zip) is path:
 * *names (malloc'd array of malloc'd paths, in content order; parts_names_free) and *n >= 2.
 * 0 with *n = 0 and *names = NULL when path is not split (no such name, or no second part).
 * -errno, logged (which part is missing or of the wrong length) unless quiet. */
int parts_find(const char *path, bool quiet, char ***names, size_t *n);
void parts_names_free(char **names, size_t n);

/* path as a source: a file (src_open_file), or its parts joined (parts_find).  *out = NULL on
 * error.  0 or -errno: the parts' errors are logged; a plain file's error is the caller's to
 * tell, as src_open_file's. */
int parts_open(const char *path, struct src **out);

/* stat(2) of path, or of its parts together: the first part's, with the total size and the
 * latest mtime of all (a part rewritten changes it).  0 or -errno (not logged). */
int parts_stat(const char *path, struct stat *st);

/* The parts as one source.  parts[0..n) are owned by it, also on error; each must have a
 * known size.  names (copied, for messages) may be NULL.  NULL if out of memory. */
struct src *parts_join(struct src **parts, char *const *names, size_t n);

/* If s was made by parts_join: its number of parts, and in *starts where each begins in its
 * bytes (n + 1 offsets, the last its size; owned by s).  Else 0 (*starts = NULL). */
size_t parts_starts(const struct src *s, const uint64_t **starts);

#endif
