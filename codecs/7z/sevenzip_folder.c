/* 7z folder codec: decodes one folder of a 7z archive (a stream the container declared, see
 * containers/container.h), from its packed bytes and the coder chain the container puts in
 * codec_opts.params (sevenzip_chain.h).  It recognises no file of its own: probe always
 * says no, and codec_probe never returns it.
 *
 * The decoding graph (a tree of coders, one node each) is sevenzip_graph.c's.
 *
 * Checkpoints.  Checkpoint 0 (uoff 0, coff 0) carries the coder part of the params blob as
 * its aux.  Decoding can restart elsewhere only in two shapes of folder, both with one packed
 * stream:
 *   - Copy over the packed stream (or over AES over it, see below): anywhere; a checkpoint
 *     every spacing bytes, coff = uoff;
 *   - LZMA2 over the packed stream (or over AES over it), with BCJ filters on it in the same
 *     liblzma chain and optionally Delta as the outermost coder: at an LZMA2 chunk that resets the
 *     dictionary (control 0x01, or 0xE0 and above -- 7-Zip's multi-threaded LZMA2 encoder starts
 *     each of its blocks with one; a single-threaded one writes one block).  The scan walks the
 *     chunk headers ahead of the decoder (six bytes a chunk) to find them, and takes the first one
 *     at least spacing bytes after the previous checkpoint.  A fresh LZMA2 decoder started at such
 *     a chunk is in the same state as the sequential one there (nothing before the reset can be
 *     referenced, and the chunk sets new properties), but the filters above it are not: BCJ filters
 *     convert relative to the position (given as their start offset) and x86's keeps a few bytes of
 *     state, and Delta needs its last `distance` bytes.  So before a candidate is emitted the scan
 *     decodes from it with a fresh decoder, exactly as dec_new would, and compares with the
 *     sequential output: at least SZ_VERIFY bytes, and for x86 until four bytes without E8/E9
 *     (after which the x86 filter's state provably no longer depends on where it started), at most
 *     SZ_VERIFY_MAX; the candidate is dropped when they differ or no such point comes.  The other
 *     BCJ filters convert aligned words with no state, so a candidate must be aligned (ARMT 2, IA64
 *     16, the others 4).  Delta's history is stored in the aux.  Other shapes (BCJ2, LZMA1,
 *     Deflate, BZip2, PPMd -- whose model, up to its memory size, is no record to store --,
 *     several packed streams) have checkpoint 0 only.
 *
 * Checkpoint fields for 7z:
 *   uoff   decoded offset in the folder
 *   coff   offset in the folder's packed bytes (the window) where the restart reads: the LZMA2
 *          chunk header (SZ_CK_LZMA2), the byte itself (SZ_CK_COPY), 0 (checkpoint 0); in
 *          an encrypted folder, the offset in what AES decrypts of them
 *   clen, extra, bits  0
 *   flags  0 (start of the folder), SZ_CK_LZMA2 or SZ_CK_COPY
 *   aux    the coder part of the params blob; with SZ_CK_LZMA2 and an outermost Delta, the
 *          `distance` decoded bytes before uoff follow it.
 *
 * Integrity: besides the structure above, the scan checks each file's CRC-32 from the
 * substream table of the params, as its last byte passes, and the folder's unpack CRC at the
 * end; scan_verified is the end of the last file whose CRC matched (or that has none and was
 * decoded whole).  Decoders start anywhere and check sizes and structure only; what they
 * return is checked by the index's segment CRCs.  Memory: an LZMA dictionary is allocated at
 * the size the coder states, but never larger than that coder's output (7-Zip states more
 * for small files); one above SZ_DICT_MAX (1.5 GiB) is refused with -ENOMEM.
 *
 * Encrypted folders (an AES coder, sevenzip_aes.h).  7z stores nothing that tells a right
 * password from a wrong one, so the passwords of the keyring (crypto/keyring.h) are tried in
 * order by decoding: a password opens the folder when its first SZ_TRY bytes decode without an
 * error (a wrong key turns LZMA's input into noise, which fails within bytes) and, if a CRC
 * comes within SZ_TRY_MAX bytes (a file's, from the scan's substream table, or the folder's),
 * it matches -- a folder of Copy has nothing else to fail.  The keyring remembers the verdict
 * for the coder's salt and IV, and the derived key for its salt and cycles, for the process:
 * the scan, every decoder and every folder of the archive try once.  When none opens it,
 * scan_new and dec_new return -EACCES without logging (the reader names the file); a
 * password that passed the trial but is wrong after all fails a CRC later (-EIO), never gives
 * other bytes.  Restarts work as in a plain folder when the AES coder sits between the packed
 * stream and the LZMA2 or Copy coder that restarts (7-Zip's layout): CBC decrypts any block
 * from the one before it, so coff is an offset in AES's output (the walker reads the chunk
 * headers through sz_aes_pread) and a decoder there starts the packed stream at its block.
 */
