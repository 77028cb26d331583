import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { predictForm } from '../inference/src/contract.ts';
import { freePort } from '../test/support/free-port.ts';
import { startLocalStack } from './lib/local-stack.ts';
import { processKind, sampleMemory } from './lib/process-usage.ts';
import { ROOT } from './lib/wrangler-env.ts';

/**
 * `npm run measure:memory`: what hostile callers cost the local stack's memory. On a fresh local stack, each scenario
 * runs alone while the resident memory of workerd and of the inference service is sampled; the table gives each
 * one's peak above its level just before the scenario, and the answers' statuses:
 * - 10 concurrent 2 MB urlencoded bodies of `a&a&...` without credentials, to `/insert` (a data endpoint: Basic only)
 *   and to `/uploadsearch` (an app key may come in the body);
 * - 10 concurrent 45 MB multipart bodies straight to the inference service's `/predict`, with its secret.
 * Written to `.local/memory.json` too. Not a test: the figures depend on the machine.
 */

const STATE_DIR = path.join(ROOT, '.wrangler/measure-memory-state');
const OUT = path.join(ROOT, '.local/memory.json');
const CONCURRENT = 10;

type Scenario = { name: string; run: () => Promise<string[]> };
type Row = { scenario: string; answers: string; workerMiB: number; inferenceMiB: number };

const statusOf = async (response: Response): Promise<string> => {
  const text = await response.text();
  const envelope = /"error":\["([^"]+)"/.exec(text)?.[1];
  return envelope ? `${response.status} ${envelope}` : `${response.status}`;
};

/** How many of each answer came: `10 x 200 Unauthorized.`. */
const tally = (answers: string[]): string =>
  [...answers.reduce((counts, answer) => counts.set(answer, (counts.get(answer) ?? 0) + 1), new Map<string, number>())]
    .map(([answer, count]) => `${count} x ${answer}`)
    .join('; ');

/** Resident memory of workerd and of the inference service now, in MiB. */
async function residentNow(): Promise<Record<string, number>> {
  const sample = sampleMemory(process.pid, processKind);
  await new Promise((resolve) => setTimeout(resolve, 500));
  return Object.fromEntries(Object.entries(sample.stop()).map(([label, memory]) => [label, memory.peakRssMiB]));
}

/** The scenario's answers, and the peak memory of each process above its level just before (RSS is not given back). */
async function measure(scenario: Scenario): Promise<Row> {
  const before = await residentNow();
  const memory = sampleMemory(process.pid, processKind);
  const answers = await scenario.run();
  await new Promise((resolve) => setTimeout(resolve, 1000));
  const peaks = memory.stop();
  return {
    scenario: scenario.name,
    answers: tally(answers),
    workerMiB: (peaks.worker?.peakRssMiB ?? 0) - (before.worker ?? 0),
    inferenceMiB: (peaks.inference?.peakRssMiB ?? 0) - (before.inference ?? 0),
  };
}

async function main(): Promise<void> {
  rmSync(STATE_DIR, { recursive: true, force: true });
  const [port, inferencePort] = [await freePort(), await freePort()];
  const stack = await startLocalStack({ port, inferencePort, adminToken: 'measure-memory', persistTo: STATE_DIR });
  try {
    const flood = 'a&'.repeat(1024 * 1024);
    const junk = new Uint8Array(45 * 1024 * 1024);
    const scenarios: Scenario[] = [
      {
        name: `${CONCURRENT} x 2 MB of a&a&... without credentials to /insert`,
        run: () => Promise.all(Array.from({ length: CONCURRENT }, async () => statusOf(await fetch(`${stack.baseUrl}/insert`, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: flood })))),
      },
      {
        name: `${CONCURRENT} x 2 MB of a&a&... without credentials to /uploadsearch`,
        run: () => Promise.all(Array.from({ length: CONCURRENT }, async () => statusOf(await fetch(`${stack.baseUrl}/uploadsearch`, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: flood })))),
      },
      {
        name: `${CONCURRENT} x 45 MB to the inference service's /predict`,
        run: () =>
          Promise.all(
            Array.from({ length: CONCURRENT }, async () => {
              const form = predictForm(junk, ['embed']);
              const response = await fetch(`${stack.inferenceUrl}/predict`, { method: 'POST', body: form, headers: { authorization: `Bearer ${stack.inferenceSecret}` } });
              await response.arrayBuffer();
              return String(response.status);
            }),
          ),
      },
    ];
    const idle = await residentNow();
    const rows: Row[] = [];
    for (const scenario of scenarios) rows.push(await measure(scenario));

    console.log(`\nidle: workerd ${idle.worker} MiB, inference ${idle.inference} MiB`);
    console.log('| scenario | answers | workerd peak above the level before | inference peak above the level before |\n| --- | --- | --- | --- |');
    for (const row of rows) console.log(`| ${row.scenario} | ${row.answers} | ${row.workerMiB} MiB | ${row.inferenceMiB} MiB |`);
    mkdirSync(path.dirname(OUT), { recursive: true });
    writeFileSync(OUT, JSON.stringify({ idle, rows }, null, 2));
  } finally {
    stack.stop();
  }
}

await main();
process.exit(0);
