/* Which entries of a listing carry their attributes (the READDIRPLUS reply).
 *
 * An entry sent with its attributes makes the kernel build a dentry and an inode for it then
 * and there: a later stat or open of the name costs no LOOKUP, but the listing costs the
 * process that lists about 4 us of kernel time per entry (allocating and hashing them).  That
 * was most of a cold `find` over a mount of 100k members: 0.43 s, against 0.13 s with bare
 * names and 0.11 s for the extracted tree.  find, ls, os.walk need only names and types (a
 * bare entry still has its type); du, ls -l, tar -c need every entry's attributes.  So:
 *
 *  - folders always carry them (a walk descends into them: no LOOKUP on the way down);
 *  - other entries carry them once stats of names the kernel does not know have shown up:
 *    the DP_FLIP-th LOOKUP of a non-folder switches the mount to attributes for every entry,
 *    for good, and the folders listed bare until then are invalidated in the kernel (their
 *    cached listings dropped) so that their next listing carries them.  A du therefore pays
 *    LOOKUPs in its first folder only, and a du after a find none;
 *  - but in one folder, at most DP_BARE_MAX entries go bare, the rest carry their attributes:
 *    a du of a single folder of 100k files has no later folder to switch for, and a LOOKUP
 *    per entry (~35 us) would cost it far more than the inodes cost a find (3.7 s against
 *    0.6 s); past DP_BARE_MAX entries a find pays as it did, a du at most DP_BARE_MAX LOOKUPs
 *    -- except while the warm-up walks the tree: it makes every inode anyway, so everything
 *    else is listed bare until it is done;
 *  - the listings of the warm-up thread (warmup.h) always carry them, and a folder listed
 *    bare is invalidated before the warm-up lists it (else the kernel would answer the
 *    warm-up from the bare listing it cached).
 *
 * Thread-safe.  The invalidations go through the session passed in; the caller makes sure it
 * is alive (they are FUSE notifications, sent from a request handler or the warm-up).
 */
#ifndef TARSEEK_DIRPLUS_H
#define TARSEEK_DIRPLUS_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#define DP_FLIP 8	    /* LOOKUPs of non-folders that switch listings to every attribute */
#define DP_BARE_MAX 4096 /* entries of one folder listed bare at most (the rest carry them) */

struct dirplus;
struct fuse_session;

struct dirplus *dp_new(void);
void dp_free(struct dirplus *dp);

/* The thread (by its kernel thread id, as FUSE requests carry it) whose listings always carry
 * every attribute: the warm-up, while it walks the tree.  0: none. */
void dp_set_walker(struct dirplus *dp, pid_t tid);

/* How many of the non-folders in one reply to thread `requester`'s listing of folder dir may go
 * without their attributes (0: none).  from_start: the reply starts at the folder's first
 * entry.  The reply then says how many it left bare with dp_listed_bare (if any). */
unsigned dp_bare_room(struct dirplus *dp, pid_t requester, uint64_t dir, bool from_start);
void dp_listed_bare(struct dirplus *dp, uint64_t dir, unsigned n);

/* A LOOKUP found an entry (a folder or not): may switch to every attribute (see above). */
void dp_looked_up(struct dirplus *dp, struct fuse_session *se, bool folder);

/* The walker is about to list folder dir: drops the kernel's bare listing of it, if any (true
 * if there was one since the last call for dir). */
bool dp_before_walk(struct dirplus *dp, struct fuse_session *se, uint64_t dir);

/* A listing request (READDIR or READDIRPLUS) of thread requester came in; from_start: at
 * the folder's first entry.  Counts the walker's starts (dp_walker_starts). */
void dp_listing_request(struct dirplus *dp, pid_t requester, bool from_start);

/* The walker's listing requests that started at a folder's first entry, so far.  The walker
 * reads it before and after the first read of a folder: unchanged, that read was answered
 * from the kernel's cached listing, which made no inode (it may be someone else's bare
 * listing, cached after dp_before_walk dropped it: the kernel fills its cache from a reply
 * after the reply was sent, so a drop may come first). */
unsigned long dp_walker_starts(struct dirplus *dp);

/* Drops the kernel's cached listing of dir, whatever listing it is (see dp_walker_starts). */
void dp_drop_listing(struct dirplus *dp, struct fuse_session *se, uint64_t dir);

/* Whether listings carry every attribute (the switch has happened); for the unit tests. */
bool dp_all_attrs(struct dirplus *dp);

#endif
