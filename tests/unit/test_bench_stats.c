/* Unit tests of tarseek-bench's pieces that need no mount: MD5 against the RFC 1321 test
 * suite (and md5sum when it is there), the statistics, the random order and sample, and the
 * writers (text table with and without sizes, the summary ranked by median, CSV, JSON, SVG and
 * its choice of a log axis).  The JSON and SVG are checked by small parsers here and,
 * when python3 is installed, by Python's json and xml modules too. */
#include "testutil.h"

#include <errno.h>
#include <math.h>
#include <string.h>

#include "tools/bench/bench_report.h"
#include "tools/bench/bench_stats.h"
#include "tools/bench/md5.h"

#define NEAR(a, b) (fabs((double)(a) - (double)(b)) < 1e-9 * (1 + fabs((double)(b))))

/* ---- MD5 ---- */

static void test_md5(void)
{
	static const struct {
		const char *in, *hex;
	} rfc[] = {
	    {"", "d41d8cd98f00b204e9800998ecf8427e"},
	    {"a", "0cc175b9c0f1b6a831c399e269772661"},
	    {"abc", "900150983cd24fb0d6963f7d28e17f72"},
	    {"message digest", "f96b697d7cb7938d525a2f31aaf161d0"},
	    {"abcdefghijklmnopqrstuvwxyz", "c3fcd3d76192e4007dfb496cca67e13b"},
	    {"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789",
	     "d174ab98d277d9f5a5611c2c9f419d9f"},
	    {"1234567890123456789012345678901234567890123456789012345678901234567890123456789"
	     "0",
	     "57edf4a22be3c955ac49da2e2107b67a"},
	};
	uint8_t d[MD5_DIGEST_LEN], d2[MD5_DIGEST_LEN];
	char hex[MD5_HEX_LEN];

	for (size_t i = 0; i < sizeof(rfc) / sizeof(rfc[0]); i++) {
		bench_md5_buffer(rfc[i].in, strlen(rfc[i].in), d);
		bench_md5_hex(d, sizeof(d), hex);
		if (strcmp(hex, rfc[i].hex))
			fprintf(stderr, "RFC 1321 example %zu: got %s\n", i + 1, hex);
		CHECK(!strcmp(hex, rfc[i].hex));
	}

	/* Any split of the input gives the same digest: lengths around the 55/56/64-byte
	 * padding edges, fed in pieces of every size from 1 to 130. */
	size_t len = 300000;
	uint8_t *buf = malloc(len);

	tu_fill(buf, len, 7, 0);
	for (size_t total = 0; total < 200; total++) {
		bench_md5_buffer(buf, total, d);
		for (size_t piece = 1; piece <= 130; piece += 7) {
			struct bench_md5_ctx ctx;

			bench_md5_init(&ctx);
			for (size_t off = 0; off < total; off += piece)
				bench_md5_update(&ctx, buf + off,
						 total - off < piece ? total - off : piece);
			bench_md5_final(&ctx, d2);
			CHECK(!memcmp(d, d2, sizeof(d)));
		}
	}

	/* A larger buffer against the real md5sum. */
	if (tu_have("md5sum")) {
		size_t outlen;
		uint8_t *out = tu_pipe("md5sum", buf, len, &outlen);

		CHECK(out && outlen >= 32);
		if (out && outlen >= 32) {
			bench_md5_buffer(buf, len, d);
			bench_md5_hex(d, sizeof(d), hex);
			CHECK(!memcmp(out, hex, 32));
		}
		free(out);
	}
	free(buf);
}

/* ---- statistics ---- */

static void test_summary(void)
{
	const double x[] = {4, 2, 5, 4, 9, 4, 7, 5};
	struct bench_summary s;

	CHECK_EQ(bench_summarize(x, 8, &s), 0);
	CHECK_EQ(s.n, 8);
	CHECK(NEAR(s.mean, 5));
	CHECK(NEAR(s.sd, sqrt(32.0 / 7))); /* sample sd: squared deviations 32 over n - 1 */
	CHECK(NEAR(s.min, 2));
	CHECK(NEAR(s.max, 9));
	CHECK(NEAR(s.median, 4.5));

	CHECK_EQ(bench_summarize(x, 3, &s), 0); /* 4 2 5 */
	CHECK(NEAR(s.median, 4));
	CHECK(NEAR(s.mean, 11.0 / 3));

	CHECK_EQ(bench_summarize(x + 4, 1, &s), 0);
	CHECK(NEAR(s.mean, 9) && NEAR(s.median, 9) && NEAR(s.min, 9));
	CHECK(isnan(s.sd));

	CHECK_EQ(bench_summarize(NULL, 0, &s), 0);
	CHECK_EQ(s.n, 0);
	CHECK(isnan(s.mean) && isnan(s.sd) && isnan(s.min) && isnan(s.median) && isnan(s.max));

	/* Large offsets do not lose the spread (two-pass computation). */
	const double big[] = {1e9 + 1, 1e9 + 2, 1e9 + 3};

	CHECK_EQ(bench_summarize(big, 3, &s), 0);
	CHECK(NEAR(s.sd, 1));
}

