/* Index images in memory, shared by the process's connections (see memvfs.h).
 *
 * The VFS serves one kind of file, the main database of an image, read-only; the temporary
 * files of a large sort are the default VFS's, opened through this one as SQLite's memdb
 * does.  SQLite never asks for a journal because the connections open an image with
 * immutable=1 (the device characteristics say so as well), and images in WAL mode are
 * refused when added.  Pages are handed out by pointer (xFetch), so a connection with a
 * PRAGMA mmap_size copies nothing; xRead copies for the rest (the first page, connections
 * without the pragma).
 *
 * The registry is a list under one mutex: a process holds a handful of images (one per small
 * index, one per nested archive opened), and it is walked only when a connection opens.
 *
 * The buffer is anonymous memory, made whole before it is filled (one system call instead of a
 * page fault per 4 KiB page, each a VM exit on the VMs measured here).  The whole 2 MiB
 * pieces of an image lie on transparent huge pages (madvise), its tail on small ones: on those
 * VMs a fresh 4 KiB page costs again at its first read after the fill, so a 26.7 MB index (a
 * gzip archive's, with its windows) took ~70 ms to make and fill and ~70 ms more for SQLite's
 * first touches of its pages; on huge pages it takes 3-10 ms in all.  Only whole pieces: a
 * union of a hundred sosreports (0.9 MB indexes) would hold 200 MB of huge pages instead of
 * 90 MB.  TARSEEK_THP=0 keeps every image on small pages (common/env.h).
 */
#include "common/memvfs.h"

#include <errno.h>
#include <pthread.h>
#include <sqlite3.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "common/env.h"
#include "common/source.h"

#define VFS_NAME "tarseek-mem"
#define HUGE_PAGE ((size_t)2 << 20)	/* x86-64's and arm64's (4 KiB pages) PMD size */
#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23 /* Linux 5.14; older kernels say EINVAL */
#endif

struct memvfs_img {
	struct memvfs_img *next; /* registry (lock) */
	unsigned char *data;	 /* len bytes, never changed once added */
	size_t len, maplen;
	int refs;      /* the owner's (until released) + one per open connection (lock) */
	char name[48]; /* MEMVFS_PREFIX "tarseek-PID-N" */
};

struct mem_file {
	sqlite3_file base;
	struct memvfs_img *img;
};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct memvfs_img *images; /* lock */
static unsigned long counter;	  /* lock */

/* ---- the buffer ------------------------------------------------------------------------- */

/* maplen bytes of anonymous memory, made whole, starting at a multiple of HUGE_PAGE with its
 * first `huge` bytes (a multiple of it) on huge pages where the kernel has them: NULL if out of
 * memory. */
static unsigned char *huge_map(size_t maplen, size_t huge)
{
	size_t slack = HUGE_PAGE, head;
	unsigned char *raw = mmap(NULL, maplen + slack, PROT_READ | PROT_WRITE,
				  MAP_PRIVATE | MAP_ANONYMOUS, -1, 0), *p;

	if (raw == MAP_FAILED)
		return NULL;
	p = (unsigned char *)(((uintptr_t)raw + slack - 1) & ~(uintptr_t)(slack - 1));
	head = (size_t)(p - raw);
	if (head)
		munmap(raw, head);
	if (slack - head)
		munmap(p + maplen, slack - head);
	(void)madvise(p, huge, MADV_HUGEPAGE); /* EINVAL: no THP here, small pages */
	if (madvise(p, maplen, MADV_POPULATE_WRITE) != 0) /* EINVAL before 5.14 */
		memset(p, 0, maplen);
	return p;
}

static int img_new(size_t len, struct memvfs_img **out)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE), huge = len / HUGE_PAGE * HUGE_PAGE;
	struct memvfs_img *img = calloc(1, sizeof(*img));

	*out = NULL;
	if (!img)
		return -ENOMEM;
	img->len = len;
	img->maplen = len ? (len + page - 1) / page * page : page;
	if (huge && env_thp()) {
		img->data = huge_map(img->maplen, huge);
	} else {
		img->data = mmap(NULL, img->maplen, PROT_READ | PROT_WRITE,
				 MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
		if (img->data == MAP_FAILED)
			img->data = NULL;
	}
	if (!img->data) {
		free(img);
		return -ENOMEM;
	}
	*out = img;
	return 0;
}

static void img_free(struct memvfs_img *img)
{
	munmap(img->data, img->maplen);
	free(img);
}

/* Checks the image is an SQLite file in rollback mode, then registers it under a new name. */
static int img_add(struct memvfs_img *img)
{
	static const char magic[16] = "SQLite format 3";

	if (img->len < 100 || memcmp(img->data, magic, sizeof(magic)) != 0)
		return -EIO;
	if (img->data[18] != 1 || img->data[19] != 1) /* WAL (2): it would need a -shm */
		return -ENOTSUP;
	mprotect(img->data, img->maplen, PROT_READ);
	pthread_mutex_lock(&lock);
	snprintf(img->name, sizeof(img->name), MEMVFS_PREFIX "tarseek-%d-%lu", (int)getpid(),
		 counter++);
	img->refs = 1;
	img->next = images;
	images = img;
	pthread_mutex_unlock(&lock);
	return 0;
}

