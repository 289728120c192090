/* What the parts of the tar parser share (tar.c the parse loop and member headers, tar_pax.c
 * PAX and GNU long-name headers, tar_sparse.c sparse maps, tar_xattr.c extended attributes,
 * tar_util.c the helpers under them all): the limits, the header layout, the parser's state
 * and the functions one part calls in another.  Private to containers/tar/; tar.h is the
 * parser's contract.
 *
 * The calls go one way, down: tar.c calls tar_pax.c, tar_sparse.c and tar_xattr.c;
 * tar_pax.c calls tar_sparse.c (the GNU.sparse keywords); every part calls tar_util.c, which
 * calls none of them.  Each takes the parser (its source, its state) as a parameter.
 */
#ifndef TARSEEK_TAR_INT_H
#define TARSEEK_TAR_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "containers/tar/tar.h"

/* The longest L/K name or x/g payload: GNU tar has no limit, bsdtar stops at 1 MiB, real
 * headers stay under a few MiB (macOS resource forks as xattrs). */
#define TAR_MAX_META (64u << 20)
#define TAR_MAX_SPARSE (1u << 20)    /* most extents in one sparse map (16 MiB of member_sparse) */
#define TAR_MAX_XATTRS 4096	     /* most xattr records per member */
#define TAR_MAX_GLOBAL 256	     /* most distinct keywords kept from g headers */
#define TAR_PROGRESS_EVERY 256	     /* members between progress calls */
#define TAR_PROBE_ZEROS (256u << 10) /* tar_probe reads at most this many leading zeros */
#define TAR_LOOKAHEAD (1u << 20)     /* bytes looked at after the end-of-archive marker */

/* Header fields: offset and length.  POSIX ustar; GNU and star variants noted. */
#define H_NAME 0 /* 100 */
#define H_MODE 100
#define H_UID 108
#define H_GID 116
#define H_SIZE 124  /* 12 */
#define H_MTIME 136 /* 12 */
#define H_CHKSUM 148
#define H_TYPE 156
#define H_LINK 157 /* 100 */
#define H_MAGIC 257
#define H_UNAME 265 /* 32 */
#define H_GNAME 297 /* 32 */
#define H_DEVMAJOR 329
#define H_DEVMINOR 337
#define H_PREFIX 345	 /* ustar: 155 bytes; star: 131 bytes, then atime/ctime */
#define H_STAR_MAGIC 508 /* star: "tar\0" */
#define G_SPARSE 386	 /* GNU: 4 x (offset[12], numbytes[12]) */
#define G_ISEXT 482	 /* GNU: an extension block follows */
#define G_REALSIZE 483	 /* GNU: 12 */
#define G_EXT_ISEXT 504	 /* GNU extension block: 21 entries, then isextended */

_Static_assert(TAR_BLOCK == 512, "tar blocks are 512 bytes");
_Static_assert(G_SPARSE + 4 * 24 == G_ISEXT, "old GNU sparse header layout");
_Static_assert(21 * 24 == G_EXT_ISEXT, "old GNU sparse extension layout");

/* One PAX record "key=value": offsets into the payload buffer of its set. */
struct pax_rec {
	size_t koff, klen, voff, vlen;
};

/* The records of x headers (one member) or of g headers (all later members). */
struct pax_set {
	struct tbuf data;
	struct pax_rec *rec;
	size_t n, cap;
};

/* An xattr record as found (name and value still encoded for LIBARCHIVE.xattr.*). */
struct xref {
	const uint8_t *name, *val;
	size_t nlen, vlen;
	bool encoded;
};

/* A decoded xattr: offsets into parser.xdata. */
struct xtmp {
	size_t noff, voff, vlen;
};

enum {
	A_PATH = 1 << 0,
	A_LINK = 1 << 1,
	A_SIZE = 1 << 2,
	A_UID = 1 << 3,
	A_GID = 1 << 4,
	A_UNAME = 1 << 5,
	A_GNAME = 1 << 6,
	A_MTIME = 1 << 7,
	A_DEVMAJOR = 1 << 8,
	A_DEVMINOR = 1 << 9,
	A_SPNAME = 1 << 10,
	A_SPREAL = 1 << 11,
	A_SPMAJOR = 1 << 12,
	A_SPMINOR = 1 << 13,
	A_SPNBLOCKS = 1 << 14,
};

/* What the PAX records of one member say.  String pointers point into the pax sets, which
 * do not change while the member is built. */
