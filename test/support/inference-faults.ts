import type { ChildProcess } from 'node:child_process';
import type http from 'node:http';
import { startInference } from '@edge-image-search/devtools/inference-service';
import { startInferenceProxy, type Intercept } from './inference-proxy.ts';

/** The Worker's INFERENCE_TIMEOUT_MS in the fault tests. */
export const FAULTS_INFERENCE_TIMEOUT_MS = 2000;

/** What the proxy does with a /predict call. */
export const FAULT_MODES = ['pass', 'hang', 'garbage', 'busy'] as const;
export type FaultMode = (typeof FAULT_MODES)[number];

/**
 * The real inference service behind a proxy that the fault tests steer, so that the Worker meets each fault for
 * real. The Worker's INFERENCE_URL is the proxy; control calls (from the tests, over loopback):
 * - `POST /__faults/mode/<mode>`: `pass` forwards; `hang` accepts and never answers; `garbage` answers 200 with a
 *   body that is not a prediction; `busy` answers 503 with `Retry-After: 1` as the overloaded service does;
 * - `POST /__faults/inference/stop` and `.../start`: kills the service process (SIGKILL) or starts it again on
 *   its port; while it is down the proxy drops each call's connection, as a dead host would;
 * - `GET /__faults/predictions`: /predict calls the proxy received so far.
 */
export async function startFaultyInference(options: { proxyPort: number; inferencePort: number; secret: string }): Promise<{ close(): Promise<void> }> {
  let service: ChildProcess | undefined = await startInference(options.inferencePort, { secret: options.secret });
  let mode: FaultMode = 'pass';
  const hanging = new Set<http.ServerResponse>();

  const control = async (action: string): Promise<unknown> => {
    const [kind, value] = action.split('/');
    if (kind === 'mode' && (FAULT_MODES as readonly string[]).includes(value!)) mode = value as FaultMode;
    else if (kind === 'inference' && value === 'stop') {
      if (service) {
        const exited = new Promise((resolve) => service!.once('exit', resolve));
        service.kill('SIGKILL');
        await exited;
        service = undefined;
      }
    } else if (kind === 'inference' && value === 'start') service ??= await startInference(options.inferencePort, { secret: options.secret });
    else if (kind === 'predictions') return { predictions: proxy.predictions() };
    else throw new Error(`unknown control ${action}`);
    return { mode, running: service !== undefined };
  };

  /** Control calls and faults are answered here; anything else is forwarded to the service. */
  const intercept: Intercept = (request, response) => {
    const path = (request.url ?? '/').split('?')[0]!;
    if (path.startsWith('/__faults/')) {
      control(path.slice('/__faults/'.length)).then(
        (body) => response.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(body)),
        (error: unknown) => response.writeHead(400).end(String(error)),
      );
      return true;
    }
    if (mode === 'hang') hanging.add(response);
    else if (mode === 'garbage') request.resume().on('end', () => response.writeHead(200, { 'content-type': 'application/json' }).end('{"image": nul'));
    else if (mode === 'busy') {
      request.resume().on('end', () => response.writeHead(503, { 'content-type': 'application/json', 'retry-after': '1' }).end('{"error":{"code":"busy","message":"Too many predictions are waiting; retry shortly."}}'));
    }
    return mode !== 'pass';
  };
  const proxy = await startInferenceProxy({ port: options.proxyPort, upstream: `http://127.0.0.1:${options.inferencePort}`, intercept });
  return {
    async close() {
      for (const response of hanging) response.destroy();
      service?.kill();
      await proxy.close();
    },
  };
}
