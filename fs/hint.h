/* Reads announced at lookup: when the kernel looks up a regular file, the read that usually
 * follows is announced to the file's source at once (un_advise), so that the disk is already
 * reading the bytes it needs while the lookup's reply goes back and the program opens the file
 * and asks to read it.  That read then waits less or not at all for the disk: on a cold second
 * mount most of a small file's read through a shadow was that wait (1000 files of
 * backup.tar.xz: ~1,100 reads of the disk, 64 us each on average, one after the other).
 *
 * The hint is given before the lookup's reply: it opens the file's handle (a query of the
 * index; the read finds it made) and asks the kernel to read the compressed chunk of the
 * file's first bytes (creader_advise; a plain archive's bytes themselves), unless they are
 * cached.  Given after the reply, the read came before the handle was made and nothing was
 * gained.  1000 files of backup.tar.xz through its shadow, cold: lookups +37 ms (p50 29 ->
 * 54 us), reads -55 ms (p50 125 -> 75 us), the pass 0.30 -> 0.29 s.  Local archives only: a
 * remote one's advice is a fetch, made there and then.
 *
 * Only while lookups are followed by reads: of the last HINT_WINDOW regular files looked up
 * (about: older counts fade by halves), at least half were then read from their start, or at
 * most HINT_START were looked up.  A walk that stats files without reading them (stat of
 * paths, a backup tool comparing times) turns the hints off after HINT_START lookups and costs
 * no reads of the disk from then on; they come back once about HINT_WINDOW / 2 files looked
 * up have been read.  A hint never decodes and never waits.  TARSEEK_LOOKUP_HINTS=0 in the
 * daemon's environment turns them off.
 *
 * Thread-safe: one mutex guards the counts and the ring of recent lookups (taken alone).
 */
#ifndef TARSEEK_HINT_H
#define TARSEEK_HINT_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#define HINT_RING 64	/* recent lookups remembered, to tell whether they were read */
#define HINT_WINDOW 64 /* lookups counted before the counts fade by half */
#define HINT_START 16	/* lookups hinted before anything is known */
#define HINT_BYTES ((uint64_t)128 << 10) /* announced: a small file, or where a large one starts */

struct hint {
	bool off; /* TARSEEK_LOOKUP_HINTS=0 (set before mounting) */
	pthread_mutex_t lock;
	uint64_t ring[HINT_RING]; /* inode numbers (0: empty) */
	unsigned pos;
	uint64_t looked, read; /* regular files looked up, and of those read from their start */
	uint64_t given, held;  /* hints given, and withheld (for user.tarseek.requests) */
};

#define HINT_INIT {.lock = PTHREAD_MUTEX_INITIALIZER} /* a struct hint's initializer */

/* A regular file ino was looked up: true if its read should be announced now. */
bool hint_looked_up(struct hint *h, uint64_t ino);

/* A read of ino from its start. */
void hint_read(struct hint *h, uint64_t ino);

/* The counts, for the root's user.tarseek.requests. */
void hint_counts(struct hint *h, uint64_t *given, uint64_t *held);

#endif
