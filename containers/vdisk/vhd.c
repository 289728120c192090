/* VHD images (Microsoft's Virtual Hard Disk Image Format Specification, also qemu's "vpc"):
 * the container "vhd", one member, the virtual disk, read through a sparse map (vdisk.h).
 *
 * The format: a 512-byte big-endian footer ("conectix") at the end of the file -- and, for a
 * dynamic disk, a copy of it at the start -- says the disk's type and size:
 *   - fixed (2): the file is the raw disk followed by the footer: one extent;
 *   - dynamic (3): the footer's data offset points to a dynamic header ("cxsparse") giving
 *     the block allocation table (BAT: one big-endian sector number per block, 0xFFFFFFFF
 *     for a block not allocated) and the block size.  An allocated block is a sector bitmap
 *     (one bit per sector, most significant first, padded to a sector) followed by its
 *     data; a sector whose bit is clear reads as zeros, so runs of set bits are extents;
 *   - differencing (4): the data is partly in the parent: the member is unreadable.
 * The size: Virtual PC and qemu ("vpc ", "qemu") size a disk by its CHS geometry, the others
 * (Hyper-V, qemu's "qem2", ...) by the footer's current size; as qemu does, the geometry
 * unless it is the largest there is.  Damage: a footer whose checksum is wrong is warned of
 * (the copy at the start is used when it is right); tables outside the file make the member
 * unreadable (EIO).
 */
#include "containers/vdisk/vdisk.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/byteio.h"
#include "common/log.h"

#define VHD_COOKIE "conectix"
#define VHD_FOOTER 512
#define VHD_FIXED 2
#define VHD_DYNAMIC 3
#define VHD_DIFF 4
#define VHD_EPOCH 946684800 /* 2000-01-01 00:00:00 UTC, the footer's time 0 */
#define VHD_BLOCK_MAX ((uint64_t)1 << 30)

struct vhd {
	struct src *in;
	const struct cont_sink *sink;
	const char *name;
	uint64_t fsize, vsize;
	char why[160];
};

static bool vhd_probe(struct src *in, const uint8_t *h, size_t len)
{
	uint8_t f[8];
	uint64_t size = src_size(in);

	if (len >= 8 && !memcmp(h, VHD_COOKIE, 8))
		return true;
	return size >= VHD_FOOTER && src_pread(in, f, 8, size - VHD_FOOTER) == 8 &&
	       !memcmp(f, VHD_COOKIE, 8);
}

static bool vhd_checksum_ok(const uint8_t *f)
{
	uint32_t sum = 0;

	for (size_t i = 0; i < VHD_FOOTER; i++)
		if (i < 64 || i >= 68)
			sum += f[i];
	return ~sum == be32(f + 64);
}

/* The footer into f: the one at the end, or the copy at the start when that one is damaged
 * or missing.  0, -EINVAL (none), or a read's -errno. */
static int vhd_footer(struct vhd *v, uint8_t *f)
{
	uint8_t head[VHD_FOOTER];
	bool tail_ok = false, head_ok = false;
	int err;

	if (v->fsize >= VHD_FOOTER) {
		err = src_pread_full(v->in, f, VHD_FOOTER, v->fsize - VHD_FOOTER);
		if (err)
			return err;
		tail_ok = !memcmp(f, VHD_COOKIE, 8);
	}
	if (tail_ok && vhd_checksum_ok(f))
		return 0;
	if (src_pread(v->in, head, sizeof(head), 0) == VHD_FOOTER && !memcmp(head, VHD_COOKIE, 8))
		head_ok = true;
	if (head_ok && (vhd_checksum_ok(head) || !tail_ok)) {
		tfs_log(TFS_LOG_WARNING, "%s: the VHD footer at the end is %s: its copy at the "
			"start is used", v->name, tail_ok ? "damaged" : "missing");
		memcpy(f, head, VHD_FOOTER);
		return 0;
	}
	if (!tail_ok) {
		tfs_log(TFS_LOG_ERR, "%s: no VHD footer", v->name);
		return -EINVAL;
	}
	tfs_log(TFS_LOG_WARNING, "%s: the VHD footer's checksum is wrong: read as it is",
		v->name);
	return 0;
}

/* The virtual size, as qemu reckons it (see above). */
static uint64_t vhd_size(const uint8_t *f)
{
	uint64_t chs = (uint64_t)be16(f + 56) * f[58] * f[59] * 512;
	bool max = be16(f + 56) == 65535 && f[58] == 16 && f[59] == 255;

	if (!max && (!memcmp(f + 28, "vpc ", 4) || !memcmp(f + 28, "qemu", 4)))
		return chs;
	return be64(f + 48);
}

/* Maps one allocated block: bitmap bm (of bsize / 512 bits), data at host. */
static int vhd_block(struct vhd *v, struct vd_map *m, const uint8_t *bm, uint64_t bsize,
		     uint64_t voff, uint64_t host)
{
	uint64_t sectors = bsize / 512, run = 0;

	for (uint64_t s = 0; s <= sectors; s++) {
		bool set = s < sectors && bm[s / 8] & (0x80 >> (s % 8));
		if (set) {
			run++;
			continue;
		}
		if (run) {
			uint64_t first = s - run;
			int err = vd_map_add(m, voff + first * 512, run * 512, host + first * 512);
			if (err == -EIO)
				snprintf(v->why, sizeof(v->why), "the block at %" PRIu64 " of the "
					 "disk: %s", voff, m->err);
			if (err)
				return err;
		}
		run = 0;
	}
	return 0;
}

