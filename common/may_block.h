/* A thread tells whoever runs it that it is about to wait.
 *
 * The daemon's request loop (fs/loop.h) answers quick requests on the thread that reads
 * them, so that no other thread has to be woken; while it does, that thread reads no other
 * request.  Code below it that may wait a long time calls may_block() first, and the loop
 * hands the reading to another thread.  The callers: a cache miss, or a wait for another
 * thread's decode (cache_get); a page of a plain archive not in the page cache (the file
 * source's pread, which tries RWF_NOWAIT first while armed; tfs_read before a spliced reply);
 * a server (rmt_pread); a folder source's disk (dirtree.c); an archive inside an archive
 * opened on its first lookup (un_resolve_nested).  Elsewhere (the tools, the tests, a thread
 * with no hook) it does nothing.  The hook is per thread and runs at most once per arming.
 */
#ifndef TARSEEK_MAY_BLOCK_H
#define TARSEEK_MAY_BLOCK_H

#include <stdbool.h>

/* The calling thread may wait for a while from now on: runs and clears its hook, if any. */
void may_block(void);

/* Whether the calling thread has a hook (may_block would do something). */
bool may_block_armed(void);

/* Sets the calling thread's hook (fn(arg) at the next may_block), or clears it (fn NULL). */
void may_block_arm(void (*fn)(void *arg), void *arg);

#endif
