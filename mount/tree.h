/* A tree: one source of a union mount, an archive (archive.h) or a plain directory
 * (dirtree.h), seen through one table of operations.  Inode numbers are the tree's own
 * (local); the union layer (union.h) maps them to the mount's.  Every operation may be called
 * from any thread.  Errors are -errno as in archive.h.
 */
#ifndef TARSEEK_TREE_H
#define TARSEEK_TREE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define ARCH_A_NESTED 1 /* a member that is an archive, mounted as a folder (-r) */

/* An entry's attributes, as every tree reports them. */
struct arch_attr {
	uint64_t ino;
	uint32_t flags; /* ARCH_A_* */
	uint32_t mode;	/* st_mode with type bits */
	uint32_t nlink;
	uint64_t uid, gid;
	uint64_t size;
	uint64_t rdev;
	int64_t mtime; /* seconds */
	uint32_t mtime_nsec;
	uint64_t blocks; /* 512-byte blocks the data takes (less than size/512 if sparse) */
};

/* readdir's callback: one entry and its cookie (the next call starts after it).  Returns 0
 * to go on, 1 to stop (a full reply buffer: that entry is then not consumed), or -errno to
 * fail the listing (readdir returns it). */
typedef int (*arch_dirent_fn)(void *opaque, const char *name, size_t len,
			      const struct arch_attr *attr, uint64_t cookie);

/* One version of a repeated path, oldest first (see tree_ops.versions). */
typedef int (*tree_version_fn)(void *opaque, const struct arch_attr *attr);

struct tree_ops {
	const char *kind; /* "archive", "directory" */
	uint64_t root;	  /* the root's local inode */
	int (*lookup)(void *t, uint64_t dir, const char *name, size_t len, struct arch_attr *out);
	int (*getattr)(void *t, uint64_t ino, struct arch_attr *out);
	int (*readdir)(void *t, uint64_t dir, uint64_t after, arch_dirent_fn fn, void *opaque);
	int (*readlink)(void *t, uint64_t ino, char *buf, size_t size, size_t *len);
	ssize_t (*listxattr)(void *t, uint64_t ino, char *buf, size_t size);
	ssize_t (*getxattr)(void *t, uint64_t ino, const char *name, void *buf, size_t size);
	/* Every stored version of name in dir, oldest first; -ENOENT if none. */
	int (*versions)(void *t, uint64_t dir, const char *name, size_t len, tree_version_fn fn,
			void *opaque);
	/* Facts for the user.tarseek.* attributes, as "key=value\n" lines into buf (at most
	 * size bytes, NUL-terminated).  0 or -errno. */
	int (*describe)(void *t, uint64_t ino, char *buf, size_t size);
	int (*open)(void *t, uint64_t ino, void **fh);
	ssize_t (*read)(void *fh, void *buf, size_t len, uint64_t off);
	size_t (*direct)(void *fh, uint64_t off, size_t len, int *fd, uint64_t *fd_off);
	void (*close)(void *fh);
	/* Optional: entries and decompressed bytes, for statfs. */
	void (*totals)(void *t, uint64_t *entries, uint64_t *bytes);
	void (*free)(void *t);
};

extern const struct tree_ops tree_archive_ops; /* t is a struct arch * (archive_tree.c) */

#endif
