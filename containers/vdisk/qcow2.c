/* qcow2 images, versions 2 and 3 (QEMU's docs/interop/qcow2.txt): the container "qcow2",
 * one member, the virtual disk, read through a sparse map (vdisk.h).
 *
 * The format: a big-endian header ("QFI\xfb", version, the backing file's name, cluster_bits,
 * the virtual size, the encryption method, the L1 table's size and offset, refcounts and
 * snapshots -- which a reader of the active disk ignores -- and for version 3 the feature
 * bits and the compression type).  The disk is cut into clusters of 2^cluster_bits bytes; an
 * L1 entry points to an L2 table (one cluster of 8-byte entries), an L2 entry to the
 * cluster's data:
 *   - bits 9-55 the host offset of a standard cluster (0: unallocated, reads as zeros here
 *     since an image with a backing file is not read);
 *   - bit 0 (version 3) "reads as zeros", whatever the offset;
 *   - bit 62 a compressed cluster (deflate or zstd bytes of any length): not mapped -- the
 *     member's data is one sparse map over the file, with no room for a cluster decoded on
 *     its own -- the member is unreadable with a message saying how to convert the image.
 * Standard clusters are extents (adjacent ones merged), the rest holes.
 *
 * Refused with a reason, the member listed unreadable: a backing file (the data is partly
 * elsewhere), encryption (-EACCES), an external data file, extended L2 entries, unknown
 * incompatible features, compressed clusters (-EOPNOTSUPP); damage (-EIO): tables or
 * clusters outside the file or not aligned, more L2 tables than the file holds.
 */
#include "containers/vdisk/vdisk.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/byteio.h"
#include "common/log.h"

#define Q_MAGIC "QFI\xfb"
#define Q_HDR 112		     /* what is read of the header */
#define Q_OFF_MASK 0x00fffffffffffe00ull /* bits 9-55: a host offset */
#define Q_COMPRESSED (1ull << 62)
#define Q_ZERO 1ull
#define Q_INC_DIRTY 1ull	     /* refcounts may be wrong: ignored here anyway */
#define Q_INC_CORRUPT 2ull
#define Q_INC_DATA_FILE 4ull
#define Q_INC_COMPRESSION 8ull
#define Q_INC_EXTL2 16ull

struct qcow2 {
	struct src *in;
	const struct cont_sink *sink;
	const char *name;
	uint64_t fsize, vsize, l1_off, l1_size, csize;
	unsigned cbits, version;
	char why[200];
};

static bool q_probe(struct src *in, const uint8_t *h, size_t len)
{
	(void)in;
	return len >= 8 && !memcmp(h, Q_MAGIC, 4) && (be32(h + 4) == 2 || be32(h + 4) == 3);
}

/* Checks the header: 0 readable, or the member's unreadable code with q->why; -EINVAL if it
 * is no qcow2 header after all. */
static int q_header(struct qcow2 *q, const uint8_t *h)
{
	uint64_t backing = be64(h + 8), inc = 0;
	uint32_t blen = be32(h + 16);

	q->version = be32(h + 4);
	q->cbits = be32(h + 20);
	q->vsize = be64(h + 24);
	q->l1_size = be32(h + 36);
	q->l1_off = be64(h + 40);
	if (q->vsize > (1ull << 62)) {
		snprintf(q->why, sizeof(q->why), "a virtual size of %" PRIu64 " bytes: damaged",
			 q->vsize);
		q->vsize = 0;
		return -EIO;
	}
	if (q->cbits < 9 || q->cbits > 21) {
		snprintf(q->why, sizeof(q->why), "cluster_bits %u (9 to 21 allowed): damaged",
			 q->cbits);
		return -EIO;
	}
	q->csize = (uint64_t)1 << q->cbits;
	if (q->version == 3) {
		inc = be64(h + 72);
		uint32_t hlen = be32(h + 100);
		if (inc & Q_INC_COMPRESSION && hlen > 104 && h[104] > 1) {
			snprintf(q->why, sizeof(q->why), "compression type %u unknown", h[104]);
			return -EOPNOTSUPP;
		}
	}
	if (backing) {
		char bname[128] = "";
		if (blen && backing < q->fsize)
			src_pread(q->in, bname, blen < sizeof(bname) - 1 ? blen : sizeof(bname) - 1,
				  backing);
		for (size_t i = 0; bname[i]; i++)
			if ((unsigned char)bname[i] < ' ')
				bname[i] = '?';
		snprintf(q->why, sizeof(q->why), "a qcow2 over a backing file ('%.80s'): its data is "
			 "partly there (qemu-img convert -O qcow2 makes a whole one)", bname);
		return -EOPNOTSUPP;
	}
	if (be32(h + 32)) {
		snprintf(q->why, sizeof(q->why), "encrypted qcow2 (method %u)", be32(h + 32));
		return -EACCES;
	}
	if (inc & Q_INC_DATA_FILE) {
		snprintf(q->why, sizeof(q->why), "its data is in an external data file");
		return -EOPNOTSUPP;
	}
	if (inc & Q_INC_EXTL2) {
		snprintf(q->why, sizeof(q->why), "extended L2 entries (subclusters) not supported");
		return -EOPNOTSUPP;
	}
	if (inc & ~(Q_INC_DIRTY | Q_INC_CORRUPT | Q_INC_COMPRESSION)) {
		snprintf(q->why, sizeof(q->why), "incompatible features 0x%" PRIx64 " unknown",
			 inc);
		return -EOPNOTSUPP;
	}
	if (inc & Q_INC_CORRUPT)
		tfs_log(TFS_LOG_WARNING, "%s: qcow2 marked corrupt by qemu: read as it is", q->name);
	/* clusters of the virtual disk one L1 entry covers: csize / 8 L2 entries of csize */
	uint64_t per_l1 = (uint64_t)1 << (2 * q->cbits - 3);
	uint64_t need = q->vsize / per_l1 + (q->vsize % per_l1 != 0);
	if (q->l1_size < need || q->l1_size * 8 > VD_TABLE_MAX || q->l1_off % 8 ||
	    q->l1_off > q->fsize || q->l1_size * 8 > q->fsize - q->l1_off) {
		snprintf(q->why, sizeof(q->why), "the L1 table (%" PRIu64 " entries at %" PRIu64
			 ") does not fit the image or the disk: damaged", q->l1_size, q->l1_off);
		return -EIO;
	}
	return 0;
}

