/* The 7z header's primitives (sza_int.h): a reader over the header in memory -- 7z's NUMBER
 * (a first byte whose leading 1 bits count the bytes that follow), counts bounded by the bytes
 * left, bit vectors, digests, properties skipped by their size -- and the parse's first error,
 * which sticks: every reader returns it, and sza_archive.c logs it once when the parse ends.
 * The leaf of the 7z container: it calls no other part of it.
 */
#include "containers/7z/sza_int.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/byteio.h"

/* ---- errors -------------------------------------------------------------------------------- */

/* The archive's name for messages. */
const char *sza_name(const struct cont_sink *sink)
{
	return sink && sink->name ? sink->name : "7z";
}

/* The parse's first error, logged when the parse returns (after the archive's name). */
int sza_bad(struct sza_db *db, int err, const char *fmt, ...)
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
int sza_damaged(struct sza_db *db, const struct sza_rd *r, const char *what)
{
	return sza_bad(db, -EIO, "7z: damaged header: %s at byte %zu of the %s at offset %" PRIu64,
		       what, r ? r->pos : 0, db->decoded ? "decoded header" : "header",
		       db->hdr_off);
}

/* ---- reading numbers ----------------------------------------------------------------------- */

int sza_rd_byte(struct sza_db *db, struct sza_rd *r, uint8_t *v)
{
	*v = 0;
	if (r->pos >= r->len)
		return sza_damaged(db, r, "unexpected end");
	*v = r->p[r->pos++];
	return 0;
}

/* 7z's NUMBER: the first byte's leading 1 bits say how many bytes follow. */
int sza_rd_num(struct sza_db *db, struct sza_rd *r, uint64_t *v)
{
	uint8_t first, mask = 0x80;
	uint64_t val = 0;

	*v = 0;
	if (sza_rd_byte(db, r, &first))
		return db->err;
	for (unsigned i = 0; i < 8; i++) {
		uint8_t b;

		if ((first & mask) == 0) {
			val |= (uint64_t)(first & (mask - 1)) << (8 * i);
			*v = val;
			return 0;
		}
		if (sza_rd_byte(db, r, &b))
			return db->err;
		val |= (uint64_t)b << (8 * i);
		mask >>= 1;
	}
	*v = val;
	return 0;
}

/* A NUMBER that must be at most max (a count, checked against the bytes left). */
int sza_rd_count(struct sza_db *db, struct sza_rd *r, uint64_t max, uint64_t *v,
		 const char *what)
{
	if (sza_rd_num(db, r, v))
		return db->err;
	if (*v > max) {
		char m[96];

		snprintf(m, sizeof(m), "%s %" PRIu64 " is more than the header can hold", what, *v);
		return sza_damaged(db, r, m);
	}
	return 0;
}

int sza_rd_skip(struct sza_db *db, struct sza_rd *r, uint64_t n)
{
	if (n > r->len - r->pos)
		return sza_damaged(db, r, "a property runs past the end");
	r->pos += (size_t)n;
	return 0;
}

int sza_rd_u32(struct sza_db *db, struct sza_rd *r, uint32_t *v)
{
	if (r->len - r->pos < 4)
		return sza_damaged(db, r, "unexpected end");
	*v = le32(r->p + r->pos);
	r->pos += 4;
	return 0;
}

/* A bit vector of n bits at the reader: allocated (n <= bytes left * 8, checked). */
int sza_rd_bits(struct sza_db *db, struct sza_rd *r, uint64_t n, uint8_t **out)
{
	size_t bytes = (size_t)((n + 7) / 8);

	*out = NULL;
	if ((n + 7) / 8 > r->len - r->pos)
		return sza_damaged(db, r, "a bit vector runs past the end");
	*out = malloc(bytes ? bytes : 1);
	if (!*out)
		return sza_bad(db, -ENOMEM, "7z: out of memory");
	memcpy(*out, r->p + r->pos, bytes);
	r->pos += bytes;
	return 0;
}

/* Digests: an all-defined byte (or a bit vector), then a CRC per defined item. */
int sza_rd_digests(struct sza_db *db, struct sza_rd *r, uint64_t n, uint8_t *has, uint32_t *crc)
{
	uint8_t all, *def = NULL;
	int err = 0;

	if (sza_rd_byte(db, r, &all))
		return db->err;
	if (!all && sza_rd_bits(db, r, n, &def))
		return db->err;
	for (uint64_t i = 0; i < n && !err; i++) {
		has[i] = all || sza_bit(def, i);
		if (has[i])
			err = sza_rd_u32(db, r, &crc[i]);
	}
	free(def);
	return err;
}

/* Skips the data of a property we do not read (its size first). */
int sza_rd_skip_prop(struct sza_db *db, struct sza_rd *r)
{
	uint64_t size;

	if (sza_rd_num(db, r, &size))
		return db->err;
	return sza_rd_skip(db, r, size);
}
