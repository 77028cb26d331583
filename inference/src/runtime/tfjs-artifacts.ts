import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import type { io } from '@tensorflow/tfjs';
import type { ModelSource, TfjsGraphFiles } from './runtime.ts';

const require = createRequire(import.meta.url);

/**
 * Reads a TF.js graph model's topology and weights from disk; nothing is
 * fetched. Shared by the tfjs runtime (which loads them as they are) and the
 * ONNX converter (which translates them), so that an `inputShape` declared
 * here holds on both runtimes.
 */
export function readModelArtifacts(source: TfjsGraphFiles & Pick<ModelSource, 'inputShape'>): io.ModelArtifacts {
  const artifacts = readFiles(source);
  return source.inputShape ? withInputShape(artifacts, source.inputShape) : artifacts;
}

function readFiles(files: TfjsGraphFiles): io.ModelArtifacts {
  switch (files.format) {
    case 'tfjs-graph-js-bundle':
      // Each file is a UMD bundle whose CommonJS export is the model.json object
      // or one weight shard as base64; nsfwjs imports them the same way.
      return toArtifacts(require(path.join(files.directory, 'model.min.js')) as io.ModelJSON, (shardName) =>
        Buffer.from(require(path.join(files.directory, `${shardName}.min.js`)) as string, 'base64'),
      );
    case 'tfjs-graph': {
      const directory = path.dirname(files.modelJson);
      return toArtifacts(JSON.parse(readFileSync(files.modelJson, 'utf8')) as io.ModelJSON, (shardName) =>
        readFileSync(path.join(directory, shardName)),
      );
    }
  }
}

/** The model.json plus its weight shards, concatenated in manifest order. */
function toArtifacts(modelJson: io.ModelJSON, readShard: (name: string) => Buffer): io.ModelArtifacts {
  const weightSpecs: io.WeightsManifestEntry[] = [];
  const shards: Buffer[] = [];
  for (const group of modelJson.weightsManifest) {
    weightSpecs.push(...group.weights);
    for (const shardName of group.paths) shards.push(readShard(shardName));
  }
  const weights = Buffer.concat(shards);
  return {
    modelTopology: modelJson.modelTopology,
    format: modelJson.format,
    generatedBy: modelJson.generatedBy,
    convertedBy: modelJson.convertedBy,
    signature: modelJson.signature,
    weightSpecs,
    weightData: weights.buffer.slice(weights.byteOffset, weights.byteOffset + weights.byteLength),
  };
}

type GraphNode = { op: string; attr?: Record<string, unknown> };

/**
 * The graph with its one placeholder declaring `shape`: tfjs checks inputs against the declared shape, and the
 * converter gives the ONNX input that shape ("-1" is how TF.js writes a free dimension).
 */
function withInputShape(artifacts: io.ModelArtifacts, shape: readonly number[]): io.ModelArtifacts {
  const topology = artifacts.modelTopology as { node: GraphNode[] };
  if (topology.node.filter((node) => node.op === 'Placeholder').length !== 1) throw new Error('an input shape needs a graph of one input');
  const declared = { shape: { dim: shape.map((size) => ({ size: String(size) })) } };
  const node = topology.node.map((node) => (node.op === 'Placeholder' ? { ...node, attr: { ...node.attr, shape: declared } } : node));
  return { ...artifacts, modelTopology: { ...topology, node } };
}
