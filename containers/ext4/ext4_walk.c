/* The walk of an ext2/3/4 file system (ext4_int.h): every folder from the root, depth first,
 * each entry reported as a member with the path from the root.
 *
 * Folders are read block by block through the inode's map (ext4_map.c) -- not with
 * ext2fs_dir_iterate, whose block walk cannot be stopped by its callback while it skips empty
 * pointers -- and their entries parsed here with every length checked; an htree folder reads
 * the same way (its index blocks hold one empty entry).  Inline-data folders go through
 * ext2fs_dir_iterate2, which has no block walk for them.
 *
 * Bounds: a folder reached a second time (a loop, or a hard link to a folder) is left out; a
 * folder deeper than EXT4_DEPTH_MAX is listed but not entered; a path longer than
 * EXT4_PATH_MAX is left out; a folder lists at most EXT4_DIR_MAX entries; every entry and
 * every folder block costs one unit of the walk's budget; the paths reported are at most 64
 * an inode (hard links: a backup tree of snapshots has many).  The types the
 * inode's mode says, not the entry's file-type byte, decide what a member is.
 */
#include "containers/ext4/ext4_int.h"
#include "containers/ext4/ext4_dl.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "common/byteio.h"
#include "common/hash.h"
#include "common/log.h"

/* The first path of an inode with several links (ext4.links). */
struct ext4_link {
	struct htable_node node;
	ext2_ino_t ino;
	size_t len;
	char path[];
};

/* One entry of a folder: a name (in the names buffer) and an inode. */
struct dent {
	ext2_ino_t ino;
	uint32_t name_off;
	uint8_t name_len;
};

struct dir {
	struct dent *d;
	size_t n, cap;
	uint8_t *names;
	size_t names_len, names_cap;
	bool full; /* EXT4_DIR_MAX reached (said once) */
};

static int walk_dir(struct ext4 *e, ext2_ino_t ino, int depth);

static uint64_t link_hash(ext2_ino_t ino)
{
	return hash_u64((uint64_t)ino);
}

static int dir_add(struct ext4 *e, struct dir *d, ext2_ino_t ino, const uint8_t *name, size_t len)
{
	if (!ext4_spend(e, 1))
		return EXT4_STOP;
	if ((len == 1 && name[0] == '.') || (len == 2 && name[0] == '.' && name[1] == '.'))
		return 0;
	if (d->n == EXT4_DIR_MAX) {
		if (!d->full)
			ext4_damage(e, "%s: a folder of more than %u entries; the rest are left out",
				    e->name, EXT4_DIR_MAX);
		d->full = true;
		return 0;
	}
	if (d->n == d->cap) {
		size_t cap = d->cap ? d->cap * 2 : 32;
		struct dent *n = realloc(d->d, cap * sizeof(*n));

		if (!n)
			return -ENOMEM;
		d->d = n;
		d->cap = cap;
	}
	if (d->names_len + len > d->names_cap) {
		size_t cap = d->names_cap ? d->names_cap * 2 : 1024;
		uint8_t *n;

		while (cap < d->names_len + len)
			cap *= 2;
		n = realloc(d->names, cap);
		if (!n)
			return -ENOMEM;
		d->names = n;
		d->names_cap = cap;
	}
	if (d->names_len > UINT32_MAX - len)
		return EXT4_STOP;
	memcpy(d->names + d->names_len, name, len);
	d->d[d->n++] = (struct dent){.ino = ino, .name_off = (uint32_t)d->names_len,
				     .name_len = (uint8_t)len};
	d->names_len += len;
	return 0;
}

/* The entries of one folder block (bs bytes in e->block).  0, -ENOMEM, EXT4_STOP. */
static int dir_block(struct ext4 *e, struct dir *d, ext2_ino_t dino, uint64_t lblk)
{
	uint64_t off = 0;
	int err;

	while (off + 8 <= e->bs) {
		struct ext2_dir_entry *de = (struct ext2_dir_entry *)(e->block + off);
		unsigned int rec_len;
		uint32_t ino = le32(e->block + off);
		size_t nlen = e->block[off + 6];

		if (sym_ext2fs_get_rec_len(e->fs, de, &rec_len) || rec_len < 8 || rec_len & 3 ||
		    rec_len > e->bs - off || nlen + 8 > rec_len) {
			ext4_damage(e, "%s: folder inode %u: block %" PRIu64 " is damaged at byte %"
				    PRIu64 "; its other entries are left out", e->name, dino, lblk,
				    off);
			return 0;
		}
		if (ino && nlen) {
			err = dir_add(e, d, ino, e->block + off + 8, nlen);
			if (err)
				return err;
		}
		off += rec_len;
	}
	return 0;
}

