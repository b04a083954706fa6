/* tach-knob-list.h: every knob and every workload, each described once.
 *
 * Included by tach-engine.h, which makes TachWorkload, the TachConfig
 * fields and TachKnobId out of these lists; engine/tach-knobs.c makes the
 * knob table's rows out of the same lines, and engine/models/tach-models.c
 * the model registry.  So a knob is one line of TACH_KNOB_LIST (and the
 * enum of its values, for a choice knob, here too), a workload one line
 * of TACH_WORKLOAD_LIST.  The translatable strings are msgids (N_, NC_),
 * read where the rows are made.
 */
#pragma once

/* The workloads, in the order of the workload knob's values:
 *   X (ID, model class, value, label, defaults)
 * gives TACH_WORKLOAD_ID, the value "value" of --workload with its label,
 * registers tach_<model class>_model_class (engine/models/), and gives the
 * workload's defaults, as its report ran it (tach_config_init):
 *   DEFAULTS (train batch, generate batch (0: no such task), optimizer,
 *             learning rate, shapes)
 * where shapes are "key=value" settings of the shape knobs that take the
 * workload's own value (a knob row without a default value), applied as
 * presets are.  W1's BiLSTM has 40 units and W2's LSTM 100; the cnn, which
 * has no LSTM, still records valid values.  W1 and W2 train with Adam at
 * 1e-3, W3 with plain SGD at 1e-3, as reported.  gpt is nanoGPT's
 * shakespeare-char configuration (config/train_shakespeare_char.py: 6
 * layers, 6 heads, 384 wide, block_size 256, batch 64, AdamW at 1e-3) with
 * byte-level tokens. */
#define TACH_WORKLOAD_LIST(X) \
  X (BILSTM, bilstm, "bilstm", NC_("knob value", "BiLSTM classifier"), \
     DEFAULTS (1024, 0, TACH_OPTIMIZER_ADAM, 1e-3, \
               "hidden=40 layers=1 embed=100 context=4")) \
  X (LSTM_LM, lstm_lm, "lstm-lm", NC_("knob value", "LSTM language model"), \
     DEFAULTS (256, 1, TACH_OPTIMIZER_ADAM, 1e-3, \
               "hidden=100 layers=1 embed=100 context=4")) \
  X (CNN, cnn, "cnn", NC_("knob value", "MNIST-format CNN"), \
     DEFAULTS (256, 0, TACH_OPTIMIZER_SGD, 1e-3, \
               "hidden=40 layers=1 embed=100 context=4")) \
  X (GPT, gpt, "gpt", NC_("knob value", "GPT decoder Transformer"), \
     DEFAULTS (64, 1, TACH_OPTIMIZER_ADAM, 1e-3, \
               "hidden=40 layers=6 embed=384 context=256"))

#define TACH_WORKLOAD_ID_(ID, ...) TACH_WORKLOAD_##ID,
typedef enum { TACH_WORKLOAD_LIST (TACH_WORKLOAD_ID_) TACH_WORKLOAD_COUNT } TachWorkload;
#undef TACH_WORKLOAD_ID_