static void test_rank(void)
{
	const double mean[] = {3, 1, 3, NAN, 2, 0.5};
	int rank[6];

	bench_rank(mean, 6, rank);
	CHECK_EQ(rank[0], 4);
	CHECK_EQ(rank[1], 2);
	CHECK_EQ(rank[2], 4);
	CHECK_EQ(rank[3], 0);
	CHECK_EQ(rank[4], 3);
	CHECK_EQ(rank[5], 1);

	CHECK(NEAR(bench_times(1.8, 0.9), 2));
	CHECK(isnan(bench_times(NAN, 1)));
	CHECK(isnan(bench_times(1, NAN)));
	CHECK(isnan(bench_times(1, 0)));
}

static void test_rng(void)
{
	struct bench_rng a, b;
	unsigned counts[10] = {0};
	int differ = 0;

	bench_rng_seed(&a, 42);
	bench_rng_seed(&b, 42);
	for (int i = 0; i < 1000; i++)
		CHECK(bench_rng_next(&a) == bench_rng_next(&b));
	bench_rng_seed(&b, 43);
	for (int i = 0; i < 10; i++)
		differ += bench_rng_next(&a) != bench_rng_next(&b);
	CHECK(differ >= 9);

	/* Roughly uniform: 100000 draws in 10 bins, each within 5% of 10000. */
	for (int i = 0; i < 100000; i++) {
		uint64_t v = bench_rng_below(&a, 10);

		CHECK(v < 10);
		if (v < 10)
			counts[v]++;
	}
	for (int i = 0; i < 10; i++)
		CHECK(counts[i] > 9500 && counts[i] < 10500);
	CHECK_EQ(bench_rng_below(&a, 1), 0);
}

static void test_schedule(void)
{
	struct bench_rng rng;
	size_t *order, *again;

	bench_rng_seed(&rng, 1);
	CHECK_EQ(bench_schedule(&rng, 0, 3, &order), -EINVAL);
	CHECK(order == NULL);
	CHECK_EQ(bench_schedule(&rng, 3, 0, &order), -EINVAL);

	for (size_t k = 1; k <= 7; k++) {
		for (size_t rounds = 1; rounds <= 12; rounds++) {
			bench_rng_seed(&rng, k * 100 + rounds);
			CHECK_EQ(bench_schedule(&rng, k, rounds, &order), 0);
			bench_rng_seed(&rng, k * 100 + rounds);
			CHECK_EQ(bench_schedule(&rng, k, rounds, &again), 0);
			CHECK(!memcmp(order, again, k * rounds * sizeof(*order)));
			for (size_t r = 0; r < rounds; r++) {
				size_t seen[8] = {0};

				/* Each round runs every configuration once. */
				for (size_t i = 0; i < k; i++) {
					CHECK(order[r * k + i] < k);
					if (order[r * k + i] < k)
						seen[order[r * k + i]]++;
				}
				for (size_t i = 0; i < k; i++)
					CHECK_EQ(seen[i], 1);
			}
			/* Never the same configuration twice in a row. */
			for (size_t i = 1; k > 1 && i < k * rounds; i++)
				CHECK(order[i] != order[i - 1]);
			free(order);
			free(again);
		}
	}

	/* The order is random: over many seeds, every configuration opens the first round. */
	size_t first[4] = {0};

	for (uint64_t seed = 0; seed < 400; seed++) {
		bench_rng_seed(&rng, seed);
		CHECK_EQ(bench_schedule(&rng, 4, 2, &order), 0);
		first[order[0]]++;
		free(order);
	}
	for (int i = 0; i < 4; i++)
		CHECK(first[i] > 60);
}

static void test_sample(void)
{
	struct bench_rng rng;
	size_t pick[100];
	int seen[100];

	bench_rng_seed(&rng, 5);
	CHECK_EQ(bench_sample(&rng, 100, 30, pick), 30);
	memset(seen, 0, sizeof(seen));
	for (int i = 0; i < 30; i++) {
		CHECK(pick[i] < 100);
		if (pick[i] < 100)
			CHECK_EQ(seen[pick[i]]++, 0);
	}
	/* More than there are: all of them, each once. */
	CHECK_EQ(bench_sample(&rng, 10, 50, pick), 10);
	memset(seen, 0, sizeof(seen));
	for (int i = 0; i < 10; i++)
		if (pick[i] < 10)
			seen[pick[i]]++;
	for (int i = 0; i < 10; i++)
		CHECK_EQ(seen[i], 1);
	CHECK_EQ(bench_sample(&rng, 0, 5, pick), 0);
}

