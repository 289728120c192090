/* Between inflater.c and its ISA-L engine (inflater_isal.c): the same calls as inflater.h,
 * on the engine's own state.  Without ISA-L (HAVE_ISAL 0) the stubs below are never reached:
 * infl_new makes every inflater a zlib one. */
#ifndef TARSEEK_INFLATER_INT_H
#define TARSEEK_INFLATER_INT_H

#include <errno.h>
#include <stddef.h>

#include "config.h"
#include "codecs/gzip/inflater.h"

struct isal_infl;

#if HAVE_ISAL
struct isal_infl *isal_infl_new(bool track);
void isal_infl_free(struct isal_infl *x);
int isal_infl_restart(struct isal_infl *x);
int isal_infl_resume(struct isal_infl *x, unsigned bits, unsigned value, const uint8_t *win,
		     size_t wlen);
/* *msg: set to a static text with every -EIO */
int isal_infl_run(struct isal_infl *x, struct infl_io *io, enum infl_mode mode, const char **msg);
int isal_infl_unpack(struct isal_infl *x, const void *src, size_t slen, uint8_t *dst,
		     size_t *dlen);
size_t isal_infl_window(struct isal_infl *x, uint8_t *win);
size_t isal_infl_memory(const struct isal_infl *x);
#else
static inline struct isal_infl *isal_infl_new(bool track)
{
	return NULL;
}
static inline void isal_infl_free(struct isal_infl *x)
{
}
static inline int isal_infl_restart(struct isal_infl *x)
{
	return -ENOSYS;
}
static inline int isal_infl_resume(struct isal_infl *x, unsigned bits, unsigned value,
				   const uint8_t *win, size_t wlen)
{
	return -ENOSYS;
}
static inline int isal_infl_run(struct isal_infl *x, struct infl_io *io, enum infl_mode mode,
				const char **msg)
{
	return -ENOSYS;
}
static inline int isal_infl_unpack(struct isal_infl *x, const void *src, size_t slen,
				   uint8_t *dst, size_t *dlen)
{
	return -ENOSYS;
}
static inline size_t isal_infl_window(struct isal_infl *x, uint8_t *win)
{
	return 0;
}
static inline size_t isal_infl_memory(const struct isal_infl *x)
{
	return 0;
}
#endif

#endif