/* Maps the clusters of L2 table l2 (at host offset l2off), covering the disk from voff.
 * 0, the member's unreadable code with q->why, or -ENOMEM. */
static int q_l2(struct qcow2 *q, struct vd_map *m, const uint8_t *l2, uint64_t voff)
{
	for (uint64_t i = 0; i < q->csize / 8 && voff < q->vsize; i++, voff += q->csize) {
		uint64_t e = be64(l2 + 8 * i), host = e & Q_OFF_MASK;
		int err;

		if (e & Q_COMPRESSED) {
			snprintf(q->why, sizeof(q->why), "compressed qcow2 clusters: convert with "
				 "qemu-img convert -O qcow2 to read it");
			return -EOPNOTSUPP;
		}
		if ((q->version == 3 && e & Q_ZERO) || !host)
			continue;
		if (host % q->csize) {
			snprintf(q->why, sizeof(q->why), "the cluster at %" PRIu64 " of the disk is "
				 "at an unaligned offset %" PRIu64 ": damaged", voff, host);
			return -EIO;
		}
		err = vd_map_add(m, voff, q->csize, host);
		if (err == -EIO)
			snprintf(q->why, sizeof(q->why), "cluster at %" PRIu64 " of the disk: %s",
				 voff, m->err);
		if (err)
			return err;
	}
	return 0;
}

/* Walks the L1 table into m.  0, the member's unreadable code with q->why, or -errno of a
 * read (-EIO included) or -ENOMEM. */
static int q_map(struct qcow2 *q, struct vd_map *m, bool *io)
{
	uint64_t per_l1 = q->csize / 8 * q->csize, tables = 0;
	uint8_t *l1 = malloc(q->l1_size * 8 + 1), *l2 = malloc(q->csize);
	int err = -ENOMEM;

	*io = false;
	if (!l1 || !l2)
		goto out;
	err = src_pread_full(q->in, l1, q->l1_size * 8, q->l1_off);
	if (err) {
		*io = true;
		goto out;
	}
	for (uint64_t i = 0; i < q->l1_size && i * per_l1 < q->vsize; i++) {
		uint64_t off = be64(l1 + 8 * i) & Q_OFF_MASK;

		if (!off)
			continue;
		if (off % q->csize || off > q->fsize || q->csize > q->fsize - off ||
		    ++tables > q->fsize / q->csize) {
			snprintf(q->why, sizeof(q->why), "L1 entry %" PRIu64 ": its L2 table (at %"
				 PRIu64 ") %s: damaged", i, off, off % q->csize ? "is not aligned" :
				 tables > q->fsize / q->csize ? "is one too many" : "lies past the end");
			err = -EIO;
			goto out;
		}
		err = src_pread_full(q->in, l2, q->csize, off);
		if (err) {
			*io = true;
			goto out;
		}
		err = q_l2(q, m, l2, i * per_l1);
		if (err)
			goto out;
		if (q->sink->progress)
			q->sink->progress(q->sink->opaque, off);
	}
out:
	free(l1);
	free(l2);
	return err;
}

static int q_parse(struct src *in, const struct cont_sink *sink, struct cont_stats *st)
{
	struct qcow2 q = {.in = in, .sink = sink, .name = sink->name ? sink->name : "image",
			  .fsize = src_size(in)};
	uint8_t h[Q_HDR] = {0};
	struct vd_map m;
	bool io;
	ssize_t got = src_pread(in, h, sizeof(h), 0);
	int err;

	if (got < 0)
		return (int)got;
	if (got < 72 || !q_probe(in, h, (size_t)got)) {
		tfs_log(TFS_LOG_ERR, "%s: not a qcow2 image", q.name);
		return -EINVAL;
	}
	err = q_header(&q, h);
	if (err)
		return vd_report(sink, st, NULL, q.vsize, 0, err, q.why);
	vd_map_init(&m, q.vsize, q.fsize);
	err = q_map(&q, &m, &io);
	if (io && err == -EIO)
		snprintf(q.why, sizeof(q.why), "its tables lie past the end of the file "
			 "(truncated)");
	else if (io || err == -ENOMEM)
		goto out;
	err = vd_report(sink, st, &m, q.vsize, 0, err, q.why);
out:
	vd_map_free(&m);
	return err;
}

const struct container cont_qcow2 = {
	.name = "qcow2",
	.probe = q_probe,
	.parse = q_parse,
};
