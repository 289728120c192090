/* libcrypto (OpenSSL 3), loaded when a password is first used (common/dl.h says why a library
 * only some sources need is not linked).
 *
 * crypto/cipher.c calls libcrypto only through the pointers declared here, sym_NAME, each
 * typed by OpenSSL's own declaration: AES (ECB and CBC through EVP; CTR is built from ECB,
 * because WinZip's counter is little-endian), SHA-1 and SHA-256 through EVP, PBKDF2-HMAC-SHA1.
 * A mount given no password never loads it.  The build needs the headers only (libssl-dev);
 * the package depends on libssl3.
 */
#ifndef TARSEEK_CRYPTO_DL_H
#define TARSEEK_CRYPTO_DL_H

#include <openssl/evp.h>

#include "common/dl.h"

DL_DECLARE(EVP_CIPHER_CTX_new);
DL_DECLARE(EVP_CIPHER_CTX_free);
DL_DECLARE(EVP_CIPHER_CTX_set_padding);
DL_DECLARE(EVP_CipherInit_ex);
DL_DECLARE(EVP_CipherUpdate);
DL_DECLARE(EVP_aes_128_ecb);
DL_DECLARE(EVP_aes_192_ecb);
DL_DECLARE(EVP_aes_256_ecb);
DL_DECLARE(EVP_aes_256_cbc);
DL_DECLARE(EVP_MD_CTX_new);
DL_DECLARE(EVP_MD_CTX_free);
DL_DECLARE(EVP_DigestInit_ex);
DL_DECLARE(EVP_DigestUpdate);
DL_DECLARE(EVP_DigestFinal_ex);
DL_DECLARE(EVP_sha1);
DL_DECLARE(EVP_sha256);
DL_DECLARE(PKCS5_PBKDF2_HMAC_SHA1);

/* Loads libcrypto and resolves every pointer above, once (thread-safe; later calls say the
 * same).  0, or -ENOTSUP with the reason logged once ("encrypted archives need
 * libcrypto.so.3, which cannot be loaded: ..."); the pointers are then NULL. */
int cr_load(void);

#endif
