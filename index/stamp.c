/* What an index records of its archive (see stamp.h). */
#include "index/stamp.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#define FP_SPAN (1u << 20)

void idx_fingerprint_ahead(struct src *file)
{
	uint64_t n = src_size(file);

	src_advise(file, 0, FP_SPAN);
	if (n != SRC_SIZE_UNKNOWN && n > FP_SPAN)
		src_advise(file, n - FP_SPAN, FP_SPAN);
}

int idx_fingerprint(struct src *file, char *out, size_t size)
{
	uint64_t n = src_size(file);
	uint8_t *buf = malloc(FP_SPAN);
	uLong head, tail;
	ssize_t r;

	if (!buf)
		return -ENOMEM;
	r = src_pread(file, buf, FP_SPAN, 0);
	if (r < 0)
		goto fail;
	head = crc32(0, buf, (uInt)r);
	r = src_pread(file, buf, FP_SPAN, n > FP_SPAN ? n - FP_SPAN : 0);
	if (r < 0)
		goto fail;
	tail = crc32(0, buf, (uInt)r);
	free(buf);
	snprintf(out, size, "%" PRIu64 ":%08lx:%08lx", n, head, tail);
	return 0;
fail:
	free(buf);
	return (int)r;
}

void idx_options_string(const char *codec_name, const struct idx_build_opts *o, char *buf,
			size_t size)
{
	int n = 0;

	if (codec_name && strcmp(codec_name, "gzip") == 0)
		n = snprintf(buf, size, "gzip_spacing=%" PRIu64 ";",
			     idx_stream_spacing(o, codec_name));
	if (o->recursion && n >= 0 && (size_t)n < size)
		n += snprintf(buf + n, size - (size_t)n, "recursion=%u;strip=%d;", o->recursion,
			      o->strip_ext);
	if (o->ignore_zeros && n >= 0 && (size_t)n < size)
		n += snprintf(buf + n, size - (size_t)n, "ignore_zeros=1;");
	if (o->oci_raw && n >= 0 && (size_t)n < size)
		n += snprintf(buf + n, size - (size_t)n, "oci_raw=1;");
	if (n == 0)
		snprintf(buf, size, "-");
}
