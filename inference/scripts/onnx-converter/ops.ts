import { nchwAxis, transposeTensor, type Layout, type Value } from './graph.ts';
import { dataTypeCode, type Attribute, type DataType } from './onnx-model.ts';
import type { NodeContext } from './tf-node.ts';

/**
 * TF ops -> ONNX (opset 17) nodes. Each translation reads its node through a
 * NodeContext and returns the converted outputs in TF's output order.
 * Placeholder and Const are handled by convert.ts.
 */
export type OpTranslation = (context: NodeContext) => Value | readonly Value[];

/** ONNX Slice's "to the end" (clamped to the axis by ONNX). */
const SLICE_END = Number.MAX_SAFE_INTEGER;

/**
 * NCHW when some input is an NCHW map and every other input is one too or a
 * constant (laid out to match); otherwise everything in TF's layout.
 */
function sharedLayout(values: readonly Value[]): Layout {
  const nchw = values.some((value) => value.layout === 'nchw');
  return nchw && values.every((value) => value.layout === 'nchw' || value.constant) ? 'nchw' : 'tf';
}

function inLayout(context: NodeContext, value: Value, layout: Layout): string {
  return layout === 'nchw' ? context.graph.nchw(value) : context.graph.tf(value);
}

/** An op applied element by element (with broadcasting) to all of its inputs. */
function elementwise(opType: string, dtype?: DataType): OpTranslation {
  return (context) => {
    const layout = sharedLayout(context.inputs);
    const inputs = context.inputs.map((value) => inLayout(context, value, layout));
    return { name: context.graph.add1(opType, inputs, [], context.outputName()), dtype: dtype ?? context.input(0).dtype, layout };
  };
}

/** ReLU6 as ONNX's Clip to [0, 6]. */
function clip6(context: NodeContext, input: string, output: string): string {
  return context.graph.add1('Clip', [input, context.graph.scalar(0), context.graph.scalar(6)], [], output);
}

const relu6: OpTranslation = (context) => {
  const input = context.input(0);
  const layout = sharedLayout([input]);
  return { name: clip6(context, inLayout(context, input, layout), context.outputName()), dtype: input.dtype, layout };
};

/** floor(a / b): integer Div truncates, so take off the floored remainder first (exact for any signs). */
const floorDiv: OpTranslation = (context) => {
  const layout = sharedLayout(context.inputs);
  const [a, b] = [context.input(0), context.input(1)].map((value) => inLayout(context, value, layout)) as [string, string];
  const graph = context.graph;
  const out = context.outputName();
  const name =
    context.input(0).dtype === 'float32'
      ? graph.add1('Floor', [graph.add1('Div', [a, b], [], `${out}/div`)], [], out)
      : graph.add1('Div', [graph.add1('Sub', [a, graph.add1('Mod', [a, b], [], `${out}/mod`)], [], `${out}/sub`), b], [], out);
  return { name, dtype: context.input(0).dtype, layout };
};

/** a - floor(a / b) * b, the remainder with b's sign: ONNX Mod does that for integers only. */
const floorMod: OpTranslation = (context) => {
  const layout = sharedLayout(context.inputs);
  const [a, b] = [context.input(0), context.input(1)].map((value) => inLayout(context, value, layout)) as [string, string];
  const graph = context.graph;
  const out = context.outputName();
  if (context.input(0).dtype !== 'float32') {
    return { name: graph.add1('Mod', [a, b], [{ name: 'fmod', int: 0 }], out), dtype: context.input(0).dtype, layout };
  }
  const floored = graph.add1('Floor', [graph.add1('Div', [a, b], [], `${out}/div`)], [], `${out}/floor`);
  return { name: graph.add1('Sub', [a, graph.add1('Mul', [floored, b], [], `${out}/mul`)], [], out), dtype: 'float32', layout };
};

