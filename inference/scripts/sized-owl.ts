/**
 * Writes an OWL-ViT or OWLv2 folder in the Hugging Face layout whose fused ONNX graph has the real checkpoint's
 * shapes and depth (CLIP text and vision transformers, class, box and objectness heads) with random weights: what
 * `npm run bench -- --only detector` times when no real weights can be had (this machine reaches no hub). Its
 * answers mean nothing; its cost is the real model's to within what it leaves out (the vision tower's class token,
 * the text tower's causal mask, both a rounding error in the work). See docs/performance.md, "Open-vocabulary
 * detectors' cost".
 *
 *   node inference/scripts/sized-owl.ts --model owlv2-base-patch16 --out .local/models/owlv2-base-patch16-sized
 */
import path from 'node:path';
import { parseArgs } from 'node:util';
import type { Node, Tensor } from './onnx-converter/onnx-model.ts';
import { encode, floats, info, int64s, node } from '../test/tiny-models.ts';
import { OWL_TOKENS, writeOwlV2, writeOwlVit } from '../test/tiny-owl.ts';

type Tower = { readonly width: number; readonly heads: number; readonly layers: number; readonly mlp: number };
export type OwlShape = {
  readonly family: 'owlvit' | 'owlv2';
  readonly imageSize: number;
  readonly patch: number;
  readonly vision: Tower;
  readonly text: Tower & { readonly vocabulary: number };
  readonly projection: number;
};

const CLIP_TEXT = { width: 512, heads: 8, layers: 12, mlp: 2048, vocabulary: 49408 };
const VIT_B = { width: 768, heads: 12, layers: 12, mlp: 3072 };

/** The public checkpoints' configs (config.json of google/owlvit-base-patch32 and google/owlv2-base-patch16). */
export const OWL_SHAPES = {
  'owlvit-base-patch32': { family: 'owlvit', imageSize: 768, patch: 32, vision: VIT_B, text: CLIP_TEXT, projection: 512 },
  'owlv2-base-patch16': { family: 'owlv2', imageSize: 960, patch: 16, vision: VIT_B, text: CLIP_TEXT, projection: 512 },
} as const satisfies Record<string, OwlShape>;

/** Collects nodes and random initializers (uniform, the spread of a 0.02 normal init) under unique names. */
class Builder {
  readonly nodes: Node[] = [];
  readonly initializers: [string, Tensor][] = [];
  #count = 0;
  #seed = 1;

