/* What the files of an opened archive share: archive.c (opening and closing the index,
 * archives inside), archive_file.c (its files), streams.c (the decoded streams) and query.c
 * (the connection pool and its prepared statements, the tree's queries).  Private to them.
 *
 * Locks (every lock of an opened archive, and the order they may be taken in):
 *   streams_lock  guards the stream table (a->streams, the idle list a->idle, each stream's
 *                 refs and idle links); held while a stream's reader is made, which takes
 *                 conns_lock (arch_conn_get, to load the checkpoints), the chunk cache's
 *                 lock (creader_new) and, for a zip entry, whatever reading its local header
 *                 from the archive file takes (a remote archive's net locks; an archive
 *                 inside another, the outer one's read path: reader, cache, workers); held
 *                 while arch_get_reader_stats reads each reader's stats (reader.c pool_lock);
 *                 never held while a stream is freed.
 *   conns_lock    guards the free list of connections only (arch_conn_get/put); never held
 *                 during a query or while another lock is taken.
 * So: streams_lock -> conns_lock, cache lock, reader.c pool_lock, an archive file's read.
 * Reads through a stream's reader (reader.c, cache.c) take no lock of the archive's but
 * conns_lock (a decoder's aux blob, load_aux).  The daemon's whole order: mount/union.c.
 */
#ifndef TARSEEK_ARCHIVE_INT_H
#define TARSEEK_ARCHIVE_INT_H

#include <pthread.h>
#include <sys/stat.h>
#include <sqlite3.h>
#include <stdatomic.h>
#include <stdint.h>

#include "common/htable.h"
#include "common/list.h"
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
	struct src *in;		/* the window [coff, coff + clen) of the archive file, or, for
				   an encrypted zip entry (IDX_S_CRYPT), its plaintext over it */
	struct src *cipher;	/* IDX_S_CRYPT: that window (in reads it), else NULL */
	bool authenticated;	/* in is AES's plaintext, its authentication code checked */
	/* -EACCES: encrypted, and no password given opens it (said once, when found): kept in
	 * the table without a reader, so that later reads fail at once without a word */
	int denied;
	struct creader *reader; /* NULL for a stream that decodes to nothing */
	bool shadowed;		/* reader reads the shadow (shadow/), not the archive */
	/* made (under streams_lock) when a read through the shadow failed: the archive's
	 * reader, which every read takes from then on */
	_Atomic(struct creader *) fallback;
	/* streams_lock: */
	struct htable_node hnode; /* in a->streams, by hash_u64(id) */
	unsigned refs;		  /* open files (and the prefetch) using it */
	struct list_node idle;	  /* in a->idle while refs is 0 */
};

struct arch {
	struct arch_info info;
	char *path, *codec_name;
	char *format; /* "tar", "single", "zip", "7z": the index's kind */
	char *index;	   /* what connections open: a file, or "mem:..." */
	char *index_shown; /* the index file, for messages */
	sqlite3 *keeper;   /* keeps an in-memory index alive */
	struct arch_env env;
	struct src *file;
	int fd;
	struct stat opened; /* the archive file's fstat when opened (fd >= 0): a plain member's
			       reads fail once it changes (archive_file.c file_changed) */
	/* an archive behind a codec (nested.h idx_wrap): this is the inner archive, its bytes
	 * the decoded file of outer, which it owns (closed after it); else NULL */
	struct arch *outer;
	uint64_t wrapped; /* open_index: the meta 'wrapped', the single file holding one */

	pthread_mutex_t streams_lock;
	struct htable streams; /* the streams read so far (open), by id; streams_lock */
	/* the shadow beside the index (streams.c), opened at the first stream that can use
	 * it; streams_lock */
	struct shadow *shadow;
	enum { ARCH_SH_UNTRIED, ARCH_SH_OPEN, ARCH_SH_NONE } shadow_state;
	struct list_node idle; /* those no file uses, most recent first; streams_lock */

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
	bool said;    /* its archive's change was logged (file_changed) */
	/* where the last read of the stored data ended: a read that starts there reads the
	 * member in order (reads of one file may run at once: only a hint, hence relaxed) */
	_Atomic uint64_t seq_next;
	char *name;		   /* the member's name (the index's name column), for messages */
	atomic_bool denied_logged; /* the read refused for want of a password was logged */
};

/* The stream id of a (streams.c), made on first use, with a reference (arch_stream_put gives
 * it back).  0 and *out, or -errno (logged); *out = NULL on error.  -EACCES: an encrypted
 * entry no password opens (logged the first time only, naming the entry). */
int arch_stream_get(struct arch *a, uint64_t id, struct astream **out);

/* Gives back a reference: a stream no file uses joins the idle list, and the oldest idle
 * ones beyond the streams kept open are freed.  NULL does nothing. */
void arch_stream_put(struct arch *a, struct astream *st);

/* Frees every stream (arch_close: no reference may be left), and the shadow. */
void arch_streams_free(struct arch *a);

/* Reads st's decoded bytes [off, off + len), as creader_read_ahead; a read through the
 * shadow that fails is made again from the archive (the stream then reads the archive only,
 * the shadow is used for no other stream: said once). */
ssize_t arch_stream_read(struct astream *st, void *buf, size_t len, uint64_t off,
			 uint64_t ahead_to);

/* The longest symlink target read from an entry's data (PATH_MAX with its NUL): a longer
 * "target" cannot be one (symlink(2) refuses it too). */
#define ARCH_LINK_MAX 4095

/* The target of symlink ino as the index holds it (query.c): 0 and *len, -ERANGE (*len set)
 * if size is too small, -EINVAL if ino is no symlink, -ENOENT, or -ENODATA when the target is
 * the entry's data and the index does not hold it (encrypted, or not decoded while indexing):
 * arch_readlink (archive_file.c) then reads it through the entry's reader. */
int arch_link_stored(struct arch *a, uint64_t ino, char *buf, size_t size, size_t *len);

/* A connection from the pool (or a new one): 0 and *out, or -errno (-ENOMEM, -EIO when the
 * index cannot be opened: logged).  arch_conn_put gives it back. */
int arch_conn_get(struct arch *a, struct conn **out);
void arch_conn_put(struct arch *a, struct conn *c);
void arch_conn_free(struct conn *c); /* NULL does nothing */

/* sqlite3_step: 1 a row, 0 done, -EIO (logged). */
int arch_step(sqlite3_stmt *st);

#endif
