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
 * Every folder the 7z codec (codecs/sevenzip.c) decodes is one stream of codec "7z": its
 * packed streams, which 7-Zip stores one after the other, and the coder chain in the params
 * blob of codecs/sevenzip_chain.h, with the folder's files' sizes and CRCs so that the scan
 * checks each as it passes.  A file's data_off is its offset in the folder's decoded bytes.
 * Folders using PPMd, AES or another method the codec lacks are not declared; their files are
 * listed with unreadable set.
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
 * is a directory); the modification time from the FILETIME, or 0 (mtime_sec 0, mtime_nsec 0)
 * when the archive has none for the file; uid and gid 0 (7z stores no owner).  Anti items
 * (deletions in update archives) are not reported.
 */
#include "containers/container.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <zlib.h>

#include "codecs/codec.h"
#include "codecs/7z/sevenzip_chain.h"
#include "common/byteio.h"
#include "common/log.h"

#define SZ_SIG_SIZE 32
#define SZ_HDR_MAX ((uint64_t)1 << 30)	      /* largest decoded header */
#define SZ_HDR_RATIO 256		      /* ... and no more than this times the file */
#define SZ_ENCODED_MAX 4		      /* encoded headers inside encoded headers */
#define SZ_SUBS_TABLE_MAX ((uint64_t)1 << 16) /* files whose CRCs go into a folder's params */
#define SZ_CODERS_MAX 64		      /* 7-Zip's own limit */
#define SZ_MSG 320

#define SZ_FILETIME_UNIX 116444736000000000LL /* 1970-01-01 in 100 ns since 1601 */
#define SZ_ATTR_DIR 0x10u
#define SZ_ATTR_UNIX 0x8000u

enum {
	SZ_ID_END = 0x00,
	SZ_ID_HEADER = 0x01,
	SZ_ID_ARCHIVE_PROPS = 0x02,
	SZ_ID_ADD_STREAMS = 0x03,
	SZ_ID_MAIN_STREAMS = 0x04,
	SZ_ID_FILES = 0x05,
	SZ_ID_PACK_INFO = 0x06,
	SZ_ID_UNPACK_INFO = 0x07,
	SZ_ID_SUBSTREAMS = 0x08,
	SZ_ID_SIZE = 0x09,
	SZ_ID_CRC = 0x0A,
	SZ_ID_FOLDER = 0x0B,
	SZ_ID_UNPACK_SIZE = 0x0C,
	SZ_ID_NUM_UNPACK = 0x0D,
	SZ_ID_EMPTY_STREAM = 0x0E,
	SZ_ID_EMPTY_FILE = 0x0F,
	SZ_ID_ANTI = 0x10,
	SZ_ID_NAME = 0x11,
	SZ_ID_MTIME = 0x14,
	SZ_ID_ATTRIB = 0x15,
	SZ_ID_ENCODED = 0x17,
};

static const uint8_t sz_magic[6] = {'7', 'z', 0xBC, 0xAF, 0x27, 0x1C};

/* A reader over the header in memory; the first error sticks (and is described in db->msg). */
struct sz_rd {
	const uint8_t *p;
	size_t len, pos;
};

/* One folder as the header describes it. */
struct sz_fold {
	size_t rec;	     /* header offset of its record (parsed again by sz_fold_get) */
	size_t sizes;	     /* header offset of its first unpack size */
	uint64_t first_pack; /* its first packed stream */
	uint64_t coff;	     /* archive offset of its packed bytes ... */
	uint64_t clen;	     /* ... and their length */
	uint64_t usize;	     /* its decoded size (the final coder's) */
	uint64_t nsub;	     /* files in it */
	uint64_t first_sub;
	uint32_t ncoders, npacked; /* ncoders: its outputs, one per coder in what 7-Zip writes */
	uint32_t main;		   /* the output that is the folder's */
	uint32_t crc;
	bool has_crc;
};

struct sz_db {
	struct src *in;
	uint64_t fsize;
	const struct cont_sink *sink;
	uint8_t *hdr; /* the header being parsed */
	size_t hlen;
	bool decoded;	  /* hdr was decoded from an encoded header */
	uint64_t hdr_off; /* archive offset of the (encoded) next header, for messages */
	int err;
	char msg[SZ_MSG];

	/* streams info */
	uint64_t pack_pos;
	uint64_t npack;
	uint64_t *pack_size;
	uint64_t nfold;
	struct sz_fold *fold;
	uint64_t nsubs;
	uint64_t *sub_size;
	uint32_t *sub_crc;
	uint8_t *sub_has;

	/* files */
	uint64_t members;
	bool damaged;
	char *name; /* a file's name in UTF-8 */
	size_t name_cap;
};

__attribute__((format(printf, 3, 4))) static int sz_bad(struct sz_db *db, int err,
							 const char *fmt, ...);

/* The archive's name for messages. */
static const char *sz_name(const struct cont_sink *sink)
{
	return sink && sink->name ? sink->name : "7z";
}

/* The parse's first error, logged when the parse returns (after the archive's name). */
static int sz_bad(struct sz_db *db, int err, const char *fmt, ...)
{
	va_list ap;

	if (db->err)
		return db->err;
	va_start(ap, fmt);
	vsnprintf(db->msg, sizeof(db->msg), fmt, ap);
	va_end(ap);
	db->err = err;
	return err;
}

/* A damaged header: what, and where (offset in the header and where the header is). */
static int sz_damaged(struct sz_db *db, const struct sz_rd *r, const char *what)
{
	return sz_bad(db, -EIO, "7z: damaged header: %s at byte %zu of the %s at offset %" PRIu64,
		      what, r ? r->pos : 0, db->decoded ? "decoded header" : "header",
		      db->hdr_off);
}

/* ---- reading numbers ----------------------------------------------------------------------- */

static int rd_byte(struct sz_db *db, struct sz_rd *r, uint8_t *v)
{
	*v = 0;
	if (r->pos >= r->len)
		return sz_damaged(db, r, "unexpected end");
	*v = r->p[r->pos++];
	return 0;
}

/* 7z's NUMBER: the first byte's leading 1 bits say how many bytes follow. */
static int rd_num(struct sz_db *db, struct sz_rd *r, uint64_t *v)
{
	uint8_t first, mask = 0x80;
	uint64_t val = 0;

	*v = 0;
	if (rd_byte(db, r, &first))
		return db->err;
	for (unsigned i = 0; i < 8; i++) {
		uint8_t b;

		if ((first & mask) == 0) {
			val |= (uint64_t)(first & (mask - 1)) << (8 * i);
			*v = val;
			return 0;
		}
		if (rd_byte(db, r, &b))
			return db->err;
		val |= (uint64_t)b << (8 * i);
		mask >>= 1;
	}
	*v = val;
	return 0;
}

