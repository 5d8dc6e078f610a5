/* trace — Chrome Trace Event JSON writer. Event names are built from fixed strings and
 * numbers only, so nothing needs escaping except the caller's name. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include "reports/trace.h"
#include "sim/util.h"

static void json_string(FILE *f, const char *s)
{
	fputc('"', f);
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;
		if (c == '"' || c == '\\') fprintf(f, "\\%c", c);
		else if (c < 0x20) fprintf(f, "\\u%04x", c);
		else fputc(c, f);
	}
	fputc('"', f);
}

/* Every record but the very first (rank 0's process name) starts with its separator. */
static void write_metadata(FILE *f, const struct timeline *tl)
{
	unsigned used[TL_STREAM_COUNT] = {0};
	for (size_t i = 0; i < tl->n; i++)
		if (tl->ev[i].stream < TL_STREAM_COUNT) used[tl->ev[i].stream] = 1;
	for (int r = 0; r < tl->nranks; r++) {
		fputs(r ? ",\n" : "", f);
		fprintf(f, "{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":%d,\"args\":{\"name\":\"pp rank %d\"}}", r, r);
		fprintf(f, ",\n{\"name\":\"process_sort_index\",\"ph\":\"M\",\"pid\":%d,\"args\":{\"sort_index\":%d}}", r, r);
		for (int s = 0; s < TL_STREAM_COUNT; s++) {
			if (!used[s]) continue;
			fprintf(f, ",\n{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":%d,\"tid\":%d,\"args\":{\"name\":\"%s\"}}",
				r, s, tl_stream_name(s));
			fprintf(f, ",\n{\"name\":\"thread_sort_index\",\"ph\":\"M\",\"pid\":%d,\"tid\":%d,\"args\":{\"sort_index\":%d}}",
				r, s, s);
		}
	}
}

static void write_event(FILE *f, const struct tl_event *e, double k)
{
	char name[64];
	int compute = e->kind <= TL_BW;
	if (compute || e->kind == TL_P2P)
		snprintf(name, sizeof(name), "%s%s%d%s", compute ? tl_kind_name(e->kind) : "send ",
			 compute ? "" : (e->stream == TL_P2P_FWD ? "act " : "grad "), e->mb,
			 e->overlap ? " (F&B)" : "");
	else if (e->stage >= 0)
		snprintf(name, sizeof(name), "%s stage %d", tl_kind_name(e->kind), e->stage);
	else
		snprintf(name, sizeof(name), "%s", tl_kind_name(e->kind));
	fprintf(f, ",\n{\"name\":\"%s\",\"cat\":\"%s\",\"ph\":\"X\",\"ts\":%.6f,\"dur\":%.6f,\"pid\":%d,\"tid\":%d,"
		"\"args\":{\"mb\":%d,\"stage\":%d,\"chunk\":%d,\"dir\":%d}}",
		name, compute || e->kind == TL_OPT ? "compute" : "comm", e->start * k, (e->end - e->start) * k,
		e->rank, e->stream, e->mb, e->stage, e->chunk, e->dir);
	if (compute)
		fprintf(f, ",\n{\"name\":\"activations\",\"ph\":\"C\",\"ts\":%.6f,\"pid\":%d,\"args\":{\"bytes\":%.17g}}",
			e->end * k, e->rank, e->mem_bytes);
}

int trace_write(const struct timeline *tl, const char *path, double us_per_unit, const char *name,
		char *err)
{
	if (tl->nranks < 1) return errf(err, "trace: timeline has no ranks");
	if (!(us_per_unit > 0)) return errf(err, "trace: microseconds per time unit must be positive");
	FILE *f = fopen(path, "w");
	if (!f) return errf(err, "trace: %s: %s", path, strerror(errno));
	fputs("{\"displayTimeUnit\":\"ms\",\"otherData\":{\"name\":", f);
	json_string(f, name ? name : "scaleplan");
	fputs("},\"traceEvents\":[\n", f);
	write_metadata(f, tl);
	for (size_t i = 0; i < tl->n; i++) write_event(f, &tl->ev[i], us_per_unit);
	fputs("\n]}\n", f);
	int bad = ferror(f);
	if (fclose(f) || bad) return errf(err, "trace: %s: write failed", path);
	return 0;
}
