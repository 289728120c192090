/* A libext2fs io_manager over a tarseek source (common/source.h), so a file system inside an
 * image inside a .gz -- or inside a tar member -- is read through tarseek's own reader, one
 * block at a time, and nothing is ever written.
 *
 * libext2fs opens a device by name: ext4_io_name() writes the name that stands for a source,
 * and ext2fs_open2(name, ..., ext4_io_manager, ...) then reads it.  The source is borrowed: it
 * must outlive the ext2_filsys.
 *
 * Reads past the end of the source fail (EXT2_ET_SHORT_READ, the missing bytes zeroed); a
 * source error comes back as its errno (positive, as libext2fs's codes are), and
 * the io struct keeps it as -errno.  Writes, discards and zeroouts fail with EROFS.
 * Thread-safety: a channel is one file system's; several channels over one source are as safe
 * as the source.
 */
#ifndef TARSEEK_EXT4_IO_H
#define TARSEEK_EXT4_IO_H

#include <stddef.h>

#include <ext2fs/ext2fs.h>

#include "common/source.h"

extern io_manager ext4_io_manager;

/* What a channel reads, and the last error its source returned: the caller's, which must
 * outlive the channel (the error stays readable after libext2fs closed it). */
struct ext4_io_src {
	struct src *src;
	int err; /* -errno, or 0 */
};

#define EXT4_IO_NAME_MAX 40

/* The name under which ext2fs_open2 with ext4_io_manager opens io->src. */
void ext4_io_name(char name[EXT4_IO_NAME_MAX], struct ext4_io_src *io);

#endif
