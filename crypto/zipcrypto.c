/* Zip's traditional encryption (see zipcrypto.h). */
#include "crypto/zipcrypto.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "crypto/cipher.h"

#define ZC_BUF ((size_t)64 << 10)

static const z_crc_t *zc_table(void)
{
	return get_crc_table(); /* zlib's CRC-32 table: the one PKWARE's keys use */
}

static inline uint32_t zc_crc(const z_crc_t *t, uint32_t c, uint8_t b)
{
	return (uint32_t)t[(c ^ b) & 0xff] ^ (c >> 8);
}

static inline void zc_update(const z_crc_t *t, struct zc_keys *z, uint8_t p)
{
	z->k[0] = zc_crc(t, z->k[0], p);
	z->k[1] = (z->k[1] + (z->k[0] & 0xff)) * 134775813u + 1;
	z->k[2] = zc_crc(t, z->k[2], (uint8_t)(z->k[1] >> 24));
}

static inline uint8_t zc_stream_byte(const struct zc_keys *z)
{
	uint32_t t = (z->k[2] | 2) & 0xffff;

	return (uint8_t)((t * (t ^ 1)) >> 8);
}

void zc_init(struct zc_keys *z, const uint8_t *pw, size_t len)
{
	const z_crc_t *t = zc_table();

	z->k[0] = 0x12345678u;
	z->k[1] = 0x23456789u;
	z->k[2] = 0x34567890u;
	for (size_t i = 0; i < len; i++)
		zc_update(t, z, pw[i]);
}

void zc_decrypt(struct zc_keys *z, uint8_t *p, size_t n)
{
	const z_crc_t *t = zc_table();
	struct zc_keys k = *z; /* in registers */

	for (size_t i = 0; i < n; i++) {
		p[i] ^= zc_stream_byte(&k);
		zc_update(t, &k, p[i]);
	}
	*z = k;
	cr_wipe(&k, sizeof(k));
}

uint8_t zc_header(struct zc_keys *z, const uint8_t h[ZC_HEADER])
{
	uint8_t b[ZC_HEADER];

	memcpy(b, h, sizeof(b));
	zc_decrypt(z, b, sizeof(b));
	uint8_t check = b[ZC_HEADER - 1];
	cr_wipe(b, sizeof(b));
	return check;
}

/* ---- the decrypting source ----------------------------------------------------------------- */

struct zc_src {
	struct src *in;	 /* the header and the encrypted data */
	uint64_t size;	 /* of the plaintext */
	pthread_mutex_t lock;
	struct zc_keys *states; /* states[k]: the keys at plaintext offset k * ZC_STEP (lock) */
	size_t nstates, cap;	/* known: states[0 .. nstates) (lock) */
};

static ssize_t zc_pread(void *opaque, void *buf, size_t len, uint64_t off)
{
	struct zc_src *s = opaque;
	uint8_t *tmp;
	struct zc_keys z;
	uint64_t pos, end;
	size_t k;
	ssize_t err = 0;

	if (off >= s->size)
		return 0;
	if (len > s->size - off)
		len = (size_t)(s->size - off);
	end = off + len;
	tmp = malloc(ZC_BUF);
	if (!tmp)
		return -ENOMEM;
	pthread_mutex_lock(&s->lock);
	k = (size_t)(off / ZC_STEP);
	if (k >= s->nstates)
		k = s->nstates - 1;
	z = s->states[k];
	pthread_mutex_unlock(&s->lock);
	pos = (uint64_t)k * ZC_STEP;
	while (pos < end) {
		/* up to the next step boundary: its state is recorded on the way */
		uint64_t next = (pos / ZC_STEP + 1) * ZC_STEP;
		size_t n = (size_t)((next < end ? next : end) - pos);
		if (n > ZC_BUF)
			n = ZC_BUF;
		err = src_pread_full(s->in, tmp, n, ZC_HEADER + pos);
		if (err)
			break;
		zc_decrypt(&z, tmp, n);
		if (pos + n > off) { /* the part asked for */
			uint64_t a = pos > off ? pos : off;
			memcpy((uint8_t *)buf + (a - off), tmp + (a - pos), (size_t)(pos + n - a));
		}
		pos += n;
		if (pos % ZC_STEP == 0 && pos < s->size) {
			size_t at = (size_t)(pos / ZC_STEP);
			pthread_mutex_lock(&s->lock);
			if (at == s->nstates && at < s->cap)
				s->states[s->nstates++] = z;
			pthread_mutex_unlock(&s->lock);
		}
	}
	cr_wipe(&z, sizeof(z));
	cr_wipe(tmp, ZC_BUF);
	free(tmp);
	return err ? err : (ssize_t)len;
}

static void zc_close(void *opaque)
{
	struct zc_src *s = opaque;

	cr_wipe(s->states, s->cap * sizeof(*s->states));
	free(s->states);
	pthread_mutex_destroy(&s->lock);
	free(s);
}

static void zc_advise(void *opaque, uint64_t off, uint64_t len)
{
	struct zc_src *s = opaque;

	src_advise(s->in, ZC_HEADER + off, len);
}

static const struct src_ops zc_ops = {.pread = zc_pread, .close = zc_close, .advise = zc_advise};

int zc_src_new(struct src *win, const struct zc_keys *z, struct src **out)
{
	uint64_t size = src_size(win);
	struct zc_src *s;

	*out = NULL;
	if (size == SRC_SIZE_UNKNOWN || size < ZC_HEADER) {
		return -EINVAL;
	}
	s = calloc(1, sizeof(*s));
	if (!s) {
		return -ENOMEM;
	}
	s->in = win;
	s->size = size - ZC_HEADER;
	s->cap = (size_t)(s->size / ZC_STEP) + 1;
	s->states = calloc(s->cap, sizeof(*s->states));
	pthread_mutex_init(&s->lock, NULL);
	if (!s->states) {
		zc_close(s);
		return -ENOMEM;
	}
	s->states[0] = *z;
	s->nstates = 1;
	*out = src_new(&zc_ops, s, s->size);
	if (!*out) {
		zc_close(s);
		return -ENOMEM;
	}
	return 0;
}
