/* What test_index.c's and test_validate.c's tests share (index_fixtures.c): the test's folder and paths, files made
 * and changed in it, the log captured and searched, archives made in memory and by the real
 * tools, a walk of a mounted tree (tree.h) that records what it sees, and the options and
 * inputs of a build.
 */
#ifndef TARSEEK_TEST_INDEX_FIXTURES_H
#define TARSEEK_TEST_INDEX_FIXTURES_H

#include "index/archive.h"
#include "cache/cache.h"
#include "index/db.h"
#include "common/log.h"
#include "index/nested.h"
#include "index/open.h"
#include "index/stamp.h"
#include "mount/tree.h"
#include "index/validate.h"
#include "testutil.h"
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <grp.h>
#include <inttypes.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <zlib.h>

#define MIB (1u << 20)

#define M0 1600000000 /* the members' mtimes */

#define NOBODY 65534 /* the unprivileged user of the checks that need one */

#define CHECK_STR(a, b)                                                                            \
	do {                                                                                       \
		const char *_x = (a), *_y = (b);                                                   \
		if (!_x || !_y || strcmp(_x, _y) != 0) {                                           \
			fprintf(stderr, "%s:%d: %s == \"%s\", expected \"%s\"\n", __FILE__,        \
				__LINE__, #a, _x ? _x : "(null)", _y ? _y : "(null)");             \
			tu_failures++;                                                             \
		}                                                                                  \
	} while (0)

/* What tells that a file was left alone: same inode, times, size and bytes. */
struct snap {
	bool ok;
	dev_t dev;
	ino_t ino;
	struct timespec mtim, ctim;
	off_t size;
	uLong crc;
};

struct buf {
	uint8_t *p;
	size_t len, cap;
};

struct member {
	const char *name;
	char type; /* '0' a file, '5' a directory, '2' a symlink */
	unsigned mode, uid, gid;
	int64_t mtime;
	const char *link;
	const uint8_t *data;
	size_t size;
};

#define STD_MEMBERS 6

#define STD_ENTRIES 8 /* the root, 6 members, the implicit dir/sub */

struct want {
	const char *path; /* in lexical order, so each folder's children come in name order */
	uint32_t mode;
	uint64_t size; /* not checked for folders */
	int64_t mtime;
	unsigned uid, gid;
	const uint8_t *data; /* regular files */
	const char *link;    /* symlinks */
};

#define NWANT(w) (sizeof(w) / sizeof((w)[0]))

#define LIST_MAX 16

struct listing {
	int n, stop_at; /* stop_at: return 1 ("full") at that entry (0: never) */
	char name[LIST_MAX][64];
	struct arch_attr at[LIST_MAX];
	uint64_t cookie[LIST_MAX];
};

extern char top[PATH_MAX];
extern struct cache *cache;
extern char **paths;
void paths_free(void);
void mkdir_ok(const char *path);
void write_file(const char *path, const void *data, size_t len);
bool exists(const char *path);
int dir_count(const char *dir, const char *part);
const char *dir_find(const char *dir, const char *prefix);
struct snap snap_of(const char *path);
bool snap_same(const struct snap *a, const struct snap *b);
struct timespec mtime_of(const char *path);
void set_mtime(const char *path, struct timespec t);
void poke(const char *path, off_t off, uint8_t x, bool keep_mtime);
void copy_file(const char *from, const char *to);
int rm_one(const char *path, const struct stat *st, int flag, struct FTW *ftw);
void log_sink(int level, const char *msg, void *opaque);
void log_clear(void);
bool logged(int level, const char *a, const char *b);
struct buf tar_of(const struct member *m, size_t n);
struct buf gzip_of(const uint8_t *d, size_t n);
void write_gz(const char *path, const uint8_t *d, size_t n);
extern uint8_t d_a[1000], d_deep[513], d_big[70000];
extern const struct want std_tree[];
extern const size_t std_tree_n;
struct buf std_tar(void);
void write_std_tar(const char *path);
void write_other_tar(const char *path, const char *name);
void append_member(const char *path);
extern const struct tree_ops *ops;
int resolve(void *t, const char *path, struct arch_attr *out);
void check_bytes(void *t, uint64_t ino, const uint8_t *want, size_t size);
void check_tree(void *t, const struct want *w, size_t n);
struct idx_opts dflt(void);
struct arch_opts aopts(const struct idx_opts *o);
int prep(const char *archive, const struct idx_opts *o, char **path, bool *built,
	 struct idx_build_stats *st);
struct idx_input input_of(const char *path);
void check_hashed_name(const char *path, const char *dir, const char *name);
const char *base_of(const char *path);

/* Builds ar's index at ix and checks that it validates. */
void build_ok(const char *ar, const char *ix, const struct idx_build_opts *b);

/* The test's setup: a watchdog, its folder (top, under $TMPDIR: tarseek-NAME-XXXXXX), the log
 * captured, the members' data, the cache, XDG_CACHE_HOME and HOME under top.  0, or -1 (said
 * on stderr).  fixtures_fini removes the folder and frees what the setup made. */
int fixtures_init(const char *name);
void fixtures_fini(void);

/* A path made with printf's format, kept until paths_free() (the test's many paths). */
__attribute__((format(printf, 1, 2))) const char *pth(const char *fmt, ...);

#endif
