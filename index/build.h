/* Building an index: one pass over the archive (decoding it if compressed) that writes
 * every member and every checkpoint into a new SQLite file.
 *
 * The file is written under a temporary name in the index's folder with a 'complete'
 * meta row written last, then renamed into place: an interrupted build never leaves
 * something that looks like a good index.
 */
#ifndef TARSEEK_BUILD_H
#define TARSEEK_BUILD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct idx_build_opts {
	uint64_t gzip_spacing; /* bytes of decompressed data between gzip checkpoints */
	unsigned threads;      /* decoder threads (>= 1) */
	bool progress;	       /* progress line on stderr, about once a second, if a terminal */
	unsigned recursion;    /* levels of archives inside archives to index (0: none) */
	bool strip_ext;	       /* a nested archive's folder loses its extension (a.tar.gz -> a) */
	bool ignore_zeros;     /* read past the end-of-archive marker (tar --ignore-zeros) */
};

/* What the builder indexes: a file, or a member of another archive (nested archives). */
struct idx_input {
	struct src *src;  /* the archive's bytes; borrowed */
	const char *name; /* for messages; a single compressed file is named after it */
	uint32_t mode;	  /* st_mode: a single file's permissions */
	uint64_t uid, gid;
	int64_t mtime;	  /* the root's (and a single file's) owner and mtime */
	uint32_t mtime_nsec;
	bool quiet;	  /* the summary line only at debug level (nested archives) */
};

struct idx_build_stats {
	uint64_t members;      /* entries reported by the tar parser (0 for a single file) */
	uint64_t archive_size; /* bytes of the archive file */
	uint64_t usize;	       /* decompressed bytes (= archive_size for a plain tar) */
	uint64_t checkpoints;
	double seconds;
	bool single_file;      /* a compressed file that is not a tar */
	bool damaged;	       /* damage found: the index holds what was readable */
};

/* Builds the index of archive at index_path.  0, or -errno: -ENOENT/-EACCES (archive),
 * -EINVAL (neither a tar archive nor a compressed file tarseek knows), -EIO (read error,
 * or the archive is damaged before anything could be indexed), -ENOSPC, -ENOMEM.
 * Messages say what went wrong.  stats may be NULL. */
int idx_build(const char *archive, const char *index_path, const struct idx_build_opts *o,
	      struct idx_build_stats *stats);

/* As idx_build, for any source. */
int idx_build_from(const struct idx_input *in, const char *index_path,
		   const struct idx_build_opts *o, struct idx_build_stats *stats);

/* The options string stored in (and compared with) an index: only the options that shape
 * the index of this kind of archive (codec_name NULL for a plain tar).  Writes into buf. */
void idx_options_string(const char *codec_name, const struct idx_build_opts *o, char *buf,
			size_t size);

#endif
