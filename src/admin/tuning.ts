import { labelCounts, type Tuning } from '../storage/tunings';
import type { StoredField } from '../storage/apps';
import { HELD_OUT_EVERY } from '../tuning/held-out';
import { MAX_CLASSES } from '../tuning/projection';
import { PRECISION_AT } from '../ingest/tuning';

/** A label is fitted when at least this many images carry it (docs/decisions.md, "Tuning on a label field"). */
export const MIN_LABELLED_PER_CLASS = 3;

/** What a tuning of `field` would fit, or why it cannot be: the field is not in the schema, or too few labels have enough images. */
export async function tuningClasses(
  db: D1Database,
  appId: string,
  schema: readonly StoredField[],
  field: string,
): Promise<{ problem: string } | { classes: string[]; labelled: number }> {
  if (!schema.some(({ name }) => name === field)) {
    return { problem: `label_field: ${field} is not a field of the application's schema (${schema.map(({ name }) => name).join(', ') || 'none'})` };
  }
  const { labelled, labels } = await labelCounts(db, appId, field, MAX_CLASSES);
  const classes = labels.filter(({ count }) => count >= MIN_LABELLED_PER_CLASS).map(({ label }) => label);
  if (classes.length < 2) {
    return {
      problem:
        `label_field: tuning needs at least 2 values of ${field} with ${MIN_LABELLED_PER_CLASS} labelled images or more each; ` +
        `${classes.length} ${classes.length === 1 ? 'has' : 'have'} (${labelled} images labelled)`,
    };
  }
  return { classes, labelled };
}

const precision = (hits: number, queries: number): number | null => (queries === 0 ? null : hits / (queries * PRECISION_AT));

/** A tuning as the admin API answers it (`running` while it is made or its vectors retired). */
export function describeTuning(tuning: Tuning) {
  const running = tuning.state !== 'done' && tuning.state !== 'failed';
  return {
    version: tuning.version,
    label_field: tuning.labelField,
    apply: tuning.apply,
    state: running ? ('running' as const) : tuning.state === 'done' ? ('done' as const) : ('failed' as const),
    phase: running ? tuning.state : null,
    applied: tuning.applied,
    classes: tuning.classes.length,
    labelled: tuning.labelled,
    fitted: tuning.fitted,
    held_out: {
      share: 1 / HELD_OUT_EVERY,
      queries: tuning.queries,
      precision_at_5: { before: precision(tuning.hitsBefore, tuning.queries), after: precision(tuning.hitsAfter, tuning.queries) },
    },
    error: tuning.failure ?? tuning.error,
    started_at: tuning.startedAt,
    updated_at: tuning.updatedAt,
    finished_at: tuning.finishedAt,
  };
}
