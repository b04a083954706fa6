/* tach-presets.c: the named combinations of modes that reproduce each
 * reported framework behaviour, plus "tuned", the fastest correct one.
 *
 * A preset's settings are plain "key=value" strings applied by
 * tach_config_apply_settings() (public: the tests write their settings the
 * same way), which parses each value with tach_config_set().  Settings that
 * only a GPU can do (CUDA graphs) live apart in gpu_settings and are applied
 * only where config->device can do them: a preset never asks a device for
 * what it cannot do.
 *
 * One unit with tach-config.c, tach-knobs.c and tach-knob-words.c: the
 * knob table and the configuration it parses into (tach-knobs.c's opening
 * comment says why; tools/folder-arrows.py lists the four as one).
 */
#include <string.h>

#include <glib/gi18n-lib.h>

#include "tach-backend.h"
#include "tach-error-private.h"
#include "tach-config-private.h"

/* The data-parallel presets (horovod-no-overlap, horovod, ddp) set the
 * gradient-synchronisation knobs as the report or the framework's defaults
 * did, and every other mode knob as tuned does: those reports compare the
 * same training step on one and on several GPUs, so that only the
 * synchronisation differs, and so explain's gap between them and tuned is
 * the synchronisation's alone.  A workload's tuned modes and the three
 * reference synchronisations are each written once, here. */
#define BILSTM_TUNED "layout=batch-major rnn=fused feed=resident sync=end metrics=none"
#define LSTM_LM_TUNED "rnn=fused call-setup=persistent sampling=device sync=end"
#define CNN_TUNED "feed=resident sync=end metrics=none"
#define GPT_TUNED "attention=fused kv-cache=static fusion=elementwise sampling=device " \
  "feed=resident sync=end metrics=none"
#define SYNC_HOROVOD_NO_OVERLAP " grad-sync=per-tensor bucket-mb=64 grad-compress=none"
#define SYNC_HOROVOD " grad-sync=fused bucket-mb=64 grad-compress=none"
#define SYNC_DDP " grad-sync=overlap bucket-mb=25 grad-compress=none"
/* Gradient accumulation under DDP, 4 micro-batches an update (the cosmos
 * report's grad_accum_iter=4), with and without no_sync. */
#define ACCUMULATE_EVERY " accumulate=4 accumulate-sync=every"
#define ACCUMULATE_LAST " accumulate=4 accumulate-sync=last"
/* DeepSpeed's ZeRO stage 2 with its defaults: the gradients reduced as
 * their bucket of reduce_bucket_size fills, which none of these models'
 * gradients does, so once after backward. */
#define SYNC_ZERO2 " grad-sync=fused bucket-mb=1907 grad-compress=none shard=grads"
/* PyTorch FSDP's defaults: every layer a unit, gathered before its forward
 * and its backward, each unit's gradients reduce-scattered as its
 * backward ends, the next unit's all-gather prefetched. */
#define SYNC_FSDP " grad-sync=overlap grad-compress=none shard=all shard-prefetch=next"
/* tuned's synchronisation: the fastest of the correct ones with 2 ranks on
 * this project's 2-core machine (bench/run-mpi.sh measures them side by
 * side; see the commit that set it). */
#define SYNC_TUNED " grad-sync=overlap bucket-mb=25 grad-compress=none"

#define WHY_HOROVOD_NO_OVERLAP \
  N_("grad-sync=per-tensor: horovod#889 (TensorFlow 1.12, Horovod 0.16.0, ResNet-50 on 4 V100 " \
     "of one server, batch 64 per GPU): the timeline shows Horovod's all-reduces not " \
     "overlapping backward, 2.62 steps/s on 4 GPUs against 3.81 on one\n" \
     "bucket-mb=64: HOROVOD_FUSION_THRESHOLD's default in Horovod 0.16 (docs/tensor-fusion.rst, " \
     "64 MB; 128 MB since 0.21); per-tensor all-reduces have no buckets\n" \
     "grad-compress=none: hvd.DistributedOptimizer's default compression, Compression.none " \
     "(horovod/tensorflow/__init__.py)\n" \
     "the other modes as tuned, kernels launched one by one: the report compares the same step " \
     "on one GPU and on four")
#define WHY_HOROVOD \
  N_("grad-sync=fused: Horovod's tensor fusion copies the ready gradients into one buffer and " \
     "all-reduces it once, after backward here (docs/tensor-fusion.rst)\n" \
     "bucket-mb=64: HOROVOD_FUSION_THRESHOLD's default in Horovod 0.16 (docs/tensor-fusion.rst, " \
     "64 MB; 128 MB since 0.21), more than these models' gradients: one fused all-reduce\n" \
     "grad-compress=none: hvd.DistributedOptimizer's default compression, Compression.none " \
     "(horovod/tensorflow/__init__.py)\n" \
     "the other modes as tuned, kernels launched one by one: the same step as one process's " \
     "fastest")
#define WHY_DDP \
  N_("grad-sync=overlap: PyTorch DistributedDataParallel's Reducer all-reduces each bucket " \
     "asynchronously as backward completes it, in reverse order of the parameters " \
     "(docs/source/notes/ddp.rst; torch/nn/parallel/distributed.py)\n" \
     "bucket-mb=25: DDP's bucket_cap_mb default (torch/nn/parallel/distributed.py); the first " \
     "bucket is smaller\n" \
     "grad-compress=none: DDP registers no communication hook unless asked " \
     "(fp16_compress_hook is opt-in, torch/distributed/algorithms/ddp_comm_hooks)\n" \
     "the other modes as tuned, kernels launched one by one: the same step as one process's " \
     "fastest")
