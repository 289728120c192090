/* Raw deflate inflaters behind one interface: zlib's, and Intel ISA-L's where it is built in.
 *
 * gzip/ (the .gz scan and decoders, and the zip "deflate" entries) inflates through this
 * interface only, so the engine is chosen in one place.  ISA-L's isal_inflate is 1.5 to 2.7
 * times as fast as zlib's inflate on real files; zlib stays as the fallback: a build without
 * ISA-L (meson -Disal=disabled, or an architecture Debian has no libisal for), and the
 * environment variable TARSEEK_INFLATE=zlib, which the tests use to run every gzip test on
 * both engines.  The two engines find the same block boundaries and decode the same bytes, so
 * a checkpoint made by one resumes in the other: indexes do not record the engine.
 *
 * A stream is raw deflate (RFC 1951): gzip's header and trailer are read by the caller.
 *
 *   infl_new(kind, track)   an inflater at the start of a stream (empty window).  track:
 *                           the caller will ask for infl_window (the scan), which costs ISA-L
 *                           a copy of each call's last 32 KiB of output.  NULL: no memory.
 *   infl_restart(f)         a new stream (the next gzip member): empty window.
 *   infl_resume(f, ...)     a stream entered at a checkpoint: `bits` (0..7) bits `value`
 *                           come first (the top bits of the byte before the input, as zlib's
 *                           inflatePrime takes them), then the input; win[0..wlen) is the
 *                           output that preceded.  Only right after new/restart.  0 or -errno.
 *   infl_run(f, io, mode)   inflates from io->in into io->out, advancing both (and
 *                           io->in_off with io->in).  Returns
 *                             INFL_MORE   progress was made, or none is possible without more
 *                                         input or more room (the caller, who knows whether
 *                                         the file has ended, tells the two apart);
 *                             INFL_BLOCK  (mode INFL_TO_BLOCK only) stopped at a block
 *                                         boundary that is not after the last block: every
 *                                         byte before it is in io->out, and io->at is the
 *                                         bit offset of the next block's header in the file
 *                                         (8 * byte offset + bit, LSB first);
 *                             INFL_END    the last block ended; io->at / 8 is the offset of
 *                                         the first byte after the deflate data (the caller
 *                                         re-reads from there: it may be before io->in);
 *                             INFL_NOBLOCK (INFL_TO_BLOCK only) no boundary was caught within
 *                                         INFL_HUNT_MAX bytes of input (ISA-L sees headers
 *                                         only when the input ends inside one; see
 *                                         inflater_isal.c): go on, try again later;
 *                             -EIO        the data is not deflate (infl_msg says why);
 *                             -ENOMEM, -EINVAL.
 *   infl_unpack(f, ...)     inflates a whole zlib stream (RFC 1950: header, deflate, the
 *                           Adler-32 checked) into a buffer: a checkpoint's packed window.
 *                           ISA-L takes half of zlib's time for it (19 against 40 us for a
 *                           3 KiB window).  Leaves f at the start of a stream, as
 *                           infl_restart does, whatever the outcome.
 *   infl_window(f, win)     copies the stream's last min(32 KiB, output so far) bytes of
 *                           output into win and returns their count (track must be set).
 *   infl_msg(f)             what the last -EIO was about (static text).
 *   infl_memory(f)          bytes the inflater holds.
 *
 * One inflater is used by one thread at a time.
 */
#ifndef TARSEEK_INFLATER_H
#define TARSEEK_INFLATER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define INFL_WINSIZE 32768u /* deflate's window */
/* input a boundary hunt gives up after: zlib's blocks take up to ~64 KiB of it (a block can
 * give MiBs of output) */
#define INFL_HUNT_MAX (256u << 10)

enum infl_kind {
	INFL_ZLIB,
	INFL_ISAL,
};

enum infl_mode {
	INFL_RUN,      /* as far as input and room go */
	INFL_TO_BLOCK, /* and stop at the next block boundary */
};

enum {
	INFL_MORE = 0,
	INFL_BLOCK = 1,
	INFL_END = 2,
	INFL_NOBLOCK = 3,
};

struct infl_io {
	const uint8_t *in;
	size_t in_len;
	uint64_t in_off; /* file offset of in[0] */
	uint8_t *out;
	size_t out_len;
	uint64_t at; /* INFL_BLOCK, INFL_END: a bit offset in the file */
};

struct inflater;

/* The engine to use: ISA-L when built in, unless TARSEEK_INFLATE=zlib (read once). */
enum infl_kind infl_default(void);
/* Makes kind the engine of every inflater made from now on (tests and benchmarks; ISA-L only
 * if built in).  Not to be called while other threads make inflaters. */
void infl_set_default(enum infl_kind kind);
/* Whether this build has ISA-L. */
bool infl_have_isal(void);
const char *infl_kind_name(enum infl_kind kind);

struct inflater *infl_new(enum infl_kind kind, bool track);
void infl_free(struct inflater *f);
int infl_restart(struct inflater *f);
int infl_resume(struct inflater *f, unsigned bits, unsigned value, const uint8_t *win, size_t wlen);
int infl_run(struct inflater *f, struct infl_io *io, enum infl_mode mode);
/* src[0..slen) into dst; *dlen: its room, then the bytes out.  0, -EIO if src is not one
 * whole zlib stream or does not fit, -ENOMEM (-EINVAL: misuse, see liberr.h). */
int infl_unpack(struct inflater *f, const void *src, size_t slen, uint8_t *dst, size_t *dlen);
size_t infl_window(struct inflater *f, uint8_t *win);
const char *infl_msg(const struct inflater *f);
size_t infl_memory(const struct inflater *f);

#endif
