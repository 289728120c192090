/* Where a small NTFS file's bytes are: a resident unnamed $DATA attribute, whose value sits in
 * the file's MFT record, mapped to byte ranges of the image so that the file reads through
 * tarseek's reader like any other (ntfs.c calls it; libfsntfs says a file is resident -- no
 * extents -- but not where its value is).
 *
 * The MFT record is found through the $MFT's own extents; its header and attributes are read
 * here, as little of the format as that takes: the record's "FILE" signature, its update
 * sequence array (the fixups), the attribute list of the base record.  The fixups are why the
 * map may have more extents than the record has pieces: the last two bytes of every 512-byte
 * stride of a record are stored in the record's update sequence array and replaced on disk by
 * the update sequence number, so a value that crosses a stride boundary maps those two bytes
 * to their place in the array (a sparse map's extents may point anywhere).  ntfs.c checks the
 * bytes the map reads against libfsntfs's before it trusts a map.
 */
#ifndef TARSEEK_NTFS_RECORD_H
#define TARSEEK_NTFS_RECORD_H

#include <stddef.h>
#include <stdint.h>

#include "common/source.h"
#include "containers/member.h"
#include "containers/extents.h"

/* One run of the $MFT: the bytes [off, off + len) of the $MFT are at phys in the image. */
struct ntfs_run {
	uint64_t off;
	uint64_t len;
	uint64_t phys;
};

struct ntfs_mft {
	const struct ntfs_run *runs; /* in offset order, adjacent */
	size_t nruns;
	uint32_t rec_size; /* a record's size in bytes: 512 .. 65536, a multiple of 512 */
};

/* Maps the len bytes of the resident unnamed $DATA value of MFT record idx to the image
 * (appended to e, logical offsets from 0).  0; -EIO when the record is damaged (no "FILE",
 * bad fixups, attributes that overrun it, a value shorter than len), -ENOTSUP when the base
 * record holds no resident unnamed $DATA (it is in an extension record), -ENOMEM, or the
 * source's -errno.  *why says what, for the first two. */
int ntfs_resident_map(struct src *in, const struct ntfs_mft *mft, uint64_t idx, uint64_t len,
		      struct extents *e, const char **why);

#endif
