import { env } from 'cloudflare:test';
import { describe, expect, it } from 'vitest';
import { shapeCatalog } from '@edge-image-search/devtools/shape-catalog';
import { STALL_MINUTES } from '../../src/ingest/sweeper';
import { copyRows, fence, MOVED_TABLES, startMove as startMoveRow } from '../../src/storage/moves';
import { formatTimestamp } from '../../src/time';
import { adminHeaders, basicAuth, call, createApp, fixtureUrl, insert, insertAndWait, runSweeper, search, waitForTransaction, type Credentials } from './helpers';

/**
 * Moving an application to another D1 database while it keeps serving (issue 45; ingest/move.ts): its writes are
 * held (answered busy, sent again by the client) while its rows are copied, searches answer throughout, and every
 * write accepted, before the move or during it, is applied in the order it was accepted.
 */

const DATABASES = env.D1_DATABASES.split(',').map((name) => name.trim());
const database = (name: string): D1Database => (env as unknown as Record<string, D1Database>)[name]!;
const SHAPES = shapeCatalog(3, 5);
const urlOf = (k: number): string => fixtureUrl(`/shapes/5:3:${SHAPES[k % SHAPES.length]!.name}`);
const SCHEMA = [{ name: 'v', type: 'int' as const, searchable: true }];

type MoveAnswer = { status: string; database: string; move: { from_database: string; to_database: string; state: string; rows_copied: number; error: string | null } };
const startMove = async (app: Credentials, body: object) => {
  const response = await call(`/admin/apps/${app.app_id}/move`, { method: 'POST', headers: adminHeaders, body: JSON.stringify(body) });
  return { status: response.status, body: await response.json<MoveAnswer & { error?: string[] }>() };
};
const moveOf = async (app: Credentials): Promise<MoveAnswer> => (await call(`/admin/apps/${app.app_id}/move`, { headers: adminHeaders })).json<MoveAnswer>();
const placementOf = async (app: Credentials) =>
  (await (await call(`/admin/apps/${app.app_id}`, { headers: adminHeaders })).json<{ placement: { database: string; moving?: string } }>()).placement;
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** One write of the traffic: an insert (new or again), a metadata-only update, or a remove of a name. */
type Write = { kind: 'insert'; name: string; v: number; url: string } | { kind: 'update'; name: string; v: number } | { kind: 'remove'; name: string };

/** Sends a write until it is accepted (a held write answers busy, to be sent again); its transaction, if it has one. */
async function accepted(app: Credentials, write: Write): Promise<{ transId: number | null; busy: number }> {
  for (let busy = 0; ; busy++) {
    const response =
      write.kind === 'remove'
        ? await call('/remove', { method: 'POST', headers: basicAuth(app), body: new URLSearchParams({ 'im_name[0]': write.name }) })
        : await insert(app, [{ im_name: write.name, v: String(write.v), ...(write.kind === 'insert' ? { im_url: write.url } : {}) }]);
    const body = await response.json<{ status: string; trans_id?: number; error?: unknown[] }>();
    if (body.status === 'OK') return { transId: body.trans_id ?? null, busy };
    expect(JSON.stringify(body.error), `${write.kind} ${write.name}`).toContain('System busy');
    expect(busy, `${write.kind} ${write.name} held too long`).toBeLessThan(400);
    await sleep(150);
  }
}

