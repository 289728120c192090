/* The passwords and what is derived from them (see keyring.h).
 *
 * One anonymous mapping holds everything secret: the passwords' bytes, the derived keys and
 * the verdicts, so that one mlock, one madvise and one wipe cover them all.  The caches are
 * small arrays replaced round-robin: an archive has few distinct salts (7-Zip writes one per
 * archive), and a miss only costs a derivation again.  Entries are found by a 64-bit FNV hash
 * of their id and then compared in full (the id is kept, as the archive has it: it is not
 * secret, and it saves a false match).
 */
#include "crypto/keyring.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "crypto/cipher.h"

#define KR_BYTES (KR_MAX * 64)	/* room for the passwords' bytes (more is taken as needed) */
#define KR_KEYS 64
#define KR_VERDICTS 256
#define KR_ID_MAX 48 /* bytes of an id kept: 7z's salt (<= 16) + IV (16) + rounds */

struct kr_key {
	bool used;
	uint8_t id[KR_ID_MAX];
	size_t idlen, pw;
	uint8_t key[KR_KEY_MAX];
	size_t keylen;
};

struct kr_verdict {
	bool used;
	uint8_t id[KR_ID_MAX];
	size_t idlen, pw;
};

struct kr_store {
	size_t n;
	struct {
		size_t off, len;
	} pw[KR_MAX];
	size_t used;				/* bytes of pwbytes taken */
	struct kr_key keys[KR_KEYS];		/* kr_lock */
	size_t next_key;			/* kr_lock */
	struct kr_verdict verdicts[KR_VERDICTS]; /* kr_lock */
	size_t next_verdict;			/* kr_lock */
	uint8_t pwbytes[];
};

static struct kr_store *kr;
static size_t kr_size;
static pthread_mutex_t kr_lock = PTHREAD_MUTEX_INITIALIZER;

static size_t kr_map_size(size_t bytes)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	size_t n = sizeof(struct kr_store) + bytes;

	return (n + page - 1) / page * page;
}

/* The store, with room for at least need more bytes of passwords (made, or grown). */
static int kr_room(size_t need)
{
	size_t have = kr ? kr_size - sizeof(*kr) - kr->used : 0, size;
	struct kr_store *s;

	if (kr && have >= need)
		return 0;
	size = kr_map_size((kr ? kr->used : 0) + need + KR_BYTES);
	s = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (s == MAP_FAILED)
		return -ENOMEM;
	(void)madvise(s, size, MADV_DONTDUMP);
	(void)mlock(s, size); /* best effort: RLIMIT_MEMLOCK may say no */
	if (kr) {
		memcpy(s, kr, sizeof(*kr) + kr->used);
		cr_wipe(kr, kr_size);
		munlock(kr, kr_size);
		munmap(kr, kr_size);
	} else {
		atexit(kr_wipe);
	}
	kr = s;
	kr_size = size;
	return 0;
}

int kr_add(const char *pw, size_t len)
{
	int err;

	if (!len || memchr(pw, '\0', len))
		return -EINVAL;
	if (len > KR_PW_MAX || (kr && kr->n == KR_MAX))
		return -E2BIG;
	err = kr_room(len);
	if (err)
		return err;
	memcpy(kr->pwbytes + kr->used, pw, len);
	kr->pw[kr->n].off = kr->used;
	kr->pw[kr->n].len = len;
	kr->used += len;
	kr->n++;
	return 0;
}