/* The image called name, with or without MEMVFS_PREFIX, or NULL (the caller holds the lock). */
static struct memvfs_img *find_locked(const char *name)
{
	size_t k = strlen(MEMVFS_PREFIX);
	struct memvfs_img *img;

	if (strncmp(name, MEMVFS_PREFIX, k) == 0)
		name += k;
	for (img = images; img; img = img->next)
		if (strcmp(img->name + k, name) == 0)
			break;
	return img;
}

/* Drops one reference (the caller holds the lock): unlinks and frees the image at zero. */
static void img_put_locked(struct memvfs_img *img)
{
	struct memvfs_img **p;

	if (--img->refs > 0)
		return;
	for (p = &images; *p; p = &(*p)->next) {
		if (*p == img) {
			*p = img->next;
			break;
		}
	}
	img_free(img);
}

/* ---- the file --------------------------------------------------------------------------- */

static int mf_close(sqlite3_file *f)
{
	struct mem_file *m = (struct mem_file *)f;

	pthread_mutex_lock(&lock);
	img_put_locked(m->img);
	pthread_mutex_unlock(&lock);
	m->img = NULL;
	return SQLITE_OK;
}

static int mf_read(sqlite3_file *f, void *buf, int amt, sqlite3_int64 off)
{
	const struct memvfs_img *img = ((struct mem_file *)f)->img;
	size_t n = 0;

	if (off >= 0 && (size_t)off < img->len) {
		n = img->len - (size_t)off;
		if (n > (size_t)amt)
			n = (size_t)amt;
		memcpy(buf, img->data + off, n);
	}
	if (n < (size_t)amt) /* past the end: an image cut short, an I/O error (not zeros, which
			       * SQLite's pager would take as the short read of a growing file) */
		return SQLITE_IOERR_READ;
	return SQLITE_OK;
}

static int mf_write(sqlite3_file *f, const void *buf, int amt, sqlite3_int64 off)
{
	(void)f, (void)buf, (void)amt, (void)off;
	return SQLITE_READONLY;
}

static int mf_truncate(sqlite3_file *f, sqlite3_int64 size)
{
	(void)f, (void)size;
	return SQLITE_READONLY;
}

static int mf_sync(sqlite3_file *f, int flags)
{
	(void)f, (void)flags;
	return SQLITE_OK;
}

static int mf_size(sqlite3_file *f, sqlite3_int64 *size)
{
	*size = (sqlite3_int64)((struct mem_file *)f)->img->len;
	return SQLITE_OK;
}

static int mf_lock(sqlite3_file *f, int level)
{
	(void)f, (void)level;
	return SQLITE_OK;
}

static int mf_reserved(sqlite3_file *f, int *out)
{
	(void)f;
	*out = 0;
	return SQLITE_OK;
}

static int mf_control(sqlite3_file *f, int op, void *arg)
{
	(void)f, (void)op, (void)arg;
	return SQLITE_NOTFOUND;
}

static int mf_sector(sqlite3_file *f)
{
	(void)f;
	return 4096;
}

static int mf_device(sqlite3_file *f)
{
	(void)f;
	return SQLITE_IOCAP_IMMUTABLE;
}

static int mf_fetch(sqlite3_file *f, sqlite3_int64 off, int amt, void **pp)
{
	const struct memvfs_img *img = ((struct mem_file *)f)->img;

	*pp = off >= 0 && amt >= 0 && (size_t)off + (size_t)amt <= img->len ? img->data + off
									     : NULL;
	return SQLITE_OK;
}

static int mf_unfetch(sqlite3_file *f, sqlite3_int64 off, void *p)
{
	(void)f, (void)off, (void)p;
	return SQLITE_OK;
}

static const sqlite3_io_methods mf_methods = {
	.iVersion = 3,
	.xClose = mf_close,
	.xRead = mf_read,
	.xWrite = mf_write,
	.xTruncate = mf_truncate,
	.xSync = mf_sync,
	.xFileSize = mf_size,
	.xLock = mf_lock,
	.xUnlock = mf_lock,
	.xCheckReservedLock = mf_reserved,
	.xFileControl = mf_control,
	.xSectorSize = mf_sector,
	.xDeviceCharacteristics = mf_device,
	.xFetch = mf_fetch,
	.xUnfetch = mf_unfetch,
};

/* ---- the VFS ---------------------------------------------------------------------------- */

static sqlite3_vfs *base_vfs; /* the default VFS: time, randomness, sleep */

static int vfs_open(sqlite3_vfs *vfs, const char *name, sqlite3_file *f, int flags, int *out_flags)
{
	struct mem_file *m = (struct mem_file *)f;
	struct memvfs_img *img;

	(void)vfs;
	if (!(flags & SQLITE_OPEN_MAIN_DB)) /* a temporary file (a large sort): the default VFS's */
		return base_vfs->xOpen(base_vfs, name, f, flags, out_flags);
	m->base.pMethods = NULL; /* SQLite does not close a file whose open failed */
	m->img = NULL;
	if (!name || (flags & SQLITE_OPEN_CREATE))
		return SQLITE_CANTOPEN;
	pthread_mutex_lock(&lock);
	img = find_locked(name);
	if (img)
		img->refs++;
	pthread_mutex_unlock(&lock);
	if (!img)
		return SQLITE_CANTOPEN;
	m->img = img;
	m->base.pMethods = &mf_methods;
	if (out_flags)
		*out_flags = SQLITE_OPEN_READONLY;
	return SQLITE_OK;
}