#include "codecs/codec.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/byteio.h"
#include "common/crc32.h"
#include "common/log.h"
#include "codecs/7z/sevenzip_graph.h"
#include "crypto/cipher.h"
#include "crypto/keyring.h"

#define SZ_FILL ((size_t)256 << 10)	      /* decoded bytes the scan asks for at once */
#define SZ_HIST 256			      /* bytes kept behind the scan's position (Delta) */
#define SZ_VERIFY 64			      /* bytes compared from a restart candidate ... */
#define SZ_VERIFY_MAX ((size_t)4 << 10)	      /* ... at most (x86: up to a quiet point) */
#define SZ_SCAN_BUF (SZ_HIST + SZ_FILL + SZ_VERIFY_MAX)
#define SZ_DEFAULT_SPACING ((uint64_t)1 << 20) /* when opts->spacing is 0 */

_Static_assert(SZ_HIST >= 256, "Delta distances go up to 256");

/* ---- where decoding can restart ------------------------------------------------------------ */

struct sz_shape {
	uint32_t kind;	    /* SZ_CK_LZMA2, SZ_CK_COPY, or 0: checkpoint 0 only */
	unsigned align;	    /* restart offsets must be multiples of this */
	bool x86;	    /* an x86 BCJ filter is in the chain: compare up to a quiet point */
	unsigned delta;	    /* an outermost Delta's distance, or 0 */
	bool aes;	    /* the restarting coder (LZMA2, Copy) reads an AES coder's output ... */
	unsigned aes_coder; /* ... this one, over the packed stream */
};

/* Whether coder c's input is the packed stream, directly or through an AES coder (whose
 * output can be read from any byte too: CBC needs only the block before it). */
static bool sz_reads_pack(const struct szc_folder *f, unsigned c, struct sz_shape *sh)
{
	int src = szc_source_of(f, szc_first_in(f, c));

	if (src < 0)
		return true;
	if (f->coders[src].method != SZM_AES || szc_source_of(f, szc_first_in(f, (unsigned)src)) >= 0)
		return false;
	sh->aes = true;
	sh->aes_coder = (unsigned)src;
	return true;
}

static void sz_restart_shape(const struct szc_folder *f, struct sz_shape *sh)
{
	unsigned c = f->main;
	int src;

	memset(sh, 0, sizeof(*sh));
	sh->align = 1;
	if (f->npacked != 1)
		return;
	if (f->coders[c].method == SZM_DELTA && f->coders[c].nprops == 1) {
		sh->delta = f->coders[c].props[0] + 1u;
		src = szc_source_of(f, szc_first_in(f, c));
		if (src < 0)
			return;
		c = (unsigned)src;
	} else if (f->coders[c].method == SZM_COPY) {
		if (sz_reads_pack(f, c, sh))
			sh->kind = SZ_CK_COPY;
		return;
	}
	for (;;) {
		uint64_t m = f->coders[c].method;

		if (m == SZM_LZMA2)
			break;
		if (!szc_is_bcj(m))
			return;
		if (m == SZM_X86)
			sh->x86 = true;
		if (szc_bcj_align(m) > sh->align)
			sh->align = szc_bcj_align(m);
		src = szc_source_of(f, szc_first_in(f, c));
		if (src < 0)
			return;
		c = (unsigned)src;
	}
	if (sz_reads_pack(f, c, sh))
		sh->kind = SZ_CK_LZMA2;
}

