/* The per-thread hook of may_block (see may_block.h). */
#include "common/may_block.h"

#include <stddef.h>

static _Thread_local void (*hook)(void *arg);
static _Thread_local void *hook_arg;

void may_block(void)
{
	void (*fn)(void *) = hook;

	if (fn) {
		hook = NULL;
		fn(hook_arg);
	}
}

void may_block_arm(void (*fn)(void *arg), void *arg)
{
	hook = fn;
	hook_arg = arg;
}

bool may_block_armed(void)
{
	return hook != NULL;
}
