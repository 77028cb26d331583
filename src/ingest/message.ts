/** One queue message per accepted image; everything else about it waits in D1 (messages are capped at 128 KB). */
export type InsertMessage = { transId: number; index: number };
