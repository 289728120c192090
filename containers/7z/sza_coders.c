/* 7z folders as the 7z codec (codecs/7z/) takes them (sza_int.h): whether a folder decodes
 * (its methods, its graph) and why not, the params blob its stream carries (the coder
 * chain of codecs/7z/sevenzip_chain.h with its files' sizes and CRCs), the encoded header
 * decoded in memory through the codec, and a folder declared to the sink as one stream.
 */
#include "containers/7z/sza_int.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codecs/codec.h"
#include "common/log.h"
#include "crypto/keyring.h"

/* ---- folder blobs and decoding ------------------------------------------------------------- */

/* Why folder i cannot be decoded (0 if it can): -EOPNOTSUPP with why set; f filled when it
 * can.  An encrypted folder (AES) can: the codec decrypts it with the passwords given. */
static int sza_fold_check(struct sza_db *db, uint64_t i, struct szc_folder *f, const char **why)
{
	static __thread char buf[96];
	int r = sza_fold_get(db, i, f);
	const char *w;

	if (r < 0)
		return r;
	if (r > 0) {
		*why = "7z folder with more coders or streams than tarseek reads";
		return -EOPNOTSUPP;
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
			*why = "7z folder not readable: a coder with an unexpected number of "
			       "inputs";
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
static int sza_fold_blob(struct sza_db *db, uint64_t i, const struct szc_folder *f, uint8_t **out,
			 size_t *len)
{
	const struct sza_fold *fo = &db->fold[i];
	uint32_t nsubs = fo->nsub <= SZA_SUBS_TABLE_MAX ? (uint32_t)fo->nsub : 0;
	size_t n = szc_blob_len(f, nsubs), o;
	uint8_t *b = malloc(n);

	*out = NULL;
	if (!b)
		return sza_bad(db, -ENOMEM, "7z: out of memory");
	o = szc_encode(f, nsubs, b);
	for (uint32_t k = 0; k < nsubs; k++)
		szc_put_sub(b + o - 4, k, db->sub_size[fo->first_sub + k],
			    db->sub_has[fo->first_sub + k], db->sub_crc[fo->first_sub + k]);
	*out = b;
	*len = n;
	return 0;
}

static int sza_null_ckpt(void *opaque, const struct codec_ckpt *ck, const void *aux, size_t auxlen)
{
	return 0;
}

/* Decodes folder 0 of the current streams info (an encoded header) into *out. */
int sza_decode_header(struct sza_db *db, uint8_t **out, size_t *outlen)
{
	struct codec_sink sink = {.checkpoint = sza_null_ckpt};
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
		return sza_damaged(db, NULL, "an encoded header that is not one folder");
	err = sza_fold_check(db, 0, &f, &why);
	if (err)
		return sza_bad(db, err < 0 && err != -EOPNOTSUPP ? err : -ENOTSUP,
			       "7z: the header is compressed with what tarseek cannot decode (%s)",
			       why);
	if (db->fold[0].coff == UINT64_MAX)
		return sza_bad(db, -EIO,
			       "7z: truncated: the encoded header's packed data is past the end of "
			       "the file");
	limit = db->fsize * SZA_HDR_RATIO + ((uint64_t)1 << 20);
	if (limit > SZA_HDR_MAX)
		limit = SZA_HDR_MAX;
	if (db->fold[0].usize > limit)
		return sza_damaged(db, NULL, "the decoded header would be unreasonably large");
	err = sza_fold_blob(db, 0, &f, &blob, &bloblen);
	if (err)
		return err;
	win = src_window(db->in, db->fold[0].coff, db->fold[0].clen);
	buf = malloc(db->fold[0].usize ? (size_t)db->fold[0].usize : 1);
	if (!win || !buf) {
		err = sza_bad(db, -ENOMEM, "7z: out of memory");
		goto out;
	}
	struct codec_opts opts = {.spacing = UINT64_MAX, .threads = 1, .params = blob,
				  .params_len = bloblen};
	err = codec_7z.scan_new(win, &opts, &sink, &scan);
	if (err == -EACCES) { /* encrypted (7-Zip -mhe), and no password given opens it */
		err = sza_bad(db, -EACCES, "the archive's header is encrypted: give its password "
			      "with --password%s", kr_count() ? " (none of those given opens it)" : "");
		goto out;
	}
	if (err) {
		err = sza_bad(db, err == -ENOTSUP ? -ENOTSUP : err == -ENOMEM ? -ENOMEM : -EIO,
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
			err = sza_bad(db, n == -ENOMEM ? -ENOMEM : -EIO,
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

/* Declares folder fi's stream (when decodable) and says how its files are to be read. */
int sza_enter_folder(struct sza_db *db, uint64_t fi, uint64_t *stream, int *unreadable,
		     const char **why)
{
	struct sza_fold *fo = &db->fold[fi];
	struct szc_folder f;
	uint8_t *blob;
	size_t len;
	int err;

	*stream = 0;
	*unreadable = 0;
	*why = NULL;
	err = sza_fold_check(db, fi, &f, why);
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
			sza_name(db->sink), fi);
		return 0;
	}
	err = sza_fold_blob(db, fi, &f, &blob, &len);
	if (err)
		return err;
	struct cont_stream cs = {.codec = codec_7z.name, .coff = fo->coff, .clen = fo->clen,
				 .usize = fo->usize, .params = blob, .params_len = len};
	for (unsigned c = 0; c < f.ncoders; c++)
		cs.encrypted |= f.coders[c].method == SZM_AES;
	err = db->sink->stream(db->sink->opaque, &cs, stream);
	free(blob);
	if (err)
		return sza_bad(db, err, "7z: the index refused a stream (%d)", err);
	return 0;
}
