/* The codec interface.  One file per codec (gzip.c, bzip2.c, xz.c, ...), each exporting one
 * const struct codec.  A codec does three things, all through the source interface:
 *
 *  1. probe: recognise its magic bytes at the start of a file (never the file name);
 *  2. scan:  during the one indexing pass, decode the whole stream sequentially, hand the
 *            decoded bytes to the caller (the tar parser) and emit checkpoints, the places
 *            where decoding can later start without the data before them;
 *  3. decode: later, start a decoder at one checkpoint and read forward from there.
 *
 * What is NOT here: caching, segmenting, integrity of decoded data against the index, the
 * choice of which checkpoint serves a read.  Those are generic (stream.c, reader.c, cache.c)
 * and the same for every codec.
 *
 * Errors: functions return 0 / a byte count, or -errno.  Corrupt or truncated compressed data
 * is -EIO, after logging (tfs_log, TFS_LOG_ERR) what is wrong and at which compressed offset.
 * A valid file that uses a feature the codec refuses (lzop multi-part or filtered files) is
 * -ENOTSUP, logged the same way: the index treats it as a failure, not as damage to salvage.
 * -ENOMEM stays -ENOMEM.  The libraries' codes (Z_*, BZ_*, LZMA_*) are mapped in one place,
 * liberr.c; lzo.c maps LZO_E_*.  A codec never aborts, never reads outside its buffers, and never returns bytes
 * it knows to be wrong.
 *
 * Streams of containers: a zip entry or a 7z folder is a run of compressed bytes of the
 * archive, read through a window of the archive file as if it were a file of its own; it
 * may come without the codec's own framing (zip's deflate is raw deflate: codec "deflate")
 * or with parameters only the container knows (codec_opts.params).  Codecs made only for
 * containers have a probe that never says yes.  Such a stream may also be decoded with the
 * scan alone, from its start, without storing a checkpoint (the reader does that for small
 * ones, checking them against their members' CRC-32s).
 *
 * Threads: scan and decoder objects are used by one thread at a time; different objects may
 * be used concurrently (the source is thread-safe).  A codec may start its own worker threads
 * inside a scan (opts->threads) and must join them in scan_free.
 */
#ifndef TARSEEK_CODEC_H
#define TARSEEK_CODEC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "config.h"
#include "common/source.h"

/* A checkpoint: a plain record with no pointers, stored as one SQLite row (plus an optional
 * aux blob stored beside it, e.g. gzip's compressed 32 KiB window).  Fields marked
 * codec-defined mean what the codec's file says they mean. */
struct codec_ckpt {
	uint64_t uoff;	/* decompressed offset where decoding from this checkpoint starts */
	uint64_t ulen;	/* decompressed bytes up to the next checkpoint (or the end); set by the
			   index when the checkpoint is stored -- a codec may emit 0 here */
	uint64_t coff;	/* compressed byte offset where this checkpoint's data starts */
	uint64_t clen;	/* codec-defined (e.g. compressed length of a block) */
	uint64_t extra; /* codec-defined */
	uint32_t bits;	/* codec-defined (e.g. gzip: unread bits of the byte before coff) */
	uint32_t flags; /* codec-defined */
};

/* Where a scan sends its checkpoints. */
struct codec_sink {
	/* Called once per checkpoint, in increasing uoff order, the first at uoff 0, and before
	 * scan_read returns any byte at or after ck->uoff, always from the thread calling
	 * scan_read (never from a codec's worker thread).  aux (may be NULL) is only valid
	 * during the call.  Returns 0, or -errno to stop the scan (scan_read returns it).
	 * A stream that decodes to no bytes at all may emit no checkpoint. */
	int (*checkpoint)(void *opaque, const struct codec_ckpt *ck, const void *aux, size_t auxlen);
	void *opaque;
};

