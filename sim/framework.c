/* framework — reader of profiles/frameworks/NAME.json and the one place its defaults are
 * applied to a plan. Strict like the hardware profiles: unknown fields are errors, every
 * value must be one the plan parser accepts, and every entry names its source. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cjson/cJSON.h>
#include "sim/embedded.h"
#include "sim/framework.h"
#include "sim/model.h"
#include "sim/plan.h"
#include "sim/util.h"

/* "pp>1" -> key "pp", op ">", value "1" */
static int parse_cond(const char *s, struct fw_cond *e)
{
	static const char *const ops[] = {"!=", ">=", "<=", "=", ">", "<"};
	for (const char *c = s; *c; c++)
		for (size_t i = 0; i < sizeof(ops) / sizeof(ops[0]); i++) {
			size_t n = strlen(ops[i]);
			if (strncmp(c, ops[i], n)) continue;
			size_t klen = (size_t)(c - s);
			if (!klen || klen >= sizeof(e->key) || strlen(c + n) >= sizeof(e->value) || !c[n]) return -1;
			memcpy(e->key, s, klen);
			e->key[klen] = 0;
			snprintf(e->op, sizeof(e->op), "%s", ops[i]);
			snprintf(e->value, sizeof(e->value), "%s", c + n);
			return 0;
		}
	return -1;
}

/* an "if" field: KEY OP VALUE over a plan key; 0, or -1 with err */
static int read_cond(const cJSON *it, const char *name, const char *list, int idx, struct fw_cond *c, char *err)
{
	if (!cJSON_IsString(it) || parse_cond(it->valuestring, c))
		return errf(err, "framework %s: %s[%d].if must read KEY OP VALUE (OP one of = != > >= < <=)", name, list, idx);
	if (plan_key_index(c->key) < 0) return errf(err, "framework %s: %s[%d].if: no plan key '%s'", name, list, idx, c->key);
	return 0;
}

static int json_text(const cJSON *v, char *out, size_t n)
{
	if (cJSON_IsString(v)) snprintf(out, n, "%s", v->valuestring);
	else if (cJSON_IsBool(v)) snprintf(out, n, "%d", cJSON_IsTrue(v) ? 1 : 0);
	else if (cJSON_IsNumber(v) && is_int_in(v->valuedouble, -1e15, 1e15)) snprintf(out, n, "%.0f", v->valuedouble);
	else return -1;
	return 0;
}

/* The "key" and "source" fields every entry of a list (defaults, offers) has: 1 when `it` is one
 * of them (copied into key or source), 0 when it is another field, -1 with err. */
static int key_or_source(const cJSON *it, const char *name, const char *list, int idx, char *key, size_t nkey,
			 char *source, size_t nsource, char *err)
{
	const char *k = it->string;
	if (strcmp(k, "key") && strcmp(k, "source")) return 0;
	if (!cJSON_IsString(it) || !it->valuestring[0])
		return errf(err, "framework %s: %s[%d].%s must be a non-empty string", name, list, idx, k);
	if (!strcmp(k, "key")) snprintf(key, nkey, "%s", it->valuestring);
	else snprintf(source, nsource, "%s", it->valuestring);
	return 1;
}

/* 0 when the plan parser takes `value` for `key`, else -1 with err */
static int value_parses(const char *key, const char *value, const char *name, const char *list, int idx, char *err)
{
	struct plan probe;
	char e2[ERR_LEN];
	plan_defaults(&probe);
	if (plan_set(&probe, key, value, e2)) return errf(err, "framework %s: %s[%d]: %s", name, list, idx, e2);
	return 0;
}

static int read_entry(const cJSON *o, const char *name, int idx, struct fw_entry *e, char *err)
{
	memset(e, 0, sizeof(*e));
	if (!cJSON_IsObject(o)) return errf(err, "framework %s: defaults[%d] must be an object", name, idx);
	for (const cJSON *it = o->child; it; it = it->next) {
		const char *k = it->string;
		int ks = key_or_source(it, name, "defaults", idx, e->key, sizeof(e->key), e->source, sizeof(e->source), err);
		if (ks < 0) return -1;
		if (ks) continue;
		if (!strcmp(k, "value")) {
			if (json_text(it, e->value, sizeof(e->value))) return errf(err, "framework %s: defaults[%d].value must be a string, boolean or integer", name, idx);
		} else if (!strcmp(k, "if")) {
			if (read_cond(it, name, "defaults", idx, &e->cond, err)) return -1;
		} else if (!strcmp(k, "since") || !strcmp(k, "until")) {
			if (!cJSON_IsNumber(it) || it->valuedouble < 1990 || it->valuedouble > 2100 || it->valuedouble != (int)it->valuedouble)
				return errf(err, "framework %s: defaults[%d].%s must be a year", name, idx, k);
			*(k[0] == 's' ? &e->since : &e->until) = it->valueint;
		} else {
			return errf(err, "framework %s: defaults[%d]: unknown field '%s'", name, idx, k);
		}
	}
	if (!e->key[0] || !e->value[0] || !e->source[0]) return errf(err, "framework %s: defaults[%d] needs key, value and source", name, idx);
	if (value_parses(e->key, e->value, name, "defaults", idx, err)) return -1;
	return 0;
}

