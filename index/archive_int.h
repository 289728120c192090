/* What archive.c (opening an index, streams, reading files) and query.c (the connection pool
 * and its prepared statements, the tree's queries) share.  Private to those two files.
 *
 * Locks (every lock of an opened archive, and the order they may be taken in):
 *   streams_lock  guards the stream table (a->streams, a->nstreams_open, the idle list, each
 *                 stream's refs); held while a stream's reader is made, which takes
 *                 conns_lock (arch_conn_get, to load the checkpoints) and the chunk cache's
 *                 lock (creader_new); never held while one is freed.
 *   conns_lock    guards the free list of connections only (arch_conn_get/put); never held
 *                 during a query or while another lock is taken.
 * So: streams_lock -> conns_lock, streams_lock -> cache lock.  Reads through a stream's reader
 * (reader.c, cache.c) take no lock of the archive's.
 */
#ifndef TARSEEK_ARCHIVE_INT_H
#define TARSEEK_ARCHIVE_INT_H

#include <pthread.h>
#include <sqlite3.h>
#include <stdatomic.h>
#include <stdint.h>

#include "index/archive.h"

/* One read-only connection to the index, with its prepared statements. */
struct conn {
	sqlite3 *db;
	sqlite3_stmt *lookup, *getattr, *readdir, *name_of, *readlink, *sparse, *xlist, *xget,
	    *aux, *file, *versions, *describe, *nested, *stream, *ckpts, *ranges;
	struct conn *next;
};

/* A decoded stream of the archive (a row of the streams table): its codec over a window of
 * the archive file, and the reader that serves its bytes, made on its first read. */
struct astream {
	struct arch *a;
	uint64_t id;
	const struct codec *codec;
	uint64_t coff, clen, usize;
	int crcs;		/* IDX_CRCS_*: how its bytes are checked */
	unsigned flags;		/* IDX_S_* */
	void *params;		/* the codec's parameters (whole mode), or NULL */
	size_t params_len;
	struct src *in;		/* the window [coff, coff + clen) of the archive file */
	struct creader *reader; /* NULL for a stream that decodes to nothing */
	struct astream *next;	/* in its hash chain */
	/* streams_lock: */
	unsigned refs;		/* open files (and the prefetch) using it */
	struct astream *lru_prev, *lru_next; /* idle ones (refs 0), most recent first */
};

struct arch {
	struct arch_info info;
	char *path, *codec_name;
	char *format; /* "tar", "single", "zip", "7z": the index's kind */
	char *index;	   /* what connections open: a file, or "memdb:..." */
	char *index_shown; /* the index file, for messages */
	sqlite3 *keeper;   /* keeps an in-memory index alive */
	struct arch_env env;
	struct src *file;
	int fd;

	pthread_mutex_t streams_lock;
	struct astream **streams; /* hash of the streams read so far; streams_lock */
	size_t nbuckets, nstreams_open;
	struct astream *idle_head, *idle_tail; /* streams no file uses, LRU; streams_lock */

	pthread_mutex_t conns_lock;
	struct conn *free_conns; /* conns_lock */
};

struct arch_file {
	struct arch *a;
	struct astream *st; /* NULL: the data is in the archive file itself */
	uint64_t data_off, size, stored;
	struct arch_file_ext {
		uint64_t off, len, phys;
	} *ext;
	size_t next;
	bool advised; /* its stored bytes were announced to the source (src_advise) */
	/* where the last read of the stored data ended: a read that starts there reads the
	 * member in order (reads of one file may run at once: only a hint, hence relaxed) */
	_Atomic uint64_t seq_next;
};

/* A connection from the pool (or a new one): 0 and *out, or -errno (-ENOMEM, -EIO when the
 * index cannot be opened: logged).  arch_conn_put gives it back. */
int arch_conn_get(struct arch *a, struct conn **out);
void arch_conn_put(struct arch *a, struct conn *c);
void arch_conn_free(struct conn *c); /* NULL does nothing */

/* sqlite3_step: 1 a row, 0 done, -EIO (logged). */
int arch_step(sqlite3_stmt *st);

#endif
