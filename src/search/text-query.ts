import { z } from 'zod';
import type { Env } from '../env';
import { ApiError, invalidParameter } from '../http/envelope';
import { GENERAL } from '../http/messages';
import type { RequestParams } from '../http/params';
import { inference } from '../ports/inference';
import { InferenceUnavailableError, MAX_TEXT_LENGTH, ModelReadsNoTextError } from '../ports/inference/types';
import { characterLength } from '@edge-image-search/contract/wire';

/** A search by text needs an application on a model with a text tower (CLIP, SigLIP). */
export const MODEL_READS_NO_TEXT = "The application's embedding model cannot read text: search by text needs a model with a text tower (CLIP, SigLIP).";

const QUERY_TEXT_BOUNDS = `At most ${MAX_TEXT_LENGTH} characters; the model reads as much of it as its text length holds.`;

/** `/textsearch`'s query. */
export const TEXT_QUERY = {
  q: z.string().min(1).max(MAX_TEXT_LENGTH).meta({ description: `The text to search by, e.g. \`red shoes\`. ${QUERY_TEXT_BOUNDS}` }),
};

/** An image search's optional steering text (docs/decisions.md, "Text queries"). */
export const STEERING_TEXT = {
  q: z
    .string()
    .max(MAX_TEXT_LENGTH)
    .optional()
    .meta({ description: `A text steering the image query, e.g. \`in red\`: its embedding joins the image's. ${QUERY_TEXT_BOUNDS}` }),
};

/**
 * `q`, its whitespace collapsed; undefined when absent or blank, which `/textsearch` (`required`) refuses. Read
 * before anything is downloaded or embedded.
 */
export function readQueryText(params: RequestParams, options: { required: true }): string;
export function readQueryText(params: RequestParams, options: { required: false }): string | undefined;
export function readQueryText(params: RequestParams, { required }: { required: boolean }): string | undefined {
  // Runs of whitespace as one space, as the tokenizers read them: a form body would turn each line break into two
  // characters on the way to the service, past the length checked here.
  const text = params.string('q')?.replace(/\s+/g, ' ').trim();
  if (!text) {
    if (required) throw invalidParameter('q is required: the text to search by.');
    return undefined;
  }
  if (characterLength(text) > MAX_TEXT_LENGTH) throw invalidParameter(`q must be at most ${MAX_TEXT_LENGTH} characters.`);
  return text;
}

/** The text's embedding by the application's model; a model without a text tower is the search's failure. */
export async function embedQueryText(env: Env, text: string, embedModel: string): Promise<number[]> {
  try {
    return (await inference(env).embedText(text, { embedModel })).vector;
  } catch (error) {
    if (error instanceof ModelReadsNoTextError) throw new ApiError(400, MODEL_READS_NO_TEXT);
    if (error instanceof InferenceUnavailableError) throw new ApiError(503, GENERAL.busy);
    throw error;
  }
}

/**
 * An image query steered by a text (docs/decisions.md): the normalized sum of the two unit vectors, weighted
 * equally, so the result lies halfway between them on the sphere. Vectors that cancel leave the image's.
 */
export function steer(image: readonly number[], text: readonly number[]): number[] {
  const sum = image.map((value, i) => value + text[i]!);
  const norm = Math.hypot(...sum);
  return norm === 0 ? [...image] : sum.map((value) => value / norm);
}
