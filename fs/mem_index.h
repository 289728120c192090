/* --index-file :memory: (ratarmount's way to keep no index): the indexes live in memory and
 * go with the daemon.
 *
 * They are SQLite files like any other (the daemon's threads each open their own connection
 * by path), so "in memory" is a private folder on a memory file system: /dev/shm when it is
 * one, else $TMPDIR or /var/tmp.  The daemon removes the folder and what is in it when it
 * ends; nothing is written beside the archives or in the cache folder, and no shadow is made
 * (it would take memory the size of the decoded data).  A daemon killed by SIGKILL leaves the
 * folder (tarseek-mem-XXXXXX) behind.
 */
#ifndef TARSEEK_FS_MEM_INDEX_H
#define TARSEEK_FS_MEM_INDEX_H

#include <stdbool.h>

/* True if index_file asks for an index in memory. */
bool mi_wanted(const char *index_file);

/* Makes the private folder: its absolute path (malloc'd), or NULL (logged why). */
char *mi_make(void);

/* Removes dir and the files in it (the indexes, SQLite's side files); frees dir.  NULL: nothing. */
void mi_remove(char *dir);

#endif
