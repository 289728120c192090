/* The walk over a rar 5 archive's block headers (rar5.h): which files have encrypted data.
 *
 * A rar 5 archive is the 8-byte signature "Rar!\x1a\x07\x01\x00" and then blocks, each a
 * header and maybe a data area after it.  A header is its CRC-32 (4 bytes, of what follows),
 * its size (a vint: 7 bits a byte, low bits first, the high bit set on every byte but the
 * last; counted from the type on, at most 2 MiB), then the type, the flags (0x01: an extra
 * area's size follows; 0x02: a data area's size follows), those sizes, the type's own fields,
 * and the extra area at the very end of the header.  A file header's own fields begin with the
 * file flags and the unpacked size; the extra area is a list of records, each its size (a
 * vint counted from its type on), its type and its data -- type 0x01 is the file encryption
 * record.  So the walk needs neither the name nor the other fields: the extra area is the
 * header's last bytes.  The next block is after the header and its data area.
 *
 * Each header costs two reads (its first bytes for the size, then the whole of it); the data
 * is skipped.  A header is read whole into one buffer, grown to the largest one seen.
 */
#include "containers/rar5.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "common/byteio.h"

#define RAR5_SIG_LEN 8
#define RAR5_HEADER_MAX (2u << 20) /* the format's limit on a header's size */

enum {
	RAR5_HEAD_FILE = 2,
	RAR5_HEAD_CRYPT = 4, /* the archive's headers are encrypted from here on */
	RAR5_HEAD_END = 5,
	RAR5_HFL_EXTRA = 0x01,
	RAR5_HFL_DATA = 0x02,
	RAR5_EXTRA_CRYPT = 0x01,
};

static const uint8_t rar5_sig[RAR5_SIG_LEN] = {'R', 'a', 'r', '!', 0x1a, 0x07, 0x01, 0x00};

/* A vint at p[*pos] (before end): false if it runs past end or past 64 bits. */
static bool rar5_vint(const uint8_t *p, size_t end, size_t *pos, uint64_t *v)
{
	*v = 0;
	for (unsigned shift = 0; *pos < end && shift < 64; shift += 7) {
		uint8_t b = p[(*pos)++];
		*v |= (uint64_t)(b & 0x7f) << shift;
		if (!(b & 0x80))
			return true;
	}
	return false;
}

/* Whether the extra area x (len bytes) holds a file encryption record. */
static bool rar5_extra_crypt(const uint8_t *x, size_t len)
{
	size_t pos = 0;

	while (pos < len) {
		uint64_t size, type;
		if (!rar5_vint(x, len, &pos, &size) || size > len - pos)
			return false;
		size_t next = pos + (size_t)size;
		if (!rar5_vint(x, next, &pos, &type))
			return false;
		if (type == RAR5_EXTRA_CRYPT)
			return true;
		pos = next;
	}
	return false;
}

/* A file header h (hlen bytes, from the type on), whose own fields start at pos and whose
 * extra area is its last xlen bytes, appended to out.  0, or -ENOMEM. */
static int rar5_add_file(struct rar5_files *out, size_t *cap, const uint8_t *h, size_t hlen,
			 size_t pos, uint64_t xlen)
{
	uint64_t fflags, usize;

	if (xlen > hlen - pos || !rar5_vint(h, hlen, &pos, &fflags) ||
	    !rar5_vint(h, hlen, &pos, &usize))
		return 0; /* not a file header we understand: libarchive will say why */
	if (out->n == *cap) {
		size_t ncap = *cap ? *cap * 2 : 64;
		struct rar5_file *p = realloc(out->f, ncap * sizeof(*p));
		if (!p)
			return -ENOMEM;
		out->f = p;
		*cap = ncap;
	}
	bool crypt = rar5_extra_crypt(h + hlen - xlen, (size_t)xlen);
	out->f[out->n++] = (struct rar5_file){.usize = usize, .encrypted = crypt};
	out->encrypted += crypt;
	return 0;
}

int rar5_scan(struct src *in, struct rar5_files *out)
{
	uint64_t size = src_size(in), off = RAR5_SIG_LEN;
	uint8_t sig[RAR5_SIG_LEN], head[4 + 3], *buf = NULL; /* CRC, and a size of 3 vint bytes */
	size_t buf_cap = 0, cap = 0;
	int err = 0;

	memset(out, 0, sizeof(*out));
	if (size == SRC_SIZE_UNKNOWN || size < RAR5_SIG_LEN)
		return 0;
	err = src_pread_full(in, sig, RAR5_SIG_LEN, 0);
	if (err || memcmp(sig, rar5_sig, RAR5_SIG_LEN))
		return err;
	while (size - off > 4) {
		size_t n = size - off < sizeof(head) ? (size_t)(size - off) : sizeof(head), pos = 4;
		uint64_t hsize, type, flags, xlen = 0, dlen = 0;
		err = src_pread_full(in, head, n, off);
		if (err)
			goto out;
		if (!rar5_vint(head, n, &pos, &hsize) || hsize == 0 || hsize > RAR5_HEADER_MAX ||
		    hsize + pos > size - off)
			break; /* damaged, or cut short */
		size_t total = pos + (size_t)hsize;
		if (total > buf_cap) {
			uint8_t *p = realloc(buf, total);
			err = -ENOMEM;
			if (!p)
				goto out;
			buf = p;
			buf_cap = total;
		}
		err = src_pread_full(in, buf, total, off);
		if (err)
			goto out;
		if (le32(buf) != (uint32_t)crc32(0, buf + 4, (uInt)(total - 4)))
			break;
		if (!rar5_vint(buf, total, &pos, &type) || !rar5_vint(buf, total, &pos, &flags) ||
		    ((flags & RAR5_HFL_EXTRA) && !rar5_vint(buf, total, &pos, &xlen)) ||
		    ((flags & RAR5_HFL_DATA) && !rar5_vint(buf, total, &pos, &dlen)))
			break;
		if (type == RAR5_HEAD_CRYPT || type == RAR5_HEAD_END)
			break;
		if (type == RAR5_HEAD_FILE) {
			err = rar5_add_file(out, &cap, buf, total, pos, xlen);
			if (err)
				goto out;
		}
		if (dlen > size - off - total)
			break;
		off += total + dlen;
	}
	err = 0;
out:
	free(buf);
	if (err)
		rar5_files_free(out);
	return err;
}

void rar5_files_free(struct rar5_files *f)
{
	if (!f)
		return;
	free(f->f);
	memset(f, 0, sizeof(*f));
}