/* ---- writers ---- */

/* Runs a writer into a memory buffer (NUL-terminated, caller frees). */
#define CAPTURE(out, call)                                                                         \
	do {                                                                                       \
		size_t _len;                                                                       \
		FILE *f = open_memstream(&(out), &_len);                                           \
		CHECK_EQ((call), 0);                                                               \
		fclose(f);                                                                         \
	} while (0)

/* A minimal JSON checker (RFC 8259 grammar, no semantic checks): returns the position after
 * one value, or NULL. */
static const char *json_ws(const char *p)
{
	while (*p == ' ' || *p == '\n' || *p == '\t' || *p == '\r')
		p++;
	return p;
}

static const char *json_value(const char *p, int depth);

static const char *json_string(const char *p)
{
	if (*p++ != '"')
		return NULL;
	while (*p != '"') {
		if ((unsigned char)*p < 0x20)
			return NULL;
		if (*p == '\\') {
			p++;
			if (*p == 'u') {
				for (int i = 1; i <= 4; i++)
					if (!strchr("0123456789abcdefABCDEF", p[i]) || !p[i])
						return NULL;
				p += 4;
			} else if (!*p || !strchr("\"\\/bfnrt", *p)) {
				return NULL;
			}
		}
		p++;
	}
	return p + 1;
}

static const char *json_value(const char *p, int depth)
{
	if (depth > 50)
		return NULL;
	p = json_ws(p);
	if (*p == '{' || *p == '[') {
		char close = *p == '{' ? '}' : ']';
		int object = *p == '{';

		p = json_ws(p + 1);
		if (*p == close)
			return p + 1;
		for (;;) {
			if (object) {
				p = json_string(json_ws(p));
				if (!p)
					return NULL;
				p = json_ws(p);
				if (*p++ != ':')
					return NULL;
			}
			p = json_value(p, depth + 1);
			if (!p)
				return NULL;
			p = json_ws(p);
			if (*p == close)
				return p + 1;
			if (*p++ != ',')
				return NULL;
		}
	}
	if (*p == '"')
		return json_string(p);
	if (!strncmp(p, "true", 4) || !strncmp(p, "null", 4))
		return p + 4;
	if (!strncmp(p, "false", 5))
		return p + 5;
	if (*p == '-' || (*p >= '0' && *p <= '9')) {
		char *end;

		if (!strncmp(p, "-nan", 4) || !strncmp(p, "nan", 3) || !strncmp(p, "inf", 3))
			return NULL;
		strtod(p, &end);
		return end > p ? end : NULL;
	}
	return NULL;
}

static int json_ok(const char *s)
{
	const char *end = json_value(s, 0);

	return end && !*json_ws(end);
}

/* A minimal XML well-formedness check: balanced tags, entities only for &amp; &lt; &gt;
 * &quot; &apos;, no control characters. */
static int xml_ok(const char *s)
{
	char stack[64][32];
	int depth = 0, root_seen = 0;

	for (const char *p = s; *p; p++) {
		if ((unsigned char)*p < 0x20 && *p != '\n' && *p != '\t' && *p != '\r')
			return 0;
		if (*p == '&') {
			static const char *const ent[] = {"&amp;", "&lt;", "&gt;", "&quot;",
							  "&apos;"};
			int ok = 0;

			for (int i = 0; i < 5; i++)
				ok |= !strncmp(p, ent[i], strlen(ent[i]));
			if (!ok)
				return 0;
			continue;
		}
		if (*p != '<')
			continue;
		if (p[1] == '?') {
			p = strstr(p, "?>");
			if (!p)
				return 0;
			p++;
			continue;
		}
		const char *end = strchr(p, '>');
		size_t n;

		if (!end)
			return 0;
		if (p[1] == '/') {
			n = strcspn(p + 2, " >");
			if (!depth || n >= 32 || strncmp(stack[depth - 1], p + 2, n) ||
			    stack[depth - 1][n])
				return 0;
			depth--;
		} else if (end[-1] != '/') {
			n = strcspn(p + 1, " >/\n");
			if (depth == 64 || n >= 32 || (!depth && root_seen))
				return 0;
			memcpy(stack[depth], p + 1, n);
			stack[depth++][n] = '\0';
			root_seen = 1;
		}
		p = end;
	}
	return depth == 0 && root_seen;
}

