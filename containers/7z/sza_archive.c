/* The 7z container (container.h): reads a 7z archive's header and reports one stream per
 * folder and one member per file.
 *
 * A 7z archive is a 32-byte signature header (magic, version, a CRC of the next 20 bytes, and
 * the offset, size and CRC of the "next header"), packed streams, and the next header at the
 * end.  The next header is either the header itself (kHeader) or an encoded header
 * (kEncodedHeader): a StreamsInfo describing one folder whose decoded bytes are the header --
 * 7-Zip compresses its headers with LZMA by default, and with -mhe encrypts them with AES,
 * which we refuse (-ENOTSUP).  The header holds StreamsInfo (pack info: where the packed
 * streams are and their sizes; unpack info: the folders, each a graph of coders with its
 * unpack sizes and an optional CRC; substreams info: how many files each folder holds, their
 * sizes and CRCs) and FilesInfo (per file: empty stream / empty file / anti bits, names in
 * UTF-16LE, times, attributes).  Files that are not empty streams take the substreams in
 * order, folder after folder.
 *
 * Every folder the 7z codec (codecs/7z/sevenzip_folder.c) decodes is one stream of codec
 * "7z": its packed streams, which 7-Zip stores one after the other, and the coder chain in
 * the params blob of codecs/7z/sevenzip_chain.h, with the folder's files' sizes and CRCs so
 * that the scan checks each as it passes.  A file's data_off is its offset in the folder's
 * decoded bytes.  Folders using a method the codec lacks (Swap4, RISCV, ZSTD, ...) are not
 * declared; their files are listed with unreadable set.
 *
 * The header is read into memory whole (bounded by the file's size; a decoded header by a
 * multiple of it), CRC-checked, and parsed with bounds checks on every number: counts of
 * folders, coders, packed streams and substreams are checked against the bytes left before
 * anything is allocated, and files are not held in memory at all -- their properties are
 * walked in step, one file at a time, so a header of a million empty files costs nothing
 * beyond its own bytes.  Names are converted to UTF-8 (surrogate pairs joined; a lone
 * surrogate becomes U+FFFD).  A file with no name (7-Zip's -si) is reported with an empty path;
 * the builder names it after the archive.
 *
 * What members get: type and permissions from the attributes' unix extension (0x8000: st_mode
 * in the high 16 bits; a symlink's target is its data, link_in_data), else directories 0755
 * and files 0644 (FILE_ATTRIBUTE_DIRECTORY, or an empty stream that is not an empty file,
 * is a directory), 0555 and 0444 with FILE_ATTRIBUTE_READONLY; the modification time from the FILETIME, or 0 (mtime_sec 0, mtime_nsec 0)
 * when the archive has none for the file; uid and gid 0 (7z stores no owner).  Anti items
 * (deletions in update archives) are not reported.
 *
 * Files: this one reads the signature header and the (encoded) header and is the container;
 * sza_streams.c reads StreamsInfo, sza_files.c FilesInfo, sza_coders.c hands folders to the
 * codec, sza_read.c has the readers and the error they all use; sza_int.h is what they share.
 */
#include "containers/7z/sza_int.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "common/byteio.h"
#include "common/log.h"

static const uint8_t sza_magic[6] = {'7', 'z', 0xBC, 0xAF, 0x27, 0x1C};

/* ---- the header ---------------------------------------------------------------------------- */

static int sza_header(struct sza_db *db, struct sza_rd *r)
{
	uint8_t id;
	bool files = false;

	for (;;) {
		if (sza_rd_byte(db, r, &id))
			return db->err;
		if (id == SZA_ID_END)
			break;
		if (id == SZA_ID_ARCHIVE_PROPS) {
			for (;;) {
				uint64_t t;
				if (sza_rd_num(db, r, &t))
					return db->err;
				if (t == 0)
					break;
				if (sza_rd_skip_prop(db, r))
					return db->err;
			}
		} else if (id == SZA_ID_ADD_STREAMS) {
			/* not written by 7-Zip; read past it */
			if (sza_streams_info(db, r))
				return db->err;
			sza_streams_free(db);
		} else if (id == SZA_ID_MAIN_STREAMS) {
			if (sza_streams_info(db, r))
				return db->err;
		} else if (id == SZA_ID_FILES && !files) {
			if (sza_files_info(db, r))
				return db->err;
			files = true;
		} else {
			return sza_damaged(db, r, "unexpected property in the header");
		}
	}
	if (!files && db->nsubs)
		return sza_damaged(db, r, "streams but no file list");
	return 0;
}

/* ---- self-extracting archives -------------------------------------------------------------- */

/* A self-extracting 7z is an executable stub (7-Zip's 7z.sfx, 7zCon.sfx, 7zSD.sfx -- PE, or
 * p7zip's ELF one -- or an installer's modified stub) with the archive appended; every offset
 * in the archive counts from its own signature header.  7-Zip finds it by searching the file
 * for a signature whose start header's CRC matches; so do we, in a file that starts as an
 * executable, over its first SZA_SFX_SEARCH bytes, and read the archive through a window
 * from there, the streams' offsets shifted back into the file's. */