static int vfs_delete(sqlite3_vfs *vfs, const char *name, int sync)
{
	(void)vfs, (void)name, (void)sync;
	return SQLITE_IOERR_DELETE;
}

static int vfs_access(sqlite3_vfs *vfs, const char *name, int flags, int *out)
{
	(void)vfs, (void)name, (void)flags;
	*out = 0; /* no journal, no WAL beside an image */
	return SQLITE_OK;
}

static int vfs_full(sqlite3_vfs *vfs, const char *name, int n, char *out)
{
	(void)vfs;
	if (snprintf(out, (size_t)n, "%s", name) >= n)
		return SQLITE_CANTOPEN;
	return SQLITE_OK;
}

static int vfs_random(sqlite3_vfs *vfs, int n, char *out)
{
	(void)vfs;
	return base_vfs->xRandomness(base_vfs, n, out);
}

static int vfs_sleep(sqlite3_vfs *vfs, int us)
{
	(void)vfs;
	return base_vfs->xSleep(base_vfs, us);
}

static int vfs_time(sqlite3_vfs *vfs, double *out)
{
	(void)vfs;
	return base_vfs->xCurrentTime(base_vfs, out);
}

static int vfs_error(sqlite3_vfs *vfs, int n, char *out)
{
	(void)vfs;
	if (n > 0)
		out[0] = '\0';
	return 0;
}

static sqlite3_vfs mem_vfs = {
	.iVersion = 1,
	.szOsFile = sizeof(struct mem_file),
	.mxPathname = 64,
	.zName = VFS_NAME,
	.xOpen = vfs_open,
	.xDelete = vfs_delete,
	.xAccess = vfs_access,
	.xFullPathname = vfs_full,
	.xRandomness = vfs_random,
	.xSleep = vfs_sleep,
	.xCurrentTime = vfs_time,
	.xGetLastError = vfs_error,
};

static pthread_once_t registered = PTHREAD_ONCE_INIT;
static int register_rc = SQLITE_ERROR;

static void vfs_register(void)
{
	base_vfs = sqlite3_vfs_find(NULL);
	if (!base_vfs)
		return;
	if (base_vfs->szOsFile > mem_vfs.szOsFile) /* its files live in ours (see vfs_open) */
		mem_vfs.szOsFile = base_vfs->szOsFile;
	register_rc = sqlite3_vfs_register(&mem_vfs, 0);
}

/* ---- the interface ---------------------------------------------------------------------- */

char *memvfs_uri(const char *name)
{
	char *uri;

	pthread_once(&registered, vfs_register);
	if (register_rc != SQLITE_OK)
		return NULL;
	if (strncmp(name, MEMVFS_PREFIX, strlen(MEMVFS_PREFIX)) == 0)
		name += strlen(MEMVFS_PREFIX);
	if (asprintf(&uri, "file:%s?vfs=" VFS_NAME "&immutable=1", name) < 0)
		return NULL;
	return uri;
}

int memvfs_load_file(const char *path, size_t max, struct memvfs_img **out)
{
	struct memvfs_img *img = NULL;
	struct src *file;
	int err = src_open_file(path, &file);

	*out = NULL;
	if (err)
		return err;
	err = src_size(file) > max ? -EFBIG : img_new((size_t)src_size(file), &img);
	err = err ? err : src_pread_full(file, img->data, img->len, 0); /* -EIO: it shrank */
	err = err ? err : img_add(img);
	src_free(file);
	if (err) {
		if (img)
			img_free(img);
		return err;
	}
	*out = img;
	return 0;
}

int memvfs_copy(const void *data, size_t len, struct memvfs_img **out)
{
	struct memvfs_img *img;
	int err = img_new(len, &img);

	*out = NULL;
	if (err)
		return err;
	memcpy(img->data, data, len);
	err = img_add(img);
	if (err) {
		img_free(img);
		return err;
	}
	*out = img;
	return 0;
}

const char *memvfs_name(const struct memvfs_img *img)
{
	return img->name;
}

size_t memvfs_size(const struct memvfs_img *img)
{
	return img->len;
}

int memvfs_bytes(const char *name, const void **data, size_t *len)
{
	struct memvfs_img *img;

	pthread_mutex_lock(&lock);
	img = find_locked(name);
	if (img) {
		*data = img->data;
		*len = img->len;
	}
	pthread_mutex_unlock(&lock);
	return img ? 0 : -ENOENT;
}

void memvfs_release(struct memvfs_img *img)
{
	if (!img)
		return;
	pthread_mutex_lock(&lock);
	img_put_locked(img);
	pthread_mutex_unlock(&lock);
}
