/* SquashFS images (version 4, as mksquashfs and squashfs-tools-ng write them), read with
 * libsquashfs (squashfs-tools-ng; loaded when an image is first opened, sqfs_dl.h) over the
 * source: its superblock, id, fragment and xattr tables and its directory tree.  libsquashfs
 * decompresses the metadata through a compressor object of ours (sqfs_block.h), so every
 * compressor the superblock may name is read, lzo and lzma included, whatever libsquashfs
 * was built with.
 *
 * The files' data are streams of codec "squashfs" (codecs/squashfs/sqfs_codec.c): a file's
 * blocks, then its tail in a fragment block, as pieces.  A file with blocks has a stream of
 * its own; the small files whose bytes are all in one fragment block, met one after the
 * other in the tree's walk (the order mksquashfs wrote them), share one, which decodes that
 * block once.  So a damaged block fails the reads of the files that need it, never others'
 * (the index stops a stream at its first damage).  A file whose blocks do not add up to its
 * size is listed, its reads failing.  Hard links are inodes met again (by inode number).
 * Extended attributes come with their members.  The image's root folder is the mount's, as
 * for every archive: its owner, mode and time are not shown.
 *
 * The image is untrusted: libsquashfs checks what it reads (sizes, bounds, directory loops);
 * we bound what the tree's figures make us allocate and where the pieces lie.
 */
#include "containers/container.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codecs/pieces.h"
#include "codecs/squashfs/sqfs_block.h"
#include "common/byteio.h"
#include "common/log.h"
#include "containers/squashfs/sqfs_dl.h"
#include "containers/squashfs/sqfs_inodes.h"

#define SQF_REC 32
#define SQF_XATTRS_MAX 256
#define SQF_NOFRAG 0xFFFFFFFFu
#define SQF_UNCOMPRESSED ((uint32_t)1 << 24)

static char sqf_seen[] = ""; /* first[nr] once pass 1 has met inode nr (not allocated) */
#define SQF_SEEN sqf_seen

/* ---- libsquashfs over a source ---- */

struct sqf_file {
	sqfs_file_t base;
	struct src *in;
};

static int sqf_read_at(sqfs_file_t *f, sqfs_u64 off, void *buf, size_t len)
{
	struct src *in = ((struct sqf_file *)f)->in;
	int err = src_pread_full(in, buf, len, off);

	return err == 0 ? 0 : err == -ENOMEM ? SQFS_ERROR_ALLOC : SQFS_ERROR_OUT_OF_BOUNDS;
}

static int sqf_write_at(sqfs_file_t *f, sqfs_u64 off, const void *buf, size_t len)
{
	return SQFS_ERROR_UNSUPPORTED;
}

static sqfs_u64 sqf_get_size(const sqfs_file_t *f)
{
	return src_size(((const struct sqf_file *)f)->in);
}

static int sqf_truncate(sqfs_file_t *f, sqfs_u64 size)
{
	return SQFS_ERROR_UNSUPPORTED;
}

static void sqf_nop_destroy(sqfs_object_t *o)
{
}

static sqfs_object_t *sqf_no_copy(const sqfs_object_t *o)
{
	return NULL;
}

struct sqf_cmp {
	sqfs_compressor_t base;
	unsigned id;
	uint32_t block_size;
};

static void sqf_cmp_config(const sqfs_compressor_t *c, sqfs_compressor_config_t *cfg)
{
	const struct sqf_cmp *k = (const struct sqf_cmp *)c;

	memset(cfg, 0, sizeof(*cfg));
	cfg->id = (sqfs_u16)k->id;
	cfg->flags = SQFS_COMP_FLAG_UNCOMPRESS;
	cfg->block_size = k->block_size;
}

static int sqf_cmp_write_options(sqfs_compressor_t *c, sqfs_file_t *f)
{
	return SQFS_ERROR_UNSUPPORTED;
}

static int sqf_cmp_read_options(sqfs_compressor_t *c, sqfs_file_t *f)
{
	return 0; /* decompression needs none */
}

