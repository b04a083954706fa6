/* test-coll-one-rank.h: a backend's collectives in a communicator of one,
 * with no MPI (test-coll-one-rank.c): shared by test-gpu-modes (the CUDA
 * backend's NCCL) and test-async (the asynchronous test double). */
#pragma once

#include "tach-backend.h"

G_BEGIN_DECLS

typedef struct {
  const char *device_id;
  gboolean    halves;   /* the backend packs fp16 and bf16 (the double does not) */
} TestCollCase;

/* A GTest data function: @data is a TestCollCase. */
void test_coll_one_rank (gconstpointer data);

G_END_DECLS