/** (a - b)^2, as TF's SquaredDifference: ONNX has no single op for it. */
const squaredDifference: OpTranslation = (context) => {
  const layout = sharedLayout(context.inputs);
  const [a, b] = [context.input(0), context.input(1)].map((value) => inLayout(context, value, layout)) as [string, string];
  const graph = context.graph;
  const difference = graph.add1('Sub', [a, b], [], `${context.outputName()}/sub`);
  return { name: graph.add1('Mul', [difference, difference], [], context.outputName()), dtype: context.input(0).dtype, layout };
};

const cast: OpTranslation = (context) => {
  const input = context.input(0);
  const to = context.dtype('DstT');
  if (to === input.dtype) return input;
  const layout = sharedLayout([input]);
  const attributes: Attribute[] = [{ name: 'to', int: dataTypeCode(to) }];
  const name = context.graph.add1('Cast', [inLayout(context, input, layout)], attributes, context.outputName());
  return { name, dtype: to, layout };
};

/** TF's padding attribute as ONNX's; TF's SAME pads the extra pixel at the end, as SAME_UPPER does. */
function paddingAttributes(context: NodeContext): Attribute[] {
  const padding = context.string('padding');
  switch (padding) {
    case 'SAME':
      return [{ name: 'auto_pad', string: 'SAME_UPPER' }];
    case 'VALID':
      return [{ name: 'auto_pad', string: 'VALID' }];
    case 'EXPLICIT': {
      // [batch before, after, top, bottom, left, right, channels before, after]
      const [, , top, bottom, left, right] = context.ints('explicit_paddings');
      return [{ name: 'pads', ints: [top!, left!, bottom!, right!] }];
    }
    default:
      throw context.error(`padding ${padding} is not supported`);
  }
}

/** The H and W entries of an NHWC attribute list (strides, dilations, ksize); 1 when absent. */
function spatial(context: NodeContext, name: string): number[] {
  const values = context.ints(name);
  if (values.length === 0) return [1, 1];
  if (values.length !== 4 || values[0] !== 1 || values[3] !== 1) throw context.error(`${name} ${values.join(',')} is not [1, h, w, 1]`);
  return [values[1]!, values[2]!];
}

function requireNhwc(context: NodeContext): void {
  const format = context.string('data_format', 'NHWC');
  if (format !== 'NHWC') throw context.error(`data_format ${format} is not supported`);
}

/**
 * The fused ops of _FusedConv2D / FusedDepthwiseConv2dNative / _FusedMatMul:
 * whether a bias comes first (its tensor is input 2), then the activation.
 */
function fusedOps(context: NodeContext): { bias: boolean; activation: string | undefined } {
  const ops = context.strings('fused_ops');
  const bias = ops[0] === 'BiasAdd';
  const rest = bias ? ops.slice(1) : ops;
  if (rest.length > 1 || (rest[0] !== undefined && rest[0] !== 'Relu' && rest[0] !== 'Relu6')) {
    throw context.error(`fused ops ${ops.join(', ')} are not supported (BiasAdd then Relu or Relu6 are)`);
  }
  return { bias, activation: rest[0] };
}

/** Adds the fused activation, if any, after `input`; returns the node's final output. */
function activate(context: NodeContext, activation: string | undefined, input: string): string {
  if (activation === 'Relu') return context.graph.add1('Relu', [input], [], context.outputName());
  if (activation === 'Relu6') return clip6(context, input, context.outputName());
  return input;
}

/**
 * Conv2D and DepthwiseConv2dNative, plain or fused, as an NCHW Conv. TF's
 * HWIO filter becomes OIHW; a depthwise [h, w, C, M] filter becomes C groups
 * of M outputs ([C*M, 1, h, w]: output channel c*M + m, as in TF).
 */