/* The choice knobs' values, in the order of their CHOICES below. */
typedef enum { TACH_TASK_TRAIN, TACH_TASK_GENERATE } TachTask;
typedef enum { TACH_RNN_FUSED, TACH_RNN_UNROLLED } TachRnn;
typedef enum { TACH_LAYOUT_BATCH_MAJOR, TACH_LAYOUT_MISREAD } TachLayout;
typedef enum { TACH_FEED_HOST_F64, TACH_FEED_HOST_F32, TACH_FEED_PREFETCH, TACH_FEED_RESIDENT } TachFeed;
typedef enum { TACH_METRICS_NONE, TACH_METRICS_ACCURACY } TachMetrics;
typedef enum { TACH_LAUNCH_EAGER, TACH_LAUNCH_GRAPH } TachLaunch;
typedef enum { TACH_CALL_SETUP_PERSISTENT, TACH_CALL_SETUP_PER_CALL } TachCallSetup;
typedef enum { TACH_SAMPLING_HOST, TACH_SAMPLING_DEVICE } TachSampling;
typedef enum { TACH_PRECISION_FP32, TACH_PRECISION_TF32, TACH_PRECISION_BF16, TACH_PRECISION_FP16 } TachPrecision;
typedef enum { TACH_LABELS_TEACHER, TACH_LABELS_RANDOM } TachLabels;
typedef enum { TACH_OPTIMIZER_ADAM, TACH_OPTIMIZER_SGD } TachOptimizer;
typedef enum { TACH_HEAD_FLATTEN, TACH_HEAD_GAP } TachHead;
typedef enum { TACH_GRAD_SYNC_PER_TENSOR, TACH_GRAD_SYNC_FUSED, TACH_GRAD_SYNC_OVERLAP } TachGradSync;
typedef enum { TACH_GRAD_COMPRESS_NONE, TACH_GRAD_COMPRESS_FP16, TACH_GRAD_COMPRESS_BF16 } TachGradCompress;
typedef enum { TACH_GRAD_PROGRESS_POLL, TACH_GRAD_PROGRESS_THREAD } TachGradProgress;
typedef enum { TACH_ACCUMULATE_SYNC_EVERY, TACH_ACCUMULATE_SYNC_LAST } TachAccumulateSync;
typedef enum { TACH_SHARD_NONE, TACH_SHARD_GRADS, TACH_SHARD_ALL } TachShard;
typedef enum { TACH_SHARD_PREFETCH_NONE, TACH_SHARD_PREFETCH_NEXT } TachShardPrefetch;
/* gpt's execution modes (the Transformer knobs at the end of the list). */
typedef enum { TACH_ATTENTION_NAIVE, TACH_ATTENTION_FUSED } TachAttention;
typedef enum { TACH_KV_CACHE_NONE, TACH_KV_CACHE_DYNAMIC, TACH_KV_CACHE_STATIC } TachKvCache;
typedef enum { TACH_FUSION_NONE, TACH_FUSION_ELEMENTWISE } TachFusion;

/* The knobs, in the order of the command line's help, the GUI's rows and
 * the CSV columns:
 *   X (ID, (TachConfig field declaration), field, name, title, blurb, group, row...)
 * gives TACH_KNOB_ID, the field of TachConfig and the knob's row
 * (TachKnobInfo, tach-engine.h).  In row...:
 *   CHOICES ((values...), (labels...))  a choice knob (labels in context
 *                                       "knob value", one per value)
 *   WORKLOADS                           the workload knob's values, above
 *   INTEGER (lo, hi)                    a whole number, guint or guint64
 *   TEXT (parse, format)                its own syntax, read by rules in
 *                                       tach-knobs.c
 * then any other TachKnobInfo fields (.default_value, .is_mode, .is_shape,
 * .trains, ...), and for an execution mode what each value does, for
 * explain's sentences: CLAUSES (msgids, one per value of a choice knob) or
 * .clause = a rule that reads the run's shape (tach-knobs.c).  A
 * knob without a default value takes the workload's (tach_config_init). */