/* ---- the password of an encrypted folder --------------------------------------------------- */

#define SZ_TRY ((uint64_t)64 << 10)	     /* decoded bytes a password must give without an error */
#define SZ_TRY_MAX ((uint64_t)4 << 20) /* ... or more, up to this, until a CRC was checked */

/* The properties of f's first AES coder: 1 if it has one, 0 if not, -EIO if they are bad. */
static int sz_aes_of(const struct szc_folder *f, struct sz_aes_props *ap)
{
	for (unsigned c = 0; c < f->ncoders; c++)
		if (f->coders[c].method == SZM_AES)
			return sz_aes_props(f->coders[c].props, f->coders[c].nprops, ap) ? -EIO : 1;
	return 0;
}

/* Whether password i opens folder f: its chain decodes the folder's first SZ_TRY bytes without
 * an error, and on until a CRC was checked (a file's, from f's substream table when it has
 * one, or the folder's at its end) if one comes within SZ_TRY_MAX bytes: a folder of Copy has
 * no coder that could fail.  1 yes, 0 no, or -errno when no password could say (-ENOMEM;
 * -ENOTSUP: no libcrypto). */
static int sz_try_password(struct src *in, const struct szc_folder *f, size_t i)
{
	struct sz_chain *ch = NULL;
	uint8_t *buf = malloc(SZ_IBUF);
	uint64_t got = 0, sub_end = 0, size = 0;
	uint32_t crc = 0, sub_crc = 0, want = 0;
	uint32_t sub = 0;
	bool has = false, checked = false;
	int err = buf ? sz_chain_new(in, f, NULL, (int)i, &ch) : -ENOMEM;

	while (!err && (got < SZ_TRY || (!checked && got < SZ_TRY_MAX))) {
		ssize_t n = sz_read(ch->root, buf, SZ_IBUF);

		if (n <= 0) {
			err = (int)n;
			if (!n && f->has_crc && crc != f->crc)
				err = -EIO;
			break;
		}
		crc = tfs_crc32(crc, buf, (size_t)n);
		for (size_t k = 0; !err && k < (size_t)n;) { /* the files ending in these bytes */
			while (got + k == sub_end && sub < f->nsubs) {
				szc_get_sub(f, sub++, &size, &has, &want);
				sub_end += size;
				sub_crc = 0;
			}
			if (got + k >= sub_end)
				break;
			size_t take = (size_t)(sub_end - got - k) < (size_t)n - k
					      ? (size_t)(sub_end - got - k)
					      : (size_t)n - k;
			sub_crc = tfs_crc32(sub_crc, buf + k, take);
			k += take;
			if (got + k == sub_end && has) {
				checked = true;
				err = sub_crc == want ? 0 : -EIO;
			}
		}
		got += (uint64_t)n;
	}
	sz_chain_free(ch);
	free(buf);
	if (err == -ENOMEM || err == -ENOTSUP)
		return err;
	return err ? 0 : 1;
}

/* The chain of folder f from st (sz_chain_new's contract), with the password that opens it
 * when it is encrypted: the one the keyring remembers for its first AES coder (salt and IV),
 * else the first, in order, that sz_try_password accepts (then remembered).  When none does,
 * the chain refuses with -EACCES, its message saying so (the callers do not log it: the reader
 * names the file). */
static int sz_chain_open(struct src *in, const struct szc_folder *f, const struct sz_start *st,
			 struct sz_chain **out)
{
	uint8_t id[SZ_AES_ID_MAX];
	struct sz_aes_props ap;
	size_t idlen;
	int pw = -1, r = sz_aes_of(f, &ap);