/* A dynamic disk's map, from the dynamic header at hoff.  0, the member's unreadable code
 * with v->why, or -ENOMEM, or a read's -errno (*io). */
static int vhd_dynamic(struct vhd *v, struct vd_map *m, uint64_t hoff, bool *io)
{
	uint8_t h[1024], *bat = NULL, *bm = NULL;
	uint64_t bat_off, entries, bsize, bmsize, used = 0;
	int err = -EIO;

	*io = false;
	if (hoff > v->fsize || sizeof(h) > v->fsize - hoff ||
	    src_pread_full(v->in, h, sizeof(h), hoff) || memcmp(h, "cxsparse", 8)) {
		snprintf(v->why, sizeof(v->why), "no dynamic disk header at %" PRIu64 ": damaged",
			 hoff);
		return -EIO;
	}
	bat_off = be64(h + 16);
	entries = be32(h + 28);
	bsize = be32(h + 32);
	if (bsize < 512 || bsize % 512 || bsize > VHD_BLOCK_MAX) {
		snprintf(v->why, sizeof(v->why), "a block size of %" PRIu64 ": damaged", bsize);
		return -EIO;
	}
	if (entries > v->vsize / bsize + 1)
		entries = v->vsize / bsize + 1; /* the rest maps nothing of the disk */
	if (entries * 4 > VD_TABLE_MAX || bat_off > v->fsize || entries * 4 > v->fsize - bat_off) {
		snprintf(v->why, sizeof(v->why), "the block table (%" PRIu64 " entries at %" PRIu64
			 ") lies past the end of the image: damaged", entries, bat_off);
		return -EIO;
	}
	bmsize = (bsize / 512 + 4095) / 4096 * 512;
	bat = malloc(entries * 4 + 1);
	bm = malloc(bmsize);
	if (!bat || !bm) {
		err = -ENOMEM;
		goto out;
	}
	err = src_pread_full(v->in, bat, entries * 4, bat_off);
	if (err) {
		*io = true;
		goto out;
	}
	for (uint64_t i = 0; i < entries && i * bsize < v->vsize; i++) {
		uint64_t host = (uint64_t)be32(bat + 4 * i) * 512;

		if (be32(bat + 4 * i) == 0xffffffffu)
			continue;
		if (host > v->fsize || bmsize > v->fsize - host || ++used > v->fsize / bsize + 1) {
			snprintf(v->why, sizeof(v->why), "block %" PRIu64 " (at %" PRIu64 ") lies "
				 "outside the image: damaged", i, host);
			err = -EIO;
			goto out;
		}
		err = src_pread_full(v->in, bm, bmsize, host);
		if (err) {
			*io = true;
			goto out;
		}
		err = vhd_block(v, m, bm, bsize, i * bsize, host + bmsize);
		if (err)
			goto out;
	}
out:
	free(bat);
	free(bm);
	return err;
}

static int vhd_parse(struct src *in, const struct cont_sink *sink, struct cont_stats *st)
{
	struct vhd v = {.in = in, .sink = sink, .name = sink->name ? sink->name : "image",
			.fsize = src_size(in)};
	uint8_t f[VHD_FOOTER];
	struct vd_map m;
	int64_t mtime;
	bool io = false;
	int err = vhd_footer(&v, f);

	if (err)
		return err;
	v.vsize = vhd_size(f);
	mtime = VHD_EPOCH + (int64_t)be32(f + 24);
	vd_map_init(&m, v.vsize, v.fsize);
	switch (v.vsize > (1ull << 62) ? UINT32_MAX : be32(f + 60)) {
	case UINT32_MAX:
		v.vsize = 0;
		snprintf(v.why, sizeof(v.why), "a virtual size too large: damaged");
		err = -EIO;
		break;
	case VHD_FIXED:
		err = vd_map_add(&m, 0, v.vsize, 0);
		if (err == -EIO)
			snprintf(v.why, sizeof(v.why), "a fixed disk of %" PRIu64 " bytes in a file "
				 "of %" PRIu64 ": truncated", v.vsize, v.fsize);
		break;
	case VHD_DYNAMIC:
		err = vhd_dynamic(&v, &m, be64(f + 16), &io);
		break;
	case VHD_DIFF:
		snprintf(v.why, sizeof(v.why), "a differencing VHD: its data is partly in its "
			 "parent (qemu-img convert -O vpc makes a whole one)");
		err = -EOPNOTSUPP;
		break;
	default:
		snprintf(v.why, sizeof(v.why), "disk type %" PRIu32 " unknown", be32(f + 60));
		err = -EOPNOTSUPP;
	}
	if (io && err == -EIO)
		snprintf(v.why, sizeof(v.why), "its tables lie past the end of the file "
			 "(truncated)");
	else if (io || err == -ENOMEM)
		goto out;
	err = vd_report(sink, st, &m, v.vsize, mtime, err, v.why);
out:
	vd_map_free(&m);
	return err;
}

const struct container cont_vhd = {
	.name = "vhd",
	.probe = vhd_probe,
	.parse = vhd_parse,
};
