/* A SQLite database read through a source (common/source.h): an SQLite archive inside a tar,
 * on a remote server, or a file, opened read-only by SQLite's own code through a VFS whose
 * reads are src_pread.  The database is opened immutable: no lock, no journal, no write, no
 * file beside it is ever looked for.
 *
 * Thread-safe as sqlite3 connections are: one connection per thread at a time; the source is
 * shared (sources are thread-safe).
 */
#ifndef TARSEEK_SQLITE_SRC_H
#define TARSEEK_SQLITE_SRC_H

#include <sqlite3.h>

#include "common/source.h"

/* Opens the database whose bytes are in (borrowed: it must outlive the connection).  0 and
 * *db, or -errno (-ENOMEM; -EIO: SQLite cannot open it); *db = NULL on error. */
int sqlsrc_open(struct src *in, sqlite3 **db);

/* A SQLite result code as -errno: SQLITE_NOMEM -ENOMEM, SQLITE_CORRUPT/NOTADB/IOERR/... -EIO. */
int sqlsrc_err(int rc);

#endif