struct codec_opts {
	uint64_t spacing; /* wanted decompressed bytes between checkpoints, for codecs that
			     choose where to put them (gzip); block codecs use their blocks
			     (lzo: groups of its small blocks, ~1 MiB, whatever spacing says) */
	unsigned threads; /* worker threads the scan may run (>= 1) */
	/* A stream of a container (container.h) may need more than its bytes to be decoded:
	 * the container's parameters for it (7z: the folder's coders), valid during scan_new
	 * only.  The scan puts into each checkpoint's aux what a decoder started there needs.
	 * NULL/0 for a file of the codec's own format. */
	const void *params;
	size_t params_len;
};

struct codec_scan;
struct codec_dec;

struct codec {
	const char *name; /* "gzip", "bzip2", "xz", "zstd", "lzo", "lz4", "lzip", "lzma",
			     "compress"; of container streams only:
			     "deflate", "deflate64", "lzma-zip", "ppmd-zip",
			     "stored", "7z" */

	/* True if head (the first len bytes of the file, len <= 512 and possibly less when
	 * the file is small) starts with this codec's magic. */
	bool (*probe)(const uint8_t *head, size_t len);

	/* Starts a scan of the whole source (from offset 0).  *out = NULL on error. */
	int (*scan_new)(struct src *in, const struct codec_opts *opts, const struct codec_sink *sink,
			struct codec_scan **out);

	/* Next decompressed bytes, in order (len > 0): > 0 bytes, 0 at the end of the data, or
	 * -errno.
	 * After an error every later call returns the same error.  The scan verifies what the
	 * format lets it verify (CRCs, sizes, block checks) before reporting the end. */
	ssize_t (*scan_read)(struct codec_scan *s, void *buf, size_t len);

	/* Decompressed bytes that passed the codec's own checks so far (gzip: up to the end
	 * of the last member whose CRC matched; block codecs: the end of the last good block).
	 * After scan_read fails, data past this point is not trusted. */
	uint64_t (*scan_verified)(struct codec_scan *s);

	/* The original file name stored in the compressed file's header (gzip FNAME, lzop),
	 * or NULL.  Valid until scan_free.  May be NULL (the function pointer) if the format
	 * has none. */
	const char *(*scan_name)(struct codec_scan *s);

	void (*scan_free)(struct codec_scan *s); /* NULL does nothing; joins worker threads */

	/* Optional (NULL if the codec has no such fast path).  Emits every checkpoint, with
	 * ulen set, from the file's own metadata alone (block headers, an index, a seek table),
	 * without decoding, and sets *usize.  Used to index a single compressed file that is not
	 * a tar (vm.img.lzo) in the time it takes to read its headers.  No segment CRCs are
	 * stored then, so only a codec whose decoders verify every byte they return (a check
	 * per block, verified before or when the block's last byte is returned) may offer it:
	 * return -ENOTSUP when this file lacks such checks (e.g. lzop without checksums, xz with
	 * check type none, zstd frames without checksum or stated size that no seek table makes
	 * up for), and the caller falls back to a full scan.  0 or -errno (-EIO for
	 * damaged metadata, logged). */
	int (*index_blocks)(struct src *in, const struct codec_opts *opts,
			    const struct codec_sink *sink, uint64_t *usize);

	/* Starts a decoder positioned at ck->uoff.  ck->ulen is set (the decoded length of
	 * this checkpoint's chunk).  aux/auxlen: the blob the scan emitted with ck (NULL/0 if
	 * none).  *out = NULL on error. */
	int (*dec_new)(struct src *in, const struct codec_ckpt *ck, const void *aux, size_t auxlen,
		       struct codec_dec **out);

	/* Next decompressed bytes: > 0, or 0 when this decoder cannot continue (the end of
	 * its chunk for codecs whose decoders stop there, or the end of the data), or -errno
	 * (-EIO for corrupt data, logged).  A decoder may continue past the end of its chunk
	 * when the format allows (gzip does); the caller stops reading where it wants.
	 * Bytes may be returned before the check that covers them (a CRC at the end of a
	 * member or block): a mismatch fails a later call (bzip2: the call that reaches the end
	 * of the block, i.e. of the chunk; zstd holds a frame's last byte back until the frame's
	 * checksum has passed). */
	ssize_t (*dec_read)(struct codec_dec *d, void *buf, size_t len);

