import type { GraphBuilder, Value } from './graph.ts';
import type { DataType, Tensor } from './onnx-model.ts';

/** One attribute of a GraphDef node as TF.js stores it in model.json (int64s as strings, strings as base64). */
export type TfAttrValue = {
  readonly i?: string;
  readonly f?: number;
  readonly b?: boolean;
  readonly s?: string;
  readonly type?: string;
  readonly list?: { readonly i?: readonly string[]; readonly s?: readonly string[] };
  readonly shape?: { readonly dim?: readonly { readonly size?: string }[]; readonly unknownRank?: boolean };
};

/** A node of a TF.js graph model's modelTopology (a GraphDef in JSON). */
export type TfNode = {
  readonly name: string;
  readonly op: string;
  /** "node" or "node:K" for output K of another node; "^node" for a control dependency. */
  readonly input?: readonly string[];
  readonly attr?: Readonly<Record<string, TfAttrValue>>;
};

const DATA_TYPES: Readonly<Record<string, DataType>> = {
  DT_FLOAT: 'float32',
  DT_INT32: 'int32',
  DT_INT64: 'int64',
  DT_BOOL: 'bool',
};

/** What an op translation sees of its node: converted inputs, attributes, and the graph to add to. */
export class NodeContext {
  readonly node: TfNode;
  readonly graph: GraphBuilder;
  /** The data inputs, converted, in order (control dependencies left out). */
  readonly inputs: readonly Value[];

  constructor(node: TfNode, graph: GraphBuilder, inputs: readonly Value[]) {
    this.node = node;
    this.graph = graph;
    this.inputs = inputs;
  }

  /** An Error naming the node, for what the converter cannot translate. */
  error(message: string): Error {
    return new Error(`${this.node.op} node "${this.node.name}": ${message}`);
  }

  input(index: number): Value {
    const value = this.inputs[index];
    if (!value) throw this.error(`input ${index} is missing`);
    return value;
  }

  /** An input that must be known at conversion time (weights, axes, shapes). */
  constant(index: number): Tensor {
    const constant = this.input(index).constant;
    if (!constant) throw this.error(`input ${index} must be a constant`);
    return constant;
  }

  /** An integer constant input as numbers (a scalar gives one). */
  constantInts(index: number): number[] {
    const constant = this.constant(index);
    if (constant.dtype !== 'int32' && constant.dtype !== 'int64') throw this.error(`input ${index} must be integers`);
    return Array.from(constant.data as Int32Array | BigInt64Array, Number);
  }

  /** The ONNX name for this node's output `index`, after TF's tensor names ("node:0"). */
  outputName(index = 0): string {
    return `${this.node.name}:${index}`;
  }

  int(name: string, fallback?: number): number {
    const value = this.node.attr?.[name]?.i;
    if (value !== undefined) return Number(value);
    if (fallback === undefined) throw this.error(`attribute ${name} is missing`);
    return fallback;
  }

  ints(name: string): number[] {
    return (this.node.attr?.[name]?.list?.i ?? []).map(Number);
  }

  bool(name: string): boolean {
    return this.node.attr?.[name]?.b ?? false;
  }

  string(name: string, fallback?: string): string {
    const value = this.node.attr?.[name]?.s;
    if (value !== undefined) return Buffer.from(value, 'base64').toString('utf8');
    if (fallback === undefined) throw this.error(`attribute ${name} is missing`);
    return fallback;
  }

  strings(name: string): string[] {
    return (this.node.attr?.[name]?.list?.s ?? []).map((value) => Buffer.from(value, 'base64').toString('utf8'));
  }

  dtype(name: string): DataType {
    const type = this.node.attr?.[name]?.type;
    const dtype = type === undefined ? undefined : DATA_TYPES[type];
    if (!dtype) throw this.error(`attribute ${name}: type ${type ?? '(none)'} is not supported`);
    return dtype;
  }
}
