/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Writes the golden vectors as files, as fuzz seeds and for the tshark
 * check: golden_dump DIR [mpa|term|stream|qprx|raw].
 */
#include <stdio.h>
#include <string.h>

#include "golden/golden.h"

static int put(const char *dir, const char *name, const void *pfx,
	       size_t plen, const uint8_t *p, size_t len)
{
	char path[512];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "wb");
	if (!f) {
		perror(path);
		return 1;
	}
	fwrite(pfx, 1, plen, f);
	fwrite(p, 1, len, f);
	return fclose(f) != 0;
}

int main(int argc, char **argv)
{
	const char *mode = argc > 2 ? argv[2] : "raw";
	int ret = 0;
	size_t i;

	if (argc < 2) {
		fprintf(stderr, "usage: %s DIR [mpa|term|stream|qprx|raw]\n",
			argv[0]);
		return 2;
	}
	for (i = 0; i < N_GOLDEN; i++) {
		const struct golden *g = &goldens[i];
		uint8_t pfx[2] = { 0, 0 };

		if (!strcmp(mode, "mpa") && g->kind <= 1) {
			pfx[0] = (uint8_t)g->kind;
			ret |= put(argv[1], g->name, pfx, 1, g->bytes, g->len);
		} else if (!strcmp(mode, "term") && g->kind >= 2 &&
			   (g->bytes[3] == 0x47 || g->bytes[3] == 0x4a ||
			    g->bytes[3] == 0x4b)) {
			/* Terminate or atomic payload after MPA length +
			 * untagged DDP header */
			ret |= put(argv[1], g->name, "", 0, g->bytes + 20,
				   g->len - 20 - 4);
		} else if (!strcmp(mode, "stream") && g->kind >= 2) {
			pfx[0] = g->kind == 2 ? 1 : 0;
			pfx[1] = (uint8_t)i;
			ret |= put(argv[1], g->name, pfx, 2, g->bytes, g->len);
		} else if (!strcmp(mode, "qprx") && g->kind >= 2) {
			/* atomics on; the FPDU as the peer's stream */
			pfx[0] = 1;
			ret |= put(argv[1], g->name, pfx, 1, g->bytes, g->len);
		} else if (!strcmp(mode, "raw")) {
			ret |= put(argv[1], g->name, "", 0, g->bytes, g->len);
		}
	}
	return ret;
}
