/* Open files and directories by inode, for a kernel that sends no open.
 *
 * With FUSE's "no open" mode (FUSE_CAP_NO_OPEN_SUPPORT: our open replies ENOSYS once) the
 * kernel stops sending OPEN, FLUSH and RELEASE for files, and with "no opendir" OPENDIR and
 * RELEASEDIR for directories: reading a small file costs one READ instead of four requests.
 * Reads then carry no handle, only the inode, so the handles live here: made on first use
 * (un_open / un_opendir), kept while they are used and while there is room (the least
 * recently used idle ones go past `max`), closed by th_free.  A directory's listing is made
 * again when a listing starts over (offset 0), so a folder source read live shows what it
 * holds then, as an opendir would.
 *
 * Thread-safe: one mutex guards the table; un_open/un_opendir/un_close* run without it (two
 * threads opening the same inode at once both open it; one handle is kept, the other
 * closed).  The lock is taken alone.
 */
#ifndef TARSEEK_HANDLES_H
#define TARSEEK_HANDLES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "mount/union.h"

struct th;
struct th_ref; /* one use of a handle: give it back with th_put */

/* A table over u keeping at most max idle handles.  NULL if out of memory. */
struct th *th_new(struct un *u, size_t max);

/* The open file of ino in *f: 0 or -errno (un_open's).  *ref for th_put. */
int th_file(struct th *h, uint64_t ino, struct un_file **f, struct th_ref **ref);

/* The open directory of ino in *d; fresh: list it anew (a listing starting at offset 0). */
int th_dir(struct th *h, uint64_t ino, bool fresh, struct un_dir **d, struct th_ref **ref);

void th_put(struct th *h, struct th_ref *ref);

/* Closes every handle; none may be in use.  NULL does nothing. */
void th_free(struct th *h);

#endif