#define WHY_DDP_ACCUMULATE \
  N_("grad-sync=overlap: DDP's Reducer, as in the ddp preset (torch/nn/parallel/distributed.py)\n" \
     "bucket-mb=25: DDP's bucket_cap_mb default (torch/nn/parallel/distributed.py)\n" \
     "grad-compress=none: no communication hook\n" \
     "accumulate=4: a loop that runs forward and backward on 4 micro-batches before each " \
     "optimizer.step(), as NVIDIA/cosmos-framework issue 161 ran it (trainer.grad_accum_iter=4)\n" \
     "accumulate-sync=every: no no_sync() around the first three: DDP's forward calls " \
     "reducer.prepare_for_backward whenever require_backward_grad_sync is set " \
     "(torch/nn/parallel/distributed.py, DistributedDataParallel.forward), so every backward " \
     "all-reduces its buckets; the report's ddp_sync_grad (cosmos_framework/utils/distributed.py) " \
     "did nothing for its FSDP2 modules: 430.6 s an iteration, 4 x 110.2 s\n" \
     "the other modes as tuned, kernels launched one by one: the same step as one process's " \
     "fastest")
#define WHY_DDP_NO_SYNC \
  N_("grad-sync=overlap: DDP's Reducer, as in the ddp preset (torch/nn/parallel/distributed.py)\n" \
     "bucket-mb=25: DDP's bucket_cap_mb default (torch/nn/parallel/distributed.py)\n" \
     "grad-compress=none: no communication hook\n" \
     "accumulate=4: 4 micro-batches before each optimizer.step(), as in ddp-accumulate\n" \
     "accumulate-sync=last: the first three forward and backward passes inside " \
     "DistributedDataParallel.no_sync(), which clears require_backward_grad_sync so that forward " \
     "does not prepare the Reducer and backward all-reduces nothing; the gradients accumulate " \
     "and the last backward, outside it, all-reduces their sum (torch/nn/parallel/distributed.py; " \
     "the fix of NVIDIA/cosmos-framework PR 162)\n" \
     "the other modes as tuned, kernels launched one by one: the same step as one process's " \
     "fastest")
#define WHY_ZERO2 \
  N_("shard=grads: DeepSpeed's ZeRO stage 2, zero_optimization.stage=2 " \
     "(deepspeed/runtime/zero/stage_1_and_2.py, DeepSpeedZeroOptimizer): the gradients " \
     "reduce-scattered (reduce_scatter's default, true), each rank stepping the optimizer over " \
     "its partition with the optimizer state of that partition alone, the updated partitions " \
     "all-gathered\n" \
     "grad-sync=fused: reduce_bucket_size's default of 5e8 elements is more than these models' " \
     "gradients, so the bucket is reduced once, as backward ends (overlap_comm's default, " \
     "false, puts it on no side stream)\n" \
     "bucket-mb=1907: 5e8 fp32 elements, reduce_bucket_size's default (docs: DeepSpeed " \
     "configuration JSON, zero_optimization); fused has no smaller buckets\n" \
     "grad-compress=none: the gradients reduced in the training precision, fp32 here\n" \
     "the other modes as tuned, kernels launched one by one: the same step as one process's " \
     "fastest")
#define WHY_FSDP \
  N_("shard=all: PyTorch FullyShardedDataParallel's default sharding_strategy, " \
     "ShardingStrategy.FULL_SHARD (torch/distributed/fsdp/fully_sharded_data_parallel.py, " \
     "torch/distributed/fsdp/api.py): each unit's parameters all-gathered before its forward, " \
     "resharded after it, all-gathered again before its backward and resharded after; its " \
     "gradients reduce-scattered; each rank stepping the optimizer over its shard; the root " \
     "unit (gpt's embeddings, tied to its LM head) kept through the step\n" \
     "shard-prefetch=next: backward_prefetch's default, BackwardPrefetch.BACKWARD_PRE, issues " \
     "the next unit's all-gather before this unit's gradient computation; in forward FSDP " \
     "leaves forward_prefetch False because its CPU thread issues the next all-gather while the " \
     "GPU still computes this unit, which Tach's CPU path, whose ops finish as they return, can " \
     "only do by prefetching\n" \
     "grad-sync=overlap: each unit's reduce-scatter starts as its backward ends (FSDP's " \
     "post-backward hook); the units are the buckets, so bucket-mb does not apply\n" \
     "grad-compress=none: no mixed_precision by default: the gradients reduced in fp32\n" \
     "the other modes as tuned, kernels launched one by one: the same step as one process's " \
     "fastest")
/* The data-parallel presets of a training workload, whose tuned modes are
 * @tuned. */
