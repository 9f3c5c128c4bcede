/*
 * plan.c - vlcs_ctx_apply_plan: configure a context as `vlcs tune` planned
 * one task, so that tuning and running stay separate.
 *
 * The plan is the JSON file the tuner writes (plan.json).  This reads only
 * what it needs, {"version": 1, "tasks": [{"name", "cpus", "env": {...}}]},
 * with a small strict JSON reader: anything malformed is an error naming
 * the byte, never a guess.  Everything is checked before the context
 * changes, so a refused plan leaves it as it was.
 */
#include "common.h"
#include "context.h"
#include "cpuset.h"
#include "env.h"
#include "error.h"
#include "places.h"
#include "registry.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PLAN_MAX_BYTES (16 << 20)
#define PLAN_MAX_ENV 64
#define PLAN_MAX_DEPTH 32

struct reader {
    const char *s, *start, *end;
    char err[160];
};

struct entry {
    char name[256], cpus[4096];
    char env_name[PLAN_MAX_ENV][128], env_value[PLAN_MAX_ENV][1024];
    int nenv;
    bool has_cpus;
};

static int fail(struct reader *r, const char *what)
{
    if (r->err[0] == '\0')
        snprintf(r->err, sizeof r->err, "%s at byte %ld", what, (long)(r->s - r->start));
    return -1;
}

static void ws(struct reader *r)
{
    while (r->s < r->end && (*r->s == ' ' || *r->s == '\t' || *r->s == '\n' || *r->s == '\r'))
        r->s++;
}

static bool eat(struct reader *r, char c)
{
    ws(r);
    if (r->s < r->end && *r->s == c) {
        r->s++;
        return true;
    }
    return false;
}

/* A string into out (NULL: skipped); \u escapes outside ASCII become '?'.
 * 0; 1 when it did not fit in cap (out holds ""; the string was read); -1. */
static int string(struct reader *r, char *out, size_t cap)
{
    bool truncated = false;
    if (!eat(r, '"'))
        return fail(r, "expected a string");
    size_t n = 0;
    while (r->s < r->end && *r->s != '"') {
        char c = *r->s++;
        if (c == '\\') {
            if (r->s >= r->end)
                break;
            char e = *r->s++;
            const char *map = "\"\"\\\\//b\bf\fn\nr\rt\t";
            const char *m = strchr(map, e);
            if (e == 'u') {
                if (r->end - r->s < 4)
                    return fail(r, "a short \\u escape");
                unsigned v = 0;
                for (int i = 0; i < 4; i++) {
                    char h = *r->s++;
                    v = v * 16 + (unsigned)(h >= '0' && h <= '9'   ? h - '0'
                                            : h >= 'a' && h <= 'f' ? h - 'a' + 10
                                            : h >= 'A' && h <= 'F' ? h - 'A' + 10
                                                                   : 99);
                }
                c = v < 128 ? (char)v : '?';
            } else if (m != NULL && (m - map) % 2 == 0) {
                c = m[1];
            } else {
                return fail(r, "a bad escape");
            }
        }
        if (out != NULL && !truncated) {
            if (n + 1 >= cap)
                truncated = true;
            else
                out[n++] = c;
        }
    }
    if (r->s >= r->end)
        return fail(r, "an unterminated string");
    r->s++;
    if (out != NULL)
        out[truncated ? 0 : n] = '\0';
    return truncated ? 1 : 0;
}

/* A string value that must fit. */
static int text_value(struct reader *r, char *out, size_t cap)
{
    int rc = string(r, out, cap);
    return rc == 1 ? fail(r, "a string too long") : rc;
}

static int value(struct reader *r, int depth);

static int members(struct reader *r, int depth, char close, bool keys)
{
    if (eat(r, close))
        return 0;
    do {
        if (keys && (string(r, NULL, 0) < 0 || !eat(r, ':')))
            return fail(r, "expected \"key\":");
        if (value(r, depth + 1) != 0)
            return -1;
    } while (eat(r, ','));
    return eat(r, close) ? 0 : fail(r, keys ? "expected , or }" : "expected , or ]");
}

