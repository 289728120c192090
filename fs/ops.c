/* The FUSE low-level operations of tarseek: one table, handlers prefixed tfs_.
 *
 * The filesystem is read-only and never changes while mounted, so entries and attributes
 * are cached by the kernel for a long time (tfs.timeout), files are opened with keep_cache,
 * and directories with cache_readdir.  Inode numbers are the index's entry ids; there is
 * nothing to forget.  A read of a plain tar member is replied to with the archive's file
 * descriptor and offset (fuse_reply_data), so libfuse can splice it without copying; other
 * reads go through the union (union.h) to the source holding the file.  Replies with -errno flip the sign in reply_err() only.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>

#include "../common/log.h"
#include "tfs.h"

#define BLKSIZE (128 * 1024)

static struct tfs *tfs_of(fuse_req_t req)
{
	return fuse_req_userdata(req);
}

/* The one place a -errno becomes a FUSE error reply. */
static void reply_err(fuse_req_t req, int err)
{
	fuse_reply_err(req, -err);
}

static void to_stat(const struct arch_attr *a, struct stat *st)
{
	memset(st, 0, sizeof(*st));
	st->st_ino = a->ino;
	st->st_mode = a->mode;
	st->st_nlink = a->nlink ? a->nlink : 1;
	st->st_uid = (uid_t)a->uid;
	st->st_gid = (gid_t)a->gid;
	st->st_size = (off_t)a->size;
	st->st_rdev = (dev_t)a->rdev;
	st->st_blksize = BLKSIZE;
	st->st_blocks = (blkcnt_t)a->blocks;
	st->st_mtim.tv_sec = (time_t)a->mtime;
	st->st_mtim.tv_nsec = a->mtime_nsec;
	st->st_atim = st->st_ctim = st->st_mtim;
}

static void tfs_init(void *userdata, struct fuse_conn_info *conn)
{
	if (conn->capable & FUSE_CAP_SPLICE_WRITE)
		conn->want |= FUSE_CAP_SPLICE_WRITE;
	if (conn->capable & FUSE_CAP_SPLICE_MOVE)
		conn->want |= FUSE_CAP_SPLICE_MOVE;
	if (conn->capable & FUSE_CAP_READDIRPLUS)
		conn->want |= FUSE_CAP_READDIRPLUS;
	if (conn->capable & FUSE_CAP_READDIRPLUS_AUTO)
		conn->want |= FUSE_CAP_READDIRPLUS_AUTO;
	if (conn->capable & FUSE_CAP_ASYNC_READ)
		conn->want |= FUSE_CAP_ASYNC_READ;
}

static void entry_param(struct tfs *t, const struct arch_attr *a, struct fuse_entry_param *e)
{
	memset(e, 0, sizeof(*e));
	e->ino = a->ino;
	e->generation = 1;
	e->attr_timeout = t->timeout;
	e->entry_timeout = t->timeout;
	to_stat(a, &e->attr);
}

static void tfs_lookup(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	struct tfs *t = tfs_of(req);
	struct arch_attr a;
	struct fuse_entry_param e;
	int err = un_lookup(t->un, parent, name, strlen(name), &a);

	if (t->debug)
		tfs_log(TFS_LOG_DEBUG, "lookup(%lu, %s) = %d", (unsigned long)parent, name, err);
	if (err == -ENOENT) {
		/* a negative entry, cached like the positive ones */
		memset(&e, 0, sizeof(e));
		e.entry_timeout = t->timeout;
		fuse_reply_entry(req, &e);
		return;
	}
	if (err) {
		reply_err(req, err);
		return;
	}
	entry_param(t, &a, &e);
	fuse_reply_entry(req, &e);
}

static void tfs_getattr(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct tfs *t = tfs_of(req);
	struct arch_attr a;
	struct stat st;
	int err = un_getattr(t->un, ino, &a);

	if (err) {
		reply_err(req, err);
		return;
	}
	to_stat(&a, &st);
	fuse_reply_attr(req, &st, t->timeout);
}

static void tfs_readlink(fuse_req_t req, fuse_ino_t ino)
{
	struct tfs *t = tfs_of(req);
	size_t size = PATH_MAX, len = 0;
	char *buf = NULL;
	int err;

	for (;;) {
		char *nb = realloc(buf, size + 1);
		if (!nb) {
			err = -ENOMEM;
			break;
		}
		buf = nb;
		err = un_readlink(t->un, ino, buf, size, &len);
		if (err != -ERANGE)
			break;
		size = len;
	}
	if (err) {
		reply_err(req, err);
	} else {
		buf[len] = '\0';
		fuse_reply_readlink(req, buf);
	}
	free(buf);
}

static void tfs_opendir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct tfs *t = tfs_of(req);
	struct un_dir *d;
	int err = un_opendir(t->un, ino, &d);

	if (err) {
		reply_err(req, err);
		return;
	}
	fi->fh = (uint64_t)(uintptr_t)d;
	fi->keep_cache = 1;
	fi->cache_readdir = 1;
	if (fuse_reply_open(req, fi) == -ENOENT)
		un_closedir(d);
}

