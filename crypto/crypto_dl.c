/* libcrypto's functions, resolved at the first use of a password (see crypto_dl.h). */
#include "crypto/crypto_dl.h"

#include <pthread.h>

DL_DEFINE(EVP_CIPHER_CTX_new);
DL_DEFINE(EVP_CIPHER_CTX_free);
DL_DEFINE(EVP_CIPHER_CTX_set_padding);
DL_DEFINE(EVP_CipherInit_ex);
DL_DEFINE(EVP_CipherUpdate);
DL_DEFINE(EVP_aes_128_ecb);
DL_DEFINE(EVP_aes_192_ecb);
DL_DEFINE(EVP_aes_256_ecb);
DL_DEFINE(EVP_aes_256_cbc);
DL_DEFINE(EVP_MD_CTX_new);
DL_DEFINE(EVP_MD_CTX_free);
DL_DEFINE(EVP_DigestInit_ex);
DL_DEFINE(EVP_DigestUpdate);
DL_DEFINE(EVP_DigestFinal_ex);
DL_DEFINE(EVP_sha1);
DL_DEFINE(EVP_sha256);
DL_DEFINE(PKCS5_PBKDF2_HMAC_SHA1);

static const struct dl_sym cr_syms[] = {
	DL_SYM(EVP_CIPHER_CTX_new), DL_SYM(EVP_CIPHER_CTX_free), DL_SYM(EVP_CIPHER_CTX_set_padding),
	DL_SYM(EVP_CipherInit_ex),  DL_SYM(EVP_CipherUpdate),	 DL_SYM(EVP_aes_128_ecb),
	DL_SYM(EVP_aes_192_ecb),    DL_SYM(EVP_aes_256_ecb),	 DL_SYM(EVP_aes_256_cbc),
	DL_SYM(EVP_MD_CTX_new),	    DL_SYM(EVP_MD_CTX_free),	 DL_SYM(EVP_DigestInit_ex),
	DL_SYM(EVP_DigestUpdate),   DL_SYM(EVP_DigestFinal_ex),	 DL_SYM(EVP_sha1),
	DL_SYM(EVP_sha256),	    DL_SYM(PKCS5_PBKDF2_HMAC_SHA1),
};

static pthread_once_t cr_once = PTHREAD_ONCE_INIT;
static int cr_loaded; /* written once, under cr_once */

static void cr_load_once(void)
{
	cr_loaded = dl_load(DL_CRYPTO, "encrypted archives (zip, 7z)", cr_syms,
			    sizeof(cr_syms) / sizeof(cr_syms[0]));
}

int cr_load(void)
{
	pthread_once(&cr_once, cr_load_once);
	return cr_loaded;
}
