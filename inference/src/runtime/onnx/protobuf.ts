/**
 * A protocol-buffers wire-format writer: just the encodings onnx-proto.ts
 * needs (varints, length-delimited bytes and messages).
 * Nested messages keep their chunks until finish(), so the weights are
 * copied once.
 */

const WIRE_VARINT = 0;
const WIRE_LENGTH_DELIMITED = 2;

const encoder = new TextEncoder();

export class ProtoWriter {
  #chunks: Uint8Array[] = [];
  #length = 0;

  /** An int32/int64/enum/bool field; negative values take ten bytes, as int64s do. */
  varint(field: number, value: number): this {
    this.#key(field, WIRE_VARINT);
    this.#varint(value);
    return this;
  }

  string(field: number, value: string): this {
    return this.bytes(field, encoder.encode(value));
  }

  bytes(field: number, value: Uint8Array): this {
    this.#key(field, WIRE_LENGTH_DELIMITED);
    this.#varint(value.length);
    this.#push(value);
    return this;
  }

  /** An embedded message, written by `write` into a writer of its own. */
  message(field: number, write: (writer: ProtoWriter) => void): this {
    const nested = new ProtoWriter();
    write(nested);
    this.#key(field, WIRE_LENGTH_DELIMITED);
    this.#varint(nested.#length);
    for (const chunk of nested.#chunks) this.#push(chunk);
    return this;
  }

  finish(): Uint8Array {
    const out = new Uint8Array(this.#length);
    let offset = 0;
    for (const chunk of this.#chunks) {
      out.set(chunk, offset);
      offset += chunk.length;
    }
    return out;
  }

  #key(field: number, wireType: number): void {
    this.#varint(field * 8 + wireType);
  }

  #varint(value: number): void {
    if (!Number.isSafeInteger(value)) throw new Error(`protobuf varint: ${value} is not a safe integer`);
    const bytes: number[] = [];
    if (value < 0) {
      // Two's complement over 64 bits, as protobuf encodes negative int32/int64.
      let rest = BigInt.asUintN(64, BigInt(value));
      while (rest > 0x7fn) {
        bytes.push(Number(rest & 0x7fn) | 0x80);
        rest >>= 7n;
      }
      bytes.push(Number(rest));
    } else {
      let rest = value;
      while (rest > 0x7f) {
        bytes.push((rest % 0x80) | 0x80);
        rest = Math.floor(rest / 0x80);
      }
      bytes.push(rest);
    }
    this.#push(Uint8Array.from(bytes));
  }

  #push(chunk: Uint8Array): void {
    this.#chunks.push(chunk);
    this.#length += chunk.length;
  }
}
