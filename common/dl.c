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
	static const struct {
		const char *soname, *what;
		bool built; /* the build has the code that loads it */
	} libs[] = {
	    {DL_CURL, "remote archives", true},
	    {DL_ARCHIVE, "rar, iso9660, cpio, ...", HAVE_LIBARCHIVE},
	    {DL_CRYPTO, "encrypted zip and 7z", true},
	    {DL_SQUASHFS, "SquashFS images", HAVE_SQUASHFS},
	    {DL_EXT2FS, "ext2/3/4 in images", HAVE_EXT2FS},
	    {DL_FSNTFS, "NTFS in images", HAVE_LIBFSNTFS},
	    {DL_JSONC, "container images", HAVE_JSONC},
	};
	static char list[768];
	size_t k = 0;

	list[0] = '\0';
	for (size_t i = 0; i < sizeof(libs) / sizeof(libs[0]); i++) {
		if (!libs[i].built)
			continue;
		snprintf(list + k, sizeof(list) - k, "%s%s (%s) %s", k ? ", " : "", libs[i].soname,
			 libs[i].what, dl_available(libs[i].soname) ? "found" : "missing");
		k = strlen(list);
	}
	return list;
}
