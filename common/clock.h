/* Seconds on the monotonic clock, for durations (progress lines, timeouts, benchmarks). */
#ifndef TARSEEK_CLOCK_H
#define TARSEEK_CLOCK_H

#include <time.h>

static inline double mono_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

#endif
