/* tach-models.c: the model registry, a plain array of the model classes
 * (one per line of TACH_WORKLOAD_LIST, tach-knob-list.h), and what the rest
 * of the engine asks the workloads through it.
 */
#include <glib/gi18n-lib.h>

#include "tach-model.h"

#define CLASS_(ID, klass, ...) &tach_##klass##_model_class,
static const TachModelClass *const classes[] = { TACH_WORKLOAD_LIST (CLASS_) };
G_STATIC_ASSERT (G_N_ELEMENTS (classes) == TACH_WORKLOAD_COUNT);

const TachModelClass *
tach_model_class_for (TachWorkload workload)
{
  for (guint i = 0; i < G_N_ELEMENTS (classes); i++)
    if (classes[i]->workload == workload)
      return classes[i];
  return NULL;
}

const TachModelKnob *
tach_model_knob_owner (TachKnobId knob, const TachModelClass **owner)
{
  for (guint i = 0; i < G_N_ELEMENTS (classes); i++)
    for (const TachModelKnob *k = classes[i]->owns; k != NULL && k->knob != TACH_KNOB_COUNT; k++)
      if (k->knob == knob)
        {
          if (owner != NULL)
            *owner = classes[i];
          return k;
        }
  return NULL;
}

const char *
tach_model_knob_unused (const TachConfig *config, TachKnobId knob)
{
  const TachModelClass *klass = tach_model_class_for (config->workload);
  const TachModelClass *owner = NULL;
  const TachModelKnob *owned;

  if (klass != NULL && klass->knob_unused != NULL)
    {
      const char *why = klass->knob_unused (config, knob);

      if (why != NULL)
        return why;
    }
  if (klass != NULL && tach_model_class_owns (klass, knob))
    return NULL;
  owned = tach_model_knob_owner (knob, &owner);
  return owned != NULL ? owned->why : NULL;
}


void
tach_config_get_data_source (const TachConfig *config, const char **kind, char **path)
{
  const TachModelClass *klass = tach_model_class_for (config->workload);

  *kind = N_("synthetic data");
  *path = NULL;
  if (klass != NULL && klass->data_source != NULL)
    klass->data_source (config, kind, path);
}

gboolean
tach_workload_evaluates (TachWorkload workload)
{
  const TachModelClass *klass = tach_model_class_for (workload);

  return klass != NULL && klass->evaluate != NULL;
}