/* A NUMBER that must be at most max (a count, checked against the bytes left). */
static int rd_count(struct sz_db *db, struct sz_rd *r, uint64_t max, uint64_t *v,
		    const char *what)
{
	if (rd_num(db, r, v))
		return db->err;
	if (*v > max) {
		char m[96];

		snprintf(m, sizeof(m), "%s %" PRIu64 " is more than the header can hold", what, *v);
		return sz_damaged(db, r, m);
	}
	return 0;
}

static int rd_skip(struct sz_db *db, struct sz_rd *r, uint64_t n)
{
	if (n > r->len - r->pos)
		return sz_damaged(db, r, "a property runs past the end");
	r->pos += (size_t)n;
	return 0;
}

static int rd_u32(struct sz_db *db, struct sz_rd *r, uint32_t *v)
{
	if (r->len - r->pos < 4)
		return sz_damaged(db, r, "unexpected end");
	*v = le32(r->p + r->pos);
	r->pos += 4;
	return 0;
}

/* A bit vector of n bits at the reader: allocated (n <= bytes left * 8, checked). */
static int rd_bits(struct sz_db *db, struct sz_rd *r, uint64_t n, uint8_t **out)
{
	size_t bytes = (size_t)((n + 7) / 8);

	*out = NULL;
	if ((n + 7) / 8 > r->len - r->pos)
		return sz_damaged(db, r, "a bit vector runs past the end");
	*out = malloc(bytes ? bytes : 1);
	if (!*out)
		return sz_bad(db, -ENOMEM, "7z: out of memory");
	memcpy(*out, r->p + r->pos, bytes);
	r->pos += bytes;
	return 0;
}

static bool bit(const uint8_t *v, uint64_t i)
{
	return v[i / 8] & (0x80 >> (i % 8));
}

/* Digests: an all-defined byte (or a bit vector), then a CRC per defined item. */
static int rd_digests(struct sz_db *db, struct sz_rd *r, uint64_t n, uint8_t *has, uint32_t *crc)
{
	uint8_t all, *def = NULL;
	int err = 0;

	if (rd_byte(db, r, &all))
		return db->err;
	if (!all && rd_bits(db, r, n, &def))
		return db->err;
	for (uint64_t i = 0; i < n && !err; i++) {
		has[i] = all || bit(def, i);
		if (has[i])
			err = rd_u32(db, r, &crc[i]);
	}
	free(def);
	return err;
}

/* Skips the data of a property we do not read (its size first). */
static int rd_skip_prop(struct sz_db *db, struct sz_rd *r)
{
	uint64_t size;

	if (rd_num(db, r, &size))
		return db->err;
	return rd_skip(db, r, size);
}

/* ---- folders ------------------------------------------------------------------------------- */

/* Parses a folder record at r: counts it (coders, inputs, packed streams), and fills f when
 * f is not NULL and the folder fits the chain struct (*fits).  Damage is -EIO. */
static int sz_fold_parse(struct sz_db *db, struct sz_rd *r, struct szc_folder *f, bool *fits,
			 uint32_t *ncoders, uint32_t *npacked, uint32_t *main)
{
	uint64_t nc, nin = 0, nout = 0, in_fed = 0, taken = 0;
	bool ok = true;

	if (f)
		memset(f, 0, sizeof(*f));
	if (rd_count(db, r, SZ_CODERS_MAX, &nc, "number of coders"))
		return db->err;
	if (nc == 0)
		return sz_damaged(db, r, "a folder without coders");
	if (nc > SZC_MAX_CODERS)
		ok = false;
	for (uint64_t c = 0; c < nc; c++) {
		uint8_t flags, idlen;
		uint64_t id = 0, ci = 1, co = 1, np = 0;

		if (rd_byte(db, r, &flags))
			return db->err;
		idlen = flags & 0x0F;
		if (flags & 0xC0)
			return sz_damaged(db, r, "a coder with alternative methods or reserved bits");
		if (idlen > 8)
			return sz_damaged(db, r, "a method id longer than 8 bytes");
		for (unsigned i = 0; i < idlen; i++) {
			uint8_t b;
			if (rd_byte(db, r, &b))
				return db->err;
			id = id << 8 | b;
		}
		if (flags & 0x10) {
			if (rd_count(db, r, SZ_CODERS_MAX, &ci, "number of coder inputs") ||
			    rd_count(db, r, SZ_CODERS_MAX, &co, "number of coder outputs"))
				return db->err;
		}
		if (co != 1)
			ok = false; /* 7-Zip writes none since 15.x */
		nin += ci;
		nout += co;
		if (flags & 0x20 && rd_num(db, r, &np))
			return db->err;
		if (np > r->len - r->pos)
			return sz_damaged(db, r, "coder properties run past the end");
		if (ok && f && c < SZC_MAX_CODERS) {
			struct szc_coder *k = &f->coders[c];

			k->method = id;
			k->nin = (uint8_t)ci;
			if (np > SZC_PROPS_MAX) {
				ok = false;
			} else {
				k->nprops = (uint8_t)np;
				memcpy(k->props, r->p + r->pos, (size_t)np);
			}
		}
		r->pos += (size_t)np;
	}
	if (nout == 0 || nin < nout - 1 || nin > 64 || nout > 64)
		return sz_damaged(db, r, "a folder's numbers of streams do not add up");
	uint64_t nbind = nout - 1, np = nin - nbind;
	if (np == 0)
		return sz_damaged(db, r, "a folder without packed streams");
	if (nin > SZC_MAX_IN || np > SZC_MAX_PACKED)
		ok = false;
	for (uint64_t b = 0; b < nbind; b++) {
		uint64_t in, out;

		if (rd_num(db, r, &in) || rd_num(db, r, &out))
			return db->err;
		if (in >= nin || out >= nout)
			return sz_damaged(db, r, "a bind pair out of range");
		if ((in_fed & (1ull << in)) || (taken & (1ull << out)))
			return sz_damaged(db, r, "a stream bound twice in a folder");
		in_fed |= 1ull << in;
		taken |= 1ull << out;
		if (ok && f) {
			f->bind[b].in = (uint8_t)in;
			f->bind[b].out = (uint8_t)out;
		}
	}
	if (np == 1) {
		uint64_t in = 0;

		while (in < nin && (in_fed & (1ull << in)))
			in++;
		if (in >= nin)
			return sz_damaged(db, r, "no input left for the packed stream");
		if (ok && f)
			f->packed[0] = (uint8_t)in;
	} else {
		for (uint64_t p = 0; p < np; p++) {
			uint64_t in;

			if (rd_num(db, r, &in))
				return db->err;
			if (in >= nin)
				return sz_damaged(db, r, "a packed stream index out of range");
			if (ok && f)
				f->packed[p] = (uint8_t)in;
		}
	}
	/* main: the one output no bind pair takes (nbind = nout - 1 distinct ones are) */
	*main = 0;
	while (taken & (1ull << *main))
		(*main)++;
	if (ok && f) {
		f->ncoders = (uint8_t)nc;
		f->nbind = (uint8_t)nbind;
		f->npacked = (uint8_t)np;
		f->main = (uint8_t)*main;
	}
	*fits = ok;
	*ncoders = (uint32_t)nout;
	*npacked = (uint32_t)np;
	return 0;
}

