/* tach-models.c: the model registry, a plain array of the model classes,
 * and what the rest of the engine asks the workloads through it.
 */
#include "tach-model.h"

static const TachModelClass *const classes[] = {
  &tach_bilstm_model_class,
  &tach_lstm_lm_model_class,
  &tach_cnn_model_class,
};

const TachModelClass *
tach_model_class_for (TachWorkload workload)
{
  for (guint i = 0; i < G_N_ELEMENTS (classes); i++)
    if (classes[i]->workload == workload)
      return classes[i];
  return NULL;
}

gboolean
tach_workload_evaluates (TachWorkload workload)
{
  const TachModelClass *klass = tach_model_class_for (workload);

  return klass != NULL && klass->evaluate != NULL;
}
