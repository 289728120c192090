/* VHDX images (Microsoft's VHDX Format Specification 1.0): the container "vhdx", one member,
 * the virtual disk, read through a sparse map (vdisk.h).
 *
 * The format (little-endian; GUIDs in Microsoft's mixed byte order): "vhdxfile" at 0; two
 * headers at 64 and 128 KiB ("head", a CRC-32C over their 4 KiB, a sequence number: the valid
 * one with the larger number is current, and it says whether a log is pending); two copies
 * of the region table at 192 and 256 KiB ("regi", a CRC-32C over 64 KiB), which locate the
 * metadata region and the block allocation table (BAT).  The metadata gives the block size,
 * the virtual size, the logical sector size and whether the disk has a parent.  The BAT has
 * one 8-byte entry per payload block (its state in bits 0-2, its offset in MiB in bits
 * 20-63), and after every chunk-ratio (2^23 * sector size / block size) of them one entry
 * for a sector bitmap block.  A fully present block is an extent; not present, undefined,
 * zero or unmapped ones are holes.
 *
 * Refused with a reason, the member listed unreadable: a disk with a parent (differencing),
 * partially present blocks (only differencing disks have them), unknown required regions or
 * metadata (-EOPNOTSUPP); damage (-EIO): no valid header or region table, tables or blocks
 * outside the file.  A pending log (the image was not closed cleanly) is warned of and the
 * image read as it is, without replaying the log.
 */
#include "containers/vdisk/vdisk.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/byteio.h"
#include "common/log.h"

#define VHDX_MAGIC "vhdxfile"
#define VHDX_HDR 4096
#define VHDX_REGIONS 65536
#define VHDX_META_MAX 65536 /* what is read of the metadata table */
#define VHDX_MIB ((uint64_t)1 << 20)

/* GUIDs as stored */
static const uint8_t guid_bat[16] = {0x66, 0x77, 0xc2, 0x2d, 0x23, 0xf6, 0x00, 0x42,
				     0x9d, 0x64, 0x11, 0x5e, 0x9b, 0xfd, 0x4a, 0x08};
static const uint8_t guid_meta[16] = {0x06, 0xa2, 0x7c, 0x8b, 0x90, 0x47, 0x9a, 0x4b,
				      0xb8, 0xfe, 0x57, 0x5f, 0x05, 0x0f, 0x88, 0x6e};
static const uint8_t guid_params[16] = {0x37, 0x67, 0xa1, 0xca, 0x36, 0xfa, 0x43, 0x4d,
					0xb3, 0xb6, 0x33, 0xf0, 0xaa, 0x44, 0xe7, 0x6b};
static const uint8_t guid_size[16] = {0x24, 0x42, 0xa5, 0x2f, 0x1b, 0xcd, 0x76, 0x48,
				      0xb2, 0x11, 0x5d, 0xbe, 0xd8, 0x3b, 0xf4, 0xb8};
static const uint8_t guid_lsector[16] = {0x1d, 0xbf, 0x41, 0x81, 0x6f, 0xa9, 0x09, 0x47,
					 0xba, 0x47, 0xf2, 0x33, 0xa8, 0xfa, 0xab, 0x5f};

enum { PB_NOT_PRESENT = 0, PB_UNDEFINED = 1, PB_ZERO = 2, PB_UNMAPPED = 3,
       PB_FULLY_PRESENT = 6, PB_PARTIALLY_PRESENT = 7 };

struct vhdx {
	struct src *in;
	const struct cont_sink *sink;
	const char *name;
	uint64_t fsize, vsize, bat_off, bat_len, meta_off, meta_len;
	uint32_t bsize, lsector;
	bool has_parent;
	char why[200];
};

static bool vhdx_probe(struct src *in, const uint8_t *h, size_t len)
{
	(void)in;
	return len >= 8 && !memcmp(h, VHDX_MAGIC, 8);
}

/* CRC-32C (Castagnoli, reflected 0x82F63B78) of p[0..n), with the 4 bytes at skip taken as
 * zeros (the checksum field itself). */
static uint32_t crc32c(const uint8_t *p, size_t n, size_t skip)
{
	static uint32_t table[256];
	uint32_t c = 0xffffffffu;

	if (!table[1]) /* benign race: every thread writes the same values */
		for (uint32_t i = 0; i < 256; i++) {
			uint32_t x = i;
			for (int k = 0; k < 8; k++)
				x = x & 1 ? (x >> 1) ^ 0x82f63b78u : x >> 1;
			table[i] = x;
		}
	for (size_t i = 0; i < n; i++) {
		uint8_t b = i >= skip && i < skip + 4 ? 0 : p[i];
		c = table[(c ^ b) & 0xff] ^ (c >> 8);
	}
	return ~c;
}