struct pax_attrs {
	unsigned has; /* A_* */
	const uint8_t *path, *link, *uname, *gname, *spname;
	size_t path_len, link_len, uname_len, gname_len, spname_len;
	uint64_t size, uid, gid, devmajor, devminor;
	int64_t mtime_sec;
	uint32_t mtime_nsec;
	uint64_t sp_real, sp_major, sp_minor, sp_nblocks;
	bool sp_old;	    /* a GNU sparse 0.0/0.1 keyword was seen */
	bool sp_want_bytes; /* GNU.sparse.offset seen, its numbytes not yet */
};

struct parser {
	struct src *s;
	const struct tar_callbacks *cb;
	struct tar_stats st;
	uint64_t srcsize; /* src_size(), maybe SRC_SIZE_UNKNOWN */
	uint64_t off;	  /* next block to look at */
	uint64_t rpos;	  /* end of the last read: no read may start before it */
	bool seen_header; /* a valid header has been seen */
	bool after_end;	  /* zero blocks seen since the last header */
	bool resync;	  /* looking for a valid header after a bad one */
	uint8_t blk[TAR_BLOCK];
	uint8_t peek[TAR_BLOCK]; /* a block read ahead at peek_off (peek_len bytes of it) */
	uint64_t peek_off;
	size_t peek_len;
	bool has_peek;

	/* The member being assembled from its header blocks. */
	bool in_member;
	bool damaged; /* skip it (the reason was logged) */
	uint64_t m_off;
	struct tbuf longname, longlink;
	bool has_longname, has_longlink;
	struct pax_set local, global, gnew;

	/* Built per member, reused. */
	struct member_sparse *sp;
	size_t nsp, capsp;
	struct xref *xr;
	size_t nxr, capxr;
	bool xr_warned;
	struct tbuf xdata;
	struct xtmp *xt;
	size_t capxt;
	struct member_xattr *xa;
	size_t capxa;
	struct tbuf path, link, uname, gname;
};

static inline uint64_t pad_block(uint64_t n)
{
	return (n + TAR_BLOCK - 1) & ~(uint64_t)(TAR_BLOCK - 1);
}

static inline bool is_zero(const uint8_t *b, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (b[i])
			return false;
	return true;
}

/* The headers that carry a member's metadata in their data (tar_meta). */
enum meta_kind { META_LONGNAME, META_LONGLINK, META_PAX, META_GLOBAL };

/* tar_util.c, the leaf: buffers (tar.h's tbuf, tar_grow for arrays: 0 or -ENOMEM), numbers
 * (tar_num_field: a header field as GNU tar reads it, 0, -EINVAL or -ERANGE; tar_dec_u64: a
 * PAX decimal of at most max, 0 or -EINVAL), reading and damage.  tar_read never reads
 * behind the previous read (the source may be a forward-only stream); tar_truncated and
 * tar_damage log, mark the member and return what the caller returns (0 / -EINVAL). */
int tar_grow(void **arr, size_t *cap, size_t want, size_t elem);
const char *tar_printable(const uint8_t *s, size_t n, char *out, size_t outsz);
int tar_num_field(const uint8_t *f, size_t n, int64_t *out);
int tar_dec_u64(const uint8_t *v, size_t n, uint64_t max, uint64_t *out);
ssize_t tar_read(struct parser *p, void *buf, size_t len, uint64_t off);
bool tar_past_end(const struct parser *p, uint64_t start, uint64_t len);
void tar_member_start(struct parser *p, uint64_t off);
void tar_member_reset(struct parser *p);
int tar_truncated(struct parser *p, uint64_t hoff, uint64_t need);
int tar_damage(struct parser *p, const char *msg);

/* tar_pax.c: the PAX records replayed into a (global first), and the metadata headers
 * (L, K, x, g: 1 to go on, 0 truncated, -errno). */
int tar_pax_replay(struct parser *p, struct pax_attrs *a);
int tar_meta(struct parser *p, uint64_t hoff, uint64_t size, enum meta_kind kind);
void tar_pax_set_free(struct pax_set *ps);

/* tar_sparse.c: building a member's map in p->sp (0, -EINVAL damaged, -ENOMEM; the
 * header-reading ones 1 to go on, 0 truncated) and putting it right (tar_sparse_finish). */
int tar_sparse_push(struct parser *p, uint64_t off, uint64_t len);
int tar_sparse_map01(struct parser *p, const uint8_t *v, size_t n);
int tar_gnu_sparse(struct parser *p, const uint8_t *h, uint64_t hoff, uint64_t *start);
int tar_sparse1_map(struct parser *p, uint64_t hoff, uint64_t start, uint64_t stored_total,
		    uint64_t *map_bytes);
int tar_sparse_finish(struct parser *p, uint64_t *real, bool have_real, uint64_t stored);

/* tar_xattr.c: the member's xattr records decoded into p->xa (*count of them). */
int tar_xattrs_build(struct parser *p, size_t *count);

#endif
