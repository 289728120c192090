/* The mount point: what may be mounted on, and unmounting (tarseek -u).
 *
 * Mounted on: an existing folder where nothing is mounted yet -- or where only an autofs
 * trigger is (systemd's x-systemd.automount puts one there and expects the mount on top of
 * it) -- or /dev/fd/N, the FUSE descriptor a mount helper opened and mounted itself
 * (mount.fuse3's drop_privileges): libfuse takes that as it is.
 *
 * Unmounting: the daemon answers user.tarseek.pid on the mount's root; tarseek -u unmounts
 * (umount2 as root, else fusermount3 -u) and waits until that process has ended, so that a
 * script can remove or replace the archive right after.
 */
#ifndef TARSEEK_MOUNTPOINT_H
#define TARSEEK_MOUNTPOINT_H

#include <stdbool.h>

/* The mount point of `tarseek SOURCE` (none given), as ratarmount makes it: name -- SOURCE's
 * base name -- without its archive extension (".tar.gz", ".zip", ".7z", ...; a split part's
 * ".001" goes first; else the last ".EXT"), in the current folder.  Made if missing
 * (*made = true: the caller removes it after unmounting); an empty folder already there is
 * used as it is.  An absolute path, malloc'd, or NULL (logged why: nothing to strip, a file
 * of that name, a folder that is not empty). */
char *mp_default(const char *name, bool *made);

/* True for /dev/fd/N. */
bool mp_is_fd(const char *mnt);

/* 0 if mnt can be mounted on, else -1 (logged why). */
int mp_check(const char *mnt);

/* True if path lies at or below mnt. */
bool mp_inside(const char *path, const char *mnt);

/* Unmounts the tarseek mount at mnt and waits (at most a minute) for its daemon to end.  0, or
 * -1 (logged why). */
int mp_unmount(const char *mnt);

#endif
