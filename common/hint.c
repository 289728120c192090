/* Per-thread hints (see hint.h). */
#include "common/hint.h"

#include <stddef.h>

static __thread void (*slow_fn)(void *arg);
static __thread void *slow_arg;

void hint_set_slow(void (*fn)(void *arg), void *arg)
{
	slow_fn = fn;
	slow_arg = arg;
}

void hint_slow(void)
{
	if (slow_fn)
		slow_fn(slow_arg);
}