static sqfs_s32 sqf_cmp_block(sqfs_compressor_t *c, const sqfs_u8 *in, sqfs_u32 size,
			      sqfs_u8 *out, sqfs_u32 outsize)
{
	ssize_t n = sqfs_block_decode(((struct sqf_cmp *)c)->id, in, size, out, outsize);

	return n < 0 ? (n == -ENOMEM ? SQFS_ERROR_ALLOC : SQFS_ERROR_COMPRESSOR) : (sqfs_s32)n;
}

/* ---- the walk ---- */

/* Where a regular file's bytes are: stream number grp (sqf.gsid), from off; grp SIZE_MAX
 * when its blocks are damaged. */
struct sqf_loc {
	size_t grp;
	uint64_t off;
};

struct sqf {
	const char *name;
	struct sqf_file file;
	struct sqf_cmp cmp;
	sqfs_super_t super;
	sqfs_id_table_t *ids;
	sqfs_frag_table_t *frags;
	sqfs_xattr_reader_t *xr;
	sqfs_dir_reader_t *dr;
	sqfs_tree_node_t *root;
	/* the stream being built (pass 1): its params and decoded size; a file with blocks
	 * has one of its own, the files whose bytes are all in one fragment block share one */
	uint8_t *params;
	size_t plen, pcap;
	uint64_t usize;
	bool open;	    /* a stream is being built: number ngrp - 1 */
	uint32_t open_frag; /* the fragment block its files share, or SQF_NOFRAG */
	uint64_t *gsid;	    /* by stream number: the id the sink gave (0: no bytes) */
	size_t ngrp, gcap;
	struct sqf_loc *loc; /* per regular file in walk order */
	size_t nfiles, fcap;
	char **first;	    /* by inode number (1 ..< ninodes): the first path of a regular
			       file's inode, SQF_SEEN between the passes, NULL when not met */
	uint32_t ninodes;
	bool damaged;
};

static bool sqf_probe(struct src *in, const uint8_t *head, size_t len)
{
	return len >= 96 && memcmp(head, "hsqs", 4) == 0 && le16(head + 28) == 4;
}

static int sqf_piece(struct sqf *s, uint64_t size, uint64_t pos, uint32_t word, uint32_t skip,
		     uint32_t kind)
{
	uint8_t rec[SQF_REC] = {0};

	put_le64(rec, size);
	put_le64(rec + 8, pos);
	put_le32(rec + 16, word);
	put_le32(rec + 20, skip);
	put_le32(rec + 24, kind);
	s->usize += size;
	return pcs_params_add(&s->params, &s->plen, &s->pcap, rec, sizeof(rec));
}

/* The pieces of regular file ino: its blocks, its tail in a fragment.  1 if they add up
 * (the pieces added), 0 if the inode is damaged (nothing added), -errno. */
static int sqf_file_pieces(struct sqf *s, const sqfs_inode_generic_t *ino)
{
	uint64_t size = 0, pos = 0, img = src_size(s->file.in), bs = s->super.block_size;
	sqfs_u32 fidx = SQF_NOFRAG, foff = 0;
	size_t nb = sqfs_inode_get_file_block_count(ino);
	sqfs_fragment_t frag = {0};
	size_t plen = s->plen;
	uint64_t usize = s->usize;
	int err = 0;

	sym_sqfs_inode_get_file_size(ino, &size);
	sym_sqfs_inode_get_frag_location(ino, &fidx, &foff);
	sym_sqfs_inode_get_file_block_start(ino, &pos);
	bool has_frag = fidx != SQF_NOFRAG && size % bs;
	uint64_t in_blocks = has_frag ? size - size % bs : size;
	if ((in_blocks + bs - 1) / bs != nb)
		return 0;
	uint64_t zeros = 0; /* a run of holes (blocks of zeros), one piece however long */
	for (size_t i = 0; !err && i < nb; i++) {
		uint32_t word = ino->extra[i], disk = word & ~SQF_UNCOMPRESSED;
		uint64_t len = i + 1 < nb ? bs : in_blocks - i * bs;
		if (disk > bs || pos > img || disk > img - pos)
			goto bad;
		if (disk == 0) {
			zeros += len;
			continue;
		}
		if (zeros)
			err = sqf_piece(s, zeros, 0, 0, 0, 2);
		zeros = 0;
		err = err ? err : sqf_piece(s, len, pos, word, 0, 0);
		pos += disk;
	}
	if (!err && zeros)
		err = sqf_piece(s, zeros, 0, 0, 0, 2);
	if (!err && has_frag) {
		if (sym_sqfs_frag_table_lookup(s->frags, fidx, &frag) != 0)
			goto bad;
		err = sqf_piece(s, size % bs, frag.start_offset, frag.size, foff, 1);
	}
	return err ? err : 1;
bad:
	s->plen = plen; /* the pieces of this file are dropped */
	s->usize = usize;
	return 0;
}