/* Directory offsets: 1 after ".", 2 after "..", cookie + 2 after an entry. */
struct dir_fill {
	fuse_req_t req;
	struct tfs *t;
	char *buf;
	size_t size, pos;
	bool plus;
	char name[NAME_MAX + 1];
	char *long_name; /* for names past NAME_MAX (hostile archives) */
};

static bool dir_add(struct dir_fill *d, const char *name, const struct arch_attr *a, off_t next)
{
	size_t n;

	if (d->plus) {
		struct fuse_entry_param e;
		entry_param(d->t, a, &e);
		if (strcmp(name, ".") == 0 || strcmp(name, "..") == 0)
			e.ino = 0; /* no lookup count for these */
		n = fuse_add_direntry_plus(d->req, d->buf + d->pos, d->size - d->pos, name, &e, next);
	} else {
		struct stat st;
		to_stat(a, &st);
		n = fuse_add_direntry(d->req, d->buf + d->pos, d->size - d->pos, name, &st, next);
	}
	if (n > d->size - d->pos)
		return false;
	d->pos += n;
	return true;
}

static int dir_entry(void *opaque, const char *name, size_t len, const struct arch_attr *a,
		     uint64_t cookie)
{
	struct dir_fill *d = opaque;
	const char *z = d->name;

	if (len <= NAME_MAX) {
		memcpy(d->name, name, len);
		d->name[len] = '\0';
	} else {
		char *p = realloc(d->long_name, len + 1);
		if (!p)
			return -ENOMEM; /* an error reply, never a listing cut short */
		d->long_name = p;
		memcpy(p, name, len);
		p[len] = '\0';
		z = p;
	}
	return dir_add(d, z, a, (off_t)(cookie + 2)) ? 0 : 1;
}

static void do_readdir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off, bool plus,
		       struct un_dir *dir)
{
	struct tfs *t = tfs_of(req);
	struct dir_fill d = {.req = req, .t = t, .size = size, .plus = plus};
	struct arch_attr self;
	int err = un_getattr(t->un, ino, &self);

	if (err) {
		reply_err(req, err);
		return;
	}
	d.buf = malloc(size);
	if (!d.buf) {
		reply_err(req, -ENOMEM);
		return;
	}
	if (off == 0 && !dir_add(&d, ".", &self, 1))
		goto done;
	if (off <= 1 && !dir_add(&d, "..", &self, 2))
		goto done;
	err = un_readdir(t->un, dir, off > 2 ? (uint64_t)off - 2 : 0, dir_entry, &d);
done:
	if (err && d.pos == 0)
		reply_err(req, err);
	else
		fuse_reply_buf(req, d.buf, d.pos);
	free(d.buf);
	free(d.long_name);
}

static void tfs_readdir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
			struct fuse_file_info *fi)
{
	do_readdir(req, ino, size, off, false, (struct un_dir *)(uintptr_t)fi->fh);
}

static void tfs_readdirplus(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
			    struct fuse_file_info *fi)
{
	do_readdir(req, ino, size, off, true, (struct un_dir *)(uintptr_t)fi->fh);
}

static void tfs_releasedir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	un_closedir((struct un_dir *)(uintptr_t)fi->fh);
	fuse_reply_err(req, 0);
}

static void tfs_open(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct tfs *t = tfs_of(req);
	struct un_file *f;
	int err;

	if ((fi->flags & O_ACCMODE) != O_RDONLY || (fi->flags & O_TRUNC)) {
		reply_err(req, -EROFS);
		return;
	}
	err = un_open(t->un, ino, &f);
	if (err) {
		reply_err(req, err);
		return;
	}
	fi->fh = (uint64_t)(uintptr_t)f;
	fi->keep_cache = 1;
	if (fuse_reply_open(req, fi) == -ENOENT) /* the open was interrupted */
		un_close(f);
}

static void tfs_read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		     struct fuse_file_info *fi)
{
	struct tfs *t = tfs_of(req);
	struct un_file *f = (struct un_file *)(uintptr_t)fi->fh;
	int fd;
	uint64_t fd_off;
	size_t n = un_direct(f, (uint64_t)off, size, &fd, &fd_off);

	if (t->debug)
		tfs_log(TFS_LOG_DEBUG, "read(%lu, %zu @ %lld)", (unsigned long)ino, size, (long long)off);
	if (n) {
		struct fuse_bufvec bv = FUSE_BUFVEC_INIT(n);
		bv.buf[0].flags = FUSE_BUF_IS_FD | FUSE_BUF_FD_SEEK;
		bv.buf[0].fd = fd;
		bv.buf[0].pos = (off_t)fd_off;
		fuse_reply_data(req, &bv, FUSE_BUF_SPLICE_MOVE);
		return;
	}
	char *buf = malloc(size ? size : 1);
	if (!buf) {
		reply_err(req, -ENOMEM);
		return;
	}
	ssize_t r = un_read(f, buf, size, (uint64_t)off);
	if (r < 0)
		reply_err(req, (int)r);
	else
		fuse_reply_buf(req, buf, (size_t)r);
	free(buf);
}

