/* The io_manager over a source (ext4_io.h).  Blocks are read with src_pread at
 * block * block_size; libext2fs asks for a byte count rather than blocks when count < 0.  A
 * small cache is not kept here: the reader below (seek/, the chunk cache) already keeps what
 * it decoded, and libext2fs keeps its own inode and block caches where it needs them.
 */
#include "containers/ext4/ext4_io.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define EXT4_IO_PREFIX "tarseek-src:"

static struct struct_io_manager ext4_io_ops;
io_manager ext4_io_manager = &ext4_io_ops;

void ext4_io_name(char name[EXT4_IO_NAME_MAX], struct ext4_io_src *io)
{
	snprintf(name, EXT4_IO_NAME_MAX, EXT4_IO_PREFIX "%p", (void *)io);
}

static errcode_t e4io_open(const char *name, int flags, io_channel *channel)
{
	io_channel io = NULL;
	void *p = NULL;

	*channel = NULL;
	if (!name || strncmp(name, EXT4_IO_PREFIX, strlen(EXT4_IO_PREFIX)) ||
	    sscanf(name + strlen(EXT4_IO_PREFIX), "%p", &p) != 1 || !p)
		return EXT2_ET_BAD_DEVICE_NAME;
	if (flags & IO_FLAG_RW)
		return EROFS;
	io = calloc(1, sizeof(*io));
	if (!io)
		return EXT2_ET_NO_MEMORY;
	io->name = strdup(name);
	if (!io->name) {
		free(io);
		return EXT2_ET_NO_MEMORY;
	}
	io->magic = EXT2_ET_MAGIC_IO_CHANNEL;
	io->manager = ext4_io_manager;
	io->block_size = 1024;
	io->refcount = 1;
	io->private_data = p; /* the caller's struct ext4_io_src */
	*channel = io;
	return 0;
}

static errcode_t e4io_close(io_channel io)
{
	if (--io->refcount > 0)
		return 0;
	free(io->name);
	free(io);
	return 0;
}

static errcode_t e4io_set_blksize(io_channel io, int blksize)
{
	if (blksize <= 0 || blksize > 65536)
		return EXT2_ET_INVALID_ARGUMENT;
	io->block_size = blksize;
	return 0;
}

static errcode_t e4io_read_blk64(io_channel io, unsigned long long block, int count, void *data)
{
	struct ext4_io_src *c = io->private_data;
	size_t len;
	uint64_t off;
	ssize_t got;

	if (count < 0)
		len = (size_t)-(long long)count;
	else
		len = (size_t)count * (size_t)io->block_size;
	if (block > UINT64_MAX / (unsigned)io->block_size)
		return EXT2_ET_LLSEEK_FAILED;
	off = block * (unsigned)io->block_size;
	got = src_pread(c->src, data, len, off);
	if (got < 0) {
		c->err = (int)got;
		memset(data, 0, len);
		return (errcode_t)-got;
	}
	if ((size_t)got < len) {
		memset((uint8_t *)data + got, 0, len - (size_t)got);
		return EXT2_ET_SHORT_READ;
	}
	return 0;
}

static errcode_t e4io_read_blk(io_channel io, unsigned long block, int count, void *data)
{
	return e4io_read_blk64(io, block, count, data);
}

static errcode_t e4io_write_blk64(io_channel io, unsigned long long block, int count,
				  const void *data)
{
	return EROFS;
}

static errcode_t e4io_write_blk(io_channel io, unsigned long block, int count, const void *data)
{
	return EROFS;
}

static errcode_t e4io_write_byte(io_channel io, unsigned long off, int count, const void *data)
{
	return EROFS;
}

static errcode_t e4io_flush(io_channel io)
{
	return 0;
}

static errcode_t e4io_set_option(io_channel io, const char *option, const char *arg)
{
	return EXT2_ET_INVALID_ARGUMENT;
}

static errcode_t e4io_discard(io_channel io, unsigned long long block, unsigned long long count)
{
	return EROFS;
}

static errcode_t e4io_zeroout(io_channel io, unsigned long long block, unsigned long long count)
{
	return EROFS;
}

static errcode_t e4io_readahead(io_channel io, unsigned long long block, unsigned long long count)
{
	struct ext4_io_src *c = io->private_data;

	if (block < UINT64_MAX / 65536 && count < UINT64_MAX / 65536)
		src_advise(c->src, block * (unsigned)io->block_size,
			   count * (unsigned)io->block_size);
	return 0;
}

static struct struct_io_manager ext4_io_ops = {
	.magic = EXT2_ET_MAGIC_IO_MANAGER,
	.name = "tarseek source",
	.open = e4io_open,
	.close = e4io_close,
	.set_blksize = e4io_set_blksize,
	.read_blk = e4io_read_blk,
	.write_blk = e4io_write_blk,
	.flush = e4io_flush,
	.write_byte = e4io_write_byte,
	.set_option = e4io_set_option,
	.read_blk64 = e4io_read_blk64,
	.write_blk64 = e4io_write_blk64,
	.discard = e4io_discard,
	.cache_readahead = e4io_readahead,
	.zeroout = e4io_zeroout,
};