/* Folder i's record and sizes into f.  0, or 1 if it does not fit the chain struct (too many
 * coders or streams for us: not decodable), or -errno. */
static int sz_fold_get(struct sz_db *db, uint64_t i, struct szc_folder *f)
{
	struct sz_fold *fo = &db->fold[i];
	struct sz_rd r = {db->hdr, db->hlen, fo->rec};
	uint32_t nc, np, main;
	bool fits;
	int err = sz_fold_parse(db, &r, f, &fits, &nc, &np, &main);

	if (err)
		return err;
	if (!fits)
		return 1;
	r.pos = fo->sizes;
	for (unsigned c = 0; c < f->ncoders; c++)
		if (rd_num(db, &r, &f->unpack_size[c]))
			return db->err;
	for (unsigned p = 0; p < f->npacked; p++)
		f->pack_size[p] = db->pack_size[fo->first_pack + p];
	f->arc_off = fo->coff;
	f->index = (uint32_t)i;
	f->has_crc = fo->has_crc;
	f->crc = fo->crc;
	return 0;
}

/* ---- streams info -------------------------------------------------------------------------- */

static void sz_streams_free(struct sz_db *db)
{
	free(db->pack_size);
	free(db->fold);
	free(db->sub_size);
	free(db->sub_crc);
	free(db->sub_has);
	db->pack_size = NULL;
	db->fold = NULL;
	db->sub_size = NULL;
	db->sub_crc = NULL;
	db->sub_has = NULL;
	db->npack = db->nfold = db->nsubs = 0;
}

static int sz_pack_info(struct sz_db *db, struct sz_rd *r)
{
	uint8_t id;

	if (rd_num(db, r, &db->pack_pos) ||
	    rd_count(db, r, r->len - r->pos, &db->npack, "number of packed streams"))
		return db->err;
	db->pack_size = calloc(db->npack ? db->npack : 1, sizeof(*db->pack_size));
	if (!db->pack_size)
		return sz_bad(db, -ENOMEM, "7z: out of memory");
	for (;;) {
		if (rd_byte(db, r, &id))
			return db->err;
		if (id == SZ_ID_END)
			return 0;
		if (id == SZ_ID_SIZE) {
			for (uint64_t i = 0; i < db->npack; i++)
				if (rd_num(db, r, &db->pack_size[i]))
					return db->err;
		} else if (id == SZ_ID_CRC) {
			uint8_t *has = malloc(db->npack ? db->npack : 1);
			uint32_t *crc = malloc((db->npack ? db->npack : 1) * sizeof(*crc));
			int err = has && crc ? rd_digests(db, r, db->npack, has, crc)
					     : sz_bad(db, -ENOMEM, "7z: out of memory");
			free(has);
			free(crc);
			if (err)
				return err;
		} else if (rd_skip_prop(db, r)) {
			return db->err;
		}
	}
}

static int sz_unpack_info(struct sz_db *db, struct sz_rd *r)
{
	uint64_t packs = 0;
	uint8_t id, ext;

	if (rd_byte(db, r, &id))
		return db->err;
	if (id != SZ_ID_FOLDER)
		return sz_damaged(db, r, "no folder list");
	if (rd_count(db, r, (r->len - r->pos) / 2, &db->nfold, "number of folders") ||
	    rd_byte(db, r, &ext))
		return db->err;
	if (ext != 0)
		return sz_bad(db, -ENOTSUP, "7z: folders stored outside the header are not supported");
	db->fold = calloc(db->nfold ? db->nfold : 1, sizeof(*db->fold));
	if (!db->fold)
		return sz_bad(db, -ENOMEM, "7z: out of memory");
	for (uint64_t i = 0; i < db->nfold; i++) {
		struct sz_fold *fo = &db->fold[i];
		bool fits;

		fo->rec = r->pos;
		if (sz_fold_parse(db, r, NULL, &fits, &fo->ncoders, &fo->npacked, &fo->main))
			return db->err;
		fo->first_pack = packs;
		packs += fo->npacked;
		fo->nsub = 1;
	}
	if (packs > db->npack)
		return sz_damaged(db, r, "the folders use more packed streams than there are");
	if (rd_byte(db, r, &id))
		return db->err;
	if (id != SZ_ID_UNPACK_SIZE)
		return sz_damaged(db, r, "no unpack sizes");
	for (uint64_t i = 0; i < db->nfold; i++) {
		struct sz_fold *fo = &db->fold[i];

		fo->sizes = r->pos;
		for (uint32_t c = 0; c < fo->ncoders; c++) { /* one per output; main's is the folder's */
			uint64_t v;
			if (rd_num(db, r, &v))
				return db->err;
			if (c == fo->main)
				fo->usize = v;
		}
	}
	for (;;) {
		if (rd_byte(db, r, &id))
			return db->err;
		if (id == SZ_ID_END)
			break;
		if (id == SZ_ID_CRC) {
			uint8_t *has = malloc(db->nfold ? db->nfold : 1);
			uint32_t *crc = malloc((db->nfold ? db->nfold : 1) * sizeof(*crc));
			int err = has && crc ? rd_digests(db, r, db->nfold, has, crc)
					     : sz_bad(db, -ENOMEM, "7z: out of memory");
			for (uint64_t i = 0; !err && i < db->nfold; i++) {
				db->fold[i].has_crc = has[i];
				db->fold[i].crc = crc[i];
			}
			free(has);
			free(crc);
			if (err)
				return err;
		} else if (rd_skip_prop(db, r)) {
			return db->err;
		}
	}
	/* where each folder's packed bytes are, and that they are inside the file */
	uint64_t off = SZ_SIG_SIZE + db->pack_pos, p = 0;
	if (db->pack_pos > db->fsize)
		off = UINT64_MAX;
	for (uint64_t i = 0; i < db->nfold; i++) {
		struct sz_fold *fo = &db->fold[i];

		fo->coff = off;
		fo->clen = 0;
		for (uint32_t k = 0; k < fo->npacked; k++, p++) {
			uint64_t s = db->pack_size[p];
			if (off == UINT64_MAX || s > db->fsize || off > db->fsize - s)
				off = UINT64_MAX;
			else
				off += s;
			if (off != UINT64_MAX)
				fo->clen += s;
		}
		if (off == UINT64_MAX)
			fo->coff = UINT64_MAX; /* past the end of the file */
	}
	return 0;
}