struct inline_ctx {
	struct ext4 *e;
	struct dir *d;
	int err;
};

static int inline_entry(ext2_ino_t dir, int entry, struct ext2_dir_entry *de, int offset,
			int blocksize, char *buf, void *priv)
{
	struct inline_ctx *c = priv;
	/* ext2fs_dirent_name_len, which is inline in ext2fs.h only when optimising: without, a
	 * call into the library, which is loaded at run time (ext4_dl.h) */
	size_t nlen = de->name_len & 0xff;

	if (!de->inode || !nlen)
		return 0;
	c->err = dir_add(c->e, c->d, de->inode, (const uint8_t *)de->name, nlen);
	return c->err ? DIRENT_ABORT : 0;
}

/* Every entry of folder ino into d.  0, -ENOMEM, EXT4_STOP, a source error; damage is logged
 * and what could be read is kept. */
static int dir_read(struct ext4 *e, ext2_ino_t ino, struct ext2_inode *inode, struct dir *d)
{
	uint64_t size = EXT2_I_SIZE(inode), end = size / e->bs + (size % e->bs != 0);
	const char *why;
	errcode_t rc;
	int err;

	if (inode->i_flags & EXT4_INLINE_DATA_FL) {
		struct inline_ctx c = {.e = e, .d = d};

		rc = sym_ext2fs_dir_iterate2(e->fs, ino, DIRENT_FLAG_INCLUDE_INLINE_DATA, NULL,
					 inline_entry, &c);
		if (c.err)
			return c.err;
		if (rc)
			ext4_damage(e, "%s: folder inode %u: its inline entries cannot be read (%s)",
				    e->name, ino, sym_error_message(rc));
		return 0;
	}
	err = ext4_map(e, ino, inode, end, &why);
	if (err == -EIO) {
		ext4_damage(e, "%s: folder inode %u: %s; its entries are left out", e->name, ino,
			    why);
		return 0;
	}
	if (err)
		return err;
	/* e->runs stay this folder's while its blocks are read: the entries are walked after */
	for (size_t i = 0; !err && i < e->nruns; i++) {
		const struct ext4_run *r = &e->runs[i];

		for (uint64_t b = 0; !err && b < r->len; b++) {
			if (!ext4_spend(e, 1))
				return EXT4_STOP;
			rc = sym_ext2fs_read_dir_block4(e->fs, r->pblk + b, e->block, 0, ino);
			if (rc == 0 || rc == EXT2_ET_DIR_CSUM_INVALID) {
				err = dir_block(e, d, ino, r->lblk + b);
			} else if (ext4_io_err_fatal(e)) {
				err = ext4_err(e, rc);
			} else {
				ext4_damage(e, "%s: folder inode %u: block %" PRIu64 " cannot be read "
					    "(%s)", e->name, ino, r->lblk + b, sym_error_message(rc));
			}
		}
	}
	return err;
}

/* The fields every member has, from the inode. */
static void member_common(struct ext4 *e, struct arc_member *m, const struct ext2_inode_large *in)
{
	const struct ext2_inode *i = (const struct ext2_inode *)in;
	uint32_t extra = 0;

	m->path = (const uint8_t *)e->path;
	m->path_len = e->plen;
	m->link = (const uint8_t *)"";
	m->uname = m->gname = "";
	m->mode = i->i_mode & 07777;
	m->uid = inode_uid(*i);
	m->gid = inode_gid(*i);
	m->mtime_sec = (int32_t)i->i_mtime;
	if (EXT2_INODE_SIZE(e->fs->super) > EXT2_GOOD_OLD_INODE_SIZE &&
	    in->i_extra_isize >= offsetof(struct ext2_inode_large, i_mtime_extra) + 4 -
				 EXT2_GOOD_OLD_INODE_SIZE) {
		extra = in->i_mtime_extra;
		m->mtime_sec += (int64_t)(extra & 3) << 32;
		m->mtime_nsec = extra >> 2;
		if (m->mtime_nsec >= 1000000000u)
			m->mtime_nsec = 0;
	}
}

