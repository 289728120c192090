/* An encrypted zip entry: what the index keeps of its encryption, and how a read opens it.
 *
 * The record.  The container (containers/zip.c) describes an encrypted entry in a few bytes,
 * all as the archive has them: the scheme (ZipCrypto, or WinZip AES with its strength and AE
 * version), ZipCrypto's check byte (the high byte of the CRC-32, or of the DOS time when the
 * entry has a data descriptor) and the compression method under the encryption.  The index
 * stores it at the head of the stream's params (zcr_params_join): nothing in it comes from a
 * password.  The salt and the password verification value of AES are not in it: they are the
 * first bytes of the entry's data, read from the archive when the entry is opened.
 *
 *   byte 0   ZCR_ZIPCRYPTO or ZCR_AES
 *   byte 1   ZipCrypto: the check byte; AES: the strength (1..3)
 *   byte 2   AES: the AE version (1 or 2); ZipCrypto: 0
 *   byte 3-4 the compression method, little-endian
 *
 * An encrypted stream's params: one byte n (the record's length, ZCR_LEN), the record, then
 * the codec's own params (lzma-zip's size), if any.
 *
 * Opening.  zcr_open finds the first password of the keyring (keyring.h), in order, that opens
 * the entry and returns the entry's compressed bytes decrypted, as a source the codec reads
 * as it reads a plain entry's window.  AES: the password whose derived verification value
 * matches (a wrong one passes once in 65,536) and under which the authentication code of
 * the whole entry is right (zcr_open reads every encrypted byte once to check it: an
 * encrypted entry is decoded whole at its first read anyway, index/streams.c).  ZipCrypto: the check byte passes a wrong
 * password once in 256, so a password that passes it must also inflate the entry's first
 * 64 KiB without an error when the entry is deflated (zlib, silently: nothing is logged for
 * the passwords that fail); when two pass, the entry's CRC-32 chooses (zcr_open_crc).  A
 * wrong password that passes alone is met by the CRC-32 (whole entries): a read error then,
 * never other bytes.  An AES entry whose code fails under
 * every password whose value matched is refused like one no password matches (-EACCES):
 * the code cannot tell a wrong password from damaged bytes.
 */
#ifndef TARSEEK_ZIP_CRYPT_H
#define TARSEEK_ZIP_CRYPT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/source.h"

enum { ZCR_ZIPCRYPTO = 1, ZCR_AES = 2 };

#define ZCR_LEN 5

struct zcr_rec {
	unsigned kind;	   /* ZCR_* */
	uint8_t check;	   /* ZipCrypto's check byte */
	unsigned strength; /* AES: 1, 2, 3 (128, 192, 256 bits) */
	unsigned version;  /* AES: 1 (AE-1) or 2 (AE-2) */
	unsigned method;   /* the compression method under the encryption */
};

/* Writes r's ZCR_LEN bytes. */
void zcr_encode(const struct zcr_rec *r, uint8_t out[ZCR_LEN]);

/* Reads a record: 0, or -EINVAL (not one: a scheme, strength or version it does not know). */
int zcr_parse(const uint8_t *p, size_t len, struct zcr_rec *r);

/* An encrypted stream's params from r and the codec's (cp, cplen; NULL, 0 when none): malloc'd
 * into *out.  0 or -ENOMEM. */
int zcr_params_join(const struct zcr_rec *r, const void *cp, size_t cplen, uint8_t **out,
		    size_t *outlen);

/* Splits an encrypted stream's params: r, and the codec's params (pointing into params;
 * NULL, 0 when none).  0 or -EINVAL (not such params). */
int zcr_params_split(const void *params, size_t len, struct zcr_rec *r, const void **cp,
		     size_t *cplen);

/* A short name of the scheme for messages: "ZipCrypto", "AES-256 (AE-2)", ... */
const char *zcr_name(const struct zcr_rec *r);

/* The plaintext of the encrypted entry data in win (the bytes after its local header), under
 * the first password that opens it (AES: its authentication code checked).  win is borrowed
 * and must outlive *out.  0 and *out; -EACCES when no password opens it (none given, or
 * none fits; nothing logged: the caller names the entry); -EIO when win is too short for
 * the scheme's header; the source's -errno; cipher.h's (-ENOTSUP: no libcrypto, logged by
 * its loader).  Thread-safe (the keyring is read-only once options are parsed). */
int zcr_open(struct src *win, const struct zcr_rec *r, struct src **out);

/* zcr_open, told the entry's CRC-32 (crc; NULL: not known, as zcr_open).  A ZipCrypto entry
 * that more than one password opens as far as the check byte and the trial inflate can tell
 * (one wrong password in 256 passes the byte; a stored entry has no trial) is then opened
 * with the first of them whose plaintext has that CRC: each is decrypted (and inflated) whole
 * to see.  The common case, one password passing, costs nothing more. */
int zcr_open_crc(struct src *win, const struct zcr_rec *r, const uint32_t *crc,
		 struct src **out);

/* Checks AES's authentication code again (the encrypted bytes read through plain's window;
 * zcr_open did already).  0 (also for ZipCrypto, which has none), -EBADMSG when it fails,
 * or -errno. */
int zcr_check(struct src *plain);

#endif
