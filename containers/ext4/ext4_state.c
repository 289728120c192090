/* What every part of the ext4 parse shares about its state (ext4_int.h): damage messages,
 * the mapping of libext2fs's error codes, and the walk's work budget.  Apart from ext4.c so
 * that the walk and the maps call down into it, never back into the container.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>

#include "common/log.h"
#include "containers/ext4/ext4_int.h"

void ext4_damage(struct ext4 *e, const char *fmt, ...)
{
	char msg[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	tfs_log(TFS_LOG_WARNING, "%s", msg);
	e->damaged = true;
}

bool ext4_io_err_fatal(const struct ext4 *e)
{
	return e->io.err != 0;
}

int ext4_err(struct ext4 *e, errcode_t code)
{
	if (e->io.err)
		return e->io.err;
	return code == EXT2_ET_NO_MEMORY || code == ENOMEM ? -ENOMEM : -EIO;
}

bool ext4_spend(struct ext4 *e, uint64_t n)
{
	if (e->budget >= n) {
		e->budget -= n;
		return true;
	}
	if (!e->out_of_budget)
		ext4_damage(e, "%s: the file system's folders and maps are larger than the image "
			    "can hold (a loop?); the listing stops here", e->name);
	e->out_of_budget = true;
	return false;
}