	if (r <= 0) /* not encrypted, or bad properties (the chain says which) */
		return sz_chain_new(in, f, st, -1, out);
	idlen = sz_aes_id(&ap, true, id);
	pw = kr_verdict_get(id, idlen);
	for (size_t i = 0; pw < 0 && i < kr_count(); i++) {
		r = sz_try_password(in, f, i);
		if (r < 0) { /* the chain that failed so, for its message (none: out of memory) */
			if (!sz_chain_new(in, f, st, (int)i, out)) {
				sz_chain_free(*out);
				*out = NULL;
			}
			return r;
		}
		if (r) {
			pw = (int)i;
			kr_verdict_put(id, idlen, i);
		}
	}
	return sz_chain_new(in, f, st, pw, out);
}

/* ---- decoders ------------------------------------------------------------------------------ */

struct codec_dec {
	struct sz_chain *ch;
	bool logged;
};

static void sz_dec_free(struct codec_dec *d)
{
	if (!d)
		return;
	sz_chain_free(d->ch);
	free(d);
}

/* A decoder at ck from its aux; logs nothing when quiet (the scan's trial decoders). */
static int sz_dec_open(struct src *in, const struct codec_ckpt *ck, const void *aux,
		       size_t auxlen, bool quiet, struct codec_dec **out)
{
	struct szc_folder f;
	struct sz_start st = {0};
	struct codec_dec *d;
	struct sz_shape sh;
	const char *why;
	size_t clen;
	int err;

	*out = NULL;
	if (!in || !ck)
		return -EINVAL;
	err = szc_parse(aux, auxlen, &f, &clen, &why);
	if (err) {
		if (!quiet)
			tfs_log(TFS_LOG_ERR, "7z: bad checkpoint data (%s)", why);
		return err;
	}
	if (ck->flags) {
		sz_restart_shape(&f, &sh);
		if (sh.kind != ck->flags || ck->uoff > f.unpack_size[f.main] ||
		    (sh.kind == SZ_CK_COPY && ck->coff != ck->uoff) ||
		    auxlen - clen != (sh.kind == SZ_CK_LZMA2 ? sh.delta : 0)) {
			if (!quiet)
				tfs_log(TFS_LOG_ERR, "7z: checkpoint at %" PRIu64
						     " does not fit its folder",
					ck->uoff);
			return -EINVAL;
		}
		st.uoff = ck->uoff;
		st.coff = ck->coff;
		st.kind = ck->flags;
		st.hist = sh.delta ? (const uint8_t *)aux + clen : NULL;
	} else if (ck->uoff != 0) {
		if (!quiet)
			tfs_log(TFS_LOG_ERR, "7z: checkpoint at %" PRIu64 " without a restart",
				ck->uoff);
		return -EINVAL;
	}
	d = calloc(1, sizeof(*d));
	if (!d)
		return -ENOMEM;
	err = sz_chain_open(in, &f, ck->flags ? &st : NULL, &d->ch);
	if (err) {
		if (!quiet && d->ch && err != -EACCES)
			tfs_log(err == -ENOTSUP ? TFS_LOG_WARNING : TFS_LOG_ERR, "%s", d->ch->msg);
		sz_dec_free(d);
		return err;
	}
	*out = d;
	return 0;
}

static int sz_dec_new(struct src *in, const struct codec_ckpt *ck, const void *aux, size_t auxlen,
		      struct codec_dec **out)
{
	return sz_dec_open(in, ck, aux, auxlen, false, out);
}

static ssize_t sz_dec_read(struct codec_dec *d, void *buf, size_t len)
{
	ssize_t n = sz_read(d->ch->root, buf, len);

	if (n < 0 && !d->logged && d->ch->msg[0]) {
		tfs_log(TFS_LOG_ERR, "%s", d->ch->msg);
		d->logged = true;
	}
	return n;
}

static size_t sz_dec_memory(const struct codec_dec *d)
{
	return sizeof(*d) + d->ch->mem;
}

/* ---- the scan ------------------------------------------------------------------------------ */

struct codec_scan {
	struct src *in;
	struct codec_sink sink;
	uint8_t *params; /* a copy: the coder part (the aux of checkpoint 0) and the table */
	size_t coder_len;
	struct szc_folder f; /* its subs point into params */
	struct sz_chain *ch;
	struct sz_shape sh;
	uint64_t usize;
	uint64_t spacing;