/* Skips any JSON value. */
static int value(struct reader *r, int depth)
{
    if (depth > PLAN_MAX_DEPTH)
        return fail(r, "nesting too deep");
    ws(r);
    if (r->s >= r->end)
        return fail(r, "an unexpected end");
    char c = *r->s;
    if (c == '"')
        return string(r, NULL, 0);
    if (c == '{' || c == '[') {
        r->s++;
        return members(r, depth, c == '{' ? '}' : ']', c == '{');
    }
    const char *v = r->s;
    while (r->s < r->end && strchr("+-.0123456789eEtruefalsn", *r->s) != NULL)
        r->s++;
    return r->s > v ? 0 : fail(r, "expected a value");
}

/* Steps through an object's members: start with *first = true.  1 with the
 * next key read (a key too long for cap reads as "": not one of ours) and
 * its ':' eaten; 0 at the closing '}'; -1 on malformed input. */
static int next_member(struct reader *r, bool *first, char *key, size_t cap)
{
    if (*first) {
        *first = false;
        if (!eat(r, '{'))
            return fail(r, "expected an object");
        if (eat(r, '}'))
            return 0;
    } else {
        if (eat(r, '}'))
            return 0;
        if (!eat(r, ','))
            return fail(r, "expected , or }");
    }
    if (string(r, key, cap) < 0)
        return -1;
    return eat(r, ':') ? 1 : fail(r, "expected :");
}

static int env_object(struct reader *r, struct entry *e)
{
    bool first = true;
    int k;
    char name[sizeof e->env_name[0] + 1];
    while ((k = next_member(r, &first, name, sizeof name)) == 1) {
        if (e->nenv == PLAN_MAX_ENV)
            return fail(r, "env: too many variables");
        size_t len = strlen(name);
        if (len == 0 || len >= sizeof e->env_name[0])
            return fail(r, "env: a variable name empty or too long");
        memcpy(e->env_name[e->nenv], name, len + 1);
        if (text_value(r, e->env_value[e->nenv], sizeof e->env_value[0]) != 0)
            return -1;
        e->nenv++;
    }
    return k;
}

/* One task object; *match when its name is `task` (then e holds it). */
static int task_object(struct reader *r, const char *task, struct entry *e, bool *match)
{
    struct entry cur;
    memset(&cur, 0, sizeof cur);
    bool first = true;
    int k;
    char key[32];
    while ((k = next_member(r, &first, key, sizeof key)) == 1) {
        int rc;
        if (strcmp(key, "name") == 0)
            rc = text_value(r, cur.name, sizeof cur.name);
        else if (strcmp(key, "cpus") == 0)
            rc = text_value(r, cur.cpus, sizeof cur.cpus), cur.has_cpus = true;
        else if (strcmp(key, "env") == 0)
            rc = env_object(r, &cur);
        else
            rc = value(r, 2);
        if (rc != 0)
            return -1;
    }
    if (k < 0)
        return -1;
    if (strcmp(cur.name, task) == 0 && !*match) {
        *e = cur;
        *match = true;
    }
    return 0;
}