#define BETWEEN_RANKS(workload, tuned) \
  { "horovod-no-overlap", workload, \
    N_("Horovod as horovod#889 ran it: an all-reduce per tensor after backward, no overlap"), \
    tuned SYNC_HOROVOD_NO_OVERLAP, NULL, WHY_HOROVOD_NO_OVERLAP, TRUE }, \
  { "horovod", workload, \
    N_("Horovod's tensor fusion: one all-reduce of every gradient after backward"), \
    tuned SYNC_HOROVOD, NULL, WHY_HOROVOD, TRUE }, \
  { "ddp", workload, \
    N_("PyTorch DDP's defaults: 25 MB buckets all-reduced while backward goes on"), \
    tuned SYNC_DDP, NULL, WHY_DDP, TRUE }, \
  { "ddp-accumulate", workload, \
    N_("DDP accumulating 4 micro-batches an update, all-reduced after every one of them"), \
    tuned SYNC_DDP ACCUMULATE_EVERY, NULL, WHY_DDP_ACCUMULATE, TRUE }, \
  { "ddp-no-sync", workload, \
    N_("DDP accumulating 4 micro-batches under no_sync: one all-reduce an update, after the " \
       "last"), \
    tuned SYNC_DDP ACCUMULATE_LAST, NULL, WHY_DDP_NO_SYNC, TRUE }, \
  { "zero2", workload, \
    N_("DeepSpeed ZeRO stage 2: gradients reduce-scattered, each rank updating its shard with " \
       "its shard of the optimiser state, parameters all-gathered"), \
    tuned SYNC_ZERO2, NULL, WHY_ZERO2, TRUE }, \
  { "fsdp", workload, \
    N_("PyTorch FSDP's defaults: every layer's parameters sharded and all-gathered before its " \
       "forward and backward, gradients reduce-scattered, the next layer's gather prefetched"), \
    tuned SYNC_FSDP, NULL, WHY_FSDP, TRUE },

/* Each preset sets every mode knob of its workload, and its rationale says,
 * one line per knob ("knob=value: ..."), what in the reported code the value
 * stands for and the framework file and version it comes from. */