/* Runs python3 on the text to parse it as JSON or XML; 1 if it parsed, 0 if not, -1 if no
 * python3. */
static int python_parses(const char *what, const char *text)
{
	char cmd[200];
	size_t outlen;
	uint8_t *out;
	int ok;

	if (!tu_have("python3"))
		return -1;
	snprintf(cmd, sizeof(cmd), "python3 -c 'import sys, %s; %s; print(\"parsed\")'",
		 !strcmp(what, "json") ? "json" : "xml.dom.minidom",
		 !strcmp(what, "json") ? "json.load(sys.stdin)"
				       : "xml.dom.minidom.parseString(sys.stdin.buffer.read())");
	out = tu_pipe(cmd, text, strlen(text), &outlen);
	ok = out && outlen >= 6 && !memcmp(out, "parsed", 6);
	free(out);
	return ok;
}

static const double md5_a[] = {0.60, 0.62, 0.61, 0.63, 0.59};
static const double md5_b[] = {1.10, 1.07, 1.14, 1.09, 1.12};
static const double md5_c[] = {2.5};

static struct bench_result res_md5[] = {
    {.name = "extracted", .samples = md5_a, .nsamples = 5},
    {.name = "backup.tar.gz", .samples = md5_b, .nsamples = 5},
    {.name = "odd, \"name\"\n<&>\xff", .samples = md5_c, .nsamples = 1},
    {.name = "no data", .samples = NULL, .nsamples = 0},
};

static const double mount_b[] = {7.1, 7.3};

static struct bench_result res_mount[] = {
    {.name = "extracted", .samples = NULL, .nsamples = 0},
    {.name = "backup.tar.gz", .samples = mount_b, .nsamples = 2},
    {.name = "odd, \"name\"\n<&>\xff", .samples = NULL, .nsamples = 0},
    {.name = "no data", .samples = NULL, .nsamples = 0},
};

static struct bench_table tables[] = {
    {.id = "md5", .title = "md5 workload", .unit = "s", .precision = 3, .n = 4, .results = res_md5},
    {.id = "first_mount",
     .title = "first mount",
     .unit = "s",
     .precision = 3,
     .n = 4,
     .results = res_mount},
};

static void test_table(void)
{
	char *out = NULL;

	CHECK_EQ(bench_table_compute(&tables[0], 0), 0);
	CHECK(!strcmp(tables[0].baseline, "extracted"));
	CHECK_EQ(res_md5[0].rank, 1);
	CHECK_EQ(res_md5[1].rank, 2);
	CHECK_EQ(res_md5[2].rank, 3);
	CHECK_EQ(res_md5[3].rank, 0);
	CHECK(NEAR(res_md5[0].times_baseline, 1));
	CHECK(NEAR(res_md5[1].times_baseline, 1.104 / 0.61));
	CHECK(isnan(res_md5[3].times_baseline));
	/* The baseline asked for has no mount time: the first row with one stands in. */
	CHECK_EQ(bench_table_compute(&tables[1], 0), 0);
	CHECK(!strcmp(tables[1].baseline, "backup.tar.gz"));
	CHECK(NEAR(res_mount[1].times_baseline, 1));
	/* An explicit baseline with data is used. */
	CHECK_EQ(bench_table_compute(&tables[0], 1), 0);
	CHECK(!strcmp(tables[0].baseline, "backup.tar.gz"));
	CHECK(NEAR(res_md5[0].times_baseline, 0.61 / 1.104));
	CHECK_EQ(bench_table_compute(&tables[0], 0), 0);

	CAPTURE(out, bench_report_table_text(f, &tables[0]));
	const char *expect =
	    "md5 workload (s; baseline extracted)\n"
	    "------------------------------------\n"
	    "\n"
	    " name             | rank | runs |  mean |    sd |   min | median | timesBaseline\n"
	    "------------------|------|------|-------|-------|-------|--------|--------------\n"
	    " extracted        |    1 |    5 | 0.610 | 0.016 | 0.590 |  0.610 |          1.00\n"
	    " backup.tar.gz    |    2 |    5 | 1.104 | 0.027 | 1.070 |  1.100 |          1.81\n"
	    " odd, \"name\"?<&>\xff |    3 |    1 | 2.500 |   n/a | 2.500 |  2.500 |          "
	    "4.10\n"
	    "\n";
	if (strcmp(out, expect))
		fprintf(stderr, "table:\n%s\nexpected:\n%s\n", out, expect);
	CHECK(!strcmp(out, expect));
	free(out);

	/* With sizes: two more columns, the size as format_size() prints it, the ratio with
	 * three decimals or blank. */
	res_md5[0].size = 4000, res_md5[0].size_ratio = 0.8;
	res_md5[1].size = 1500, res_md5[1].size_ratio = 0.3;
	res_md5[2].size = NAN, res_md5[2].size_ratio = NAN;
	tables[0].sizes = 1;
	CAPTURE(out, bench_report_table_text(f, &tables[0]));
	expect =
	    "md5 workload (s; baseline extracted)\n"
	    "------------------------------------\n"
	    "\n"
	    " name             | rank | runs |  mean |    sd |   min | median | timesBaseline |"
	    "    size | sizeRatio\n"
	    "------------------|------|------|-------|-------|-------|--------|---------------|"
	    "---------|----------\n"
	    " extracted        |    1 |    5 | 0.610 | 0.016 | 0.590 |  0.610 |          1.00 |"
	    " 4.00 KB |     0.800\n"
	    " backup.tar.gz    |    2 |    5 | 1.104 | 0.027 | 1.070 |  1.100 |          1.81 |"
	    " 1.50 KB |     0.300\n"
	    " odd, \"name\"?<&>\xff |    3 |    1 | 2.500 |   n/a | 2.500 |  2.500 |          "
	    "4.10 |     n/a |          \n"
	    "\n";
	if (strcmp(out, expect))
		fprintf(stderr, "table:\n%s\nexpected:\n%s\n", out, expect);
	CHECK(!strcmp(out, expect));
	free(out);

	/* A table without data prints nothing. */
	struct bench_result none[] = {{.name = "x"}};
	struct bench_table empty = {.id = "e", .title = "e", .unit = "s", .n = 1, .results = none};

	CHECK_EQ(bench_table_compute(&empty, 0), 0);
	CHECK(empty.baseline == NULL);
	CAPTURE(out, bench_report_table_text(f, &empty));
	CHECK_EQ(strlen(out), 0);
	free(out);
}

