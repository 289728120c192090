/* The decoding graph of a 7z folder: private to the 7z folder codec (sevenzip_folder.c, which
 * starts, reads and frees it; sevenzip_build.c builds it, sevenzip_graph.c runs its nodes).
 *
 * A folder is a tree of coders (sevenzip_chain.h); decoding it pulls bytes from the tree's
 * root.  Every coder's output and every packed stream is a node with a read function and a
 * size it must produce exactly: a packed stream reads its window of the archive; Copy passes
 * bytes on; LZMA and LZMA2, with any BCJ filters stacked directly on them (x86, PPC, IA64, ARM,
 * ARMT, SPARC, ARM64), are one liblzma raw decoder (LZMA as LZMA1EXT with the size the folder
 * states, so its end is known without an end marker); Delta is done here (so that a decoder can
 * start with a saved history); Deflate is inflater.h (ISA-L, or zlib); Deflate64 is
 * inflate64.h (our own); RISCV (liblzma 5.4 has no such filter) is bcj_riscv.h, our own, over
 * any coder; PPMd (var.H, 030401) is ppmd7.h (our own; the model is as large as
 * the memory size its properties state, so a PPMd folder restarts only at its start); BZip2 is
 * libbz2 (concatenated streams included); BCJ2 is bcj2.c with its four inputs; AES-256 (7zAES,
 * sevenzip_aes.h) decrypts a packed stream, and only a packed stream (7-Zip puts it nowhere
 * else), whose size must be its output's rounded up to whole blocks, with the key of the
 * chain's password (pw: the caller chose it; none, -1, refuses the coder with -EACCES); a
 * restart inside it (sz_start.coff: an offset in its output) starts the packed stream at that
 * offset's block, with the block before as the IV.
 * Each node checks that its coder ends exactly at the stated size (LZMA2's end marker,
 * deflate's last block, bzip2's stream end, PPMd's range coder at 0) and that its input is used
 * up, so a folder whose sizes or data do not agree fails with -EIO rather than giving other
 * bytes.  A filter stacked
 * on anything but LZMA/LZMA2 (BCJ over Deflate), Delta under a BCJ and unknown
 * methods are refused with -ENOTSUP; the container already marks the files of such folders
 * unreadable.
 *
 * Errors: sz_chain_new and sz_read return -errno with the reason in the chain's msg (the
 * first failure is kept; callers log it once).
 */
#ifndef TARSEEK_SEVENZIP_GRAPH_H
#define TARSEEK_SEVENZIP_GRAPH_H

#include <bzlib.h>
#include <lzma.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "common/source.h"
#include "codecs/7z/bcj2.h"
#include "codecs/7z/sevenzip_aes.h"
#include "codecs/gzip/inflater.h"
#include "codecs/inflate64.h"
#include "codecs/ppmd/ppmd7.h"
#include "codecs/7z/sevenzip_chain.h"

#define SZ_CK_LZMA2 1u /* checkpoint flags: at an LZMA2 chunk that resets the dictionary */
#define SZ_CK_COPY 2u  /* ... anywhere in a Copy folder */

#define SZ_DICT_MAX ((uint64_t)1536 << 20) /* largest LZMA dictionary allocated */
#define SZ_IBUF ((size_t)64 << 10)	    /* input buffer of a coder */
#define SZ_IBUF_SMALL ((size_t)4 << 10)     /* ... of BCJ2's call, jump and rc inputs */
#define SZ_MSG 320
#define SZ_MAX_NODES (SZC_MAX_CODERS + SZC_MAX_PACKED)

enum sz_kind { SZN_PACK, SZN_COPY, SZN_XZ, SZN_DELTA, SZN_DEFLATE, SZN_BZIP2, SZN_BCJ2, SZN_AES,
	      SZN_DEFLATE64, SZN_PPMD, SZN_RISCV };

struct sz_chain;

struct sz_ibuf {
	uint8_t *buf;
	size_t cap, pos, len;
	bool eof;
};