/* The node after n in the walk (its children first when descend), or NULL at the end. */
static sqfs_tree_node_t *sqf_step(sqfs_tree_node_t *root, sqfs_tree_node_t *n, int *depth,
				  bool descend)
{
	if (descend && n->children) {
		(*depth)++;
		return n->children;
	}
	while (n != root && !n->next) {
		n = n->parent;
		(*depth)--;
	}
	return n == root ? NULL : n->next;
}

/* The walk's next node after n (NULL: the first), the same in every pass: a node without a
 * name is left out with what it holds (its path would be its parent's). */
static sqfs_tree_node_t *sqf_next(sqfs_tree_node_t *root, sqfs_tree_node_t *n, int *depth)
{
	n = n ? sqf_step(root, n, depth, true) : root->children;
	while (n && !n->name[0])
		n = sqf_step(root, n, depth, false);
	return n;
}

/* The stream being built declared to the sink (if it has bytes), and none open. */
static int sqf_flush(struct sqf *s, const struct cont_sink *sink)
{
	uint64_t sid = 0;
	int err = 0;

	if (!s->open)
		return 0;
	s->open = false;
	if (s->usize) {
		struct cont_stream cs = {.codec = "squashfs", .coff = 0,
					 .clen = src_size(s->file.in), .usize = s->usize,
					 .params = s->params, .params_len = s->plen};
		err = sink->stream(sink->opaque, &cs, &sid);
	}
	s->gsid[s->ngrp - 1] = sid;
	return err;
}

/* A stream open for a file whose bytes are all in fragment block frag (one its files
 * share), or SQF_NOFRAG (a file with blocks: a stream of its own). */
static int sqf_group(struct sqf *s, const struct cont_sink *sink, uint32_t frag)
{
	uint8_t hdr[8] = {0};
	int err;

	if (s->open && frag != SQF_NOFRAG && frag == s->open_frag)
		return 0;
	if ((err = sqf_flush(s, sink)))
		return err;
	if (s->ngrp == s->gcap) {
		size_t cap = s->gcap ? s->gcap * 2 : 64;
		uint64_t *p = realloc(s->gsid, cap * sizeof(*p));
		if (!p)
			return -ENOMEM;
		s->gsid = p;
		s->gcap = cap;
	}
	s->gsid[s->ngrp++] = 0;
	put_le32(hdr, s->cmp.id); /* le16 id, le16 0 */
	put_le32(hdr + 4, s->super.block_size);
	s->usize = 0;
	s->open = true;
	s->open_frag = frag;
	return pcs_params_start(&s->params, &s->plen, &s->pcap, hdr, sizeof(hdr));
}

/* Pass 1: the streams of the regular files, in walk order.  A stream per file, or per run
 * of small files in one fragment block: damage in one file's blocks fails that file's reads
 * (and those of the small files of a damaged fragment block), never the others'. */
