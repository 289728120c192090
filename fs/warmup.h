/* Warming the kernel's caches after mounting, so that reading a small file costs no request.
 *
 * 1. Entries: one thread lists every folder of the mount once, through the mount itself.  The
 *    kernel asks for the listings with READDIRPLUS (always, not only for a first batch: see
 *    tfs_init), whose replies carry each entry's attributes, and keeps an entry and an inode
 *    for each (for the long entry timeout): opening a file by its path afterwards costs no
 *    LOOKUP, and a tree walk (find, grep -r, tar -c) finds every folder listed already.
 * 2. Pages: once the prefetch (prefetch.h) is done -- the archives' decoded bytes are in the
 *    chunk cache, a plain archive's bytes in the page cache -- the regular files found on the
 *    way are stored into the kernel's page cache of their inodes (FUSE notify_store, from
 *    memory), in the order they were listed, up
 *    to `budget` bytes: a read of any of them is then answered by the kernel alone.  Not when
 *    the prefetch left an archive out: its pages would have to be decoded for the purpose.
 * Worth it for trees of up to WARMUP_MAX entries; above that the kernel memory the entries
 * pin (about a kilobyte each) is not.
 *
 * It gives way to the user's reads: a mount is often read right after it comes up (a
 * benchmark's cold pass, a script), and the walk's listings would take the daemon's
 * threads, the disk and a core from those reads (backup.tar: a 2.2 s walk against a cold
 * md5 pass of 1000 files, 0.34 s when it waits, 0.36-0.39 s when it does not).  So before
 * every entry it handles and every file it stores, the warm-up waits until `quiet_ms` have
 * gone by without a READ from another thread (warmup_note_request); while it waits it is
 * not the dirplus walker, so the user's listings follow the usual rules.  Listings and
 * lookups do not hold it up: a find or du right after mounting is faster with the walk
 * beside it, on the other core.  Nor does polling the status attributes.
 *
 * Symbolic links are not followed, nor are archives inside the archive (-r) entered: there
 * is no warm-up when they are mounted as folders.  Only root can do it (see below).
 *
 * It must not keep the mount busy: a folder held open under the mount point makes a plain
 * `fusermount3 -u` (or umount) fail with EBUSY, and users unmount right after a quick look.
 * So the walk goes through a second, private view of the mount: a bind mount made in a
 * temporary folder, opened, and detached at once (MNT_DETACH), so that only the walk's own
 * descriptors keep it; unmounting the mount point is then never refused because of it.
 * Before each folder and each file the warm-up checks that the mount point still shows this
 * mount, and stops when it does not (the file system ends as soon as it lets go).  It checks
 * in the mount table (polled, read again when it changes), not by looking up the mount point:
 * a lookup holds the mount while it runs, and an unmount at that moment would be refused.  Making a
 * bind mount needs CAP_SYS_ADMIN: for other users there is no warm-up.
 *
 * warmup_start after the mount is up (it makes the view on its own thread: that asks the
 * file system for its root); warmup_end_session before the session is destroyed (no page is
 * stored through it afterwards); warmup_stop after the session is closed (a listing then
 * fails at once instead of waiting for a reply nobody sends), which joins its jobs (the walk,
 * at the requests' priority, then the pages, at the prefetch's: jobs of common/pool.h).
 */
#ifndef TARSEEK_WARMUP_H
#define TARSEEK_WARMUP_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#define WARMUP_MAX 200000
#define WARMUP_QUIET_MS 50 /* the default quiet_ms: a file read after another comes sooner */

struct dirplus;
struct fuse_session;
struct prefetch;
struct th;
struct un;

struct warmup_params {
	const char *mountpoint;
	struct fuse_session *se; /* for notify_store */
	struct un *un;		 /* the files' sizes */
	struct th *handles;	 /* their open files */
	struct dirplus *dp;	 /* told which thread walks (its listings carry every attribute) */
	struct prefetch *pf;	 /* waited for before the pages (NULL: none) */
	uint64_t budget;	 /* bytes stored at most (0: no pages, entries only) */
	unsigned quiet_ms;	 /* the user's requests hold it up this long (0: never) */
};

struct warmup;

/* Starts warming the caches of the mount described by p (copied).  NULL if there is no
 * warm-up (not root, or no thread). */
struct warmup *warmup_start(const struct warmup_params *p);

/* How far it got: the private view 0 being made, 1 made, -1 none (no walk); the entries
 * listed (false while running); the pages: 0 being stored (or
 * waiting for the prefetch), 1 stored, -1 none will be (no budget, an archive left out of the
 * prefetch, or stopped); the bytes stored so far. */
void warmup_state(struct warmup *w, int *view, bool *entries_done, int *pages, uint64_t *stored);

/* The times the walk or the pages phase began to give way to the user's reads (see
 * warmup_note_request); *now: it is giving way at the moment (it lists nothing then). */
unsigned long warmup_gave_way(struct warmup *w, bool *now);

/* A request that the thread `requester` (its kernel thread id) made has come in: unless
 * that is the warm-up itself, the warm-up waits for quiet_ms after it.  Cheap (a clock
 * read and an atomic store); NULL does nothing. */
void warmup_note_request(struct warmup *w, pid_t requester);

/* Stops it using the session (it stops soon after).  NULL does nothing. */
void warmup_end_session(struct warmup *w);

/* Stops it (where it is) and joins its jobs.  NULL does nothing. */
void warmup_stop(struct warmup *w);

#endif