static const size_t orders_gz[] = {2, 0, 1, 1, 2, 0};

static const struct bench_config_info configs[] = {
    {"extracted", "directory", "/x/tree", NULL, 4000, 0.8, NULL, 0},
    {"backup.tar.gz", "tarseek", "/x/backup.tar.gz", NULL, 1500, 0.3, orders_gz, 2},
    {"odd, \"name\"\n<&>\xff", "command", "/x/odd", "mount --bind {archive} {mnt}", NAN, NAN, NULL,
     0},
    {"no data", "tarseek", "/x/none.tar", NULL, 5000, 1, NULL, 0},
};

static const char *const files[] = {"a/one", "b two", "c\nthree"};

static const struct bench_check checks[] = {
    {"b two", "extracted", "d41d8cd98f00b204e9800998ecf8427e", NULL},
    {"b two", "backup.tar.gz", "0cc175b9c0f1b6a831c399e269772661", NULL},
    {"b two", "odd, \"name\"\n<&>\xff", "d41d8cd98f00b204e9800998ecf8427e", NULL},
    {"b two", "no data", NULL, "Input/output error"},
    {"c\nthree", "extracted", "900150983cd24fb0d6963f7d28e17f72", NULL},
    {"c\nthree", "backup.tar.gz", NULL, "No such file or directory"},
    {"c\nthree", "odd, \"name\"\n<&>\xff", "900150983cd24fb0d6963f7d28e17f72", NULL},
    {"c\nthree", "no data", "900150983cd24fb0d6963f7d28e17f72", NULL},
};

static struct bench_report report = {
    .plain_size = 5000,
    .plain_from = "no data",
    .version = "0.1.0",
    .when = "today",
    .seed = 12345678901234ULL,
    .cold = 1,
    .runs = 5,
    .list = "files.list",
    .nfiles = 3,
    .files = files,
    .nconfigs = 4,
    .configs = configs,
    .baseline = "extracted",
    .ntables = 2,
    .tables = tables,
    .nchecks = 8,
    .checks = checks,
    .nbad = 2,
};

