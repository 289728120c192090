/* A shadow made for an index that has none (see shadow/shadow.h): an index built before the
 * shadow existed, with --shadow never, or whose shadow was lost.  The first mount writes the
 * shadow while it decodes the streams anyway; for an index that is already there, a later
 * mount (after it is ready, in the background) or tarseek-index decodes the streams the mode
 * wants once more and writes it then.
 *
 * Identity.  A shadow names the index it belongs to by an id (shadow.h).  An index built with
 * its shadow records that id (meta "shadow_id").  An index is sealed (db.h: a CRC of the whole
 * file), so nothing can be added to it afterwards; a shadow made later takes an id derived
 * from that seal and the file's size instead, which only that index file has.
 */
#ifndef TARSEEK_SHADOW_MAKE_H
#define TARSEEK_SHADOW_MAKE_H

#include <sqlite3.h>
#include <stdatomic.h>
#include <stdint.h>

#include "common/source.h"
#include "shadow/shadow.h"

/* The shadow id the index at index_path (open as db) expects, or 0 if it cannot be told. */
uint64_t idx_shadow_id(sqlite3 *db, const char *index_path);

struct idx_shadow_make_opts {
	enum shadow_mode mode;
	uint64_t max;	  /* --shadow-max (0: half the free space) */
	unsigned threads; /* compressing jobs */
	int level;	  /* zstd level; 0: the shadow's default */
	const atomic_bool *stop; /* checked between reads (NULL: none): -ECANCELED */
};

/* Makes the shadow of the index at index_path for the archive whose bytes are archive (the
 * file the index was validated against; borrowed), if mode wants one for some stream and the
 * index has no usable shadow (a valid one is left alone).  name is the archive's, for
 * messages.  1 when a shadow was written, 0 when none was needed or possible (a message says
 * why when one was wanted), -ECANCELED, or -errno for an error of the index itself. */
int idx_shadow_make(const char *index_path, struct src *archive, const char *name,
		    const struct idx_shadow_make_opts *o);

#endif
