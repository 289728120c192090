/* The passwords of this process: what --password and --password-file gave, in order, held in
 * memory only.
 *
 * Where a password goes, and where it never does.  The options (fs/options.c) hand each one
 * here and wipe their own copy (argv's bytes too, so /proc/PID/cmdline shows none after the
 * start).  They live in one anonymous mapping, locked in memory where the limits allow (never
 * swapped out), left out of core dumps (MADV_DONTDUMP), and wiped when the process ends
 * (kr_wipe, also run by exit through atexit).  Nothing here logs, and no caller ever logs a
 * password, stores it, or stores anything derived from it: the index records that an entry
 * is encrypted and the encryption's parameters as the archive has them (salt, check bytes),
 * never a key, a key's hash or which password opened what -- which one opens an entry is found
 * again by each process, by the verifier the format has (zip) or by decoding (7z).
 *
 * Also here, since they are as secret as the passwords: the keys derived from them that are
 * costly to derive again (7z's 2^19 rounds of SHA-256), and which password opened an
 * encrypted thing (a 7z folder, by its salt and IV), both in memory only, for this process.
 *
 * Threads: kr_add and kr_add_file run before any thread starts (option parsing); after that
 * the list is read-only and kr_get is safe anywhere.  The caches take kr_lock (a leaf lock:
 * nothing else is taken while it is held).
 */
#ifndef TARSEEK_KEYRING_H
#define TARSEEK_KEYRING_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define KR_MAX 64	    /* passwords */
#define KR_PW_MAX 1024	    /* bytes of one password */
#define KR_KEY_MAX 32	    /* bytes of a cached key */

/* Adds a password (len bytes; it may hold any byte but NUL).  0, -E2BIG (too many, or too
 * long), -EINVAL (empty or holding a NUL), -ENOMEM. */
int kr_add(const char *pw, size_t len);

/* Adds each line of the file at path as a password, in order (the line's end, \n or \r\n,
 * is not part of it; empty lines are skipped).  0, or -errno: the file's (-ENOENT, -EACCES,
 * ...), -ENODATA (it holds no password), or kr_add's.  Nothing is logged (the caller says
 * which file); the bytes read are wiped. */
int kr_add_file(const char *path);

/* How many passwords there are. */
size_t kr_count(void);

/* Password i (< kr_count()): its bytes (not NUL-terminated) and length, valid until kr_wipe. */
void kr_get(size_t i, const uint8_t **pw, size_t *len);

/* The key cached under id (idlen bytes: what the key was derived from but the password, e.g.
 * a 7z coder's salt and rounds) for password i: true and keylen bytes into key. */
bool kr_key_get(const void *id, size_t idlen, size_t i, uint8_t *key, size_t keylen);
void kr_key_put(const void *id, size_t idlen, size_t i, const uint8_t *key, size_t keylen);

/* Which password opened the thing named id (a 7z AES coder's salt and IV): its index, or -1
 * when not known yet. */
int kr_verdict_get(const void *id, size_t idlen);
void kr_verdict_put(const void *id, size_t idlen, size_t i);

/* Wipes and unmaps everything (also at exit).  Safe to call more than once. */
void kr_wipe(void);

#endif