describe('moving an application to another database', () => {
  it('answers searches throughout and applies every accepted write in order, nothing lost', async () => {
    const app = await createApp('moving', SCHEMA);
    const names = Array.from({ length: 8 }, (_, k) => `s${k}`);
    expect((await insertAndWait(app, names.map((name, k) => ({ im_name: name, im_url: urlOf(k), v: '0' })))).fail_count).toBe(0);
    const from = (await placementOf(app)).database;
    const to = DATABASES.find((name) => name !== from)!;

    // Writes still pending when the move begins: carried over, not lost.
    const early: Write[] = [
      { kind: 'update', name: 's1', v: 1 },
      { kind: 'insert', name: 'n1', v: 1, url: urlOf(20) },
    ];
    const order: (Write & { transId: number | null })[] = [];
    for (const write of early) order.push({ ...write, transId: (await accepted(app, write)).transId });

    const started = await startMove(app, { database: to });
    expect(started.status, JSON.stringify(started.body)).toBe(202);
    expect(started.body.move).toMatchObject({ from_database: from, to_database: to, state: 'copying' });
    expect((await placementOf(app)).moving).toBe(to);
    expect((await startMove(app, { database: to })).status).toBe(409);

    // Searches, back to back while the move runs: every one answers.
    let moving = true;
    let searches = 0;
    const searching = (async () => {
      while (moving) {
        const { body } = await search(app, 'im_name=s0&limit=50&fq=v:0,100');
        expect(body.status, JSON.stringify(body)).toBe('OK');
        searches++;
      }
    })();

    // Writes during the move, one after another: each is held until the application has moved, then accepted.
    const during: Write[] = [
      { kind: 'update', name: 's1', v: 2 },
      { kind: 'remove', name: 's7' },
      { kind: 'insert', name: 'n2', v: 3, url: urlOf(21) },
      { kind: 'update', name: 's2', v: 4 },
      { kind: 'insert', name: 's7', v: 5, url: urlOf(22) },
      { kind: 'update', name: 's1', v: 6 },
      { kind: 'remove', name: 's6' },
      { kind: 'update', name: 's5', v: 7 },
    ];
    let held = 0;
    for (const write of during) {
      const { transId, busy } = await accepted(app, write);
      held += busy;
      order.push({ ...write, transId });
    }
    for (let k = 0; (await moveOf(app)).move.state !== 'done'; k++) {
      expect(k, JSON.stringify(await moveOf(app))).toBeLessThan(240);
      await sleep(500);
    }
    moving = false;
    await searching;
    expect(searches).toBeGreaterThan(0);
    // The writes sent while the rows were copied were held, not lost.
    expect(held).toBeGreaterThan(0);

    for (const { transId } of order) if (transId !== null) expect((await waitForTransaction(app, transId)).processed_percent).toBe(100);

    // What the accepted writes, in their order, leave: each name's last write wins.
    const expected = new Map<string, number>(names.map((name) => [name, 0]));
    for (const write of order) {
      if (write.kind === 'remove') expected.delete(write.name);
      else expected.set(write.name, write.v);
    }
    const { results } = await database(to).prepare('SELECT im_name, metadata FROM images WHERE app_id = ?').bind(app.app_id).all<{ im_name: string; metadata: string }>();
    expect(new Map(results.map((row) => [row.im_name, Number((JSON.parse(row.metadata) as { v: string | number }).v)]))).toEqual(expected);
    for (const [name] of expected) expect((await search(app, `im_name=${name}`)).body.status, name).toBe('OK');

    // It is on the target alone: nothing of it is left in the source, nor the fence.
    expect(await placementOf(app)).toEqual(expect.objectContaining({ database: to }));
    expect((await placementOf(app)).moving).toBeUndefined();
    for (const { table, rows } of MOVED_TABLES) {
      const left = await database(from).prepare(`SELECT COUNT(*) AS n FROM ${table} WHERE ${rows}`).bind(app.app_id).first<number>('n');
      expect(left, table).toBe(0);
    }
    expect(await database(from).prepare('SELECT COUNT(*) AS n FROM move_fences WHERE app_id = ?').bind(app.app_id).first<number>('n')).toBe(0);
    const answer = await moveOf(app);
    expect(answer).toMatchObject({ database: to, move: { state: 'done', error: null } });
    expect(answer.move.rows_copied).toBeGreaterThan(names.length);

    // And keeps working there: a write after the move applies at once.
    expect((await insertAndWait(app, [{ im_name: 's3', v: '9' }])).fail_count).toBe(0);
    const after = await database(to).prepare("SELECT metadata FROM images WHERE app_id = ? AND im_name = 's3'").bind(app.app_id).first<string>('metadata');
    expect(Number((JSON.parse(after!) as { v: string | number }).v)).toBe(9);
  });

  it('leaves nothing in the target of what a move given up copied there before', async () => {
    const app = await createApp('moving-again', SCHEMA);
    expect((await insertAndWait(app, ['a', 'b', 'c'].map((name, k) => ({ im_name: name, im_url: urlOf(k), v: '1' })))).fail_count).toBe(0);
    const from = (await placementOf(app)).database;
    const to = DATABASES.find((name) => name !== from)!;
    // What a move given up mid-copy leaves in the target: its copies of the images as they were then.
    const images = MOVED_TABLES.findIndex(({ table }) => table === 'images');
    await database(to).prepare("INSERT OR IGNORE INTO apps (id, name, access_key, secret_key_hash, app_key_hash, created_at) VALUES (?1, '', ?1, '', ?1, '')").bind(app.app_id).run();
    expect((await copyRows(database(from), database(to), app.app_id, images, 0, 100))?.copied).toBe(3);
    const removed = await (await call('/remove', { method: 'POST', headers: basicAuth(app), body: new URLSearchParams({ 'im_name[0]': 'b' }) })).json<{ status: string }>();
    expect(removed.status).toBe('OK');

    expect((await startMove(app, { database: to })).status).toBe(202);
    for (let k = 0; (await moveOf(app)).move.state !== 'done'; k++) {
      expect(k).toBeLessThan(240);
      await sleep(500);
    }
    const { results } = await database(to).prepare('SELECT im_name FROM images WHERE app_id = ? ORDER BY im_name').bind(app.app_id).all<{ im_name: string }>();
    expect(results.map((row) => row.im_name)).toEqual(['a', 'c']);
    expect((await search(app, 'im_name=b')).body.status).toBe('fail');
  });

  it('is resumed by the sweeper when its message was lost, and finishes', async () => {
    const app = await createApp('moving-lost', SCHEMA);
    expect((await insertAndWait(app, [{ im_name: 'a', im_url: urlOf(0), v: '1' }])).fail_count).toBe(0);
    const from = (await placementOf(app)).database;
    const to = DATABASES.find((name) => name !== from)!;
    // Begun, fenced, without its first message, and not moved for longer than a stall.
    expect(await startMoveRow(env.DB, app.app_id, from, to)).not.toBeNull();
    await fence(database(from), app.app_id, formatTimestamp());
    const ago = formatTimestamp(new Date(Date.now() - (STALL_MINUTES + 1) * 60_000));
    await env.DB.prepare('UPDATE moves SET updated_at = ? WHERE app_id = ?').bind(ago, app.app_id).run();
    await runSweeper();
    for (let k = 0; (await moveOf(app)).move.state !== 'done'; k++) {
      expect(k).toBeLessThan(240);
      await sleep(500);
    }
    expect(await placementOf(app)).toEqual(expect.objectContaining({ database: to }));
    expect((await search(app, 'im_name=a')).body.status).toBe('OK');
  });

  it('refuses a database it is on, or one not listed', async () => {
    const app = await createApp('not-moving');
    const on = (await placementOf(app)).database;
    expect((await startMove(app, { database: on })).status).toBe(400);
    expect((await startMove(app, { database: 'NOWHERE' })).status).toBe(400);
    expect((await call(`/admin/apps/${app.app_id}/move`, { headers: adminHeaders })).status).toBe(404);
  });
});