/* Reads the plan; 0 with *match set, or -1 with r->err. */
static int read_plan(struct reader *r, const char *task, struct entry *e, bool *match)
{
    bool version = false, tasks = false, first = true;
    int k;
    char key[32];
    while ((k = next_member(r, &first, key, sizeof key)) == 1) {
        if (strcmp(key, "version") == 0) {
            ws(r);
            version = r->end - r->s >= 1 && *r->s == '1' &&
                      (r->end - r->s == 1 || strchr(" \t\r\n,}", r->s[1]) != NULL);
            if (value(r, 1) != 0)
                return -1;
        } else if (strcmp(key, "tasks") == 0) {
            tasks = true;
            if (!eat(r, '['))
                return fail(r, "tasks: expected an array");
            if (!eat(r, ']')) {
                do {
                    if (task_object(r, task, e, match) != 0)
                        return -1;
                } while (eat(r, ','));
                if (!eat(r, ']'))
                    return fail(r, "tasks: expected , or ]");
            }
        } else if (value(r, 1) != 0) {
            return -1;
        }
    }
    if (k < 0)
        return -1;
    ws(r);
    if (r->s != r->end)
        return fail(r, "text after the plan");
    if (!version || !tasks) {
        snprintf(r->err, sizeof r->err, "it has no \"version\": 1 and \"tasks\"");
        return -1;
    }
    return 0;
}

VLCS_API int vlcs_ctx_apply_plan(vlcs_ctx *h, const char *path, const char *task)
{
    vlcs_ctx *c = ctx_get(h, "applying a plan");
    if (c == NULL)
        return -1;
    if (path == NULL || task == NULL) {
        set_error(VLCS_E_INVALID, "Error applying a plan to context '%s': path and task must not be NULL",
                  c->name);
        return -1;
    }
    FILE *f = fopen(path, "re");
    if (f == NULL) {
        set_error(errno == ENOENT ? VLCS_E_NOT_FOUND : VLCS_E_SYSTEM,
                  "Error applying plan %s to context '%s': %s", path, c->name, strerror(errno));
        return -1;
    }
    char *text = malloc(PLAN_MAX_BYTES);
    struct entry *e = calloc(1, sizeof *e);
    size_t n = text ? fread(text, 1, PLAN_MAX_BYTES, f) : 0;
    fclose(f);
    int rc = -1;
    if (text == NULL || e == NULL) {
        set_error(VLCS_E_SYSTEM, "Error applying plan %s: out of memory", path);
        goto out;
    }
    if (n == PLAN_MAX_BYTES) {
        set_error(VLCS_E_INVALID, "Error applying plan %s: larger than %d MiB; not a plan vlcs tune wrote",
                  path, PLAN_MAX_BYTES >> 20);
        goto out;
    }
    struct reader r = {text, text, text + n, ""};
    bool match = false;
    if (read_plan(&r, task, e, &match) != 0) {
        set_error(VLCS_E_INVALID, "Error applying plan %s: not a plan written by vlcs tune (%s)", path,
                  r.err);
        goto out;
    }
    if (!match || !e->has_cpus) {
        set_error(VLCS_E_NOT_FOUND, "Error applying plan %s: it has no task '%s'%s", path, task,
                  match ? " with CPUs" : "");
        goto out;
    }
    /* Checked before anything changes: the CPUs, then the names. */
    vmask m;
    char why[256];
    if (cpus_parse(e->cpus, &m, why, sizeof why) != 0) {
        set_error(VLCS_E_INVALID, "Error applying plan %s: task '%s': %s", path, task, why);
        goto out;
    }
    int outside = mask_first_outside(&m, process_mask());
    if (outside >= 0) {
        set_error(VLCS_E_INVALID, "Error applying plan %s: it gives task '%s' CPUs %s, but this process "
                  "cannot use CPU %d; the plan was made for another machine: tune again here",
                  path, task, e->cpus, outside);
        goto out;
    }
    for (int i = 0; i < e->nenv; i++)
        if (e->env_name[i][0] == '\0' || strchr(e->env_name[i], '=') != NULL) {
            set_error(VLCS_E_INVALID, "Error applying plan %s: task '%s': bad variable name \"%s\"",
                      path, task, e->env_name[i]);
            goto out;
        }
    if (vlcs_ctx_set_cpus(c->handle, e->cpus) != 0)
        goto out;
    for (int i = 0; i < e->nenv; i++)
        if (ctx_setenv(c, e->env_name[i], e->env_value[i]) != 0)
            goto out;
    rc = 0;
out:
    free(text);
    free(e);
    return rc;
}