#define SZA_SFX_SEARCH ((uint64_t)256 << 20)
#define SZA_SFX_CHUNK ((size_t)1 << 20)

static bool sza_is_exe(const uint8_t *head, size_t len)
{
	return len >= 4 && (!memcmp(head, "MZ", 2) || !memcmp(head, "\x7f" "ELF", 4));
}

/* A signature header at p whose start header's CRC matches (where it says the header is, the
 * parse checks: an archive cut short is refused as truncated, not as no archive). */
static bool sza_sig_ok(const uint8_t *p)
{
	return !memcmp(p, sza_magic, sizeof(sza_magic)) && p[6] == 0 &&
	       (uint32_t)crc32(0, p + 12, 20) == le32(p + 8);
}

/* The offset of the archive after an executable stub, or -ENOENT (or a read error). */
static int64_t sza_find(struct src *in)
{
	uint64_t fsize = src_size(in), end, off;
	uint8_t *buf;
	int64_t found = -ENOENT;

	if (fsize == SRC_SIZE_UNKNOWN || fsize < SZA_SIG_SIZE)
		return -ENOENT;
	end = fsize < SZA_SFX_SEARCH ? fsize : SZA_SFX_SEARCH;
	buf = malloc(SZA_SFX_CHUNK + SZA_SIG_SIZE);
	if (!buf)
		return -ENOMEM;
	/* chunks overlap by a signature header, so one across their border is seen */
	for (off = 0; off < end && found == -ENOENT; off += SZA_SFX_CHUNK) {
		size_t n = (size_t)(fsize - off < SZA_SFX_CHUNK + SZA_SIG_SIZE
					    ? fsize - off : SZA_SFX_CHUNK + SZA_SIG_SIZE);
		ssize_t got = src_pread(in, buf, n, off);
		if (got < 0) {
			found = got;
			break;
		}
		for (size_t i = 0; i + SZA_SIG_SIZE <= (size_t)got && i < SZA_SFX_CHUNK; i++) {
			const uint8_t *q = memchr(buf + i, '7', (size_t)got - i);
			if (!q)
				break;
			i = (size_t)(q - buf);
			if (i + SZA_SIG_SIZE <= (size_t)got && i < SZA_SFX_CHUNK &&
			    sza_sig_ok(q)) {
				found = (int64_t)(off + i);
				break;
			}
		}
	}
	free(buf);
	return found;
}

static bool sza_probe(struct src *in, const uint8_t *head, size_t len)
{
	if (len >= sizeof(sza_magic) && memcmp(head, sza_magic, sizeof(sza_magic)) == 0)
		return true;
	return sza_is_exe(head, len) && sza_find(in) > 0;
}

/* The sink of an archive at base in the file: its streams' offsets made the file's. */
struct sza_shift {
	const struct cont_sink *sink;
	uint64_t base;
};

static int shift_stream(void *opaque, const struct cont_stream *s, uint64_t *id)
{
	const struct sza_shift *sh = opaque;
	struct cont_stream c = *s;

	c.coff += sh->base;
	return sh->sink->stream(sh->sink->opaque, &c, id);
}

static int shift_member(void *opaque, const struct arc_member *m)
{
	const struct sza_shift *sh = opaque;
	struct arc_member c = *m;

	if (!c.stream && c.stored) /* not written by 7z: its data is in a folder */
		c.data_off += sh->base;
	return sh->sink->member(sh->sink->opaque, &c);
}

static void shift_progress(void *opaque, uint64_t off)
{
	const struct sza_shift *sh = opaque;

	if (sh->sink->progress)
		sh->sink->progress(sh->sink->opaque, off + sh->base);
}

static int sza_parse_at(struct src *in, const struct cont_sink *sink, struct cont_stats *st);

static int sza_parse(struct src *in, const struct cont_sink *sink, struct cont_stats *st)
{
	uint8_t head[sizeof(sza_magic)];
	struct src *win;
	int64_t base = -ENOENT;
	ssize_t hn;
	int err;

	if (st)
		memset(st, 0, sizeof(*st));
	if (!in || !sink || !sink->stream || !sink->member)
		return -EINVAL;
	hn = src_pread(in, head, sizeof(head), 0);
	if (hn == (ssize_t)sizeof(head) && !memcmp(head, sza_magic, sizeof(head)))
		return sza_parse_at(in, sink, st);
	if (hn > 0 && sza_is_exe(head, (size_t)hn))
		base = sza_find(in);
	if (base <= 0) {
		tfs_log(TFS_LOG_ERR, "%s: no 7z signature at offset 0 nor after a stub",
			sza_name(sink));
		return base == -ENOENT || base == 0 ? -EINVAL : (int)base;
	}
	tfs_log(TFS_LOG_INFO, "%s: a 7z archive at offset %" PRId64 ", after a self-extracting "
		"stub", sza_name(sink), base);
	win = src_window(in, (uint64_t)base, src_size(in) - (uint64_t)base);
	if (!win)
		return -ENOMEM;
	struct sza_shift sh = {.sink = sink, .base = (uint64_t)base};
	struct cont_sink shifted = {.stream = shift_stream, .member = shift_member,
				    .progress = shift_progress, .opaque = &sh, .name = sink->name};
	err = sza_parse_at(win, &shifted, st);
	src_free(win);
	return err;
}