int kr_add_file(const char *path)
{
	size_t cap = 0, len = 0, before = kr_count();
	char *buf = NULL;
	int fd = open(path, O_RDONLY | O_CLOEXEC), err = 0;

	if (fd < 0)
		return -errno;
	for (;;) {
		if (len == cap) {
			size_t ncap = cap ? cap * 2 : 4096;
			char *nb = ncap <= (size_t)KR_MAX * (KR_PW_MAX + 2) ? malloc(ncap) : NULL;
			if (!nb) {
				err = ncap > (size_t)KR_MAX * (KR_PW_MAX + 2) ? -E2BIG : -ENOMEM;
				break;
			}
			if (buf) {
				memcpy(nb, buf, len);
				cr_wipe(buf, cap);
				free(buf);
			}
			buf = nb;
			cap = ncap;
		}
		ssize_t n = read(fd, buf + len, cap - len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			err = -errno;
			break;
		}
		if (n == 0)
			break;
		len += (size_t)n;
	}
	close(fd);
	for (size_t at = 0; !err && at < len;) {
		char *nl = memchr(buf + at, '\n', len - at);
		size_t end = nl ? (size_t)(nl - buf) : len, n = end - at;
		if (n && buf[at + n - 1] == '\r')
			n--;
		if (n)
			err = kr_add(buf + at, n);
		at = end + 1;
	}
	cr_wipe(buf, cap);
	free(buf);
	if (!err && kr_count() == before)
		err = -ENODATA;
	return err;
}

size_t kr_count(void)
{
	return kr ? kr->n : 0;
}

void kr_get(size_t i, const uint8_t **pw, size_t *len)
{
	*pw = kr->pwbytes + kr->pw[i].off;
	*len = kr->pw[i].len;
}

static bool kr_same(const uint8_t *have, size_t havelen, const void *id, size_t idlen)
{
	return havelen == idlen && memcmp(have, id, idlen) == 0;
}

bool kr_key_get(const void *id, size_t idlen, size_t i, uint8_t *key, size_t keylen)
{
	bool found = false;

	if (!kr || idlen > KR_ID_MAX || keylen > KR_KEY_MAX)
		return false;
	pthread_mutex_lock(&kr_lock);
	for (size_t k = 0; k < KR_KEYS && !found; k++) {
		struct kr_key *e = &kr->keys[k];
		if (e->used && e->pw == i && e->keylen == keylen && kr_same(e->id, e->idlen, id, idlen)) {
			memcpy(key, e->key, keylen);
			found = true;
		}
	}
	pthread_mutex_unlock(&kr_lock);
	return found;
}

void kr_key_put(const void *id, size_t idlen, size_t i, const uint8_t *key, size_t keylen)
{
	if (!kr || idlen > KR_ID_MAX || keylen > KR_KEY_MAX)
		return;
	pthread_mutex_lock(&kr_lock);
	struct kr_key *e = &kr->keys[kr->next_key++ % KR_KEYS];
	cr_wipe(e, sizeof(*e));
	e->used = true;
	memcpy(e->id, id, idlen);
	e->idlen = idlen;
	e->pw = i;
	memcpy(e->key, key, keylen);
	e->keylen = keylen;
	pthread_mutex_unlock(&kr_lock);
}

int kr_verdict_get(const void *id, size_t idlen)
{
	int found = -1;

	if (!kr || idlen > KR_ID_MAX)
		return -1;
	pthread_mutex_lock(&kr_lock);
	for (size_t k = 0; k < KR_VERDICTS && found < 0; k++) {
		struct kr_verdict *v = &kr->verdicts[k];
		if (v->used && kr_same(v->id, v->idlen, id, idlen))
			found = (int)v->pw;
	}
	pthread_mutex_unlock(&kr_lock);
	return found;
}

void kr_verdict_put(const void *id, size_t idlen, size_t i)
{
	if (!kr || idlen > KR_ID_MAX)
		return;
	pthread_mutex_lock(&kr_lock);
	struct kr_verdict *v = &kr->verdicts[kr->next_verdict++ % KR_VERDICTS];
	v->used = true;
	memcpy(v->id, id, idlen);
	v->idlen = idlen;
	v->pw = i;
	pthread_mutex_unlock(&kr_lock);
}

void kr_wipe(void)
{
	pthread_mutex_lock(&kr_lock);
	if (kr) {
		cr_wipe(kr, kr_size);
		munlock(kr, kr_size);
		munmap(kr, kr_size);
		kr = NULL;
		kr_size = 0;
	}
	pthread_mutex_unlock(&kr_lock);
}