	/* decoded bytes: buf[0] is folder offset bstart; bytes before bpos were returned */
	uint8_t *buf;
	size_t blen, bpos;
	uint64_t bstart;
	bool eof; /* the whole folder is decoded, its end checked */

	/* restart candidates */
	uint64_t last_ck; /* uoff of the last checkpoint emitted */
	bool ck0;	  /* checkpoint 0 emitted */
	bool cand;	  /* a candidate is pending at cand_u / cand_c */
	uint64_t cand_u, cand_c;
	uint64_t wk_off, wk_u; /* the chunk walker: next LZMA2 chunk header and its uoff */
	bool wk_end;
	uint8_t *aux; /* coder part + Delta history, for checkpoints and trial decoders */
	struct sz_aes_dec aes; /* sh.aes: the key and first IV, for the walker (wiped) */

	/* integrity */
	uint32_t sub;	   /* current substream */
	uint64_t sub_left; /* its bytes still to come */
	uint32_t sub_crc;
	uint32_t fold_crc;
	uint64_t decoded; /* bytes decoded (and checksummed) */
	uint64_t verified;
	int pend_err; /* an error met while decoding ahead: the bytes before it go out first */
	int err;
};

static void sz_scan_free(struct codec_scan *s)
{
	if (!s)
		return;
	sz_chain_free(s->ch);
	free(s->params);
	free(s->buf);
	free(s->aux);
	cr_wipe(&s->aes, sizeof(s->aes));
	free(s);
}

/* Starts substream s->sub (skipping empty ones, which are verified at once). */
static void sz_sub_next(struct codec_scan *s)
{
	while (s->sub < s->f.nsubs) {
		uint64_t size;
		bool has;
		uint32_t crc;

		szc_get_sub(&s->f, s->sub, &size, &has, &crc);
		if (size)
			break;
		s->sub++;
	}
	if (s->sub < s->f.nsubs) {
		uint64_t size;
		bool has;
		uint32_t crc;

		szc_get_sub(&s->f, s->sub, &size, &has, &crc);
		s->sub_left = size;
		s->sub_crc = 0;
	}
}

/* CRCs of freshly decoded bytes p[0..n); -EIO (logged) when a file's CRC fails. */
static int sz_scan_check(struct codec_scan *s, const uint8_t *p, size_t n)
{
	if (s->f.has_crc)
		s->fold_crc = tfs_crc32(s->fold_crc, p, n);
	if (!s->f.nsubs) {
		s->decoded += n;
		return 0;
	}
	while (n) {
		size_t k = n;
		uint64_t size;
		bool has;
		uint32_t crc;

		if (s->sub >= s->f.nsubs)
			return -EINVAL; /* the table adds up to the folder's size (scan_new) */
		if (k > s->sub_left)
			k = (size_t)s->sub_left;
		s->sub_crc = tfs_crc32(s->sub_crc, p, k);
		s->sub_left -= k;
		s->decoded += k;
		p += k;
		n -= k;
		if (s->sub_left)
			break;
		szc_get_sub(&s->f, s->sub, &size, &has, &crc);
		if (has && crc != s->sub_crc) {
			tfs_log(TFS_LOG_ERR,
				"7z: folder %" PRIu32 " (packed data at archive offset %" PRIu64
				"): file %" PRIu32 " of the folder (bytes %" PRIu64 "..%" PRIu64
				") fails its CRC-32 (%08" PRIx32 ", the header says %08" PRIx32
				"), decoded from before compressed offset %" PRIu64,
				s->f.index, s->f.arc_off, s->sub, s->decoded - size, s->decoded,
				s->sub_crc, crc, s->f.arc_off + s->ch->last_pack);
			return -EIO;
		}
		s->verified = s->decoded;
		s->sub++;
		sz_sub_next(s);
	}
	return 0;
}

/* Decodes more into the buffer, so that it holds bytes up to folder offset `upto` (or the end):
 * keeps SZ_HIST bytes before bpos.  0 or -errno (logged). */
