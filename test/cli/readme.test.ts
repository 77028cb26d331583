import assert from 'node:assert/strict';
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { existsSync, readFileSync, rmSync } from 'node:fs';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { promisify } from 'node:util';
import { ROOT } from '../../scripts/lib/wrangler-env.ts';
import { freePort } from '@edge-image-search/devtools/free-port';

/**
 * The README's "Use it" works top to bottom offline: `npm start` on free ports with a fresh stack folder
 * (STACK_DIR), then every ```sh block marked `<!-- readme-test -->` in "Use it" run as written (bash, curl, npm), in
 * order, its placeholders (the demo application's keys and id, ids from earlier answers, the port) filled in; each
 * answer is checked. A command added to or dropped from those blocks fails the test until a check is added or dropped here.
 */

/** npm start's folder for this test (its data, the demo application's keys, its record and log). */
const STACK_DIR = path.join(ROOT, '.wrangler/readme-test-stack');
const NODE = path.join(ROOT, 'node_modules/.bin/node');
/**
 * The environment of npm start and of every command: this test's stack folder and admin token, Node 22 first on the
 * PATH (as under npm), and neither API_URL, PORT nor keys, so that `npm run import` and `npm run admin` find the
 * stack and its demo application as after a plain `npm start`.
 */
const { API_URL: _apiUrl, PORT: _port, ACCESS_KEY: _accessKey, SECRET_KEY: _secretKey, ...inherited } = process.env;
const commandEnv = {
  ...inherited,
  PATH: `${path.dirname(NODE)}${path.delimiter}${process.env.PATH}`,
  STACK_DIR,
  ADMIN_TOKEN: 'readme-test-admin-token',
};
const README_URL = 'http://127.0.0.1:8787';
const MARK = '<!-- readme-test -->';
const SMALL_IMAGES = [
  'food_fruit_apple_fuji',
  'food_fruit_pomegranate',
  'food_nuts_almond',
  'food_vegetables_chilepepper',
  'food_vegetables_pumpkin_small',
  'sports_tennis_ball',
];
/** The fields of the demo application's schema (scripts/start.ts). */
const DEMO_FIELDS = ['brand', 'category', 'color', 'description', 'price'];

type DemoApp = { app_id: string; access_key: string; secret_key: string; app_key: string };
/** An answer's JSON, as the checks read it. */
type Answer = Record<string, any>;
/** A command's exit code, its standard output, and both outputs together (for messages). */
type Run = { code: number; stdout: string; output: string };

let start: ChildProcess;
let baseUrl: string;
let demo: DemoApp;
/** What earlier answers gave, for the placeholders of later commands. */
const found: Record<string, string> = {};