static int sqf_pass1(struct sqf *s, const struct cont_sink *sink)
{
	int depth = 0, err = 0;

	for (sqfs_tree_node_t *n = sqf_next(s->root, NULL, &depth); !err && n;
	     n = sqf_next(s->root, n, &depth)) {
		const sqfs_inode_generic_t *ino = n->inode;
		uint32_t nr = ino->base.inode_number;
		if (ino->base.type != SQFS_INODE_FILE && ino->base.type != SQFS_INODE_EXT_FILE)
			continue;
		/* An inode met again is a hard link: its data is the first path's.  Keyed by
		 * number for every file (not only those whose nlink says so), so that a hostile
		 * tree naming one large inode many times lists its blocks once. */
		if (nr != 0 && nr < s->ninodes && s->first[nr])
			continue;
		if (s->nfiles == s->fcap) {
			size_t cap = s->fcap ? s->fcap * 2 : 256;
			struct sqf_loc *p = realloc(s->loc, cap * sizeof(*p));
			if (!p)
				return -ENOMEM;
			s->loc = p;
			s->fcap = cap;
		}
		struct sqf_loc *l = &s->loc[s->nfiles++];
		*l = (struct sqf_loc){.grp = SIZE_MAX};
		if (nr == 0 || nr >= s->ninodes) {
			tfs_log(TFS_LOG_ERR, "%s: a file of inode number %" PRIu32 ", beyond the %"
				PRIu32 " inodes: damaged", s->name, nr, s->ninodes - 1);
			s->damaged = true; /* listed, unreadable */
			continue;
		}
		s->first[nr] = SQF_SEEN; /* pass 2 keeps the path */
		sqfs_u32 fidx = SQF_NOFRAG, foff = 0;
		sym_sqfs_inode_get_frag_location(ino, &fidx, &foff);
		bool tail_only = sqfs_inode_get_file_block_count(ino) == 0 && fidx != SQF_NOFRAG;
		if ((err = sqf_group(s, sink, tail_only ? fidx : SQF_NOFRAG)))
			break;
		uint64_t at = s->usize;
		err = sqf_file_pieces(s, ino);
		if (err > 0)
			*l = (struct sqf_loc){.grp = s->ngrp - 1, .off = at};
		s->damaged |= err == 0;
		if (err >= 0)
			err = tail_only ? 0 : sqf_flush(s, sink);
	}
	return err ? err : sqf_flush(s, sink);
}

/* The extended attributes of ino into xa (names and values malloc'd, freed by the caller):
 * how many.  Damage leaves the rest out, with a notice. */
static size_t sqf_xattrs(struct sqf *s, const sqfs_inode_generic_t *ino, struct member_xattr *xa)
{
	sqfs_u32 idx = 0xFFFFFFFFu;
	sqfs_xattr_id_t desc;
	size_t n = 0;

	if (!s->xr || sym_sqfs_inode_get_xattr_index(ino, &idx) || idx == 0xFFFFFFFFu)
		return 0;
	if (sym_sqfs_xattr_reader_get_desc(s->xr, idx, &desc) ||
	    sym_sqfs_xattr_reader_seek_kv(s->xr, &desc))
		goto bad;
	for (sqfs_u32 i = 0; i < desc.count && n < SQF_XATTRS_MAX; i++) {
		sqfs_xattr_entry_t *key = NULL;
		sqfs_xattr_value_t *val = NULL;
		if (sym_sqfs_xattr_reader_read_key(s->xr, &key))
			goto bad;
		if (sym_sqfs_xattr_reader_read_value(s->xr, key, &val)) {
			sym_sqfs_free(key);
			goto bad;
		}
		const char *pre = sym_sqfs_get_xattr_prefix(key->type & SQFS_XATTR_PREFIX_MASK);
		char *name = NULL;
		uint8_t *v = malloc(val->size ? val->size : 1);
		/* libsquashfs 1.x hands the key back with its prefix ("user.comment"), size
		 * still the suffix's */
		if (pre && v && (name = strndup((const char *)key->key, strlen(pre) + key->size))) {
			memcpy(v, val->value, val->size);
			xa[n++] = (struct member_xattr){.name = name, .value = v, .len = val->size};
		} else {
			free(v);
		}
		sym_sqfs_free(key);
		sym_sqfs_free(val);
	}
	return n;
bad:
	tfs_log(TFS_LOG_NOTICE, "%s: inode %" PRIu32 ": its extended attributes are damaged: "
		"left out", s->name, ino->base.inode_number);
	return n;
}

