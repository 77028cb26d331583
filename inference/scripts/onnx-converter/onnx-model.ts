import onnxProto from 'onnx-proto';

/**
 * The ONNX model the converter builds (a graph with its nodes,
 * int/ints/string attributes, initializers and typed inputs and outputs),
 * and its encoding as an onnx.ModelProto by the onnx-proto package
 * (onnx/onnx.proto compiled by protobufjs).
 */

const { onnx } = onnxProto;
const { DataType: OnnxDataType } = onnx.TensorProto;
const { AttributeType } = onnx.AttributeProto;

/** TensorProto.DataType codes of the element types used. */
const DATA_TYPE_CODES = {
  float32: OnnxDataType.FLOAT,
  int32: OnnxDataType.INT32,
  int64: OnnxDataType.INT64,
  bool: OnnxDataType.BOOL,
} as const;
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

export function encodeModel(model: Model): Uint8Array {
  const message: onnxProto.onnx.IModelProto = {
    irVersion: IR_VERSION,
    producerName: model.producerName,
    docString: model.docString,
    graph: graphProto(model.graph),
    opsetImport: [{ domain: '', version: model.opsetVersion }],
  };
  // A schema check (field types, integers where int64s go) before encoding.
  const problem = onnx.ModelProto.verify(message);
  if (problem) throw new Error(`invalid ONNX model: ${problem}`);
  return onnx.ModelProto.encode(message).finish();
}

function graphProto(graph: Graph): onnxProto.onnx.IGraphProto {
  return {
    node: graph.nodes.map(nodeProto),
    name: graph.name,
    initializer: Array.from(graph.initializers, ([name, tensor]) => tensorProto(name, tensor)),
    input: graph.inputs.map(valueInfoProto),
    output: graph.outputs.map(valueInfoProto),
  };
}

function nodeProto(node: Node): onnxProto.onnx.INodeProto {
  return {
    input: [...node.inputs],
    output: [...node.outputs],
    name: node.name,
    opType: node.opType,
    attribute: node.attributes.map(attributeProto),
  };
}

function attributeProto(attribute: Attribute): onnxProto.onnx.IAttributeProto {
  const name = attribute.name;
  if ('int' in attribute) return { name, type: AttributeType.INT, i: attribute.int };
  if ('ints' in attribute) return { name, type: AttributeType.INTS, ints: [...attribute.ints] };
  return { name, type: AttributeType.STRING, s: new TextEncoder().encode(attribute.string) };
}

function tensorProto(name: string, tensor: Tensor): onnxProto.onnx.ITensorProto {
  return {
    dims: [...tensor.dims],
    dataType: DATA_TYPE_CODES[tensor.dtype],
    name,
    // raw_data is little-endian, as typed arrays are on the machines Node runs on.
    rawData: new Uint8Array(tensor.data.buffer, tensor.data.byteOffset, tensor.data.byteLength),
  };
}

function valueInfoProto(info: ValueInfo): onnxProto.onnx.IValueInfoProto {
  const shape = info.dims && {
    dim: info.dims.map((dim) => (typeof dim === 'number' ? { dimValue: dim } : { dimParam: dim })),
  };
  return { name: info.name, type: { tensorType: { elemType: DATA_TYPE_CODES[info.dtype], shape } } };
}