static const TachPreset presets[] = {
  /* W1: the order of the report, slowest first. */
  { "tf1-feed-dict", TACH_WORKLOAD_BILSTM,
    N_("TF1 CudnnLSTM fed with feed_dict: batch-major data misread as time-major, "
       "float64 converted and copied every step"),
    "layout=misread rnn=fused feed=host-f64 sync=1 metrics=none", NULL,
    N_("layout=misread: TF 1.8 CudnnLSTM reads its input as [time_len, batch_size, input_size] "
       "(tensorflow/contrib/cudnn_rnn/python/layers/cudnn_rnn.py); the report handed it "
       "(batch, time, features)\n"
       "rnn=fused: CudnnLSTM runs the whole sequence as one CudnnRNN op "
       "(tensorflow/contrib/cudnn_rnn/python/ops/cudnn_rnn_ops.py, TF 1.8)\n"
       "feed=host-f64: Session.run casts every fed array to the placeholder's dtype, "
       "np.asarray(subfeed_val, dtype=subfeed_dtype) (tensorflow/python/client/session.py, "
       "TF 1.8): the report's float64 batch, every step\n"
       "sync=1: Session.run returns once the fetched loss is on the host, once per step "
       "(tensorflow/python/client/session.py, TF 1.8)\n"
       "metrics=none: the report's graph computes the loss alone") },
  { "tf1-constant", TACH_WORKLOAD_BILSTM,
    N_("TF1 CudnnLSTM with the batch embedded as a constant: still misread, no feeding"),
    "layout=misread rnn=fused feed=resident sync=1 metrics=none", NULL,
    N_("layout=misread: TF 1.8 CudnnLSTM reads its input as [time_len, batch_size, input_size] "
       "(tensorflow/contrib/cudnn_rnn/python/layers/cudnn_rnn.py), as in tf1-feed-dict\n"
       "rnn=fused: CudnnLSTM runs the whole sequence as one CudnnRNN op "
       "(tensorflow/contrib/cudnn_rnn/python/ops/cudnn_rnn_ops.py, TF 1.8)\n"
       "feed=resident: the report's variant builds the batch into the graph as a tf.constant, "
       "so Session.run feeds nothing\n"
       "sync=1: Session.run returns once the fetched loss is on the host, once per step "
       "(tensorflow/python/client/session.py, TF 1.8)\n"
       "metrics=none: the report's graph computes the loss alone") },
  { "keras-fit", TACH_WORKLOAD_BILSTM,
    N_("Keras CuDNNLSTM fit: the right layout, the float64 batch cast and copied every step, "
       "the loss read back every step, no metric"),
    "layout=batch-major rnn=fused feed=host-f64 sync=1 metrics=none", NULL,
    N_("layout=batch-major: Keras 2.2.2 CuDNNLSTM transposes to time-major itself, "
       "tf.transpose(inputs, (1, 0, 2)) in _process_batch (keras/layers/cudnn_recurrent.py)\n"
       "rnn=fused: CuDNNLSTM runs the whole sequence as one cuDNN RNN op "
       "(keras/layers/cudnn_recurrent.py, Keras 2.2.2)\n"
       "feed=host-f64: Keras 2.2.2 casts each fed batch to the placeholder's dtype, "
       "np.asarray(value, dtype=...) in Function._call (keras/backend/tensorflow_backend.py): "
       "the report's float64 array, every step\n"
       "sync=1: fit_loop calls the training function once per batch and hands its NumPy loss "
       "to the callbacks (keras/engine/training_arrays.py, Keras 2.2.2)\n"
       "metrics=none: the report compiles with model.compile(loss='binary_crossentropy', "
       "optimizer='adam'), no metrics") },
  BETWEEN_RANKS (TACH_WORKLOAD_BILSTM, BILSTM_TUNED)
  { "tuned", TACH_WORKLOAD_BILSTM,
    N_("The fastest correct combination: resident data, fused RNN, one sync at the end"),
    BILSTM_TUNED SYNC_TUNED, "launch=graph",
    N_("No framework: each knob at its fastest value that keeps the math\n"
       "layout=batch-major: the layout the model means\n"
       "rnn=fused: one library call over the sequence\n"
       "feed=resident: the whole dataset on the device before the first step\n"
       "sync=end: the loss read back once, after the last step\n"
       "metrics=none: no metric work\n"
       "grad-sync=overlap: between ranks, buckets all-reduced while backward goes on\n"
       "bucket-mb=25: buckets of at most 25 MB\n"
       "grad-compress=none: the gradients travel as fp32 (a cast changes the results)\n"
       "launch=graph: on a GPU, each step replayed as one captured CUDA graph") },

  /* W2 */
  { "static-rnn", TACH_WORKLOAD_LSTM_LM,
    N_("TF1 static_rnn + BasicLSTMCell in a persistent session, sampled on the host"),
    "rnn=unrolled call-setup=persistent sampling=host sync=1", NULL,
    N_("rnn=unrolled: tf.nn.static_rnn builds one BasicLSTMCell call per time step of the "
       "4-token context (tensorflow/python/ops/rnn.py, TF 1.x)\n"
       "call-setup=persistent: one tf.Session serves every token; the session caches its "
       "executors per feed and fetch signature (tensorflow/core/common_runtime/direct_session.cc, "
       "GetOrCreateExecutors, TF 1.x)\n"
       "sampling=host: the report's loop picks the next token in NumPy from the fetched "
       "distribution\n"
       "sync=1: each Session.run returns the distribution to the host, once per token "
       "(tensorflow/python/client/session.py, TF 1.x)") },
  { "keras-predict", TACH_WORKLOAD_LSTM_LM,
    N_("TF2 Keras predict per token: setup rebuilt every call, distribution read back"),
    "rnn=fused call-setup=per-call sampling=host sync=1", NULL,
    N_("rnn=fused: on a GPU, keras.layers.LSTM with default arguments runs the cuDNN kernel over "
       "the sequence (tensorflow/python/keras/layers/recurrent_v2.py, TF 2.2, gpu_lstm); "
       "on a CPU TF runs standard_lstm, a loop of cells\n"
       "call-setup=per-call: Model.predict builds a DataHandler (a tf.data pipeline and its "
       "iterator) on every call (tensorflow/python/keras/engine/training.py, TF 2.2)\n"
       "sampling=host: predict returns a NumPy array, and the report's loop picks the next token "
       "from it\n"
       "sync=1: predict returns its NumPy result once per token "
       "(tensorflow/python/keras/engine/training.py, TF 2.2)") },
  BETWEEN_RANKS (TACH_WORKLOAD_LSTM_LM, LSTM_LM_TUNED)
  { "tuned", TACH_WORKLOAD_LSTM_LM,
    N_("The fastest correct combination: fused, persistent, sampled on the device"),
    LSTM_LM_TUNED SYNC_TUNED, "launch=graph",
    N_("No framework: each knob at its fastest value that keeps the math\n"
       "rnn=fused: one library call over the sequence\n"
       "call-setup=persistent: plans built once\n"
       "sampling=device: the next token picked on the device\n"
       "sync=end: results read back once, after the last step\n"
       "grad-sync=overlap: between ranks, buckets all-reduced while backward goes on\n"
       "bucket-mb=25: buckets of at most 25 MB\n"
       "grad-compress=none: the gradients travel as fp32 (a cast changes the results)\n"
       "launch=graph: on a GPU, each step replayed as one captured CUDA graph") },

  /* W3: both of the report's paths read the same input_fn. */
  { "estimator", TACH_WORKLOAD_CNN,
    N_("tf.estimator: the report's tf.data input_fn, the loss fetched by every step's "
       "session run, no metric"),
    "feed=host-f32 sync=1 metrics=none", NULL,
    N_("feed=host-f32: the report's input_fn (tf.data: repeat, map cast, batch, no prefetch) "
       "makes each batch on the host when the step asks for it, so its copy is not overlapped\n"
       "sync=1: the Estimator's loop runs _, loss = mon_sess.run([train_op, loss]) once per step "
       "(tensorflow/python/estimator/estimator.py, TF 1.12, _train_with_estimator_spec); "
       "logging every 100 steps prints a loss that is already on the host\n"
       "metrics=none: training computes no metric; eval_metric_ops run only in evaluate "
       "(tensorflow/python/estimator/model_fn.py, TF 1.12)") },
  { "keras-fit", TACH_WORKLOAD_CNN,
    N_("tf.keras fit: the same input_fn, loss and accuracy read back every step for the "
       "progress bar"),
    "feed=host-f32 sync=1 metrics=accuracy", NULL,
    N_("feed=host-f32: the same input_fn as the estimator preset (tf.data: repeat, map cast, "
       "batch, no prefetch)\n"
       "sync=1: fit_loop runs the training function once per batch and hands its NumPy loss and "
       "accuracy to the callbacks and the progress bar "
       "(tensorflow/python/keras/engine/training_arrays.py, TF 1.12)\n"
       "metrics=accuracy: the report compiles with metrics=['accuracy'], computed every step") },
  BETWEEN_RANKS (TACH_WORKLOAD_CNN, CNN_TUNED)
  { "tuned", TACH_WORKLOAD_CNN,
    N_("The fastest correct combination: resident data, one sync at the end"),
    CNN_TUNED SYNC_TUNED, "launch=graph",
    N_("No framework: each knob at its fastest value that keeps the math\n"
       "feed=resident: the whole dataset on the device before the first step\n"
       "sync=end: the loss read back once, after the last step\n"
       "metrics=none: no metric work\n"
       "grad-sync=overlap: between ranks, buckets all-reduced while backward goes on\n"
       "bucket-mb=25: buckets of at most 25 MB\n"
       "grad-compress=none: the gradients travel as fp32 (a cast changes the results)\n"
       "launch=graph: on a GPU, each step replayed as one captured CUDA graph") },

  /* W4: generation as Hugging Face and nanoGPT run it, then training as
   * build-nanogpt's ladder climbs it, rung by rung.  On the CPU the
   * launch-bound and tensor-core gaps do not exist (no launches, no TF32):
   * what remains is the cache's work per token and attention's memory. */
  { "hf-dynamic", TACH_WORKLOAD_GPT,
    N_("Hugging Face generate's defaults: a DynamicCache grown by torch.cat every token, eager"),
    "attention=fused kv-cache=dynamic fusion=none sampling=device feed=host-f32 sync=1 "
    "metrics=none", NULL,
    N_("attention=fused: GPT2Attention runs torch's scaled_dot_product_attention "
       "(attn_implementation 'sdpa', transformers/models/gpt2/modeling_gpt2.py)\n"
       "kv-cache=dynamic: generate() makes a DynamicCache when no cache_implementation is given; "
       "each layer's update() appends with torch.cat (transformers/cache_utils.py); "
       "huggingface/transformers PR 34923 measured it at 27.08 s on an A100\n"
       "fusion=none: eager PyTorch runs every elementwise op as its own kernel\n"
       "sampling=device: the logits processors and torch.multinomial run on the device "
       "(transformers/generation/utils.py, _sample)\n"
       "feed=host-f32: the tokenizer's input ids are copied to the device per call\n"
       "sync=1: the stopping criteria read the new tokens back every step "
       "(transformers/generation/stopping_criteria.py)\n"
       "metrics=none: generation computes no metric") },
  { "hf-static", TACH_WORKLOAD_GPT,
    N_("Hugging Face's StaticCache without compilation: attention over the whole preallocated "
       "length"),
    "attention=fused kv-cache=static fusion=none sampling=device feed=host-f32 sync=1 "
    "metrics=none", NULL,
    N_("attention=fused: scaled_dot_product_attention, as hf-dynamic "
       "(transformers/models/gpt2/modeling_gpt2.py)\n"
       "kv-cache=static: cache_implementation='static' preallocates every layer's keys and "
       "values and writes each token with index_copy_ (transformers/cache_utils.py, "
       "StaticCache); uncompiled, attention runs over the whole preallocated length, masked, "
       "slower than the dynamic cache (huggingface/transformers PR 40328)\n"
       "fusion=none: uncompiled, every elementwise op its own kernel\n"
       "sampling=device: torch.multinomial on the device (transformers/generation/utils.py)\n"
       "feed=host-f32: the input ids copied per call\n"
       "sync=1: the stopping criteria read the new tokens back every step "
       "(transformers/generation/stopping_criteria.py)\n"
       "metrics=none: generation computes no metric") },
  { "hf-static-compiled", TACH_WORKLOAD_GPT,
    N_("Hugging Face's StaticCache with torch.compile: fixed shapes, fused elementwise kernels"),
    "attention=fused kv-cache=static fusion=elementwise sampling=device feed=host-f32 sync=1 "
    "metrics=none", "launch=graph",
    N_("attention=fused: scaled_dot_product_attention, as hf-dynamic "
       "(transformers/models/gpt2/modeling_gpt2.py)\n"
       "kv-cache=static: the StaticCache that generate() compiles the forward for "
       "(transformers/generation/utils.py, auto-compile since PR 34247); PR 34923 measured "
       "27.08 s -> 6.54 s on an A100 against hf-dynamic\n"
       "fusion=elementwise: torch.compile's Inductor fuses the bias, GELU, residual adds and "
       "the softmax's scaling into the kernels beside them\n"
       "sampling=device: torch.multinomial on the device (transformers/generation/utils.py)\n"
       "feed=host-f32: the input ids copied per call\n"
       "sync=1: the stopping criteria read the new tokens back every step "
       "(transformers/generation/stopping_criteria.py)\n"
       "metrics=none: generation computes no metric\n"
       "launch=graph: on a GPU, each decode step replayed as one captured CUDA graph, its "
       "position read from the device, as mode='reduce-overhead' captures the static cache's "
       "decode (transformers/generation/utils.py); the prompt's prefill stays eager") },
  { "nanogpt-no-cache", TACH_WORKLOAD_GPT,
    N_("nanoGPT's sample.py: every new token recomputes the whole prefix, no KV cache"),
    "attention=fused kv-cache=none fusion=none sampling=device feed=host-f32 sync=end "
    "metrics=none", NULL,
    N_("attention=fused: CausalSelfAttention calls F.scaled_dot_product_attention with "
       "is_causal=True where torch has it (model.py, self.flash)\n"
       "kv-cache=none: GPT.generate runs self(idx_cond) over the whole sequence for every new "
       "token (model.py); karpathy/nanoGPT PR 76 measured GPT-2 on a CPU at 81.6 s, 11.0 s "
       "with a cache, and about the same on an A100\n"
       "fusion=none: sample.py's compile defaults to False (sample.py)\n"
       "sampling=device: torch.multinomial on the device (model.py, generate)\n"
       "feed=host-f32: the prompt's ids copied once (sample.py)\n"
       "sync=end: the tokens are read back once, by decode() after generate (sample.py)\n"
       "metrics=none: generation computes no metric") },
  /* build-nanogpt's ladder (train_gpt2.py, video "Let's reproduce GPT-2"):
   * GPT-2 124M on an A100, fp32 ~1000 ms -> TF32 ~333 -> bf16 ~300 ->
   * torch.compile ~130 -> flash attention ~96 ms a step. */
  { "build-nanogpt-fp32", TACH_WORKLOAD_GPT,
    N_("build-nanogpt's first rung: fp32, the manual attention, eager"),
    "attention=naive fusion=none kv-cache=dynamic sampling=device feed=host-f32 sync=1 "
    "metrics=none precision=fp32", NULL,
    N_("attention=naive: CausalSelfAttention's att = (q @ k.transpose(-2, -1)) * scale, "
       "masked_fill, softmax, att @ v (train_gpt2.py, build-nanogpt's first commits)\n"
       "fusion=none: eager PyTorch, every elementwise op its own kernel\n"
       "kv-cache=dynamic: unused by training\n"
       "sampling=device: unused by training\n"
       "feed=host-f32: DataLoaderLite hands each batch from the host, x.to(device) "
       "(train_gpt2.py)\n"
       "sync=1: torch.cuda.synchronize() and loss.item() every step for the timing print "
       "(train_gpt2.py)\n"
       "metrics=none: the step computes the loss alone\n"
       "precision=fp32: the default float32 matmuls, about 1000 ms a step on an A100") },
  { "build-nanogpt-tf32", TACH_WORKLOAD_GPT,
    N_("build-nanogpt's TF32 rung: the same step, matmuls on tensor cores at TF32 (a GPU's)"),
    "attention=naive fusion=none kv-cache=dynamic sampling=device feed=host-f32 sync=1 "
    "metrics=none", "precision=tf32",
    N_("attention=naive: the manual attention, as build-nanogpt-fp32 (train_gpt2.py)\n"
       "fusion=none: eager\n"
       "kv-cache=dynamic: unused by training\n"
       "sampling=device: unused by training\n"
       "feed=host-f32: DataLoaderLite, as build-nanogpt-fp32 (train_gpt2.py)\n"
       "sync=1: loss.item() every step (train_gpt2.py)\n"
       "metrics=none: the loss alone\n"
       "precision=tf32: torch.set_float32_matmul_precision('high') (train_gpt2.py), ~333 ms; "
       "a GPU's tensor-core mode, so on the CPU this rung runs as fp32") },
  { "build-nanogpt-bf16", TACH_WORKLOAD_GPT,
    N_("build-nanogpt's bf16 rung: the products in bf16 under autocast"),
    "attention=naive fusion=none kv-cache=dynamic sampling=device feed=host-f32 sync=1 "
    "metrics=none", "precision=bf16",
    N_("attention=naive: the manual attention (train_gpt2.py)\n"
       "fusion=none: eager\n"
       "kv-cache=dynamic: unused by training\n"
       "sampling=device: unused by training\n"
       "feed=host-f32: DataLoaderLite (train_gpt2.py)\n"
       "sync=1: loss.item() every step (train_gpt2.py)\n"
       "metrics=none: the loss alone\n"
       "precision=bf16: with torch.autocast(device_type, dtype=torch.bfloat16) around the "
       "forward (train_gpt2.py), ~300 ms; where the backend has bf16 products (the CPU's "
       "gemm_bf16 on AVX-512 BF16), else fp32") },
  { "build-nanogpt-compile", TACH_WORKLOAD_GPT,
    N_("build-nanogpt's torch.compile rung: elementwise ops fused into their neighbours"),
    "attention=naive fusion=elementwise kv-cache=dynamic sampling=device feed=host-f32 sync=1 "
    "metrics=none", "precision=bf16",
    N_("attention=naive: still the manual attention; Inductor fuses around it (train_gpt2.py)\n"
       "fusion=elementwise: model = torch.compile(model) (train_gpt2.py): Inductor fuses the "
       "GELU with its bias, the residual adds and the scaling, ~130 ms; its default mode "
       "captures no CUDA graphs, so launch stays eager\n"
       "kv-cache=dynamic: unused by training\n"
       "sampling=device: unused by training\n"
       "feed=host-f32: DataLoaderLite (train_gpt2.py)\n"
       "sync=1: loss.item() every step (train_gpt2.py)\n"
       "metrics=none: the loss alone\n"
       "precision=bf16: autocast, as the rung below (train_gpt2.py)") },
  { "build-nanogpt-flash", TACH_WORKLOAD_GPT,
    N_("build-nanogpt's flash attention rung: the T x T scores never stored"),
    "attention=fused fusion=elementwise kv-cache=dynamic sampling=device feed=host-f32 sync=1 "
    "metrics=none", "precision=bf16",
    N_("attention=fused: F.scaled_dot_product_attention(q, k, v, is_causal=True) replaces the "
       "manual attention (train_gpt2.py), ~96 ms; on the CPU Tach's own tiled kernel\n"
       "fusion=elementwise: torch.compile, as the rung below (train_gpt2.py)\n"
       "kv-cache=dynamic: unused by training\n"
       "sampling=device: unused by training\n"
       "feed=host-f32: DataLoaderLite (train_gpt2.py)\n"
       "sync=1: loss.item() every step (train_gpt2.py)\n"
       "metrics=none: the loss alone\n"
       "precision=bf16: autocast (train_gpt2.py)") },
  BETWEEN_RANKS (TACH_WORKLOAD_GPT, GPT_TUNED)
  { "tuned", TACH_WORKLOAD_GPT,
    N_("The fastest correct combination: fused attention and elementwise ops, a KV cache, "
       "resident data, one sync at the end"),
    GPT_TUNED SYNC_TUNED, "launch=graph",
    N_("No framework: each knob at its fastest value that keeps the math\n"
       "attention=fused: the scores never stored (faster here for training; decoding about "
       "even)\n"
       "kv-cache=static: no prefix recomputed and no cache regrown every token; on this "
       "project's CPU as fast as dynamic at the default shape, 1.18x at a small one\n"
       "fusion=elementwise: fewer passes over memory\n"
       "sampling=device: the next token picked on the device\n"
       "feed=resident: the whole dataset on the device before the first step\n"
       "sync=end: the loss read back once, after the last step\n"
       "metrics=none: no metric work\n"
       "grad-sync=overlap: between ranks, buckets all-reduced while backward goes on\n"
       "bucket-mb=25: buckets of at most 25 MB\n"
       "grad-compress=none: the gradients travel as fp32 (a cast changes the results)\n"
       "launch=graph: on a GPU, each step replayed as one captured CUDA graph") },
};