static enum member_type sqf_type(unsigned type)
{
	switch (type) {
	case SQFS_INODE_DIR:
	case SQFS_INODE_EXT_DIR: return MEMBER_DIR;
	case SQFS_INODE_FILE:
	case SQFS_INODE_EXT_FILE: return MEMBER_REG;
	case SQFS_INODE_SLINK:
	case SQFS_INODE_EXT_SLINK: return MEMBER_SYMLINK;
	case SQFS_INODE_BDEV:
	case SQFS_INODE_EXT_BDEV: return MEMBER_BLK;
	case SQFS_INODE_CDEV:
	case SQFS_INODE_EXT_CDEV: return MEMBER_CHR;
	case SQFS_INODE_FIFO:
	case SQFS_INODE_EXT_FIFO: return MEMBER_FIFO;
	default: return (enum member_type)0; /* sockets: left out */
	}
}

/* One member for node n at path (its bytes filled in by the caller's walk), counted in *listed
 * (a socket is left out). */
static int sqf_member(struct sqf *s, sqfs_tree_node_t *n, char *path, size_t plen,
		      size_t *file, const struct cont_sink *sink, uint64_t *listed)
{
	const sqfs_inode_generic_t *ino = n->inode;
	struct arc_member m = {.path = (const uint8_t *)path, .path_len = plen,
			       .link = (const uint8_t *)"", .type = sqf_type(ino->base.type),
			       .mode = ino->base.mode & 07777, .uid = n->uid, .gid = n->gid,
			       .mtime_sec = ino->base.mod_time, .uname = "", .gname = ""};
	struct member_xattr xa[SQF_XATTRS_MAX];
	uint32_t nr = ino->base.inode_number;
	char *target = NULL;
	int err;

	if (!m.type) {
		tfs_log(TFS_LOG_NOTICE, "%s: %s is a socket: left out", s->name, path);
		return 0;
	}
	(*listed)++;
	if (m.type == MEMBER_REG && nr != 0 && nr < s->ninodes && s->first[nr] &&
	    s->first[nr] != SQF_SEEN) {
		m.type = MEMBER_HARDLINK; /* met before: a link to its first path */
		m.link = (const uint8_t *)s->first[nr];
		m.link_len = strlen(s->first[nr]);
		return sink->member(sink->opaque, &m);
	}
	if (m.type == MEMBER_REG) {
		struct sqf_loc l = *file < s->nfiles ? s->loc[(*file)++]
						     : (struct sqf_loc){.grp = SIZE_MAX};
		uint64_t size = 0;
		sym_sqfs_inode_get_file_size(ino, &size);
		m.size = m.stored = size;
		m.stream = size && l.grp != SIZE_MAX ? s->gsid[l.grp] : 0;
		m.data_off = l.off;
		if (l.grp == SIZE_MAX) {
			m.stream = 0;
			m.unreadable = -EIO;
			m.why = "its blocks do not add up to its size: damaged";
		}
		if (nr != 0 && nr < s->ninodes && s->first[nr] == SQF_SEEN) {
			/* its first path, for the links to it */
			if (!(s->first[nr] = strdup(path))) {
				s->first[nr] = SQF_SEEN;
				return -ENOMEM;
			}
		}
	} else if (m.type == MEMBER_SYMLINK) {
		target = strndup((const char *)ino->extra, ino->data.slink.target_size);
		if (!target)
			return -ENOMEM;
		m.link = (const uint8_t *)target;
		m.link_len = strlen(target);
	} else if (m.type == MEMBER_BLK || m.type == MEMBER_CHR) {
		uint32_t d = ino->base.type == SQFS_INODE_BDEV || ino->base.type == SQFS_INODE_CDEV
				     ? ino->data.dev.devno : ino->data.dev_ext.devno;
		m.dev_major = (d & 0xfff00) >> 8;
		m.dev_minor = (d & 0xff) | ((d >> 12) & 0xfff00);
	}
	m.nxattrs = sqf_xattrs(s, ino, xa);
	m.xattrs = m.nxattrs ? xa : NULL;
	err = sink->member(sink->opaque, &m);
	for (size_t i = 0; i < m.nxattrs; i++) {
		free((char *)xa[i].name);
		free((uint8_t *)xa[i].value);
	}
	free(target);
	return err;
}

