/* A member's sparse map (member.h's member_sparse) as a container builds it, extent by
 * extent, in the order of the member's bytes: the file systems and disk images (fat/, ntfs/,
 * vdisk/) whose files lie in runs of the image.
 */
#ifndef TARSEEK_EXTENTS_H
#define TARSEEK_EXTENTS_H

#include <stddef.h>
#include <stdint.h>

#include "containers/member.h"

/* Owned by its user: extents_free. */
struct extents {
	struct member_sparse *v;
	size_t n, cap;
};

/* Appends len bytes of the member at off, stored at src, merged into the last extent when it
 * continues it both in the member and in the data.  len 0 adds nothing.  0 or -ENOMEM. */
int extents_add(struct extents *x, uint64_t off, uint64_t len, uint64_t src);

void extents_free(struct extents *x);

#endif
