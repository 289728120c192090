/* s3://BUCKET/KEY to an HTTP URL, a region and credentials (see s3.h). */
#include "net/s3.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The environment variable's value if set and not empty, else NULL. */
static const char *env(const char *name)
{
	const char *v = getenv(name);

	return v && *v ? v : NULL;
}

/* $var if set, else ~/.aws/leaf (malloc'd), or NULL without a home. */
static char *aws_file(const char *var, const char *leaf)
{
	const char *v = env(var), *home = env("HOME");
	char *out;

	if (v)
		return strdup(v);
	if (!home)
		return NULL;
	return asprintf(&out, "%s/.aws/%s", home, leaf) < 0 ? NULL : out;
}

static char *trim(char *s)
{
	char *e;

	while (isspace((unsigned char)*s))
		s++;
	e = s + strlen(s);
	while (e > s && isspace((unsigned char)e[-1]))
		*--e = '\0';
	return s;
}

/* The value of key in section [section] of an INI file (malloc'd), or NULL. */
static char *ini_get(const char *path, const char *section, const char *key)
{
	FILE *f = path ? fopen(path, "r") : NULL;
	char line[1024], *out = NULL;
	bool in = false;

	if (!f)
		return NULL;
	while (!out && fgets(line, sizeof(line), f)) {
		char *s = trim(line), *eq;
		if (*s == '#' || *s == ';' || !*s)
			continue;
		if (*s == '[') {
			char *end = strchr(s, ']');
			if (end) {
				*end = '\0';
				in = strcmp(trim(s + 1), section) == 0;
			}
			continue;
		}
		if (!in || !(eq = strchr(s, '=')))
			continue;
		*eq = '\0';
		if (strcmp(trim(s), key) == 0)
			out = strdup(trim(eq + 1));
	}
	fclose(f);
	return out;
}

/* key of the profile in the config file: [default] or [profile NAME]. */
static char *config_get(const char *profile, const char *key)
{
	char *path = aws_file("AWS_CONFIG_FILE", "config"), *section = NULL, *v = NULL;

	if (strcmp(profile, "default") == 0)
		section = strdup("default");
	else if (asprintf(&section, "profile %s", profile) < 0)
		section = NULL;
	if (section)
		v = ini_get(path, section, key);
	free(section);
	free(path);
	return v;
}

/* Percent-encodes a key for a URL path, keeping '/' between its parts. */
static char *encode_key(const char *key)
{
	static const char hex[] = "0123456789ABCDEF";
	char *out = malloc(strlen(key) * 3 + 1), *p = out;

	if (!out)
		return NULL;
	for (const unsigned char *k = (const unsigned char *)key; *k; k++) {
		if (isalnum(*k) || strchr("-._~/", *k)) {
			*p++ = (char)*k;
		} else {
			*p++ = '%';
			*p++ = hex[*k >> 4];
			*p++ = hex[*k & 15];
		}
	}
	*p = '\0';
	return out;
}

void s3_secret_free(char *s)
{
	if (!s)
		return;
	volatile char *v = s;
	while (*v)
		*v++ = '\0';
	free(s);
}

void s3_target_free(struct s3_target *t)
{
	if (!t)
		return;
	free(t->url);
	free(t->region);
	s3_secret_free(t->access_key);
	s3_secret_free(t->secret_key);
	s3_secret_free(t->session_token);
	memset(t, 0, sizeof(*t));
}

static bool bucket_ok(const char *b, size_t n)
{
	if (n < 1 || n > 255)
		return false;
	for (size_t i = 0; i < n; i++)
		if (!isalnum((unsigned char)b[i]) && !strchr("-._", b[i]))
			return false;
	return true;
}

int s3_resolve(const char *s3url, const char *endpoint, struct s3_target *t, char *err,
	       size_t errlen)
{
	const char *profile = env("AWS_PROFILE") ? env("AWS_PROFILE") : "default";
	const char *b, *slash;
	char *key = NULL, *bucket = NULL;
	int n, ret = 0;

	memset(t, 0, sizeof(*t));
	if (strncmp(s3url, "s3://", 5) != 0) {
		snprintf(err, errlen, "not an s3:// URL");
		return -EINVAL;
	}
	b = s3url + 5;
	slash = strchr(b, '/');
	if (!slash || !slash[1] || !bucket_ok(b, (size_t)(slash - b))) {
		snprintf(err, errlen, "an S3 URL is s3://BUCKET/KEY");
		return -EINVAL;
	}
	bucket = strndup(b, (size_t)(slash - b));
	key = encode_key(slash + 1);
	if (!bucket || !key)
		goto nomem;
	/* region */
	if (env("AWS_REGION"))
		t->region = strdup(env("AWS_REGION"));
	else if (env("AWS_DEFAULT_REGION"))
		t->region = strdup(env("AWS_DEFAULT_REGION"));
	else
		t->region = config_get(profile, "region");
	if (!t->region)
		t->region = strdup("us-east-1");
	/* where */
	if (!endpoint)
		endpoint = env("AWS_ENDPOINT_URL");
	if (endpoint) {
		size_t el = strlen(endpoint);
		while (el && endpoint[el - 1] == '/')
			el--;
		if (strncmp(endpoint, "http://", 7) != 0 && strncmp(endpoint, "https://", 8) != 0) {
			snprintf(err, errlen, "the S3 endpoint must be an http:// or https:// URL");
			ret = -EINVAL;
			goto fail;
		}
		n = asprintf(&t->url, "%.*s/%s/%s", (int)el, endpoint, bucket, key);
	} else {
		n = asprintf(&t->url, "https://%s.s3.%s.amazonaws.com/%s", bucket, t->region, key);
	}
	if (n < 0) {
		t->url = NULL;
		goto nomem;
	}
	/* who */
	if (env("AWS_ACCESS_KEY_ID") && env("AWS_SECRET_ACCESS_KEY")) {
		t->access_key = strdup(env("AWS_ACCESS_KEY_ID"));
		t->secret_key = strdup(env("AWS_SECRET_ACCESS_KEY"));
		if (env("AWS_SESSION_TOKEN"))
			t->session_token = strdup(env("AWS_SESSION_TOKEN"));
	} else {
		char *path = aws_file("AWS_SHARED_CREDENTIALS_FILE", "credentials");
		t->access_key = ini_get(path, profile, "aws_access_key_id");
		t->secret_key = ini_get(path, profile, "aws_secret_access_key");
		t->session_token = ini_get(path, profile, "aws_session_token");
		free(path);
		if (!t->access_key || !t->secret_key) {
			s3_secret_free(t->access_key);
			s3_secret_free(t->secret_key);
			s3_secret_free(t->session_token);
			t->access_key = t->secret_key = t->session_token = NULL;
		}
	}
	if (!t->region)
		goto nomem;
	goto out;
nomem:
	snprintf(err, errlen, "out of memory");
	ret = -ENOMEM;
fail:
	s3_target_free(t);
out:
	free(bucket);
	free(key);
	return ret;
}