function convolution(depthwise: boolean, fused: boolean): OpTranslation {
  return (context) => {
    requireNhwc(context);
    const graph = context.graph;
    const filter = context.constant(1);
    const [height, width, channels, multiplier] = filter.dims as [number, number, number, number];
    const weights = depthwise
      ? { ...transposeTensor(filter, [2, 3, 0, 1]), dims: [channels * multiplier, 1, height, width] }
      : transposeTensor(filter, [3, 2, 0, 1]);
    const { bias, activation } = fused ? fusedOps(context) : { bias: false, activation: undefined };
    const inputs = [graph.nchw(context.input(0)), graph.initializer(`${context.input(1).name}/oihw`, weights)];
    if (bias) inputs.push(graph.tf(context.input(2)));
    const attributes: Attribute[] = [
      { name: 'kernel_shape', ints: [height, width] },
      { name: 'strides', ints: spatial(context, 'strides') },
      { name: 'dilations', ints: spatial(context, 'dilations') },
      { name: 'group', int: depthwise ? channels : 1 },
      ...paddingAttributes(context),
    ];
    const conv = graph.add1('Conv', inputs, attributes, activation ? `${context.outputName()}/conv` : context.outputName());
    return { name: activate(context, activation, conv), dtype: 'float32', layout: 'nchw' };
  };
}

/** TF's AvgPool leaves padding out of the average, as ONNX's count_include_pad = 0 (the default) does. */
function pool(opType: 'AveragePool' | 'MaxPool'): OpTranslation {
  return (context) => {
    requireNhwc(context);
    const attributes: Attribute[] = [
      { name: 'kernel_shape', ints: spatial(context, 'ksize') },
      { name: 'strides', ints: spatial(context, 'strides') },
      ...paddingAttributes(context),
    ];
    const name = context.graph.add1(opType, [context.graph.nchw(context.input(0))], attributes, context.outputName());
    return { name, dtype: 'float32', layout: 'nchw' };
  };
}

/** Whether removing `axes` (TF's NHWC numbering) from an NCHW map leaves the other axes in TF's order. */
function keepsTfOrder(axes: readonly number[]): boolean {
  const rest = [0, 1, 2, 3].filter((axis) => !axes.includes(axis)).map(nchwAxis);
  return rest.every((axis, i) => i === 0 || axis > rest[i - 1]!);
}

/**
 * An op that reduces or drops some axes of its first input: on an NCHW map
 * with the axes renumbered when the result can be told apart (kept rank) or
 * comes out in TF's order anyway; otherwise on the TF layout.
 */
function onAxes(context: NodeContext, axes: readonly number[], keepDims: boolean): { input: string; axes: number[]; layout: Layout } {
  const input = context.input(0);
  if (input.layout === 'nchw' && axes.length > 0) {
    const normalised = axes.map((axis) => (axis < 0 ? axis + 4 : axis));
    if (keepDims || keepsTfOrder(normalised)) {
      return { input: input.name, axes: normalised.map(nchwAxis), layout: keepDims ? 'nchw' : 'tf' };
    }
  }
  return { input: context.graph.tf(input), axes: [...axes], layout: 'tf' };
}

const mean: OpTranslation = (context) => {
  const keepDims = context.bool('keep_dims');
  const reduced = context.constantInts(1);
  // TF reduces nothing over no axes; ONNX's ReduceMean would reduce them all.
  if (reduced.length === 0) return context.input(0);
  const { input, axes, layout } = onAxes(context, reduced, keepDims);
  const attributes: Attribute[] = [
    { name: 'axes', ints: axes },
    { name: 'keepdims', int: keepDims ? 1 : 0 },
  ];
  return { name: context.graph.add1('ReduceMean', [input], attributes, context.outputName()), dtype: context.input(0).dtype, layout };
};

/** ArgMax over one axis; ONNX's ArgMax, like TF's, takes the first of equal values and gives int64, cast to output_type. */
const argMax: OpTranslation = (context) => {
  const { input, axes, layout } = onAxes(context, context.constantInts(1), false);
  const to = context.dtype('output_type');
  const attributes: Attribute[] = [
    { name: 'axis', int: axes[0]! },
    { name: 'keepdims', int: 0 },
  ];
  const graph = context.graph;
  const out = context.outputName();
  const indices = graph.add1('ArgMax', [input], attributes, to === 'int64' ? out : `${out}/int64`);
  const name = to === 'int64' ? indices : graph.add1('Cast', [indices], [{ name: 'to', int: dataTypeCode(to) }], out);
  return { name, dtype: to, layout };
};

