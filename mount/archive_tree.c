/* The tree interface (tree.h) over an opened archive (index/archive.h): each operation is the
 * archive's own call, so a union mount reaches an archive's entries and files through the
 * same table as a plain folder's (dirtree.c).  Inode numbers are the index's entry ids.
 */
#include "mount/tree.h"

#include "index/archive.h"
#include "index/db.h"

static int t_lookup(void *t, uint64_t dir, const char *name, size_t len, struct arch_attr *out)
{
	return arch_lookup(t, dir, name, len, out);
}

static int t_getattr(void *t, uint64_t ino, struct arch_attr *out)
{
	return arch_getattr(t, ino, out);
}

static int t_readdir(void *t, uint64_t dir, uint64_t after, arch_dirent_fn fn, void *opaque)
{
	return arch_readdir(t, dir, after, fn, opaque);
}

static int t_readlink(void *t, uint64_t ino, char *buf, size_t size, size_t *len)
{
	return arch_readlink(t, ino, buf, size, len);
}

static ssize_t t_listxattr(void *t, uint64_t ino, char *buf, size_t size)
{
	return arch_listxattr(t, ino, buf, size);
}

static ssize_t t_getxattr(void *t, uint64_t ino, const char *name, void *buf, size_t size)
{
	return arch_getxattr(t, ino, name, buf, size);
}

static int t_versions(void *t, uint64_t dir, const char *name, size_t len, tree_version_fn fn,
		      void *opaque)
{
	return arch_versions(t, dir, name, len, fn, opaque);
}

static int t_describe(void *t, uint64_t ino, char *buf, size_t size)
{
	return arch_describe(t, ino, buf, size);
}

static int t_open(void *t, uint64_t ino, void **fh)
{
	return arch_file_open(t, ino, (struct arch_file **)fh);
}

static ssize_t t_read(void *fh, void *buf, size_t len, uint64_t off)
{
	return arch_file_read(fh, buf, len, off);
}

static size_t t_direct(void *fh, uint64_t off, size_t len, int *fd, uint64_t *fd_off)
{
	return arch_file_direct(fh, off, len, fd, fd_off);
}

static void t_close(void *fh)
{
	arch_file_close(fh);
}

static void t_totals(void *t, uint64_t *entries, uint64_t *bytes)
{
	const struct arch_info *i = arch_get_info(t);

	*entries = i->entries;
	*bytes = i->usize;
}

static void t_free(void *t)
{
	arch_close(t);
}

const struct tree_ops tree_archive_ops = {
	.kind = "archive",
	.root = IDX_ROOT,
	.lookup = t_lookup,
	.getattr = t_getattr,
	.readdir = t_readdir,
	.readlink = t_readlink,
	.listxattr = t_listxattr,
	.getxattr = t_getxattr,
	.versions = t_versions,
	.describe = t_describe,
	.open = t_open,
	.read = t_read,
	.direct = t_direct,
	.close = t_close,
	.totals = t_totals,
	.free = t_free,
};
