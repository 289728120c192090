/* Interix symbolic links (see ntfs_interix.h). */
#include "containers/ntfs/ntfs_interix.h"
#include "containers/ntfs/ntfs_dl.h"

#include <stdlib.h>
#include <string.h>
#include <sys/types.h>

#include "common/byteio.h"

#define IX_MAGIC "IntxLNK\1"
#define IX_MAGIC_LEN 8

ssize_t ntfs_utf16_to_utf8(const uint8_t *p, size_t n, char *buf, size_t cap)
{
	size_t o = 0;

	for (size_t i = 0; i < n; i++) {
		uint32_t c = le16(p + 2 * i);
		uint8_t u[4];
		size_t k;

		if (c >= 0xd800 && c < 0xdc00 && i + 1 < n && le16(p + 2 * i + 2) >= 0xdc00 &&
		    le16(p + 2 * i + 2) < 0xe000) {
			c = 0x10000 + ((c - 0xd800) << 10) + (le16(p + 2 * i + 2) - 0xdc00);
			i++;
		} else if (c >= 0xd800 && c < 0xe000) {
			c = 0xfffd;
		}
		if (c == 0)
			return -1;
		if (c < 0x80) {
			u[0] = (uint8_t)c;
			k = 1;
		} else if (c < 0x800) {
			u[0] = (uint8_t)(0xc0 | c >> 6);
			u[1] = (uint8_t)(0x80 | (c & 0x3f));
			k = 2;
		} else if (c < 0x10000) {
			u[0] = (uint8_t)(0xe0 | c >> 12);
			u[1] = (uint8_t)(0x80 | (c >> 6 & 0x3f));
			u[2] = (uint8_t)(0x80 | (c & 0x3f));
			k = 3;
		} else {
			u[0] = (uint8_t)(0xf0 | c >> 18);
			u[1] = (uint8_t)(0x80 | (c >> 12 & 0x3f));
			u[2] = (uint8_t)(0x80 | (c >> 6 & 0x3f));
			u[3] = (uint8_t)(0x80 | (c & 0x3f));
			k = 4;
		}
		if (k >= cap - o)
			return -1;
		memcpy(buf + o, u, k);
		o += k;
	}
	if (o >= cap)
		return -1;
	buf[o] = '\0';
	return (ssize_t)o;
}

bool ntfs_interix_link(libfsntfs_file_entry_t *f, uint64_t size, char *buf, size_t cap,
		       size_t *len)
{
	uint8_t *d;
	ssize_t r = -1;

	if (size <= IX_MAGIC_LEN || (size - IX_MAGIC_LEN) % 2 || cap == 0 ||
	    size - IX_MAGIC_LEN > 2 * (uint64_t)cap)
		return false;
	d = malloc(size);
	if (!d)
		return false;
	if (sym_libfsntfs_file_entry_read_buffer_at_offset(f, d, size, 0, NULL) == (ssize_t)size &&
	    !memcmp(d, IX_MAGIC, IX_MAGIC_LEN))
		r = ntfs_utf16_to_utf8(d + IX_MAGIC_LEN, (size - IX_MAGIC_LEN) / 2, buf, cap);
	free(d);
	if (r <= 0)
		return false;
	*len = (size_t)r;
	return true;
}
