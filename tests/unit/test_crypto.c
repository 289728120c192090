/* Unit tests of crypto/: the primitives against published test vectors (AES: FIPS-197 and
 * SP 800-38A; HMAC-SHA1: RFC 2202; PBKDF2-HMAC-SHA1: RFC 6070; SHA-256: FIPS 180-2), ZipCrypto's
 * keys and header against entries Info-ZIP's zip -P wrote, WinZip AES (key derivation,
 * verification value, the little-endian counter, the authentication code) against entries
 * 7-Zip wrote (7zz -tzip -mem=AES128/AES256 -psecret, a file holding "hello"), the decrypting
 * sources read at random offsets, the keyring, zip_crypt's record (damaged ones included) and
 * its choice among several passwords. */
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

#include "common/source.h"
#include "crypto/cipher.h"
#include "crypto/keyring.h"
#include "crypto/winzip_aes.h"
#include "crypto/zip_crypt.h"
#include "crypto/zipcrypto.h"
#include "testutil.h"

static size_t unhex(const char *h, uint8_t *out)
{
	size_t n = 0;

	for (; h[0] && h[1]; h += 2)
		sscanf(h, "%2hhx", &out[n++]);
	return n;
}

static bool same_hex(const uint8_t *p, const char *h)
{
	uint8_t want[256];
	size_t n = unhex(h, want);

	return memcmp(p, want, n) == 0;
}

static void test_aes(void)
{
	uint8_t key[32], pt[64], out[64], iv[16];

	/* FIPS-197 appendix C.1 and C.3 */
	unhex("000102030405060708090a0b0c0d0e0f", key);
	unhex("00112233445566778899aabbccddeeff", pt);
	CHECK_EQ(cr_aes_ecb_encrypt(key, 16, pt, out, 16), 0);
	CHECK(same_hex(out, "69c4e0d86a7b0430d8cdb78070b4c55a"));
	unhex("000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f", key);
	CHECK_EQ(cr_aes_ecb_encrypt(key, 32, pt, out, 16), 0);
	CHECK(same_hex(out, "8ea2b7ca516745bfeafc49904b496089"));
	/* FIPS-197 C.2 (AES-192) */
	unhex("000102030405060708090a0b0c0d0e0f1011121314151617", key);
	CHECK_EQ(cr_aes_ecb_encrypt(key, 24, pt, out, 16), 0);
	CHECK(same_hex(out, "dda97ca4864cdfe06eaf70a0ec0d7191"));
	CHECK_EQ(cr_aes_ecb_encrypt(key, 20, pt, out, 16), -EINVAL);
	CHECK_EQ(cr_aes_ecb_encrypt(key, 16, pt, out, 15), -EINVAL);
	/* SP 800-38A F.2.6: CBC-AES256 decryption, whole and from its second block */
	unhex("603deb1015ca71be2b73aef0857d77811f352c073b6108d72d9810a30914dff4", key);
	unhex("000102030405060708090a0b0c0d0e0f", iv);
	unhex("f58c4c04d6e5f1ba779eabfb5f7bfbd69cfc4e967edb808d679f777bc6702c7d", pt);
	CHECK_EQ(cr_aes256_cbc_decrypt(key, iv, pt, out, 32), 0);
	CHECK(same_hex(out, "6bc1bee22e409f96e93d7e117393172aae2d8a571e03ac9c9eb76fac45af8e51"));
	CHECK_EQ(cr_aes256_cbc_decrypt(key, pt, pt + 16, out, 16), 0);
	CHECK(same_hex(out, "ae2d8a571e03ac9c9eb76fac45af8e51"));
}

