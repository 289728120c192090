/* Helpers for the unit tests (see testutil.h). */
#include "testutil.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
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

static void *feed(void *arg)
{
	struct feeder *f = arg;
	size_t done = 0;

	while (done < f->len) {
		ssize_t n = write(f->fd, f->buf + done, f->len - done);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		done += (size_t)n;
	}
	close(f->fd);
	return NULL;
}

uint8_t *tu_pipe(const char *cmd, const void *in, size_t inlen, size_t *outlen)
{
	int pin[2], pout[2], status;
	pid_t pid;
	pthread_t th;
	struct feeder f;
	uint8_t *out = NULL;
	size_t len = 0, cap = 0;

	signal(SIGPIPE, SIG_IGN);
	if (pipe(pin) < 0)
		return NULL;
	if (pipe(pout) < 0) {
		close(pin[0]);
		close(pin[1]);
		return NULL;
	}
	pid = fork();
	if (pid < 0) {
		close(pin[0]);
		close(pin[1]);
		close(pout[0]);
		close(pout[1]);
		return NULL;
	}
	if (pid == 0) {
		dup2(pin[0], 0);
		dup2(pout[1], 1);
		close(pin[0]);
		close(pin[1]);
		close(pout[0]);
		close(pout[1]);
		execl("/bin/sh", "sh", "-c", cmd, (char *)NULL);
		_exit(127);
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
