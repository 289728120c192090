/* The FUSE layer's per-mount state and the operations table.  Everything below fs/ is
 * FUSE-free; this is the only place that turns -errno into FUSE replies.
 */
#ifndef TARSEEK_TFS_H
#define TARSEEK_TFS_H

#define FUSE_USE_VERSION 312
#include <fuse_lowlevel.h>

#include <stdatomic.h>
#include <stdint.h>

#include "mount/union.h"

struct th;
struct prefetch;
struct warmup;

/* The kinds of request counted (user.tarseek.requests on the root). */
enum tfs_op {
	TFS_OP_LOOKUP,
	TFS_OP_FORGET,
	TFS_OP_GETATTR,
	TFS_OP_READLINK,
	TFS_OP_OPEN,
	TFS_OP_READ,
	TFS_OP_FLUSH,
	TFS_OP_RELEASE,
	TFS_OP_OPENDIR,
	TFS_OP_READDIR,
	TFS_OP_READDIRPLUS,
	TFS_OP_RELEASEDIR,
	TFS_OP_STATFS,
	TFS_OP_GETXATTR,
	TFS_OP_LISTXATTR,
	TFS_OP_REFUSED, /* everything that would write */
	TFS_OP_COUNT
};

struct tfs_counts {
	atomic_uint_fast64_t n[TFS_OP_COUNT];  /* requests, counted before their reply */
	atomic_uint_fast64_t ns[TFS_OP_COUNT]; /* time in the handlers, reply included (a
						  handler's time is added after its reply) */
};

struct tfs {
	struct un *un;	     /* the mounted tree: one or more sources */
	struct th *handles;  /* open files and directories by inode (no open / no opendir) */
	struct prefetch *pf; /* decoding the archives ahead, or NULL */
	struct shadow_later *later; /* shadows made after mounting, or NULL */
	struct watch *watch;	    /* the archive files watched (fs/watch.h), or NULL */
	struct warmup *_Atomic warm; /* warming the kernel's caches, or NULL (set once mounted) */
	struct dirplus *dp;  /* which listed entries carry their attributes */
	struct fuse_session *se; /* for notifications from request handlers (set before mounting) */
	double timeout;	     /* entry and attribute timeout, seconds (the archive never changes) */
	bool debug;	     /* per-request traces */
	bool kernel_opens;   /* TARSEEK_KERNEL_OPENS=1: do not ask for no open (tests) */
	bool no_open, no_opendir; /* set at init: the kernel opens files/folders without us */
	int ready_fd;	     /* detached: tfs_init writes 'y' here (the waiting command exits 0),
				and closes it; -1 otherwise */
	bool set_uid, set_gid; /* -o uid=, gid=: every entry's owner */
	uint32_t uid, gid;
	uint32_t dmask, fmask; /* -o umask=, dmask=, fmask=: bits cleared from the modes */
	unsigned max_read;     /* -o max_read=, which FUSE wants its init to repeat */
	struct tfs_counts counts;
};

extern const struct fuse_lowlevel_ops tfs_ops;

#endif