static int sz_scan_fill(struct codec_scan *s, uint64_t upto)
{
	while (!s->eof && s->bstart + s->blen < upto) {
		size_t keep = s->bpos > SZ_HIST ? s->bpos - SZ_HIST : 0;
		ssize_t n;
		int err;

		if (s->blen == SZ_SCAN_BUF || s->blen - keep + SZ_FILL > SZ_SCAN_BUF) {
			memmove(s->buf, s->buf + keep, s->blen - keep);
			s->blen -= keep;
			s->bpos -= keep;
			s->bstart += keep;
		}
		size_t want = SZ_SCAN_BUF - s->blen;
		if (want > SZ_FILL)
			want = SZ_FILL;
		if (want == 0)
			return -EINVAL; /* upto is further than the buffer can hold: never */
		n = sz_read(s->ch->root, s->buf + s->blen, want);
		if (n < 0) {
			if (s->ch->msg[0])
				tfs_log(TFS_LOG_ERR, "%s", s->ch->msg);
			return (int)n;
		}
		if (n == 0) {
			s->eof = true;
			if (s->f.has_crc && s->fold_crc != s->f.crc) {
				tfs_log(TFS_LOG_ERR,
					"7z: folder %" PRIu32 " (packed data at archive offset %" PRIu64
					"): its CRC-32 fails (%08" PRIx32 ", the header says %08" PRIx32
					")",
					s->f.index, s->f.arc_off, s->fold_crc, s->f.crc);
				s->verified = 0;
				return -EIO;
			}
			s->verified = s->usize;
			break;
		}
		err = sz_scan_check(s, s->buf + s->blen, (size_t)n);
		s->blen += (size_t)n;
		if (err)
			return err;
	}
	return 0;
}

/* Bytes of the restarting coder's input (the packed stream, or what AES decrypts of it). */
static ssize_t sz_scan_pread(struct codec_scan *s, uint8_t *buf, size_t len, uint64_t off)
{
	if (!s->sh.aes)
		return src_pread(s->in, buf, len, off);
	return sz_aes_pread(s->aes.key, s->aes.iv, s->in, s->f.pack_size[0], buf, len, off);
}

/* The next restart candidate from the chunk walker: an LZMA2 chunk resetting the dictionary,
 * spacing bytes or more after the last checkpoint, aligned for the filters. */
static void sz_walk_next(struct codec_scan *s)
{
	uint64_t psize = s->sh.aes ? s->f.unpack_size[s->sh.aes_coder] : s->f.pack_size[0];

	s->cand = false;
	if (s->sh.kind == SZ_CK_COPY) {
		uint64_t u = s->last_ck + s->spacing;

		if (u < s->usize) {
			s->cand = true;
			s->cand_u = s->cand_c = u;
		}
		return;
	}
	while (s->sh.kind == SZ_CK_LZMA2 && !s->wk_end) {
		uint8_t h[6];
		uint64_t us, cs;
		bool reset;
		ssize_t n;

		n = psize - s->wk_off >= 6 ? 6 : (ssize_t)(psize - s->wk_off);
		if (n < 1 || sz_scan_pread(s, h, (size_t)n, s->wk_off) != n)
			break;
		if (h[0] == 0x00) {
			break;
		} else if (h[0] == 1 || h[0] == 2) {
			if (n < 3)
				break;
			us = (uint64_t)be16(h + 1) + 1;
			cs = 3 + us;
			reset = h[0] == 1;
		} else if (h[0] >= 0x80) {
			if (n < 5)
				break;
			us = ((uint64_t)(h[0] & 0x1F) << 16) + be16(h + 1) + 1;
			cs = (uint64_t)be16(h + 3) + 1 + (h[0] >= 0xC0 ? 6 : 5);
			reset = h[0] >= 0xE0;
		} else {
			break;
		}
		if (reset && s->wk_u > 0 && s->wk_u >= s->last_ck + s->spacing &&
		    s->wk_u % s->sh.align == 0 && s->wk_u < s->usize) {
			s->cand = true;
			s->cand_u = s->wk_u;
			s->cand_c = s->wk_off;
		}
		s->wk_off += cs;
		s->wk_u += us;
		if (s->cand)
			return;
	}
	s->wk_end = true;
}

