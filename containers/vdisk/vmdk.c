/* VMDK images (VMware's Virtual Disk Format 1.1, hosted sparse extents): the container
 * "vmdk", one member, the virtual disk, read through a sparse map (vdisk.h).
 *
 * The format: a monolithicSparse image (qemu-img's default subformat) is one sparse extent,
 * a little-endian header ("KDMV": the capacity and the grain size in sectors, the number of
 * entries per grain table, where the grain directory and the embedded text descriptor are),
 * then a grain directory (one sector number per grain table, 0 for none) and grain tables
 * (one sector number per grain: 0 not allocated, 1 a zero grain when the header's flag says
 * so).  Grains are extents, the rest holes.
 *
 * Refused with a reason, the member listed unreadable: compressed grains (streamOptimized;
 * -EOPNOTSUPP, "convert with qemu-img"), a delta disk (its descriptor names a parent), and
 * a descriptor-only file ("# Disk DescriptorFile": monolithicFlat, split and ESX disks keep
 * their data in other files, which a mount of this one file cannot read).  Damage (-EIO):
 * tables or grains outside the file or overlapping.
 */
#include "containers/vdisk/vdisk.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/byteio.h"
#include "common/log.h"

#define VMDK_MAGIC "KDMV"
#define VMDK_TEXT "# Disk DescriptorFile"
#define VMDK_FLAG_ZERO_GRAIN (1u << 2)
#define VMDK_FLAG_COMPRESSED (1u << 16)
#define VMDK_GD_AT_END UINT64_MAX
#define VMDK_DESC_MAX 65536 /* what is read of a descriptor */

struct vmdk {
	struct src *in;
	const struct cont_sink *sink;
	const char *name;
	uint64_t fsize, vsize, grain, gtes;
	uint32_t flags;
	char why[200];
};

static bool vmdk_probe(struct src *in, const uint8_t *h, size_t len)
{
	(void)in;
	return (len >= 8 && !memcmp(h, VMDK_MAGIC, 4) && le32(h + 4) >= 1 && le32(h + 4) <= 3) ||
	       (len >= sizeof(VMDK_TEXT) - 1 && !memcmp(h, VMDK_TEXT, sizeof(VMDK_TEXT) - 1));
}

/* The descriptor's text (at most VMDK_DESC_MAX bytes at off, NUL-ended): malloc'd, or NULL. */
static char *vmdk_text(struct vmdk *v, uint64_t off, uint64_t len)
{
	char *t;
	ssize_t got;

	if (off > v->fsize)
		return NULL;
	if (len > VMDK_DESC_MAX)
		len = VMDK_DESC_MAX;
	t = malloc(len + 1);
	if (!t)
		return NULL;
	got = src_pread(v->in, t, len, off);
	t[got > 0 ? got : 0] = '\0';
	return t;
}

/* A descriptor-only file: its size is the sum of its extents' ("RW 2048 FLAT ..."). */
static int vmdk_descriptor_only(struct vmdk *v, struct cont_stats *st)
{
	char *t = vmdk_text(v, 0, v->fsize), *p, type[40] = "?";
	uint64_t size = 0;
	int err;

	if (!t)
		return -ENOMEM;
	for (p = t; p && *p; p = strchr(p, '\n'), p = p ? p + 1 : NULL) {
		unsigned long long n;
		if ((sscanf(p, "RW %llu", &n) == 1 || sscanf(p, "RDONLY %llu", &n) == 1) &&
		    n < (1ull << 53) && size + n * 512 < (1ull << 62))
			size += n * 512;
		else
			sscanf(p, "createType=\"%39[^\"]\"", type);
	}
	snprintf(v->why, sizeof(v->why), "a VMDK descriptor (createType %s): the disk's data is "
		 "in the files it names, not in this one", type);
	err = vd_report(v->sink, st, NULL, size, 0, -EOPNOTSUPP, v->why);
	free(t);
	return err;
}

/* Checks the header: 0 readable, or the member's unreadable code with v->why. */
static int vmdk_header(struct vmdk *v, const uint8_t *h)
{
	uint64_t cap = le64(h + 12), gd = le64(h + 56);
	char *desc;

	v->flags = le32(h + 8);
	v->grain = le64(h + 20);
	v->gtes = le32(h + 44);
	v->vsize = cap <= (1ull << 53) ? cap * 512 : 0;
	if (cap > (1ull << 53)) {
		snprintf(v->why, sizeof(v->why), "a capacity of %" PRIu64 " sectors: damaged", cap);
		return -EIO;
	}
	if (v->flags & VMDK_FLAG_COMPRESSED || le16(h + 77) || gd == VMDK_GD_AT_END) {
		snprintf(v->why, sizeof(v->why), "compressed VMDK grains (streamOptimized): "
			 "convert with qemu-img convert -O vmdk to read it");
		return -EOPNOTSUPP;
	}
	if (!v->grain || v->grain > 131072 || !v->gtes || v->gtes > 4096) {
		snprintf(v->why, sizeof(v->why), "grains of %" PRIu64 " sectors, %" PRIu64
			 " per table: damaged", v->grain, v->gtes);
		return -EIO;
	}
	desc = le64(h + 28) ? vmdk_text(v, le64(h + 28) * 512, le64(h + 36) * 512) : NULL;
	if (desc && strstr(desc, "parentFileNameHint")) {
		snprintf(v->why, sizeof(v->why), "a VMDK delta disk: its data is partly in its "
			 "parent (qemu-img convert -O vmdk makes a whole one)");
		free(desc);
		return -EOPNOTSUPP;
	}
	free(desc);
	return 0;
}

