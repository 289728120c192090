/* Building an index: one pass over the archive (decoding it if compressed) that writes
 * every member, the decoded streams and their checkpoints into a new SQLite file.
 *
 * Two steps, so that the nested pass (nested.c: archives inside the archive, -r) can run in
 * between: idx_build_base writes the members and the streams; idx_build_finish writes what
 * needs all of them (nlink, the archive's stamp), the 'complete' marker last, and seals the
 * file.  open.c strings them together under a temporary name and renames the result into
 * place, so an interrupted build never leaves something that looks like a good index.
 * Nothing here opens an index for reading: the builder (build.c, build_cont.c and their
 * leaves build_rows.c, build_progress.c) depends on no other index module but db, pathmap
 * and stamp, and on the containers.
 */
#ifndef TARSEEK_BUILD_H
#define TARSEEK_BUILD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "shadow/shadow.h"

/* Checkpoint spacing when none is asked for (--gzip-spacing): zip and 7z entries, libarchive's
 * streams, stored data take IDX_SPACING_DEFAULT; a gzip stream takes a denser one, because its
 * checkpoints have sparse windows (codecs/gzip/gzip_sparse.c) of a few KiB each, and a cold read
 * of a small file then decodes 128 KiB on average before its bytes. */
#define IDX_SPACING_DEFAULT (4u << 20)
#define IDX_GZIP_SPACING_DEFAULT (256u << 10)

/* How far a build has come: what a progress line shows (the caller draws it). */
struct idx_progress {
	const char *name; /* the archive's name, without its folders */
	uint64_t done;	  /* bytes of the archive read so far (at most total) */
	uint64_t total;	  /* bytes of the archive */
	uint64_t members; /* members indexed so far */
	double seconds;	  /* since the build started */
	bool end;	  /* the last call: the build ended, err says how */
	int err;	  /* with end: 0, or the build's -errno */
};

struct idx_build_opts {
	uint64_t gzip_spacing; /* bytes of decompressed data between checkpoints */
	bool spacing_any;      /* gzip_spacing was not asked for: gzip streams take
				* IDX_GZIP_SPACING_DEFAULT, and an index built with another
				* spacing is used as it is */
	unsigned threads;      /* decoder threads (>= 1) */
	/* Called on idx_build_base's thread about once a second while the archive is read, and
	 * once with end set as idx_build_base returns, whatever the outcome.  NULL: none (the
	 * nested pass passes none).  The builder writes nothing to the terminal itself: the
	 * front ends draw the line (tools/tprog.h). */
	void (*progress)(void *opaque, const struct idx_progress *p);
	void *progress_opaque;
	unsigned recursion;    /* levels of archives inside archives to index (0: none) */
	bool strip_ext;	       /* a nested archive's folder loses its extension (a.tar.gz -> a) */
	bool ignore_zeros;     /* read past the end-of-archive marker (tar --ignore-zeros) */
	bool oci_raw;	       /* a container image (OCI layout, docker save) shows as the tar it
				* is, not as its merged root file system (containers/oci/) */
	/* The shadow (shadow/shadow.h), written beside the index while the streams are decoded:
	 * which streams get one (0, SHADOW_NEVER: none; the daemon and tarseek-index default to
	 * SHADOW_AUTO, the slow ones) and the most it may take (0: half the free space of its
	 * file system, no more). */
	enum shadow_mode shadow;
	uint64_t shadow_max;
	/* The daemon's first mount: at SHADOW_AUTO, a stream of shadow_later bytes or more (the
	 * compressed file's size) whose codec's scan holds every core (codec.h,
	 * scan_holds_cores) gets no shadow during the build, and stats' shadow_later asks the
	 * caller to make it after the mount (index/shadow_make.h): the mount is ready that much
	 * sooner, and the shadow costs a second decoding at low priority instead.  0: never
	 * (tarseek-index, which is there to make the shadow). */
	uint64_t shadow_later;
};

/* The daemon's shadow_later: below it the shadow's cost during the build is small, and having
 * it from the first mount on is worth more.  (The build of a 64 MiB .tar.bz2 takes ~2 s here,
 * the shadow adding ~13 %.) */
#define IDX_SHADOW_LATER_MIN ((uint64_t)64 << 20)