struct sz_node {
	enum sz_kind kind;
	int coder; /* its coder, or -1 for a packed stream */
	struct sz_chain *ch;
	uint64_t size; /* bytes it produces */
	uint64_t done; /* ... so far */
	bool end;      /* its end was checked */
	unsigned nin;
	struct sz_node *child[4];
	struct sz_ibuf ib[4];
	union {
		struct {
			uint64_t off; /* window offset of its first byte (the restart point) */
		} pack;
		struct {
			lzma_stream strm;
			lzma_options_lzma lz;
			lzma_options_bcj bcj[LZMA_FILTERS_MAX];
			uint64_t mem;
			bool finish; /* the input has ended: LZMA_FINISH from now on */
			bool ended;  /* liblzma said LZMA_STREAM_END */
			bool wrap;   /* BCJ filters over something else: the input is wrapped in
					LZMA2 uncompressed chunks for liblzma (sz_xz_fill) */
			bool wrap_sent; /* ... a chunk was sent (the next is control 2) */
			bool wrap_end; /* ... the end marker is written */
		} xz;
		struct {
			struct inflater *inf; /* zlib's or ISA-L's (inflater.h) */
		} zl;
		struct inf64 *d64; /* Deflate64 (inflate64.h) */
		struct ppmd7 *ppmd; /* PPMd var.H (ppmd7.h) */
		struct {
			bz_stream bz;
			bool init;
		} bz;
		struct {
			uint8_t hist[256];
			unsigned dist;
			uint64_t pos;
		} delta;
		struct bcj2_dec bcj2;
		struct {
			uint32_t at;  /* stream position of ib[0].buf[0] (mod 2^32) */
			size_t ready; /* ib[0] is converted up to here */
		} rv;
		struct {
			struct sz_aes_dec dec; /* wiped by sz_chain_free */
			unsigned skip; /* bytes of the first block before the start */
		} aes;
	} u;
};

/* A folder's decoding graph: the nodes and what went wrong first. */
struct sz_chain {
	struct src *in;
	struct szc_folder f;
	struct sz_node nodes[SZ_MAX_NODES];
	unsigned nnodes;
	struct sz_node *root;
	uint64_t last_pack; /* window offset of the last packed byte read (messages) */
	int pw;		    /* the password (keyring.h) its AES coders decrypt with, or -1 */
	size_t mem;
	int err;
	char msg[SZ_MSG];
};

/* Where a decoder starts: NULL for the folder's start. */
struct sz_start {
	uint64_t uoff;
	uint64_t coff;
	uint32_t kind;	     /* SZ_CK_LZMA2 or SZ_CK_COPY */
	const uint8_t *hist; /* Delta's last bytes before uoff (dist of them), or NULL */
};

/* Builds the graph of folder f, started at st (NULL: its start), its AES coders decrypting
 * with password pw (-1: none).  0 and *out, or -errno with the reason in the returned chain's
 * msg (*out is then the failed chain, for the message, and must be freed). */
int sz_chain_new(struct src *in, const struct szc_folder *f, const struct sz_start *st, int pw,
		 struct sz_chain **out);
void sz_chain_free(struct sz_chain *ch); /* NULL does nothing */

/* The name of the chain's coder ("LZMA2", "packed stream" for -1), for messages. */
const char *sz_coder_name(const struct sz_chain *ch, int coder);

/* Record the chain's first error (sevenzip_fail.c; a later one leaves it) and return it
 * (or the first): sz_fail while node n decodes, with where in the archive; sz_refuse while the
 * graph is built. */
__attribute__((format(printf, 3, 4))) int sz_fail(struct sz_node *n, int err, const char *fmt,
						   ...);
__attribute__((format(printf, 3, 4))) int sz_refuse(struct sz_chain *ch, int err,
						     const char *fmt, ...);

/* The next bytes of node n (the root: the folder's): > 0, 0 at its end (checked), -errno. */
ssize_t sz_read(struct sz_node *n, uint8_t *buf, size_t len);


#endif
