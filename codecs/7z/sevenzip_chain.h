/* The coder chain of one 7z folder, as the container (containers/7z/sza_coders.c) hands it to
 * the codec (sevenzip_folder.c): the struct both sides fill and read, and the blob it travels in
 * (cont_stream.params at scan_new, and every checkpoint's aux).
 *
 * A 7z folder is a small graph of coders.  Each coder has one output (7-Zip writes no other
 * since 15.x) and nin inputs; the inputs are numbered across the folder's coders in order
 * (coder 0's inputs first), the outputs by coder.  A bind pair feeds input `in` from the output
 * of coder `out`; an input no bind pair feeds reads a packed stream of the archive; the output
 * no bind pair takes is the folder's, main.  The packed streams of a folder are stored one
 * after the other, in the order of packed[], from the stream's offset 0.
 *
 * The blob, all integers little-endian, fixed width:
 *
 *   off  size
 *    0    4   magic "7zc1"
 *    4    4   length of the coder part (this header up to and including the unpack sizes)
 *    8    8   archive offset of the folder's first packed stream (messages only)
 *   16    4   folder number in the archive (messages only)
 *   20    1   ncoders (1..SZC_MAX_CODERS)
 *   21    1   nbind (= ncoders - 1)
 *   22    1   npacked (1..SZC_MAX_PACKED)
 *   23    1   main: the coder whose output is the folder's
 *   24    1   flags: SZC_F_CRC (the folder's unpack CRC follows), SZC_F_SUBS (a substream
 *             table follows the coder part)
 *   25    3   0
 *   28    4   the folder's unpack CRC-32 (0 without SZC_F_CRC)
 *   32        per coder: u64 method id (its id bytes read as a big-endian number), u8 nin,
 *             u8 nprops, nprops bytes of properties (<= SZC_PROPS_MAX)
 *             per bind pair: u8 in, u8 out
 *             per packed stream: u8 in (the input it feeds), u64 size
 *             per coder: u64 unpack size of its output
 *   -- end of the coder part --
 *             with SZC_F_SUBS (scan parameters only): u32 n, then per substream (a file's
 *             bytes, in order): u64 size, u32 crc, u8 has_crc.  The scan checks each CRC as
 *             the bytes pass; the aux blobs of checkpoints never carry the table.
 *             a checkpoint's aux: what the codec adds after the coder part (sevenzip_folder.c
 *             says what).
 *
 * szc_parse checks everything a decoder relies on: counts within bounds, every input fed
 * exactly once, every output but main taken exactly once, no cycle, sizes that fit.
 */
#ifndef TARSEEK_SEVENZIP_CHAIN_H
#define TARSEEK_SEVENZIP_CHAIN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define SZC_MAX_CODERS 8
#define SZC_MAX_IN 16 /* inputs of all coders together */
#define SZC_MAX_PACKED 8
#define SZC_PROPS_MAX 32
#define SZC_HDR 32
#define SZC_SUB 13 /* bytes per substream in the table */

#define SZC_F_CRC 0x1u
#define SZC_F_SUBS 0x2u

/* Method ids (7-Zip's Methods.txt). */
#define SZM_COPY 0x00u
#define SZM_DELTA 0x03u
#define SZM_X86 0x03030103u
#define SZM_PPC 0x03030205u
#define SZM_IA64 0x03030401u
#define SZM_ARM 0x03030501u
#define SZM_ARMT 0x03030701u
#define SZM_SPARC 0x03030805u
#define SZM_ARM64 0x0Au
#define SZM_RISCV 0x0Bu
#define SZM_BCJ2 0x0303011Bu
#define SZM_LZMA 0x030101u
#define SZM_LZMA2 0x21u
#define SZM_PPMD 0x030401u
#define SZM_DEFLATE 0x040108u
#define SZM_DEFLATE64 0x040109u
#define SZM_BZIP2 0x040202u
#define SZM_AES 0x06F10701u

struct szc_coder {
	uint64_t method;
	uint8_t nin;
	uint8_t nprops;
	uint8_t props[SZC_PROPS_MAX];
};

struct szc_folder {
	uint64_t arc_off;
	uint32_t index;
	uint8_t ncoders, nbind, npacked, main;
	bool has_crc;
	uint32_t crc;
	struct szc_coder coders[SZC_MAX_CODERS];
	struct {
		uint8_t in, out;
	} bind[SZC_MAX_CODERS];
	uint8_t packed[SZC_MAX_PACKED];
	uint64_t pack_size[SZC_MAX_PACKED];
	uint64_t unpack_size[SZC_MAX_CODERS];
	/* szc_parse only: the substream table (NULL, 0 when none), pointing into the blob */
	const uint8_t *subs;
	uint32_t nsubs;
};

/* The name of a method for messages ("LZMA2", "BCJ2", "PPMd", "AES-256", ...) or NULL. */
const char *szc_method_name(uint64_t method);

/* True if the 7z folder codec (sevenzip_folder.c, sevenzip_graph.c) decodes this method. */
bool szc_method_supported(uint64_t method);

/* Checks f's graph (see szc_parse): 0, or -EINVAL with why (a static string) set. */
int szc_check(const struct szc_folder *f, const char **why);

/* The blob's length for f with nsubs substreams in its table (0: no table). */
size_t szc_blob_len(const struct szc_folder *f, uint32_t nsubs);

/* Writes f's coder part into out (szc_blob_len(f, 0) bytes) with the flags given; returns its
 * length.  The caller appends the substream table (nsubs entries, szc_put_sub) if any. */
size_t szc_encode(const struct szc_folder *f, uint32_t nsubs, uint8_t *out);

/* Writes substream i of a table that starts at table (the u32 count at table[0..4)). */
void szc_put_sub(uint8_t *table, uint32_t i, uint64_t size, bool has_crc, uint32_t crc);

/* Parses a blob: 0 with f filled and *coder_len the length of its coder part (the rest, past
 * the table, is the caller's), or -EINVAL (not a valid blob; why says what). */
int szc_parse(const void *blob, size_t len, struct szc_folder *f, size_t *coder_len,
	      const char **why);

/* Substream i of f's table. */
void szc_get_sub(const struct szc_folder *f, uint32_t i, uint64_t *size, bool *has_crc,
		 uint32_t *crc);

/* The folder's coder graph, for the decoder (sevenzip_graph.c builds it, sevenzip_folder.c
 * judges restart points with them): whether m is a BCJ filter (x86, PPC, IA64, ARM, ARMT,
 * SPARC, ARM64) and the alignment its restarts need; what feeds input `in` (folder-wide
 * numbering): the coder bound to it, or -1 - the packed stream's index; coder c's first input. */
bool szc_is_bcj(uint64_t m);
unsigned szc_bcj_align(uint64_t m);
int szc_source_of(const struct szc_folder *f, unsigned in);
unsigned szc_first_in(const struct szc_folder *f, unsigned c);

#endif
