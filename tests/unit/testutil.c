/* Helpers for the unit tests (see testutil.h). */
#include "testutil.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

int tu_failures;

int tu_exit(void)
{
	if (tu_failures)
		fprintf(stderr, "%d check(s) failed\n", tu_failures);
	return tu_failures ? 1 : 0;
}

struct feeder {
	int fd;
	const uint8_t *buf;
	size_t len;
};

/* Writes len bytes of buf to fd; returns how many were written (len unless an error). */
static size_t write_all(int fd, const uint8_t *buf, size_t len)
{
	size_t done = 0;

	while (done < len) {
		ssize_t n = write(fd, buf + done, len - done);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		done += (size_t)n;
	}
	return done;
}

static void *feed(void *arg)
{
	struct feeder *f = arg;

	write_all(f->fd, f->buf, f->len);
	close(f->fd);
	return NULL;
}

/* ---- the outputs of tools, kept for the next tree (TARSEEK_TU_CACHE) ----
 * tools/test.sh tests the same sources in several trees one after the other (the release
 * build, then AddressSanitizer's): the tools that make the tests' data are given the same
 * commands and the same bytes each time, and their output is the same.  With
 * TARSEEK_TU_CACHE set to a folder, a command that succeeded on non-empty input keeps its
 * output there, under a hash of the command and the input, and the next tree's test takes it
 * from there instead of running the tool again.  Only commands fed on stdin: one that reads
 * a file (given no input) always runs. */
static uint64_t fnv1a(uint64_t h, const void *p, size_t n)
{
	const uint8_t *b = p;

	for (size_t i = 0; i < n; i++)
		h = (h ^ b[i]) * 0x100000001b3ull;
	return h;
}

/* The cache file of cmd and its input into path (0), or -1 when there is no cache. */
static int cache_path(const char *cmd, const void *in, size_t inlen, char *path, size_t cap)
{
	const char *dir = getenv("TARSEEK_TU_CACHE");

	if (!dir || !*dir || !in || !inlen)
		return -1;
	/* two FNV-1a hashes of different bases: 128 bits, no collision among a test run's */
	uint64_t a = fnv1a(0xcbf29ce484222325ull, cmd, strlen(cmd) + 1);
	uint64_t b = fnv1a(0x84222325cbf29ce4ull, cmd, strlen(cmd) + 1);
	a = fnv1a(a, in, inlen);
	b = fnv1a(b, in, inlen);
	int n = snprintf(path, cap, "%s/%016llx%016llx-%zu", dir, (unsigned long long)a,
			 (unsigned long long)b, inlen);
	return n > 0 && (size_t)n < cap ? 0 : -1;
}

static void cache_put(const char *path, const uint8_t *out, size_t len)
{
	char tmp[4200];
	int fd;

	snprintf(tmp, sizeof(tmp), "%s.%d.tmp", path, (int)getpid());
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (fd < 0)
		return;
	size_t done = write_all(fd, out, len);
	if (close(fd) == 0 && done == len)
		rename(tmp, path); /* whole, or not there */
	else
		unlink(tmp);
}

static uint8_t *pipe_run(const char *cmd, const void *in, size_t inlen, size_t *outlen);

uint8_t *tu_pipe(const char *cmd, const void *in, size_t inlen, size_t *outlen)
{
	char path[4096];
	uint8_t *out;

	if (cache_path(cmd, in, inlen, path, sizeof(path)) < 0)
		return pipe_run(cmd, in, inlen, outlen);
	out = tu_read_file(path, outlen);
	if (out)
		return out;
	out = pipe_run(cmd, in, inlen, outlen);
	if (out)
		cache_put(path, out, *outlen);
	return out;
}

/* The child is started with posix_spawn, not fork: glibc's shares the test's memory until the
 * exec instead of copying its page tables, which for a test holding tens of megabytes cost
 * more system time than the tools themselves (test_compress with no cached outputs: 11.6 s of
 * system time with fork, 5.3 with posix_spawn; every unit test of the first tree, two at a
 * time: 62 -> 50 s of system time, 107 -> 99 s). */
