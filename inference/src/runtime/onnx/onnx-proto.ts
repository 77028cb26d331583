import { ProtoWriter } from './protobuf.ts';

/**
 * The parts of ONNX's protobuf schema (onnx/onnx.proto) the converter
 * writes, with their field numbers: a model of one graph, its nodes with
 * int/ints/string attributes, initializers as raw little-endian data, and
 * typed inputs and outputs.
 */

/** TensorProto.DataType codes of the element types used. */
const DATA_TYPE_CODES = { float32: 1, int32: 6, int64: 7, bool: 9 } as const;
export type DataType = keyof typeof DATA_TYPE_CODES;

export function dataTypeCode(dtype: DataType): number {
  return DATA_TYPE_CODES[dtype];
}

export type TensorData = Float32Array | Int32Array | BigInt64Array | Uint8Array;

export type Tensor = {
  readonly dtype: DataType;
  readonly dims: readonly number[];
  /** Row-major; bool as one byte per value. */
  readonly data: TensorData;
};

export type Attribute =
  | { readonly name: string; readonly int: number }
  | { readonly name: string; readonly ints: readonly number[] }
  | { readonly name: string; readonly string: string };

export type Node = {
  readonly name: string;
  readonly opType: string;
  readonly inputs: readonly string[];
  readonly outputs: readonly string[];
  readonly attributes: readonly Attribute[];
};

/** A graph input or output: a name, an element type and dims (a string names a free dimension). */
export type ValueInfo = {
  readonly name: string;
  readonly dtype: DataType;
  readonly dims?: readonly (number | string)[];
};

export type Graph = {
  readonly name: string;
  readonly nodes: readonly Node[];
  readonly initializers: ReadonlyMap<string, Tensor>;
  readonly inputs: readonly ValueInfo[];
  readonly outputs: readonly ValueInfo[];
};

export type Model = {
  readonly graph: Graph;
  /** Of the default (ai.onnx) domain. */
  readonly opsetVersion: number;
  readonly producerName: string;
  readonly docString: string;
};

/** IR version 8 is the one that goes with opset 17 (onnx/docs/Versioning.md). */
const IR_VERSION = 8;

const ATTRIBUTE_TYPE = { int: 2, string: 3, ints: 7 } as const;

export function encodeModel(model: Model): Uint8Array {
  return new ProtoWriter()
    .varint(1, IR_VERSION)
    .string(2, model.producerName)
    .string(6, model.docString)
    .message(7, (writer) => writeGraph(writer, model.graph))
    .message(8, (writer) => writer.string(1, '').varint(2, model.opsetVersion))
    .finish();
}

function writeGraph(writer: ProtoWriter, graph: Graph): void {
  for (const node of graph.nodes) writer.message(1, (nodeWriter) => writeNode(nodeWriter, node));
  writer.string(2, graph.name);
  for (const [name, tensor] of graph.initializers) writer.message(5, (tensorWriter) => writeTensor(tensorWriter, name, tensor));
  for (const input of graph.inputs) writer.message(11, (infoWriter) => writeValueInfo(infoWriter, input));
  for (const output of graph.outputs) writer.message(12, (infoWriter) => writeValueInfo(infoWriter, output));
}

function writeNode(writer: ProtoWriter, node: Node): void {
  for (const input of node.inputs) writer.string(1, input);
  for (const output of node.outputs) writer.string(2, output);
  writer.string(3, node.name).string(4, node.opType);
  for (const attribute of node.attributes) writer.message(5, (attributeWriter) => writeAttribute(attributeWriter, attribute));
}

function writeAttribute(writer: ProtoWriter, attribute: Attribute): void {
  writer.string(1, attribute.name);
  if ('int' in attribute) {
    writer.varint(20, ATTRIBUTE_TYPE.int).varint(3, attribute.int);
  } else if ('ints' in attribute) {
    writer.varint(20, ATTRIBUTE_TYPE.ints);
    for (const value of attribute.ints) writer.varint(8, value);
  } else {
    writer.varint(20, ATTRIBUTE_TYPE.string).string(4, attribute.string);
  }
}

function writeTensor(writer: ProtoWriter, name: string, tensor: Tensor): void {
  for (const dim of tensor.dims) writer.varint(1, dim);
  writer.varint(2, DATA_TYPE_CODES[tensor.dtype]).string(8, name);
  // raw_data is little-endian, as typed arrays are on the machines Node runs on.
  writer.bytes(9, new Uint8Array(tensor.data.buffer, tensor.data.byteOffset, tensor.data.byteLength));
}

function writeValueInfo(writer: ProtoWriter, info: ValueInfo): void {
  writer.string(1, info.name);
  writer.message(2, (type) =>
    type.message(1, (tensorType) => {
      tensorType.varint(1, DATA_TYPE_CODES[info.dtype]);
      if (info.dims) {
        const dims = info.dims;
        tensorType.message(2, (shape) => {
          for (const dim of dims) shape.message(1, (d) => (typeof dim === 'number' ? d.varint(1, dim) : d.string(2, dim)));
        });
      }
    }),
  );
}
