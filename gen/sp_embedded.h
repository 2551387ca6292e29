/* The templates compiled into the library (templates/<family>/<op>.lua and templates/lib/). */
#ifndef SP_EMBEDDED_H
#define SP_EMBEDDED_H

#include "sp_embed.h"

extern const sp_embedded_file sp_embedded_templates[]; /* ends with {0,0,0} */
extern const int sp_embedded_templates_count;

#endif
