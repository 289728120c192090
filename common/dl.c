/* Loading an optional library (see dl.h). */
#include "common/dl.h"

#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "common/log.h"
#include "config.h"

int dl_load(const char *soname, const char *what, const struct dl_sym *syms, size_t n)
{
	void *h = dlopen(soname, RTLD_NOW | RTLD_LOCAL);

	if (!h) {
		tfs_log(TFS_LOG_ERR, "%s need %s, which cannot be loaded: %s", what, soname,
			dlerror());
		return -ENOTSUP;
	}
	for (size_t i = 0; i < n; i++) {
		void *f = dlsym(h, syms[i].name);
		if (!f) {
			tfs_log(TFS_LOG_ERR, "%s need %s, which lacks %s", what, soname,
				syms[i].name);
			for (size_t k = 0; k < i; k++)
				*syms[k].fn = NULL;
			dlclose(h);
			return -ENOTSUP;
		}
		*syms[i].fn = f;
	}
	return 0; /* the handle stays open for the process's life */
}

bool dl_available(const char *soname)
{
	void *h = dlopen(soname, RTLD_LAZY | RTLD_LOCAL);

	if (h)
		dlclose(h);
	return h != NULL;
}

const char *dl_optional(void)
{
	static char list[768];

	snprintf(list, sizeof(list), "%s (remote archives) %s", DL_CURL,
		 dl_available(DL_CURL) ? "found" : "missing");
#if HAVE_LIBARCHIVE
	size_t n = strlen(list);
	snprintf(list + n, sizeof(list) - n, ", %s (rar, iso9660, cpio, ...) %s", DL_ARCHIVE,
		 dl_available(DL_ARCHIVE) ? "found" : "missing");
#endif
	size_t k = strlen(list);
	snprintf(list + k, sizeof(list) - k, ", %s (encrypted zip and 7z) %s", DL_CRYPTO,
		 dl_available(DL_CRYPTO) ? "found" : "missing");
#if HAVE_SQUASHFS
	k = strlen(list);
	snprintf(list + k, sizeof(list) - k, ", %s (SquashFS images) %s", DL_SQUASHFS,
		 dl_available(DL_SQUASHFS) ? "found" : "missing");
#endif
#if HAVE_EXT2FS
	k = strlen(list);
	snprintf(list + k, sizeof(list) - k, ", %s (ext2/3/4 in images) %s", DL_EXT2FS,
		 dl_available(DL_EXT2FS) ? "found" : "missing");
#endif
#if HAVE_LIBFSNTFS
	k = strlen(list);
	snprintf(list + k, sizeof(list) - k, ", %s (NTFS in images) %s", DL_FSNTFS,
		 dl_available(DL_FSNTFS) ? "found" : "missing");
#endif
#if HAVE_JSONC
	k = strlen(list);
	snprintf(list + k, sizeof(list) - k, ", %s (container images) %s", DL_JSONC,
		 dl_available(DL_JSONC) ? "found" : "missing");
#endif
	return list;
}