static int report(struct ext4 *e, const struct arc_member *m)
{
	if (e->st.members == e->members_max) {
		ext4_damage(e, "%s: more than %" PRIu64 " paths for %" PRIu64 " inodes (a loop?); "
			    "the listing stops here", e->name, e->members_max, e->inodes);
		return EXT4_STOP;
	}
	e->st.members++;
	return e->sink->member(e->sink->opaque, m);
}

/* A regular file's map: into m (in place when it is one run from 0, else sparse).  0, -ENOMEM,
 * EXT4_STOP; damage makes the member unreadable. */
static int file_map(struct ext4 *e, ext2_ino_t ino, struct ext2_inode *inode, struct arc_member *m)
{
	uint64_t size = m->size, end = size / e->bs + (size % e->bs != 0), stored = 0;
	const char *why = NULL;
	size_t n = 0;
	int err;

	if (inode->i_flags & EXT4_ENCRYPT_FL) {
		m->unreadable = -EACCES;
		m->why = "encrypted (fscrypt)";
		return 0;
	}
	if (inode->i_flags & EXT4_INLINE_DATA_FL) {
		err = ext4_map_inline(e, ino, size, &n, &why);
	} else {
		err = ext4_map(e, ino, inode, end, &why);
		if (!err && (e->nruns > e->sparse_cap || !e->sparse)) {
			/* at least one: an all-hole file has a map, with no extent */
			size_t cap = e->nruns ? e->nruns : 1;
			struct member_sparse *s = realloc(e->sparse, cap * sizeof(*s));

			if (!s)
				return -ENOMEM;
			e->sparse = s;
			e->sparse_cap = cap;
		}
		for (size_t i = 0; !err && i < e->nruns; i++) {
			uint64_t off = e->runs[i].lblk * e->bs, len = e->runs[i].len * e->bs;

			if (off >= size)
				break;
			e->sparse[n++] = (struct member_sparse){
				.off = off, .len = len < size - off ? len : size - off,
				.src = e->runs[i].pblk * e->bs};
		}
	}
	if (err == -EIO || err == -EOPNOTSUPP) {
		ext4_damage(e, "%s: '%s': %s; it cannot be read", e->name, e->path, why);
		m->unreadable = err;
		m->why = why;
		return 0;
	}
	if (err)
		return err;
	for (size_t i = 0; i < n; i++) {
		if (e->sparse[i].src + e->sparse[i].len > stored)
			stored = e->sparse[i].src + e->sparse[i].len;
	}
	if (n == 1 && e->sparse[0].off == 0 && e->sparse[0].len == size) {
		m->data_off = e->sparse[0].src; /* one run: read in place */
		m->stored = size;
	} else if (size) {
		m->sparse = e->sparse;
		m->nsparse = n;
		m->stored = stored;
	}
	return 0;
}

/* A symlink's target into e->block (NUL-terminated): its length; 0 when the symlink is left
 * out (damage, logged); -ENOMEM or a source error. */
static ssize_t link_target(struct ext4 *e, ext2_ino_t ino, struct ext2_inode *inode)
{
	uint64_t size = EXT2_I_SIZE(inode);
	const char *why = NULL;
	size_t n = 0;
	int err = 0;

	if (size == 0 || size >= e->bs || size > EXT4_LINK_MAX) {
		why = "its target's length makes no sense";
	} else if (inode->i_flags & EXT4_ENCRYPT_FL) {
		why = "it is encrypted (fscrypt)";
	} else if (inode->i_flags & EXT4_INLINE_DATA_FL) {
		err = ext4_map_inline(e, ino, size, &n, &why);
		if (!err)
			memset(e->block, 0, (size_t)size); /* past the inline bytes: zeros */
		for (size_t i = 0; !err && i < n; i++)
			err = src_pread_full(e->in, e->block + e->sparse[i].off,
					     (size_t)e->sparse[i].len, e->sparse[i].src);
	} else if (sym_ext2fs_is_fast_symlink(inode)) {
		memcpy(e->block, inode->i_block, (size_t)size);
	} else {
		err = ext4_map(e, ino, inode, 1, &why);
		if (!err && (e->nruns != 1 || e->runs[0].lblk != 0))
			err = -EIO, why = "its target's block is missing";
		if (!err)
			err = src_pread_full(e->in, e->block, (size_t)size, e->runs[0].pblk * e->bs);
	}
	if (why && (!err || err == -EIO || err == -EOPNOTSUPP)) {
		ext4_damage(e, "%s: symlink '%s': %s; left out", e->name, e->path, why);
		return 0;
	}
	if (err)
		return err;
	e->block[size] = '\0';
	n = strlen((const char *)e->block);
	if (n == 0)
		ext4_damage(e, "%s: symlink '%s': its target is empty; left out", e->name, e->path);
	return (ssize_t)n;
}

