/* The parallel decode pipeline of a block codec's scan.
 *
 * A block codec's scan is a sequence of jobs -- a block (xz), a frame (zstd), a group of
 * blocks (lzop) -- whose decoded bytes must reach the caller in order, as one stream, with
 * each job's checkpoint emitted just before its first byte.  The pipeline decodes the jobs on
 * worker threads and delivers them in order; a codec writes only its format's parts:
 *
 *   next()  finds the next job: sets its checkpoint (what is known of it yet) and the codec's
 *           own description of it (job->own).  One worker at a time calls it, in job order
 *           (the dispatch turn), without the pipeline's lock held: it may read the file.  The
 *           worker that found a job runs it, so state next() leaves in the worker's own
 *           storage (a block decoder it started) is there for run().
 *   run()   decodes the job: asks for a buffer (pl_buf), fills it, hands it over (pl_commit),
 *           as often as needed.  Workers run different jobs at the same time.
 *   begin() optional, on the consumer's thread: the consumer has reached the job (before any
 *           of its bytes, also for a job that decodes to nothing).
 *   first() optional, on the consumer's thread, just before the job's first byte is returned
 *           at decoded offset uoff: emits its checkpoint.  Default: job->ck goes to the sink,
 *           after checking that ck.uoff is uoff; a job with no bytes emits nothing.
 *
 * Memory: at most `depth` jobs are in flight (the one being read and the ones after it), each
 * queueing at most job_cap decoded bytes in chunks of at least PL_CHUNK bytes; chunks are
 * recycled (but for one-offs over 4 x PL_CHUNK).  A worker asking for a buffer while its job's
 * queue is full waits for the consumer.
 *
 * Errors: run() returns 0 when the job decoded and passed its checks, or -errno after
 * describing the failure with pl_fail (a message, and whether the bytes it committed before
 * failing can be trusted).  The consumer returns the job's committed bytes first, then the
 * error (logged at TFS_LOG_ERR, sticky).  next() returns 1 (a job), 0 (no more jobs: the end)
 * or -errno (the jobs end with that error, reported after the last job); at the end an
 * optional message (pl_end_note: trailing garbage, say) is logged at its level.  What the
 * scan has verified (pl_verified) is the end of the last job that passed its checks, or the
 * end of a failed job's bytes when pl_fail said they are trusted (a file that merely ends
 * early; checksums per block).
 *
 * Cancellation: pl_free (or an error on the consumer's side) stops the workers: a worker
 * waiting for a turn, a slot or queue space wakes up, pl_buf returns NULL (run() then returns
 * -ECANCELED), and pl_free joins every worker before it returns.
 *
 * Workers are jobs of the process's pool (common/pool.h), started by pl_new and joined by
 * pl_free, at the niceness of the thread that starts the scan (pl_nice): a scan started by
 * background work (a prefetch's whole decode) decodes in the background too.
 *
 * Threads: pl_read, pl_verified and pl_free from the consumer's thread only (the one calling
 * the codec's scan_read); the sink is called from that thread, as codec.h demands.
 */
#ifndef TARSEEK_PIPELINE_H
#define TARSEEK_PIPELINE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "codecs/codec.h"

#define PL_CHUNK ((size_t)1 << 20) /* decoded bytes per standard chunk */
#define PL_MSG 320		   /* longest message of a job or of the end */

struct pipeline;

/* One job.  ck and own are written by next() and (until its first pl_commit) by run(). */
struct pl_job {
	struct codec_ckpt ck;
	void *own;    /* ops->job_size bytes of the codec's, zeroed before next() */
	uint64_t seq; /* 0, 1, 2, ... */
};

/* How a job failed (run() fills it with pl_fail) or how the jobs ended (next()). */
struct pl_note {
	int level;	   /* TFS_LOG_* for the end's note; a job's failure is logged as error */
	bool trusted;	   /* a failed job: the bytes it committed passed their checks */
	char text[PL_MSG]; /* "" if nothing to say */
};

