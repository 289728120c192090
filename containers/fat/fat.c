/* FAT12/16/32 file systems: the container "fat" (container.h, one of cont_images: probed only
 * with -r).  This file reads the boot sector and the FAT and follows cluster chains;
 * fat_dir.c walks the directories.  Debian 12 has no FAT library to read an image in user
 * space, so this is a small parser of our own, after Microsoft's FAT specification
 * ("FAT: General Overview of On-Disk Format", 2000).
 *
 * The boot sector's BPB gives the layout: reserved sectors, then the FATs, then (FAT12/16)
 * the fixed root directory, then the data region of clusters numbered from 2.  The type is
 * chosen by the count of clusters (< 4085 FAT12, < 65525 FAT16, else FAT32), never by the
 * "FAT16   " string -- except that a FAT32 BPB (no 16-bit FAT size) is FAT32 whatever its
 * count, as Linux and mtools read it (mkfs.vfat -F 32 makes such small volumes).  The active FAT (the first, or FAT32's ext_flags choice when mirroring
 * is off) is read whole, as far as the volume holds it (a FAT12 of 4084 clusters is 6 KiB,
 * a FAT32 of a million 1.5 MiB volume-size clusters 4 MiB); an entry past what was read is
 * "outside the FAT".
 *
 * A file's data is its cluster chain, reported as a sparse map (member.h) of the volume:
 * contiguous clusters merged into one extent, src the byte offset in the volume; a file in
 * one extent is a plain member at that offset instead (read in place, zero-copy).  Only
 * the clusters its size needs are followed.  A chain that ends too soon, meets a free, bad or
 * reserved cluster, points outside the FAT, comes back to a cluster already followed (a loop,
 * or a cluster another file or folder holds: a bitmap of the volume's clusters), or lies past
 * the end of the volume makes the file unreadable (EIO, with the reason): never zeros or
 * another file's bytes presented as its data.
 */
#include "containers/fat/fat_int.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "common/byteio.h"
#include "common/log.h"

#define FAT_LOAD_MAX ((uint64_t)512 << 20) /* a larger FAT is refused */

struct bpb {
	uint32_t bps, spc, rsvd, nfats, root_ent, fatsz, ext_flags, root_cluster;
	uint64_t tot;
	bool fat32; /* the FAT32 BPB: no 16-bit FAT size, no fixed root folder */
};

/* The BPB of boot sector s, checked for what the layout needs: true if it is one. */
static bool fat_bpb(const uint8_t *s, struct bpb *b)
{
	if (!(s[0] == 0xEB || s[0] == 0xE9) || s[510] != 0x55 || s[511] != 0xAA ||
	    !memcmp(s + 3, "NTFS    ", 8) || !memcmp(s + 3, "EXFAT   ", 8))
		return false;
	b->bps = le16(s + 11);
	b->spc = s[13];
	b->rsvd = le16(s + 14);
	b->nfats = s[16];
	b->root_ent = le16(s + 17);
	b->tot = le16(s + 19) ? le16(s + 19) : le32(s + 32);
	b->fatsz = le16(s + 22) ? le16(s + 22) : le32(s + 36);
	b->ext_flags = le16(s + 40);
	b->root_cluster = le32(s + 44);
	if (b->bps < 512 || b->bps > 4096 || (b->bps & (b->bps - 1)) || !b->spc ||
	    (b->spc & (b->spc - 1)) || !b->rsvd || !b->nfats || b->nfats > 4 || !b->tot ||
	    !b->fatsz || (s[21] != 0xF0 && s[21] < 0xF8))
		return false;
	b->fat32 = !le16(s + 22);
	if (b->fat32 && b->root_ent) /* FAT32's BPB (no 16-bit FAT size): no fixed root */
		return false;
	return true;
}

