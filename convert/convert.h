/* Converting an archive into its fastest seekable form (tarseek-convert).
 *
 * The source is anything tarseek mounts: a tar (plain or in any codec), a single compressed
 * file, or a container (zip, 7z, and libarchive's rar, iso9660, cpio, ar, cab, lha, xar, warc,
 * rpm); a local file or an http://, https:// or s3:// URL (read through net.h, its index
 * found or built as a mount would; the output then gets mode 0644 and the object's
 * Last-Modified).  The output's form comes from its extension (encoder.h: .tar.zst,
 * .tar.xz, .tar.gz, .tar.lzo; .tar writes the decoded stream as it is).  A tar's decoded
 * stream is copied byte for byte: the tar inside is unchanged.  A container's members are
 * written as a new tar (convert_tar.h, tar_write.h: pax where ustar does not do): the tree a
 * mount shows, in the order of their data in the source.  The tar is cut into blocks of about
 * block_size decoded bytes, at member
 * boundaries (the start of a member's first header, from the source's index): a block ends at
 * the first member start between 1 and 5/4 block sizes, else at the last one past a quarter of
 * a block, else, inside a member then longer than a block, at the block size.  So a member
 * smaller than a block never spans two.  Blocks are compressed on `threads` threads and
 * written in order.
 *
 * The index is written in the same pass: the index builder (build.h) parses the tar as the
 * blocks go out, and takes each block's checkpoint from the encoder, so the output mounts
 * without a first-mount decode and its index is what a scan of the output would make (same
 * checkpoints for zstd and xz; for gzip, checkpoints at the block boundaries).
 *
 * Nothing appears under the output's name or the index's until both are complete (written
 * under temporary names in the same folders, renamed at the end); a failed, interrupted
 * (convert_interrupt) or unverified conversion removes them.  Memory: about
 * (threads + 2) x 5/4 x (block_size + its compressed bound), plus the encoders' own state
 * (xz -6: ~100 MiB per thread).
 */
#ifndef TARSEEK_CONVERT_H
#define TARSEEK_CONVERT_H

#include <stdbool.h>
#include <stdint.h>

#include "convert/encoder.h"
#include "index/open.h"

struct net_env;

/* How far a conversion has come: what a progress line shows (the caller draws it). */
struct cv_progress {
	const char *output; /* the output's name */
	uint64_t done;	    /* decoded bytes written so far */
	uint64_t total;	    /* decoded bytes in all */
	uint64_t written;   /* bytes of output written so far */
	double seconds;	    /* since the writing started */
	bool end;	    /* the last call: the writing ended (done or failed); erase the line */
};

struct cv_opts {
	const struct encoder *enc; /* NULL: a plain .tar */
	struct enc_opts enc_opts;
	uint64_t block_size;	/* decoded bytes per block (0: the form's default) */
	unsigned threads;	/* compressing threads (>= 1) */
	/* Called on cv_convert's thread about once a second while the output is written, once
	 * more when its last byte is (done = total), and once with end set when the writing ends,
	 * whatever the outcome.  NULL: none.  cv_convert writes nothing to the terminal itself. */
	void (*progress)(void *opaque, const struct cv_progress *p);
	void *progress_opaque;
	bool verify;		/* re-read the output through its index and compare */
	bool force;		/* replace an existing output */
	const char *index_file; /* where the output's index goes; NULL: OUTPUT.index.sqlite */
	struct idx_opts source; /* how the source's index is found or built */
	const struct net_env *net; /* for a source given as a URL (net.h); NULL: none */
};

struct cv_stats {
	uint64_t source_size, usize, output_size, blocks, members;
	double seconds, verify_seconds;
	bool built_source_index; /* the source had no index: one was built first */
};

/* The default block size of a form (enc NULL: plain). */
uint64_t cv_default_block(const struct encoder *enc);

/* Converts source into output.  0, or -errno with the reason logged: -EINVAL (not an
 * archive, an unknown form, output = source, a container member's name a tar cannot hold),
 * -EEXIST (output exists, no force), -EIO (the source is damaged -- its index says so, or a
 * container's member fails its read --, or --verify found a difference), -EACCES or
 * -EOPNOTSUPP (a container's member tarseek cannot read: encrypted, a method it lacks), -EINTR
 * (interrupted), -ENOSPC, -ENOMEM. */
int cv_convert(const char *source, const char *output, const struct cv_opts *o,
	       struct cv_stats *st);

/* Compares output (with its index, as a mount would find it, or o->index_file) with source:
 * every regular member's bytes, read through both indexes.  A tar source's members are
 * paired by where their headers start; a container's by path, through the trees a mount
 * shows: a name on one side only, another type, size, symlink target or device is a
 * difference too.  0, -EIO (a difference or a read error, logged), -errno. */
int cv_check(const char *source, const char *output, const struct cv_opts *o);

/* Async-signal-safe: makes a running conversion stop and clean up (it returns -EINTR). */
void cv_interrupt(void);

#endif