  name(hint: string): string {
    return `${hint}_${this.#count++}`;
  }
  /** A weight of `dims`, random, reproducible. */
  weight(hint: string, dims: number[]): string {
    const size = dims.reduce((a, b) => a * b, 1);
    const values = new Float32Array(size);
    for (let i = 0; i < size; i++) {
      this.#seed = (Math.imul(this.#seed, 1664525) + 1013904223) >>> 0;
      values[i] = (this.#seed / 2 ** 32 - 0.5) * 0.07;
    }
    const name = this.name(hint);
    this.initializers.push([name, { dtype: 'float32', dims, data: values }]);
    return name;
  }
  constant(hint: string, tensor: Tensor): string {
    const name = this.name(hint);
    this.initializers.push([name, tensor]);
    return name;
  }
  op(opType: string, inputs: string[], attributes: Parameters<typeof node>[3] = []): string {
    const output = this.name(opType.toLowerCase());
    this.nodes.push(node(opType, inputs, [output], attributes));
    return output;
  }
  linear(x: string, from: number, to: number): string {
    return this.op('Add', [this.op('MatMul', [x, this.weight('w', [from, to])]), this.weight('b', [to])]);
  }
  layerNorm(x: string, width: number): string {
    return this.op('LayerNormalization', [x, this.weight('ln_scale', [width]), this.weight('ln_bias', [width])], [{ name: 'axis', int: -1 }]);
  }
  /** CLIP's quick_gelu: x * sigmoid(1.702 x). */
  quickGelu(x: string): string {
    return this.op('Mul', [x, this.op('Sigmoid', [this.op('Mul', [x, this.constant('k', floats([], [1.702]))])])]);
  }
  /** A pre-LN transformer block over [B, L, width]. */
  block(x: string, tower: Tower): string {
    const { width, heads } = tower;
    const head = width / heads;
    const h = this.layerNorm(x, width);
    const split = this.constant('heads', int64s([0, -1, heads, head]));
    const byHead = (y: string, perm: number[]) => this.op('Transpose', [this.op('Reshape', [y, split])], [{ name: 'perm', ints: perm }]);
    const q = byHead(this.linear(h, width, width), [0, 2, 1, 3]);
    const k = byHead(this.linear(h, width, width), [0, 2, 3, 1]);
    const v = byHead(this.linear(h, width, width), [0, 2, 1, 3]);
    const scores = this.op('Mul', [this.op('MatMul', [q, k]), this.constant('scale', floats([], [head ** -0.5]))]);
    const context = this.op('MatMul', [this.op('Softmax', [scores], [{ name: 'axis', int: -1 }]), v]);
    const merged = this.op('Reshape', [this.op('Transpose', [context], [{ name: 'perm', ints: [0, 2, 1, 3] }]), this.constant('merge', int64s([0, -1, width]))]);
    const attended = this.op('Add', [x, this.linear(merged, width, width)]);
    const mlp = this.linear(this.quickGelu(this.linear(this.layerNorm(attended, width), width, tower.mlp)), tower.mlp, width);
    return this.op('Add', [attended, mlp]);
  }
  unitRows(x: string): string {
    return this.op('Div', [x, this.op('ReduceL2', [x], [{ name: 'axes', ints: [-1] }])]);
  }
}

/** The fused graph: input_ids and attention_mask [Q, 16], pixel_values [N, 3, S, S] -> logits [N, P, Q], pred_boxes [N, P, 4]. */
export function sizedOwlGraph(shape: OwlShape): Uint8Array {
  const b = new Builder();
  const { text, vision } = shape;
  const grid = shape.imageSize / shape.patch;
  const patches = grid * grid;

  // Text tower: token and position embeddings, the blocks, a final norm, pooled, projected and normalized.
  let tokens = b.op('Add', [b.op('Gather', [b.weight('token_embedding', [text.vocabulary, text.width]), 'input_ids'], [{ name: 'axis', int: 0 }]), b.weight('text_positions', [OWL_TOKENS, text.width])]);
  for (let layer = 0; layer < text.layers; layer++) tokens = b.block(tokens, text);
  const pooled = b.op('ReduceMean', [b.layerNorm(tokens, text.width)], [{ name: 'axes', ints: [1] }, { name: 'keepdims', int: 0 }]);
  const queries = b.unitRows(b.op('MatMul', [pooled, b.weight('text_projection', [text.width, shape.projection])]));

  // Vision tower: patch embedding, positions, pre- and post-norms around the blocks.
  const embedded = b.op('Conv', ['pixel_values', b.weight('patch_embedding', [vision.width, 3, shape.patch, shape.patch])], [
    { name: 'kernel_shape', ints: [shape.patch, shape.patch] },
    { name: 'strides', ints: [shape.patch, shape.patch] },
  ]);
  const sequence = b.op('Transpose', [b.op('Reshape', [embedded, b.constant('flatten', int64s([0, vision.width, -1]))])], [{ name: 'perm', ints: [0, 2, 1] }]);
  let hidden = b.layerNorm(b.op('Add', [sequence, b.weight('vision_positions', [patches, vision.width])]), vision.width);
  for (let layer = 0; layer < vision.layers; layer++) hidden = b.block(hidden, vision);
  const features = b.layerNorm(b.layerNorm(hidden, vision.width), vision.width);

  // Heads: each patch's class embedding against the prompts (shifted and scaled), its box, and OWLv2's objectness.
  const classEmbeds = b.unitRows(b.linear(features, vision.width, shape.projection));
  const similarity = b.op('MatMul', [classEmbeds, b.op('Transpose', [queries], [{ name: 'perm', ints: [1, 0] }])]);
  b.nodes.push(node('Mul', [b.op('Add', [similarity, b.linear(features, vision.width, 1)]), b.linear(features, vision.width, 1)], ['logits']));
  const mlpHead = (to: number) => b.linear(b.quickGelu(b.linear(b.quickGelu(b.linear(features, vision.width, vision.width)), vision.width, vision.width)), vision.width, to);
  b.nodes.push(node('Sigmoid', [mlpHead(4)], ['pred_boxes']));
  const outputs = [info('logits', 'float32', ['batch_size', patches, 'num_queries']), info('pred_boxes', 'float32', ['batch_size', patches, 4])];
  if (shape.family === 'owlv2') {
    b.nodes.push(node('Identity', [mlpHead(1)], ['objectness_logits']));
    outputs.push(info('objectness_logits', 'float32', ['batch_size', patches, 1]));
  }
  const inputs = [
    info('input_ids', 'int64', ['num_queries', OWL_TOKENS]),
    info('attention_mask', 'int64', ['num_queries', OWL_TOKENS]),
    info('pixel_values', 'float32', ['batch_size', 3, shape.imageSize, shape.imageSize]),
  ];
  return encode(`sized_${shape.family}`, b.nodes, b.initializers, inputs, outputs);
}

if (import.meta.main) {
  const { values: args } = parseArgs({ options: { model: { type: 'string' }, out: { type: 'string' } } });
  const shape = OWL_SHAPES[args.model as keyof typeof OWL_SHAPES];
  if (!shape || !args.out) throw new Error(`usage: sized-owl.ts --model ${Object.keys(OWL_SHAPES).join('|')} --out FOLDER`);
  const write = shape.family === 'owlv2' ? writeOwlV2 : writeOwlVit;
  const folder = write(path.resolve(args.out), { graph: sizedOwlGraph(shape), imageSize: shape.imageSize, patch: shape.patch });
  console.log(`${args.model}'s shapes, random weights: ${folder}`);
}