#define TACH_KNOB_LIST(X) \
  X (WORKLOAD, (TachWorkload workload), workload, "workload", N_("Workload"), \
     N_("Which of the reported workloads to run"), \
     TACH_KNOB_GROUP_SETUP, WORKLOADS, .parse = parse_workload) \
  X (TASK, (TachTask task), task, "task", N_("Task"), \
     N_("Train the model or generate text with it (lstm-lm, gpt)"), \
     TACH_KNOB_GROUP_SETUP, \
     CHOICES (("train", "generate"), \
              (NC_("knob value", "Train"), NC_("knob value", "Generate text"))), \
     .default_value = "train", .parse = parse_task) \
  /* A device id, or "auto"; the blurb lists the ids the backends' rows \
   * take (tach-knobs.c). */ \
  X (DEVICE, (char *device), device, "device", N_("Device"), \
     NULL, \
     TACH_KNOB_GROUP_SETUP, TEXT (parse_device, format_string), \
     .default_value = "auto", .default_label = NC_("knob value", "Automatic")) \
  /* The last preset applied, or NULL. */ \
  X (PRESET, (char *preset), preset, "preset", N_("Preset"), \
     N_("A named combination of modes that reproduces a framework"), \
     TACH_KNOB_GROUP_SETUP, TEXT (parse_preset, format_string)) \
  \
  X (RNN, (TachRnn rnn), rnn, "rnn", N_("RNN"), \
     N_("One fused library call over the sequence, or one cell per time step"), \
     TACH_KNOB_GROUP_MODE, \
     CHOICES (("fused", "unrolled"), (NC_("knob value", "Fused"), NC_("knob value", "Unrolled"))), \
     .default_value = "fused", .is_mode = TRUE, \
     CLAUSES (N_("one fused library call runs the whole sequence"), \
              N_("one LSTM cell runs per time step, as static_rnn builds it"))) \
  X (LAYOUT, (TachLayout layout), layout, "layout", N_("Layout"), \
     N_("Batch-major data, or the reported misread as time-major"), \
     TACH_KNOB_GROUP_MODE, \
     CHOICES (("batch-major", "misread"), \
              (NC_("knob value", "Batch-major"), NC_("knob value", "Misread"))), \
     .default_value = "batch-major", .is_mode = TRUE, .changes_results = TRUE, \
     .clause = clause_layout) \
  X (FEED, (TachFeed feed), feed, "feed", N_("Feeding"), \
     N_("How each batch reaches the device"), \
     TACH_KNOB_GROUP_MODE, \
     CHOICES (("host-f64", "host-f32", "prefetch", "resident"), \
              (NC_("knob value", "Host float64"), NC_("knob value", "Host float32"), \
               NC_("knob value", "Prefetch"), NC_("knob value", "Resident"))), \
     .default_value = "host-f32", .is_mode = TRUE, .trains = TRUE, \
     CLAUSES (N_("feed_dict converts every batch from float64 and copies it, synchronously, " \
                 "every step"), \
              N_("every batch is copied from pageable memory every step, as numpy fit does"), \
              N_("a prefetching pipeline copies the next batch while this one computes"), \
              N_("the whole dataset stays on the device, as a graph constant"))) \
  /* 1 = every step, 0 = only at the end */ \
  X (SYNC, (guint sync_every), sync_every, "sync", N_("Sync every"), \
     N_("Synchronise with the device every N steps, or only at the end"), \
     TACH_KNOB_GROUP_MODE, TEXT (parse_sync, format_sync), \
     .default_value = "1", .is_mode = TRUE, .clause = clause_sync) \
  X (METRICS, (TachMetrics metrics), metrics, "metrics", N_("Metrics"), \
     N_("Compute the accuracy metric every step"), \
     TACH_KNOB_GROUP_MODE, \
     CHOICES (("none", "accuracy"), (NC_("knob value", "None"), NC_("knob value", "Accuracy"))), \
     .default_value = "none", .is_mode = TRUE, .trains = TRUE, \
     CLAUSES (N_("no metric is computed"), \
              N_("the accuracy metric is computed every step (Keras compile metrics)"))) \
  X (LAUNCH, (TachLaunch launch), launch, "launch", N_("Kernel launch"), \
     N_("Launch each kernel from the host, or replay a captured graph"), \
     TACH_KNOB_GROUP_MODE, \
     CHOICES (("eager", "graph"), (NC_("knob value", "Eager"), NC_("knob value", "CUDA graph"))), \
     .default_value = "eager", .is_mode = TRUE, \
     CLAUSES (N_("the host launches each kernel every step"), \
              N_("the whole step is replayed as one captured graph"))) \
  X (CALL_SETUP, (TachCallSetup call_setup), call_setup, "call-setup", N_("Call setup"), \
     N_("Build descriptors and plans once, or on every call"), \
     TACH_KNOB_GROUP_MODE, \
     CHOICES (("persistent", "per-call"), \
              (NC_("knob value", "Persistent"), NC_("knob value", "Per call"))), \
     .default_value = "persistent", .is_mode = TRUE, \
     CLAUSES (N_("descriptors, buffers and plans are built once, as in a TF1 session"), \
              N_("descriptors, buffers and plans are rebuilt on every call, as Keras predict " \
                 "does"))) \
  X (SAMPLING, (TachSampling sampling), sampling, "sampling", N_("Sampling"), \
     N_("Pick the next token on the host or on the device"), \
     TACH_KNOB_GROUP_MODE, \
     CHOICES (("host", "device"), (NC_("knob value", "Host"), NC_("knob value", "Device"))), \
     .default_value = "host", .is_mode = TRUE, \
     CLAUSES (N_("the distribution is read back to the host for every token"), \
              N_("the next token is picked on the device"))) \
  X (PRECISION, (TachPrecision precision), precision, "precision", N_("Precision"), \
     N_("Arithmetic precision of the device math"), \
     TACH_KNOB_GROUP_MODE, \
     CHOICES (("fp32", "tf32", "bf16", "fp16"), \
              (NC_("knob value", "FP32"), NC_("knob value", "TF32"), \
               NC_("knob value", "BF16"), NC_("knob value", "FP16"))), \
     .default_value = "fp32", .is_mode = TRUE, .changes_results = TRUE, \
     .clause = clause_precision) \
  /* Data parallel (engine/run/tach-ranks.h): how the ranks average their \
   * gradients.  They apply to runs of more than one rank. */ \
  X (GRAD_SYNC, (TachGradSync grad_sync), grad_sync, "grad-sync", N_("Gradient sync"), \
     N_("Across ranks: an all-reduce per tensor, one fused, or buckets overlapped with backward"), \
     TACH_KNOB_GROUP_MODE, \
     CHOICES (("per-tensor", "fused", "overlap"), \
              (NC_("knob value", "Per tensor"), NC_("knob value", "Fused"), \
               NC_("knob value", "Overlapped buckets"))), \
     .default_value = "overlap", .is_mode = TRUE, .trains = TRUE, \
     CLAUSES (N_("after backward, one blocking all-reduce per parameter tensor"), \
              N_("after backward, one blocking all-reduce of every gradient, fused"), \
              N_("buckets of gradients are all-reduced while backward goes on, as DDP does"))) \
  X (BUCKET_MB, (guint bucket_mb), bucket_mb, "bucket-mb", N_("Bucket size (MB)"), \
     N_("Most gradient megabytes in one overlapped all-reduce (DDP's bucket_cap_mb)"), \
     TACH_KNOB_GROUP_MODE, INTEGER (1, 4096), .default_value = "25", .is_mode = TRUE, \
     .trains = TRUE, .clause = clause_bucket_mb) \
  /* Open MPI moves a message on only inside MPI calls: who makes them \
   * while overlapped buckets fly (engine/run/tach-grad-reducer.c). */ \
  X (GRAD_PROGRESS, (TachGradProgress grad_progress), grad_progress, "grad-progress", \
     N_("All-reduce progress"), \
     N_("Who moves overlapped all-reduces on: tests between layers, or a progress thread"), \
     TACH_KNOB_GROUP_MODE, \
     CHOICES (("poll", "thread"), \
              (NC_("knob value", "Between layers"), NC_("knob value", "Progress thread"))), \
     .default_value = "poll", .is_mode = TRUE, .trains = TRUE, \
     CLAUSES (N_("the buckets in flight are tested only between layers of backward"), \
              N_("a progress thread tests the buckets in flight every 100 us"))) \
  X (GRAD_COMPRESS, (TachGradCompress grad_compress), grad_compress, "grad-compress", \
     N_("Gradient compression"), \
     N_("Send the gradients as fp32, or cast to fp16 or bf16 and back"), \
     TACH_KNOB_GROUP_MODE, \
     CHOICES (("none", "fp16", "bf16"), \
              (NC_("knob value", "None"), NC_("knob value", "FP16"), NC_("knob value", "BF16"))), \
     .default_value = "none", .is_mode = TRUE, .changes_results = TRUE, .trains = TRUE, \
     CLAUSES (N_("the gradients travel as fp32"), \
              N_("the gradients travel as fp16, cast before and widened after"), \
              N_("the gradients travel as bf16, cast before and widened after"))) \
  /* Sharded data parallelism (engine/run/tach-grad-shard.c): DeepSpeed's \
   * ZeRO stages over MPI's reduce-scatter and all-gather. */ \
  X (SHARD, (TachShard shard), shard, "shard", N_("Sharding"), \
     N_("Across ranks: replicate the optimiser state, shard it with the gradients (ZeRO-2), or shard the parameters too (ZeRO-3)"), \
     TACH_KNOB_GROUP_MODE, \
     CHOICES (("none", "grads", "all"), \
              (NC_("knob value", "None"), NC_("knob value", "Gradients and optimiser state"), \
               NC_("knob value", "Parameters too"))), \
     .default_value = "none", .is_mode = TRUE, .trains = TRUE, \
     CLAUSES (N_("every rank holds and updates every parameter, its gradient all-reduced"), \
              N_("the gradients are reduce-scattered, each rank updates its shard with its shard " \
                 "of the optimiser state, and the parameters are all-gathered, as ZeRO-2 does"), \
              N_("the parameters are sharded too, each unit all-gathered before its forward " \
                 "and its backward, as FSDP's FULL_SHARD does"))) \
  X (SHARD_PREFETCH, (TachShardPrefetch shard_prefetch), shard_prefetch, "shard-prefetch", \
     N_("Shard prefetch"), \
     N_("Under shard=all: whether the next unit's all-gather flies while this one computes"), \
     TACH_KNOB_GROUP_MODE, \
     CHOICES (("none", "next"), (NC_("knob value", "None"), NC_("knob value", "Next unit"))), \
     .default_value = "none", .is_mode = TRUE, .trains = TRUE, \
     CLAUSES (N_("each unit's parameters are all-gathered when it is reached"), \
              N_("the next unit's all-gather is issued while this one computes, as FSDP's " \
                 "prefetch does"))) \
  /* Gradient accumulation (engine/models/tach-params.c): a step is one \
   * update of @accumulate micro-batches, each of --batch per rank. */ \
  X (ACCUMULATE, (guint accumulate), accumulate, "accumulate", N_("Accumulate"), \
     N_("Micro-batches whose gradients are summed into each update; the batch is per micro-batch"), \
     TACH_KNOB_GROUP_MODE, INTEGER (1, 65536), .default_value = "1", .is_mode = TRUE, \
     .changes_results = TRUE, .trains = TRUE, .clause = clause_accumulate) \
  X (ACCUMULATE_SYNC, (TachAccumulateSync accumulate_sync), accumulate_sync, "accumulate-sync", \
     N_("Accumulated sync"), \
     N_("Across ranks: synchronise after every micro-batch, or once after the last (no_sync)"), \
     TACH_KNOB_GROUP_MODE, \
     CHOICES (("every", "last"), \
              (NC_("knob value", "Every micro-batch"), NC_("knob value", "Last micro-batch"))), \
     .default_value = "every", .is_mode = TRUE, .trains = TRUE, \
     CLAUSES (N_("the gradients are all-reduced after every micro-batch"), \
              N_("the gradients are summed locally and all-reduced once, after the last " \
                 "micro-batch, as DDP's no_sync does"))) \
  \
  X (BATCH, (guint batch), batch, "batch", N_("Batch size"), \
     N_("Samples (or text streams) per step"), \
     TACH_KNOB_GROUP_RUN, INTEGER (1, G_MAXINT)) \
  /* Steps in all, warm-up included. */ \
  X (STEPS, (guint steps), steps, "steps", N_("Steps"), \
     N_("Steps to run, warm-up included"), \
     TACH_KNOB_GROUP_RUN, INTEGER (1, G_MAXUINT), .default_value = "100") \
  /* The first steps, excluded from summaries (see tach_config_get_warmup). */ \
  X (WARMUP, (guint warmup), warmup, "warmup", N_("Warm-up steps"), \
     N_("The first steps, left out of summaries (at most half of the steps)"), \
     TACH_KNOB_GROUP_RUN, INTEGER (0, G_MAXUINT), .default_value = "5") \
  /* Dataset size in samples (0 = workload default). */ \
  X (SAMPLES, (guint64 samples), samples, "samples", N_("Dataset size"), \
     N_("Dataset size in samples (auto: 16 batches)"), \
     TACH_KNOB_GROUP_RUN, TEXT (parse_samples, format_samples), .default_value = "auto", \
     .trains = TRUE) \
  X (SEED, (guint64 seed), seed, "seed", N_("Seed"), \
     N_("Seed of every random number"), \
     TACH_KNOB_GROUP_RUN, INTEGER (0, G_MAXUINT64), .default_value = "1") \
  X (LABELS, (TachLabels labels), labels, "labels", N_("Labels"), \
     N_("Learnable teacher labels, or the report's random ones"), \
     TACH_KNOB_GROUP_MODEL, \
     CHOICES (("teacher", "random"), (NC_("knob value", "Teacher"), NC_("knob value", "Random"))), \
     .default_value = "teacher") \
  /* Data-parallel ranks: the size of the MPI job the process runs in \
   * (mpirun -np N), which sets it; --batch is per rank. */ \
  X (RANKS, (guint ranks), ranks, "ranks", N_("Ranks"), \
     N_("Data-parallel processes (mpirun -np N); the batch is per rank"), \
     TACH_KNOB_GROUP_RUN, INTEGER (1, 65536), .default_value = "1") \
  /* CPU threads (0 = all cores). */ \
  X (THREADS, (guint threads), threads, "threads", N_("CPU threads"), \
     N_("CPU threads (0: all cores)"), \
     TACH_KNOB_GROUP_RUN, INTEGER (0, 4096), .default_value = "0") \
  X (OPTIMIZER, (TachOptimizer optimizer), optimizer, "optimizer", N_("Optimiser"), \
     N_("Optimiser of the training step"), \
     TACH_KNOB_GROUP_MODEL, \
     CHOICES (("adam", "sgd"), (NC_("knob value", "Adam"), NC_("knob value", "SGD"))), \
     .trains = TRUE) \
  /* 0 = the workload's default */ \
  X (LR, (double lr), lr, "lr", N_("Learning rate"), \
     N_("Learning rate"), \
     TACH_KNOB_GROUP_MODEL, TEXT (parse_lr, format_lr), .trains = TRUE) \
  /* A data file or folder, or NULL.  Generation reads it too: the \
   * language models draw their prompts from the text. */ \
  X (DATA, (char *data), data, "data", N_("Data file"), \
     N_("A data file or folder (text corpus or IDX images)"), \
     TACH_KNOB_GROUP_MODEL, TEXT (parse_data, format_string)) \
  /* The cnn's input size. */ \
  X (INPUT, (guint input_h, input_w, input_c), input_h, "input", N_("Input size"), \
     N_("Image size HxWxC of the cnn"), \
     TACH_KNOB_GROUP_MODEL, TEXT (parse_input, format_input), .default_value = "28x28x1") \
  X (HEAD, (TachHead head), head, "head", N_("Classifier head"), \
     N_("Flatten + dense 1024, or global average pooling"), \
     TACH_KNOB_GROUP_MODEL, \
     CHOICES (("flatten", "gap"), \
              (NC_("knob value", "Flatten"), NC_("knob value", "Global average pooling"))), \
     .default_value = "flatten") \
  /* lstm-lm generate: keep the generated words. */ \
  X (PRINT_TEXT, (gboolean print_text), print_text, "print-text", N_("Keep generated text"), \
     N_("Keep the generated words"), \
     TACH_KNOB_GROUP_MODEL, \
     CHOICES (("false", "true"), (NC_("knob value", "No"), NC_("knob value", "Yes"))), \
     .default_value = "false", .parse = parse_bool) \
  \
  /* The model's shapes; the defaults are the reports' (workloads.md). */ \
  X (SEQ_LEN, (guint seq_len), seq_len, "seq-len", N_("Sequence length"), \
     N_("Time steps per sample of the bilstm"), \
     TACH_KNOB_GROUP_MODEL, INTEGER (1, 65536), .default_value = "10", .is_shape = TRUE) \
  X (FEATURES, (guint features), features, "features", N_("Features"), \
     N_("Features per time step of the bilstm"), \
     TACH_KNOB_GROUP_MODEL, INTEGER (1, 65536), .default_value = "300", .is_shape = TRUE) \
  /* LSTM units per direction: the workload's default, bilstm 40, lstm-lm 100. */ \
  X (HIDDEN, (guint hidden), hidden, "hidden", N_("Hidden units"), \
     N_("LSTM units per direction"), \
     TACH_KNOB_GROUP_MODEL, INTEGER (1, 65536), .is_shape = TRUE) \
  /* Stacked layers, the model's width and its context: the workload's \
   * defaults (lstm-lm 1, 100, 4; gpt 6, 384, 256). */ \
  X (LAYERS, (guint layers), layers, "layers", N_("Layers"), \
     N_("Stacked LSTM layers, or gpt's Transformer blocks"), \
     TACH_KNOB_GROUP_MODEL, INTEGER (1, 64), .is_shape = TRUE) \
  X (EMBED, (guint embed), embed, "embed", N_("Embedding width"), \
     N_("Embedding width of the lstm-lm, or gpt's model width"), \
     TACH_KNOB_GROUP_MODEL, INTEGER (1, 65536), .is_shape = TRUE) \
  X (CONTEXT, (guint context), context, "context", N_("Context tokens"), \
     N_("Context tokens of the lstm-lm, or gpt's context (its position table)"), \
     TACH_KNOB_GROUP_MODEL, INTEGER (1, 65536), .is_shape = TRUE) \
  X (FILTERS, (guint filters[2]), filters, "filters", N_("Conv filters"), \
     N_("Filters of the cnn's two convolution blocks, e.g. 32,64"), \
     TACH_KNOB_GROUP_MODEL, TEXT (parse_filters, format_filters), .default_value = "32,64", \
     .is_shape = TRUE) \
  X (DENSE, (guint dense), dense, "dense", N_("Dense units"), \
     N_("Units of the cnn's hidden dense layer"), \
     TACH_KNOB_GROUP_MODEL, INTEGER (1, 1048576), .default_value = "1024", .is_shape = TRUE) \
  /* gpt (engine/models/tach-gpt.c): its execution modes, then its shapes \
   * (layers, embed and context are above). */ \
  X (ATTENTION, (TachAttention attention), attention, "attention", N_("Attention"), \
     N_("Materialise the T x T scores, or fused attention with an online softmax (gpt)"), \
     TACH_KNOB_GROUP_MODE, \
     CHOICES (("naive", "fused"), (NC_("knob value", "Naive"), NC_("knob value", "Fused"))), \
     .default_value = "naive", .is_mode = TRUE, \
     CLAUSES (N_("attention materialises the T x T scores, then a separate masked softmax and " \
                 "the product with V, as nanoGPT's manual path"), \
              N_("fused attention runs tiles of keys with an online softmax and never stores " \
                 "the T x T scores, FlashAttention's algorithm"))) \
  X (KV_CACHE, (TachKvCache kv_cache), kv_cache, "kv-cache", N_("KV cache"), \
     N_("Recompute the prefix every token, or keep keys and values growing or preallocated (gpt)"), \
     TACH_KNOB_GROUP_MODE, \
     CHOICES (("none", "dynamic", "static"), \
              (NC_("knob value", "None"), NC_("knob value", "Dynamic"), \
               NC_("knob value", "Static"))), \
     .default_value = "dynamic", .is_mode = TRUE, \
     CLAUSES (N_("every token recomputes the whole prefix, with no cache of keys and values"), \
              N_("keys and values are appended per token to storage that grows, as Hugging " \
                 "Face's DynamicCache"), \
              N_("keys and values go to a cache preallocated to the context, fixed shapes over " \
                 "its whole length, as Hugging Face's StaticCache"))) \
  X (FUSION, (TachFusion fusion), fusion, "fusion", N_("Elementwise fusion"), \
     N_("Each elementwise op its own pass, or fused into its neighbour (gpt)"), \
     TACH_KNOB_GROUP_MODE, \
     CHOICES (("none", "elementwise"), \
              (NC_("knob value", "None"), NC_("knob value", "Elementwise"))), \
     .default_value = "none", .is_mode = TRUE, \
     CLAUSES (N_("every elementwise op (bias, GELU, residual add, scaling) is its own pass over " \
                 "memory"), \
              N_("bias + GELU, residual + LayerNorm and the softmax's scaling are fused, as " \
                 "torch.compile's Inductor does"))) \
  X (HEADS, (guint heads), heads, "heads", N_("Attention heads"), \
     N_("Attention heads of gpt's blocks (they divide the width)"), \
     TACH_KNOB_GROUP_MODEL, INTEGER (1, 4096), .default_value = "6", .is_shape = TRUE) \
  X (VOCAB, (guint vocab), vocab, "vocab", N_("Vocabulary"), \
     N_("gpt's vocabulary: 256 byte-level tokens, or more rows (GPT-2's padded 50304)"), \
     TACH_KNOB_GROUP_MODEL, INTEGER (256, 1048576), .default_value = "256", .is_shape = TRUE) \
  X (PROMPT, (guint prompt), prompt, "prompt", N_("Prompt tokens"), \
     N_("Tokens of each stream's prompt, which gpt's generation prefills"), \
     TACH_KNOB_GROUP_MODEL, INTEGER (1, 65536), .default_value = "64", .is_shape = TRUE) \
  /* 0: up to the context. */ \
  X (NEW_TOKENS, (guint new_tokens), new_tokens, "new-tokens", N_("New tokens"), \
     N_("Tokens gpt generates after each prompt before it starts another (0: up to the " \
        "context)"), \
     TACH_KNOB_GROUP_MODEL, INTEGER (0, 65536), .default_value = "0", .is_shape = TRUE)