const TachPreset *
tach_presets (guint *n_presets)
{
  if (n_presets != NULL)
    *n_presets = G_N_ELEMENTS (presets);
  return presets;
}

GPtrArray *
tach_presets_for_ranks (TachWorkload workload, guint ranks)
{
  GPtrArray *out = tach_presets_for_workload (workload);

  for (guint i = out->len; i-- > 0;)
    if (((const TachPreset *) out->pdata[i])->between_ranks && ranks <= 1)
      g_ptr_array_remove_index (out, i);
  return out;
}

GPtrArray *
tach_presets_for_workload (TachWorkload workload)
{
  GPtrArray *out = g_ptr_array_new ();

  for (guint i = 0; i < G_N_ELEMENTS (presets); i++)
    if (presets[i].workload == workload)
      g_ptr_array_add (out, (gpointer) &presets[i]);
  return out;
}

static const TachPreset *
preset_lookup (TachWorkload workload, const char *name)
{
  for (guint i = 0; i < G_N_ELEMENTS (presets); i++)
    if (presets[i].workload == workload && g_strcmp0 (presets[i].name, name) == 0)
      return &presets[i];
  return NULL;
}

gboolean
tach_config_apply_settings (TachConfig *config, const char *settings, GError **error)
{
  g_auto(GStrv) items = NULL;
  TachConfig scratch;

  g_return_val_if_fail (config != NULL, FALSE);
  if (settings == NULL)
    return TRUE;

  /* Apply to a copy so that a failure leaves the configuration untouched. */
  items = g_strsplit_set (settings, " \t\n", -1);
  tach_config_copy (&scratch, config);
  for (guint i = 0; items[i] != NULL; i++)
    {
      const char *eq = strchr (items[i], '=');
      g_autofree char *key = NULL;

      if (*items[i] == '\0')
        continue;
      if (eq == NULL)
        {
          g_set_error (error, TACH_ERROR, TACH_ERROR_INVALID_CONFIG,
                       _("invalid setting '%s': expected key=value"), items[i]);
          tach_config_clear (&scratch);
          return FALSE;
        }
      key = g_strndup (items[i], eq - items[i]);
      if (!tach_config_set (&scratch, key, eq + 1, error))
        {
          tach_config_clear (&scratch);
          return FALSE;
        }
    }
  tach_config_clear (config);
  *config = scratch;
  return TRUE;
}