static void test_digests(void)
{
	uint8_t key[80], mac[CR_SHA1_LEN], d[CR_SHA256_LEN];
	struct cr_hmac *h;
	struct cr_md *m;

	/* RFC 2202, HMAC-SHA1 test cases 1 and 6 (a key longer than a block) */
	memset(key, 0x0b, 20);
	CHECK_EQ(cr_hmac_sha1_new(key, 20, &h), 0);
	CHECK_EQ(cr_hmac_update(h, "Hi ", 3), 0);
	CHECK_EQ(cr_hmac_update(h, "There", 5), 0);
	CHECK_EQ(cr_hmac_final(h, mac), 0);
	cr_hmac_free(h);
	CHECK(same_hex(mac, "b617318655057264e28bc0b6fb378c8ef146be00"));
	memset(key, 0xaa, 80);
	CHECK_EQ(cr_hmac_sha1_new(key, 80, &h), 0);
	const char *t6 = "Test Using Larger Than Block-Size Key - Hash Key First";
	CHECK_EQ(cr_hmac_update(h, t6, strlen(t6)), 0);
	CHECK_EQ(cr_hmac_final(h, mac), 0);
	cr_hmac_free(h);
	CHECK(same_hex(mac, "aa4ae5e15272d00e95705637ce8a3b55ed402112"));
	cr_hmac_free(NULL);
	/* FIPS 180-2: SHA-256("abc") */
	CHECK_EQ(cr_md_new(true, &m), 0);
	CHECK_EQ(cr_md_update(m, "abc", 3), 0);
	CHECK_EQ(cr_md_final(m, d), 0);
	cr_md_free(m);
	CHECK(same_hex(d, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"));
	cr_md_free(NULL);
}

static void test_pbkdf2(void)
{
	uint8_t out[32];

	/* RFC 6070 */
	CHECK_EQ(cr_pbkdf2_sha1((const uint8_t *)"password", 8, (const uint8_t *)"salt", 4, 1, out,
				20), 0);
	CHECK(same_hex(out, "0c60c80f961f0e71f3a9b524af6012062fe037a6"));
	CHECK_EQ(cr_pbkdf2_sha1((const uint8_t *)"password", 8, (const uint8_t *)"salt", 4, 2, out,
				20), 0);
	CHECK(same_hex(out, "ea6c014dc72d6f8ccd1ed92ace1d41f0d8de8957"));
	CHECK_EQ(cr_pbkdf2_sha1((const uint8_t *)"password", 8, (const uint8_t *)"salt", 4, 4096,
				out, 20), 0);
	CHECK(same_hex(out, "4b007901b765489abead49d926f721d065a429c1"));
	CHECK_EQ(cr_pbkdf2_sha1((const uint8_t *)"passwordPASSWORDpassword", 24,
				(const uint8_t *)"saltSALTsaltSALTsaltSALTsaltSALTsalt", 36, 4096,
				out, 25), 0);
	CHECK(same_hex(out, "3d2eec4fe41c849b80c8d83662c0e44a8b291a964cf2f07038"));
	CHECK_EQ(cr_pbkdf2_sha1((const uint8_t *)"pass\0word", 9, (const uint8_t *)"sa\0lt", 5,
				4096, out, 16), 0);
	CHECK(same_hex(out, "56fa6aa75548099dcc37d7f03425e0c3"));
	CHECK_EQ(cr_pbkdf2_sha1((const uint8_t *)"x", 1, (const uint8_t *)"s", 1, 0, out, 16),
		 -EINVAL);
}

/* ZipCrypto: the keys (APPNOTE 6.1.5), the header of an entry Info-ZIP's zip -P secret wrote
 * ("hello", stored, with a data descriptor: the check byte is the DOS time's high byte). */
static void test_zipcrypto(void)
{
	struct zc_keys z;
	uint8_t h[ZC_HEADER], data[5];

	zc_init(&z, NULL, 0);
	CHECK_EQ(z.k[0], 0x12345678u);
	CHECK_EQ(z.k[1], 0x23456789u);
	CHECK_EQ(z.k[2], 0x34567890u);
	zc_init(&z, (const uint8_t *)"secret", 6);
	CHECK_EQ(z.k[0], 0xdda9e469u); /* as a reference implementation in Python computes */
	CHECK_EQ(z.k[1], 0x96212999u);
	CHECK_EQ(z.k[2], 0xf9fc9651u);
	unhex("a6137b4280ef04ae1d93122b", h);
	unhex("88a4ffdcab", data);
	CHECK_EQ(zc_header(&z, h), 0x0f);
	zc_decrypt(&z, data, sizeof(data));
	CHECK(memcmp(data, "hello", 5) == 0);
	zc_init(&z, (const uint8_t *)"secreT", 6);
	CHECK(zc_header(&z, h) != 0x0f); /* (a wrong password passes once in 256) */
}

/* WinZip AES: entries 7-Zip wrote, "hello" stored under AES-128 and AES-256, AE-2. */
static void test_winzip(void)
{
	static const struct {
		unsigned strength;
		const char *data; /* salt, verification value, encrypted bytes, code */
	} v[] = {
	    {1, "9efe3e063a5eabf404eb1478b5dd620047bd679d0e03d5a268"},
	    {3, "89d0b4e459dc366afdb1bbf289630e578c2e13bebfa9302d0c1014b56deb77d4ef"},
	};
	for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
		uint8_t d[64], key[32], mac[32], pv[WZ_PV], got[8];
		size_t n = unhex(v[i].data, d), sl = wz_salt_len(v[i].strength);
		CHECK_EQ(wz_derive(v[i].strength, (const uint8_t *)"secret", 6, d, key, mac, pv), 0);
		CHECK(memcmp(pv, d + sl, WZ_PV) == 0);
		struct src *win = src_from_mem(d, n), *s = NULL;
		CHECK_EQ(wz_src_new(win, v[i].strength, key, mac, &s), 0);
		CHECK_EQ(src_size(s), 5);
		CHECK_EQ(src_pread(s, got, sizeof(got), 0), 5);
		CHECK(memcmp(got, "hello", 5) == 0);
		CHECK_EQ(src_pread(s, got, 2, 3), 2);
		CHECK(memcmp(got, "lo", 2) == 0);
		CHECK_EQ(wz_check_mac(s), 0);
		d[sl + WZ_PV + 1] ^= 1; /* a damaged encrypted byte: the code fails */
		CHECK_EQ(wz_check_mac(s), -EBADMSG);
		src_free(s);
		src_free(win);
		CHECK_EQ(wz_derive(v[i].strength, (const uint8_t *)"Secret", 6, d, key, mac, pv), 0);
		CHECK(memcmp(pv, d + sl, WZ_PV) != 0);
	}
	CHECK_EQ(wz_salt_len(0), 0);
	CHECK_EQ(wz_salt_len(4), 0);
}

/* The decrypting sources read anywhere, in any order, give the plaintext. */
static void test_sources(void)
{
	const size_t n = 3 * (size_t)ZC_STEP + 1000;
	uint8_t *plain = malloc(n), *enc = malloc(n + 64), *got = malloc(n);
	struct zc_keys z, start;
	uint8_t key[32], mac[32];

	tu_fill(plain, n, 7, 1);
	/* ZipCrypto, encrypted here: c = p ^ stream byte, then the keys take p */
	zc_init(&z, (const uint8_t *)"pw", 2);
	for (size_t i = 0; i < ZC_HEADER; i++)
		enc[i] = (uint8_t)i;
	struct zc_keys e = z;
	zc_decrypt(&e, enc, ZC_HEADER); /* any 12 bytes as the "encrypted" header */
	start = e;
	for (size_t i = 0; i < n; i++) {
		uint8_t b = plain[i];
		struct zc_keys t = e;
		uint8_t x = 0;
		zc_decrypt(&t, &x, 1); /* x = stream byte (t took it as plaintext: discard) */
		enc[ZC_HEADER + i] = b ^ x;
		uint8_t back = enc[ZC_HEADER + i];
		zc_decrypt(&e, &back, 1);
		CHECK(back == b);
		if (back != b)
			break;
	}
	struct src *win = src_from_mem(enc, n + ZC_HEADER), *s;
	CHECK_EQ(zc_src_new(win, &start, &s), 0);
	const uint64_t offs[] = {2 * ZC_STEP + 5, 0, ZC_STEP - 1, n - 10, ZC_STEP, 77};
	for (size_t k = 0; k < sizeof(offs) / sizeof(offs[0]); k++) {
		size_t len = n - offs[k] < 5000 ? n - offs[k] : 5000;
		CHECK_EQ(src_pread(s, got, len, offs[k]), len);
		CHECK(memcmp(got, plain + offs[k], len) == 0);
	}
	CHECK_EQ(src_pread(s, got, n, 0), n);
	CHECK(memcmp(got, plain, n) == 0);
	src_free(s);
	src_free(win);
	/* WinZip AES-256: counter mode is its own inverse */
	memset(key, 0x42, sizeof(key));
	memset(mac, 0x17, sizeof(mac));
	memset(enc, 0, 18);
	memcpy(enc + 18, plain, n);
	CHECK_EQ(wz_ctr(key, 32, 0, enc + 18, n), 0);
	memset(enc + 18 + n, 0, WZ_MAC);
	win = src_from_mem(enc, n + 18 + WZ_MAC);
	CHECK_EQ(wz_src_new(win, 3, key, mac, &s), 0);
	for (size_t k = 0; k < sizeof(offs) / sizeof(offs[0]); k++) {
		size_t len = n - offs[k] < 5000 ? n - offs[k] : 5000;
		CHECK_EQ(src_pread(s, got, len, offs[k]), len);
		CHECK(memcmp(got, plain + offs[k], len) == 0);
	}
	src_free(s);
	src_free(win);
	/* too short for their headers */
	win = src_from_mem(enc, 11);
	CHECK_EQ(zc_src_new(win, &start, &s), -EINVAL);
	CHECK_EQ(wz_src_new(win, 3, key, mac, &s), -EINVAL);
	src_free(win);
	free(plain);
	free(enc);
	free(got);
}

static void test_record(void)
{
	struct zcr_rec r = {.kind = ZCR_AES, .strength = 3, .version = 2, .method = 8}, back;
	uint8_t b[ZCR_LEN], *p;
	const void *cp;
	size_t len, cplen;

	zcr_encode(&r, b);
	CHECK_EQ(zcr_parse(b, sizeof(b), &back), 0);
	CHECK(back.kind == ZCR_AES && back.strength == 3 && back.version == 2 && back.method == 8);
	CHECK(strcmp(zcr_name(&back), "AES-256 (AE-2)") == 0);
	CHECK_EQ(zcr_params_join(&r, "\x01\x02", 2, &p, &len), 0);
	CHECK_EQ(zcr_params_split(p, len, &back, &cp, &cplen), 0);
	CHECK(cplen == 2 && memcmp(cp, "\x01\x02", 2) == 0);
	/* damaged records and params */
	for (size_t i = 0; i < len; i++) {
		CHECK_EQ(zcr_params_split(p, i, &back, &cp, &cplen), i && i >= 1 + ZCR_LEN ? 0 : -EINVAL);
	}
	p[0] = 4;
	CHECK_EQ(zcr_params_split(p, len, &back, &cp, &cplen), -EINVAL);
	free(p);
	const char *bad[] = {"0000000000", "0300000800", "0204020800", "0203030800", "0100010800"};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		unhex(bad[i], b);
		CHECK_EQ(zcr_parse(b, sizeof(b), &back), -EINVAL);
	}
	CHECK_EQ(zcr_parse(NULL, 0, &back), -EINVAL);
	r = (struct zcr_rec){.kind = ZCR_ZIPCRYPTO, .check = 0x0f};
	zcr_encode(&r, b);
	CHECK_EQ(zcr_parse(b, sizeof(b), &back), 0);
	CHECK(back.check == 0x0f && strcmp(zcr_name(&back), "ZipCrypto") == 0);
}

