/* The mounted tree: one or more sources (archives, plain directories) seen as one.
 *
 * Union rules (an overlay): the source added last wins for a file path; directories of the
 * same path merge across the sources that have it; a path that is a file in one source and a
 * directory in another follows the last source that has it, and a file hides that path in
 * every source before it.  With no_union, each source is
 * a folder of the root instead, named after it ("name", then "name.2", "name.3", ... when
 * names clash, in the order given).  A path stored several times (tar -r, or in several
 * sources) shows its last version; all of them are reachable as PATH.versions/1 .. N (1 the
 * oldest, sources in the order given), a folder found by lookup but not listed by readdir.
 *
 * Inode numbers: 1 is the root; an entry of source s with local inode i is
 * ((s + 1) << 40) | i; a merged directory or a .versions folder is a virtual node,
 * (1 << 63) | n.  A directory present in only one source is passed through with that
 * source's inode, so the union costs nothing for the common single-archive mount.
 * Lookups query only the sources that hold the parent folder.
 *
 * Attributes named user.tarseek.* are answered for every entry without being listed (so
 * copies with xattrs stay clean; the kernel does not ask for user.* on symlinks):
 * user.tarseek.info (all of it, "key=value" lines),
 * user.tarseek.source, .kind, .codec, .index, .version, .versions, .data_offset,
 * .header_offset, ... and on the root user.tarseek.decoders_started and .decoded_bytes.
 *
 * Thread-safe.  Sources may be added while mounted (nested archives).
 */
#ifndef TARSEEK_UNION_H
#define TARSEEK_UNION_H

#include "mount/tree.h"

struct arch;
struct un;
struct un_dir;
struct un_file;

#define UN_ROOT 1
#define UN_SRC_SHIFT 40

/* The mount's inode of local inode local of source s (0-based, in the order added). */
static inline uint64_t un_source_ino(unsigned s, uint64_t local)
{
	return ((uint64_t)(s + 1) << UN_SRC_SHIFT) | local;
}

/* 0 or -ENOMEM. */
int un_new(bool no_union, struct un **out);
void un_free(struct un *u); /* frees the sources too; NULL does nothing */

/* How archives inside folder sources are opened (-r): open(opaque, path, &a) is arch_open
 * with the mount's options; 0 or -errno.  Without it they stay files. */
void un_set_opener(struct un *u, int (*open)(void *opaque, const char *path, struct arch **out),
		   void *opaque);

/* Adds a source (ownership of t passes to the union, also on error).  name: its display name
 * (the folder name with no_union).  0 or -ENOMEM / -EOVERFLOW. */
int un_add(struct un *u, const struct tree_ops *ops, void *t, const char *name);

int un_lookup(struct un *u, uint64_t parent, const char *name, size_t len, struct arch_attr *out);
int un_getattr(struct un *u, uint64_t ino, struct arch_attr *out);
int un_readlink(struct un *u, uint64_t ino, char *buf, size_t size, size_t *len);
ssize_t un_listxattr(struct un *u, uint64_t ino, char *buf, size_t size);
ssize_t un_getxattr(struct un *u, uint64_t ino, const char *name, void *buf, size_t size);

/* Directories: entries in a stable order; fn gets a cookie to resume after (see archive.h). */
int un_opendir(struct un *u, uint64_t ino, struct un_dir **out);
int un_readdir(struct un *u, struct un_dir *d, uint64_t after, arch_dirent_fn fn, void *opaque);
void un_closedir(struct un_dir *d);

int un_open(struct un *u, uint64_t ino, struct un_file **out);
ssize_t un_read(struct un_file *f, void *buf, size_t len, uint64_t off);
size_t un_direct(struct un_file *f, uint64_t off, size_t len, int *fd, uint64_t *fd_off);
void un_close(struct un_file *f);

/* Entries (inodes) and bytes of all sources, for statfs. */
void un_totals(struct un *u, uint64_t *entries, uint64_t *bytes);

#endif