const squeeze: OpTranslation = (context) => {
  const { input, axes, layout } = onAxes(context, context.ints('squeeze_dims'), false);
  // No axes: every axis of size 1, as in TF.
  const inputs = axes.length > 0 ? [input, context.graph.int64s(`${context.outputName()}/axes`, axes)] : [input];
  return { name: context.graph.add1('Squeeze', inputs, [], context.outputName()), dtype: context.input(0).dtype, layout };
};

const expandDims: OpTranslation = (context) => {
  const axes = context.graph.int64s(`${context.outputName()}/axes`, context.constantInts(1));
  const name = context.graph.add1('Unsqueeze', [context.graph.tf(context.input(0)), axes], [], context.outputName());
  return { name, dtype: context.input(0).dtype, layout: 'tf' };
};

const reshape: OpTranslation = (context) => {
  const graph = context.graph;
  const shapeValue = context.input(1);
  const shape = shapeValue.constant
    ? graph.int64s(`${context.outputName()}/shape`, context.constantInts(1))
    : graph.add1('Cast', [graph.tf(shapeValue)], [{ name: 'to', int: dataTypeCode('int64') }], `${context.outputName()}/shape`);
  // allowzero: a 0 in TF's shape is a dimension of size 0, not "copy the input's".
  const name = graph.add1('Reshape', [graph.tf(context.input(0)), shape], [{ name: 'allowzero', int: 1 }], context.outputName());
  return { name, dtype: context.input(0).dtype, layout: 'tf' };
};

const softmax: OpTranslation = (context) => {
  const name = context.graph.add1('Softmax', [context.graph.tf(context.input(0))], [{ name: 'axis', int: -1 }], context.outputName());
  return { name, dtype: context.input(0).dtype, layout: 'tf' };
};

/** MatMul and _FusedMatMul: TF's MatMul is two-dimensional, which is Gemm's case. */
function matMul(fused: boolean): OpTranslation {
  return (context) => {
    const graph = context.graph;
    const { bias, activation } = fused ? fusedOps(context) : { bias: false, activation: undefined };
    const inputs = [graph.tf(context.input(0)), graph.tf(context.input(1))];
    if (bias) inputs.push(graph.tf(context.input(2)));
    const attributes: Attribute[] = [
      { name: 'transA', int: context.bool('transpose_a') ? 1 : 0 },
      { name: 'transB', int: context.bool('transpose_b') ? 1 : 0 },
    ];
    const gemm = graph.add1('Gemm', inputs, attributes, activation ? `${context.outputName()}/gemm` : context.outputName());
    return { name: activate(context, activation, gemm), dtype: 'float32', layout: 'tf' };
  };
}

/** ResizeBilinear to a constant [height, width]; the batch and channel sizes come from the input's shape. */
const resizeBilinear: OpTranslation = (context) => {
  const graph = context.graph;
  const input = graph.nchw(context.input(0));
  const out = context.outputName();
  const batchAndChannels = graph.add1(
    'Slice',
    [graph.add1('Shape', [input], [], `${out}/shape`), graph.int64s(`${out}/zero`, [0]), graph.int64s(`${out}/two`, [2])],
    [],
    `${out}/nc`,
  );
  const heightAndWidth = graph.int64s(`${out}/hw`, context.constantInts(1));
  const sizes = graph.add1('Concat', [batchAndChannels, heightAndWidth], [{ name: 'axis', int: 0 }], `${out}/sizes`);
  const mode = context.bool('align_corners') ? 'align_corners' : context.bool('half_pixel_centers') ? 'half_pixel' : 'asymmetric';
  const attributes: Attribute[] = [
    { name: 'mode', string: 'linear' },
    { name: 'coordinate_transformation_mode', string: mode },
  ];
  return { name: graph.add1('Resize', [input, '', '', sizes], attributes, out), dtype: 'float32', layout: 'nchw' };
};