/* An inode with several links already reported under another path: m becomes a hard link to
 * that path (true). */
static bool link_find(struct ext4 *e, ext2_ino_t ino, struct arc_member *m)
{
	uint64_t h = link_hash(ino);

	for (struct htable_node *n = htable_first(&e->links, h); n; n = htable_next(n)) {
		struct ext4_link *l = htable_entry(n, struct ext4_link, node);

		if (l->ino == ino) {
			m->type = MEMBER_HARDLINK;
			m->link = (const uint8_t *)l->path;
			m->link_len = l->len;
			return true;
		}
	}
	return false;
}

/* Remembers e->path as the path of inode ino, reported.  0 or -ENOMEM. */
static int link_add(struct ext4 *e, ext2_ino_t ino)
{
	struct ext4_link *l = malloc(sizeof(*l) + e->plen + 1);

	if (!l)
		return -ENOMEM;
	l->ino = ino;
	l->len = e->plen;
	memcpy(l->path, e->path, e->plen + 1);
	if (htable_add(&e->links, &l->node, link_hash(ino))) {
		free(l);
		return -ENOMEM;
	}
	return 0;
}

/* The member at e->path, inode ino, reached at depth; a folder is walked. */
static int walk_entry(struct ext4 *e, ext2_ino_t ino, int depth)
{
	struct ext2_inode_large *big = (struct ext2_inode_large *)e->inode;
	struct ext2_inode *inode = (struct ext2_inode *)e->inode;
	size_t isz = EXT2_INODE_SIZE(e->fs->super);
	struct arc_member m = {0};
	unsigned int fmt;
	bool linked;
	errcode_t rc;
	ssize_t ln;
	int err = 0;

	if (ino < 1 || ino > e->inodes ||
	    (ino < EXT2_FIRST_INO(e->fs->super) && ino != EXT2_ROOT_INO)) {
		ext4_damage(e, "%s: '%s' names inode %u, which is not a file's; left out", e->name,
			    e->path, ino);
		return 0;
	}
	memset(e->inode, 0, e->inode_len);
	rc = sym_ext2fs_read_inode_full(e->fs, ino, inode, (int)isz);
	if (rc) {
		if (ext4_io_err_fatal(e))
			return ext4_err(e, rc);
		ext4_damage(e, "%s: '%s': its inode %u cannot be read (%s); left out", e->name,
			    e->path, ino, sym_error_message(rc));
		return 0;
	}
	member_common(e, &m, big);
	fmt = inode->i_mode & LINUX_S_IFMT;
	linked = fmt != LINUX_S_IFDIR && inode->i_links_count > 1;
	if (linked && link_find(e, ino, &m))
		return report(e, &m);
	err = ext4_xattrs(e, e->inode, isz, inode);
	if (err)
		return err;
	m.xattrs = e->xattrs;
	m.nxattrs = e->nxattrs;
	switch (fmt) {
	case LINUX_S_IFDIR:
		if (e->dirs_seen[ino / 8] & (1u << (ino % 8))) {
			ext4_damage(e, "%s: '%s': a folder reached a second time (inode %u); left "
				    "out", e->name, e->path, ino);
			return 0;
		}
		e->dirs_seen[ino / 8] |= (uint8_t)(1u << (ino % 8));
		m.type = MEMBER_DIR;
		err = report(e, &m);
		if (err)
			return err;
		if (depth >= EXT4_DEPTH_MAX) {
			ext4_damage(e, "%s: '%s': deeper than %d folders; not entered", e->name,
				    e->path, EXT4_DEPTH_MAX);
			return 0;
		}
		if (inode->i_flags & EXT4_ENCRYPT_FL) {
			tfs_log(TFS_LOG_NOTICE, "%s: '%s' is encrypted (fscrypt): its entries are "
				"not listed", e->name, e->path);
			return 0;
		}
		return walk_dir(e, ino, depth + 1);
	case LINUX_S_IFREG:
		m.type = MEMBER_REG;
		m.size = EXT2_I_SIZE(inode);
		err = file_map(e, ino, inode, &m);
		break;
	case LINUX_S_IFLNK:
		ln = link_target(e, ino, inode);
		if (ln <= 0)
			return (int)ln;
		m.type = MEMBER_SYMLINK;
		m.link = e->block;
		m.link_len = (size_t)ln;
		break;
	case LINUX_S_IFCHR:
	case LINUX_S_IFBLK: {
		uint32_t dev = inode->i_block[0] ? inode->i_block[0] : inode->i_block[1];

		m.type = fmt == LINUX_S_IFCHR ? MEMBER_CHR : MEMBER_BLK;
		if (inode->i_block[0]) {
			m.dev_major = (dev >> 8) & 0xff;
			m.dev_minor = dev & 0xff;
		} else {
			m.dev_major = (dev & 0xfff00) >> 8;
			m.dev_minor = (dev & 0xff) | ((dev >> 12) & 0xfff00);
		}
		break;
	}
	case LINUX_S_IFIFO:
		m.type = MEMBER_FIFO;
		break;
	case LINUX_S_IFSOCK:
		tfs_log(TFS_LOG_INFO, "%s: '%s' is a socket; left out", e->name, e->path);
		return 0;
	default:
		ext4_damage(e, "%s: '%s': inode %u has no file type (mode %o); left out", e->name,
			    e->path, ino, inode->i_mode);
		return 0;
	}
	err = err ? err : report(e, &m);
	return !err && linked ? link_add(e, ino) : err;
}