/* True if the x86 filter's state at (end) provably no longer depends on where decoding
 * started: the four bytes before it hold no E8/E9. */
static bool sz_x86_quiet(const uint8_t *p, size_t end)
{
	for (size_t i = end - 4; i < end; i++)
		if ((p[i] & 0xFE) == 0xE8)
			return false;
	return true;
}

/* Decides the pending candidate (at bpos): a fresh decoder from it must give the bytes the
 * scan has.  Emits the checkpoint if so.  0 or the sink's -errno. */
static int sz_scan_candidate(struct codec_scan *s)
{
	uint64_t u = s->cand_u;
	size_t at = s->bpos, have, need = SZ_VERIFY, cmp = 0, auxlen = s->coder_len;
	struct codec_ckpt ck = {.uoff = u, .coff = s->cand_c, .flags = s->sh.kind};
	struct codec_dec *d = NULL;
	uint8_t tmp[512];
	bool ok = false;
	int err;

	err = sz_scan_fill(s, u + SZ_VERIFY_MAX);
	if (err) { /* no checkpoint; the bytes decoded so far go out, then the error */
		s->pend_err = err;
		s->cand = false;
		return 0;
	}
	have = s->blen - at;
	if (s->sh.kind == SZ_CK_LZMA2 && s->sh.delta) {
		if (at < s->sh.delta) /* never: SZ_HIST bytes are kept behind bpos */
			goto out;
		memcpy(s->aux + s->coder_len, s->buf + at - s->sh.delta, s->sh.delta);
		auxlen += s->sh.delta;
	}
	if (s->sh.kind == SZ_CK_COPY) {
		ok = true;
		goto out;
	}
	if (sz_dec_open(s->in, &ck, s->aux, auxlen, true, &d))
		goto out;
	while (cmp < have) {
		size_t want = have - cmp < sizeof(tmp) ? have - cmp : sizeof(tmp);
		ssize_t n;

		if (cmp >= need && (!s->sh.x86 || sz_x86_quiet(s->buf + at, cmp))) {
			ok = true;
			break;
		}
		if (cmp >= SZ_VERIFY_MAX)
			break;
		if (want > need - cmp && cmp < need)
			want = need - cmp;
		else if (cmp >= need)
			want = 1;
		n = sz_read(d->ch->root, tmp, want);
		if (n <= 0 || memcmp(tmp, s->buf + at + cmp, (size_t)n) != 0)
			break;
		cmp += (size_t)n;
	}
	if (cmp == have && s->eof)
		ok = true; /* equal to the end of the folder */
out:
	sz_dec_free(d);
	if (ok) {
		err = s->sink.checkpoint(s->sink.opaque, &ck, s->aux, auxlen);
		if (err)
			return err;
		s->last_ck = u;
	} else {
		TFS_DEBUG("7z: folder %" PRIu32 ": no checkpoint at %" PRIu64
			  " (a fresh decoder does not give the same bytes)",
			  s->f.index, u);
	}
	sz_walk_next(s);
	return 0;
}

static ssize_t sz_scan_read(struct codec_scan *s, void *out, size_t len)
{
	int err;

	if (s->err)
		return s->err;
	for (;;) {
		uint64_t upos = s->bstart + s->bpos;
		size_t avail = s->blen - s->bpos;

		if (s->cand && s->cand_u == upos && !s->pend_err) {
			err = sz_scan_candidate(s);
			if (err) /* the sink's */
				return s->err = err;
			continue;
		}
		if (avail && !s->ck0) { /* just before the first byte goes out */
			struct codec_ckpt ck = {0};

			err = s->sink.checkpoint(s->sink.opaque, &ck, s->params, s->coder_len);
			if (err)
				return s->err = err;
			s->ck0 = true;
			if (!s->pend_err)
				sz_walk_next(s);
		}
		if (avail) {
			if (s->cand && s->cand_u > upos && s->cand_u - upos < avail && !s->pend_err)
				avail = (size_t)(s->cand_u - upos);
			if (avail > len)
				avail = len;
			memcpy(out, s->buf + s->bpos, avail);
			s->bpos += avail;
			return (ssize_t)avail;
		}
		if (s->pend_err) /* what was decoded before the error has been handed out */
			return s->err = s->pend_err;
		if (s->eof)
			return 0;
		err = sz_scan_fill(s, upos + 1);
		if (err)
			s->pend_err = err;
	}
}

