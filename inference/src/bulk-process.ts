/**
 * Bulk predictions in a process of their own, under Linux's SCHED_IDLE policy (docs/decisions.md, "Searches while a
 * catalog loads"). Bulk lanes in the background are not enough: an insert's decoding (libvips, libuv's threads), its
 * palettes and its copies to the engine run on the service's own threads at the normal policy, and a search shares
 * the cores with them. In a process started under SCHED_IDLE every thread is in the background, so a search's
 * threads take the cores at once; the service forwards bulk /predict requests to it and answers with its answers.
 * The process serves bulk runs only (bulk lanes, no interactive thread); the service keeps no lane.
 *
 * Its work still counts in the service's shares (priority.ts): a forwarded request is a bulk job from its start to
 * its answer, so that searches are held to their share while inserts wait, as they are with the lanes.
 */
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { PRIORITY_HEADER } from '@edge-image-search/contract/wire';
import { ApiError } from './errors.ts';
import { PriorityGate } from './priority.ts';
import { choiceSetting } from './settings.ts';

/** INFERENCE_BULK_PROCESS: `auto` (the default) starts one where it helps and can be had; `off` keeps bulk here. */
export const BULK_PROCESS_CHOICES = ['auto', 'off'] as const;

/** What the service is: the one callers reach, or the bulk process it started (set by it, never by hand). */
export const ROLES = ['service', 'bulk'] as const;
export type Role = (typeof ROLES)[number];

export const roleFromEnv = (env: NodeJS.ProcessEnv): Role => choiceSetting(env, 'INFERENCE_ROLE', ROLES);

/**
 * Whether this service runs its bulk predictions in a process of their own: when asked (`auto`), on the CPU alone
 * (an accelerator has no cores to share), and where SCHED_IDLE can be had (Linux, util-linux's chrt). Elsewhere bulk
 * runs on the service's bulk lanes (runtime/onnxruntime.ts).
 */
export function wantsBulkProcess(env: NodeJS.ProcessEnv, role: Role, onCpuAlone: boolean): boolean {
  const setting = choiceSetting(env, 'INFERENCE_BULK_PROCESS', BULK_PROCESS_CHOICES);
  return role === 'service' && setting === 'auto' && onCpuAlone && canRunIdle();
}

function canRunIdle(): boolean {
  try {
    execFileSync('chrt', ['--idle', '0', 'true'], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}

const SERVER = fileURLToPath(new URL('./server.ts', import.meta.url));

/** The bulk process, seen from the service: started with it, ready when its models are, gone with it. */
export class BulkProcess {
  readonly #child: ChildProcess;
  readonly #secret = randomBytes(24).toString('hex');
  readonly #url: Promise<string>;
  /**
   * Forwarded requests as bulk jobs in the shares, interactive work first (priority.ts). Its slots are unbounded: the
   * service's bulk in-flight limit (INFERENCE_MAX_BULK, app.ts) already bounds what is forwarded.
   */
  readonly #gate = new PriorityGate(Number.POSITIVE_INFINITY, Number.POSITIVE_INFINITY);

  /**
   * Starts it with this service's settings, listening on a port of loopback's it picks. Its output comes here
   * under its own name; should it exit, or fail to start, the service stops too (`onExit`, with what ended it): bulk
   * work would have nowhere to go.
   */
  constructor(env: NodeJS.ProcessEnv, onExit: (ending: string) => void) {
    // An inspector's port would be taken twice.
    const execArgv = process.execArgv.filter((flag) => !flag.startsWith('--inspect'));
    this.#child = spawn('chrt', ['--idle', '0', process.execPath, ...execArgv, SERVER], {
      env: { ...env, INFERENCE_ROLE: 'bulk', INFERENCE_HOST: '127.0.0.1', INFERENCE_PORT: '0', INFERENCE_SECRET: this.#secret },
      // Its stdin is how it knows the service is gone (server.ts): the pipe closes with this process, however it ends.
      stdio: ['pipe', 'pipe', 'inherit'],
    });
    this.#child.once('exit', (code, signal) => onExit(signal ? `signal ${signal}` : `code ${code}`));
    this.#child.once('error', (error) => onExit(`failed to start: ${error.message}`));
    this.#url = new Promise((resolve) => {
      let pending = '';
      this.#child.stdout!.setEncoding('utf8').on('data', (chunk: string) => {
        const lines = (pending + chunk).split('\n');
        pending = lines.pop()!;
        for (const line of lines) {
          const listening = /^inference: listening on (http:\/\/\S+)/.exec(line);
          if (listening) resolve(listening[1]!);
          else console.log(line.replace(/^inference:/, 'inference (bulk process):'));
        }
      });
    });
  }

  get pid(): number | undefined {
    return this.#child.pid;
  }

  /** Resolves once it answers /ready: its models loaded. */
  async ready(): Promise<void> {
    const url = await this.#url;
    for (;;) {
      const ready = await fetch(`${url}/ready`).then(
        (response) => response.ok,
        () => false,
      );
      if (ready) return;
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  }

  /**
   * A bulk /predict body, answered by the bulk process: its status, its JSON, its retry-after; 503 bulk_unavailable
   * when it gives no answer (it died, or its connection broke), which a caller tries again later as any 503.
   */
  predict(body: Uint8Array, contentType: string): Promise<Response> {
    return this.#gate.run(async () => {
      let response: Response;
      let answer: ArrayBuffer;
      try {
        response = await fetch(`${await this.#url}/predict`, {
          method: 'POST',
          body,
          headers: { 'content-type': contentType, authorization: `Bearer ${this.#secret}`, [PRIORITY_HEADER]: 'bulk' },
        });
        // Read here: until its answer is in, the request is bulk work under way.
        answer = await response.arrayBuffer();
      } catch (error) {
        throw new ApiError(503, 'bulk_unavailable', `The bulk process gave no answer (${error instanceof Error ? error.message : String(error)}); retry later.`);
      }
      const headers = new Headers({ 'content-type': response.headers.get('content-type') ?? 'application/json' });
      const retryAfter = response.headers.get('retry-after');
      if (retryAfter) headers.set('retry-after', retryAfter);
      return new Response(answer, { status: response.status, headers });
    }, 'bulk');
  }
}
