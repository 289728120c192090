/* Indexes kept in memory (see mem_index.h). */
#include "fs/mem_index.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/statfs.h>
#include <unistd.h>
#include <linux/magic.h>

#include "common/log.h"

bool mi_wanted(const char *index_file)
{
	return index_file && strcmp(index_file, ":memory:") == 0;
}

static const char *base_dir(void)
{
	struct statfs fs;
	const char *t = getenv("TMPDIR");

	if (statfs("/dev/shm", &fs) == 0 && fs.f_type == TMPFS_MAGIC && access("/dev/shm", W_OK) == 0)
		return "/dev/shm";
	return t && *t == '/' ? t : "/var/tmp";
}

char *mi_make(void)
{
	char *dir;

	if (asprintf(&dir, "%s/tarseek-mem-XXXXXX", base_dir()) < 0)
		return NULL;
	if (!mkdtemp(dir)) {
		tfs_log(TFS_LOG_ERR, "--index-file :memory:: cannot make a folder in %s: %s",
			base_dir(), strerror(errno));
		free(dir);
		return NULL;
	}
	return dir;
}

void mi_remove(char *dir)
{
	DIR *d;
	struct dirent *e;

	if (!dir)
		return;
	d = opendir(dir);
	while (d && (e = readdir(d))) {
		if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
			continue;
		if (unlinkat(dirfd(d), e->d_name, 0) < 0)
			tfs_log(TFS_LOG_WARNING, "cannot remove %s/%s: %s", dir, e->d_name,
				strerror(errno));
	}
	if (d)
		closedir(d);
	if (rmdir(dir) < 0 && errno != ENOENT)
		tfs_log(TFS_LOG_WARNING, "cannot remove %s: %s", dir, strerror(errno));
	free(dir);
}