static uint8_t *pipe_run(const char *cmd, const void *in, size_t inlen, size_t *outlen)
{
	extern char **environ;
	int pin[2], pout[2], status, err;
	pid_t pid;
	pthread_t th;
	struct feeder f;
	uint8_t *out = NULL;
	size_t len = 0, cap = 0;
	posix_spawn_file_actions_t fa;
	char *argv[] = {"sh", "-c", (char *)cmd, NULL};

	signal(SIGPIPE, SIG_IGN);
	if (pipe2(pin, O_CLOEXEC) < 0)
		return NULL;
	if (pipe2(pout, O_CLOEXEC) < 0) {
		close(pin[0]);
		close(pin[1]);
		return NULL;
	}
	/* the dup2s clear close-on-exec on 0 and 1; the pipes' own descriptors close at the exec */
	err = posix_spawn_file_actions_init(&fa);
	if (!err) {
		err = posix_spawn_file_actions_adddup2(&fa, pin[0], 0);
		if (!err)
			err = posix_spawn_file_actions_adddup2(&fa, pout[1], 1);
		if (!err)
			err = posix_spawn(&pid, "/bin/sh", &fa, NULL, argv, environ);
		posix_spawn_file_actions_destroy(&fa);
	}
	if (err) {
		close(pin[0]);
		close(pin[1]);
		close(pout[0]);
		close(pout[1]);
		return NULL;
	}
	close(pin[0]);
	close(pout[1]);
	f.fd = pin[1];
	f.buf = in;
	f.len = in ? inlen : 0;
	pthread_create(&th, NULL, feed, &f);
	for (;;) {
		if (len == cap) {
			cap = cap ? cap * 2 : 1 << 16;
			uint8_t *n = realloc(out, cap);
			if (!n)
				break;
			out = n;
		}
		ssize_t n = read(pout[0], out + len, cap - len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		len += (size_t)n;
	}
	close(pout[0]);
	pthread_join(th, NULL);
	waitpid(pid, &status, 0);
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
		free(out);
		return NULL;
	}
	*outlen = len;
	return out ? out : malloc(1);
}

int tu_have(const char *prog)
{
	char cmd[256];

	snprintf(cmd, sizeof(cmd), "command -v %s >/dev/null 2>&1", prog);
	return system(cmd) == 0;
}

void tu_fill(uint8_t *buf, size_t len, uint32_t seed, int text)
{
	static const char *words[] = {"tar ", "seek ", "index ", "block ", "the ", "of ", "gzip ",
				      "window ", "\n", "checkpoint ", "42 ", "data "};
	uint32_t x = seed * 2654435761u + 1;
	size_t i = 0;

	while (i < len) {
		x ^= x << 13;
		x ^= x >> 17;
		x ^= x << 5;
		if (text) {
			const char *w = words[x % 12];
			while (*w && i < len)
				buf[i++] = (uint8_t)*w++;
		} else {
			buf[i++] = (uint8_t)x;
		}
	}
}

uint8_t *tu_read_file(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	uint8_t *buf;
	long n;

	if (!f)
		return NULL;
	fseek(f, 0, SEEK_END);
	n = ftell(f);
	fseek(f, 0, SEEK_SET);
	buf = malloc(n > 0 ? (size_t)n : 1);
	if (buf && fread(buf, 1, (size_t)n, f) != (size_t)n) {
		free(buf);
		buf = NULL;
	}
	fclose(f);
	if (buf)
		*len = (size_t)n;
	return buf;
}

static void watchdog_fired(int sig)
{
	static const char msg[] = "watchdog: the test ran too long (a call blocked?)\n";

	(void)sig;
	if (write(2, msg, sizeof(msg) - 1) < 0) {
		/* nothing else to say it with */
	}
	_exit(1);
}

void tu_watchdog(unsigned seconds)
{
	signal(SIGALRM, watchdog_fired);
	alarm(seconds);
}

void tu_wait_step(double since, const char *file, int line, const char *what)
{
	if (mono_now() - since > TU_WAIT_SECONDS) {
		fprintf(stderr, "%s:%d: still not true after %d s: %s\n", file, line,
			TU_WAIT_SECONDS, what);
		fflush(stderr);
		_exit(1); /* other threads may be blocked for good: no exit handlers */
	}
	usleep(200);
}

char tu_thread_state(pid_t tid)
{
	char path[64], line[512];
	FILE *f;
	char *p;

	snprintf(path, sizeof(path), "/proc/self/task/%d/stat", (int)tid);
	f = fopen(path, "r");
	if (!f)
		return 0;
	p = fgets(line, sizeof(line), f) ? strrchr(line, ')') : NULL; /* "tid (comm) S ..." */
	fclose(f);
	return p && p[1] == ' ' ? p[2] : 0;
}
