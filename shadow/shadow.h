/* The shadow: what the first mount decoded, kept beside the index so that no later mount
 * decodes a slow stream again.
 *
 * Why.  The index keeps where decoding can start (checkpoints), not what decoding produced.
 * A stream whose restart points are far apart (single-block xz, a solid 7z folder, .Z, bzip2's
 * slow blocks) costs a long decode for the first read near its end, at every mount: the cache
 * and its disk tier die with the daemon.  The indexing pass decodes every byte anyway; the
 * shadow keeps them, recompressed into small independent frames that decode in a millisecond.
 *
 * The file is zstd's seekable format (codecs/zstd/zstd_seekable.h), so `zstd -d` writes the
 * decoded streams out one after the other and any seekable reader can seek in it:
 *
 *     frames of stream A | frames of stream B | ... | map frame | seek table
 *
 * Frames hold whole segments (seek/segment.h) of their stream and never span one of its
 * checkpoints, so that every segment a frame holds is a segment the index stores a CRC for:
 * a read through the shadow decodes its frame and checks each segment against the index, as
 * any read does, and a damaged or foreign shadow can never return wrong bytes.  Each frame
 * also carries its content size and XXH64 checksum.  Frames are compressed at a fast level by
 * pool jobs on the cores the decoder leaves idle; one that no job is free to take is stored
 * (raw blocks, a copy), so the shadow never slows the pass down by more than a copy.
 *
 * The map frame is a skippable frame (magic 0x184D2A5A), listed in the seek table with a
 * decoded size of 0, holding (little-endian):
 *     "TSSHADOW" | u32 version (1) | u32 map length | u64 shadow id |
 *     u32 fingerprint length | fingerprint bytes |
 *     u32 stream count | per stream: u64 stream id, u64 decoded size, u32 segment shift,
 *                        u32 run count, runs of (u32 first frame, u32 frame count) |
 *     u32 CRC-32 of everything before it
 * A stream's frames are in order but need not be contiguous: streams that a build decodes at
 * once (a zip's or 7z's, one per thread) interleave their frames, each a run.  A shadow of one
 * tar stream is one run, and `zstd -d` then writes out the decoded tar.
 * The shadow id is the index's (its meta row "shadow_id"): a shadow belongs to one index, and
 * through the fingerprint (the index's stamp of the archive) to one archive.
 *
 * Where: beside the index, named like it with ".shadow.zst" for ".sqlite"
 * (backup.tar.gz.index.shadow.zst).  Written under a temporary name and renamed into place
 * when whole, so a reader never sees half a shadow.
 */
#ifndef TARSEEK_SHADOW_H
#define TARSEEK_SHADOW_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "codecs/codec.h"
#include "common/source.h"

#define SHADOW_MAP_NIBBLE 0xA /* the map's skippable frame: magic 0x184D2A5A */
#define SHADOW_MAGIC "TSSHADOW"
#define SHADOW_VERSION 1
#define SHADOW_LEVEL (-1) /* zstd's --fast=1: half level 1's CPU for 11 % more bytes (README) */
/* Decoded bytes a frame aims at: one segment of the stream (SEG_SHIFT_FINE, the shift shadowed
 * streams are indexed with), so that a small file read at random decodes one frame, in one call
 * (libzstd decodes a whole frame straight into the segment when it fits).  1000 files of
 * backup.tar.xz read cold through a second mount: 0.37 s with 64 KiB frames against 0.40 s with
 * 128 KiB (medians of 6, interleaved), for a shadow 1.8 % larger (714 against 702 MB) and the
 * same first mount (README, Performance). */
#define SHADOW_FRAME ((size_t)64 << 10)

/* The shadow's path for the index at index_path (malloc'd), or NULL if out of memory. */
char *shadow_path(const char *index_path);

/* ---- When (shadow_policy.c) ---- */

enum shadow_mode {
	SHADOW_NEVER,  /* 0: what a zeroed options struct asks (tests, tools that want none) */
	SHADOW_AUTO,   /* where a random read is costly (the daemon's and tarseek-index's default) */
	SHADOW_ALWAYS, /* every decoded stream */
};

/* The mode when no --shadow is given: SHADOW_AUTO, or what $TARSEEK_SHADOW says (the test
 * suite runs with never, so that its tests read the archives; tests/mount/test_shadow.py
 * asks for the shadow itself). */
enum shadow_mode shadow_default(void);

/* "auto", "always", "never" -> 0 and *out, or -EINVAL. */
int shadow_mode_parse(const char *s, enum shadow_mode *out);
const char *shadow_mode_name(enum shadow_mode m);

/* Whether a stream of codec c (by codec.h's name) gets a shadow in mode m.  auto: every
 * codec but those whose random reads are already cheap -- "stored" (bytes as they are),
 * gzip and raw deflate (checkpoints every 256 KiB by default, ISA-L's inflate) -- and zstd
 * when zstd_small_frames (a seek table of frames of at most 1 MiB: already a shadow).  always:
 * every codec but "stored".  never: none. */
bool shadow_wanted(enum shadow_mode m, const char *codec, bool zstd_small_frames);

/* Whether a shadow begun with a stream of this codec, `size` bytes in the archive, is to be
 * stored as it is decoded, every frame raw (shadow_wopts' threads = 0): for decoders faster
 * than zstd --fast compresses (gzip and deflate by ISA-L, zstd, lz4, lzo) on streams of min
 * bytes or more (SHADOW_STORE_MIN; TARSEEK_SHADOW_STORE_MIN for tests).  Such a decoder leaves no core to spare: backup.tar.gz (597 MB,
 * 1.9 GB decoded) indexed in 2.6-3.0 s without a shadow, 4.8 s with a compressed one (0.71 GB),
 * 3.5-3.9 s with frames compressed by jobs at nice 19 as they could (1.4 GB), 3.3-3.4 s stored
 * (1.9 GB).  A small stream's whole shadow costs a fraction of a second, and is compressed. */