/* The id of the device config->device stands for ("auto" resolved), or
 * NULL when it resolves to nothing usable. */
static char *
device_id_for (const TachConfig *config)
{
  g_autoptr(TachDeviceInfo) info = NULL;

  if (config->device == NULL || g_str_equal (config->device, "auto"))
    {
      info = tach_device_resolve ("auto", NULL);
      return info != NULL ? g_strdup (info->id) : NULL;
    }
  return tach_backend_canonical_id (config->device);
}

/* Whether gpu setting @key=@value suits a process that is one of
 * mpirun's ranks: launch=graph does not.  Capturing the step would need
 * the reducer's all-reduces inside the graph, and they are host-driven:
 * the buckets launched as backward reaches them, the packing decided on the
 * host, the communicator's watchdog polled from the host (and on the CPU's
 * MPI path no device work at all), so a GPU run under mpirun refuses
 * launch=graph (tach-run.c, pick_rank_device).  A preset there takes
 * eager launches, the fastest mode that works, and the run says so
 * (tach_config_preset_eager_for_ranks). */
static guint process_ranks;

void
tach_presets_set_process_ranks (guint ranks)
{
  process_ranks = ranks;
}

static gboolean
fits_ranks (const char *key, const char *value)
{
  return process_ranks == 0 || !g_str_equal (key, "launch") || !g_str_equal (value, "graph");
}