/* Maps the grains of one grain table, covering the disk from voff. */
static int vmdk_table(struct vmdk *v, struct vd_map *m, const uint8_t *gt, uint64_t voff)
{
	uint64_t gbytes = v->grain * 512;

	for (uint64_t i = 0; i < v->gtes && voff < v->vsize; i++, voff += gbytes) {
		uint64_t s = le32(gt + 4 * i);
		int err;

		if (!s || (s == 1 && v->flags & VMDK_FLAG_ZERO_GRAIN))
			continue;
		err = vd_map_add(m, voff, gbytes, s * 512);
		if (err == -EIO)
			snprintf(v->why, sizeof(v->why), "the grain at %" PRIu64 " of the disk: %s",
				 voff, m->err);
		if (err)
			return err;
	}
	return 0;
}

/* Walks the grain directory at sector gd into m.  0, the member's unreadable code with
 * v->why, -ENOMEM, or a read's -errno (*io). */
static int vmdk_map(struct vmdk *v, struct vd_map *m, uint64_t gd, bool *io)
{
	uint64_t span = v->grain * 512 * v->gtes, n = v->vsize / span + (v->vsize % span != 0);
	uint64_t tables = 0, gd_off = gd * 512;
	uint8_t *dir = NULL, *gt = NULL;
	int err = -EIO;

	*io = false;
	if (gd > v->fsize / 512 || n * 4 > VD_TABLE_MAX || n * 4 > v->fsize - gd_off) {
		snprintf(v->why, sizeof(v->why), "the grain directory (%" PRIu64 " entries at "
			 "sector %" PRIu64 ") lies past the end of the image: damaged", n, gd);
		return -EIO;
	}
	dir = malloc(n * 4 + 1);
	gt = malloc(v->gtes * 4);
	if (!dir || !gt) {
		err = -ENOMEM;
		goto out;
	}
	err = src_pread_full(v->in, dir, n * 4, gd_off);
	if (err) {
		*io = true;
		goto out;
	}
	for (uint64_t i = 0; i < n; i++) {
		uint64_t s = le32(dir + 4 * i), off = s * 512;

		if (!s)
			continue;
		if (off > v->fsize || v->gtes * 4 > v->fsize - off ||
		    ++tables > v->fsize / (v->gtes * 4)) {
			snprintf(v->why, sizeof(v->why), "grain table %" PRIu64 " (at sector %"
				 PRIu64 ") lies outside the image: damaged", i, s);
			err = -EIO;
			goto out;
		}
		err = src_pread_full(v->in, gt, v->gtes * 4, off);
		if (err) {
			*io = true;
			goto out;
		}
		err = vmdk_table(v, m, gt, i * span);
		if (err)
			goto out;
	}
out:
	free(dir);
	free(gt);
	return err;
}

static int vmdk_parse(struct src *in, const struct cont_sink *sink, struct cont_stats *st)
{
	struct vmdk v = {.in = in, .sink = sink, .name = sink->name ? sink->name : "image",
			 .fsize = src_size(in)};
	uint8_t h[512] = {0};
	struct vd_map m;
	bool io = false;
	ssize_t got = src_pread(in, h, sizeof(h), 0);
	int err;

	if (got < 0)
		return (int)got;
	if (!vmdk_probe(in, h, (size_t)got)) {
		tfs_log(TFS_LOG_ERR, "%s: not a VMDK image", v.name);
		return -EINVAL;
	}
	if (h[0] == '#')
		return vmdk_descriptor_only(&v, st);
	vd_map_init(&m, 0, v.fsize);
	err = got < 80 ? -EIO : vmdk_header(&v, h);
	if (got < 80)
		snprintf(v.why, sizeof(v.why), "the header is cut short: truncated");
	m.vsize = v.vsize;
	if (!err)
		err = vmdk_map(&v, &m, le64(h + 56), &io);
	if (io && err == -EIO)
		snprintf(v.why, sizeof(v.why), "its tables lie past the end of the file "
			 "(truncated)");
	else if (io || err == -ENOMEM)
		goto out;
	err = vd_report(sink, st, &m, v.vsize, 0, err, v.why);
out:
	vd_map_free(&m);
	return err;
}

const struct container cont_vmdk = {
	.name = "vmdk",
	.probe = vmdk_probe,
	.parse = vmdk_parse,
};
