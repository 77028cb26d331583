// In scripts/, not src/: only the install-time scripts/convert-models.ts runs the converter; the service loads its .onnx files.
import type { io } from '@tensorflow/tfjs';
import { GraphBuilder, type Value } from './graph.ts';
import { dataTypeCode, encodeModel, type ValueInfo } from './onnx-model.ts';
import { OP_TRANSLATIONS } from './ops.ts';
import { NodeContext, type TfNode } from './tf-node.ts';
import { TfjsWeights } from './tfjs-weights.ts';

/**
 * TF.js graph model -> ONNX model bytes, in the project, with no external
 * converter. The nodes the requested outputs need are translated op by op
 * (ops.ts); everything else is left out. The input keeps TF's NHWC layout and
 * its declared shape (a -1 batch becomes the free dimension "N") and takes
 * float32 whatever TF's type; each output is named after its TF node and
 * comes out in TF's layout.
 */

/** Opset 17 with IR version 8 (onnx-model.ts): well within what onnxruntime 1.30 runs. */
const ONNX_OPSET = 17;

/** Ops handled here rather than in OP_TRANSLATIONS. */
const GRAPH_OPS = new Set(['Placeholder', 'Const']);

export type ConversionRequest = {
  /** Names the model in errors and in the ONNX graph. */
  readonly name: string;
  /** TF node names (or "node:K" tensor names) to expose as graph outputs. */
  readonly outputs: readonly string[];
};

export function convertTfjsGraph(artifacts: io.ModelArtifacts, request: ConversionRequest): Uint8Array {
  try {
    return convert(artifacts, request);
  } catch (error) {
    throw new Error(`cannot convert ${request.name} to ONNX: ${(error as Error).message}`, { cause: error });
  }
}

function convert(artifacts: io.ModelArtifacts, request: ConversionRequest): Uint8Array {
  const nodes = (artifacts.modelTopology as { node?: TfNode[] } | undefined)?.node;
  if (!Array.isArray(nodes)) throw new Error('the model has no graph topology (not a TF.js graph model?)');
  if (!(artifacts.weightData instanceof ArrayBuffer)) throw new Error('the weights must come as one buffer');
  const weights = new TfjsWeights(artifacts.weightSpecs ?? [], artifacts.weightData);

  const needed = neededNodes(nodes, request.outputs);
  const unsupported = needed.filter((node) => !GRAPH_OPS.has(node.op) && !Object.hasOwn(OP_TRANSLATIONS, node.op));
  if (unsupported.length > 0) {
    const firstNodes = new Map<string, string>();
    for (const node of unsupported) if (!firstNodes.has(node.op)) firstNodes.set(node.op, node.name);
    const ops = [...firstNodes].map(([op, name]) => `${op} (node "${name}")`);
    throw new Error(`unsupported TF op${ops.length > 1 ? 's' : ''} ${ops.join(', ')}`);
  }

  const graph = new GraphBuilder();
  // Graph outputs take the TF names; reserve them before any node can.
  for (const output of request.outputs) graph.uniqueName(output);
  const inputs: ValueInfo[] = [];
  const values = new Map<string, Value>();
  for (const node of needed) {
    const converted = convertNode(node, graph, values, weights, inputs);
    const outputs = Array.isArray(converted) ? converted : [converted as Value];
    outputs.forEach((value, index) => values.set(index === 0 ? node.name : `${node.name}:${index}`, value));
  }

  const outputs: ValueInfo[] = [...new Set(request.outputs)].map((output) => {
    const value = values.get(tensorKey(output));
    if (!value) throw new Error(`node ${output.replace(/:\d+$/, '')} has no output ${output}`);
    graph.nodes.push({ name: `${output}/output`, opType: 'Identity', inputs: [graph.tf(value)], outputs: [output], attributes: [] });
    return { name: output, dtype: value.dtype };
  });
  return encodeModel({
    graph: { name: request.name, nodes: graph.nodes, initializers: graph.initializers, inputs, outputs },
    opsetVersion: ONNX_OPSET,
    producerName: 'edge-image-search inference tfjs-to-onnx',
    docString: `${request.name}, converted from a TF.js graph model (${artifacts.convertedBy ?? artifacts.generatedBy ?? 'unknown'})`,
  });
}

function convertNode(
  node: TfNode,
  graph: GraphBuilder,
  values: ReadonlyMap<string, Value>,
  weights: TfjsWeights,
  inputs: ValueInfo[],
): Value | readonly Value[] {
  const context = new NodeContext(node, graph, dataInputs(node).map((input) => values.get(tensorKey(input))!));
  switch (node.op) {
    case 'Const': {
      const constant = weights.get(node.name);
      if (!constant) throw context.error('no weights in the manifest for this constant');
      return { name: node.name, dtype: constant.dtype, layout: 'tf', constant };
    }
    case 'Placeholder': {
      const shape = node.attr?.shape?.shape;
      // A free batch dimension is "N"; any other free one is named after its axis.
      const free = (axis: number) => (axis === 0 ? 'N' : `d${axis}`);
      const size = (dim: { size?: string }, axis: number) => (Number(dim.size) >= 0 ? Number(dim.size) : free(axis));
      const dims = shape?.unknownRank ? undefined : (shape?.dim ?? []).map(size);
      const dtype = context.dtype('dtype');
      graph.uniqueName(node.name);
      // The runtimes feed float32 (runtime.ts): an input of another TF type takes float32 and is cast inside the graph.
      inputs.push({ name: node.name, dtype: 'float32', dims });
      if (dtype === 'float32') return { name: node.name, dtype, layout: 'tf' };
      const name = graph.add1('Cast', [node.name], [{ name: 'to', int: dataTypeCode(dtype) }], `${node.name}/${dtype}`);
      return { name, dtype, layout: 'tf' };
    }
    default:
      return OP_TRANSLATIONS[node.op]!(context);
  }
}

/** "node:0" and "node" are the same tensor. */
function tensorKey(input: string): string {
  return input.endsWith(':0') ? input.slice(0, -2) : input;
}

/** Data inputs only: control dependencies ("^node") order execution in TF and carry nothing. */
function dataInputs(node: TfNode): string[] {
  return (node.input ?? []).filter((input) => !input.startsWith('^'));
}

/** The nodes the outputs depend on, each after its inputs. */
function neededNodes(nodes: readonly TfNode[], outputs: readonly string[]): TfNode[] {
  const byName = new Map(nodes.map((node) => [node.name, node]));
  const nodeOf = (tensor: string): TfNode => {
    const node = byName.get(tensor.replace(/:\d+$/, ''));
    if (!node) throw new Error(`no node named "${tensor}" in the graph`);
    return node;
  };
  const ordered: TfNode[] = [];
  const state = new Map<TfNode, 'visiting' | 'done'>();
  // Iterative depth-first search: the graphs are deep enough to strain recursion.
  const stack: { node: TfNode; expanded: boolean }[] = outputs.map((output) => ({ node: nodeOf(output), expanded: false }));
  while (stack.length > 0) {
    const top = stack.pop()!;
    if (top.expanded) {
      state.set(top.node, 'done');
      ordered.push(top.node);
      continue;
    }
    if (state.has(top.node)) {
      if (state.get(top.node) === 'visiting') throw new Error(`the graph has a cycle through "${top.node.name}"`);
      continue;
    }
    state.set(top.node, 'visiting');
    stack.push({ node: top.node, expanded: true });
    for (const input of dataInputs(top.node)) {
      const node = nodeOf(input);
      if (state.get(node) !== 'done') stack.push({ node, expanded: false });
    }
  }
  return ordered;
}
