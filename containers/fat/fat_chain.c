/* Following a cluster chain through the FAT into a file's extents (fat_int.h's fat_chain):
 * apart from fat.c (the boot sector, the layout, the container) so that the directory walk
 * (fat_dir.c) calls down into it, never back into the container.
 */
#include "containers/fat/fat_int.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "common/byteio.h"
#include "common/log.h"

/* The FAT entry of cluster c: 0 with *v, or -EIO (past the FAT read). */
static int fat_entry(const struct fat *f, uint32_t c, uint32_t *v)
{
	uint64_t off;

	switch (f->type) {
	case 12:
		off = (uint64_t)c + c / 2;
		if (off + 2 > f->fat_len)
			return -EIO;
		*v = le16(f->fat + off);
		*v = (c & 1) ? *v >> 4 : *v & 0xFFF;
		return 0;
	case 16:
		off = (uint64_t)c * 2;
		if (off + 2 > f->fat_len)
			return -EIO;
		*v = le16(f->fat + off);
		return 0;
	default:
		off = (uint64_t)c * 4;
		if (off + 4 > f->fat_len)
			return -EIO;
		*v = le32(f->fat + off) & 0x0FFFFFFF;
		return 0;
	}
}

static bool fat_eoc(const struct fat *f, uint32_t v)
{
	return v >= (f->type == 12 ? 0xFF8u : f->type == 16 ? 0xFFF8u : 0x0FFFFFF8u);
}

int fat_chain(struct fat *f, uint32_t first, uint64_t len, bool dir, const char **why)
{
	uint64_t need = (len + f->csize - 1) / f->csize, off = 0;
	uint32_t c = first, v;
	int err;

	f->x.n = 0;
	*why = NULL;
	for (uint64_t i = 0; i < need; i++) {
		if (c < 2 || c > (uint64_t)f->count + 1) {
			*why = "its cluster chain points outside the volume";
			break;
		}
		uint64_t src = f->data + (uint64_t)(c - 2) * f->csize;
		uint64_t n = dir || len - off > f->csize ? f->csize : len - off;
		if (c >= f->mapped || src > f->size || n > f->size - src) {
			*why = "its data lies past the end of the volume (truncated)";
			break;
		}
		if (f->used[c / 8] & (1u << (c % 8))) {
			*why = "its cluster chain loops, or meets another file's clusters";
			break;
		}
		f->used[c / 8] |= (uint8_t)(1u << (c % 8));
		err = extents_add(&f->x, off, n, src);
		if (err)
			return err;
		off += n;
		if (!dir && i + 1 == need)
			break;
		if (fat_entry(f, c, &v)) {
			*why = "its cluster chain points outside the FAT";
			break;
		}
		if (fat_eoc(f, v)) {
			if (!dir)
				*why = "its cluster chain is shorter than its size";
			break;
		}
		if (!v || v == 1 || v == (f->type == 12 ? 0xFF7u : f->type == 16 ? 0xFFF7u
									  : 0x0FFFFFF7u)) {
			*why = !v ? "its cluster chain meets a free cluster"
				  : "its cluster chain meets a bad or reserved cluster";
			break;
		}
		c = v;
	}
	if (!*why)
		return 0;
	f->damaged = true;
	return dir ? 0 : -EIO;
}
