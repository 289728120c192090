/* The resident data of an NTFS file, mapped to the image (see ntfs_record.h).
 *
 * An MFT record (FILE record) starts with: "FILE", the offset (u16 at 4) and count (u16 at 6)
 * of its update sequence array, ..., the offset of its first attribute (u16 at 0x14), its
 * flags (u16 at 0x16, bit 0: in use), the reference of its base record (u64 at 0x20; 0 in a
 * base record).  The array holds the update sequence number, then the real last two bytes of
 * each 512-byte stride, whose place on disk holds the number.  An attribute: type (u32),
 * length (u32 at 4), non-resident flag (u8 at 8), name length (u8 at 9); a resident one has
 * its value's length (u32 at 0x10) and offset from the attribute (u16 at 0x14).  The list of
 * attributes ends with type 0xffffffff.
 */
#include "containers/ntfs/ntfs_record.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/byteio.h"

#define NT_STRIDE 512
#define NT_DATA 0x80u
#define NT_END 0xffffffffu

/* Where byte off of the $MFT is in the image, and how many bytes from there are contiguous.
 * false when the $MFT's runs do not hold it. */
static bool mft_phys(const struct ntfs_mft *m, uint64_t off, uint64_t *phys, uint64_t *avail)
{
	size_t lo = 0, hi = m->nruns;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (off < m->runs[mid].off)
			hi = mid;
		else if (off - m->runs[mid].off >= m->runs[mid].len)
			lo = mid + 1;
		else {
			*phys = m->runs[mid].phys + (off - m->runs[mid].off);
			*avail = m->runs[mid].len - (off - m->runs[mid].off);
			return true;
		}
	}
	return false;
}

/* Appends the bytes [roff, roff + len) of record rec_off (an offset in the $MFT) as logical
 * [loff, ...), through the $MFT's runs.  0, -EIO (*why) or -ENOMEM. */
static int map_raw(const struct ntfs_mft *m, uint64_t rec_off, uint64_t roff, uint64_t len,
		   uint64_t loff, struct extents *e, const char **why)
{
	while (len) {
		uint64_t phys, avail;
		int err;

		if (!mft_phys(m, rec_off + roff, &phys, &avail)) {
			*why = "the $MFT does not hold its record";
			return -EIO;
		}
		if (avail > len)
			avail = len;
		err = extents_add(e, loff, avail, phys);
		if (err)
			return err;
		roff += avail;
		loff += avail;
		len -= avail;
	}
	return 0;
}

/* Reads the record at rec_off of the $MFT into buf (m->rec_size bytes). */
static int read_record(struct src *in, const struct ntfs_mft *m, uint64_t rec_off, uint8_t *buf,
		       const char **why)
{
	uint64_t done = 0;

	while (done < m->rec_size) {
		uint64_t phys, avail;
		int err;

		if (!mft_phys(m, rec_off + done, &phys, &avail)) {
			*why = "the $MFT does not hold its record";
			return -EIO;
		}
		if (avail > m->rec_size - done)
			avail = m->rec_size - done;
		err = src_pread_full(in, buf + done, (size_t)avail, phys);
		if (err) {
			if (err == -EIO)
				*why = "the image ends inside its MFT record";
			return err;
		}
		done += avail;
	}
	return 0;
}

/* Checks the record's header and applies its fixups to buf.  The offset of the update
 * sequence array, or -EIO (*why). */
static int fix_record(uint8_t *buf, uint32_t size, const char **why)
{
	uint32_t usa, count;

	if (memcmp(buf, "FILE", 4)) {
		*why = "its MFT record has no FILE signature";
		return -EIO;
	}
	usa = le16(buf + 4);
	count = le16(buf + 6);
	if (count != size / NT_STRIDE + 1 || usa < 0x28 || usa % 2 || usa + 2 * count > size) {
		*why = "its MFT record's update sequence array is damaged";
		return -EIO;
	}
	for (uint32_t k = 1; k < count; k++) {
		uint8_t *end = buf + k * NT_STRIDE - 2;

		if (memcmp(end, buf + usa, 2)) {
			*why = "its MFT record was torn (an update sequence number does not match)";
			return -EIO;
		}
		memcpy(end, buf + usa + 2 * k, 2);
	}
	return (int)usa;
}

/* The offset in the record (fixed) of the unnamed resident $DATA value, its length in *vlen;
 * -ENOTSUP when the record has none, -EIO (*why) when its attributes overrun it. */
static int64_t find_value(const uint8_t *buf, uint32_t size, uint32_t *vlen, const char **why)
{
	uint32_t a = le16(buf + 0x14);

	if (!(le16(buf + 0x16) & 1) || le64(buf + 0x20)) {
		*why = "its MFT record is not an in-use base record";
		return -EIO;
	}
	while (a <= size - 8 && a % 8 == 0) {
		uint32_t type = le32(buf + a), alen;

		if (type == NT_END)
			return -ENOTSUP;
		alen = le32(buf + a + 4);
		if (alen < 0x18 || alen > size - a)
			break;
		if (type == NT_DATA && buf[a + 8] == 0 && buf[a + 9] == 0) {
			uint32_t vo = le16(buf + a + 0x14);

			*vlen = le32(buf + a + 0x10);
			if (vo > alen || *vlen > alen - vo)
				break;
			return (int64_t)a + vo;
		}
		a += alen;
	}
	*why = "its MFT record's attributes overrun it";
	return -EIO;
}

int ntfs_resident_map(struct src *in, const struct ntfs_mft *mft, uint64_t idx, uint64_t len,
		      struct extents *e, const char **why)
{
	uint32_t rs = mft->rec_size, vlen = 0;
	uint64_t rec_off, p, end;
	uint8_t *buf;
	int64_t vo;
	int usa, err;

	*why = "";
	if (rs < NT_STRIDE || rs > 65536 || rs % NT_STRIDE || idx > UINT64_MAX / rs) {
		*why = "the MFT record size is not one";
		return -EIO;
	}
	rec_off = idx * rs;
	buf = malloc(rs);
	if (!buf)
		return -ENOMEM;
	err = read_record(in, mft, rec_off, buf, why);
	if (err)
		goto out;
	usa = fix_record(buf, rs, why);
	if (usa < 0) {
		err = usa;
		goto out;
	}
	vo = find_value(buf, rs, &vlen, why);
	if (vo < 0) {
		err = (int)vo;
		goto out;
	}
	if (vlen < len) {
		*why = "its resident data is shorter than its size";
		err = -EIO;
		goto out;
	}
	/* the value, stride by stride: the last two bytes of a stride come from the array */
	for (p = (uint64_t)vo, end = (uint64_t)vo + len; p < end && !err;) {
		uint64_t in_stride = p % NT_STRIDE, n;

		if (in_stride >= NT_STRIDE - 2) {
			uint64_t k = p / NT_STRIDE + 1;

			n = NT_STRIDE - in_stride;
			if (n > end - p)
				n = end - p;
			err = map_raw(mft, rec_off, (uint64_t)usa + 2 * k + (in_stride - (NT_STRIDE - 2)),
				      n, p - (uint64_t)vo, e, why);
		} else {
			n = NT_STRIDE - 2 - in_stride;
			if (n > end - p)
				n = end - p;
			err = map_raw(mft, rec_off, p, n, p - (uint64_t)vo, e, why);
		}
		p += n;
	}
out:
	free(buf);
	return err;
}