/* Walks folder ino, whose path is e->path, at depth. */
static int walk_dir(struct ext4 *e, ext2_ino_t ino, int depth)
{
	struct ext2_inode_large big = {0};
	struct dir d = {0};
	size_t plen = e->plen;
	errcode_t rc;
	int err = 0;

	rc = sym_ext2fs_read_inode_full(e->fs, ino, (struct ext2_inode *)&big, sizeof(big));
	if (rc) {
		if (ext4_io_err_fatal(e))
			return ext4_err(e, rc);
		ext4_damage(e, "%s: folder inode %u cannot be read (%s)", e->name, ino,
			    sym_error_message(rc));
		return 0;
	}
	err = dir_read(e, ino, (struct ext2_inode *)&big, &d);
	if (e->sink->progress)
		e->sink->progress(e->sink->opaque, src_high_water(e->in));
	for (size_t i = 0; !err && i < d.n; i++) {
		const uint8_t *name = d.names + d.d[i].name_off;
		size_t nlen = d.d[i].name_len;

		if (memchr(name, '/', nlen) || memchr(name, '\0', nlen)) {
			ext4_damage(e, "%s: folder '%s' holds a name with '/' or NUL; left out",
				    e->name, plen ? e->path : "/");
			continue;
		}
		if (plen + 1 + nlen > EXT4_PATH_MAX) {
			ext4_damage(e, "%s: a path longer than %d bytes in '%s'; left out", e->name,
				    EXT4_PATH_MAX, e->path);
			continue;
		}
		e->plen = plen;
		if (plen)
			e->path[e->plen++] = '/';
		memcpy(e->path + e->plen, name, nlen);
		e->plen += nlen;
		e->path[e->plen] = '\0';
		err = walk_entry(e, d.d[i].ino, depth);
	}
	e->plen = plen;
	e->path[plen] = '\0';
	free(d.d);
	free(d.names);
	return err;
}

int ext4_walk(struct ext4 *e)
{
	struct htable_node *n;
	int err;

	e->dirs_seen[EXT2_ROOT_INO / 8] |= 1u << (EXT2_ROOT_INO % 8);
	e->plen = 0;
	e->path[0] = '\0';
	err = walk_dir(e, EXT2_ROOT_INO, 0);
	while ((n = htable_pop(&e->links)))
		free(htable_entry(n, struct ext4_link, node));
	htable_fini(&e->links);
	return err == EXT4_STOP ? 0 : err;
}