/* zcr_open with the keyring: none given, wrong ones, then the right one among them. */
static void test_open_and_keyring(void)
{
	uint8_t zc[32], aes[64];
	size_t zn = unhex("a6137b4280ef04ae1d93122b88a4ffdcab", zc);
	size_t an = unhex("89d0b4e459dc366afdb1bbf289630e578c2e13bebfa9302d0c1014b56deb77d4ef", aes);
	struct zcr_rec rz = {.kind = ZCR_ZIPCRYPTO, .check = 0x0f, .method = 0};
	struct zcr_rec ra = {.kind = ZCR_AES, .strength = 3, .version = 2, .method = 0};
	struct src *wz = src_from_mem(zc, zn), *wa = src_from_mem(aes, an), *s;
	uint8_t got[8];
	char path[] = "/tmp/tarseek-kr-XXXXXX";

	CHECK_EQ(kr_count(), 0);
	CHECK_EQ(zcr_open(wz, &rz, &s), -EACCES);
	CHECK(s == NULL);
	CHECK_EQ(zcr_open(wa, &ra, &s), -EACCES);
	CHECK_EQ(kr_add("", 0), -EINVAL);
	CHECK_EQ(kr_add("a\0b", 3), -EINVAL);
	CHECK_EQ(kr_add("wrong", 5), 0);
	CHECK_EQ(zcr_open(wa, &ra, &s), -EACCES);
	/* a file of passwords: one a line, \r\n too, empty lines skipped */
	int fd = mkstemp(path);
	CHECK(fd >= 0);
	const char *text = "\nalso wrong\r\n\nsecret\n";
	CHECK_EQ(write(fd, text, strlen(text)), (ssize_t)strlen(text));
	close(fd);
	CHECK_EQ(kr_add_file(path), 0);
	CHECK_EQ(kr_count(), 3);
	const uint8_t *pw;
	size_t len;
	kr_get(1, &pw, &len);
	CHECK(len == 10 && memcmp(pw, "also wrong", 10) == 0);
	CHECK_EQ(zcr_open(wz, &rz, &s), 0);
	CHECK_EQ(src_pread(s, got, sizeof(got), 0), 5);
	CHECK(memcmp(got, "hello", 5) == 0);
	CHECK_EQ(zcr_check(s), 0);
	src_free(s);
	CHECK_EQ(zcr_open(wa, &ra, &s), 0);
	CHECK_EQ(src_pread(s, got, sizeof(got), 0), 5);
	CHECK(memcmp(got, "hello", 5) == 0);
	CHECK_EQ(zcr_check(s), 0);
	src_free(s);
	/* the right password, but a byte of the data or of the code changed: the code fails
	 * under the only password whose value matches, so none opens it (never other bytes) */
	for (size_t at = 18; at < an; at += an - 1 - 18) { /* the data's byte, the code's last */
		aes[at] ^= 1;
		struct src *bad = src_from_mem(aes, an);
		s = NULL;
		CHECK_EQ(zcr_open(bad, &ra, &s), -EACCES);
		CHECK(s == NULL);
		src_free(bad);
		aes[at] ^= 1;
	}
	CHECK_EQ(zcr_open(wa, &ra, &s), 0);
	src_free(s);
	/* an entry too short for its scheme */
	struct src *shortw = src_from_mem(aes, 20);
	CHECK_EQ(zcr_open(shortw, &ra, &s), -EIO);
	src_free(shortw);
	CHECK_EQ(kr_add_file("/nonexistent/tarseek-pw"), -ENOENT);
	fd = open(path, O_WRONLY | O_TRUNC);
	CHECK_EQ(write(fd, "\n\r\n", 3), 3);
	close(fd);
	CHECK_EQ(kr_add_file(path), -ENODATA);
	unlink(path);
	/* the caches */
	uint8_t key[32], back[32];
	memset(key, 9, sizeof(key));
	CHECK(!kr_key_get("id", 2, 0, back, 32));
	kr_key_put("id", 2, 0, key, 32);
	CHECK(kr_key_get("id", 2, 0, back, 32) && memcmp(back, key, 32) == 0);
	CHECK(!kr_key_get("id", 2, 1, back, 32));
	CHECK(!kr_key_get("ix", 2, 0, back, 32));
	CHECK_EQ(kr_verdict_get("v", 1), -1);
	kr_verdict_put("v", 1, 2);
	CHECK_EQ(kr_verdict_get("v", 1), 2);
	kr_wipe();
	CHECK_EQ(kr_count(), 0);
	CHECK_EQ(kr_verdict_get("v", 1), -1);
	kr_wipe(); /* twice is fine */
	src_free(wz);
	src_free(wa);
}

int main(void)
{
	test_aes();
	test_digests();
	test_pbkdf2();
	test_zipcrypto();
	test_winzip();
	test_sources();
	test_record();
	test_open_and_keyring();
	return tu_exit();
}