/* Reads the block of n bytes at off and checks its signature and CRC-32C (at offset 4). */
static bool vhdx_block_ok(struct vhdx *v, uint8_t *b, size_t n, uint64_t off, const char *sig)
{
	return src_pread_full(v->in, b, n, off) == 0 && !memcmp(b, sig, 4) &&
	       crc32c(b, n, 4) == le32(b + 4);
}

/* The current header (the valid one with the larger sequence number).  0, or -EIO. */
static int vhdx_header(struct vhdx *v, uint8_t *buf)
{
	uint8_t *h2 = buf + VHDX_HDR;
	bool ok1 = vhdx_block_ok(v, buf, VHDX_HDR, 65536, "head");
	bool ok2 = vhdx_block_ok(v, h2, VHDX_HDR, 131072, "head");
	const uint8_t *h;
	static const uint8_t nil[16];

	if (!ok1 && !ok2) {
		snprintf(v->why, sizeof(v->why), "no valid VHDX header: damaged");
		return -EIO;
	}
	h = ok1 && (!ok2 || le64(buf + 8) >= le64(h2 + 8)) ? buf : h2;
	if (le16(h + 66) != 1) {
		snprintf(v->why, sizeof(v->why), "VHDX version %u unknown", le16(h + 66));
		return -EOPNOTSUPP;
	}
	if (memcmp(h + 48, nil, 16))
		tfs_log(TFS_LOG_WARNING, "%s: the VHDX log may hold writes not yet applied (the "
			"image was not closed cleanly): read as it is", v->name);
	return 0;
}

/* The region table: where the BAT and the metadata are.  0, or the unreadable code. */
static int vhdx_regions(struct vhdx *v, uint8_t *r)
{
	uint32_t n;

	if (!vhdx_block_ok(v, r, VHDX_REGIONS, 196608, "regi") &&
	    !vhdx_block_ok(v, r, VHDX_REGIONS, 262144, "regi")) {
		snprintf(v->why, sizeof(v->why), "no valid VHDX region table: damaged");
		return -EIO;
	}
	n = le32(r + 8);
	if (n > 2047) {
		snprintf(v->why, sizeof(v->why), "%u regions: damaged", n);
		return -EIO;
	}
	for (uint32_t i = 0; i < n; i++) {
		const uint8_t *e = r + 16 + 32 * i;
		uint64_t off = le64(e + 16), len = le32(e + 24);

		if (!memcmp(e, guid_bat, 16)) {
			v->bat_off = off;
			v->bat_len = len;
		} else if (!memcmp(e, guid_meta, 16)) {
			v->meta_off = off;
			v->meta_len = len;
		} else if (le32(e + 28) & 1) {
			snprintf(v->why, sizeof(v->why), "a required region unknown");
			return -EOPNOTSUPP;
		}
	}
	if (!v->bat_len || !v->meta_len || v->bat_off > v->fsize ||
	    v->bat_len > v->fsize - v->bat_off || v->meta_off > v->fsize ||
	    v->meta_len > v->fsize - v->meta_off || v->bat_len > VD_TABLE_MAX) {
		snprintf(v->why, sizeof(v->why), "the BAT or the metadata region is missing or "
			 "lies past the end of the image: damaged");
		return -EIO;
	}
	return 0;
}

/* The metadata: block size, virtual size, sector size, parent.  0 or the unreadable code. */
static int vhdx_metadata(struct vhdx *v, uint8_t *t)
{
	size_t tlen = v->meta_len < VHDX_META_MAX ? (size_t)v->meta_len : VHDX_META_MAX;
	uint16_t n;
	int found = 0;

	if (tlen < 32 || src_pread_full(v->in, t, tlen, v->meta_off) || memcmp(t, "metadata", 8) ||
	    (n = le16(t + 10)) > 2047 || 32 + (size_t)n * 32 > tlen) {
		snprintf(v->why, sizeof(v->why), "the metadata table is damaged");
		return -EIO;
	}
	for (uint16_t i = 0; i < n; i++) {
		const uint8_t *e = t + 32 + 32 * i;
		uint32_t off = le32(e + 16), len = le32(e + 20);
		uint8_t val[8] = {0};

		if (off > v->meta_len || len > v->meta_len - off ||
		    src_pread_full(v->in, val, len < 8 ? len : 8, v->meta_off + off)) {
			snprintf(v->why, sizeof(v->why), "metadata item %u lies outside its region: "
				 "damaged", i);
			return -EIO;
		}
		if (!memcmp(e, guid_params, 16) && len >= 8) {
			v->bsize = le32(val);
			v->has_parent = le32(val + 4) & 2;
			found |= 1;
		} else if (!memcmp(e, guid_size, 16) && len >= 8) {
			v->vsize = le64(val);
			found |= 2;
		} else if (!memcmp(e, guid_lsector, 16) && len >= 4) {
			v->lsector = le32(val);
			found |= 4;
		}
	}
	if (found != 7 || v->bsize < VHDX_MIB || v->bsize > 256 * VHDX_MIB ||
	    (v->bsize & (v->bsize - 1)) || (v->lsector != 512 && v->lsector != 4096) ||
	    v->vsize > (1ull << 62)) {
		snprintf(v->why, sizeof(v->why), "the metadata (block size %u, sector size %u, "
			 "virtual size %" PRIu64 ") is damaged", v->bsize, v->lsector, v->vsize);
		v->vsize = found & 2 && v->vsize <= (1ull << 62) ? v->vsize : 0;
		return -EIO;
	}
	if (v->has_parent) {
		snprintf(v->why, sizeof(v->why), "a differencing VHDX: its data is partly in its "
			 "parent (qemu-img convert -O vhdx makes a whole one)");
		return -EOPNOTSUPP;
	}
	return 0;
}