/* The layout and the type from the BPB.  false if the volume has no room for data. */
static bool fat_layout(struct fat *f, const struct bpb *b)
{
	uint64_t root_secs = ((uint64_t)b->root_ent * 32 + b->bps - 1) / b->bps;
	uint64_t meta = b->rsvd + (uint64_t)b->nfats * b->fatsz + root_secs, clusters;

	if (b->tot <= meta)
		return false;
	clusters = (b->tot - meta) / b->spc;
	if (!clusters || clusters > 0x0FFFFFF5)
		return false;
	f->bps = b->bps;
	f->csize = b->bps * b->spc;
	f->count = (uint32_t)clusters;
	f->type = clusters < 4085 ? 12 : clusters < 65525 ? 16 : 32;
	if (b->fat32)
		f->type = 32; /* a FAT32 BPB with too few clusters: what mkfs.vfat -F 32 makes of a
				 small volume, and what Linux and mtools read as FAT32 */
	f->root_off = ((uint64_t)b->rsvd + (uint64_t)b->nfats * b->fatsz) * b->bps;
	f->root_len = root_secs * b->bps;
	f->data = meta * b->bps;
	f->root_cluster = b->root_cluster;
	if (f->type == 32 && (b->root_ent || b->root_cluster < 2 ||
			      b->root_cluster > (uint64_t)clusters + 1))
		return false;
	if (f->type != 32 && !b->root_ent)
		return false;
	return true;
}

static bool fat_probe(struct src *in, const uint8_t *head, size_t len)
{
	struct fat f = {.in = in};
	struct bpb b;

	(void)in;
	return len >= 512 && fat_bpb(head, &b) && fat_layout(&f, &b);
}

/* Reads the active FAT (as far as the volume holds it).  0 or -errno. */
static int fat_load(struct fat *f, const struct bpb *b)
{
	unsigned active = 0;
	uint64_t need, off;

	if (f->type == 32 && (b->ext_flags & 0x80) && (b->ext_flags & 0x0F) < b->nfats)
		active = b->ext_flags & 0x0F;
	off = ((uint64_t)b->rsvd + (uint64_t)active * b->fatsz) * b->bps;
	need = f->type == 12 ? ((uint64_t)f->count + 2) * 3 / 2 + 1
			     : ((uint64_t)f->count + 2) * (f->type / 8);
	if (need > (uint64_t)b->fatsz * b->bps)
		need = (uint64_t)b->fatsz * b->bps;
	if (off >= f->size)
		need = 0;
	else if (need > f->size - off)
		need = f->size - off;
	if (need > FAT_LOAD_MAX) {
		tfs_log(TFS_LOG_ERR, "%s: a FAT of %" PRIu64 " bytes: too large", f->name, need);
		return -ENOTSUP;
	}
	/* the bitmap covers the clusters the volume holds: a hostile count costs nothing */
	f->mapped = f->size > f->data ? (f->size - f->data + f->csize - 1) / f->csize + 2 : 2;
	if (f->mapped > (uint64_t)f->count + 2)
		f->mapped = (uint64_t)f->count + 2;
	f->fat = malloc(need ? (size_t)need : 1);
	f->used = calloc((size_t)f->mapped / 8 + 1, 1);
	if (!f->fat || !f->used)
		return -ENOMEM;
	f->fat_len = (size_t)need;
	if (need < (uint64_t)f->count * f->type / 8) {
		tfs_log(TFS_LOG_WARNING, "%s: the volume holds only %" PRIu64 " bytes of its FAT "
			"(truncated, or a FAT too small for its %" PRIu32 " clusters)", f->name,
			need, f->count);
		f->damaged = true;
	}
	return src_pread_full(f->in, f->fat, (size_t)need, off);
}

static int fat_parse(struct src *in, const struct cont_sink *sink, struct cont_stats *stats)
{
	struct fat f = {.in = in, .sink = sink, .name = sink->name ? sink->name : "volume",
			.size = src_size(in)};
	uint8_t s[512];
	struct bpb b;
	int err;

	if (f.size == SRC_SIZE_UNKNOWN)
		return -EINVAL;
	err = src_pread_full(in, s, sizeof(s), 0);
	if (err)
		return err == -EIO ? -EINVAL : err;
	if (!fat_bpb(s, &b) || !fat_layout(&f, &b)) {
		tfs_log(TFS_LOG_ERR, "%s: not a FAT file system (its boot sector)", f.name);
		return -EINVAL;
	}
	err = fat_load(&f, &b);
	if (!err)
		err = fat_walk(&f);
	if (stats)
		*stats = (struct cont_stats){.members = f.members, .damaged = f.damaged};
	free(f.fat);
	free(f.used);
	extents_free(&f.x);
	return err;
}

const struct container cont_fat = {
	.name = "fat",
	.probe = fat_probe,
	.parse = fat_parse,
};