const concat: OpTranslation = (context) => {
  const values = context.inputs.slice(0, -1);
  const axis = context.constantInts(context.inputs.length - 1)[0]!;
  const layout = sharedLayout(values);
  const inputs = values.map((value) => inLayout(context, value, layout));
  const attributes: Attribute[] = [{ name: 'axis', int: layout === 'nchw' ? nchwAxis(axis) : axis }];
  const name = context.graph.add1('Concat', inputs, attributes, context.outputName());
  return { name, dtype: values[0]!.dtype, layout };
};

/** Pack (tf.stack): each input gets the new axis (Unsqueeze), then they are concatenated along it. */
const pack: OpTranslation = (context) => {
  const graph = context.graph;
  const out = context.outputName();
  // A negative axis counts from the end of the output, for Unsqueeze and Concat alike.
  const axis = context.int('axis', 0);
  const axes = graph.int64s(`${out}/axes`, [axis]);
  const inputs = context.inputs.map((value, i) => graph.add1('Unsqueeze', [graph.tf(value), axes], [], `${out}/unsqueeze${i}`));
  const name = graph.add1('Concat', inputs, [{ name: 'axis', int: axis }], out);
  return { name, dtype: context.input(0).dtype, layout: 'tf' };
};

/** Unpack (tf.unstack): Split into `num` equal parts along the axis, each Squeezed of it. */
const unpack: OpTranslation = (context) => {
  const num = context.int('num');
  const { input, axes, layout } = onAxes(context, [context.int('axis', 0)], false);
  const graph = context.graph;
  const outputs = Array.from({ length: num }, (_, i) => context.outputName(i));
  const parts = graph.add('Split', [input], [{ name: 'axis', int: axes[0]! }], outputs.map((name) => `${name}/split`));
  const squeezed = graph.int64s(`${outputs[0]}/axes`, axes);
  return parts.map((part, i) => ({
    name: graph.add1('Squeeze', [part, squeezed], [], outputs[i]!),
    dtype: context.input(0).dtype,
    layout,
  }));
};

/** TopKV2 along the last axis, largest first; ONNX's int64 indices cast back to TF's int32. */
const topK: OpTranslation = (context) => {
  const graph = context.graph;
  const k = graph.int64s(`${context.outputName()}/k`, context.constantInts(1));
  const [values, indices] = graph.add(
    'TopK',
    [graph.tf(context.input(0)), k],
    [
      { name: 'axis', int: -1 },
      { name: 'largest', int: 1 },
      { name: 'sorted', int: 1 },
    ],
    [context.outputName(0), `${context.outputName(1)}/int64`],
  ) as [string, string];
  const indices32 = graph.add1('Cast', [indices], [{ name: 'to', int: dataTypeCode('int32') }], context.outputName(1));
  return [
    { name: values, dtype: context.input(0).dtype, layout: 'tf' },
    { name: indices32, dtype: 'int32', layout: 'tf' },
  ];
};

const gather: OpTranslation = (context) => {
  if (context.int('batch_dims', 0) !== 0) throw context.error('batch_dims other than 0 is not supported');
  const graph = context.graph;
  const axis = context.constantInts(2)[0]!;
  const inputs = [graph.tf(context.input(0)), graph.tf(context.input(1))];
  const name = graph.add1('Gather', inputs, [{ name: 'axis', int: axis }], context.outputName());
  return { name, dtype: context.input(0).dtype, layout: 'tf' };
};

/** GatherNd as ONNX's GatherND (batch_dims 0, the same indexing), whose indices must be int64. */
const gatherNd: OpTranslation = (context) => {
  const graph = context.graph;
  const indices = context.input(1);
  const indices64 =
    indices.dtype === 'int64'
      ? graph.tf(indices)
      : graph.add1('Cast', [graph.tf(indices)], [{ name: 'to', int: dataTypeCode('int64') }], `${context.outputName()}/indices`);
  const name = graph.add1('GatherND', [graph.tf(context.input(0)), indices64], [], context.outputName());
  return { name, dtype: context.input(0).dtype, layout: 'tf' };
};

