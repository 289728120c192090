/* Libraries loaded when a source needs them, not when the program starts.
 *
 * libcurl (remote archives) and libarchive (rar, iso, cpio, ...) bring some forty shared
 * libraries with them (gnutls, krb5, ldap, libxml2, ICU, ...) whose loading and relocation cost a
 * cold start 0.1-0.4 s here -- on every mount, for every archive, though most mounts use neither.
 * So, as systemd does for its optional libraries, the program is not linked against them: a
 * module that needs one calls its loader first, which dlopen()s the library by its soname and
 * resolves every function the module calls into a pointer (sym_NAME, typed by the library's own
 * declaration).  The build still needs the library's headers; the package still depends on it.
 *
 * Thread-safe: a loader runs once (pthread_once) and says the same thing to every caller.
 */
#ifndef TARSEEK_DL_H
#define TARSEEK_DL_H

#include <stdbool.h>
#include <stddef.h>

/* One function to resolve: its name and where its address goes. */
struct dl_sym {
	const char *name;
	void **fn;
};

/* Opens the library soname (RTLD_NOW | RTLD_LOCAL) and resolves every symbol of syms.  0, or
 * -ENOTSUP with a message at level err ("WHAT needs SONAME: <dlerror>"), the library then
 * closed and every pointer left NULL.  what: what it is for, for the message ("remote
 * archives"). */
int dl_load(const char *soname, const char *what, const struct dl_sym *syms, size_t n);

/* The libraries loaded this way (net/curl_dl.h, codecs/libarchive/la_dl.h, crypto/crypto_dl.h):
 * libcurl4's (the OpenSSL flavour, whose headers the build uses: libcurl4-openssl-dev),
 * libarchive13's, libssl3's libcrypto and libsquashfs1's. */
#define DL_CURL "libcurl.so.4"
#define DL_ARCHIVE "libarchive.so.13"
#define DL_CRYPTO "libcrypto.so.3" /* crypto/crypto_dl.h: encrypted zip and 7z entries */
#define DL_SQUASHFS "libsquashfs.so.1" /* containers/squashfs/sqfs_dl.h: SquashFS images */
/* inside disk images (-r): containers/ext4/ext4_dl.h, containers/ntfs/ntfs_dl.h; container
 * images: containers/oci/oci_dl.h.  Loaded only then: linked, the five of them cost every cold
 * start ~5 ms (an empty program's cold exec, 3.2 ms alone, 8.5 ms linked with them). */
#define DL_EXT2FS "libext2fs.so.2"
#define DL_COM_ERR "libcom_err.so.2"
#define DL_FSNTFS "libfsntfs.so.1"
#define DL_BFIO "libbfio.so.1"
#define DL_JSONC "libjson-c.so.5"

/* True if the library soname can be loaded here (it is loaded and closed again; nothing is
 * logged).  For --version only. */
bool dl_available(const char *soname);

/* For --version: each optional library the build can use and whether it can be loaded here,
 * "libcurl.so.4 (remote archives) found, ..." (a static string: call from one thread). */
const char *dl_optional(void);

/* A table entry for function f, whose pointer is sym_f. */
#define DL_SYM(f) {#f, (void **)&sym_##f}

/* Declares (in a header) / defines (in the loader) the pointer sym_f for library function f. */
#define DL_DECLARE(f) extern __typeof__(f) *sym_##f
#define DL_DEFINE(f) __typeof__(f) *sym_##f

#endif
