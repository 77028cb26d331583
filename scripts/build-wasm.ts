import { readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import initWabt from 'wabt';

/**
 * Assembles the Worker's WebAssembly (`src/**.wat` beside their `.wasm`), run by `npm install`. Workers may not
 * compile Wasm from bytes at run time, so the binary must exist when wrangler or vitest bundles the Worker.
 */
const SOURCES = ['src/ports/vector-index/dots.wat'];

const root = path.join(import.meta.dirname, '..');
const wabt = await initWabt();
for (const source of SOURCES) {
  const module = wabt.parseWat(source, await readFile(path.join(root, source), 'utf8'), { simd: true });
  try {
    module.validate();
    const target = source.replace(/\.wat$/, '.wasm');
    await writeFile(path.join(root, target), module.toBinary({}).buffer);
    console.log(`${source} → ${target}`);
  } finally {
    module.destroy();
  }
}