/* Pass 2: the members, the walk again, paths built as it goes. */
static int sqf_pass2(struct sqf *s, const struct cont_sink *sink,
		     struct cont_stats *st)
{
	size_t cap = 256, *lens = NULL, lcap = 0, file = 0;
	char *path = malloc(cap);
	int depth = 0, err = path ? 0 : -ENOMEM;

	for (sqfs_tree_node_t *n = sqf_next(s->root, NULL, &depth); !err && n;
	     n = sqf_next(s->root, n, &depth)) {
		size_t base = depth ? lens[depth - 1] : 0, nl = strlen((const char *)n->name);
		if ((size_t)depth >= lcap) {
			size_t c = lcap ? lcap * 2 : 32;
			size_t *p = realloc(lens, c * sizeof(*p));
			if (!p) {
				err = -ENOMEM;
				break;
			}
			lens = p;
			lcap = c;
		}
		if (base + nl + 2 > cap) {
			while (base + nl + 2 > cap)
				cap *= 2;
			char *p = realloc(path, cap);
			if (!p) {
				err = -ENOMEM;
				break;
			}
			path = p;
		}
		if (depth)
			path[base++] = '/';
		memcpy(path + base, n->name, nl + 1);
		lens[depth] = base + nl;
		err = sqf_member(s, n, path, base + nl, &file, sink, &st->members);
		if (sink->progress)
			sink->progress(sink->opaque, 0);
	}
	free(lens);
	free(path);
	return err;
}

/* True if the superblock's fragment count and the xattr table's id count fit in the image:
 * libsquashfs allocates what they say (16 bytes an entry) before it reads a byte of the
 * table, so a hostile count of 2^32 would cost 64 GB.  Each entry names a block of its own
 * (at least a byte of the image), and the table's list of its metadata blocks (8 bytes for
 * every 512 entries) lies in the image. */
static bool sqf_tables_fit(struct sqf *s)
{
	uint64_t img = src_size(s->file.in);
	uint64_t n = s->super.fragment_entry_count;
	uint8_t h[16];

	if (n > img || (n && (s->super.fragment_table_start > img ||
			      (n + 511) / 512 * 8 > img - s->super.fragment_table_start)))
		return false;
	if ((s->super.flags & SQFS_FLAG_NO_XATTRS) || s->super.xattr_id_table_start == ~0ull)
		return true;
	if (s->super.xattr_id_table_start > img - sizeof(h) ||
	    src_pread_full(s->file.in, h, sizeof(h), s->super.xattr_id_table_start))
		return false;
	n = le32(h + 8);
	return n <= img && (n + 511) / 512 * 8 <= img - s->super.xattr_id_table_start - 16;
}

