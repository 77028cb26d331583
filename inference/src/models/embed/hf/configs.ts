import { readFile } from 'node:fs/promises';
import { z } from 'zod';
import type { ModelFiles } from '../../hub/model-files.ts';

/*
 * The JSON files of a model in the Hugging Face layout, as far as the embedder reads them. Keys it does not read are
 * ignored; a key it reads with a value of the wrong kind stops the loading, naming the file and the key.
 */

const positive = z.number().int().positive();

/** config.json: the family (`model_type`) and the text tower's length. */
export const modelConfigSchema = z.object({
  model_type: z.string({ error: 'missing or not a string: the family of the model' }),
  projection_dim: positive.optional(),
  /** DINOv2 with registers: tokens after the CLS token that are no patch. */
  num_register_tokens: z.number().int().nonnegative().optional(),
  text_config: z.object({ max_position_embeddings: positive.optional() }).optional(),
});
export type ModelConfig = z.infer<typeof modelConfigSchema>;

const size = z.union([
  positive,
  z.object({ shortest_edge: positive.optional(), longest_edge: positive.optional(), height: positive.optional(), width: positive.optional() }),
]);
const channels = z.union([z.number(), z.array(z.number()).length(3)]);

/** preprocessor_config.json: the image processor's settings (transformers' BaseImageProcessor keys). */
export const preprocessorConfigSchema = z.object({
  do_resize: z.boolean().optional(),
  size: size.optional(),
  /** PIL's codes: 0 nearest, 1 lanczos, 2 bilinear, 3 bicubic, 4 box, 5 hamming. */
  resample: z.number().int().optional(),
  do_center_crop: z.boolean().optional(),
  crop_size: size.optional(),
  do_rescale: z.boolean().optional(),
  rescale_factor: z.number().positive().optional(),
  do_normalize: z.boolean().optional(),
  image_mean: channels.optional(),
  image_std: channels.optional(),
  do_convert_rgb: z.boolean().nullable().optional(),
  /** SigLIP 2's NaFlex processor (patches at the image's own aspect ratio): told apart to refuse it by name. */
  max_num_patches: positive.optional(),
});
export type PreprocessorConfig = z.infer<typeof preprocessorConfigSchema>;

const addedToken = z.union([z.string(), z.object({ content: z.string() })]);

/** tokenizer_config.json: lengths and special tokens (the tokenizer library reads the rest). */
export const tokenizerConfigSchema = z.looseObject({
  model_max_length: z.number().optional(),
  pad_token: addedToken.nullable().optional(),
  unk_token: addedToken.nullable().optional(),
});
export type TokenizerConfig = z.infer<typeof tokenizerConfigSchema>;

/** tokenizer.json's truncation and padding (the tokenizer library reads the rest: tokenizers.js applies neither). */
export const tokenizerJsonSchema = z.looseObject({
  truncation: z.object({ max_length: positive }).nullable().optional(),
  padding: z
    .object({
      strategy: z.union([z.literal('BatchLongest'), z.object({ Fixed: positive })]),
      direction: z.enum(['Right', 'Left']).optional(),
      pad_id: z.number().int().nonnegative().optional(),
      pad_token: z.string().optional(),
    })
    .nullable()
    .optional(),
  model: z.looseObject({ unk_token: z.string().nullable().optional() }),
});
export type TokenizerJson = z.infer<typeof tokenizerJsonSchema>;

/** A model file's text, named in the message where the model has no such file. */
export async function readModelText(files: ModelFiles, name: string): Promise<string> {
  if (!files.names.includes(name)) throw new Error(`${files.source} has no ${name}`);
  return readFile(await files.localPath(name), 'utf8');
}

/** A JSON file of the model, checked by `schema`; the parsed whole too, for the libraries that read more of it. */
export async function readModelJson<T extends z.ZodType>(files: ModelFiles, name: string, schema: T): Promise<{ value: z.infer<T>; json: unknown }> {
  let json: unknown;
  try {
    json = JSON.parse(await readModelText(files, name));
  } catch (error) {
    if (error instanceof SyntaxError) throw new Error(`${files.source}: ${name} is not JSON (${error.message})`);
    throw error;
  }
  const parsed = schema.safeParse(json);
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    const where = issue.path.length > 0 ? ` at ${issue.path.join('.')}` : '';
    throw new Error(`${files.source}: ${name}${where}: ${issue.message}`);
  }
  return { value: parsed.data, json };
}

/** An added token's text, as tokenizer_config.json writes it (a string or `{content}`). */
export const tokenText = (token: z.infer<typeof addedToken> | null | undefined): string | undefined =>
  token === null || token === undefined ? undefined : typeof token === 'string' ? token : token.content;
