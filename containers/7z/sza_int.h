/* What the parts of the 7z container share (containers/7z/): the limits, the property ids of
 * the header, the parse's state (struct sza_db) and the functions one part calls in another.
 * Private to containers/7z/; container.h (cont_7z) is the container's contract.
 *
 * The parts, from the leaf up (each calls only those before it, so no two call each other):
 *   sza_read.c     the header's numbers, bit vectors and digests; the parse's first error
 *   sza_streams.c  StreamsInfo: packed streams, folders and their coders, substreams
 *   sza_coders.c   which folders the 7z codec decodes, their params blob, the encoded header
 *                  decoded, a folder declared as a stream
 *   sza_files.c    FilesInfo: one member per file, walked in step with the substreams
 *   sza_archive.c  the signature header, the header, and cont_7z
 *
 * The prefix is sza_ (the 7z archive's header), apart from the folder codec's sz_ and the
 * coder chain's szc_ (codecs/7z/), which decode what this parser declares.
 */
#ifndef TARSEEK_SZA_INT_H
#define TARSEEK_SZA_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "codecs/7z/sevenzip_chain.h"
#include "containers/container.h"

#define SZA_SIG_SIZE 32
#define SZA_HDR_MAX ((uint64_t)1 << 30)	       /* largest decoded header */
#define SZA_HDR_RATIO 256		       /* ... and no more than this times the file */
#define SZA_ENCODED_MAX 4		       /* encoded headers inside encoded headers */
#define SZA_SUBS_TABLE_MAX ((uint64_t)1 << 16) /* files whose CRCs go into a folder's params */
#define SZA_CODERS_MAX 64		       /* 7-Zip's own limit */
#define SZA_MSG 320

#define SZA_FILETIME_UNIX 116444736000000000LL /* 1970-01-01 in 100 ns since 1601 */
#define SZA_ATTR_READONLY 0x1u
#define SZA_ATTR_DIR 0x10u
#define SZA_ATTR_UNIX 0x8000u

enum {
	SZA_ID_END = 0x00,
	SZA_ID_HEADER = 0x01,
	SZA_ID_ARCHIVE_PROPS = 0x02,
	SZA_ID_ADD_STREAMS = 0x03,
	SZA_ID_MAIN_STREAMS = 0x04,
	SZA_ID_FILES = 0x05,
	SZA_ID_PACK_INFO = 0x06,
	SZA_ID_UNPACK_INFO = 0x07,
	SZA_ID_SUBSTREAMS = 0x08,
	SZA_ID_SIZE = 0x09,
	SZA_ID_CRC = 0x0A,
	SZA_ID_FOLDER = 0x0B,
	SZA_ID_UNPACK_SIZE = 0x0C,
	SZA_ID_NUM_UNPACK = 0x0D,
	SZA_ID_EMPTY_STREAM = 0x0E,
	SZA_ID_EMPTY_FILE = 0x0F,
	SZA_ID_ANTI = 0x10,
	SZA_ID_NAME = 0x11,
	SZA_ID_MTIME = 0x14,
	SZA_ID_ATTRIB = 0x15,
	SZA_ID_ENCODED = 0x17,
};

/* A reader over the header in memory; the first error sticks (and is described in db->msg). */
struct sza_rd {
	const uint8_t *p;
	size_t len, pos;
};

/* One folder as the header describes it. */
struct sza_fold {
	size_t rec;	     /* header offset of its record (parsed again by sza_fold_get) */
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

struct sza_db {
	struct src *in;
	uint64_t fsize;
	const struct cont_sink *sink;
	uint8_t *hdr; /* the header being parsed */
	size_t hlen;
	bool decoded;	  /* hdr was decoded from an encoded header */
	uint64_t hdr_off; /* archive offset of the (encoded) next header, for messages */
	int err;
	char msg[SZA_MSG];

	/* streams info */
	uint64_t pack_pos;
	uint64_t npack;
	uint64_t *pack_size;
	uint64_t nfold;
	struct sza_fold *fold;
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

/* ---- sza_read.c: numbers and errors -------------------------------------------------------- */

/* The archive's name for messages. */
const char *sza_name(const struct cont_sink *sink);

/* The parse's first error: kept in db (err and msg, logged when the parse returns, after the
 * archive's name) and returned; a later one returns the first. */
__attribute__((format(printf, 3, 4))) int sza_bad(struct sza_db *db, int err, const char *fmt,
						  ...);

/* A damaged header: -EIO, saying what and where (r's offset in the header, r may be NULL). */
int sza_damaged(struct sza_db *db, const struct sza_rd *r, const char *what);

/* Readers over r: 0, or the first error (-EIO damaged: past the end, a count over max; -ENOMEM).
 * sza_rd_num reads a 7z NUMBER; sza_rd_count one that must be at most max (a count, checked
 * against the bytes left, what names it in the message); sza_rd_bits n bits into *out
 * (malloc'd); sza_rd_digests a defined vector then a CRC per defined item into has/crc (n
 * each); sza_rd_skip_prop a property's size, then that many bytes. */
int sza_rd_byte(struct sza_db *db, struct sza_rd *r, uint8_t *v);
int sza_rd_num(struct sza_db *db, struct sza_rd *r, uint64_t *v);
int sza_rd_count(struct sza_db *db, struct sza_rd *r, uint64_t max, uint64_t *v,
		 const char *what);
int sza_rd_skip(struct sza_db *db, struct sza_rd *r, uint64_t n);
int sza_rd_u32(struct sza_db *db, struct sza_rd *r, uint32_t *v);
int sza_rd_bits(struct sza_db *db, struct sza_rd *r, uint64_t n, uint8_t **out);
int sza_rd_digests(struct sza_db *db, struct sza_rd *r, uint64_t n, uint8_t *has,
		   uint32_t *crc);
int sza_rd_skip_prop(struct sza_db *db, struct sza_rd *r);

/* Bit i of a 7z bit vector (most significant bit first). */
static inline bool sza_bit(const uint8_t *v, uint64_t i)
{
	return v[i / 8] & (0x80 >> (i % 8));
}

/* ---- sza_streams.c: StreamsInfo ------------------------------------------------------------ */

/* Parses a StreamsInfo at r into db (what was there before is freed): 0 or db's error. */
int sza_streams_info(struct sza_db *db, struct sza_rd *r);
void sza_streams_free(struct sza_db *db);

/* Folder i's record and sizes into f.  0, or 1 if it does not fit the chain struct (too many
 * coders or streams for us: not decodable), or -errno. */
int sza_fold_get(struct sza_db *db, uint64_t i, struct szc_folder *f);

/* ---- sza_coders.c: folders for the codec --------------------------------------------------- */

/* Decodes folder 0 of the current streams info (an encoded header) into *out (malloc'd,
 * *outlen bytes).  0 or db's error. */
int sza_decode_header(struct sza_db *db, uint8_t **out, size_t *outlen);

/* Declares folder fi's stream to the sink when it decodes (*stream its id, else 0) and says
 * how its files are read: *unreadable 0 or -errno (-EOPNOTSUPP a method the
 * codec lacks, -EIO packed data past the end) with *why.  0 or db's error. */
int sza_enter_folder(struct sza_db *db, uint64_t fi, uint64_t *stream, int *unreadable,
		     const char **why);

/* ---- sza_files.c: FilesInfo ---------------------------------------------------------------- */

/* Parses FilesInfo at r and reports one member per file (anti items left out).  0 or db's
 * error (the sink's errors included). */
int sza_files_info(struct sza_db *db, struct sza_rd *r);

#endif
