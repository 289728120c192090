/* The SVG bar chart of one tarseek-bench table (see bench_report.h): meant to be read at a
 * glance -- one bar per configuration (its mean) with sd whiskers, the value and the times the
 * baseline beside it, an axis in round steps, logarithmic when the bars span more than
 * SVG_LOG_SPAN.  Names are escaped for XML with invalid UTF-8 replaced (bench_xml_str), so
 * the file always parses.
 */
#include "tools/bench/bench_report_int.h"

#include <math.h>
#include <string.h>

/* A round tick step (1, 2 or 5 times a power of ten) giving about five ticks up to max. */
static double nice_step(double max)
{
	double raw = max / 5, mag = pow(10, floor(log10(raw))), r = raw / mag;

	if (r <= 1)
		return mag;
	if (r <= 2)
		return 2 * mag;
	if (r <= 5)
		return 5 * mag;
	return 10 * mag;
}

#define SVG_W 860
#define SVG_FONT "font-family=\"DejaVu Sans, Verdana, Arial, sans-serif\""
#define SVG_MAXLABEL 40
#define SVG_ROW 30
#define SVG_BAR 18
#define SVG_TOP 90
#define SVG_LOG_SPAN 20 /* a larger max/min of the bars switches to a log axis */

int bench_svg_log_scale(const struct bench_table *t)
{
	double lo = INFINITY, hi = 0;

	for (size_t i = 0; i < t->n; i++) {
		double m = t->results[i].s.mean;

		if (!t->results[i].nsamples)
			continue;
		if (!(m > 0))
			return 0; /* a zero bar has no place on a log axis */
		if (m < lo)
			lo = m;
		if (m > hi)
			hi = m;
	}
	return hi > 0 && hi / lo > SVG_LOG_SPAN;
}

/* The value axis: linear from 0 to max in round steps, or logarithmic over whole decades
 * [lo, hi) with ticks at 1, 2 and 5 per decade (only the powers of ten past 3 decades). */
struct axis {
	int log;
	double lo, hi, step;
	double x0, x1; /* pixels */
};

static double axis_x(const struct axis *a, double v)
{
	if (!a->log)
		return a->x0 + (a->x1 - a->x0) * v / a->hi;
	if (v < a->lo)
		v = a->lo;
	return a->x0 + (a->x1 - a->x0) * (log10(v) - log10(a->lo)) / (log10(a->hi) - log10(a->lo));
}

static void axis_make(struct axis *a, const struct bench_table *t, double top)
{
	double bottom = INFINITY;

	a->log = bench_svg_log_scale(t);
	if (!a->log) {
		a->lo = 0;
		a->step = nice_step(top);
		a->hi = ceil(top / a->step - 1e-9) * a->step;
		return;
	}
	for (size_t i = 0; i < t->n; i++)
		if (t->results[i].nsamples && t->results[i].s.mean < bottom)
			bottom = t->results[i].s.mean;
	a->lo = pow(10, floor(log10(bottom) + 1e-9));
	a->hi = pow(10, ceil(log10(top) - 1e-9));
	if (a->hi <= a->lo)
		a->hi = a->lo * 10;
}

/* Grid lines and their labels under the bars. */
static void axis_ticks(FILE *f, const struct axis *a, double axis_y)
{
	static const double linear_ticks[] = {1}, log_ticks[] = {1, 2, 5};
	const double *mult = a->log ? log_ticks : linear_ticks;
	size_t nmult = a->log && log10(a->hi / a->lo) <= 3.5 ? 3 : 1;

	if (!a->log) {
		for (double v = 0; v <= a->hi + a->step / 2; v += a->step) {
			fprintf(f,
				"<line x1=\"%.1f\" y1=\"%d\" x2=\"%.1f\" y2=\"%.1f\" "
				"stroke=\"#ddd\"/>\n",
				axis_x(a, v), SVG_TOP - 6, axis_x(a, v), axis_y);
			fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">%g</text>\n",
				axis_x(a, v), axis_y + 18, v);
		}
		return;
	}
	for (double dec = a->lo; dec <= a->hi * 1.0001; dec *= 10) {
		for (size_t k = 0; k < nmult; k++) {
			double v = dec * mult[k];

			if (v > a->hi * 1.0001)
				break;
			fprintf(f,
				"<line x1=\"%.1f\" y1=\"%d\" x2=\"%.1f\" y2=\"%.1f\" "
				"stroke=\"%s\"/>\n",
				axis_x(a, v), SVG_TOP - 6, axis_x(a, v), axis_y,
				k ? "#eee" : "#ccc");
			fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">%g</text>\n",
				axis_x(a, v), axis_y + 18, v);
		}
	}
}

