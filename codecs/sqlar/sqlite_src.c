/* A SQLite VFS over a source (see sqlite_src.h).  Registered once, not as the default, under
 * the name "tarseek-src"; a database is opened by the name "tsrc-<address of its source>",
 * which only this file makes (SQLite hands the name back to xOpen as it was given).  Every
 * call a read-only, immutable database needs is here; the others (randomness, time, sleep)
 * are the default VFS's.  A read past the source's end is an I/O error (a cut database), not
 * a short read that SQLite would fill with zeros.
 */
#include "codecs/sqlar/sqlite_src.h"

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SQLSRC_VFS "tarseek-src"

struct sqlsrc_file {
	sqlite3_file base;
	struct src *src;
};

static int ss_close(sqlite3_file *f)
{
	return SQLITE_OK;
}

static int ss_read(sqlite3_file *f, void *buf, int amt, sqlite3_int64 off)
{
	struct sqlsrc_file *s = (struct sqlsrc_file *)f;
	ssize_t n;

	if (amt < 0 || off < 0)
		return SQLITE_IOERR_READ;
	n = src_pread(s->src, buf, (size_t)amt, (uint64_t)off);
	if (n < 0)
		return n == -ENOMEM ? SQLITE_IOERR_NOMEM : SQLITE_IOERR_READ;
	if (n < amt) {
		/* Not SQLITE_IOERR_SHORT_READ, as SQLite's unix VFS says: its pager reads the
		 * missing bytes of a page as zeros then, and the pages of a database never lie
		 * past the file's end but when it was cut -- a stored blob would read zeros. */
		memset((char *)buf + n, 0, (size_t)(amt - n));
		return SQLITE_IOERR_READ;
	}
	return SQLITE_OK;
}

static int ss_write(sqlite3_file *f, const void *buf, int amt, sqlite3_int64 off)
{
	return SQLITE_READONLY;
}

static int ss_truncate(sqlite3_file *f, sqlite3_int64 size)
{
	return SQLITE_READONLY;
}

static int ss_sync(sqlite3_file *f, int flags)
{
	return SQLITE_OK;
}

static int ss_size(sqlite3_file *f, sqlite3_int64 *size)
{
	struct sqlsrc_file *s = (struct sqlsrc_file *)f;
	uint64_t n = src_size(s->src);

	if (n == SRC_SIZE_UNKNOWN || n > INT64_MAX)
		return SQLITE_IOERR_FSTAT;
	*size = (sqlite3_int64)n;
	return SQLITE_OK;
}

static int ss_lock(sqlite3_file *f, int level)
{
	return SQLITE_OK;
}

static int ss_reserved(sqlite3_file *f, int *out)
{
	*out = 0;
	return SQLITE_OK;
}

static int ss_control(sqlite3_file *f, int op, void *arg)
{
	return SQLITE_NOTFOUND;
}

static int ss_sector(sqlite3_file *f)
{
	return 512;
}

static int ss_caps(sqlite3_file *f)
{
	return SQLITE_IOCAP_IMMUTABLE;
}

static const sqlite3_io_methods ss_io = {
	.iVersion = 1,
	.xClose = ss_close,
	.xRead = ss_read,
	.xWrite = ss_write,
	.xTruncate = ss_truncate,
	.xSync = ss_sync,
	.xFileSize = ss_size,
	.xLock = ss_lock,
	.xUnlock = ss_lock,
	.xCheckReservedLock = ss_reserved,
	.xFileControl = ss_control,
	.xSectorSize = ss_sector,
	.xDeviceCharacteristics = ss_caps,
};

static int ss_open(sqlite3_vfs *vfs, const char *name, sqlite3_file *f, int flags, int *out)
{
	struct sqlsrc_file *s = (struct sqlsrc_file *)f;
	void *p = NULL;

	s->base.pMethods = NULL;
	if (!name || !(flags & SQLITE_OPEN_MAIN_DB) || (flags & SQLITE_OPEN_READWRITE) ||
	    sscanf(name, "tsrc-%p", &p) != 1 || !p)
		return SQLITE_CANTOPEN;
	s->src = p;
	s->base.pMethods = &ss_io;
	if (out)
		*out = SQLITE_OPEN_READONLY;
	return SQLITE_OK;
}

static int ss_delete(sqlite3_vfs *vfs, const char *name, int sync)
{
	return SQLITE_IOERR_DELETE;
}

static int ss_access(sqlite3_vfs *vfs, const char *name, int flags, int *out)
{
	*out = 0; /* no journal, no WAL beside it */
	return SQLITE_OK;
}

static int ss_fullname(sqlite3_vfs *vfs, const char *name, int n, char *out)
{
	if ((int)strlen(name) >= n)
		return SQLITE_CANTOPEN;
	strcpy(out, name);
	return SQLITE_OK;
}

static sqlite3_vfs ss_vfs;

static int ss_random(sqlite3_vfs *vfs, int n, char *out)
{
	sqlite3_vfs *d = ss_vfs.pAppData;
	return d->xRandomness(d, n, out);
}

static int ss_sleep(sqlite3_vfs *vfs, int us)
{
	sqlite3_vfs *d = ss_vfs.pAppData;
	return d->xSleep(d, us);
}

static int ss_time(sqlite3_vfs *vfs, double *out)
{
	sqlite3_vfs *d = ss_vfs.pAppData;
	return d->xCurrentTime(d, out);
}

static int ss_last_error(sqlite3_vfs *vfs, int n, char *out)
{
	return 0;
}

static pthread_once_t ss_once = PTHREAD_ONCE_INIT;
static int ss_reg_rc = SQLITE_ERROR;

static void ss_register(void)
{
	sqlite3_vfs *d = sqlite3_vfs_find(NULL);

	if (!d)
		return;
	ss_vfs = (sqlite3_vfs){
		.iVersion = 1,
		.szOsFile = sizeof(struct sqlsrc_file),
		.mxPathname = 64,
		.zName = SQLSRC_VFS,
		.pAppData = d,
		.xOpen = ss_open,
		.xDelete = ss_delete,
		.xAccess = ss_access,
		.xFullPathname = ss_fullname,
		.xRandomness = ss_random,
		.xSleep = ss_sleep,
		.xCurrentTime = ss_time,
		.xGetLastError = ss_last_error,
	};
	ss_reg_rc = sqlite3_vfs_register(&ss_vfs, 0);
}

int sqlsrc_err(int rc)
{
	switch (rc & 0xff) {
	case SQLITE_OK:
		return 0;
	case SQLITE_NOMEM:
		return -ENOMEM;
	case SQLITE_MISUSE:
	case SQLITE_RANGE:
		return -EINVAL;
	default:
		return -EIO;
	}
}

int sqlsrc_open(struct src *in, sqlite3 **db)
{
	char name[64];
	int rc;

	*db = NULL;
	pthread_once(&ss_once, ss_register);
	if (ss_reg_rc != SQLITE_OK)
		return -ENOMEM;
	snprintf(name, sizeof(name), "tsrc-%p", (void *)in);
	rc = sqlite3_open_v2(name, db, SQLITE_OPEN_READONLY | SQLITE_OPEN_NOMUTEX, SQLSRC_VFS);
	if (rc != SQLITE_OK) {
		int err = sqlsrc_err(rc);
		sqlite3_close(*db);
		*db = NULL;
		return err;
	}
	return 0;
}