static int sz_substreams(struct sz_db *db, struct sz_rd *r)
{
	uint64_t total = 0, unknown = 0, k = 0, left;
	uint8_t id;
	bool sizes = false;

	if (rd_byte(db, r, &id))
		return db->err;
	if (id == SZ_ID_NUM_UNPACK) {
		for (uint64_t i = 0; i < db->nfold; i++) {
			left = r->len - r->pos;
			if (rd_count(db, r, left + 1, &db->fold[i].nsub, "number of files in a folder"))
				return db->err;
			/* all but one of a folder's files need a size of at least one byte */
			if (db->fold[i].nsub > 1 && db->fold[i].nsub - 1 > left)
				return sz_damaged(db, r, "more files in a folder than sizes can follow");
		}
		if (rd_byte(db, r, &id))
			return db->err;
	}
	for (uint64_t i = 0; i < db->nfold; i++) {
		if (db->fold[i].nsub > r->len || total + db->fold[i].nsub > 2 * (uint64_t)r->len + 1)
			return sz_damaged(db, r, "too many files");
		db->fold[i].first_sub = total;
		total += db->fold[i].nsub;
	}
	db->nsubs = total;
	db->sub_size = calloc(total ? total : 1, sizeof(*db->sub_size));
	db->sub_crc = calloc(total ? total : 1, sizeof(*db->sub_crc));
	db->sub_has = calloc(total ? total : 1, 1);
	if (!db->sub_size || !db->sub_crc || !db->sub_has)
		return sz_bad(db, -ENOMEM, "7z: out of memory");
	if (id == SZ_ID_SIZE)
		sizes = true;
	for (uint64_t i = 0; i < db->nfold; i++) {
		struct sz_fold *fo = &db->fold[i];
		uint64_t sum = 0;

		if (fo->nsub == 0)
			continue;
		for (uint64_t j = 1; j < fo->nsub; j++) {
			uint64_t v;

			if (!sizes)
				return sz_damaged(db, r, "no sizes for the files of a folder");
			if (rd_num(db, r, &v))
				return db->err;
			if (v > fo->usize - sum)
				return sz_damaged(db, r, "the files of a folder are larger than it");
			sum += v;
			db->sub_size[k++] = v;
		}
		db->sub_size[k++] = fo->usize - sum;
	}
	if (sizes && rd_byte(db, r, &id))
		return db->err;
	/* a folder with one file and a CRC of its own gives the file that CRC */
	for (uint64_t i = 0; i < db->nfold; i++) {
		struct sz_fold *fo = &db->fold[i];

		if (fo->nsub == 1 && fo->has_crc) {
			db->sub_has[fo->first_sub] = 1;
			db->sub_crc[fo->first_sub] = fo->crc;
		} else {
			unknown += fo->nsub;
		}
	}
	for (;;) {
		if (id == SZ_ID_END)
			return 0;
		if (id == SZ_ID_CRC) {
			uint8_t *has = malloc(unknown ? unknown : 1);
			uint32_t *crc = malloc((unknown ? unknown : 1) * sizeof(*crc));
			int err = has && crc ? rd_digests(db, r, unknown, has, crc)
					     : sz_bad(db, -ENOMEM, "7z: out of memory");
			for (uint64_t i = 0, u = 0; !err && i < db->nfold; i++) {
				struct sz_fold *fo = &db->fold[i];

				if (fo->nsub == 1 && fo->has_crc)
					continue;
				for (uint64_t j = 0; j < fo->nsub; j++, u++) {
					db->sub_has[fo->first_sub + j] = has[u];
					db->sub_crc[fo->first_sub + j] = crc[u];
				}
			}
			free(has);
			free(crc);
			if (err)
				return err;
		} else if (rd_skip_prop(db, r)) {
			return db->err;
		}
		if (rd_byte(db, r, &id))
			return db->err;
	}
}

/* StreamsInfo: pack info, unpack info, substreams, kEnd. */
static int sz_streams_info(struct sz_db *db, struct sz_rd *r)
{
	uint8_t id;
	bool have_unpack = false, have_subs = false;

	sz_streams_free(db);
	for (;;) {
		if (rd_byte(db, r, &id))
			return db->err;
		if (id == SZ_ID_END)
			break;
		if (id == SZ_ID_PACK_INFO && !db->pack_size) {
			if (sz_pack_info(db, r))
				return db->err;
		} else if (id == SZ_ID_UNPACK_INFO && !have_unpack) {
			if (sz_unpack_info(db, r))
				return db->err;
			have_unpack = true;
		} else if (id == SZ_ID_SUBSTREAMS && have_unpack && !have_subs) {
			if (sz_substreams(db, r))
				return db->err;
			have_subs = true;
		} else {
			return sz_damaged(db, r, "unexpected property in the streams info");
		}
	}
	if (have_unpack && !db->pack_size)
		return sz_damaged(db, r, "folders without packed streams");
	if (have_unpack && !have_subs) { /* one file per folder */
		db->nsubs = db->nfold;
		db->sub_size = calloc(db->nfold ? db->nfold : 1, sizeof(*db->sub_size));
		db->sub_crc = calloc(db->nfold ? db->nfold : 1, sizeof(*db->sub_crc));
		db->sub_has = calloc(db->nfold ? db->nfold : 1, 1);
		if (!db->sub_size || !db->sub_crc || !db->sub_has)
			return sz_bad(db, -ENOMEM, "7z: out of memory");
		for (uint64_t i = 0; i < db->nfold; i++) {
			db->fold[i].first_sub = i;
			db->sub_size[i] = db->fold[i].usize;
			db->sub_has[i] = db->fold[i].has_crc;
			db->sub_crc[i] = db->fold[i].crc;
		}
	}
	return 0;
}

