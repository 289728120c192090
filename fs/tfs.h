/* The FUSE layer's per-mount state and the operations table.  Everything below fs/ is
 * FUSE-free; this is the only place that turns -errno into FUSE replies.
 */
#ifndef TARSEEK_TFS_H
#define TARSEEK_TFS_H

#define FUSE_USE_VERSION 312
#include <fuse_lowlevel.h>

#include "union.h"

struct tfs {
	struct un *un;	     /* the mounted tree: one or more sources */
	double timeout;	     /* entry and attribute timeout, seconds (the archive never changes) */
	bool debug;	     /* per-request traces */
};

extern const struct fuse_lowlevel_ops tfs_ops;

#endif
