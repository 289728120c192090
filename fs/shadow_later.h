/* Shadows made after mounting (see index/shadow_make.h): an archive whose index was there
 * already but has no usable shadow gets one in the background once the mount is ready, so
 * that the next mount reads it -- never delaying this one.  One pool job at nice 10 goes
 * through the archives in the order they were added; it stops between reads when the mount
 * ends.  Remote archives are left out (it would fetch every byte of them).
 *
 * Not thread-safe: one thread adds, starts and frees (the daemon's main thread).
 */
#ifndef TARSEEK_FS_SHADOW_LATER_H
#define TARSEEK_FS_SHADOW_LATER_H

#include <stdint.h>

#include "shadow/shadow.h"

struct shadow_later;

/* NULL when mode is never (nothing to do) or out of memory. */
struct shadow_later *sl_new(enum shadow_mode mode, uint64_t max, unsigned threads);

/* The archive at path, whose index is at index (copied). */
void sl_add(struct shadow_later *sl, const char *path, const char *index);

/* Starts the job (after the fork that detaches the daemon).  Best effort. */
void sl_start(struct shadow_later *sl);

/* Stops the job (between two reads), joins it, frees.  NULL does nothing. */
void sl_free(struct shadow_later *sl);

#endif