/* The spacing of the checkpoints of a stream of codec codec_name (NULL: none).
 *
 * Under --shadow always a gzip stream's reads go through its shadow, and its checkpoints are
 * only the way back to the archive when the shadow is lost: they are spaced as other codecs'
 * (IDX_SPACING_DEFAULT), not densely.  Their windows were the dear part of its first mount:
 * backup.tar.gz (597 MB, 1.9 GB decoded, its shadow stored), cold, 3 runs each: 3.23-3.34 s
 * without a shadow, 3.79-3.89 s with one and checkpoints every 256 KiB, 2.76-2.90 s every
 * 4 MiB (1 MiB: 3.00-3.16 s).  A read when the shadow is gone then decodes 2 MiB on average
 * (a few ms), still finer than ratarmount's 16 MiB. */
static inline uint64_t idx_stream_spacing(const struct idx_build_opts *o, const char *codec_name)
{
	if (o->spacing_any && codec_name && strcmp(codec_name, "gzip") == 0)
		return o->shadow == SHADOW_ALWAYS ? IDX_SPACING_DEFAULT : IDX_GZIP_SPACING_DEFAULT;
	return o->gzip_spacing;
}

/* What the builder indexes: a file, or a member of another archive (nested archives). */
struct idx_input {
	struct src *src;  /* the archive's bytes; borrowed */
	const char *name; /* for messages; a single compressed file is named after it */
	uint32_t mode;	  /* st_mode: a single file's permissions */
	uint64_t uid, gid;
	int64_t mtime;	  /* the root's (and a single file's) owner and mtime */
	uint32_t mtime_nsec;
	bool quiet;	  /* the summary line only at debug level (nested archives) */
	const char *etag; /* a remote object's ETag and Last-Modified, recorded; or NULL */
	const char *last_modified;
	/* A stream written while it is indexed (convert/convert.c): the codec is taken as given,
	 * not probed, and its scan_new is the writer's (it finds its state through src, which
	 * reads the archive being converted, for the progress line).  The stream's compressed
	 * length is the size of the src given to idx_build_finish, the written file.  NULL: the
	 * codec is probed from src and src is the archive. */
	const struct codec *codec;
	/* Where this build's shadow goes (shadow_path() of the index's final path), or NULL:
	 * none (a nested archive, a conversion, a tool that wants none). */
	const char *shadow_path;
};

struct idx_build_stats {
	uint64_t members;      /* entries reported by the tar parser (0 for a single file) */
	uint64_t archive_size; /* bytes of the archive file */
	uint64_t usize;	       /* decompressed bytes (= archive_size for a plain tar) */
	uint64_t checkpoints;
	double seconds;
	bool single_file;      /* a compressed file that is not a tar */
	bool inner;	       /* a single file whose bytes look like an archive (a container's
				  or a codec's magic): idx_wrap (nested.h) indexes them */
	bool wrapped;	       /* ... and did: members, container say the inner archive's */
	bool inner_single;     /* the inner one is itself a single compressed file */
	const char *container; /* "zip", "7z" (container.h), or NULL: tar */
	bool damaged;	       /* damage found: the index holds what was readable */
	uint64_t shadow_bytes; /* the shadow written (0: none) */
	uint64_t shadow_decoded; /* the decoded bytes it holds */
	bool shadow_later;	 /* its shadow is left for after the mount (opts' shadow_later) */
};

/* Writes the members, the streams and the checkpoints of in into a new index at tmp (an
 * existing file there is replaced), without the 'complete' marker.  0, or -errno: -EINVAL
 * (neither a tar archive nor a compressed file tarseek knows), -EIO (read error, or the
 * archive is damaged before anything could be indexed), -ENOSPC, -ENOMEM.  Messages say
 * what went wrong; tmp is removed on error.  stats may be NULL. */
int idx_build_base(const struct idx_input *in, const char *tmp, const struct idx_build_opts *o,
		   struct idx_build_stats *stats);

/* Completes the index at tmp: nlink, the archive's size, mtime and fingerprint (in's), a
 * remote object's ETag and Last-Modified, the options o, the 'complete' marker, the seal.  0 or -errno (logged). */
int idx_build_finish(const char *tmp, const struct idx_input *in, const struct idx_build_opts *o);

#endif