/** StridedSlice with begin/end/shrink-axis masks (no ellipsis or new axes), as Slice then Squeeze. */
const stridedSlice: OpTranslation = (context) => {
  if (context.int('ellipsis_mask', 0) !== 0 || context.int('new_axis_mask', 0) !== 0) {
    throw context.error('ellipsis_mask and new_axis_mask are not supported');
  }
  const [begin, end, steps] = [context.constantInts(1), context.constantInts(2), context.constantInts(3)];
  const [beginMask, endMask, shrinkMask] = [context.int('begin_mask', 0), context.int('end_mask', 0), context.int('shrink_axis_mask', 0)];
  const starts: number[] = [];
  const ends: number[] = [];
  const shrink: number[] = [];
  for (let axis = 0; axis < begin.length; axis++) {
    const bit = 1 << axis;
    const step = steps[axis]!;
    if (shrinkMask & bit) {
      // TF takes the single element at begin, whatever the masks say.
      starts.push(begin[axis]!);
      ends.push(begin[axis] === -1 ? SLICE_END : begin[axis]! + 1);
      shrink.push(axis);
      continue;
    }
    starts.push(beginMask & bit ? (step > 0 ? 0 : SLICE_END) : begin[axis]!);
    ends.push(endMask & bit ? (step > 0 ? SLICE_END : -SLICE_END) : end[axis]!);
  }
  const graph = context.graph;
  const out = context.outputName();
  const axes = begin.map((_, axis) => axis);
  const sliceSteps = steps.map((step, axis) => (shrink.includes(axis) ? 1 : step));
  const inputs = [
    graph.tf(context.input(0)),
    graph.int64s(`${out}/starts`, starts),
    graph.int64s(`${out}/ends`, ends),
    graph.int64s(`${out}/axes`, axes),
    graph.int64s(`${out}/steps`, sliceSteps),
  ];
  let name = graph.add1('Slice', inputs, [], shrink.length > 0 ? `${out}/slice` : out);
  if (shrink.length > 0) name = graph.add1('Squeeze', [name, graph.int64s(`${out}/shrink`, shrink)], [], out);
  return { name, dtype: context.input(0).dtype, layout: 'tf' };
};

export const OP_TRANSLATIONS: Readonly<Record<string, OpTranslation>> = {
  Identity: (context) => context.input(0),
  Add: elementwise('Add'),
  AddV2: elementwise('Add'),
  Sub: elementwise('Sub'),
  Mul: elementwise('Mul'),
  RealDiv: elementwise('Div'),
  SquaredDifference: squaredDifference,
  Sqrt: elementwise('Sqrt'),
  Equal: elementwise('Equal', 'bool'),
  FloorDiv: floorDiv,
  FloorMod: floorMod,
  Relu: elementwise('Relu'),
  Relu6: relu6,
  Sigmoid: elementwise('Sigmoid'),
  Softmax: softmax,
  Cast: cast,
  Conv2D: convolution(false, false),
  _FusedConv2D: convolution(false, true),
  DepthwiseConv2dNative: convolution(true, false),
  FusedDepthwiseConv2dNative: convolution(true, true),
  AvgPool: pool('AveragePool'),
  MaxPool: pool('MaxPool'),
  Mean: mean,
  ArgMax: argMax,
  Squeeze: squeeze,
  ExpandDims: expandDims,
  Reshape: reshape,
  MatMul: matMul(false),
  _FusedMatMul: matMul(true),
  ResizeBilinear: resizeBilinear,
  ConcatV2: concat,
  Pack: pack,
  Unpack: unpack,
  TopKV2: topK,
  GatherV2: gather,
  GatherNd: gatherNd,
  StridedSlice: stridedSlice,
};