static void test_text_report(void)
{
	char *out = NULL;

	CAPTURE(out, bench_report_text(f, &report, 20));
	CHECK(strstr(out, "seed:      12345678901234\n") != NULL);
	CHECK(strstr(out, "cold (page cache dropped") != NULL);
	CHECK(strstr(out, "md5 workload (s; baseline extracted)") != NULL);
	CHECK(strstr(out, "first mount (s; baseline backup.tar.gz)") != NULL);
	CHECK(strstr(out, "md5 check FAILED: 2 of 3 files") != NULL);
	/* Digests grouped by value, read errors on their own lines, paths escaped. */
	CHECK(strstr(out, "  b two\n    extracted, odd, \"name\"?<&>\xff: "
			  "d41d8cd98f00b204e9800998ecf8427e\n"
			  "    backup.tar.gz: 0cc175b9c0f1b6a831c399e269772661\n"
			  "    no data: read error: Input/output error\n") != NULL);
	CHECK(strstr(out, "  c\\nthree\n") != NULL);
	CHECK(strstr(out, "    backup.tar.gz: read error: No such file or directory\n") != NULL);
	CHECK(strstr(out, "random, non-consecutive order (seed 12345678901234)") != NULL);
	free(out);

	/* Only the first max_bad files are listed. */
	CAPTURE(out, bench_report_text(f, &report, 1));
	CHECK(strstr(out, "c\\nthree") == NULL);
	CHECK(strstr(out, "... and 1 more") != NULL);
	free(out);

	/* All good. */
	struct bench_report ok = report;

	ok.nchecks = ok.nbad = 0;
	CAPTURE(out, bench_report_text(f, &ok, 20));
	CHECK(strstr(out, "md5 check: all 4 configurations agree on all 3 files.") != NULL);
	free(out);
	ok.nconfigs = 1;
	CAPTURE(out, bench_report_text(f, &ok, 20));
	CHECK(strstr(out, "md5 check: all 3 files read the same in every run (one configuration") !=
	      NULL);
	free(out);

	CAPTURE(out, (bench_put_escaped(f, "a\\b\nc\td\001"), 0));
	CHECK(!strcmp(out, "a\\\\b\\nc\\td\\001"));
	free(out);
}

static void test_csv(void)
{
	char *out = NULL;

	CAPTURE(out, bench_report_csv(f, &report));
	static const char header[] = "metric,unit,name,rank,runs,mean,sd,min,median,max,"
				     "times_baseline,baseline,size,size_ratio\n";

	CHECK(!strncmp(out, header, sizeof(header) - 1));
	CHECK(strstr(out, "\nmd5,s,extracted,1,5,0.61,0.0158113883,0.59,0.61,0.63,1,extracted,"
			  "4000,0.8\n"));
	CHECK(strstr(out, "\nmd5,s,backup.tar.gz,2,5,") && strstr(out, ",extracted,1500,0.3\n"));
	/* a table without sizes leaves the fields empty */
	CHECK(strstr(out, ",backup.tar.gz,,\n") != NULL);
	/* Quoted name (comma, quote, newline), an empty sd for one run. */
	CHECK(strstr(out, "\nmd5,s,\"odd, \"\"name\"\"\n<&>\xff\",3,1,2.5,,2.5,2.5,2.5,"));
	CHECK(strstr(out, "\nfirst_mount,s,backup.tar.gz,1,2,7.2,") != NULL);
	CHECK(strstr(out, "no data") == NULL); /* rows without data are left out */
	/* 1 header + 3 md5 rows + 1 mount row */
	int lines = 0;

	for (const char *p = out; *p; p++)
		lines += *p == '\n';
	CHECK_EQ(lines, 6); /* the quoted name holds one more line break */
	free(out);
}

static void test_json(void)
{
	char *out = NULL;
	int py;

	CAPTURE(out, bench_report_json(f, &report));
	CHECK(json_ok(out));
	CHECK(strstr(out, "\"seed\": 12345678901234") != NULL);
	CHECK(strstr(out, "\"cold\": true") != NULL);
	CHECK(strstr(out, "\"name\": \"odd, \\\"name\\\"\\n<&>\\ufffd\"") != NULL);
	CHECK(strstr(out, "\"sd\": null") != NULL);
	CHECK(strstr(out, "\"samples\": [0.6, 0.62, 0.61, 0.63, 0.59]") != NULL);
	CHECK(strstr(out, "\"check\": {\"files\": 3, \"bad\": 2, \"ok\": false") != NULL);
	CHECK(strstr(out, "{\"configuration\": \"no data\", \"digest\": null, \"error\": "
			  "\"Input/output error\"}") != NULL);
	CHECK(strstr(out, "\"c\\nthree\"") != NULL);
	CHECK(strstr(out, "nan") == NULL);
	/* sizes, per configuration and per result; the orders read; the summary */
	CHECK(strstr(out, "\"source\": \"/x/backup.tar.gz\", \"command\": null, \"size\": 1500, "
			  "\"size_ratio\": 0.3, \"read_orders\": [[2, 0, 1], [1, 2, 0]]}") != NULL);
	CHECK(strstr(out, "\"read_orders\": null") != NULL);
	CHECK(strstr(out, "\"times_baseline\": 1, \"size\": 4000, \"size_ratio\": 0.8, "
			  "\"samples\"") != NULL);
	CHECK(strstr(out, "\"plain_size\": 5000,\n  \"plain_from\": \"no data\"") != NULL);
	CHECK(strstr(out, "\"summary\": [\n    {\"name\": \"extracted\", \"rank\": 1, \"median\": "
			  "0.61, \"times_fastest\": 1, \"size\": 4000") != NULL);
	py = python_parses("json", out);
	CHECK(py != 0);
	free(out);

	/* The checker itself rejects broken JSON. */
	CHECK(!json_ok("{\"a\": nan}"));
	CHECK(!json_ok("{\"a\": 1,}"));
	CHECK(!json_ok("[\"a\n\"]"));
	CHECK(json_ok("{\"a\": [1, -2.5e3, null, true, \"\\u00e9\"]}"));
}

