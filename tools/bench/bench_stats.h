/* Statistics and run order for tarseek-bench.
 *
 * A summary describes the samples of one configuration in one metric (mean, sample standard
 * deviation, min, median, max); ranks order configurations by mean; the random generator is
 * seeded by the user and fully specified here (xoshiro256** seeded by splitmix64), so a seed
 * printed in a report gives the same run order and the same sample on any machine.
 *
 * Missing values are NaN: the summary of no samples is all NaN, the sd of one sample is NaN.
 * Nothing here allocates except bench_summarize() (a sorted copy for the median) and
 * bench_schedule() (the order it returns, which the caller frees).
 */
#ifndef TARSEEK_BENCH_STATS_H
#define TARSEEK_BENCH_STATS_H

#include <stddef.h>
#include <stdint.h>

struct bench_summary {
	size_t n;
	double mean;
	double sd; /* sample standard deviation (n - 1); NaN if n < 2 */
	double min;
	double median; /* mean of the two middle samples when n is even */
	double max;
};

/* Summarizes x[0..n).  Returns 0, or -ENOMEM (then *s is all NaN).  n == 0 is not an error:
 * all fields but n are NaN.  NaN samples are not allowed (the caller leaves them out). */
int bench_summarize(const double *x, size_t n, struct bench_summary *s);

/* Competition ranking by mean, smallest first ("1, 2, 2, 4"): rank[i] for mean[i].
 * A NaN mean (no data) gets rank 0 and does not take a place. */
void bench_rank(const double *mean, size_t k, int *rank);

/* Ratio mean / baseline, NaN if either is NaN or the baseline is 0. */
double bench_times(double mean, double baseline);

struct bench_rng {
	uint64_t s[4];
};

void bench_rng_seed(struct bench_rng *rng, uint64_t seed);
uint64_t bench_rng_next(struct bench_rng *rng);
/* Uniform in [0, n) without modulo bias; n must be > 0. */
uint64_t bench_rng_below(struct bench_rng *rng, uint64_t n);
/* Fisher-Yates shuffle of v[0..n). */
void bench_shuffle(struct bench_rng *rng, size_t *v, size_t n);

/* The run order: `rounds` rounds, each a random permutation of the k configurations, so each
 * configuration runs once per round (slow drifts of the machine hit all alike) and never twice
 * in a row when k >= 2 (a round that would start with the previous round's last configuration
 * swaps it with another place).  *order gets k * rounds configuration numbers (malloc'd, the
 * caller frees it).  Returns 0, -EINVAL (k or rounds is 0) or -ENOMEM; *order is NULL on error. */
int bench_schedule(struct bench_rng *rng, size_t k, size_t rounds, size_t **order);

/* Picks min(m, n) distinct indices of [0, n) in random order into pick[] (room for min(m, n)).
 * Returns the number picked, or -ENOMEM. */
long bench_sample(struct bench_rng *rng, size_t n, size_t m, size_t *pick);

#endif