/* The tables and the tree.  0 or -errno (logged). */
static int sqf_open(struct sqf *s, struct src *in)
{
	const char *what = "its superblock";
	int r;

	s->file = (struct sqf_file){.base = {.base = {sqf_nop_destroy, sqf_no_copy},
					      .read_at = sqf_read_at, .write_at = sqf_write_at,
					      .get_size = sqf_get_size, .truncate = sqf_truncate},
				    .in = in};
	r = sym_sqfs_super_read(&s->super, &s->file.base);
	if (r)
		goto bad;
	if (!sqfs_block_supported(s->super.compression_id)) {
		tfs_log(TFS_LOG_ERR, "%s: SquashFS compressed with %s, which this build cannot "
			"decompress", s->name, sqfs_block_name(s->super.compression_id));
		return -ENOTSUP;
	}
	s->cmp = (struct sqf_cmp){.base = {.base = {sqf_nop_destroy, sqf_no_copy},
					   .get_configuration = sqf_cmp_config,
					   .write_options = sqf_cmp_write_options,
					   .read_options = sqf_cmp_read_options,
					   .do_block = sqf_cmp_block},
				  .id = s->super.compression_id, .block_size = s->super.block_size};
	what = "its table sizes";
	r = SQFS_ERROR_CORRUPTED;
	if (!sqf_tables_fit(s))
		goto bad;
	what = "its id table";
	s->ids = sym_sqfs_id_table_create(0);
	s->frags = sym_sqfs_frag_table_create(0);
	if (!s->ids || !s->frags)
		return -ENOMEM;
	if ((r = sym_sqfs_id_table_read(s->ids, &s->file.base, &s->super, &s->cmp.base)))
		goto bad;
	what = "its fragment table";
	if (s->super.fragment_entry_count &&
	    (r = sym_sqfs_frag_table_read(s->frags, &s->file.base, &s->super, &s->cmp.base)))
		goto bad;
	if (!(s->super.flags & SQFS_FLAG_NO_XATTRS) && s->super.xattr_id_table_start != ~0ull) {
		s->xr = sym_sqfs_xattr_reader_create(0);
		if (s->xr && sym_sqfs_xattr_reader_load(s->xr, &s->super, &s->file.base,
							&s->cmp.base)) {
			tfs_log(TFS_LOG_WARNING, "%s: its extended attributes table is damaged: "
				"none shown", s->name);
			sqfs_destroy(s->xr);
			s->xr = NULL;
		}
	}
	if ((r = sqfs_inodes_check(&s->file.base, &s->cmp.base, &s->super, s->name)))
		return r;
	what = "its directories";
	s->dr = sym_sqfs_dir_reader_create(&s->super, &s->cmp.base, &s->file.base, 0);
	if (!s->dr)
		return -ENOMEM;
	r = sym_sqfs_dir_reader_get_full_hierarchy(s->dr, s->ids, NULL, 0, &s->root);
	if (r)
		goto bad;
	/* inodes are numbered 1 .. inode_count, each met at least once in the tree: no more
	 * numbers than nodes, whatever the superblock says */
	uint64_t nodes = 1, named = 1; /* the root */
	int depth = 0;
	for (sqfs_tree_node_t *n = s->root->children; n; n = sqf_step(s->root, n, &depth, true))
		nodes++;
	depth = 0;
	for (sqfs_tree_node_t *n = sqf_next(s->root, NULL, &depth); n;
	     n = sqf_next(s->root, n, &depth))
		named++;
	if (named != nodes)
		tfs_log(TFS_LOG_WARNING, "%s: entries without a name: left out, with what they hold",
			s->name);
	if (nodes > s->super.inode_count)
		nodes = s->super.inode_count;
	s->ninodes = nodes < UINT32_MAX ? (uint32_t)nodes + 1 : UINT32_MAX;
	s->first = calloc(s->ninodes, sizeof(*s->first));
	return s->first ? 0 : -ENOMEM;
bad:
	if (r == SQFS_ERROR_ALLOC)
		return -ENOMEM;
	tfs_log(TFS_LOG_ERR, "%s: SquashFS image damaged: cannot read %s (libsquashfs error %d)",
		s->name, what, r);
	return -EIO;
}

static int sqf_parse(struct src *in, const struct cont_sink *sink, struct cont_stats *stats)
{
	struct cont_stats st = {0};
	struct sqf s = {.name = sink->name ? sink->name : "image"};
	int err = sqfs_dl_load();

	err = err ? err : sqf_open(&s, in);
	err = err ? err : sqf_pass1(&s, sink);
	err = err ? err : sqf_pass2(&s, sink, &st);
	if (s.damaged)
		tfs_log(TFS_LOG_WARNING, "%s: files whose blocks do not add up to their size: "
			"listed, their reads fail", s.name);
	st.damaged = s.damaged;
	if (stats)
		*stats = st;
	for (uint32_t i = 0; s.first && i < s.ninodes; i++)
		if (s.first[i] != SQF_SEEN)
			free(s.first[i]);
	free(s.first);
	free(s.loc);
	free(s.gsid);
	free(s.params);
	if (s.root)
		sym_sqfs_dir_tree_destroy(s.root);
	sqfs_destroy(s.dr);
	sqfs_destroy(s.xr);
	sqfs_destroy(s.frags);
	sqfs_destroy(s.ids);
	return err;
}

const struct container cont_squashfs = {
	.name = "squashfs",
	.probe = sqf_probe,
	.parse = sqf_parse,
};
