/* Command-line pieces shared by the standalone sidecars (credential-proxy,
 * egress-proxy, preview-bridge): "--flag value" / "--flag=value", the
 * usage error, the HOST:PORT of --listen, and stopping on SIGINT/SIGTERM. */
#ifndef AB_CLI_LISTEN_ARG_H
#define AB_CLI_LISTEN_ARG_H

#include <stdbool.h>

/* Whether argv[*i] is flag, alone or as "flag=value".  If so, *value is
 * its value (NULL when a separate value is missing) and *i moves past a
 * separate value. */
bool ab_cli_flag (int argc, char **argv, int *i, const char *flag, const char **value);

/* "PROG: message", then "usage: PROG usage" on stderr; returns rc. */
int ab_cli_usage_error (const char *progname, const char *usage, int rc, const char *fmt, ...)
        __attribute__ ((format (printf, 4, 5)));

/* "HOST:PORT" by ab_listen_parse (policy/hostname.h): split at the last
 * ':' so "[::1]:8080" and ":::8080" work; *host is the normalised host
 * without brackets, *port its decimal port; an empty host means
 * default_host (each sidecar picks its own: the credential proxy hands out
 * secrets and stays on loopback unless asked).  -1 for anything
 * ab_listen_parse refuses. */
int ab_cli_split_listen (const char *text, const char *default_host, char **host, char **port);

/* SIGINT and SIGTERM call stop(arg) from the handler, so stop must be
 * async-signal-safe (the proxies' ab_*_proxy_stop write an eventfd).  The
 * program's edge installs this; the library layers change no process-wide
 * signal disposition. */
void ab_cli_stop_on_signals (void (*stop) (void *arg), void *arg);

#endif