/* Verified bytes, never past those handed out. */
static uint64_t sz_scan_verified(struct codec_scan *s)
{
	uint64_t out = s->bstart + s->bpos;

	return s->verified < out ? s->verified : out;
}

static int sz_scan_new(struct src *in, const struct codec_opts *opts, const struct codec_sink *sink,
		       struct codec_scan **out)
{
	struct codec_scan *s;
	const char *why;
	uint64_t total = 0;
	int err;

	*out = NULL;
	if (!in || !sink || !sink->checkpoint || !opts || !opts->params)
		return -EINVAL;
	s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	s->in = in;
	s->sink = *sink;
	s->spacing = opts->spacing ? opts->spacing : SZ_DEFAULT_SPACING;
	s->params = malloc(opts->params_len ? opts->params_len : 1);
	s->buf = malloc(SZ_SCAN_BUF);
	if (!s->params || !s->buf) {
		err = -ENOMEM;
		goto fail;
	}
	memcpy(s->params, opts->params, opts->params_len);
	err = szc_parse(s->params, opts->params_len, &s->f, &s->coder_len, &why);
	if (err) {
		tfs_log(TFS_LOG_ERR, "7z: bad folder parameters (%s)", why);
		goto fail;
	}
	s->params[24] &= (uint8_t)~SZC_F_SUBS; /* checkpoint 0's aux: the coder part alone */
	s->usize = s->f.unpack_size[s->f.main];
	for (uint32_t i = 0; i < s->f.nsubs; i++) {
		uint64_t size;
		bool has;
		uint32_t crc;

		szc_get_sub(&s->f, i, &size, &has, &crc);
		if (size > s->usize - total) {
			total = UINT64_MAX;
			break;
		}
		total += size;
	}
	if (s->f.nsubs && total != s->usize) {
		tfs_log(TFS_LOG_ERR, "7z: folder %" PRIu32 ": its files do not add up to its size",
			s->f.index);
		err = -EINVAL;
		goto fail;
	}
	sz_sub_next(s);
	err = sz_chain_open(in, &s->f, NULL, &s->ch);
	if (err) {
		if (s->ch && err != -EACCES)
			tfs_log(err == -ENOTSUP ? TFS_LOG_WARNING : TFS_LOG_ERR, "%s", s->ch->msg);
		goto fail;
	}
	sz_restart_shape(&s->f, &s->sh);
	for (unsigned i = 0; s->sh.aes && i < s->ch->nnodes; i++) /* the walker's key */
		if (s->ch->nodes[i].kind == SZN_AES)
			s->aes = s->ch->nodes[i].u.aes.dec;
	s->aux = malloc(s->coder_len + 256);
	if (!s->aux) {
		err = -ENOMEM;
		goto fail;
	}
	memcpy(s->aux, s->params, s->coder_len);
	*out = s;
	return 0;
fail:
	sz_scan_free(s);
	return err;
}

static bool sz_probe(const uint8_t *head, size_t len)
{
	return false;
}

const struct codec codec_7z = {
	.name = "7z",
	.probe = sz_probe,
	.scan_new = sz_scan_new,
	.scan_read = sz_scan_read,
	.scan_verified = sz_scan_verified,
	.scan_name = NULL,
	.scan_free = sz_scan_free,
	.index_blocks = NULL,
	.dec_new = sz_dec_new,
	.dec_read = sz_dec_read,
	.dec_memory = sz_dec_memory,
	.dec_free = sz_dec_free,
};
