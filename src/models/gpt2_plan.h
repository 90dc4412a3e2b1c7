/* models/gpt2_plan: GPT-2's default sharding plan (the model owns its plan).
 * The plan file format and the hp_plan C API it is built with live in
 * layout/plan.h; this file only says how GPT-2's tensors are laid out. */
#ifndef HP_MODELS_GPT2_PLAN_H
#define HP_MODELS_GPT2_PLAN_H

#include "layout/plan.h"

/* GPT-2 with data and Megatron-style tensor parallelism on mesh
 * "dp=DP,tp=TP": tokens and targets S(0)@dp; heads of the fused QKV
 * (weight [3,C,C], bias [3,C]) S(1)@tp; MLP-up weight [4C,C] and bias S(0)@tp
 * (column parallel); attention and MLP output weights S(1)@tp (row parallel,
 * biases R); wte [Vp,C] S(0)@tp (vocabulary-parallel embedding and LM head);
 * everything else R. */
hp_status hp_plan_gpt2_dp_tp(hp_plan *out, int dp, int tp);
/* The same with replicas > 1 on mesh "rep=R,dp=DP,tp=TP" (HSDP: the batch
 * split over rep then dp; FSDP's `fsdp: shard=dp replicate=rep` on top). */
hp_status hp_plan_gpt2(hp_plan *out, int replicas, int dp, int tp);
/* The same with pp > 1 pipeline stages on mesh "pp=PP,[rep=R,]dp=DP,tp=TP" (pp outermost; nothing is laid
 * out along pp: parallel/pp_pass cuts the model into stages). */
hp_status hp_plan_gpt2_pp(hp_plan *out, int pp, int replicas, int dp, int tp);
/* The same for a model family by name ("gpt2" and "pangu": GPT-2's rules; "llama": the query and kv heads,
 * the MLP's hidden width and the untied embedding's and head's vocabulary cut along tp). */
hp_status hp_plan_model_pp(hp_plan *out, const char *family, int pp, int replicas, int dp, int tp);
/* The same with ep > 1 expert-parallel members ("moe" only): mesh "[pp=PP,][rep=R,]dp=DP,ep=EP,tp=TP", the batch
 * split over rep, dp and ep, the routed experts' stacks split by expert along ep (each member owns E/EP
 * experts; parallel/ep). */
hp_status hp_plan_model_ep(hp_plan *out, const char *family, int pp, int replicas, int dp, int ep, int tp);

#endif
