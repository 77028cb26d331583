/** A `.wasm` import is a compiled module, as wrangler and the Vitest integration bundle it. */
declare module '*.wasm' {
  const module: WebAssembly.Module;
  export default module;
}
