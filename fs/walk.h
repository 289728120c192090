/* The tree walk after mounting: one thread lists every folder of the mount once, through the
 * mount itself, so that the kernel answers later lookups from its own entry cache.
 *
 * The kernel asks for folder listings with READDIRPLUS (always, not only for the first
 * batch: see tfs_init), whose replies carry each entry's attributes; the kernel keeps an
 * entry and an inode for each (for the long entry timeout), so that opening a file by its
 * path afterwards costs no LOOKUP request, and a tree walk (find, grep -r, tar -c) finds
 * every folder listed already.  Worth it for trees of up to WALK_MAX entries; above that the
 * kernel memory it pins (about a kilobyte an entry) is not.
 *
 * Symbolic links are not followed, nor are archives inside the archive (-r) entered: the walk
 * is skipped when they are mounted as folders.  The walk reads no file.
 *
 * It must not keep the mount busy: a folder held open under the mount point makes a plain
 * `fusermount3 -u` (or umount) fail with EBUSY, and users unmount right after a quick look.
 * So the walk goes through a second, private view of the mount: a bind mount made in a
 * temporary folder, opened, and detached at once (MNT_DETACH), so that only the walk's own
 * descriptors keep it; unmounting the mount point is then never refused because of the walk.
 * Before each folder the walk checks that the mount point still shows this mount, and stops
 * when it does not (the file system then ends as soon as the walk lets go of it).  Making a
 * bind mount needs root (CAP_SYS_ADMIN): for other users there is no walk.
 *
 * walk_start after the mount is up; walk_stop after the session is unmounted (a listing then
 * fails at once instead of waiting for a reply nobody sends), which joins the thread.
 */
#ifndef TARSEEK_WALK_H
#define TARSEEK_WALK_H

#include <stdbool.h>
#include <stdint.h>

#define WALK_MAX 200000

struct tfs_walk;

/* Starts walking the tree mounted at mountpoint.  NULL if there is no walk (not root, no
 * private view, no thread). */
struct tfs_walk *walk_start(const char *mountpoint);

/* True once every folder has been listed. */
bool walk_done(struct tfs_walk *w);

/* Stops the walk (where it is) and joins its thread.  NULL does nothing. */
void walk_stop(struct tfs_walk *w);

#endif
