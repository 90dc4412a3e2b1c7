/* Fuzz target: the sharding-plan parser (layout/plan, with the mesh and
 * layout text forms and the FSDP lines, layout/plan_fsdp, under it). Any input either fails with a message or
 * gives a plan that prints to text which parses back to the same plan;
 * lookups of a few GPT-2 names give a layout or a message. Reading the
 * input as a file (hp_plan_load; one input in 16) gives the same plan or
 * also fails. */
#include "fuzz_util.h"
#include "layout/plan.h"
#include "io/plan_file.h"

static int same_rules(const hp_plan_rule *a, const hp_plan_rule *b, int n) {
    for (int i = 0; i < n; i++)
        if (strcmp(a[i].pattern, b[i].pattern) || !hp_layout_eq(&a[i].layout, &b[i].layout)) return 0;
    return 1;
}

static int same_fsdp(const hp_fsdp_spec *a, const hp_fsdp_spec *b) {
    if (a->level != b->level || a->nunits != b->nunits) return 0;
    if (a->level > 0 &&
        (a->shard_axis != b->shard_axis || a->replicate_axis != b->replicate_axis ||
         a->reshard_after_forward != b->reshard_after_forward || a->prefetch != b->prefetch ||
         a->reduce_bf16 != b->reduce_bf16 || a->gather_bf16 != b->gather_bf16 || a->style != b->style || a->unit_bytes != b->unit_bytes ||
         a->keep_bytes != b->keep_bytes))
        return 0;
    for (int i = 0; i < a->nunits; i++) {
        const hp_fsdp_unit_rule *u = &a->units[i], *v = &b->units[i];
        if (strcmp(u->name, v->name) || u->nglobs != v->nglobs) return 0;
        for (int k = 0; k < u->nglobs; k++)
            if (strcmp(u->globs[k], v->globs[k])) return 0;
    }
    return 1;
}

static int same_plan(const hp_plan *a, const hp_plan *b) {
    if (a->mesh.ndim != b->mesh.ndim || a->nparams != b->nparams || a->ninputs != b->ninputs) return 0;
    if (!same_fsdp(&a->fsdp, &b->fsdp)) return 0;
    for (int i = 0; i < a->mesh.ndim; i++)
        if (a->mesh.size[i] != b->mesh.size[i] || strcmp(a->mesh.name[i], b->mesh.name[i])) return 0;
    return same_rules(a->params, b->params, a->nparams) && same_rules(a->inputs, b->inputs, a->ninputs);
}

/* Reading the input as a file gives the same plan as parsing it, or also
 * fails (a NUL byte is refused there); p is the parse's plan or NULL. */
static void check_load(const uint8_t *data, size_t size, const hp_plan *p) {
    char path[128];
    fuzz_write_file(path, sizeof path, "in.plan", data, size);
    hp_plan f;
    hp_status e = hp_plan_load(&f, path);
    unlink(path);
    FUZZ_CHECK(!e == (p != NULL));
    if (fuzz_err(e)) return;
    FUZZ_CHECK(same_plan(p, &f));
    hp_plan_free(&f);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    int through_file = fuzz_sample(data, size, 16) || size >= 4000; /* a file is slower: a sample */
    /* The parser reads NUL-terminated text (hp_plan_load refuses a NUL). */
    if (memchr(data, 0, size)) {
        if (through_file) check_load(data, size, NULL);
        return 0;
    }
    char *text = malloc(size + 1);
    FUZZ_CHECK(text != NULL);
    memcpy(text, data, size);
    text[size] = 0;
    hp_plan p;
    hp_status e = hp_plan_parse(&p, text, "fuzz.plan");
    free(text);
    if (through_file) check_load(data, size, e ? NULL : &p);
    if (fuzz_err(e)) return 0;

    FUZZ_CHECK(p.mesh.ndim >= 1 && p.mesh.ndim <= HP_MESH_MAX_DIMS && hp_mesh_size(&p.mesh) >= 1);
    const hp_fsdp_spec *f = &p.fsdp;
    FUZZ_CHECK(f->level >= 0 && f->level <= 3 && f->nunits >= 0);
    if (f->level > 0) {
        FUZZ_CHECK(f->shard_axis >= 0 && f->shard_axis < p.mesh.ndim && f->shard_axis != f->replicate_axis);
        FUZZ_CHECK(f->replicate_axis >= -1 && f->replicate_axis < p.mesh.ndim);
    }
    for (int i = 0; i < f->nunits; i++) FUZZ_CHECK(f->units[i].name[0] && f->units[i].nglobs > 0);
    static const struct {
        const char *name;
        int is_input, ndim;
    } names[] = {{"wte", 0, 2}, {"h.0.attn.qkv.weight", 0, 3}, {"h.11.mlp.fc.bias", 0, 1}, {"lnf.weight", 0, 1},
                 {"tokens", 1, 2}, {"targets", 1, 2}};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        hp_layout l;
        if (!fuzz_err(hp_plan_layout_of(&l, &p, names[i].name, names[i].is_input, names[i].ndim)))
            FUZZ_CHECK(l.ndim == p.mesh.ndim);
    }

    size_t n = hp_plan_str_size(&p);
    char *printed = malloc(n);
    FUZZ_CHECK(printed != NULL);
    hp_plan_str(printed, n, &p);
    FUZZ_CHECK(strlen(printed) + 1 == n);
    hp_plan q;
    e = hp_plan_parse(&q, printed, "printed");
    if (e) fprintf(stderr, "printed plan:\n%s\ndoes not parse: %s\n", printed, hp_status_msg(e));
    FUZZ_CHECK(e == HP_OK);
    FUZZ_CHECK(same_plan(&p, &q));
    hp_plan_free(&q);
    free(printed);
    hp_plan_free(&p);
    return 0;
}
