/* core/coll_desc: what a communicating operator says it does. Each such
 * operator's hp_opdef.describe fills one from a node; the schedule, the plan
 * report, the trace and validation read it instead of recognising operators
 * by pointer. */
#ifndef HP_CORE_COLL_DESC_H
#define HP_CORE_COLL_DESC_H

typedef enum {
    HP_COLL_ALL_REDUCE,
    HP_COLL_ALL_GATHER,
    HP_COLL_REDUCE_SCATTER,
    HP_COLL_ALL_TO_ALL, /* per-peer counts */
    HP_COLL_SEND,
    HP_COLL_RECV,
    HP_COLL_BROADCAST,
    HP_COLL_REDISTRIBUTE /* a layout change: the steps of the rank context's plan `plan` */
} hp_coll_kind;

typedef enum {
    HP_COLL_BLOCKING, /* the call communicates and returns when done */
    HP_COLL_START,    /* starts a transfer that a later wait with the same pair completes */
    HP_COLL_WAIT      /* completes the transfer its start began */
} hp_coll_role;

/* The group a collective runs over. */
typedef enum {
    HP_COLL_GROUP_AXIS,          /* the rank's group along mesh axis `axis` */
    HP_COLL_GROUP_WORLD,         /* every rank */
    HP_COLL_GROUP_PLAN,          /* the axes the redistribution plan's steps name */
    HP_COLL_GROUP_FSDP_SHARD,    /* the FSDP plan's shard group (unit `unit`) */
    HP_COLL_GROUP_FSDP_REPLICAS  /* the FSDP plan's replica group (unit `unit`) */
} hp_coll_group;

/* How a wait finds its start: both carry the same pair key in one space. */
typedef enum {
    HP_COLL_PAIR_NONE, /* blocking */
    HP_COLL_PAIR_SLOT, /* the rank context's request slot (parallel/rank.h) */
    HP_COLL_PAIR_UNIT  /* the FSDP unit: its gather, or its reduction's stages */
} hp_coll_pair;

/* What validation compares at this node against the one-rank reference. */
typedef enum {
    HP_COLL_CHECK_NONE,
    HP_COLL_CHECK_VALUE,  /* the output: the value it stands for, in the plan's target layout */
    HP_COLL_CHECK_PARAMS, /* the unit's gathered parameters (its extra inputs) */
    HP_COLL_CHECK_SHARD   /* input `check_in`: the unit's reduced gradient shard, once no replica
                             all-reduce is left (a START into the replicas checks only without replicas) */
} hp_coll_check;

typedef struct {
    hp_coll_kind kind;
    hp_coll_role role;
    hp_coll_group group;
    int axis;           /* HP_COLL_GROUP_AXIS: the mesh axis; else -1 */
    int plan;           /* HP_COLL_REDISTRIBUTE: the rank context's plan index; else -1 */
    int unit;           /* FSDP groups: the unit; else -1 */
    int peer;           /* send, recv: the other member's index in the group; else -1 */
    int grad;           /* 1: a parameter gradient's reduction (backward) */
    hp_coll_pair pair;  /* how a wait finds its start */
    int pair_key;       /* the slot or unit both halves carry; -1 when blocking */
    double bytes;       /* bytes of one call as the trace counts them (a slot wait: its start's) */
    hp_coll_check check;
    int check_in;       /* HP_COLL_CHECK_SHARD: which input holds the shard */
    const char *purpose; /* what it is for, for reports ("gradient norm"); NULL: nothing to add */
} hp_coll_desc;

#endif