/* Each gpu setting goes in where the device's backend supports it (and the
 * ranks, fits_ranks); elsewhere the knob gets its plain default back
 * (@reset), so that moving a tuned configuration from a GPU to the CPU
 * drops launch=graph. */
static void
apply_gpu_settings (TachConfig *config, const TachPreset *preset, gboolean reset)
{
  g_autofree char *id = NULL;
  g_auto(GStrv) items = NULL;
  TachConfig defaults;

  if (preset->gpu_settings == NULL)
    return;
  id = device_id_for (config);
  items = g_strsplit (preset->gpu_settings, " ", -1);
  tach_config_init (&defaults, config->workload);
  for (guint i = 0; items[i] != NULL; i++)
    {
      g_auto(GStrv) kv = g_strsplit (items[i], "=", 2);
      if (g_strv_length (kv) != 2)
        continue;
      if (id != NULL && tach_backend_supports (id, kv[0], kv[1], NULL)
          && fits_ranks (kv[0], kv[1]))
        tach_config_set (config, kv[0], kv[1], NULL);
      else if (reset)
        {
          g_autofree char *plain = tach_config_get (&defaults, kv[0]);

          tach_config_set (config, kv[0], plain, NULL);
        }
    }
  tach_config_clear (&defaults);
}

gboolean
tach_config_apply_preset (TachConfig *config, const char *name, GError **error)
{
  const TachPreset *preset = preset_lookup (config->workload, name);
  TachConfig scratch;

  if (preset == NULL)
    {
      g_autoptr(GPtrArray) mine = tach_presets_for_workload (config->workload);
      g_autoptr(GString) names = g_string_new (NULL);

      for (guint i = 0; i < mine->len; i++)
        g_string_append_printf (names, "%s%s", i > 0 ? ", " : "",
                                ((const TachPreset *) g_ptr_array_index (mine, i))->name);
      g_set_error (error, TACH_ERROR, TACH_ERROR_INVALID_CONFIG,
                   W_("invalid value '%s' for {preset}: expected one of %s (the presets of %s)"),
                   name != NULL ? name : "", names->str,
                   tach_workload_to_string (config->workload));
      tach_error_add_hint (error, TACH_KNOB_PRESET, name, TACH_KNOB_COUNT, NULL, NULL);
      return FALSE;
    }

  /* Apply to a copy so that a failure leaves the configuration untouched. */
  tach_config_copy (&scratch, config);
  tach_config_reset_modes (&scratch);
  if (!tach_config_apply_settings (&scratch, preset->settings, error))
    {
      /* A broken built-in preset is a programming error, but it must still
       * surface as a message rather than a crash. */
      g_prefix_error (error, "preset %s: ", preset->name);
      tach_config_clear (&scratch);
      return FALSE;
    }
  apply_gpu_settings (&scratch, preset, TRUE);
  g_free (scratch.preset);
  scratch.preset = g_strdup (preset->name);

  tach_config_clear (config);
  *config = scratch;
  return TRUE;
}

