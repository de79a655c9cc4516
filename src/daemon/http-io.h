/* Moved to net/http-io.h, shared by every HTTP server (net/http-server.h)
 * and the CLI's client; this name stays only until the branches that still
 * include it have merged. */
#include "net/http-io.h"
