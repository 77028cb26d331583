import { writeFile } from 'node:fs/promises';
import http from 'node:http';
import type { TestProject } from 'vitest/node';

declare module 'vitest' {
  export interface ProvidedContext {
    benchSizes: number[];
    benchResultsUrl: string;
  }
}

/**
 * Global setup of `vitest.bench.config.ts`: the collection sizes to time (BENCH_SIZES), and a server on 127.0.0.1
 * that writes what the run posts to BENCH_SEARCH_OUT: workerd cannot write files.
 */
export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  const out = process.env.BENCH_SEARCH_OUT ?? '.local/bench-search.json';
  const server = http.createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      writeFile(out, Buffer.concat(chunks)).then(
        () => response.writeHead(204).end(),
        (error: unknown) => response.writeHead(500).end(String(error)),
      );
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  project.provide('benchSizes', (process.env.BENCH_SIZES ?? '1000,10000,100000').split(',').map(Number));
  project.provide('benchResultsUrl', `http://127.0.0.1:${port}/`);
  return () => new Promise((resolve) => server.close(() => resolve()));
}
