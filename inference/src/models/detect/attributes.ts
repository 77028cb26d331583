import { attributePrompt, COLOR_ATTRIBUTE, DEFAULT_ATTRIBUTES_LIST, nameColor, ZERO_SHOT_MARGIN } from '@edge-image-search/contract/attributes';
import type { PaletteColor, VocabularyType } from '@edge-image-search/contract/wire';
import type { Embedder } from '../embed/embedder.ts';

/** Text vectors kept, at most: each a prompt of an embedder, asked again by every object of its type. */
const MAX_KEPT_TEXTS = 4096;

/** What an object's attributes are judged from: its crop's embedding, and its box's palette (computed when asked). */
export type ObjectEvidence = { readonly embedding: Float32Array; readonly palette: () => PaletteColor[] };

/**
 * An object's attributes (docs/decisions.md, "Product types and attributes"): for each attribute its type's
 * `attributes_list` names (the colour alone when it names none), the value chosen. `color` is named from the
 * palette of the object's box in CIELAB, with any embedder; any other attribute is judged zero-shot by an embedder
 * that reads text, its crop embedding against `a photo of a {value} {type}`, and left out unless the best value wins
 * by ZERO_SHOT_MARGIN, or when the embedder reads no text.
 */
export class ObjectAttributes {
  /** `<embedder id>\n<prompt>` -> the text's unit vector. */
  readonly #texts = new Map<string, Promise<Float32Array>>();

  async judge(type: VocabularyType, evidence: ObjectEvidence, embedder: Embedder): Promise<Record<string, string>> {
    const attributes: Record<string, string> = {};
    for (const [name, values] of Object.entries(type.attributes_list ?? DEFAULT_ATTRIBUTES_LIST)) {
      const value = name === COLOR_ATTRIBUTE ? nameColor(evidence.palette(), values) : await this.#zeroShot(type.type, values, evidence.embedding, embedder);
      if (value !== undefined) attributes[name] = value;
    }
    return attributes;
  }

  async #zeroShot(type: string, values: readonly string[], embedding: Float32Array, embedder: Embedder): Promise<string | undefined> {
    if (!embedder.embedText || values.length === 0) return undefined;
    const scored = await Promise.all(values.map(async (value) => ({ value, score: dot(embedding, await this.#text(embedder, attributePrompt(value, type))) })));
    scored.sort((a, b) => b.score - a.score);
    const [best, second] = scored;
    return best && (!second || best.score - second.score >= ZERO_SHOT_MARGIN) ? best.value : undefined;
  }

  /** A prompt's text vector, computed once per embedder and kept (the oldest dropped past MAX_KEPT_TEXTS). */
  #text(embedder: Embedder, prompt: string): Promise<Float32Array> {
    const key = `${embedder.modelId}\n${prompt}`;
    let vector = this.#texts.get(key);
    if (!vector) {
      vector = embedder.embedText!(prompt);
      // A failed text is asked again next time rather than kept.
      vector.catch(() => this.#texts.delete(key));
      if (this.#texts.size >= MAX_KEPT_TEXTS) this.#texts.delete(this.#texts.keys().next().value!);
      this.#texts.set(key, vector);
    }
    return vector;
  }
}

function dot(a: Float32Array, b: Float32Array): number {
  let sum = 0;
  for (let i = 0; i < a.length; i++) sum += a[i]! * b[i]!;
  return sum;
}
