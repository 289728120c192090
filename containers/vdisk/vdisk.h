/* Virtual-disk images (qcow2, VHD, VHDX, VMDK): what the four containers share.
 *
 * Each image format is a block map: the virtual disk is cut into clusters (grains, blocks),
 * and a table says where each one is stored in the image file, or that it is not (it reads
 * as zeros).  A tarseek member already carries such a map, its sparse map (member.h), so an
 * image is reported as ONE member, the virtual disk, whose data is the image file itself
 * (stream 0, data_off 0) read through the map: an allocated cluster is an extent, an
 * unallocated or zero cluster a hole.  Reads then go through tarseek's reader as a tar
 * member's do (and, inside a .gz, decode only the checkpoint spans they need).
 *
 * The member is named after the image: "vm.qcow2" (or "vm.qcow2.gz") gives "vm.img", an
 * image whose name is unknown "disk.img"; named *.img, the -r nested pass looks inside it (a
 * partition table, a file system, an archive written on the disk).
 *
 * Untrusted input: the map is built in virtual-offset order (vd_map_add refuses anything
 * else), every extent must lie inside the image file and inside the virtual size, and the
 * extents together may not hold more bytes than the file does -- so what is allocated is
 * bounded by the file's size however the tables repeat themselves -- and no two extents may
 * share bytes of the file (vd_report checks: no writer makes such a map).  An image the parsers
 * cannot read (damaged tables, a backing file, encryption, compressed clusters) is still
 * reported: its member is listed with its size, unreadable, with the reason (vd_report).
 */
#ifndef TARSEEK_VDISK_H
#define TARSEEK_VDISK_H

#include <stdbool.h>
#include <stdint.h>

#include "containers/container.h"
#include "containers/extents.h"

/* The map being built.  Owns x. */
struct vd_map {
	struct extents x;
	uint64_t vsize;	 /* the virtual disk's size: extents are clipped to it */
	uint64_t fsize;	 /* the image file's: extents must lie inside it */
	uint64_t mapped; /* the sum of the extents' lengths (<= fsize) */
	uint64_t stored; /* the end of the furthest extent in the file */
	const char *err; /* after vd_map_add failed with -EIO: what was wrong */
};

void vd_map_init(struct vd_map *m, uint64_t vsize, uint64_t fsize);
void vd_map_free(struct vd_map *m);

/* Maps len bytes of the virtual disk at off to the image file's bytes at src (clipped to the
 * virtual size; merged with the previous extent when they continue it).  0; -EIO (m->err
 * says why) if off is before the end of the previous extent, the bytes lie outside the file,
 * or the map would hold more bytes than the file; -ENOMEM. */
int vd_map_add(struct vd_map *m, uint64_t off, uint64_t len, uint64_t src);

/* The member's name for an image named name (a path, or NULL): malloc'd, NULL on ENOMEM. */
char *vd_member_name(const char *name);

/* Reports the virtual disk of vsize bytes: read through map (NULL: all holes) when
 * unreadable is 0, else listed unreadable (-EIO damaged, -EOPNOTSUPP, -EACCES) with why,
 * which is also logged (damage at warning level: st->damaged is set).  mtime: the image's,
 * or 0 when it says none (the member then has the image file's).  The sink's return. */
int vd_report(const struct cont_sink *sink, struct cont_stats *st, const struct vd_map *map,
	      uint64_t vsize, int64_t mtime, int unreadable, const char *why);

/* The most bytes of a table (qcow2's L1, VHD's BAT, ...) a parser reads whole; a larger one
 * is refused as damaged (each parser also bounds it by the file's size). */
#define VD_TABLE_MAX ((uint64_t)256 << 20)

extern const struct container cont_qcow2; /* qcow2.c */
extern const struct container cont_vhd;	  /* vhd.c: VHD fixed and dynamic */
extern const struct container cont_vhdx;  /* vhdx.c */
extern const struct container cont_vmdk;  /* vmdk.c: hosted sparse extents */

#endif