/* {key, values, source}: the values a plan key can take in the framework at all */
static int read_offer(const cJSON *o, const char *name, int idx, struct fw_offer *f, char *err)
{
	memset(f, 0, sizeof(*f));
	if (!cJSON_IsObject(o)) return errf(err, "framework %s: offers[%d] must be an object", name, idx);
	for (const cJSON *it = o->child; it; it = it->next) {
		const char *k = it->string;
		int ks = key_or_source(it, name, "offers", idx, f->key, sizeof(f->key), f->source, sizeof(f->source), err);
		if (ks < 0) return -1;
		if (ks) continue;
		if (!strcmp(k, "values")) {
			if (!cJSON_IsArray(it)) return errf(err, "framework %s: offers[%d].values must be an array", name, idx);
			for (const cJSON *v = it->child; v; v = v->next) {
				if (f->n == FW_MAX_VALUES) return errf(err, "framework %s: offers[%d] lists more than %d values", name, idx, FW_MAX_VALUES);
				if (json_text(v, f->values[f->n], sizeof(f->values[0]))) return errf(err, "framework %s: offers[%d].values must be strings, booleans or integers", name, idx);
				f->n++;
			}
		} else if (!strcmp(k, "if")) {
			if (read_cond(it, name, "offers", idx, &f->cond, err)) return -1;
		} else {
			return errf(err, "framework %s: offers[%d]: unknown field '%s'", name, idx, k);
		}
	}
	if (!f->key[0] || !f->n || !f->source[0]) return errf(err, "framework %s: offers[%d] needs key, values and source", name, idx);
	for (int i = 0; i < f->n; i++)
		if (value_parses(f->key, f->values[i], name, "offers", idx, err)) return -1;
	return 0;
}

int framework_from_json(const char *text, const char *name, struct framework *fw, char *err)
{
	memset(fw, 0, sizeof(*fw));
	snprintf(fw->name, sizeof(fw->name), "%s", name);
	cJSON *o = cJSON_Parse(text);
	if (!o) return errf(err, "framework %s: malformed JSON", name);
	int rc = -1;
	if (!cJSON_IsObject(o)) { errf(err, "framework %s: profile must be a JSON object", name); goto out; }
	for (cJSON *it = o->child; it; it = it->next) {
		if (!strcmp(it->string, "notes")) continue;
		if (!strcmp(it->string, "name") || !strcmp(it->string, "describes")) {
			if (!cJSON_IsString(it)) { errf(err, "framework %s: %s must be a string", name, it->string); goto out; }
			if (it->string[0] == 'n') snprintf(fw->name, sizeof(fw->name), "%s", it->valuestring);
			else snprintf(fw->describes, sizeof(fw->describes), "%s", it->valuestring);
		} else if (!strcmp(it->string, "defaults")) {
			if (!cJSON_IsArray(it)) { errf(err, "framework %s: defaults must be an array", name); goto out; }
			for (cJSON *d = it->child; d; d = d->next) {
				if (fw->n == FW_MAX_ENTRIES) { errf(err, "framework %s: more than %d defaults", name, FW_MAX_ENTRIES); goto out; }
				if (read_entry(d, name, fw->n, &fw->e[fw->n], err)) goto out;
				fw->n++;
			}
		} else if (!strcmp(it->string, "offers")) {
			if (!cJSON_IsArray(it)) { errf(err, "framework %s: offers must be an array", name); goto out; }
			for (cJSON *d = it->child; d; d = d->next) {
				if (fw->noffers == FW_MAX_OFFERS) { errf(err, "framework %s: more than %d offers", name, FW_MAX_OFFERS); goto out; }
				if (read_offer(d, name, fw->noffers, &fw->offers[fw->noffers], err)) goto out;
				fw->noffers++;
			}
		} else {
			errf(err, "framework %s: unknown key '%s'", name, it->string);
			goto out;
		}
	}
	if (!fw->describes[0]) { errf(err, "framework %s: missing 'describes'", name); goto out; }
	rc = 0;
out:
	cJSON_Delete(o);
	return rc;
}

