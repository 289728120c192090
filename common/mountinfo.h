/* The mount table of this process's namespace (/proc/self/mountinfo), as the daemon's warm-up
 * and tarseek-bench watch it.  The file is pollable: poll() reports POLLPRI (and POLLERR) once
 * after every change of the table, so a watcher keeps it open and reads it again only then.
 * No FUSE, no core: the bench links this file alone.
 */
#ifndef TARSEEK_MOUNTINFO_H
#define TARSEEK_MOUNTINFO_H

#include <sys/types.h>

/* 1 if the table read from fd (an open /proc/self/mountinfo, read again from its start) has a
 * mount on path (absolute and canonical) -- one of the file system whose device number is
 * *dev, unless dev is NULL -- 0 if not, -errno if it cannot be read. */
int mountinfo_has(int fd, const char *path, const dev_t *dev);

#endif