/* ---- folder blobs and decoding ------------------------------------------------------------- */

/* Why folder i cannot be decoded (0 if it can): -EACCES for AES, -EOPNOTSUPP otherwise, with
 * why set; f filled when it can. */
static int sz_fold_check(struct sz_db *db, uint64_t i, struct szc_folder *f, const char **why)
{
	static __thread char buf[96];
	int r = sz_fold_get(db, i, f);
	const char *w;

	if (r < 0)
		return r;
	if (r > 0) {
		*why = "7z folder with more coders or streams than tarseek reads";
		return -EOPNOTSUPP;
	}
	for (unsigned c = 0; c < f->ncoders; c++) {
		uint64_t m = f->coders[c].method;
		if (m == SZM_AES) {
			*why = "7z encrypted (AES-256)";
			return -EACCES;
		}
	}
	for (unsigned c = 0; c < f->ncoders; c++) {
		uint64_t m = f->coders[c].method;
		if (!szc_method_supported(m)) {
			const char *name = szc_method_name(m);
			if (name)
				snprintf(buf, sizeof(buf), "7z method %s", name);
			else
				snprintf(buf, sizeof(buf), "7z method %" PRIX64, m);
			*why = buf;
			return -EOPNOTSUPP;
		}
	}
	for (unsigned c = 0; c < f->ncoders; c++)
		if (f->coders[c].nin != (f->coders[c].method == SZM_BCJ2 ? 4 : 1)) {
			*why = "7z folder not readable: a coder with an unexpected number of inputs";
			return -EOPNOTSUPP;
		}
	if (szc_check(f, &w)) {
		snprintf(buf, sizeof(buf), "7z folder not readable: %s", w);
		*why = buf;
		return -EOPNOTSUPP;
	}
	return 0;
}

/* The params blob of folder i (malloc'd), with its files' table when not too long. */
static int sz_fold_blob(struct sz_db *db, uint64_t i, const struct szc_folder *f, uint8_t **out,
			size_t *len)
{
	const struct sz_fold *fo = &db->fold[i];
	uint32_t nsubs = fo->nsub <= SZ_SUBS_TABLE_MAX ? (uint32_t)fo->nsub : 0;
	size_t n = szc_blob_len(f, nsubs), o;
	uint8_t *b = malloc(n);

	*out = NULL;
	if (!b)
		return sz_bad(db, -ENOMEM, "7z: out of memory");
	o = szc_encode(f, nsubs, b);
	for (uint32_t k = 0; k < nsubs; k++)
		szc_put_sub(b + o - 4, k, db->sub_size[fo->first_sub + k],
			    db->sub_has[fo->first_sub + k], db->sub_crc[fo->first_sub + k]);
	*out = b;
	*len = n;
	return 0;
}

static int sz_null_ckpt(void *opaque, const struct codec_ckpt *ck, const void *aux, size_t auxlen)
{
	return 0;
}

/* Decodes folder 0 of the current streams info (an encoded header) into *out. */
static int sz_decode_header(struct sz_db *db, uint8_t **out, size_t *outlen)
{
	struct codec_sink sink = {.checkpoint = sz_null_ckpt};
	struct codec_scan *scan = NULL;
	struct szc_folder f;
	struct src *win = NULL;
	uint8_t *blob = NULL, *buf = NULL;
	uint64_t limit, got = 0;
	size_t bloblen;
	const char *why;
	int err;

	*out = NULL;
	if (db->nfold != 1)
		return sz_damaged(db, NULL, "an encoded header that is not one folder");
	err = sz_fold_check(db, 0, &f, &why);
	if (err == -EACCES)
		return sz_bad(db, -ENOTSUP,
			      "7z: the headers are encrypted (7-Zip -mhe): the file list cannot be "
			      "read without the password");
	if (err)
		return sz_bad(db, err < 0 && err != -EOPNOTSUPP ? err : -ENOTSUP,
			      "7z: the header is compressed with what tarseek cannot decode (%s)",
			      why);
	if (db->fold[0].coff == UINT64_MAX)
		return sz_bad(db, -EIO,
			      "7z: truncated: the encoded header's packed data is past the end of "
			      "the file");
	limit = db->fsize * SZ_HDR_RATIO + ((uint64_t)1 << 20);
	if (limit > SZ_HDR_MAX)
		limit = SZ_HDR_MAX;
	if (db->fold[0].usize > limit)
		return sz_damaged(db, NULL, "the decoded header would be unreasonably large");
	err = sz_fold_blob(db, 0, &f, &blob, &bloblen);
	if (err)
		return err;
	win = src_window(db->in, db->fold[0].coff, db->fold[0].clen);
	buf = malloc(db->fold[0].usize ? (size_t)db->fold[0].usize : 1);
	if (!win || !buf) {
		err = sz_bad(db, -ENOMEM, "7z: out of memory");
		goto out;
	}
	struct codec_opts opts = {.spacing = UINT64_MAX, .threads = 1, .params = blob,
				  .params_len = bloblen};
	err = codec_7z.scan_new(win, &opts, &sink, &scan);
	if (err) {
		err = sz_bad(db, err == -ENOTSUP ? -ENOTSUP : err == -ENOMEM ? -ENOMEM : -EIO,
			     "7z: cannot decode the encoded header");
		goto out;
	}
	for (;;) {
		uint8_t x;
		bool last = got == db->fold[0].usize;
		ssize_t n = codec_7z.scan_read(scan, last ? &x : buf + got,
					       last ? 1 : (size_t)(db->fold[0].usize - got));
		if (n > 0 && last)
			n = -EIO; /* never: the codec stops at the size */
		if (n < 0) {
			err = sz_bad(db, n == -ENOMEM ? -ENOMEM : -EIO,
				     "7z: the encoded header at offset %" PRIu64
				     " does not decode (damaged)",
				     db->fold[0].coff);
			goto out;
		}
		if (n == 0)
			break;
		got += (uint64_t)n;
	}
	*out = buf;
	*outlen = (size_t)got;
	buf = NULL;
	err = 0;
out:
	codec_7z.scan_free(scan);
	src_free(win);
	free(blob);
	free(buf);
	return err;
}

