/* libarchive over a source: see libarchive_src.h. */
#include "codecs/libarchive/libarchive_src.h"

#include <errno.h>
#include <locale.h>
#include <stdlib.h>
#include <string.h>

#include "codecs/libarchive/la_dl.h"
#include "common/log.h"

static la_ssize_t la_read_cb(struct archive *a, void *opaque, const void **out)
{
	struct la_src *l = opaque;
	uint64_t size = src_size(l->in);
	ssize_t n;

	if (size != SRC_SIZE_UNKNOWN && l->served > LA_REREADS * size + 4 * LA_BUF) {
		sym_archive_set_error(a, EIO, "libarchive read the archive %d times over (a "
				      "hostile archive?)", LA_REREADS);
		return -1;
	}
	n = src_pread(l->in, l->buf, LA_BUF, l->pos);
	if (n < 0) {
		l->io_err = (int)n;
		sym_archive_set_error(a, EIO, "read error at offset %llu",
				      (unsigned long long)l->pos);
		return -1;
	}
	l->buf_off = l->pos;
	l->buf_len = (size_t)n;
	l->pos += (uint64_t)n;
	l->served += (uint64_t)n;
	*out = l->buf;
	return n;
}

static la_int64_t la_skip_cb(struct archive *a, void *opaque, la_int64_t n)
{
	struct la_src *l = opaque;
	uint64_t size = src_size(l->in);

	if (n <= 0)
		return 0;
	if (size != SRC_SIZE_UNKNOWN && l->pos + (uint64_t)n > size)
		n = l->pos < size ? (la_int64_t)(size - l->pos) : 0;
	l->pos += (uint64_t)n;
	return n;
}

static la_int64_t la_seek_cb(struct archive *a, void *opaque, la_int64_t off, int whence)
{
	struct la_src *l = opaque;
	uint64_t size = src_size(l->in);
	int64_t base = whence == SEEK_SET   ? 0
		       : whence == SEEK_CUR ? (int64_t)l->pos
		       : size == SRC_SIZE_UNKNOWN ? -1
						  : (int64_t)size;

	if (base < 0 || base + off < 0)
		return ARCHIVE_FATAL;
	l->pos = (uint64_t)(base + off);
	return (la_int64_t)l->pos;
}

/* The formats: tarseek's own parsers read tar, zip and 7z.  (Pointers to libarchive's
 * functions' pointers: they are set when la_load runs.) */
static const struct {
	const char *name;
	int (**support)(struct archive *);
} formats[] = {
	{"rar", &sym_archive_read_support_format_rar},
	{"rar5", &sym_archive_read_support_format_rar5},
	{"iso9660", &sym_archive_read_support_format_iso9660},
	{"cpio", &sym_archive_read_support_format_cpio},
	{"ar", &sym_archive_read_support_format_ar},
	{"cab", &sym_archive_read_support_format_cab},
	{"lha", &sym_archive_read_support_format_lha},
	{"xar", &sym_archive_read_support_format_xar},
	{"warc", &sym_archive_read_support_format_warc},
};

/* rpm (a lead and headers before a compressed cpio), and what its payload is compressed
 * with; never a filter that runs an external program */
static int (**const filters[])(struct archive *) = {
	&sym_archive_read_support_filter_rpm,  &sym_archive_read_support_filter_gzip,
	&sym_archive_read_support_filter_bzip2, &sym_archive_read_support_filter_xz,
	&sym_archive_read_support_filter_lzma, &sym_archive_read_support_filter_zstd,
};

const char *la_formats(void)
{
	static char list[128];

	if (!list[0]) {
		for (size_t i = 0; i < sizeof(formats) / sizeof(formats[0]); i++) {
			if (i)
				strcat(list, ",");
			strcat(list, formats[i].name);
		}
		strcat(list, ",rpm"); /* a filter before cpio */
	}
	return list;
}

void la_init(void)
{
	if (!setlocale(LC_CTYPE, "C.UTF-8"))
		tfs_log(TFS_LOG_INFO, "libarchive: no C.UTF-8 locale: names that are not ASCII "
			"are left out of xar and rar archives");
}

int la_open(struct la_src *l, struct src *in)
{
	int err;

	memset(l, 0, sizeof(*l));
	l->in = in;
	err = la_load(); /* the first archive of libarchive's formats loads it */
	if (err)
		return err;
	l->buf = malloc(LA_BUF);
	l->a = sym_archive_read_new();
	if (!l->buf || !l->a)
		return -ENOMEM;
	for (size_t i = 0; i < sizeof(formats) / sizeof(formats[0]); i++)
		(*formats[i].support)(l->a);
	for (size_t i = 0; i < sizeof(filters) / sizeof(filters[0]); i++)
		(*filters[i])(l->a);
	sym_archive_read_set_read_callback(l->a, la_read_cb);
	sym_archive_read_set_skip_callback(l->a, la_skip_cb);
	sym_archive_read_set_seek_callback(l->a, la_seek_cb);
	sym_archive_read_set_callback_data(l->a, l);
	if (sym_archive_read_open1(l->a) != ARCHIVE_OK) {
		if (l->io_err)
			return l->io_err;
		TFS_DEBUG("libarchive: %s", la_error(l));
		return -EINVAL;
	}
	return 0;
}

void la_close(struct la_src *l)
{
	if (l->a)
		sym_archive_read_free(l->a);
	free(l->buf);
	memset(l, 0, sizeof(*l));
}

uint64_t la_where(const struct la_src *l, const void *p, size_t len)
{
	uintptr_t b = (uintptr_t)p, start = (uintptr_t)l->buf;

	if (!l->buf || b < start || b - start > l->buf_len || len > l->buf_len - (b - start))
		return LA_NOWHERE;
	return l->buf_off + (uint64_t)(b - start);
}

const char *la_error(const struct la_src *l)
{
	const char *e = l->a ? sym_archive_error_string(l->a) : NULL;

	return e ? e : "unknown error";
}