/** The commands of the marked ```sh blocks of "## Use it", comments dropped and continued lines joined. */
function readmeCommands(readme: string): string[] {
  const section = readme.split(/^## Use it$/m)[1]?.split(/^## /m)[0];
  assert.ok(section, 'README.md has a "## Use it" section');
  const blocks = [...section.matchAll(new RegExp(`${MARK}\\n\`\`\`sh\\n([\\s\\S]*?)\`\`\``, 'g'))].map((match) => match[1]!);
  return blocks.flatMap((block) =>
    block
      .replace(/\\\n\s*/g, '')
      .split('\n')
      .filter((line) => line.trim() !== '' && !line.trimStart().startsWith('#')),
  );
}

/** A README command with its placeholders filled in; a placeholder no earlier answer gave fails the test. */
function filledIn(command: string): string {
  const values: Record<string, string | undefined> = {
    'KEY:SECRET': `${demo.access_key}:${demo.secret_key}`,
    APP_ID: demo.app_id,
    APP_KEY: demo.app_key,
    IM_ID: found.IM_ID,
    TRANS_ID: found.TRANS_ID,
  };
  let filled = command.replaceAll(README_URL, baseUrl);
  for (const [placeholder, value] of Object.entries(values)) {
    if (!new RegExp(`\\b${placeholder}\\b`).test(filled)) continue;
    assert.ok(value, `${placeholder} is known before: ${command}`);
    filled = filled.replace(new RegExp(`\\b${placeholder}\\b`, 'g'), value);
  }
  return filled;
}

async function run(command: string): Promise<Run> {
  try {
    const { stdout, stderr } = await promisify(execFile)('bash', ['-c', command], { cwd: ROOT, env: commandEnv, maxBuffer: 16 << 20 });
    return { code: 0, stdout, output: stdout + stderr };
  } catch (error) {
    const { code = 1, stdout = '', stderr = '' } = error as { code?: number; stdout?: string; stderr?: string };
    return { code, stdout, output: stdout + stderr };
  }
}

/** The JSON answer in a command's output (npm prints its own lines before it). */
function ok({ code, stdout, output }: Run): Answer {
  assert.equal(code, 0, output);
  const start = stdout.indexOf('{');
  assert.ok(start >= 0, output);
  const answer = JSON.parse(stdout.slice(start)) as Answer;
  assert.equal(answer.status, 'OK', output);
  return answer;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Each command of the README, in order: what it must look like, and what its answer must say. */
const CHECKS: { command: RegExp; check(run: Run, again: () => Promise<Run>): Promise<void> | void }[] = [
  {
    command: /^npm run import -- test\/fixtures\/images$/,
    check: ({ code, output }) => {
      assert.equal(code, 0, output);
      assert.match(output, /101 images searchable, 6 failed\./);
      for (const name of SMALL_IMAGES) assert.match(output, new RegExp(`${name}: 203 Unsupported image dimension\\. \\(at least 100 px on one side\\)`));
    },
  },
  {
    command: /\/search\?im_name=household_tools_wrench&limit=5&score=true/,
    check: (result) => {
      const answer = ok(result);
      assert.equal(answer.total, 100); // every searchable image but the query
      assert.equal(answer.result.length, 5);
      assert.ok(answer.result.every((item: Answer) => typeof item.score === 'number' && item.im_name !== 'household_tools_wrench'));
    },
  },
  {
    command: /\/uploadsearch -F image=@test\/fixtures\/images\/opencv-doc_plant\.jpg/,
    check: (result) => {
      const answer = ok(result);
      assert.equal(answer.product_types[0].type, 'Vase and Pot');
      assert.ok(answer.result.length > 0);
      found.IM_ID = answer.im_id;
    },
  },
  {
    command: /\/uploadsearch -F im_id=IM_ID -F box=0,0,190,333/,
    check: (result) => assert.ok(ok(result).result.length > 0),
  },
  {
    command: /\/uploadsearch -F im_id=IM_ID -F box=281,265,281,265/,
    check: (result) => {
      const answer = ok(result);
      assert.equal(answer.product_types[0].type, 'Vase and Pot');
      assert.equal(answer.im_id, found.IM_ID);
    },
  },
  {
    command: /\/discoversearch -F im_id=IM_ID -F detection_limit=3 -F result_limit=5/,
    check: (result) => {
      const answer = ok(result);
      assert.ok(answer.objects.some((object: Answer) => object.type === 'Vase and Pot'));
      assert.ok(answer.objects.length <= 3 && answer.objects.every((object: Answer) => object.result.length === 5));
    },
  },
  {
    command: /\/colorsearch\?color=c0392b:70&color=f5f5dc:30&limit=10/,
    check: (result) => assert.equal(ok(result).result.length, 10),
  },
  {
    command: /^curl '[^']*\/search\?im_name=household_tools_wrench&access_key=APP_KEY'$/,
    check: (result) => assert.ok(ok(result).result.length > 0),
  },
  {
    command: /^npm run admin -- get-app APP_ID$/,
    check: (result) => {
      const answer = ok(result);
      const fields = answer.schema.fields as { name: string; searchable: boolean }[];
      assert.deepEqual(fields.map((field) => field.name).sort(), DEMO_FIELDS);
      assert.ok(fields.every((field) => field.searchable));
    },
  },
  {
    command: /\/insert -d 'im_name\[0\]=household_tools_wrench'/,
    check: (result) => {
      const answer = ok(result);
      assert.equal(answer.total, 3);
      assert.deepEqual(answer.ignored_fields, [{ index: 2, im_name: 'household_rubberduck', fields: ['size'] }]);
      found.TRANS_ID = String(answer.trans_id);
    },
  },
  {
    command: /\/insert\/status\/TRANS_ID/,
    // "until processed_percent is 100": asked again, as the README says.
    check: async (first, again) => {
      let status = ok(first).result[0];
      for (let tries = 0; status.processed_percent < 100 && tries < 60; tries++) {
        await sleep(500);
        status = ok(await again()).result[0];
      }
      assert.equal(status.processed_percent, 100);
      assert.deepEqual([status.success_count, status.fail_count], [3, 0]);
    },
  },
  {
    command: /\/search\?im_name=household_tools_wrench&fq=brand:acme&fl=brand&fl=price/,
    check: (result) => {
      const answer = ok(result);
      assert.deepEqual(answer.result.map((item: Answer) => [item.im_name, item.value_map]), [
        ['household_tools_measuring_tape', { brand: 'acme', price: '8' }],
      ]);
    },
  },
];

before(
  async () => {
    rmSync(STACK_DIR, { recursive: true, force: true });
    const [port, inferencePort] = [await freePort(), await freePort()];
    start = spawn(NODE, [path.join(ROOT, 'scripts/start.ts')], {
      cwd: ROOT,
      env: { ...commandEnv, PORT: String(port), INFERENCE_PORT: String(inferencePort) },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let printed = '';
    start.stdout!.on('data', (chunk: Buffer) => (printed += chunk));
    start.stderr!.on('data', (chunk: Buffer) => (printed += chunk));
    const exited = new Promise<never>((_, reject) => start.once('exit', (code) => reject(new Error(`npm start exited (${code}):\n${printed}`))));
    const record = path.join(STACK_DIR, 'stack.json');
    const until = async (done: () => boolean) => {
      while (!done() && start.exitCode === null) await sleep(250);
    };
    await Promise.race([until(() => existsSync(record)), exited]);
    baseUrl = (JSON.parse(readFileSync(record, 'utf8')) as { url: string }).url;
    demo = JSON.parse(readFileSync(path.join(STACK_DIR, 'demo-app.json'), 'utf8')) as DemoApp;
    // The keys the README's KEY:SECRET stands for are those npm start prints.
    await Promise.race([until(() => printed.includes(demo.access_key) && printed.includes(demo.secret_key)), exited]);
  },
  { timeout: 180_000 },
);

after(async () => {
  if (!start || start.exitCode !== null) return;
  const exited = new Promise((resolve) => start.once('exit', resolve));
  start.kill('SIGTERM');
  await exited;
});

test("the README's \"Use it\" commands, in order, each answered as it says", { timeout: 600_000 }, async () => {
  const commands = readmeCommands(readFileSync(path.join(ROOT, 'README.md'), 'utf8'));
  assert.deepEqual(
    commands.map((command, index) => CHECKS[index]?.command.test(command) ?? false),
    commands.map(() => true),
    `each README command has its check, in order:\n${commands.join('\n')}`,
  );
  assert.equal(commands.length, CHECKS.length);
  for (const [index, command] of commands.entries()) {
    const filled = filledIn(command);
    await CHECKS[index]!.check(await run(filled), () => run(filled));
  }
});
