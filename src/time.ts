/** Timestamps as docs/decisions.md fixes them: `2015-01-02T03:04:05.678+0000`. */
export const formatTimestamp = (date: Date = new Date()): string => date.toISOString().replace('Z', '+0000');

/** A timestamp of formatTimestamp's form, in milliseconds since the epoch. */
export const parseTimestamp = (timestamp: string): number => Date.parse(timestamp.replace(/\+0000$/, 'Z'));
