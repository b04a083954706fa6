/* tach-models.c: the workload -> model class table.
 *
 * The build defines TACH_HAVE_MODEL_<WORKLOAD> for each model whose source
 * is part of the engine (see engine/meson.build), so that an engine built
 * before all three models exist still links and says clearly which
 * workloads it lacks instead of failing to link.
 */
#include "tach-model.h"

const TachModelClass *
tach_model_class_for (TachWorkload workload)
{
  switch (workload)
    {
    case TACH_WORKLOAD_BILSTM:
#ifdef TACH_HAVE_MODEL_BILSTM
      return &tach_bilstm_model_class;
#else
      return NULL;
#endif
    case TACH_WORKLOAD_LSTM_LM:
#ifdef TACH_HAVE_MODEL_LSTM_LM
      return &tach_lstm_lm_model_class;
#else
      return NULL;
#endif
    case TACH_WORKLOAD_CNN:
#ifdef TACH_HAVE_MODEL_CNN
      return &tach_cnn_model_class;
#else
      return NULL;
#endif
    case TACH_WORKLOAD_COUNT:
    default:
      return NULL;
    }
}
