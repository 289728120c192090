/* Containers: the archive formats that say which members an archive holds and where their
 * bytes are -- zip (zip.c), 7z (7z/sza_*.c) and ar (ar.c) here; tar (tar.h) is the one read as a stream,
 * through a codec when compressed, and keeps its own interface.
 *
 * A container reads the archive file (random access, through the source interface) and
 * reports to the index builder, in any order it likes:
 *   - streams: runs of compressed bytes of the archive file that decode, with one codec
 *     (codec.h), to a known number of bytes -- a compressed zip entry, a 7z folder.  The
 *     builder decides how each is made readable: one that decodes to little is decoded whole
 *     on its first read and checked against its members' CRC-32s before any byte is
 *     returned; a larger one is decoded once while indexing, for checkpoints and segment
 *     CRCs, on all cores (several streams at once);
 *   - members (member.h): stream 0 means data_off is an offset in the archive file itself (a
 *     stored zip entry, read in place like a tar member); else the id stream() returned, and
 *     data_off is an offset in that stream's decoded bytes.
 * Everything else -- paths made safe, implicit folders, versions of a repeated path, hard
 * links, -r, the user.tarseek.* attributes -- is the builder's and the same for every format.
 *
 * Probing is by content, never by name: a container whose probe says yes parses the file.
 *
 * Errors: parse returns 0 (damage met in entries is logged and left to their reads; what the
 * format lets it find is reported), or -errno after logging why: -EINVAL not this format after
 * all, -EIO a directory too damaged to use, -ENOTSUP a directory it cannot read (encrypted
 * headers), -ENOMEM; a read of the archive that fails returns the source's error as it came
 * (-EIO, a remote source's -ESTALE, ...); a sink error stops the parse and is returned.  A
 * container never reads outside its buffers, whatever the archive says, and bounds what it
 * allocates by what the file can hold.
 */
#ifndef TARSEEK_CONTAINER_H
#define TARSEEK_CONTAINER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "config.h"
#include "common/source.h"
#include "containers/member.h"

struct cont_stream {
	const char *codec;  /* codec.h name: "deflate", "bzip2", "xz", "zstd", "lzma-zip", "7z" */
	uint64_t coff;	    /* its compressed bytes: [coff, coff + clen) of the archive file */
	uint64_t clen;
	uint64_t usize;	    /* what it decodes to, as the archive's directory says */
	const void *params; /* what the codec needs to decode it from its start (7z: the folder's
			       coders), copied by the builder; NULL when nothing */
	size_t params_len;
	bool zip_local;	    /* coff is a zip local header: the bytes follow it (its length is
			       known only once it is read, which the builder or the reader does) */
	/* An encrypted zip entry (crypto/zip_crypt.h): its record, ZCR_LEN bytes, as the
	 * archive describes the encryption (never anything from a password); NULL when the
	 * bytes are not encrypted.  The codec then reads the bytes decrypted, through
	 * zcr_open's source over the window.  (7z's AES is a coder of the folder: in params.) */
	const uint8_t *crypt;
	bool encrypted;	    /* it decodes only with a password (a 7z folder with an AES coder):
			       its plaintext is never written to disk (no shadow, not in the
			       cache's disk tier: index/db.h's IDX_S_SECRET) */
};

struct cont_sink {
	/* A stream; *id is what members call it (> 0).  0 or -errno (stops the parse). */
	int (*stream)(void *opaque, const struct cont_stream *s, uint64_t *id);
	/* A member.  0 or -errno (stops the parse). */
	int (*member)(void *opaque, const struct arc_member *m);
	/* Optional: how far the parse is, in bytes of the archive file. */
	void (*progress)(void *opaque, uint64_t off);
	void *opaque;
	const char *name; /* the archive's, for messages */
};

struct cont_stats {
	uint64_t members;
	bool damaged; /* something was damaged; what could be read was reported */
};

struct container {
	const char *name; /* "zip", "7z", "libarchive" */
	/* True if the archive file in is in this format.  head: its first len bytes (len <=
	 * 512, fewer for a small file); the probe may read more (zip: the end of the file). */
	bool (*probe)(struct src *in, const uint8_t *head, size_t len);
	/* Reports every stream and member of in (see above).  st may be NULL. */
	int (*parse)(struct src *in, const struct cont_sink *sink, struct cont_stats *st);
};

extern const struct container cont_zip;
extern const struct container cont_7z;
extern const struct container cont_ar; /* ar: static libraries, .deb (ar.c) */
extern const struct container cont_sqlar; /* SQLite archives, sqlite3 -A (sqlar.c) */
#if HAVE_SQUASHFS
extern const struct container cont_squashfs; /* SquashFS images (squashfs/squashfs.c) */
#endif
#if HAVE_LIBARCHIVE
extern const struct container cont_libarchive; /* rar, iso9660, cpio, ar, ... (libarchive.c) */
#endif
#if HAVE_JSONC
/* Container images: an OCI image layout or a `docker save` tar, shown as the image's merged
 * root file system (oci/oci.c).  Not among cont_probe's: the file is a tar too, so the builder
 * asks cont_oci.probe before the tar parser, unless told to show it raw (--oci-raw). */
extern const struct container cont_oci;
#endif

#if HAVE_EXT2FS
extern const struct container cont_ext4; /* ext2, ext3, ext4 (ext4/ext4.c), in cont_images */
#endif

/* Disk images and file systems (GPT/MBR partition tables, ext2/3/4, FAT): containers like
 * the others, but a file in such a format is shown as a folder only with -r (a vm.img.gz
 * stays the file vm.img that a user loop-mounts).  Probed after the archive formats, never
 * by cont_probe: by cont_probe_image, which callers ask only when recursion is on. */
#if HAVE_LIBFSNTFS
extern const struct container cont_ntfs; /* NTFS (ntfs/ntfs.c, libfsntfs) */
#endif
extern const struct container *const cont_images[]; /* NULL-terminated (container.c) */
extern const struct container cont_parttable; /* GPT, MBR (image/parttable.c) */
extern const struct container cont_fat;	      /* FAT12/16/32 (fat/fat.c) */

/* Names of the containers compiled in, for --version: "tar, zip, 7z, ...". */
const char *cont_list(void);

/* The archive container in is made with, or NULL. */
const struct container *cont_probe(struct src *in, const uint8_t *head, size_t len);

/* The disk-image or file-system container in is made with (cont_images), or NULL. */
const struct container *cont_probe_image(struct src *in, const uint8_t *head, size_t len);

#endif
