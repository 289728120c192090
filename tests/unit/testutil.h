/* Small helpers shared by the unit tests: checks that report file:line, reading files,
 * running the real tools (gzip, xz, tar, ...) on in-memory data. */
#ifndef TARSEEK_TESTUTIL_H
#define TARSEEK_TESTUTIL_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/types.h>

#include "common/clock.h"

extern int tu_failures;

#define CHECK(cond)                                                                                \
	do {                                                                                       \
		if (!(cond)) {                                                                     \
			fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond);   \
			tu_failures++;                                                             \
		}                                                                                  \
	} while (0)

#define CHECK_EQ(a, b)                                                                             \
	do {                                                                                       \
		long long _a = (long long)(a), _b = (long long)(b);                                \
		if (_a != _b) {                                                                    \
			fprintf(stderr, "%s:%d: %s == %lld, expected %s == %lld\n", __FILE__,      \
				__LINE__, #a, _a, #b, _b);                                         \
			tu_failures++;                                                             \
		}                                                                                  \
	} while (0)

/* TU_SANITIZED: 1 in a tree built with AddressSanitizer (gcc's __SANITIZE_ADDRESS__, clang's
 * __has_feature), else 0.  The damage loops that run the same code hundreds of times take a
 * smaller input there (tools/test.sh's sanitizer pass runs every unit test once more, after the
 * first tree ran them whole): the same kinds of damage, streams and checkpoints, fewer bytes
 * behind each; the first tree keeps the full sizes. */
#if defined(__SANITIZE_ADDRESS__)
#define TU_SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define TU_SANITIZED 1
#endif
#endif
#ifndef TU_SANITIZED
#define TU_SANITIZED 0
#endif

/* Exit status for main(): 1 if any check failed, else 0. */
int tu_exit(void);

/* Runs "sh -c cmd" with in/inlen on its stdin and returns its stdout (malloc'd, *outlen set),
 * or NULL if the command failed or could not run.  For making test data with real tools.
 * With TARSEEK_TU_CACHE set to a folder, the output of a command fed non-empty input is kept
 * there and given again for the same command and input without running it (testutil.c). */
uint8_t *tu_pipe(const char *cmd, const void *in, size_t inlen, size_t *outlen);

/* True if a program is on PATH (tests skip with 77 when a tool is missing). */
int tu_have(const char *prog);

/* Deterministic pseudo-random bytes: text-like when text != 0 (compressible), else noise. */
void tu_fill(uint8_t *buf, size_t len, uint32_t seed, int text);

/* Reads a whole file (malloc'd), or NULL. */
uint8_t *tu_read_file(const char *path, size_t *len);

/* Waiting for other threads: TU_WAIT(cond) polls the expression cond until it holds.  If it
 * still does not after TU_WAIT_SECONDS, the test fails at once (file:line and the condition
 * on stderr, exit status 1): a wait for what another thread does, never a guess at how long
 * it takes, and a deadlock fails the test instead of hanging it. */
#define TU_WAIT_SECONDS 30
#define TU_WAIT(cond)                                                                              \
	do {                                                                                       \
		double _tu_since = mono_now();                                                       \
		while (!(cond))                                                                    \
			tu_wait_step(_tu_since, __FILE__, __LINE__, #cond);                        \
	} while (0)

/* Ends the test (exit status 1, with a message) if it still runs after seconds: for a call
 * that blocks when it should not, where no TU_WAIT can help. */
void tu_watchdog(unsigned seconds);

/* Seconds on a monotonic clock. */

/* One step of TU_WAIT: sleeps a fraction of a millisecond, or ends the test past the deadline. */
void tu_wait_step(double since, const char *file, int line, const char *what);

/* The scheduler state of thread tid of this process, from /proc/self/task/<tid>/stat: 'R'
 * running, 'S' asleep (blocked in a futex, a read, ...), 'D', ...; 0 if it cannot be read
 * (the thread has exited).  With the thread's own progress counter it tells that a thread is
 * blocked inside a call rather than not there yet. */
char tu_thread_state(pid_t tid);

#endif
