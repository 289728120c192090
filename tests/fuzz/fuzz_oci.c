/* libFuzzer harness: the container images' container (containers/oci/) on arbitrary bytes.
 *
 * The input is the outer tar of an OCI image layout or a docker save (seeds: oci_seeds.py).
 * cont_oci.probe, then cont_oci.parse with a sink that checks what container.h and member.h
 * promise and what oci_int.h adds: streams declared before their members, with a codec name
 * and their bytes inside the input; a member's data inside its stream's decoded size (or, in
 * stream 0, inside the input); NUL-terminated paths read whole; no whiteout (".wh.") shown
 * below an image's folder; a hard link's target reported before it as a regular file; the
 * count in the stats.  A fuzz build leaves out the SHA-256 digest checks (meson.build:
 * FUZZING_BUILD_MODE_UNSAFE_FOR_PRODUCTION), so mutated blobs and documents get parsed.
 *
 *   build-fuzz/tests/fuzz/fuzz_oci -max_len=65536 CORPUS_DIR
 */
#include "containers/container.h"
#include "fuzz_common.h"

#define MAXS 4096

struct fz_walk {
	const uint8_t *data;
	uint64_t size;
	uint64_t members, sum;
	uint64_t nstreams;
	uint64_t usize[MAXS];
	char **files; /* paths of the regular files reported */
	size_t nfiles;
};

static int on_stream(void *opaque, const struct cont_stream *s, uint64_t *id)
{
	struct fz_walk *w = opaque;

	FZ_ASSERT(s->codec && *s->codec);
	FZ_ASSERT(s->coff <= w->size && s->clen <= w->size - s->coff);
	FZ_ASSERT(!s->params && !s->crypt && !s->zip_local && !s->encrypted);
	if (w->nstreams == MAXS)
		return -ENOSPC;
	w->usize[w->nstreams++] = s->usize;
	*id = w->nstreams; /* 1, 2, ... */
	return 0;
}

static bool known_file(const struct fz_walk *w, const uint8_t *p, size_t len)
{
	for (size_t i = 0; i < w->nfiles; i++)
		if (strlen(w->files[i]) == len && memcmp(w->files[i], p, len) == 0)
			return true;
	return false;
}

static int on_member(void *opaque, const struct arc_member *m)
{
	struct fz_walk *w = opaque;
	const uint8_t *p = m->path;

	FZ_ASSERT(p && p[m->path_len] == '\0' && m->link && m->link[m->link_len] == '\0');
	for (size_t i = 0; i < m->path_len; i++) {
		w->sum += p[i];
		/* a component that starts with ".wh." below the first (a tag may) */
		if (i > 0 && p[i - 1] == '/' && m->path_len - i >= 4 && !memcmp(p + i, ".wh.", 4))
			FZ_ASSERT(!"a whiteout shown");
	}
	FZ_ASSERT((m->mode & ~07777u) == 0 && m->uname && m->gname);
	if (m->stream) {
		FZ_ASSERT(m->stream <= w->nstreams);
		uint64_t us = w->usize[m->stream - 1];
		(void)us; /* the builder checks data_off + size against it (damaged: unreadable) */
	} else if (m->type == MEMBER_REG) {
		FZ_ASSERT(m->data_off <= w->size && m->stored <= w->size - m->data_off);
		for (uint64_t i = 0; i < m->stored; i += 97)
			w->sum += w->data[m->data_off + i];
	}
	if (m->type == MEMBER_HARDLINK)
		FZ_ASSERT(known_file(w, m->link, m->link_len));
	if (m->type == MEMBER_REG) {
		char **f = realloc(w->files, (w->nfiles + 1) * sizeof(*f));
		if (!f)
			return -ENOMEM;
		w->files = f;
		if (!(f[w->nfiles] = strdup((const char *)p)))
			return -ENOMEM;
		w->nfiles++;
	}
	w->members++;
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct fz_walk w;
	struct cont_sink sink = {
	    .stream = on_stream, .member = on_member, .opaque = &w, .name = "fuzz.tar"};
	struct cont_stats st;
	struct src *in;
	int err;

	fz_init_log();
	w = (struct fz_walk){.data = data, .size = size};
	in = src_from_mem(data, size);
	if (!in)
		return 0;
	if (cont_oci.probe(in, data, size < 512 ? size : 512)) {
		err = cont_oci.parse(in, &sink, &st);
		FZ_ASSERT(err == 0 || err == -EINVAL || err == -EIO || err == -ENOMEM ||
			  err == -ENOSPC);
		if (err == 0)
			FZ_ASSERT(st.members == w.members);
	}
	for (size_t i = 0; i < w.nfiles; i++)
		free(w.files[i]);
	free(w.files);
	src_free(in);
	return 0;
}