static int sza_parse_at(struct src *in, const struct cont_sink *sink, struct cont_stats *st)
{
	struct sza_db db = {.in = in, .sink = sink};
	uint8_t sig[SZA_SIG_SIZE];
	uint64_t off, size;
	uint32_t crc;
	int err;

	if (st)
		memset(st, 0, sizeof(*st));
	if (!in || !sink || !sink->stream || !sink->member)
		return -EINVAL;
	db.fsize = src_size(in);
	err = src_pread_full(in, sig, sizeof(sig), 0);
	if (err) {
		tfs_log(TFS_LOG_ERR, "%s: %s", sza_name(sink),
			err == -EIO ? "the file is shorter than a 7z "
				      "signature header"
				    : "read error in the signature header");
		return err == -EIO ? -EINVAL : err;
	}
	if (memcmp(sig, sza_magic, sizeof(sza_magic)) != 0) {
		tfs_log(TFS_LOG_ERR, "%s: no 7z signature at offset 0", sza_name(sink));
		return -EINVAL;
	}
	if (sig[6] != 0) {
		tfs_log(TFS_LOG_ERR, "%s: format version %u.%u is not supported", sza_name(sink),
			sig[6], sig[7]);
		return -ENOTSUP;
	}
	if ((uint32_t)crc32(0, sig + 12, 20) != le32(sig + 8)) {
		tfs_log(TFS_LOG_ERR,
			"%s: damaged signature header: its CRC does not match (offset 8)",
			sza_name(sink));
		return -EIO;
	}
	off = le64(sig + 12);
	size = le64(sig + 20);
	crc = le32(sig + 28);
	if (size == 0) { /* an empty archive */
		if (st)
			st->members = 0;
		return 0;
	}
	if (db.fsize == SRC_SIZE_UNKNOWN) {
		tfs_log(TFS_LOG_ERR,
			"%s: the archive's size is unknown: the header cannot be found",
			sza_name(sink));
		return -EIO;
	}
	if (off > db.fsize || size > db.fsize || SZA_SIG_SIZE + off > db.fsize - size) {
		tfs_log(TFS_LOG_ERR,
			"%s: truncated: the header at offset %" PRIu64 " (%" PRIu64
			" bytes) is past the end of the file (%" PRIu64 " bytes)",
			sza_name(sink), SZA_SIG_SIZE + off, size, db.fsize);
		return -EIO;
	}
	db.hdr_off = SZA_SIG_SIZE + off;
	db.hlen = (size_t)size;
	db.hdr = malloc(db.hlen);
	if (!db.hdr)
		return -ENOMEM;
	err = src_pread_full(in, db.hdr, db.hlen, db.hdr_off);
	if (err) {
		sza_bad(&db, err, "7z: cannot read the header at offset %" PRIu64, db.hdr_off);
		goto out;
	}
	if ((uint32_t)crc32(0, db.hdr, (uInt)db.hlen) != crc) {
		sza_bad(&db, -EIO,
			"7z: damaged header: the CRC of the header at offset %" PRIu64
			" (%zu bytes) does not match",
			db.hdr_off, db.hlen);
		goto out;
	}
	for (int depth = 0;; depth++) {
		struct sza_rd r = {db.hdr, db.hlen, 0};
		uint8_t id;
		uint8_t *dec = NULL;
		size_t declen = 0;

		if (sza_rd_byte(&db, &r, &id))
			goto out;
		if (id == SZA_ID_HEADER) {
			sza_header(&db, &r);
			break;
		}
		if (id != SZA_ID_ENCODED || depth == SZA_ENCODED_MAX) {
			sza_damaged(&db, &r, "neither a header nor an encoded header");
			goto out;
		}
		if (sza_streams_info(&db, &r) || sza_decode_header(&db, &dec, &declen))
			goto out;
		sza_streams_free(&db);
		free(db.hdr);
		db.hdr = dec;
		db.hlen = declen;
		db.decoded = true;
	}
out:
	err = db.err;
	if (err)
		tfs_log(err == -ENOTSUP ? TFS_LOG_WARNING : TFS_LOG_ERR, "%s: %s", sza_name(sink),
			strncmp(db.msg, "7z: ", 4) ? db.msg : db.msg + 4);
	if (st) {
		st->members = db.members;
		st->damaged = db.damaged;
	}
	sza_streams_free(&db);
	free(db.hdr);
	free(db.name);
	return err;
}

const struct container cont_7z = {
	.name = "7z",
	.probe = sza_probe,
	.parse = sza_parse,
};
