/* api/hf_map: the one statement of how this project's parameters and a
 * Hugging Face checkpoint's tensors correspond, for GPT-2 (GPT2LMHeadModel)
 * and Llama / Mixtral (LlamaForCausalLM, MixtralForCausalLM). Both
 * directions read it: api/export_hf writes each piece, api/import_hf puts
 * each piece back. hf_map.c holds the table: a rule per tensor with our
 * parameter's name and Hugging Face's (patterns: {L} the layer, {E} the
 * expert), the block of our parameter it is (rows x cols of a row-major
 * parameter cols wide, from a given row) and how Hugging Face stores that
 * block: as is, transposed (GPT-2's Conv1D keeps (in, out)), with each
 * head's rows in Hugging Face's RoPE halves (hp_hf_rope_row), 1-D, or as a
 * vocabulary table (our first V of Vp rows). A fused parameter split into
 * several tensors (Llama's kv and gate_up, Mixtral's expert stacks) is
 * several rules on it; GPT-2's c_attn stays fused. hp_hf_pieces expands the
 * table for one model's shape into concrete pieces, in the order the export
 * writes them. */
#ifndef HP_API_HF_MAP_H
#define HP_API_HF_MAP_H

#include <stdint.h>

#include <hyperpar/hyperpar.h>

#include "core/graph.h"

typedef struct {
    char ours[HP_NAME_LEN];  /* our parameter */
    char hf[128];            /* Hugging Face's tensor */
    int64_t r0, rows, cols;  /* our block: rows [r0, r0 + rows) of the parameter, cols wide */
    int transpose;           /* stored [cols, rows] */
    int64_t rope_hs;         /* > 0: each head of rope_hs rows stored in Hugging Face's RoPE halves */
    int vector;              /* stored 1-D [rows * cols] */
    int vocab;               /* a vocabulary table: the parameter's rows past r0 + rows are padding (cut on
                              * export, zero on import) */
} hp_hf_piece;

/* The pieces of a model of `family` ("gpt2", or "llama"/"moe": the Llama table, Mixtral's experts when
 * c->experts > 0) and shape c: *out malloc'd, *n of them, in the export's order. */
hp_status hp_hf_pieces(hp_hf_piece **out, int *n, const char *family, const hp_model_config *c);

/* A Llama's MLP width (c->ffn, or 8C/3 rounded up to a multiple of 256) and each expert's (c->expert_ffn, or
 * the MLP's): the sizes the table and config.json's intermediate_size use. */
void hp_hf_ffn_widths(int64_t *ffn, int64_t *expert_ffn, const hp_model_config *c);

/* Hugging Face's RoPE layout of one head of hs rows: the row of ours (interleaved pairs (2i, 2i + 1)) that
 * Hugging Face's row j (halves (i, i + hs/2)) holds: 2j for j < hs/2, 2(j - hs/2) + 1 after. */
int64_t hp_hf_rope_row(int64_t j, int64_t hs);

#endif
