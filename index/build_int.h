/* What the files of the index builder share: build.c (the pass, a tar, a single file),
 * build_cont.c (the streams of containers: zip, 7z, libarchive's), and the two leaves they
 * both call: build_rows.c (the row writer: members and checkpoints into the index) and
 * build_progress.c (progress, told to the caller).  Private to them.
 *
 * One thread writes to the database, except while build_cont.c decodes several streams at
 * once: then every statement runs under db_lock (bld_lock/bld_unlock), and nothing else is
 * running.
 */
#ifndef TARSEEK_BUILD_INT_H
#define TARSEEK_BUILD_INT_H

#include <pthread.h>
#include <sqlite3.h>
#include <stdbool.h>
#include <stdint.h>

#include "codecs/codec.h"
#include "seek/stream.h"
#include "index/build.h"
#include "containers/container.h"
#include "containers/member.h"

struct pathmap;
struct bld_streams;

/* The shadow of a build (build_shadow.c): made at the first stream that wants one. */
struct bld_shadow {
	const char *path;   /* where it goes, or NULL: none */
	const char *name;   /* the archive, for messages */
	enum shadow_mode mode;
	uint64_t max;
	unsigned threads;
	struct shadow_writer *w;
	uint64_t id;
	bool failed;	    /* it could not be made: no stream gets one */
	uint64_t later_min; /* the build's shadow_later option */
	uint64_t store_min; /* shadow_store_only's size (TARSEEK_SHADOW_STORE_MIN, for tests) */
	bool later;	    /* a stream's shadow was left for after the mount */
};

struct builder {
	sqlite3 *db;
	const struct codec *codec; /* NULL for a plain tar */
	sqlite3_stmt *ins_entry, *upd_dir, *ins_sparse, *ins_xattr, *ins_ckpt, *set_old,
	    *ins_stream;
	sqlite3_stmt *set_unreadable, *set_link;
	struct pathmap *map;
	uint64_t next_id;
	uint64_t members;
	uint64_t nckpt;
	uint64_t last_id; /* the row the last member became, 0 if it made none */
	pthread_mutex_t db_lock; /* while build_cont.c decodes streams on several threads */
	struct cstream_sink sink; /* checkpoints -> on_ckpt */
	struct bld_shadow *shadow;
	struct shadow_stream *sh_stream; /* the tar or single file's stream in the shadow */

	/* progress */
	struct src *file; /* the archive file */
	uint64_t file_size;
	const char *name;
	const struct idx_build_opts *o; /* o->progress: told how far the build is */
	double t0, last;

	/* root's defaults for implicit directories, and members that name no owner */
	uint32_t uid, gid;
	int64_t mtime;
	uint32_t mtime_nsec;
};

struct row {
	uint64_t parent;
	const uint8_t *name;
	size_t name_len;
	uint32_t version, mode, flags;
	uint64_t target, size, stored, data_off, hdr_off, uid, gid, rdev;
	int64_t mtime;
	uint32_t mtime_nsec;
	const uint8_t *link;
	size_t link_len;
	const char *uname, *gname;
	uint64_t stream; /* the data's stream, 0: the archive file itself */
	bool has_crc;
	uint32_t crc;
	int unreadable; /* -errno, 0 if readable */
	const char *why;
};

/* ---- build_shadow.c ---- */

void bld_shadow_init(struct bld_shadow *s, const struct idx_input *in,
		     const struct idx_build_opts *o);

/* Whether a stream of codec c whose compressed bytes are in (to look for a zstd seek table)
 * gets a shadow; the writer is made at the first that does.  Not thread-safe (build_cont.c
 * asks under db_lock, before its jobs start). */
bool bld_shadow_wants(struct bld_shadow *s, const struct codec *c, struct src *in);

/* True if the archive's own stream (codec c over in) leaves its shadow for after the mount
 * (idx_build_opts' shadow_later; logged, and recorded in s->later): then it gets none now. */
bool bld_shadow_later(struct bld_shadow *s, const struct codec *c, struct src *in);

/* The shadow's handle for stream id, and the sink's tap on it (cstream_sink.tap_*).  NULL
 * when there is no writer (any more). */
struct shadow_stream *bld_shadow_tap(struct bld_shadow *s, uint64_t id, struct cstream_sink *sink);

/* Ends stream h (NULL: none): kept with its decoded size usize, or dropped (damaged, or not
 * decoded after all: indexed from its blocks). */
void bld_shadow_end(struct shadow_stream *h, bool keep, uint64_t usize);

/* Ends the writer: the map, the rename into place, its id recorded in the index (db, inside
 * the build's transaction).  A shadow that cannot be made is no error: a message, none.
 * Sets stats' shadow figures.  0 or -errno of the index itself. */
int bld_shadow_finish(struct bld_shadow *s, sqlite3 *db, struct src *archive,
		      struct idx_build_stats *st);

void bld_shadow_free(struct bld_shadow *s); /* the writer, if not finished: removed */

/* ---- build_rows.c ---- */

/* sqlite3_step of a statement that returns no row, reset afterwards.  0 or -errno. */
int bld_step_done(sqlite3_stmt *st);

/* A new row of the entries table for r; *id its id (b->next_id, then advanced).  0 or
 * -errno. */
int bld_insert_row(struct builder *b, const struct row *r, uint64_t *id);

/* One checkpoint row of stream; with_crcs: its ncrcs segment CRCs (else the column stays
 * NULL). */
int bld_store_ckpt(struct builder *b, uint64_t stream, uint64_t idx, const struct codec_ckpt *ck,
		   const void *aux, size_t auxlen, bool with_crcs, const uint32_t *crcs,
		   uint64_t ncrcs);

/* A member into the entries (tar_callbacks.entry's contract); b->last_id is its row. */
int bld_member(void *opaque, const struct arc_member *e);

/* ---- build_progress.c ---- */

/* Tells b->o->progress how far the build is (about once a second; force: now). */
void bld_progress(struct builder *b, bool force);

/* Tells b->o->progress that the build ended with err (0 or -errno). */
void bld_progress_end(struct builder *b, int err);

/* A source reading inner (borrowed) that reports progress between steps of a long skip;
 * with window, small reads are served from a window of inner read ahead (an archive file;
 * not a decoding stream, which buffers).  0 and *out (the caller frees it), or -ENOMEM. */
int bld_progress_src(struct builder *b, struct src *inner, bool window, struct src **out);

/* ---- build_cont.c ---- */

/* Indexes the archive file in, made with container ct (build_cont.c): its members, its
 * streams (decoded where they need checkpoints), symlink targets kept in data.  Fills
 * st->members and st->damaged.  0 or -errno. */
int bld_container(struct builder *b, const struct idx_input *in, const struct container *ct,
		  const struct idx_build_opts *o, struct idx_build_stats *st);

#endif