	/* Approximate bytes of memory a live decoder holds (for the pool's budget). */
	size_t (*dec_memory)(const struct codec_dec *d);

	void (*dec_free)(struct codec_dec *d); /* NULL does nothing */

	/* True if a decoder reads its input block by block, nothing past its chunk's
	 * compressed end but the few bytes of the next block's or frame's header (lz4, lzop,
	 * xz blocks, zstd frames).  The span the reader advises before starting one then ends
	 * there, not a whole input buffer (64 KiB) further: on a chunk of 60 KiB that slack
	 * doubled what a read took from the disk. */
	bool exact_input;

	/* True if the scan decodes every stream on all opts->threads workers, whatever its
	 * layout (bzip2: every block is a job), and the decoding is the costly part: a shadow
	 * compressed while it runs takes its cores from the decoder, so the daemon's first mount
	 * of a large such stream leaves the shadow for after the mount (build_shadow.c). */
	bool scan_holds_cores;
};

extern const struct codec codec_gzip;
extern const struct codec codec_deflate;  /* raw deflate (zip entries): never probed */
extern const struct codec codec_lzma_zip; /* zip's LZMA (method 14): never probed */
extern const struct codec codec_stored;   /* bytes as they are (zip's method 0): never probed */
extern const struct codec codec_deflate64; /* zip's Deflate64 (method 9): never probed */
extern const struct codec codec_ppmd_zip;  /* zip's PPMd var.I (method 98): never probed */
extern const struct codec codec_bzip2;
extern const struct codec codec_xz;
extern const struct codec codec_7z; /* 7z folders (container streams only; probe says no) */
extern const struct codec codec_sqlar; /* SQLite archives' files (container streams) */
extern const struct codec codec_squashfs; /* SquashFS images' files (container streams) */
#if HAVE_LIBARCHIVE
extern const struct codec codec_libarchive; /* entries libarchive decodes (container streams) */
#endif
#if HAVE_ZSTD
extern const struct codec codec_zstd;
#endif
#if HAVE_LZO
extern const struct codec codec_lzo;
#endif
#if HAVE_LZ4
extern const struct codec codec_lz4;
#endif
#if HAVE_LZIP
extern const struct codec codec_lzip;
#endif
extern const struct codec codec_lzma;	  /* .lzma (LZMA_alone) */
extern const struct codec codec_compress; /* .Z (compress, LZW) */

/* The codec whose magic starts head, or NULL (an uncompressed file). */
const struct codec *codec_probe(const uint8_t *head, size_t len);

/* The codec named name ("gzip", ..., and those of container streams: "deflate", "lzma-zip"),
 * or NULL. */
const struct codec *codec_by_name(const char *name);

/* Comma-separated names of the codecs compiled in, for --version. */
const char *codec_list(void);

/* The name a single compressed file shows in the mount: base name of archive_path without
 * its compression suffix (".gz", ".bz2", ".xz", ".zst", ".lzo", ...; ".tgz" -> ".tar"), or
 * with ".decompressed" appended when there is no known suffix.  Returns malloc'd string. */
char *codec_strip_suffix(const char *archive_path);

/* True if archive_path's name says it is a compressed tar (".tar.gz", ".tgz", ".tar.xz", ...). */
bool codec_names_tar(const char *archive_path);

/* True if name (a member's name) ends like an archive or a compressed file (".tar",
 * ".tar.gz", ".tgz", ".gz", ".xz", ".zip", ".7z", ".jar", ...): a candidate for -r
 * (confirmed by its content). */
bool codec_archive_name(const char *name, size_t len);

/* name without its archive extension (".tar", ".tar.gz", ".tgz", ".gz", ...), malloc'd,
 * or NULL if it has none (or nothing would be left). */
char *codec_strip_archive_ext(const char *name, size_t len);

#endif