static void test_svg(void)
{
	char *out = NULL;

	CAPTURE(out, bench_report_svg(f, &tables[0], "5 runs & <more>"));
	CHECK(xml_ok(out));
	CHECK(python_parses("xml", out) != 0);
	CHECK(strstr(out, "<svg xmlns=\"http://www.w3.org/2000/svg\"") != NULL);
	CHECK(strstr(out, "5 runs &amp; &lt;more&gt;") != NULL);
	CHECK(strstr(out, "odd, &quot;name&quot;\n&lt;&amp;&gt;\xef\xbf\xbd") != NULL);
	/* One bar per configuration with data, one error bar where there is an sd. */
	int bars = 0, whiskers = 0;

	for (const char *p = out; (p = strstr(p, "<rect x=")); p++)
		bars++;
	for (const char *p = out; (p = strstr(p, "<path d=")); p++)
		whiskers++;
	CHECK_EQ(bars, 3);
	CHECK_EQ(whiskers, 2);
	CHECK(strstr(out, "(baseline)") != NULL);
	CHECK(strstr(out, ">n/a</text>") != NULL);
	CHECK(strstr(out, "md5 workload (s)") != NULL); /* the axis label */
	free(out);

	CHECK(!xml_ok("<svg><g></svg>"));
	CHECK(!xml_ok("<svg>a & b</svg>"));
}

/* The summary ranks by median, not mean, and carries sizes and the I/O tables' medians. */
static void test_summary_table(void)
{
	static const double skewed[] = {1, 1, 10}, steady[] = {2, 2, 2}, slow[] = {3, 3, 4};
	static const double mib_a[] = {1, 1, 1}, mib_b[] = {2, 2, 2}, calls_a[] = {10, 12, 14};
	struct bench_result md5[] = {
	    {.name = "steady.tar",
	     .samples = steady,
	     .nsamples = 3,
	     .size = 3000000,
	     .size_ratio = 1},
	    {.name = "skewed.tar.xz",
	     .samples = skewed,
	     .nsamples = 3,
	     .size = 400000,
	     .size_ratio = 400000 / 3e6},
	    {.name = "slow", .samples = slow, .nsamples = 3, .size = NAN, .size_ratio = NAN},
	    {.name = "none", .nsamples = 0},
	};
	struct bench_result io_bytes[] = {
	    {.name = "steady.tar", .samples = mib_a, .nsamples = 3},
	    {.name = "skewed.tar.xz", .samples = mib_b, .nsamples = 3},
	    {.name = "slow"},
	    {.name = "none"},
	};
	struct bench_result io_calls[] = {
	    {.name = "steady.tar", .samples = calls_a, .nsamples = 3},
	    {.name = "skewed.tar.xz"},
	    {.name = "slow"},
	    {.name = "none"},
	};
	struct bench_table t[] = {
	    {.id = "md5",
	     .title = "md5",
	     .unit = "s",
	     .precision = 3,
	     .sizes = 1,
	     .n = 4,
	     .results = md5},
	    {.id = BENCH_ID_IO_BYTES,
	     .title = "b",
	     .unit = "MiB",
	     .precision = 2,
	     .sizes = 1,
	     .n = 4,
	     .results = io_bytes},
	    {.id = BENCH_ID_IO_CALLS,
	     .title = "c",
	     .unit = "calls",
	     .sizes = 1,
	     .n = 4,
	     .results = io_calls},
	};
	struct bench_report r = {.nconfigs = 0,
				 .ntables = 3,
				 .tables = t,
				 .plain_size = 3e6,
				 .plain_from = "steady.tar"};
	char *out = NULL;

	for (int i = 0; i < 3; i++)
		CHECK_EQ(bench_table_compute(&t[i], 0), 0);
	/* by mean, steady (2) beats skewed (4); by median skewed (1) is first */
	CHECK_EQ(md5[0].rank, 1);
	CAPTURE(out, bench_report_summary_text(f, &r));
	if (!strstr(out, "|   3.00 MB |     1.000 |    1.05 MB |         12 |"))
		fprintf(stderr, "summary:\n%s\n", out);
	const char *a = strstr(out, " skewed.tar.xz |    1 |  1.000 |         1.00 |");
	const char *b = strstr(out, " steady.tar    |    2 |  2.000 |         2.00 |");
	const char *c = strstr(out, " slow          |    3 |  3.000 |         3.00 |");

	CHECK(a && b && c && a < b && b < c);
	CHECK(strstr(out, "summary: md5 workload by median time (s), fastest first\n") == out);
	CHECK(strstr(out, "| 400.00 KB |     0.133 |    2.10 MB |") != NULL);
	CHECK(strstr(out, "|   3.00 MB |     1.000 |    1.05 MB |         12 |") != NULL);
	CHECK(strstr(out, "|       n/a |           |            |            |           \n") !=
	      NULL);
	CHECK(strstr(out, "none") == NULL);
	CHECK(strstr(out, "sizeRatio: size / the size of steady.tar (3000000 bytes, the plain "
			  "tar).") != NULL);
	free(out);

	/* No md5 table: nothing. */
	r.tables = t + 1;
	r.ntables = 2;
	CAPTURE(out, bench_report_summary_text(f, &r));
	CHECK_EQ(strlen(out), 0);
	free(out);
}