/* ---- files --------------------------------------------------------------------------------- */

/* A property of FilesInfo: where its data is. */
struct sz_prop {
	bool present;
	size_t off, size;
};

/* A cursor over the "defined" vector and the values of a times or attributes property. */
struct sz_vals {
	const uint8_t *def; /* NULL: all defined */
	const uint8_t *p;   /* next value */
	size_t left;	    /* bytes of values left */
	unsigned width;
	bool present;
};

static int sz_vals_open(struct sz_db *db, const struct sz_prop *pr, uint64_t nfiles,
			unsigned width, struct sz_vals *v)
{
	struct sz_rd r = {db->hdr + pr->off, pr->size, 0};
	uint8_t all, ext;

	memset(v, 0, sizeof(*v));
	v->width = width;
	if (!pr->present)
		return 0;
	if (rd_byte(db, &r, &all))
		return db->err;
	if (!all) {
		if ((nfiles + 7) / 8 > r.len - r.pos)
			return sz_damaged(db, &r, "a times or attributes vector runs past its end");
		v->def = r.p + r.pos;
		r.pos += (size_t)((nfiles + 7) / 8);
	}
	if (rd_byte(db, &r, &ext))
		return db->err;
	if (ext)
		return sz_bad(db, -ENOTSUP, "7z: file properties stored outside the header");
	v->p = r.p + r.pos;
	v->left = r.len - r.pos;
	v->present = true;
	return 0;
}

/* The value of file i (in order): 1 and *val, 0 if not defined, -EIO past the end. */
static int sz_vals_next(struct sz_db *db, struct sz_vals *v, uint64_t i, uint64_t *val)
{
	if (!v->present || (v->def && !bit(v->def, i)))
		return 0;
	if (v->left < v->width)
		return sz_damaged(db, NULL, "fewer times or attributes than files");
	*val = v->width == 8 ? le64(v->p) : le32(v->p);
	v->p += v->width;
	v->left -= v->width;
	return 1;
}

static int sz_name_room(struct sz_db *db, size_t need)
{
	if (need <= db->name_cap)
		return 0;
	size_t cap = need * 2;
	char *p = realloc(db->name, cap);
	if (!p)
		return sz_bad(db, -ENOMEM, "7z: out of memory");
	db->name = p;
	db->name_cap = cap;
	return 0;
}

/* The next UTF-16LE name at *r, as UTF-8 in db->name; *len set.  Surrogate pairs are joined,
 * anything else that is not UTF-16 becomes U+FFFD. */
static int sz_name_next(struct sz_db *db, struct sz_rd *r, size_t *len)
{
	size_t o = 0, start = r->pos;

	for (;;) {
		uint32_t c;

		if (r->len - r->pos < 2)
			return sz_damaged(db, r, "a name without its end");
		c = le16(r->p + r->pos);
		r->pos += 2;
		if (c == 0)
			break;
		if (c >= 0xD800 && c < 0xDC00 && r->len - r->pos >= 2) {
			uint32_t lo = le16(r->p + r->pos);
			if (lo >= 0xDC00 && lo < 0xE000) {
				r->pos += 2;
				c = 0x10000 + ((c - 0xD800) << 10) + (lo - 0xDC00);
			}
		}
		if (c >= 0xD800 && c < 0xE000)
			c = 0xFFFD;
		if (sz_name_room(db, o + 5))
			return db->err;
		if (c < 0x80) {
			db->name[o++] = (char)c;
		} else if (c < 0x800) {
			db->name[o++] = (char)(0xC0 | c >> 6);
			db->name[o++] = (char)(0x80 | (c & 0x3F));
		} else if (c < 0x10000) {
			db->name[o++] = (char)(0xE0 | c >> 12);
			db->name[o++] = (char)(0x80 | (c >> 6 & 0x3F));
			db->name[o++] = (char)(0x80 | (c & 0x3F));
		} else {
			db->name[o++] = (char)(0xF0 | c >> 18);
			db->name[o++] = (char)(0x80 | (c >> 12 & 0x3F));
			db->name[o++] = (char)(0x80 | (c >> 6 & 0x3F));
			db->name[o++] = (char)(0x80 | (c & 0x3F));
		}
	}
	(void)start;
	if (sz_name_room(db, o + 1))
		return db->err;
	db->name[o] = '\0';
	*len = o;
	return 0;
}

/* FILETIME (100 ns since 1601) to seconds and nanoseconds since 1970. */
static void sz_filetime(uint64_t ft, int64_t *sec, uint32_t *nsec)
{
	if (ft >= (uint64_t)SZ_FILETIME_UNIX) {
		*sec = (int64_t)((ft - (uint64_t)SZ_FILETIME_UNIX) / 10000000);
		*nsec = (uint32_t)((ft - (uint64_t)SZ_FILETIME_UNIX) % 10000000) * 100;
	} else { /* before 1970: floor, so that nsec stays positive */
		uint64_t d = (uint64_t)SZ_FILETIME_UNIX - ft;
		uint64_t s = d / 10000000, r = d % 10000000;

		*sec = -(int64_t)s - (r ? 1 : 0);
		*nsec = r ? (uint32_t)(10000000 - r) * 100 : 0;
	}
}

/* Type and permissions of a file from its attributes and whether it has data.  A file with
 * data is a regular file or a symlink whatever else its mode says (7-Zip's -si stores the mode
 * of its standard input, a pipe). */
static void sz_file_mode(struct arc_member *m, bool has_attr, uint32_t attr, bool is_dir,
			 bool has_data)
{
	if (has_attr && (attr & SZ_ATTR_UNIX) && (attr >> 16) != 0) {
		uint32_t mode = attr >> 16;

		m->mode = mode & 07777;
		switch (mode & S_IFMT) {
		case S_IFLNK:
			m->type = MEMBER_SYMLINK;
			m->link_in_data = true;
			return;
		case S_IFDIR:
			m->type = has_data ? MEMBER_REG : MEMBER_DIR;
			return;
		case S_IFCHR:
			m->type = has_data ? MEMBER_REG : MEMBER_CHR;
			return;
		case S_IFBLK:
			m->type = has_data ? MEMBER_REG : MEMBER_BLK;
			return;
		case S_IFIFO:
			m->type = has_data ? MEMBER_REG : MEMBER_FIFO;
			return;
		case S_IFREG:
			m->type = MEMBER_REG;
			return;
		default: /* sockets, or nothing we know */
			m->type = is_dir && !has_data ? MEMBER_DIR : MEMBER_REG;
			return;
		}
	}
	if (!has_data && (is_dir || (has_attr && (attr & SZ_ATTR_DIR)))) {
		m->type = MEMBER_DIR;
		m->mode = 0755;
	} else {
		m->type = MEMBER_REG;
		m->mode = 0644;
	}
}

