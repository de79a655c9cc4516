/* Wiping jansson's memory when it frees it (json-wipe.h).  jansson copies
 * what it parses: the lexer's growing buffer, every string value, every
 * object key, each of the reallocations of json_dumps' output.  Wiping
 * only the strings we can reach would leave the rest; its allocator hook
 * reaches them all.  malloc_usable_size covers the whole block glibc
 * handed out, so no tail of an earlier, longer content survives. */
#include "base/json-wipe.h"

#include <jansson.h>
#include <malloc.h>
#include <stdlib.h>
#include <string.h>

static void
wiping_free (void *p)
{
	if (!p)
		return;
	explicit_bzero (p, malloc_usable_size (p));
	free (p);
}

void
ab_json_wipe_on_free (void)
{
	json_malloc_t m;
	json_free_t f;

	json_get_alloc_funcs (&m, &f);
	if (f != wiping_free)
		json_set_alloc_funcs (malloc, wiping_free);
}

/* Before main: no other thread uses jansson while the hook changes. */
__attribute__ ((constructor)) static void
install (void)
{
	ab_json_wipe_on_free ();
}
