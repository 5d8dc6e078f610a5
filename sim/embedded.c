/* embedded — lookup in the table of profiles compiled into the binary. */
#include <string.h>
#include "sim/embedded.h"

const char *embedded_find(const char *name)
{
	for (const struct embedded_file *f = embedded_files; f->name; f++)
		if (strcmp(f->name, name) == 0)
			return f->text;
	return NULL;
}
