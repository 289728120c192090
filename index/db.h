/* The SQLite index file: schema, opening, and the meta table.
 *
 * Schema (format IDX_FORMAT):
 *   meta(key TEXT PRIMARY KEY, value)      -- archive facts and options; 'complete' last
 *   entries(id INTEGER PRIMARY KEY,        -- the inode number; 1 is the root
 *           parent, name BLOB,             -- raw bytes, never assumed UTF-8
 *           version, latest,               -- 1..N for a repeated path; latest = shown
 *           mode,                          -- st_mode with the type bits
 *           target,                        -- hard link: id holding the data, else NULL
 *           size, stored,                  -- logical size; bytes stored in the archive
 *           data_off, hdr_off,             -- offsets in the (decompressed) tar
 *           uid, gid, mtime, mtime_nsec,   -- seconds (any year) and nanoseconds
 *           rdev, nlink,
 *           link BLOB,                     -- symlink target (or hard link path) as stored
 *           uname, gname, flags,           -- IDX_F_* bits
 *           stream,                        -- the data's stream; NULL: data_off is an offset
 *                                             in the archive file itself
 *           crc32,                         -- the member's CRC-32 as the archive stores it
 *                                             (zip, 7z), or NULL
 *           unreadable, why)               -- -errno and why its bytes cannot be read (a
 *                                             method tarseek lacks, encryption), or NULL
 *   streams(id INTEGER PRIMARY KEY,        -- decoded streams: a .tar.gz has one (IDX_STREAM),
 *                                             a zip one per compressed entry, a 7z per folder
 *           codec, coff, clen,             -- codec over archive bytes [coff, coff + clen)
 *           usize,                         -- decoded size
 *           crcs,                          -- IDX_CRCS_*: how its bytes are checked
 *           flags,                         -- IDX_S_* bits
 *           params)                        -- what the codec needs to start (7z's coders)
 *   unique index entries_name(parent, name, version): lookups and readdir in name order
 *   index entries_stream(stream, data_off), containers only: the members of a stream
 *   sparse(id, seq, off, len, src)         -- extents of sparse files in offset order; src:
 *                                          where the data is, from the member's data_off
 *   xattrs(id, name BLOB, value BLOB)
 *   nested(id INTEGER PRIMARY KEY, image BLOB) -- the index of a member that is an archive
 *                                          (mounted with -r), a whole SQLite image
 *   checkpoints(stream, idx,               -- (stream, idx) unique; offsets within the stream
 *               uoff, ulen, coff, clen, extra, bits, flags,
 *               crcs BLOB,                 -- CRC32 of each segment (segment.h: 64 KiB or
 *                                             1 MiB, as the stream's crcs says), as
 *                                             little-endian u32s
 *               aux BLOB)                  -- codec blob (gzip window), read only on demand
 */
#ifndef TARSEEK_DB_H
#define TARSEEK_DB_H

#include <sqlite3.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define IDX_FORMAT 6
#define IDX_FORMAT_OLDEST 5 /* still read: format 5 lacks IDX_CRCS_SEGMENTS_FINE, nothing else */
/* What tarseek reads inside archives, bumped when it reads more (meta 'readers'): an index
 * made before may show as a file, or empty, what is now a folder (validate.c).
 * 1: disk images, file systems and virtual disks with -r; ar of its own (COFF libraries). */
#define IDX_READERS 1
#define IDX_ROOT 1
#define IDX_STREAM 1 /* the one stream of a compressed tar or file */

enum {
	IDX_F_NESTED = 8,   /* an archive inside the archive: its index is in the nested table */
	IDX_F_SPARSE = 1,   /* extents in the sparse table */
	IDX_F_XATTRS = 2,   /* rows in the xattrs table */
	IDX_F_IMPLICIT = 4, /* a directory made up for a member's missing parent */
	IDX_F_DOSTIME = 32,  /* mtime is a zip DOS time (no zone) read as UTC: shown as local */
};

/* How a stream's decoded bytes are checked (streams.crcs). */
enum {
	IDX_CRCS_CODEC = 0,   /* by the codec itself, per block (index_blocks) */
	IDX_CRCS_SEGMENTS = 1, /* each checkpoint holds the CRC-32s of its segments */
	IDX_CRCS_MEMBERS = 2, /* decoded whole, checked against its members' CRC-32s */
	IDX_CRCS_SEGMENTS_FINE = 3, /* as SEGMENTS, of 64 KiB (SEG_SHIFT_FINE) instead of 1 MiB */
};