/* Declares folder fi's stream (when decodable) and says how its files are to be read. */
static int sz_enter_folder(struct sz_db *db, uint64_t fi, uint64_t *stream, int *unreadable,
			   const char **why)
{
	struct sz_fold *fo = &db->fold[fi];
	struct szc_folder f;
	uint8_t *blob;
	size_t len;
	int err;

	*stream = 0;
	*unreadable = 0;
	*why = NULL;
	err = sz_fold_check(db, fi, &f, why);
	if (err == -EACCES || err == -EOPNOTSUPP) {
		*unreadable = err;
		return 0;
	}
	if (err)
		return err;
	if (fo->coff == UINT64_MAX) {
		*unreadable = -EIO;
		*why = "7z folder data past the end of the archive (truncated)";
		db->damaged = true;
		tfs_log(TFS_LOG_ERR,
			"%s: folder %" PRIu64 ": its packed data lies past the end of "
			"the archive (truncated)",
			sz_name(db->sink), fi);
		return 0;
	}
	err = sz_fold_blob(db, fi, &f, &blob, &len);
	if (err)
		return err;
	struct cont_stream cs = {.codec = codec_7z.name, .coff = fo->coff, .clen = fo->clen,
				 .usize = fo->usize, .params = blob, .params_len = len};
	err = db->sink->stream(db->sink->opaque, &cs, stream);
	free(blob);
	if (err)
		return sz_bad(db, err, "7z: the index refused a stream (%d)", err);
	return 0;
}

static int sz_files_info(struct sz_db *db, struct sz_rd *r)
{
	struct sz_prop empty = {0}, efile = {0}, anti = {0}, names = {0}, mtime = {0}, attr = {0};
	uint64_t nfiles, nempty = 0;
	struct sz_vals mt, at;
	struct sz_rd nr = {0};
	uint8_t ext;
	int err;

	/* every file is a substream or has an empty-stream bit: at most 8 per header byte more */
	if (rd_count(db, r, db->nsubs + 8 * (uint64_t)(r->len - r->pos), &nfiles,
		     "number of files"))
		return db->err;
	for (;;) {
		uint64_t type, size;
		struct sz_prop *pr = NULL;

		if (rd_num(db, r, &type))
			return db->err;
		if (type == SZ_ID_END)
			break;
		if (rd_num(db, r, &size))
			return db->err;
		if (size > r->len - r->pos)
			return sz_damaged(db, r, "a file property runs past the end");
		switch (type) {
		case SZ_ID_EMPTY_STREAM:
			pr = &empty;
			break;
		case SZ_ID_EMPTY_FILE:
			pr = &efile;
			break;
		case SZ_ID_ANTI:
			pr = &anti;
			break;
		case SZ_ID_NAME:
			pr = &names;
			break;
		case SZ_ID_MTIME:
			pr = &mtime;
			break;
		case SZ_ID_ATTRIB:
			pr = &attr;
			break;
		default:
			break; /* times we do not show, padding, start positions */
		}
		if (pr) {
			pr->present = true;
			pr->off = r->pos;
			pr->size = (size_t)size;
		}
		r->pos += (size_t)size;
	}
	if (empty.present) {
		if ((nfiles + 7) / 8 > empty.size)
			return sz_damaged(db, r, "the empty-stream vector is too short");
		for (uint64_t i = 0; i < nfiles; i++)
			nempty += bit(db->hdr + empty.off, i);
	}
	if (nfiles - nempty != db->nsubs)
		return sz_damaged(db, r, "the number of files does not match the streams");
	if ((efile.present && (nempty + 7) / 8 > efile.size) ||
	    (anti.present && (nempty + 7) / 8 > anti.size))
		return sz_damaged(db, r, "the empty-file or anti vector is too short");
	if (names.present) {
		nr = (struct sz_rd){db->hdr + names.off, names.size, 0};
		if (rd_byte(db, &nr, &ext))
			return db->err;
		if (ext)
			return sz_bad(db, -ENOTSUP, "7z: file names stored outside the header");
	}
	err = sz_vals_open(db, &mtime, nfiles, 8, &mt);
	if (!err)
		err = sz_vals_open(db, &attr, nfiles, 4, &at);
	if (err)
		return err;

	uint64_t fi = 0, si = 0, in_fold = 0, ei = 0, data_off = 0, stream = 0;
	int unreadable = 0;
	const char *why = NULL;
	bool entered = false;
	for (uint64_t i = 0; i < nfiles; i++) {
		struct arc_member m = {0};
		bool is_empty = empty.present && bit(db->hdr + empty.off, i);
		bool is_anti = false, is_dir = false, has_attr;
		uint64_t v;
		size_t nlen = 0;
		int k;

		if (names.present) {
			if (sz_name_next(db, &nr, &nlen))
				return db->err;
		} else {
			if (sz_name_room(db, 1))
				return db->err;
			db->name[0] = '\0';
		}
		k = sz_vals_next(db, &at, i, &v);
		if (k < 0)
			return k;
		has_attr = k == 1;
		uint32_t a = has_attr ? (uint32_t)v : 0;
		k = sz_vals_next(db, &mt, i, &v);
		if (k < 0)
			return k;
		if (k == 1)
			sz_filetime(v, &m.mtime_sec, &m.mtime_nsec);

		m.path = (const uint8_t *)db->name;
		m.path_len = nlen;
		m.link = (const uint8_t *)"";
		m.uname = m.gname = "";
		if (is_empty) {
			is_dir = !(efile.present && bit(db->hdr + efile.off, ei));
			is_anti = anti.present && bit(db->hdr + anti.off, ei);
			ei++;
			sz_file_mode(&m, has_attr, a, is_dir, false);
			if (is_anti)
				continue;
		} else {
			/* the next substream, entering folders as their files begin */
			while (!entered || in_fold == db->fold[fi].nsub) {
				if (entered)
					fi++;
				while (fi < db->nfold && db->fold[fi].nsub == 0)
					fi++;
				if (fi >= db->nfold)
					return sz_damaged(db, r, "more files than substreams");
				err = sz_enter_folder(db, fi, &stream, &unreadable, &why);
				if (err)
					return err;
				entered = true;
				in_fold = 0;
				data_off = 0;
			}
			sz_file_mode(&m, has_attr, a, false, true);
			m.stream = stream;
			m.data_off = data_off;
			if (m.type == MEMBER_REG || m.type == MEMBER_SYMLINK)
				m.size = m.stored = db->sub_size[si];
			m.has_crc = db->sub_has[si];
			m.crc = db->sub_crc[si];
			m.unreadable = unreadable;
			m.why = why;
			data_off += db->sub_size[si];
			si++;
			in_fold++;
		}
		err = db->sink->member(db->sink->opaque, &m);
		if (err)
			return sz_bad(db, err, "7z: the index refused a member (%d)", err);
		db->members++;
		if (db->sink->progress && (i & 1023) == 0)
			db->sink->progress(db->sink->opaque, db->hdr_off);
	}
	return 0;
}

