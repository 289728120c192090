/* When a stream gets a shadow, and how large one may grow (see shadow.h).
 *
 * The choice is by codec, known before the stream is decoded (the shadow is written while it
 * is).  What makes a random read costly is the decoding between a restart point and the bytes
 * wanted: the xz, lzip and .lzma families (one block per 24 MiB, or per file), bzip2's slow
 * blocks, .Z and lz4 (no restart points of ours but the format's), lzop's 1 MiB groups, a
 * zstd file of one frame, a 7z folder, what libarchive decodes (from its start).  gzip and raw
 * deflate are left alone: the index stores a checkpoint every 256 KiB and ISA-L inflates at
 * ~1 GB/s, so a read costs about what a shadow's would.
 */
#include "shadow/shadow.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/statvfs.h>
#include <time.h>
#include <unistd.h>

static const char *const mode_names[] = {
    [SHADOW_AUTO] = "auto",
    [SHADOW_ALWAYS] = "always",
    [SHADOW_NEVER] = "never",
};

char *shadow_path(const char *index_path)
{
	size_t n = strlen(index_path);
	const char *sfx = ".sqlite";
	size_t k = strlen(sfx);
	char *p = malloc(n + 16);

	if (!p)
		return NULL;
	if (n > k && strcmp(index_path + n - k, sfx) == 0)
		n -= k;
	memcpy(p, index_path, n);
	strcpy(p + n, ".shadow.zst");
	return p;
}

int shadow_mode_parse(const char *s, enum shadow_mode *out)
{
	for (size_t i = 0; i < sizeof(mode_names) / sizeof(*mode_names); i++) {
		if (strcmp(s, mode_names[i]) == 0) {
			*out = (enum shadow_mode)i;
			return 0;
		}
	}
	return -EINVAL;
}

enum shadow_mode shadow_default(void)
{
	const char *v = getenv("TARSEEK_SHADOW");
	enum shadow_mode m;

	return v && shadow_mode_parse(v, &m) == 0 ? m : SHADOW_AUTO;
}

const char *shadow_mode_name(enum shadow_mode m)
{
	return (unsigned)m < sizeof(mode_names) / sizeof(*mode_names) ? mode_names[m] : "?";
}

bool shadow_wanted(enum shadow_mode m, const char *codec, bool zstd_small_frames)
{
	if (m == SHADOW_NEVER || !codec || strcmp(codec, "stored") == 0 ||
	    strcmp(codec, "none") == 0)
		return false;
	if (m == SHADOW_ALWAYS)
		return true;
	if (strcmp(codec, "gzip") == 0 || strcmp(codec, "deflate") == 0)
		return false;
	if (strcmp(codec, "zstd") == 0 && zstd_small_frames)
		return false;
	return true;
}

bool shadow_store_only(const char *codec, uint64_t size, uint64_t min)
{
	static const char *const fast[] = {"gzip", "deflate", "zstd", "lz4", "lzo"};

	if (!codec || size < min)
		return false;
	for (size_t i = 0; i < sizeof(fast) / sizeof(*fast); i++)
		if (strcmp(codec, fast[i]) == 0)
			return true;
	return false;
}

uint64_t shadow_budget(const char *path, uint64_t max)
{
	struct statvfs sv;
	char *dir = strdup(path), *slash;
	uint64_t room;

	if (!dir)
		return 0;
	slash = strrchr(dir, '/');
	if (slash == dir)
		slash[1] = '\0';
	else if (slash)
		*slash = '\0';
	else
		strcpy(dir, ".");
	if (statvfs(dir, &sv) < 0) {
		free(dir);
		return 0;
	}
	free(dir);
	room = (uint64_t)sv.f_bavail * sv.f_frsize / SHADOW_FREE_SHARE;
	return max && max < room ? max : room;
}

uint64_t shadow_new_id(void)
{
	uint64_t id = 0;

	while (id == 0) {
		if (getrandom(&id, sizeof(id), GRND_NONBLOCK) != (ssize_t)sizeof(id)) {
			struct timespec ts;
			clock_gettime(CLOCK_REALTIME, &ts);
			id = (uint64_t)ts.tv_nsec * 0x9E3779B97F4A7C15ull ^ (uint64_t)ts.tv_sec ^
			     (uint64_t)getpid() << 32;
		}
	}
	return id;
}
