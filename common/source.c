/* Source adapters: files (pread on one descriptor, no lock) and memory buffers, plus the
 * generic wrapper that loops over short reads and keeps a high-water mark for progress.
 */
#include "common/source.h"

#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#include "common/may_block.h"

struct src {
	const struct src_ops *ops;
	void *opaque;
	uint64_t size;
	int fd; /* file sources only, else -1 */
	atomic_uint_fast64_t high;
};

struct src *src_new(const struct src_ops *ops, void *opaque, uint64_t size)
{
	struct src *s = calloc(1, sizeof(*s));

	if (!s)
		return NULL;
	s->ops = ops;
	s->opaque = opaque;
	s->size = size;
	s->fd = -1;
	atomic_init(&s->high, 0);
	return s;
}

static ssize_t file_pread(void *opaque, void *buf, size_t len, uint64_t off)
{
	int fd = (int)(intptr_t)opaque;
	ssize_t n;

	if (may_block_armed()) { /* a request answered inline: the disk only if it must */
		struct iovec v = {.iov_base = buf, .iov_len = len};
		n = preadv2(fd, &v, 1, (off_t)off, RWF_NOWAIT);
		if (n >= 0)
			return n;
		may_block(); /* not cached (EAGAIN), or no RWF_NOWAIT here */
	}
	do {
		n = pread(fd, buf, len, (off_t)off);
	} while (n < 0 && errno == EINTR);
	return n < 0 ? -errno : n;
}

static void file_close(void *opaque)
{
	close((int)(intptr_t)opaque);
}

/* A decoder about to read a chunk's compressed span: the kernel reads the span now, in large
 * requests, rather than as the decoder's 64 KiB reads come (on a disk that does ~100 random
 * reads a second, a 2 MiB span costs one or two of them instead of 32).  The first
 * FILE_ADVISE_MAX bytes only: a longer span is a stream read from its start, which the
 * kernel's own readahead follows. */
#define FILE_ADVISE_MAX ((uint64_t)32 << 20)

static void file_advise(void *opaque, uint64_t off, uint64_t len)
{
	(void)posix_fadvise((int)(intptr_t)opaque, (off_t)off,
			    (off_t)(len < FILE_ADVISE_MAX ? len : FILE_ADVISE_MAX), POSIX_FADV_WILLNEED);
}

static const struct src_ops file_ops = {
	.pread = file_pread,
	.close = file_close,
	.advise = file_advise,
};

int src_open_file(const char *path, struct src **out)
{
	struct stat st;
	int fd, err;

	*out = NULL;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) < 0) {
		err = -errno;
		goto fail;
	}
	if (S_ISDIR(st.st_mode)) {
		err = -EISDIR;
		goto fail;
	}
	*out = src_new(&file_ops, (void *)(intptr_t)fd, S_ISREG(st.st_mode) ? (uint64_t)st.st_size : SRC_SIZE_UNKNOWN);
	if (!*out) {
		err = -ENOMEM;
		goto fail;
	}
	(*out)->fd = fd;
	return 0;
fail:
	close(fd);
	return err;
}

struct mem_src {
	const uint8_t *buf;
	size_t len;
};

static ssize_t mem_pread(void *opaque, void *buf, size_t len, uint64_t off)
{
	struct mem_src *m = opaque;

	if (off >= m->len)
		return 0;
	if (len > m->len - off)
		len = m->len - off;
	memcpy(buf, m->buf + off, len);
	return (ssize_t)len;
}

static const struct src_ops mem_ops = {
	.pread = mem_pread,
	.close = free,
};

struct src *src_from_mem(const void *buf, size_t len)
{
	struct mem_src *m = malloc(sizeof(*m));
	struct src *s;

	if (!m)
		return NULL;
	m->buf = buf;
	m->len = len;
	s = src_new(&mem_ops, m, len);
	if (!s)
		free(m);
	return s;
}

ssize_t src_pread(struct src *s, void *buf, size_t len, uint64_t off)
{
	size_t done = 0;

	if (s->size != SRC_SIZE_UNKNOWN) {
		if (off >= s->size)
			return 0;
		if (len > s->size - off)
			len = s->size - off;
	}
	uint64_t end = off + len, prev = atomic_load(&s->high);
	while (end > prev && !atomic_compare_exchange_weak(&s->high, &prev, end))
		;
	while (done < len) {
		ssize_t n = s->ops->pread(s->opaque, (uint8_t *)buf + done, len - done, off + done);
		if (n < 0)
			return n;
		if (n == 0)
			break;
		done += (size_t)n;
	}
	return (ssize_t)done;
}

int src_pread_full(struct src *s, void *buf, size_t len, uint64_t off)
{
	ssize_t n = src_pread(s, buf, len, off);

	if (n < 0)
		return (int)n;
	return (size_t)n == len ? 0 : -EIO;
}

void src_advise(struct src *s, uint64_t off, uint64_t len)
{
	if (!s->ops->advise || len == 0)
		return;
	if (s->size != SRC_SIZE_UNKNOWN) {
		if (off >= s->size)
			return;
		if (len > s->size - off)
			len = s->size - off;
	}
	s->ops->advise(s->opaque, off, len);
}

void *src_opaque_if(const struct src *s, const struct src_ops *ops)
{
	return s && s->ops == ops ? s->opaque : NULL;
}

uint64_t src_size(const struct src *s)
{
	return s->size;
}

int src_fd(const struct src *s)
{
	return s->fd;
}

uint64_t src_high_water(const struct src *s)
{
	return atomic_load(&((struct src *)s)->high);
}

void src_free(struct src *s)
{
	if (!s)
		return;
	if (s->ops->close)
		s->ops->close(s->opaque);
	free(s);
}

struct window {
	struct src *parent;
	uint64_t off, len;
};

static ssize_t window_pread(void *opaque, void *buf, size_t len, uint64_t off)
{
	const struct window *w = opaque;

	if (off >= w->len)
		return 0;
	if (len > w->len - off)
		len = (size_t)(w->len - off);
	return src_pread(w->parent, buf, len, w->off + off);
}

static void window_advise(void *opaque, uint64_t off, uint64_t len)
{
	const struct window *w = opaque;

	if (off < w->len)
		src_advise(w->parent, w->off + off, len < w->len - off ? len : w->len - off);
}

static const struct src_ops window_ops = {
	.pread = window_pread, .close = free, .advise = window_advise};

struct src *src_window(struct src *parent, uint64_t off, uint64_t len)
{
	struct window *w = malloc(sizeof(*w));
	struct src *s;

	if (!w)
		return NULL;
	*w = (struct window){parent, off, len};
	s = src_new(&window_ops, w, len);
	if (!s)
		free(w);
	return s;
}