/* The chart's value axis: log past a 20x spread of the bars, linear otherwise. */
static void test_log_scale(void)
{
	static const double fast[] = {0.1, 0.1}, mid[] = {1.9, 2.1}, slow[] = {2.5, 2.7},
			    zero[] = {0, 0};
	struct bench_result r[] = {
	    {.name = "fast", .samples = fast, .nsamples = 2},
	    {.name = "mid", .samples = mid, .nsamples = 2},
	    {.name = "slow", .samples = slow, .nsamples = 2},
	    {.name = "none"},
	};
	struct bench_table t = {.id = "md5",
				.title = "md5 workload",
				.unit = "s",
				.precision = 3,
				.n = 4,
				.results = r};
	char *out = NULL;

	CHECK_EQ(bench_table_compute(&t, 0), 0);
	CHECK_EQ(bench_svg_log_scale(&t), 1); /* 2.6 / 0.1 = 26 */
	CAPTURE(out, bench_report_svg(f, &t, "sub"));
	CHECK(xml_ok(out));
	CHECK(strstr(out, "md5 workload (s, log scale)</text>") != NULL);
	/* ticks at decades and 2, 5 between: 0.1 0.2 0.5 1 2 5 10 */
	CHECK(strstr(out, ">0.1</text>") && strstr(out, ">0.2</text>") &&
	      strstr(out, ">1</text>") && strstr(out, ">10</text>"));
	CHECK(strstr(out, ">0</text>") == NULL);
	free(out);

	/* 2.6 / 0.2 = 13: linear */
	static const double fast2[] = {0.2, 0.2};

	r[0].samples = fast2;
	CHECK_EQ(bench_table_compute(&t, 0), 0);
	CHECK_EQ(bench_svg_log_scale(&t), 0);
	CAPTURE(out, bench_report_svg(f, &t, "sub"));
	CHECK(strstr(out, "md5 workload (s)</text>") != NULL);
	CHECK(strstr(out, "log scale") == NULL);
	CHECK(strstr(out, ">0</text>") != NULL);
	free(out);

	/* exactly 20x is not more than 20x; a zero bar keeps the axis linear */
	static const double twenty[] = {4, 4};

	r[0].samples = fast2;
	r[2].samples = twenty;
	CHECK_EQ(bench_table_compute(&t, 0), 0);
	CHECK_EQ(bench_svg_log_scale(&t), 0);
	r[0].samples = zero;
	r[2].samples = slow;
	CHECK_EQ(bench_table_compute(&t, 0), 0);
	CHECK_EQ(bench_svg_log_scale(&t), 0);
	/* one bar only: nothing to span */
	struct bench_table one = {.id = "x", .title = "x", .unit = "s", .n = 1, .results = r + 1};

	CHECK_EQ(bench_table_compute(&one, 0), 0);
	CHECK_EQ(bench_svg_log_scale(&one), 0);
}

int main(void)
{
	test_md5();
	test_summary();
	test_rank();
	test_rng();
	test_schedule();
	test_sample();
	test_table();
	test_text_report();
	test_csv();
	test_json();
	test_svg();
	test_summary_table();
	test_log_scale();
	return tu_exit();
}
