/* test-coll-one-rank.c: a backend's collectives (the CUDA backend's NCCL)
 * in a communicator of one, with no MPI: what data-parallel ranks on GPUs
 * rely on, checked by the GPU tests on a host whose MPI cannot start (and
 * by test-async on the asynchronous test double, fp32 only).
 *
 * Made an id, joined as rank 0 of 1, each all-reduce (a sum over one
 * rank: the buffer as it was) in fp32 on the compute stream and on the
 * side stream ordered by events both ways, then, where the backend packs
 * halves, fp16 and bf16 packed, all-reduced and unpacked against the CPU's
 * casts (tach-ranks.h), bit for bit; every unpack divides by its divisor;
 * left as a run's end leaves (destroy, not abort).
 */
#include <string.h>

#include "test-coll-one-rank.h"
#include "tach-ranks.h"

/* Not a multiple of any block or vector width. */
#define N 4099

static void
assert_ok (TachBackend *be, const char *what)
{
  g_autoptr(GError) error = NULL;

  tach_backend_synchronize (be);
  tach_backend_take_error (be, &error);
  if (error != NULL)
    g_error ("%s: %s", what, error->message);
}

/* Values with bits below fp16's and bf16's, of both signs and several
 * magnitudes (within fp16's range). */
static void
fill (float *host)
{
  for (guint i = 0; i < N; i++)
    host[i] = (float) ((i % 2 ? -1.0 : 1.0) * (i + 1) / 3.0 * (1 << (i % 7)) / 64.0);
}

static void
check_fp32 (TachBackend *be, float *buf, float *copy, const float *host, gboolean side)
{
  const TachBackendOps *ops = be->ops;
  g_autofree float *back = g_new (float, N);
  TachEvent *ready = tach_event_new (be), *done = tach_event_new (be);

  if (side)
    {
      /* The side stream's work after the compute stream's upload, and the
       * compute stream's copy of its result after it: the host's / 2 only
       * in that order (the double makes the upload and the all-reduce
       * slow, so that either order missing shows). */
      tach_backend_upload_async (be, buf, host, N * sizeof (float));
      tach_event_record (be, ready);
      ops->side_wait (be, ready);
      ops->coll_allreduce (be, buf, N, TACH_GRAD_COMPRESS_NONE, TRUE);
      ops->coll_unpack (be, NULL, buf, N, TACH_GRAD_COMPRESS_NONE, 2.0f, TRUE);
      ops->side_record (be, done);
      tach_backend_stream_wait (be, done);
      tach_backend_copy (be, copy, buf, N * sizeof (float));
    }
  else
    {
      tach_backend_upload (be, buf, host, N * sizeof (float));
      ops->coll_allreduce (be, buf, N, TACH_GRAD_COMPRESS_NONE, FALSE);
      ops->coll_unpack (be, NULL, buf, N, TACH_GRAD_COMPRESS_NONE, 2.0f, FALSE);
      tach_backend_copy (be, copy, buf, N * sizeof (float));
    }
  tach_backend_download (be, back, copy, N * sizeof (float));
  assert_ok (be, side ? "fp32 on the side stream" : "fp32 on the compute stream");
  if (side)
    g_assert_true (ops->event_query (be, done));
  for (guint i = 0; i < N; i++)
    if (back[i] != host[i] / 2.0f)
      g_error ("fp32 on the %s stream: element %u is %.9g, expected %.9g",
               side ? "side" : "compute", i, back[i], host[i] / 2.0f);
  tach_event_free (be, ready);
  tach_event_free (be, done);
}

static void
check_halves (TachBackend *be, float *buf, const float *host, TachGradCompress compress)
{
  const TachBackendOps *ops = be->ops;
  gboolean bf16 = compress == TACH_GRAD_COMPRESS_BF16;
  guint16 *wire = tach_backend_alloc (be, N * sizeof (guint16));
  g_autofree guint16 *wire_back = g_new (guint16, N);
  g_autofree float *back = g_new (float, N);

  /* On the compute stream (fused's), where the downloads wait for them. */
  tach_backend_upload (be, buf, host, N * sizeof (float));
  ops->coll_pack (be, buf, wire, N, compress, FALSE);
  ops->coll_allreduce (be, wire, N, compress, FALSE);
  tach_backend_download (be, wire_back, wire, N * sizeof (guint16));
  ops->coll_unpack (be, wire, buf, N, compress, 2.0f, FALSE);
  tach_backend_download (be, back, buf, N * sizeof (float));
  assert_ok (be, bf16 ? "bf16" : "fp16");
  for (guint i = 0; i < N; i++)
    {
      guint16 cast = bf16 ? tach_grad_float_to_bf16 (host[i]) : tach_grad_float_to_fp16 (host[i]);
      float widened = bf16 ? tach_grad_bf16_to_float (cast) : tach_grad_fp16_to_float (cast);

      if (wire_back[i] != cast)
        g_error ("%s: element %u (%.9g) packed as 0x%04x, the CPU's cast 0x%04x",
                 bf16 ? "bf16" : "fp16", i, host[i], wire_back[i], cast);
      if (back[i] != widened / 2.0f)
        g_error ("%s: element %u unpacked as %.9g, expected %.9g", bf16 ? "bf16" : "fp16", i,
                 back[i], widened / 2.0f);
    }
  tach_backend_dealloc (be, wire);
}

void
test_coll_one_rank (gconstpointer data)
{
  const TestCollCase *c = data;
  g_autoptr(GError) error = NULL;
  TachBackend *be = tach_backend_new (c->device_id, 0, TACH_PRECISION_FP32, &error);
  guint8 id[TACH_COLL_ID_BYTES] = { 0 };
  g_autofree float *host = g_new (float, N);
  float *buf, *copy;

  g_assert_no_error (error);
  if (be->ops->coll_new_id == NULL)
    {
      g_test_skip ("a build without NCCL's header: no collectives");
      tach_backend_free (be);
      return;
    }
  be->ops->coll_new_id (be, id);
  tach_backend_take_error (be, &error);
  if (error != NULL && strstr (error->message, "NCCL could not be loaded") != NULL)
    {
      g_test_skip (error->message);
      tach_backend_free (be);
      return;
    }
  g_assert_no_error (error);
  be->ops->coll_join (be, id, 0, 1);
  assert_ok (be, "the join");
  fill (host);
  buf = tach_backend_alloc (be, N * sizeof (float));
  copy = tach_backend_alloc (be, N * sizeof (float));
  check_fp32 (be, buf, copy, host, FALSE);
  check_fp32 (be, buf, copy, host, TRUE);
  if (c->halves)
    {
      check_halves (be, buf, host, TACH_GRAD_COMPRESS_FP16);
      check_halves (be, buf, host, TACH_GRAD_COMPRESS_BF16);
    }
  be->ops->coll_leave (be, FALSE);
  assert_ok (be, "leaving");
  tach_backend_dealloc (be, buf);
  tach_backend_dealloc (be, copy);
  tach_backend_free (be);
}
