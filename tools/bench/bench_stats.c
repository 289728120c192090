/* Statistics and run order for tarseek-bench (see bench_stats.h).
 *
 * The sample sizes are small (a handful of runs per configuration), so the summary is the
 * plain two-pass computation on the stored samples: the mean first, then the squared
 * deviations from it, which is exact enough and simpler to trust than running sums.  The
 * median sorts a copy.
 *
 * The run order follows the `benchmark` Python library's idea (each configuration many times,
 * in random, non-consecutive order) but draws it round by round rather than shuffling the
 * whole queue: a whole-queue shuffle can put all runs of one configuration at the start, where
 * a machine that is still warming up or busy with something else would favour or punish it.
 */
#include "tools/bench/bench_stats.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

static void summary_clear(struct bench_summary *s, size_t n)
{
	s->n = n;
	s->mean = s->sd = s->min = s->median = s->max = NAN;
}

int bench_summarize(const double *x, size_t n, struct bench_summary *s)
{
	double sum = 0, dev = 0, *sorted;

	summary_clear(s, n);
	if (!n)
		return 0;
	sorted = malloc(n * sizeof(*sorted));
	if (!sorted)
		return -ENOMEM;
	memcpy(sorted, x, n * sizeof(*sorted));
	qsort(sorted, n, sizeof(*sorted), cmp_double);

	for (size_t i = 0; i < n; i++)
		sum += x[i];
	s->mean = sum / (double)n;
	if (n > 1) {
		for (size_t i = 0; i < n; i++)
			dev += (x[i] - s->mean) * (x[i] - s->mean);
		s->sd = sqrt(dev / (double)(n - 1));
	}
	s->min = sorted[0];
	s->max = sorted[n - 1];
	s->median = n % 2 ? sorted[n / 2] : (sorted[n / 2 - 1] + sorted[n / 2]) / 2;
	free(sorted);
	return 0;
}

void bench_rank(const double *mean, size_t k, int *rank)
{
	for (size_t i = 0; i < k; i++) {
		rank[i] = 0;
		if (isnan(mean[i]))
			continue;
		rank[i] = 1;
		for (size_t j = 0; j < k; j++)
			if (!isnan(mean[j]) && mean[j] < mean[i])
				rank[i]++;
	}
}

double bench_times(double mean, double baseline)
{
	if (isnan(mean) || isnan(baseline) || baseline == 0)
		return NAN;
	return mean / baseline;
}

static uint64_t splitmix64(uint64_t *x)
{
	uint64_t z = (*x += 0x9e3779b97f4a7c15ULL);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

void bench_rng_seed(struct bench_rng *rng, uint64_t seed)
{
	for (int i = 0; i < 4; i++)
		rng->s[i] = splitmix64(&seed);
}

static uint64_t rotl64(uint64_t x, int k)
{
	return (x << k) | (x >> (64 - k));
}

uint64_t bench_rng_next(struct bench_rng *rng)
{
	uint64_t *s = rng->s;
	uint64_t result = rotl64(s[1] * 5, 7) * 9;
	uint64_t t = s[1] << 17;

	s[2] ^= s[0];
	s[3] ^= s[1];
	s[1] ^= s[2];
	s[0] ^= s[3];
	s[2] ^= t;
	s[3] = rotl64(s[3], 45);
	return result;
}

uint64_t bench_rng_below(struct bench_rng *rng, uint64_t n)
{
	/* Reject the top partial copy of [0, n) so every value is equally likely. */
	uint64_t limit = UINT64_MAX - UINT64_MAX % n, r;

	do
		r = bench_rng_next(rng);
	while (r >= limit);
	return r % n;
}

void bench_shuffle(struct bench_rng *rng, size_t *v, size_t n)
{
	for (size_t i = n; i > 1; i--) {
		size_t j = (size_t)bench_rng_below(rng, i), t = v[i - 1];

		v[i - 1] = v[j];
		v[j] = t;
	}
}

int bench_schedule(struct bench_rng *rng, size_t k, size_t rounds, size_t **order)
{
	size_t *o;

	*order = NULL;
	if (!k || !rounds)
		return -EINVAL;
	o = malloc(k * rounds * sizeof(*o));
	if (!o)
		return -ENOMEM;
	for (size_t r = 0; r < rounds; r++) {
		size_t *round = o + r * k;

		for (size_t i = 0; i < k; i++)
			round[i] = i;
		bench_shuffle(rng, round, k);
		if (r && k > 1 && round[0] == round[-1]) {
			size_t j = 1 + (size_t)bench_rng_below(rng, k - 1), t = round[0];

			round[0] = round[j];
			round[j] = t;
		}
	}
	*order = o;
	return 0;
}

long bench_sample(struct bench_rng *rng, size_t n, size_t m, size_t *pick)
{
	size_t *idx;

	if (m > n)
		m = n;
	idx = malloc((n ? n : 1) * sizeof(*idx));
	if (!idx)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++)
		idx[i] = i;
	/* The first m steps of a Fisher-Yates shuffle from the front. */
	for (size_t i = 0; i < m; i++) {
		size_t j = i + (size_t)bench_rng_below(rng, n - i), t = idx[i];

		idx[i] = idx[j];
		idx[j] = t;
		pick[i] = idx[i];
	}
	free(idx);
	return (long)m;
}
