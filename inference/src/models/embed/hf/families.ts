import type { Pooling } from './entry.ts';

/*
 * The model families read in the Hugging Face layout, by config.json's `model_type`: which ONNX files the exports
 * hold (transformers.js / Optimum layouts: `onnx/vision_model.onnx` and `onnx/text_model.onnx` for the two-tower
 * models, `onnx/model.onnx` for image-only ones), which of their outputs is the embedding, and the defaults of the
 * family's image processor where preprocessor_config.json leaves a key out (transformers' own defaults).
 */

/** An image processor's defaults (transformers' class defaults), for keys preprocessor_config.json leaves out. */
export type ImageDefaults = {
  readonly mean: readonly [number, number, number];
  readonly std: readonly [number, number, number];
  /** PIL's code. */
  readonly resample: number;
  /** A bare number as `size`: a square (height = width) or the shortest edge (transformers' `default_to_square`). */
  readonly numberSizeIsSquare: boolean;
  /** How a shortest edge sizes the image where the processor has its own rule (the DETR family's); absent: transformers' generic one. */
  readonly aspectRule?: AspectRule;
};

/** The DETR family's sizing for a shortest and longest edge (image-processor.ts, `detrAspectSize`): DETR's, or YOLOS' copy. */
export type AspectRule = 'detr' | 'yolos';

export type Family = {
  readonly name: string;
  readonly modelTypes: readonly string[];
  readonly vision: {
    /** The file's name in onnx/, without the variant suffix and `.onnx`. */
    readonly file: string;
    /** The pooled output [N, D] (`pooler`), where the family has one. */
    readonly pooled?: string;
    /** The token (or position) output [N, T, D] or [N, C, H, W] that `cls` and `mean` read. */
    readonly tokens?: string;
    /** The poolings offered, the default first (the first whose output the file has). */
    readonly poolings: readonly Pooling[];
  };
  /** The text tower, for the families that read text. */
  readonly text?: {
    readonly file: string;
    /** The pooled output [N, D], comparable with the image tower's. */
    readonly output: string;
    /** Every text padded to the maximum length (SigLIP was trained so: its pooled token is the last position). */
    readonly padToMaxLength: boolean;
    /** Where neither config.json nor the tokenizer's files give one. */
    readonly maxLength: number;
  };
  readonly image: ImageDefaults;
};

export const OPENAI_CLIP_MEAN = [0.48145466, 0.4578275, 0.40821073] as const;
export const OPENAI_CLIP_STD = [0.26862954, 0.26130258, 0.27577711] as const;
const IMAGENET_STANDARD = [0.5, 0.5, 0.5] as const;
const BICUBIC = 3;
const BILINEAR = 2;

/** CLIP (openai/clip-vit-*, as Xenova/clip-vit-base-patch32 exports them): the projected embeddings of both towers. */
const CLIP: Family = {
  name: 'CLIP',
  modelTypes: ['clip'],
  vision: { file: 'vision_model', pooled: 'image_embeds', poolings: ['pooler'] },
  text: { file: 'text_model', output: 'text_embeds', padToMaxLength: false, maxLength: 77 },
  image: { mean: OPENAI_CLIP_MEAN, std: OPENAI_CLIP_STD, resample: BICUBIC, numberSizeIsSquare: false },
};

/**
 * SigLIP and SigLIP 2 at a fixed resolution (google/siglip-*, google/siglip2-*-patch16-224 and the like): both
 * towers' `pooler_output`. SigLIP 2's NaFlex checkpoints (patches at the image's own aspect ratio) take other
 * inputs and are refused.
 */
const SIGLIP: Family = {
  name: 'SigLIP',
  modelTypes: ['siglip', 'siglip2'],
  vision: { file: 'vision_model', pooled: 'pooler_output', poolings: ['pooler'] },
  text: { file: 'text_model', output: 'pooler_output', padToMaxLength: true, maxLength: 64 },
  image: { mean: IMAGENET_STANDARD, std: IMAGENET_STANDARD, resample: BICUBIC, numberSizeIsSquare: true },
};

/** DINOv2 (facebook/dinov2-*, with registers too): image only; the CLS token, pooled or read from the tokens. */
const DINOV2: Family = {
  name: 'DINOv2',
  modelTypes: ['dinov2', 'dinov2_with_registers'],
  vision: { file: 'model', pooled: 'pooler_output', tokens: 'last_hidden_state', poolings: ['pooler', 'cls', 'mean'] },
  image: { mean: OPENAI_CLIP_MEAN, std: OPENAI_CLIP_STD, resample: BICUBIC, numberSizeIsSquare: false },
};

/** MobileNetV2 (transformers' MobileNetV2Model): image only; its pooled output, or the mean of its last map. */
const MOBILENET_V2: Family = {
  name: 'MobileNetV2',
  modelTypes: ['mobilenet_v2'],
  vision: { file: 'model', pooled: 'pooler_output', tokens: 'last_hidden_state', poolings: ['pooler', 'mean'] },
  image: { mean: IMAGENET_STANDARD, std: IMAGENET_STANDARD, resample: BILINEAR, numberSizeIsSquare: false },
};

export const FAMILIES: readonly Family[] = [CLIP, SIGLIP, DINOV2, MOBILENET_V2];

/** Every model_type read, for messages. */
export const MODEL_TYPES: readonly string[] = FAMILIES.flatMap((family) => family.modelTypes);

export function familyOf(modelType: string): Family | undefined {
  return FAMILIES.find((family) => family.modelTypes.includes(modelType));
}