/* The BAT into m.  0, the unreadable code with v->why, -ENOMEM, or a read's -errno (*io). */
static int vhdx_map(struct vhdx *v, struct vd_map *m, bool *io)
{
	uint64_t ratio = ((uint64_t)1 << 23) * v->lsector / v->bsize;
	uint64_t blocks = v->vsize / v->bsize + (v->vsize % v->bsize != 0);
	uint64_t need = blocks ? blocks + (blocks - 1) / ratio : 0;
	uint8_t *bat;
	int err;

	*io = false;
	if (need * 8 > v->bat_len) {
		snprintf(v->why, sizeof(v->why), "the BAT holds %" PRIu64 " entries of the %"
			 PRIu64 " the disk needs: damaged", v->bat_len / 8, need);
		return -EIO;
	}
	bat = malloc(need * 8 + 1);
	if (!bat)
		return -ENOMEM;
	err = src_pread_full(v->in, bat, need * 8, v->bat_off);
	if (err)
		*io = true;
	for (uint64_t b = 0; !err && b < blocks; b++) {
		uint64_t e = le64(bat + 8 * (b + b / ratio)), host = e & ~(VHDX_MIB - 1);

		switch (e & 7) {
		case PB_FULLY_PRESENT:
			err = vd_map_add(m, b * v->bsize, v->bsize, host);
			if (err == -EIO)
				snprintf(v->why, sizeof(v->why), "block %" PRIu64 ": %s", b, m->err);
			break;
		case PB_PARTIALLY_PRESENT:
			snprintf(v->why, sizeof(v->why), "block %" PRIu64 " is partially present "
				 "(a differencing disk's)", b);
			err = -EOPNOTSUPP;
			break;
		case PB_NOT_PRESENT:
		case PB_UNDEFINED:
		case PB_ZERO:
		case PB_UNMAPPED:
			break;
		default:
			snprintf(v->why, sizeof(v->why), "block %" PRIu64 " in state %u: damaged", b,
				 (unsigned)(e & 7));
			err = -EIO;
		}
	}
	free(bat);
	return err;
}

static int vhdx_parse(struct src *in, const struct cont_sink *sink, struct cont_stats *st)
{
	struct vhdx v = {.in = in, .sink = sink, .name = sink->name ? sink->name : "image",
			 .fsize = src_size(in)};
	uint8_t *buf = malloc(VHDX_REGIONS);
	struct vd_map m = {0};
	bool io = false;
	int err;

	if (!buf)
		return -ENOMEM;
	err = src_pread_full(in, buf, 8, 0);
	if (err || memcmp(buf, VHDX_MAGIC, 8)) {
		tfs_log(TFS_LOG_ERR, "%s: not a VHDX image", v.name);
		free(buf);
		return err ? err : -EINVAL;
	}
	err = vhdx_header(&v, buf);
	err = err ? err : vhdx_regions(&v, buf);
	err = err ? err : vhdx_metadata(&v, buf);
	vd_map_init(&m, v.vsize, v.fsize);
	if (!err)
		err = vhdx_map(&v, &m, &io);
	if (io && err == -EIO)
		snprintf(v.why, sizeof(v.why), "its tables lie past the end of the file "
			 "(truncated)");
	else if (io || err == -ENOMEM)
		goto out;
	err = vd_report(sink, st, &m, v.vsize, 0, err, v.why);
out:
	vd_map_free(&m);
	free(buf);
	return err;
}

const struct container cont_vhdx = {
	.name = "vhdx",
	.probe = vhdx_probe,
	.parse = vhdx_parse,
};