enum {
	IDX_S_ZIPLOCAL = 1, /* coff is a zip local header: the compressed bytes follow it */
	/* an encrypted zip entry (crypto/zip_crypt.h): params start with its encryption record
	 * (zcr_params_join), nothing from a password; always IDX_CRCS_MEMBERS (decoded whole at
	 * its first read, under the password that opens it: nothing of its plaintext -- no
	 * window, no segment CRC -- is in the index).  A tarseek older than the flag reads the
	 * bytes as if plain: its CRC check fails them (-EIO), never other bytes. */
	IDX_S_CRYPT = 2,
	IDX_S_SECRET = 4,   /* it decodes only with a password (a 7z folder with an AES coder;
			       an IDX_S_CRYPT entry is too): its decoded bytes are kept off the
			       disk (no shadow, not in the cache's disk tier) */
};

/* Creates the schema in a new, empty database opened read-write for building. */
int db_create_schema(sqlite3 *db);

/* Opens path read-only for queries (immutable: the file is replaced, never modified).
 * A path starting with "mem:" names an index held in memory (db_file_to_mem).
 * 0 or -errno; *out = NULL on error. */
int db_open_ro(const char *path, sqlite3 **out);

/* Reads the index file at path (at most max bytes, else -EFBIG) into memory (common/memvfs.h),
 * where every connection of this process can open it by the returned name ("mem:...",
 * malloc'd) with db_open_ro.  *keeper is a connection that keeps it alive: close it when done
 * with the name.  0 or -errno; *name and *keeper NULL on error. */
int db_file_to_mem(const char *path, size_t max, char **name, sqlite3 **keeper);

/* The same from a serialized image (e.g. a nested archive's index stored as a blob), copied. */
int db_image_to_mem(const void *image, size_t len, char **name, sqlite3 **keeper);

/* Opens (creating) path read-write with the fast pragmas of a one-shot build. */
int db_open_build(const char *path, sqlite3 **out);

/* meta table access.  get returns a malloc'd string or NULL if absent. */
int db_meta_set(sqlite3 *db, const char *key, const char *value);

/* A streams row (see the schema). */
struct db_stream {
	uint64_t id;
	const char *codec;
	uint64_t coff, clen, usize;
	int crcs;	    /* IDX_CRCS_* */
	unsigned flags;	    /* IDX_S_* */
	const void *params; /* NULL: none */
	size_t params_len;
};

/* Inserts a streams row.  *st: the statement, prepared at the first call and reused by the
 * next ones (a zip of 70,000 entries has as many streams); the caller finalizes it.  0 or
 * -errno. */
int db_insert_stream(sqlite3 *db, sqlite3_stmt **st, const struct db_stream *s);
int db_meta_set_u64(sqlite3 *db, const char *key, uint64_t value);
char *db_meta_get(sqlite3 *db, const char *key);
bool db_meta_get_u64(sqlite3 *db, const char *key, uint64_t *out);

/* Runs sql (no results), logging failures.  0 or -EIO. */
int db_exec(sqlite3 *db, const char *sql);

/* Prepares sql, logging failures.  0 or -EIO. */
int db_prepare(sqlite3 *db, const char *sql, sqlite3_stmt **out);

/* The whole-file checksum of a finished index: a CRC32 of the file with the 4 bytes of the
 * SQLite header's user_version field (offset 60) taken as zero, stored in that field, with
 * application_id (offset 68) set to IDX_APP_ID.  db_seal writes it into a closed index file;
 * db_check_seal verifies it (0, -ESTALE on a mismatch, -errno).  It catches a damaged page
 * before any query trusts it. */
#define IDX_APP_ID 0x54534b32u /* "TSK2" */
int db_seal(const char *path);
int db_check_seal(const char *path);
/* The same check on an index held in memory under name (db_file_to_mem): no file read. */
int db_check_seal_mem(const char *name);

/* Maps an SQLite result code to -errno (-ENOMEM, -ENOSPC, -EACCES, -EIO). */
int db_errno(int rc);

#endif
