/* StreamsInfo of a 7z header (sza_int.h): where the packed streams are and their sizes (pack
 * info), the folders -- each a graph of coders, with an unpack size per coder output and an
 * optional CRC -- (unpack info), and how many files each folder holds, their sizes and CRCs
 * (substreams info).  Counts are checked against the bytes left before anything is allocated;
 * a folder's record is only counted here and kept as its offset in the header, and parsed
 * again into the chain struct (sza_fold_get) when its stream is declared.
 */
#include "containers/7z/sza_int.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* ---- folders ------------------------------------------------------------------------------- */

/* Parses a folder record at r: counts it (coders, inputs, packed streams), and fills f when
 * f is not NULL and the folder fits the chain struct (*fits).  Damage is -EIO. */
static int sza_fold_parse(struct sza_db *db, struct sza_rd *r, struct szc_folder *f, bool *fits,
			  uint32_t *ncoders, uint32_t *npacked, uint32_t *main)
{
	uint64_t nc, nin = 0, nout = 0, in_fed = 0, taken = 0;
	bool ok = true;

	if (f)
		memset(f, 0, sizeof(*f));
	if (sza_rd_count(db, r, SZA_CODERS_MAX, &nc, "number of coders"))
		return db->err;
	if (nc == 0)
		return sza_damaged(db, r, "a folder without coders");
	if (nc > SZC_MAX_CODERS)
		ok = false;
	for (uint64_t c = 0; c < nc; c++) {
		uint8_t flags, idlen;
		uint64_t id = 0, ci = 1, co = 1, np = 0;

		if (sza_rd_byte(db, r, &flags))
			return db->err;
		idlen = flags & 0x0F;
		if (flags & 0xC0)
			return sza_damaged(db, r,
					   "a coder with alternative methods or reserved bits");
		if (idlen > 8)
			return sza_damaged(db, r, "a method id longer than 8 bytes");
		for (unsigned i = 0; i < idlen; i++) {
			uint8_t b;
			if (sza_rd_byte(db, r, &b))
				return db->err;
			id = id << 8 | b;
		}
		if (flags & 0x10) {
			if (sza_rd_count(db, r, SZA_CODERS_MAX, &ci, "number of coder inputs") ||
			    sza_rd_count(db, r, SZA_CODERS_MAX, &co, "number of coder outputs"))
				return db->err;
		}
		if (co != 1)
			ok = false; /* 7-Zip writes none since 15.x */
		nin += ci;
		nout += co;
		if (flags & 0x20 && sza_rd_num(db, r, &np))
			return db->err;
		if (np > r->len - r->pos)
			return sza_damaged(db, r, "coder properties run past the end");
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
		return sza_damaged(db, r, "a folder's numbers of streams do not add up");
	uint64_t nbind = nout - 1, np = nin - nbind;
	if (np == 0)
		return sza_damaged(db, r, "a folder without packed streams");
	if (nin > SZC_MAX_IN || np > SZC_MAX_PACKED)
		ok = false;
	for (uint64_t b = 0; b < nbind; b++) {
		uint64_t in, out;

		if (sza_rd_num(db, r, &in) || sza_rd_num(db, r, &out))
			return db->err;
		if (in >= nin || out >= nout)
			return sza_damaged(db, r, "a bind pair out of range");
		if ((in_fed & (1ull << in)) || (taken & (1ull << out)))
			return sza_damaged(db, r, "a stream bound twice in a folder");
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
			return sza_damaged(db, r, "no input left for the packed stream");
		if (ok && f)
			f->packed[0] = (uint8_t)in;
	} else {
		for (uint64_t p = 0; p < np; p++) {
			uint64_t in;

			if (sza_rd_num(db, r, &in))
				return db->err;
			if (in >= nin)
				return sza_damaged(db, r, "a packed stream index out of range");
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
int sza_fold_get(struct sza_db *db, uint64_t i, struct szc_folder *f)
{
	struct sza_fold *fo = &db->fold[i];
	struct sza_rd r = {db->hdr, db->hlen, fo->rec};
	uint32_t nc, np, main;
	bool fits;
	int err = sza_fold_parse(db, &r, f, &fits, &nc, &np, &main);

	if (err)
		return err;
	if (!fits)
		return 1;
	r.pos = fo->sizes;
	for (unsigned c = 0; c < f->ncoders; c++)
		if (sza_rd_num(db, &r, &f->unpack_size[c]))
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

void sza_streams_free(struct sza_db *db)
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

static int sza_pack_info(struct sza_db *db, struct sza_rd *r)
{
	uint8_t id;

	if (sza_rd_num(db, r, &db->pack_pos) ||
	    sza_rd_count(db, r, r->len - r->pos, &db->npack, "number of packed streams"))
		return db->err;
	db->pack_size = calloc(db->npack ? db->npack : 1, sizeof(*db->pack_size));
	if (!db->pack_size)
		return sza_bad(db, -ENOMEM, "7z: out of memory");
	for (;;) {
		if (sza_rd_byte(db, r, &id))
			return db->err;
		if (id == SZA_ID_END)
			return 0;
		if (id == SZA_ID_SIZE) {
			for (uint64_t i = 0; i < db->npack; i++)
				if (sza_rd_num(db, r, &db->pack_size[i]))
					return db->err;
		} else if (id == SZA_ID_CRC) {
			uint8_t *has = malloc(db->npack ? db->npack : 1);
			uint32_t *crc = malloc((db->npack ? db->npack : 1) * sizeof(*crc));
			int err = has && crc ? sza_rd_digests(db, r, db->npack, has, crc)
					     : sza_bad(db, -ENOMEM, "7z: out of memory");
			free(has);
			free(crc);
			if (err)
				return err;
		} else if (sza_rd_skip_prop(db, r)) {
			return db->err;
		}
	}
}

static int sza_unpack_info(struct sza_db *db, struct sza_rd *r)
{
	uint64_t packs = 0;
	uint8_t id, ext;

	if (sza_rd_byte(db, r, &id))
		return db->err;
	if (id != SZA_ID_FOLDER)
		return sza_damaged(db, r, "no folder list");
	if (sza_rd_count(db, r, (r->len - r->pos) / 2, &db->nfold, "number of folders") ||
	    sza_rd_byte(db, r, &ext))
		return db->err;
	if (ext != 0)
		return sza_bad(db, -ENOTSUP,
			       "7z: folders stored outside the header are not supported");
	db->fold = calloc(db->nfold ? db->nfold : 1, sizeof(*db->fold));
	if (!db->fold)
		return sza_bad(db, -ENOMEM, "7z: out of memory");
	for (uint64_t i = 0; i < db->nfold; i++) {
		struct sza_fold *fo = &db->fold[i];
		bool fits;

		fo->rec = r->pos;
		if (sza_fold_parse(db, r, NULL, &fits, &fo->ncoders, &fo->npacked, &fo->main))
			return db->err;
		fo->first_pack = packs;
		packs += fo->npacked;
		fo->nsub = 1;
	}
	if (packs > db->npack)
		return sza_damaged(db, r, "the folders use more packed streams than there are");
	if (sza_rd_byte(db, r, &id))
		return db->err;
	if (id != SZA_ID_UNPACK_SIZE)
		return sza_damaged(db, r, "no unpack sizes");
	for (uint64_t i = 0; i < db->nfold; i++) {
		struct sza_fold *fo = &db->fold[i];

		fo->sizes = r->pos;
		/* one size per output; main's is the folder's */
		for (uint32_t c = 0; c < fo->ncoders; c++) {
			uint64_t v;
			if (sza_rd_num(db, r, &v))
				return db->err;
			if (c == fo->main)
				fo->usize = v;
		}
	}
	for (;;) {
		if (sza_rd_byte(db, r, &id))
			return db->err;
		if (id == SZA_ID_END)
			break;
		if (id == SZA_ID_CRC) {
			uint8_t *has = malloc(db->nfold ? db->nfold : 1);
			uint32_t *crc = malloc((db->nfold ? db->nfold : 1) * sizeof(*crc));
			int err = has && crc ? sza_rd_digests(db, r, db->nfold, has, crc)
					     : sza_bad(db, -ENOMEM, "7z: out of memory");
			for (uint64_t i = 0; !err && i < db->nfold; i++) {
				db->fold[i].has_crc = has[i];
				db->fold[i].crc = crc[i];
			}
			free(has);
			free(crc);
			if (err)
				return err;
		} else if (sza_rd_skip_prop(db, r)) {
			return db->err;
		}
	}
	/* where each folder's packed bytes are, and that they are inside the file */
	uint64_t off = SZA_SIG_SIZE + db->pack_pos, p = 0;
	if (db->pack_pos > db->fsize)
		off = UINT64_MAX;
	for (uint64_t i = 0; i < db->nfold; i++) {
		struct sza_fold *fo = &db->fold[i];

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

static int sza_substreams(struct sza_db *db, struct sza_rd *r)
{
	uint64_t total = 0, unknown = 0, k = 0, left;
	uint8_t id;
	bool sizes = false;

	if (sza_rd_byte(db, r, &id))
		return db->err;
	if (id == SZA_ID_NUM_UNPACK) {
		for (uint64_t i = 0; i < db->nfold; i++) {
			left = r->len - r->pos;
			if (sza_rd_count(db, r, left + 1, &db->fold[i].nsub,
					 "number of files in a folder"))
				return db->err;
			/* all but one of a folder's files need a size of at least one byte */
			if (db->fold[i].nsub > 1 && db->fold[i].nsub - 1 > left)
				return sza_damaged(db, r,
						   "more files in a folder than sizes can follow");
		}
		if (sza_rd_byte(db, r, &id))
			return db->err;
	}
	for (uint64_t i = 0; i < db->nfold; i++) {
		if (db->fold[i].nsub > r->len ||
		    total + db->fold[i].nsub > 2 * (uint64_t)r->len + 1)
			return sza_damaged(db, r, "too many files");
		db->fold[i].first_sub = total;
		total += db->fold[i].nsub;
	}
	db->nsubs = total;
	db->sub_size = calloc(total ? total : 1, sizeof(*db->sub_size));
	db->sub_crc = calloc(total ? total : 1, sizeof(*db->sub_crc));
	db->sub_has = calloc(total ? total : 1, 1);
	if (!db->sub_size || !db->sub_crc || !db->sub_has)
		return sza_bad(db, -ENOMEM, "7z: out of memory");
	if (id == SZA_ID_SIZE)
		sizes = true;
	for (uint64_t i = 0; i < db->nfold; i++) {
		struct sza_fold *fo = &db->fold[i];
		uint64_t sum = 0;

		if (fo->nsub == 0)
			continue;
		for (uint64_t j = 1; j < fo->nsub; j++) {
			uint64_t v;

			if (!sizes)
				return sza_damaged(db, r, "no sizes for the files of a folder");
			if (sza_rd_num(db, r, &v))
				return db->err;
			if (v > fo->usize - sum)
				return sza_damaged(db, r,
						   "the files of a folder are larger than it");
			sum += v;
			db->sub_size[k++] = v;
		}
		db->sub_size[k++] = fo->usize - sum;
	}
	if (sizes && sza_rd_byte(db, r, &id))
		return db->err;
	/* a folder with one file and a CRC of its own gives the file that CRC */
	for (uint64_t i = 0; i < db->nfold; i++) {
		struct sza_fold *fo = &db->fold[i];

		if (fo->nsub == 1 && fo->has_crc) {
			db->sub_has[fo->first_sub] = 1;
			db->sub_crc[fo->first_sub] = fo->crc;
		} else {
			unknown += fo->nsub;
		}
	}
	for (;;) {
		if (id == SZA_ID_END)
			return 0;
		if (id == SZA_ID_CRC) {
			uint8_t *has = malloc(unknown ? unknown : 1);
			uint32_t *crc = malloc((unknown ? unknown : 1) * sizeof(*crc));
			int err = has && crc ? sza_rd_digests(db, r, unknown, has, crc)
					     : sza_bad(db, -ENOMEM, "7z: out of memory");
			for (uint64_t i = 0, u = 0; !err && i < db->nfold; i++) {
				struct sza_fold *fo = &db->fold[i];

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
		} else if (sza_rd_skip_prop(db, r)) {
			return db->err;
		}
		if (sza_rd_byte(db, r, &id))
			return db->err;
	}
}

/* StreamsInfo: pack info, unpack info, substreams, kEnd. */
int sza_streams_info(struct sza_db *db, struct sza_rd *r)
{
	uint8_t id;
	bool have_unpack = false, have_subs = false;

	sza_streams_free(db);
	for (;;) {
		if (sza_rd_byte(db, r, &id))
			return db->err;
		if (id == SZA_ID_END)
			break;
		if (id == SZA_ID_PACK_INFO && !db->pack_size) {
			if (sza_pack_info(db, r))
				return db->err;
		} else if (id == SZA_ID_UNPACK_INFO && !have_unpack) {
			if (sza_unpack_info(db, r))
				return db->err;
			have_unpack = true;
		} else if (id == SZA_ID_SUBSTREAMS && have_unpack && !have_subs) {
			if (sza_substreams(db, r))
				return db->err;
			have_subs = true;
		} else {
			return sza_damaged(db, r, "unexpected property in the streams info");
		}
	}
	if (have_unpack && !db->pack_size)
		return sza_damaged(db, r, "folders without packed streams");
	if (have_unpack && !have_subs) { /* one file per folder */
		db->nsubs = db->nfold;
		db->sub_size = calloc(db->nfold ? db->nfold : 1, sizeof(*db->sub_size));
		db->sub_crc = calloc(db->nfold ? db->nfold : 1, sizeof(*db->sub_crc));
		db->sub_has = calloc(db->nfold ? db->nfold : 1, 1);
		if (!db->sub_size || !db->sub_crc || !db->sub_has)
			return sza_bad(db, -ENOMEM, "7z: out of memory");
		for (uint64_t i = 0; i < db->nfold; i++) {
			db->fold[i].first_sub = i;
			db->sub_size[i] = db->fold[i].usize;
			db->sub_has[i] = db->fold[i].has_crc;
			db->sub_crc[i] = db->fold[i].crc;
		}
	}
	return 0;
}
