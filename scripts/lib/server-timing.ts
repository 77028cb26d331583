/** One entry of an answer's Server-Timing header: its duration in ms and its description, each when given. */
export type TimingEntry = { dur?: number; desc?: string };

/**
 * The entries of a Server-Timing header by name (`inference;dur=93.1, d1-primary;dur=0.4;desc="2"`): the Worker's
 * steps and, per request, its D1 round trips and vector index calls with their count as `desc` (docs/deploy.md, What each endpoint reads where).
 */
export function serverTimingEntries(header: string | null): Record<string, TimingEntry> {
  const entries: Record<string, TimingEntry> = {};
  for (const part of (header ?? '').split(',')) {
    const [name, ...fields] = part.trim().split(';');
    if (!name) continue;
    const entry: TimingEntry = {};
    for (const field of fields) {
      const [key, value = ''] = field.trim().split('=');
      if (key === 'dur') entry.dur = Number(value);
      if (key === 'desc') entry.desc = value.replace(/^"(.*)"$/, '$1');
    }
    entries[name] = entry;
  }
  return entries;
}