int framework_load(const char *name_or_path, struct framework *fw, char *err)
{
	char key[300];
	snprintf(key, sizeof(key), "frameworks/%s.json", name_or_path);
	const char *text = strchr(name_or_path, '/') ? NULL : embedded_find(key);
	if (text) return framework_from_json(text, name_or_path, fw, err);
	if (!strchr(name_or_path, '/') && !strstr(name_or_path, ".json"))
		return errf(err, "framework: unknown framework '%.64s' (not a built-in profile; give a JSON path)", name_or_path);
	char *buf = read_file(name_or_path, 1 << 20, err);
	if (!buf) return -1;
	const char *base = strrchr(name_or_path, '/');
	int rc = framework_from_json(buf, base ? base + 1 : name_or_path, fw, err);
	free(buf);
	return rc;
}

static int cond_holds(const struct fw_cond *e, const struct plan *p)
{
	if (!e->key[0]) return 1;
	char have[64];
	if (!p || plan_get(p, e->key, have, sizeof(have))) return 0;
	char *end1, *end2;
	double a = strtod(have, &end1), b = strtod(e->value, &end2);
	int numeric = *have && !*end1 && !*end2;
	int cmp = numeric ? (a > b) - (a < b) : strcmp(have, e->value);
	const char *op = e->op;
	if (!strcmp(op, "=")) return cmp == 0;
	if (!strcmp(op, "!=")) return cmp != 0;
	if (!numeric) return 0;
	if (!strcmp(op, ">")) return cmp > 0;
	if (!strcmp(op, ">=")) return cmp >= 0;
	if (!strcmp(op, "<")) return cmp < 0;
	return cmp <= 0;
}

const struct fw_offer *framework_offer(const struct framework *fw, const char *key, const struct plan *p)
{
	for (int i = 0; i < fw->noffers; i++)
		if (!strcmp(fw->offers[i].key, key) && cond_holds(&fw->offers[i].cond, p)) return &fw->offers[i];
	return NULL;
}

int framework_offers(const struct framework *fw, const char *key, const char *value, const struct plan *p)
{
	const struct fw_offer *f = framework_offer(fw, key, p);
	if (!f) return 1;
	for (int j = 0; j < f->n; j++)
		if (!strcmp(f->values[j], value)) return 1;
	return 0;
}

int framework_selective_is_op(const struct framework *fw, const struct plan *p)
{
	return framework_offer(fw, "recompute", p) && framework_offers(fw, "recompute", "op", p) &&
	       !framework_offers(fw, "recompute", "selective", p);
}

int framework_cheap_modules(const struct framework *fw, const struct model *m, int flash_attn)
{
	static const int cheap[] = {RCM_MLA_UP_PROJ, RCM_MOE_ACT, RCM_LAYERNORM};
	int have[] = {m->kv_lora_rank > 0, model_is_moe(m), m->kv_lora_rank > 0 || model_is_moe(m)};
	int mods = flash_attn ? 0 : RCM_CORE_ATTN;
	for (size_t i = 0; i < sizeof(cheap) / sizeof(cheap[0]); i++) {
		char name[32];
		recompute_modules_text(cheap[i], name, sizeof(name));
		if (have[i] && (!fw || framework_offers(fw, "recompute_modules", name, NULL))) mods |= cheap[i];
	}
	return mods ? mods : RCM_CORE_ATTN;
}

int framework_offers_conditional(const struct framework *fw)
{
	for (int i = 0; i < fw->noffers; i++)
		if (fw->offers[i].cond.key[0]) return 1;
	return 0;
}

const char *const *framework_builtin_names(void)
{
	static const char *names[32];
	static char store[32][48];
	int n = 0;
	for (const struct embedded_file *f = embedded_files; f->name && n < 31; f++) {
		if (strncmp(f->name, "frameworks/", 11)) continue;
		snprintf(store[n], sizeof(store[n]), "%.*s", (int)(strlen(f->name) - 16), f->name + 11);
		names[n] = store[n];
		n++;
	}
	names[n] = NULL;
	return names;
}

static int year_holds(const struct fw_entry *e, int year)
{
	if (!year) return !e->until;
	return (!e->since || year >= e->since) && (!e->until || year <= e->until);
}

int framework_apply(const struct framework *fw, struct plan *p, int year, char *applied, size_t n,
		    uint64_t *mask, char *err)
{
	uint64_t given = p->stated, done = 0;
	int count = 0;
	for (int i = 0; i < fw->n; i++) {
		const struct fw_entry *e = &fw->e[i];
		int k = plan_key_index(e->key);
		if (k < 0 || (given >> k & 1) || (done >> k & 1) || !cond_holds(&e->cond, p) || !year_holds(e, year)) continue;
		if (plan_set(p, e->key, e->value, err)) return -1;
		done |= (uint64_t)1 << k;
		count++;
		if (applied) {
			size_t len = strlen(applied);
			snprintf(applied + len, n - len, "%s%s %s (%s)", len ? ", " : "", e->key, e->value, fw->name);
		}
	}
	p->stated = given;
	if (mask) *mask |= done;
	return count;
}
