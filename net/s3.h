/* Where an s3://BUCKET/KEY object is and how to sign for it: the HTTP URL (path-style on an
 * S3-compatible endpoint, virtual-hosted on AWS), the region, and the credentials, found as the
 * AWS tools find them.
 *
 *  - endpoint: the --s3-endpoint option, else $AWS_ENDPOINT_URL (then path-style:
 *    ENDPOINT/BUCKET/KEY), else https://BUCKET.s3.REGION.amazonaws.com/KEY;
 *  - region: $AWS_REGION, $AWS_DEFAULT_REGION, the profile's "region" in $AWS_CONFIG_FILE
 *    (~/.aws/config: [default] or [profile NAME]), else us-east-1;
 *  - credentials: $AWS_ACCESS_KEY_ID and $AWS_SECRET_ACCESS_KEY (and $AWS_SESSION_TOKEN), else
 *    the profile ($AWS_PROFILE, else "default") in $AWS_SHARED_CREDENTIALS_FILE
 *    (~/.aws/credentials); none: unsigned requests (a public bucket).
 *
 * Nothing here talks to the network.  Secrets stay in the struct (freed with s3_target_free,
 * wiped first) and are never logged.
 */
#ifndef TARSEEK_S3_H
#define TARSEEK_S3_H

#include <stdbool.h>
#include <stddef.h>

struct s3_target {
	char *url;	    /* the object's http(s) URL */
	char *region;
	char *access_key;   /* NULL: unsigned */
	char *secret_key;
	char *session_token; /* or NULL */
};

/* Parses s3://BUCKET/KEY (the key may hold slashes; characters outside the unreserved set are
 * percent-encoded in the URL).  endpoint may be NULL.  0, or -EINVAL with a reason in err. */
int s3_resolve(const char *s3url, const char *endpoint, struct s3_target *t, char *err,
	       size_t errlen);

void s3_target_free(struct s3_target *t);

/* Zeroes a secret string, then frees it (NULL does nothing). */
void s3_secret_free(char *s);

#endif