static void tfs_release(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	un_close((struct un_file *)(uintptr_t)fi->fh);
	fuse_reply_err(req, 0);
}

static void tfs_statfs(fuse_req_t req, fuse_ino_t ino)
{
	struct tfs *t = tfs_of(req);
	struct statvfs sv;
	uint64_t entries, bytes;

	un_totals(t->un, &entries, &bytes);
	memset(&sv, 0, sizeof(sv));
	sv.f_bsize = BLKSIZE;
	sv.f_frsize = 512;
	sv.f_blocks = (bytes + 511) / 512;
	sv.f_files = entries;
	sv.f_namemax = 255;
	sv.f_flag = ST_RDONLY;
	fuse_reply_statfs(req, &sv);
}

static void tfs_getxattr(fuse_req_t req, fuse_ino_t ino, const char *name, size_t size)
{
	struct tfs *t = tfs_of(req);
	char *buf = NULL;
	ssize_t n;

	if (size) {
		buf = malloc(size);
		if (!buf) {
			reply_err(req, -ENOMEM);
			return;
		}
	}
	n = un_getxattr(t->un, ino, name, buf, size);
	if (n < 0)
		reply_err(req, (int)n);
	else if (size == 0)
		fuse_reply_xattr(req, (size_t)n);
	else
		fuse_reply_buf(req, buf, (size_t)n);
	free(buf);
}

static void tfs_listxattr(fuse_req_t req, fuse_ino_t ino, size_t size)
{
	struct tfs *t = tfs_of(req);
	char *buf = NULL;
	ssize_t n;

	if (size) {
		buf = malloc(size);
		if (!buf) {
			reply_err(req, -ENOMEM);
			return;
		}
	}
	n = un_listxattr(t->un, ino, buf, size);
	if (n < 0)
		reply_err(req, (int)n);
	else if (size == 0)
		fuse_reply_xattr(req, (size_t)n);
	else
		fuse_reply_buf(req, buf, (size_t)n);
	free(buf);
}

/* Everything that would change the filesystem.  The mount is also "ro", so the kernel
 * normally refuses these before they reach us. */
static void tfs_setattr(fuse_req_t req, fuse_ino_t ino, struct stat *attr, int to_set,
			struct fuse_file_info *fi)
{
	reply_err(req, -EROFS);
}

static void tfs_mknod(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode, dev_t rdev)
{
	reply_err(req, -EROFS);
}

static void tfs_mkdir(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode)
{
	reply_err(req, -EROFS);
}

static void tfs_unlink(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	reply_err(req, -EROFS);
}

static void tfs_symlink(fuse_req_t req, const char *link, fuse_ino_t parent, const char *name)
{
	reply_err(req, -EROFS);
}

static void tfs_rename(fuse_req_t req, fuse_ino_t parent, const char *name, fuse_ino_t newparent,
		       const char *newname, unsigned int flags)
{
	reply_err(req, -EROFS);
}

static void tfs_link(fuse_req_t req, fuse_ino_t ino, fuse_ino_t newparent, const char *newname)
{
	reply_err(req, -EROFS);
}

static void tfs_write(fuse_req_t req, fuse_ino_t ino, const char *buf, size_t size, off_t off,
		      struct fuse_file_info *fi)
{
	reply_err(req, -EROFS);
}

static void tfs_create(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode,
		       struct fuse_file_info *fi)
{
	reply_err(req, -EROFS);
}

static void tfs_setxattr(fuse_req_t req, fuse_ino_t ino, const char *name, const char *value,
			 size_t size, int flags)
{
	reply_err(req, -EROFS);
}

static void tfs_removexattr(fuse_req_t req, fuse_ino_t ino, const char *name)
{
	reply_err(req, -EROFS);
}

const struct fuse_lowlevel_ops tfs_ops = {
	.init = tfs_init,
	.lookup = tfs_lookup,
	.getattr = tfs_getattr,
	.readlink = tfs_readlink,
	.opendir = tfs_opendir,
	.readdir = tfs_readdir,
	.readdirplus = tfs_readdirplus,
	.releasedir = tfs_releasedir,
	.open = tfs_open,
	.read = tfs_read,
	.release = tfs_release,
	.statfs = tfs_statfs,
	.getxattr = tfs_getxattr,
	.listxattr = tfs_listxattr,
	.setattr = tfs_setattr,
	.mknod = tfs_mknod,
	.mkdir = tfs_mkdir,
	.unlink = tfs_unlink,
	.rmdir = tfs_unlink,
	.symlink = tfs_symlink,
	.rename = tfs_rename,
	.link = tfs_link,
	.write = tfs_write,
	.create = tfs_create,
	.setxattr = tfs_setxattr,
	.removexattr = tfs_removexattr,
};