#define SHADOW_STORE_MIN ((uint64_t)64 << 20)
bool shadow_store_only(const char *codec, uint64_t size, uint64_t min);

/* The most a shadow written at path may take: max (0: no limit of its own) and never more than
 * SHADOW_FREE_SHARE of the free space of the file system that path's folder is on.  0 if that
 * cannot be learnt (no shadow then). */
#define SHADOW_FREE_SHARE 2 /* a half */
uint64_t shadow_budget(const char *path, uint64_t max);

/* A new shadow id (random, never 0). */
uint64_t shadow_new_id(void);

/* ---- Writing (shadow_write.c) ---- */

struct shadow_writer;

struct shadow_wopts {
	uint64_t id;		 /* the index's shadow id */
	int level;		 /* zstd level; 0: SHADOW_LEVEL */
	size_t frame;		 /* decoded bytes a frame aims at; 0: SHADOW_FRAME */
	unsigned threads;	 /* compressing jobs (0: none, every frame stored) */
	uint64_t max_bytes;	 /* the shadow is given up past this size (0: no limit) */
	const char *name;	 /* the archive, for messages */
};

/* Creates the temporary file beside path.  0 and *out, or -errno (logged): no shadow then, the
 * caller goes on without one.  *out = NULL on error. */
int shadow_writer_new(const char *path, const struct shadow_wopts *o, struct shadow_writer **out);

/* The bytes of one stream, in order: begin, then for each chunk (the stream's checkpoints, in
 * order) shadow_chunk at its first byte followed by its bytes, then end with the stream's
 * decoded size, which frees the handle.  seg_shift: its segments' size (segment.h).  None of
 * these fails the caller: a writer that meets an error (a full disk, the size limit) logs it
 * once and ignores everything after; shadow_writer_finish then says so.  begin returns NULL
 * when the writer has failed (or w is NULL); the others take NULL and do nothing.  Several
 * streams may be written at once, one thread each: a handle is used by one thread at a time.
 * Every handle is ended or dropped before shadow_writer_finish. */
struct shadow_stream;
struct shadow_stream *shadow_stream_begin(struct shadow_writer *w, uint64_t stream_id,
					  unsigned seg_shift);
void shadow_chunk(struct shadow_stream *s);
void shadow_write(struct shadow_stream *s, const void *p, size_t len);
void shadow_stream_end(struct shadow_stream *s, uint64_t usize);
/* Forgets the stream (its frames stay in the file, unlisted: a stream the pass could not
 * finish, damaged) and frees the handle. */
void shadow_stream_drop(struct shadow_stream *s);

/* Whether the writer still works (no error so far). */
bool shadow_writer_ok(const struct shadow_writer *w);

struct shadow_wstats {
	uint64_t streams, frames, stored_frames; /* stored: raw (no job, or none was free) */
	uint64_t decoded, written;		 /* bytes in, bytes of the file */
};
/* stored_frames and written are final once shadow_writer_finish has returned. */
void shadow_writer_stats(const struct shadow_writer *w, struct shadow_wstats *out);

/* Writes the map (with fingerprint, the index's stamp of the archive) and the seek table, and
 * renames the file into place.  0, or -errno when there is no shadow (the temporary file is
 * removed by shadow_writer_free; the cause was logged). */
int shadow_writer_finish(struct shadow_writer *w, const char *fingerprint);

/* Removes the temporary file and frees w (after finish: frees it only).  NULL does nothing. */
void shadow_writer_free(struct shadow_writer *w);

/* ---- Reading (shadow_read.c) ---- */

struct shadow;

/* Opens the shadow at path for the index whose shadow id and fingerprint are given.  0 and
 * *out; -ENOENT if there is none; -ESTALE if it belongs to another index or archive; -EIO if
 * it is damaged (its seek table, its map); -ENOMEM.  Logs nothing: the caller says once what
 * it does about it. */
int shadow_open(const char *path, uint64_t id, const char *fingerprint, struct shadow **out);

/* The same over a source (owned by the result, freed on error too).  id 0 and fingerprint
 * NULL accept any (real ids are never 0): for tools that look into a shadow, and the fuzzer. */
int shadow_open_src(struct src *file, uint64_t id, const char *fingerprint, struct shadow **out);

/* The shadow's frames of stream stream_id as checkpoints of codec_zstd over shadow_src (one
 * per frame: uoff, ulen, coff, flags = the frame's number), malloc'd.  usize and seg_shift are
 * the index's for the stream: a shadow that disagrees is -EIO.  -ENOENT if the shadow does not
 * hold the stream. */
int shadow_stream_ckpts(struct shadow *sh, uint64_t stream_id, uint64_t usize, unsigned seg_shift,
			struct codec_ckpt **ckpts, size_t *n);

/* The shadow file as a source (owned by sh, thread-safe). */
struct src *shadow_src(struct shadow *sh);

/* Streams held, and the file's size; stream i's id, decoded size and segment shift. */
size_t shadow_nstreams(const struct shadow *sh);
void shadow_stream_info(const struct shadow *sh, size_t i, uint64_t *id, uint64_t *usize,
			unsigned *seg_shift);
uint64_t shadow_size(const struct shadow *sh);

void shadow_close(struct shadow *sh); /* NULL does nothing */

#endif
