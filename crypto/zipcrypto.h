/* Zip's traditional PKWARE encryption ("ZipCrypto", APPNOTE 6.1): a stream cipher of three
 * 32-bit keys, made from the password and then updated by every plaintext byte.
 *
 * An encrypted entry's data starts with a 12-byte header, encrypted like the rest: random
 * bytes but the last, which is the high byte of the entry's CRC-32 (or, when the entry keeps
 * its sizes in a data descriptor, flag bit 3, the high byte of its DOS time).  That byte is
 * the only check a password gets: a wrong one passes it once in 256 times, which is why the
 * caller (zip_crypt.h) also decodes the entry's first bytes before taking a password.
 *
 * The cipher cannot start in the middle of the data -- its state depends on every byte before
 * -- so the decrypting source remembers, in memory only, the keys at every ZC_STEP bytes it has
 * passed: a read starts from the last state at or before it and decrypts forward.  The first
 * read far into a large entry decrypts everything before it once (some 300 MB/s); later ones
 * start within ZC_STEP of where they read.  Those states are as secret as the password (the
 * keys they hold decrypt the rest of the entry): they are never written anywhere, and wiped
 * when the source is freed.
 */
#ifndef TARSEEK_ZIPCRYPTO_H
#define TARSEEK_ZIPCRYPTO_H

#include <stddef.h>
#include <stdint.h>

#include "common/source.h"

#define ZC_HEADER 12
#define ZC_STEP ((uint64_t)64 << 10)

struct zc_keys {
	uint32_t k[3];
};

/* The keys made from password pw (len bytes). */
void zc_init(struct zc_keys *z, const uint8_t *pw, size_t len);

/* Decrypts n bytes in place, updating the keys. */
void zc_decrypt(struct zc_keys *z, uint8_t *p, size_t n);

/* The keys z (made by zc_init) decrypt the 12-byte header h: the check byte it ends with (the
 * keys then stand at the data's first byte). */
uint8_t zc_header(struct zc_keys *z, const uint8_t h[ZC_HEADER]);

/* A source of the plaintext of the encrypted data in win (its 12-byte header, then the
 * data), whose keys after the header are z.  win is borrowed: it must outlive the source.
 * Thread-safe (the states it keeps are under a lock of its own, a leaf).  0 and *out,
 * -EINVAL (win shorter than the header), -ENOMEM. */
int zc_src_new(struct src *win, const struct zc_keys *z, struct src **out);

#endif
