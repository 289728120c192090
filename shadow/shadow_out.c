/* The shadow's file, written in order past the page cache (see shadow_out.h). */
#include "shadow/shadow_out.h"

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define SO_ALIGN 4096 /* buffer, offsets and lengths of a direct write */

struct shadow_out {
	int fd;
	bool direct;   /* fd is O_DIRECT */
	uint8_t *buf;  /* SO_STEP bytes, SO_ALIGN aligned */
	size_t used;   /* bytes of buf not yet written */
	uint64_t done; /* bytes written to the file (a multiple of SO_STEP while direct) */
};

static int write_at(int fd, const uint8_t *p, size_t len, uint64_t at)
{
	while (len) {
		ssize_t n = pwrite(fd, p, len, (off_t)at);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return n < 0 ? -errno : -EIO;
		p += n;
		len -= (size_t)n;
		at += (uint64_t)n;
	}
	return 0;
}

/* The file through the page cache from now on. */
static int go_buffered(struct shadow_out *o)
{
	int fl = fcntl(o->fd, F_GETFL);

	if (fl < 0 || fcntl(o->fd, F_SETFL, fl & ~O_DIRECT) < 0)
		return -errno;
	o->direct = false;
	return 0;
}

/* Writes buf[0..used) at done. */
static int flush(struct shadow_out *o)
{
	int err = -EINVAL;

	if (!o->used)
		return 0;
	if (o->direct && o->used % SO_ALIGN == 0)
		err = write_at(o->fd, o->buf, o->used, o->done);
	if (err == -EINVAL) { /* a tail, or a file system that refuses direct writes */
		err = o->direct ? go_buffered(o) : 0;
		if (!err)
			err = write_at(o->fd, o->buf, o->used, o->done);
	}
	if (!err) {
		o->done += o->used;
		o->used = 0;
	}
	return err;
}

int so_open(const char *path, struct shadow_out **out)
{
	struct shadow_out *o = calloc(1, sizeof(*o));
	int err;

	*out = NULL;
	if (!o || posix_memalign((void **)&o->buf, SO_ALIGN, SO_STEP) != 0) {
		free(o);
		return -ENOMEM;
	}
	o->direct = true;
	o->fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_DIRECT, 0644);
	if (o->fd < 0 && errno == EINVAL) { /* no O_DIRECT here */
		o->direct = false;
		o->fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	}
	if (o->fd < 0) {
		err = -errno;
		free(o->buf);
		free(o);
		return err;
	}
	*out = o;
	return 0;
}

int so_write(struct shadow_out *o, const void *p, size_t len)
{
	const uint8_t *b = p;

	while (len) {
		size_t n = SO_STEP - o->used < len ? SO_STEP - o->used : len;
		memcpy(o->buf + o->used, b, n);
		o->used += n;
		b += n;
		len -= n;
		if (o->used == SO_STEP) {
			int err = flush(o);
			if (err)
				return err;
		}
	}
	return 0;
}

uint64_t so_size(const struct shadow_out *o)
{
	return o->done + o->used;
}

int so_close(struct shadow_out *o)
{
	int err = flush(o);

	if (close(o->fd) < 0 && !err)
		err = -errno;
	free(o->buf);
	free(o);
	return err;
}

void so_abort(struct shadow_out *o)
{
	if (!o)
		return;
	close(o->fd);
	free(o->buf);
	free(o);
}