/* ---- the header ---------------------------------------------------------------------------- */

static int sz_header(struct sz_db *db, struct sz_rd *r)
{
	uint8_t id;
	bool files = false;

	for (;;) {
		if (rd_byte(db, r, &id))
			return db->err;
		if (id == SZ_ID_END)
			break;
		if (id == SZ_ID_ARCHIVE_PROPS) {
			for (;;) {
				uint64_t t;
				if (rd_num(db, r, &t))
					return db->err;
				if (t == 0)
					break;
				if (rd_skip_prop(db, r))
					return db->err;
			}
		} else if (id == SZ_ID_ADD_STREAMS) {
			/* not written by 7-Zip; read past it */
			if (sz_streams_info(db, r))
				return db->err;
			sz_streams_free(db);
		} else if (id == SZ_ID_MAIN_STREAMS) {
			if (sz_streams_info(db, r))
				return db->err;
		} else if (id == SZ_ID_FILES && !files) {
			if (sz_files_info(db, r))
				return db->err;
			files = true;
		} else {
			return sz_damaged(db, r, "unexpected property in the header");
		}
	}
	if (!files && db->nsubs)
		return sz_damaged(db, r, "streams but no file list");
	return 0;
}

static bool sz_probe(struct src *in, const uint8_t *head, size_t len)
{
	return len >= sizeof(sz_magic) && memcmp(head, sz_magic, sizeof(sz_magic)) == 0;
}

static int sz_parse(struct src *in, const struct cont_sink *sink, struct cont_stats *st)
{
	struct sz_db db = {.in = in, .sink = sink};
	uint8_t sig[SZ_SIG_SIZE];
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
		tfs_log(TFS_LOG_ERR, "%s: %s", sz_name(sink),
			err == -EIO ? "the file is shorter than a 7z "
				      "signature header"
				    : "read error in the signature header");
		return err == -EIO ? -EINVAL : err;
	}
	if (memcmp(sig, sz_magic, sizeof(sz_magic)) != 0) {
		tfs_log(TFS_LOG_ERR, "%s: no 7z signature at offset 0", sz_name(sink));
		return -EINVAL;
	}
	if (sig[6] != 0) {
		tfs_log(TFS_LOG_ERR, "%s: format version %u.%u is not supported", sz_name(sink),
			sig[6], sig[7]);
		return -ENOTSUP;
	}
	if ((uint32_t)crc32(0, sig + 12, 20) != le32(sig + 8)) {
		tfs_log(TFS_LOG_ERR,
			"%s: damaged signature header: its CRC does not match (offset 8)",
			sz_name(sink));
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
			sz_name(sink));
		return -EIO;
	}
	if (off > db.fsize || size > db.fsize || SZ_SIG_SIZE + off > db.fsize - size) {
		tfs_log(TFS_LOG_ERR,
			"%s: truncated: the header at offset %" PRIu64 " (%" PRIu64
			" bytes) is past the end of the file (%" PRIu64 " bytes)",
			sz_name(sink), SZ_SIG_SIZE + off, size, db.fsize);
		return -EIO;
	}
	db.hdr_off = SZ_SIG_SIZE + off;
	db.hlen = (size_t)size;
	db.hdr = malloc(db.hlen);
	if (!db.hdr)
		return -ENOMEM;
	err = src_pread_full(in, db.hdr, db.hlen, db.hdr_off);
	if (err) {
		sz_bad(&db, err, "7z: cannot read the header at offset %" PRIu64, db.hdr_off);
		goto out;
	}
	if ((uint32_t)crc32(0, db.hdr, (uInt)db.hlen) != crc) {
		sz_bad(&db, -EIO,
		       "7z: damaged header: the CRC of the header at offset %" PRIu64
		       " (%zu bytes) does not match",
		       db.hdr_off, db.hlen);
		goto out;
	}
	for (int depth = 0;; depth++) {
		struct sz_rd r = {db.hdr, db.hlen, 0};
		uint8_t id;
		uint8_t *dec = NULL;
		size_t declen = 0;

		if (rd_byte(&db, &r, &id))
			goto out;
		if (id == SZ_ID_HEADER) {
			sz_header(&db, &r);
			break;
		}
		if (id != SZ_ID_ENCODED || depth == SZ_ENCODED_MAX) {
			sz_damaged(&db, &r, "neither a header nor an encoded header");
			goto out;
		}
		if (sz_streams_info(&db, &r) || sz_decode_header(&db, &dec, &declen))
			goto out;
		sz_streams_free(&db);
		free(db.hdr);
		db.hdr = dec;
		db.hlen = declen;
		db.decoded = true;
	}
out:
	err = db.err;
	if (err)
		tfs_log(err == -ENOTSUP ? TFS_LOG_WARNING : TFS_LOG_ERR, "%s: %s", sz_name(sink),
			strncmp(db.msg, "7z: ", 4) ? db.msg : db.msg + 4);
	if (st) {
		st->members = db.members;
		st->damaged = db.damaged;
	}
	sz_streams_free(&db);
	free(db.hdr);
	free(db.name);
	return err;
}

const struct container cont_7z = {
	.name = "7z",
	.probe = sz_probe,
	.parse = sz_parse,
};