int bench_report_svg(FILE *f, const struct bench_table *t, const char *subtitle)
{
	double top = 0;
	size_t label_chars = 4, rows = t->n ? t->n : 1;
	int precision = t->precision;
	double axis_y, height, x0, x1;
	struct axis ax;

	for (size_t i = 0; i < t->n; i++) {
		const struct bench_result *r = &t->results[i];
		double end = r->s.mean + (isnan(r->s.sd) ? 0 : r->s.sd);
		size_t w = bench_display_width(r->name);

		if (r->nsamples && end > top)
			top = end;
		if (r->nsamples && r->s.max > top)
			top = r->s.max;
		if (w > label_chars)
			label_chars = w;
	}
	if (label_chars > SVG_MAXLABEL + 1)
		label_chars = SVG_MAXLABEL + 1;
	if (!(top > 0))
		top = 1;
	axis_make(&ax, t, top);
	/* 7.5 px per character is generous for a 13 px sans-serif font. */
	x0 = ax.x0 = 20 + 7.5 * (double)label_chars;
	x1 = ax.x1 = SVG_W - 190;
	axis_y = SVG_TOP + (double)rows * SVG_ROW;
	height = axis_y + 64;

#define X(v) axis_x(&ax, (v))

	fprintf(f,
		"<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
		"<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%.0f\" "
		"viewBox=\"0 0 %d %.0f\" " SVG_FONT " font-size=\"13\">\n",
		SVG_W, height, SVG_W, height);
	fputs("<title>", f);
	bench_xml_str(f, t->title, (size_t)-1);
	fputs("</title>\n", f);
	fprintf(f, "<rect width=\"%d\" height=\"%.0f\" fill=\"white\"/>\n", SVG_W, height);
	fputs("<text x=\"20\" y=\"28\" font-size=\"17\" font-weight=\"bold\">", f);
	bench_xml_str(f, t->title, (size_t)-1);
	fputs("</text>\n", f);
	fputs("<text x=\"20\" y=\"50\" fill=\"#444\">", f);
	if (subtitle)
		bench_xml_str(f, subtitle, (size_t)-1);
	fputs("</text>\n<text x=\"20\" y=\"68\" fill=\"#444\">bars: mean; whiskers: \xc2\xb1 one "
	      "standard deviation",
	      f);
	if (t->baseline) {
		fputs("; (n\xc3\x97): times the baseline, ", f);
		bench_xml_str(f, t->baseline, SVG_MAXLABEL);
	}
	fputs("</text>\n", f);

	/* Grid and tick labels. */
	axis_ticks(f, &ax, axis_y);
	fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#333\"/>\n", x0,
		axis_y, x1, axis_y);
	fprintf(f, "<line x1=\"%.1f\" y1=\"%d\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#333\"/>\n", x0,
		SVG_TOP - 6, x0, axis_y);
	fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">", (x0 + x1) / 2,
		axis_y + 42);
	bench_xml_str(f, t->title, (size_t)-1);
	fputs(" (", f);
	bench_xml_str(f, t->unit, (size_t)-1);
	fputs(ax.log ? ", log scale)</text>\n" : ")</text>\n", f);

	for (size_t i = 0; i < t->n; i++) {
		const struct bench_result *r = &t->results[i];
		double y = SVG_TOP + (double)i * SVG_ROW, cy = y + SVG_BAR / 2.0;
		int is_base = t->baseline && !strcmp(r->name, t->baseline);

		fputs("<g>\n<title>", f);
		bench_xml_str(f, r->name, (size_t)-1);
		fputs("</title>\n", f);
		fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\">", x0 - 8, cy + 4.5);
		bench_xml_str(f, r->name, SVG_MAXLABEL);
		fputs("</text>\n", f);
		if (!r->nsamples) {
			fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" fill=\"#666\">n/a</text>\n</g>\n",
				x0 + 6, cy + 4.5);
			continue;
		}
		double lo = r->s.mean, hi = r->s.mean;

		if (!isnan(r->s.sd)) {
			lo = r->s.mean - r->s.sd < 0 ? 0 : r->s.mean - r->s.sd;
			hi = r->s.mean + r->s.sd;
		}
		fprintf(f,
			"<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%d\" fill=\"%s\"/>\n",
			x0, y, X(r->s.mean) - x0, SVG_BAR, is_base ? "#9c9c9c" : "#4c78a8");
		if (hi > lo) {
			fprintf(f,
				"<path d=\"M%.1f %.1fH%.1fM%.1f %.1fV%.1fM%.1f %.1fV%.1f\" "
				"stroke=\"#222\" stroke-width=\"1.5\" fill=\"none\"/>\n",
				X(lo), cy, X(hi), X(lo), cy - 5, cy + 5, X(hi), cy - 5, cy + 5);
		}
		fprintf(f, "<text x=\"%.1f\" y=\"%.1f\">%.*f", X(hi) + 8, cy + 4.5, precision,
			r->s.mean);
		if (!isnan(r->s.sd))
			fprintf(f, " \xc2\xb1 %.*f", precision, r->s.sd);
		if (is_base)
			fputs(" (baseline)", f);
		else if (!isnan(r->times_baseline))
			fprintf(f, " (%.2f\xc3\x97)", r->times_baseline);
		fputs("</text>\n</g>\n", f);
	}
#undef X
	fputs("</svg>\n", f);
	return bench_report_finish(f);
}
