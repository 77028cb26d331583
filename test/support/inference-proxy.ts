import http from 'node:http';

/**
 * A proxy in front of the inference service that counts the `/predict` calls it forwards, so a test can tell
 * whether the Worker called inference at all. `intercept` may answer a call itself (the fault tests' faults);
 * it returns false to let the call through.
 */
export type Intercept = (request: http.IncomingMessage, response: http.ServerResponse) => boolean;

export type InferenceProxy = {
  readonly url: string;
  /** `/predict` calls received so far, forwarded or intercepted. */
  predictions(): number;
  close(): Promise<void>;
};

export async function startInferenceProxy(options: { port: number; upstream: string; intercept?: Intercept }): Promise<InferenceProxy> {
  let predictions = 0;
  const server = http.createServer((request, response) => {
    if ((request.url ?? '/').split('?')[0] === '/predict') predictions++;
    if (options.intercept?.(request, response)) return;
    const forwarded = http.request(`${options.upstream}${request.url}`, { method: request.method, headers: request.headers }, (answer) => {
      response.writeHead(answer.statusCode ?? 502, answer.headers);
      answer.pipe(response);
    });
    forwarded.on('error', () => response.destroy());
    request.pipe(forwarded);
  });
  await new Promise<void>((resolve) => server.listen(options.port, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${options.port}`,
    predictions: () => predictions,
    async close() {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}