void
tach_config_reapply_preset_for_device (TachConfig *config)
{
  const TachPreset *preset;

  if (config->preset == NULL)
    return;
  preset = preset_lookup (config->workload, config->preset);
  if (preset != NULL)
    apply_gpu_settings (config, preset, TRUE);
}

gboolean
tach_config_preset_eager_for_ranks (const TachConfig *config)
{
  const TachPreset *preset;
  g_autofree char *id = NULL;

  if (config->preset == NULL || config->launch != TACH_LAUNCH_EAGER
      || fits_ranks ("launch", "graph"))
    return FALSE;
  preset = preset_lookup (config->workload, config->preset);
  if (preset == NULL || preset->gpu_settings == NULL
      || strstr (preset->gpu_settings, "launch=graph") == NULL)
    return FALSE;
  id = device_id_for (config);
  return id != NULL && tach_backend_supports (id, "launch", "graph", NULL);
}

/* The registry asked by a knob's name and value (the knob table's): here,
 * beside the presets that ask it, so that validation stays above the knob
 * table and the presets (nothing of them calls tach-validate.c). */
gboolean
tach_backend_supports (const char *device_id, const char *key, const char *value,
                       const char **why)
{
  const TachKnobInfo *knob = tach_knob_lookup (key);

  for (guint i = 0; knob != NULL && knob->values != NULL && knob->values[i] != NULL; i++)
    if (g_strcmp0 (knob->values[i], value) == 0)
      return tach_backend_supports_knob (device_id, knob->id, (int) i, why);
  /* A knob that is not a choice, or a value it does not have, is not the
   * backend's to refuse: tach_config_set() says what is wrong with it. */
  return tach_backend_supports_knob (device_id, knob != NULL ? knob->id : TACH_KNOB_COUNT, -1, why);
}
