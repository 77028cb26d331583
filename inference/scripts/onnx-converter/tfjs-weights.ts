import type { io } from '@tensorflow/tfjs';
import type { Tensor } from './onnx-model.ts';

/**
 * The weights of a TF.js graph model, decoded as tfjs decodes them
 * (tfjs-core io_utils decodeWeights): uint8/uint16-quantized values become
 * `q * scale + min` (rounded for int32 weights), float16 ones float32.
 * Only the weights asked for are decoded.
 */
export class TfjsWeights {
  readonly #data: ArrayBuffer;
  readonly #entries = new Map<string, { spec: io.WeightsManifestEntry; offset: number; byteLength: number }>();

  constructor(specs: readonly io.WeightsManifestEntry[], data: ArrayBuffer) {
    this.#data = data;
    let offset = 0;
    for (const spec of specs) {
      const byteLength = spec.shape.reduce((a, b) => a * b, 1) * bytesPerValue(spec);
      this.#entries.set(spec.name, { spec, offset, byteLength });
      offset += byteLength;
    }
    if (offset !== data.byteLength) {
      throw new Error(`the weights manifest describes ${offset} bytes, the shards hold ${data.byteLength}`);
    }
  }

  get(name: string): Tensor | undefined {
    const entry = this.#entries.get(name);
    if (!entry) return undefined;
    const { spec, offset, byteLength } = entry;
    // A copy: offsets after uint8 weights need not be aligned for a typed array.
    const bytes = this.#data.slice(offset, offset + byteLength);
    const dims = spec.shape;
    const quantization = spec.quantization;
    if (!quantization) {
      switch (spec.dtype) {
        case 'float32':
          return { dtype: 'float32', dims, data: new Float32Array(bytes) };
        case 'int32':
          return { dtype: 'int32', dims, data: new Int32Array(bytes) };
        case 'bool':
          return { dtype: 'bool', dims, data: new Uint8Array(bytes) };
        default:
          throw new Error(`weight ${name}: dtype ${spec.dtype} is not supported`);
      }
    }
    if (quantization.dtype === 'float16') {
      if (spec.dtype !== 'float32') throw new Error(`weight ${name}: float16 quantization of ${spec.dtype}`);
      return { dtype: 'float32', dims, data: Float32Array.from(new Uint16Array(bytes), halfToFloat) };
    }
    const { scale, min } = quantization;
    if (scale === undefined || min === undefined) {
      throw new Error(`weight ${name}: ${quantization.dtype} quantization lacks scale or min`);
    }
    const quantized = quantization.dtype === 'uint8' ? new Uint8Array(bytes) : new Uint16Array(bytes);
    switch (spec.dtype) {
      case 'float32':
        return { dtype: 'float32', dims, data: Float32Array.from(quantized, (q) => q * scale + min) };
      case 'int32':
        return { dtype: 'int32', dims, data: Int32Array.from(quantized, (q) => Math.round(q * scale + min)) };
      default:
        throw new Error(`weight ${name}: ${quantization.dtype} quantization of ${spec.dtype}`);
    }
  }
}

function bytesPerValue(spec: io.WeightsManifestEntry): number {
  const dtype = spec.quantization?.dtype ?? spec.dtype;
  switch (dtype) {
    case 'float32':
    case 'int32':
      return 4;
    case 'float16':
    case 'uint16':
      return 2;
    case 'uint8':
    case 'bool':
      return 1;
    default:
      // Strings have per-value lengths, so later offsets could not be told either.
      throw new Error(`weight ${spec.name}: dtype ${dtype} is not supported`);
  }
}

function halfToFloat(bits: number): number {
  const sign = bits & 0x8000 ? -1 : 1;
  const exponent = (bits >> 10) & 0x1f;
  const fraction = bits & 0x3ff;
  if (exponent === 0) return sign * 2 ** -14 * (fraction / 1024);
  if (exponent === 0x1f) return fraction ? NaN : sign * Infinity;
  return sign * 2 ** (exponent - 15) * (1 + fraction / 1024);
}
