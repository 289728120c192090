/* The FAT container's shared state (fat.c: the boot sector, the FAT and cluster chains;
 * fat_dir.c: the directory walk and the names).  Internal to containers/fat/. */
#ifndef TARSEEK_FAT_INT_H
#define TARSEEK_FAT_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "containers/container.h"
#include "containers/extents.h"

#define FAT_DIR_MAX ((uint64_t)2 << 20) /* a directory holds at most 65536 entries (the spec) */

struct fat {
	struct src *in;
	const struct cont_sink *sink;
	const char *name; /* the volume's, for messages */
	uint64_t size;	  /* of the volume (the source) */
	unsigned type;	  /* 12, 16 or 32: by the count of clusters, as the spec says */
	uint32_t bps;	  /* bytes per sector */
	uint32_t csize;	  /* bytes per cluster */
	uint32_t count;	  /* clusters: 2 .. count + 1 are the data region's */
	uint64_t data;	  /* byte offset of cluster 2 */
	uint64_t root_off; /* FAT12/16: the fixed root directory, root_len bytes */
	uint64_t root_len;
	uint32_t root_cluster; /* FAT32: the root directory's first cluster */
	uint8_t *fat;	       /* the active FAT as far as the volume holds it */
	size_t fat_len;
	uint8_t *used; /* a bit per cluster: in a chain already followed (loops, sharing) */
	uint64_t mapped; /* clusters (from 0) whose data the volume holds, at least in part */
	struct extents x; /* the chain fat_chain last followed, as extents */
	uint64_t members;
	bool damaged;
};

/* The extents of the chain from cluster first into f->x: its first len bytes for a file
 * (the clusters it needs; the last extent cut to len), every cluster up to the end of the
 * chain for a directory (dir: len is then a bound, FAT_DIR_MAX).  Each cluster is marked
 * used.  0, or -EIO with *why (a chain too short, that loops or meets another's cluster,
 * points outside the FAT, a free or bad cluster, data past the end of the volume), or
 * -ENOMEM.  A directory's chain that goes wrong ends there (0, *why set, f->damaged). */
int fat_chain(struct fat *f, uint32_t first, uint64_t len, bool dir, const char **why);

/* Walks the directory tree from the root and reports every file and folder. 0 or -errno. */
int fat_walk(struct fat *f);

#endif