struct pl_ops {
	size_t job_size; /* bytes of job->own */
	int (*next)(void *ctx, unsigned worker, struct pl_job *job, struct pl_note *end);
	int (*run)(void *ctx, unsigned worker, struct pl_job *job, struct pl_note *fail);
	void (*begin)(void *ctx, const struct pl_job *job, uint64_t uoff);
	int (*first)(void *ctx, const struct pl_job *job, uint64_t uoff);
};

struct pl_params {
	const struct pl_ops *ops;
	void *ctx;		       /* passed to every op */
	const struct codec_sink *sink; /* for the default first() */
	const char *name;	       /* the codec, for messages and thread names */
	unsigned workers;	       /* >= 1 */
	size_t depth;		       /* jobs in flight, >= 2 */
	size_t job_cap;		       /* decoded bytes one job may queue, >= PL_CHUNK */
};

/* The job_cap for depth jobs sharing budget decoded bytes: budget / depth in whole chunks,
 * clamped to [min, max]. */
size_t pl_job_cap(size_t budget, size_t depth, size_t min, size_t max);

/* Starts the workers.  0 or -errno (-ENOMEM); *out = NULL on error. */
int pl_new(const struct pl_params *p, struct pipeline **out);

/* What every block codec's scan_new does around pl_new, in one call: its pipeline with the
 * codec's ops over ctx, the sink (for the default first()), workers workers, depth jobs in
 * flight and job_cap bytes per job.  0 or -errno as pl_new; *out = NULL on error. */
int pl_start(const struct pl_ops *ops, void *ctx, const struct codec_sink *sink, const char *name,
	     unsigned workers, size_t depth, size_t job_cap, struct pipeline **out);

/* The workers a scan's options ask for: opts->threads, 1 when unset (or no opts), at most max. */
unsigned pl_threads(const struct codec_opts *opts, unsigned max);

/* The calling thread's niceness (0 if it cannot be read): what a scan passes to pool_start for
 * its workers, so that they run at its priority as threads it made would. */
int pl_nice(void);

/* The next decoded bytes in job order (len > 0): > 0, 0 at the end, or -errno (logged; every
 * later call returns it too).  Returns what is ready rather than wait once it has some. */
ssize_t pl_read(struct pipeline *p, void *buf, size_t len);

/* Decoded bytes that passed their checks (see above). */
uint64_t pl_verified(const struct pipeline *p);

/* Stops and joins the workers, frees everything.  NULL does nothing. */
void pl_free(struct pipeline *p);

/* For run(): a buffer for at least want bytes (PL_CHUNK if want is smaller) in *buf, its
 * size in *cap; waits while the job's queue is full.  0, -ECANCELED if the pipeline stops
 * (run() returns it), or -ENOMEM. */
int pl_buf(struct pl_job *job, size_t want, uint8_t **buf, size_t *cap);

/* For run(): queues the first len bytes of the buffer pl_buf gave last (0: gives it back). */
void pl_commit(struct pl_job *job, size_t len);

/* For run(): fills the job from a decoder, buffer after buffer: read(dec, buf, len) returns
 * > 0 bytes, 0 at the decoder's (verified) end, or -errno.  0 at the end, the decoder's
 * error (after handing over what it decoded before it), -ECANCELED or -ENOMEM. */
int pl_pump(struct pl_job *job, ssize_t (*read)(void *dec, uint8_t *buf, size_t len), void *dec);

/* True once the pipeline is stopping (run() may check it between long steps). */
bool pl_stopping(const struct pl_job *job);

/* Describes a failure: fail->text from fmt; returns err for `return pl_fail(...)`. */
__attribute__((format(printf, 4, 5))) int pl_fail(struct pl_note *fail, int err, bool trusted,
						  const char *fmt, ...);

/* The note logged at the end of the jobs: level and text. */
__attribute__((format(printf, 3, 4))) void pl_end_note(struct pl_note *end, int level,
						       const char *fmt, ...);

#endif
