import { Tokenizer } from '@huggingface/tokenizers';
import type { ModelFiles } from '../../hub/model-files.ts';
import { readModelJson, tokenizerConfigSchema, tokenizerJsonSchema, tokenText, type ModelConfig } from './configs.ts';
import type { Family } from './families.ts';

/*
 * A text as a text tower's inputs. @huggingface/tokenizers reads tokenizer.json (normalizer, pre-tokenizer, model,
 * post-processor: the special tokens); it neither truncates nor pads, so that is done here as transformers does:
 * the text's tokens truncated so that they fit with the special tokens, then padded where the model wants a length.
 */

/** What a text tower is fed: token ids and their attention mask, [1, length] each. */
export type TextInputs = { readonly ids: BigInt64Array; readonly mask: BigInt64Array };

/**
 * Past this, tokenizer_config.json's model_max_length is taken as unset: transformers writes its VERY_LARGE_INTEGER
 * (1e30) there when a tokenizer has no length of its own.
 */
const UNSET_LENGTH = 1e15;

export class TextTokenizer {
  /** At most this many tokens, special tokens included. */
  readonly maxLength: number;
  /** Every text padded to this length (SigLIP: the maximum; or tokenizer.json's fixed padding), if any. */
  readonly padTo: number | undefined;
  readonly #tokenizer: Tokenizer;
  readonly #specials: number;
  readonly #padId: number;
  readonly #padLeft: boolean;
  readonly #unkId: number | undefined;

  constructor(tokenizer: Tokenizer, options: { maxLength: number; padTo?: number; padId: number; padLeft: boolean }) {
    this.#tokenizer = tokenizer;
    this.maxLength = options.maxLength;
    this.padTo = options.padTo;
    this.#padId = options.padId;
    this.#padLeft = options.padLeft;
    this.#unkId = tokenizer.model?.unk_token_id;
    this.#specials = this.#withSpecials([]).length;
    if (this.#specials >= this.maxLength) throw new Error(`the tokenizer adds ${this.#specials} special tokens, as many as its maximum length ${this.maxLength}`);
  }

  encode(text: string): TextInputs {
    const tokens = this.#tokenizer.tokenize(text, { add_special_tokens: false }).slice(0, this.maxLength - this.#specials);
    const ids = this.#withSpecials(tokens).map((token) => {
      const id = this.#tokenizer.token_to_id(token) ?? this.#unkId;
      if (id === undefined) throw new Error(`the tokenizer has no id for the token "${token}" and no unknown token`);
      return id;
    });
    const length = Math.max(ids.length, this.padTo ?? 0);
    const pad = length - ids.length;
    const padded = this.#padLeft ? [...new Array<number>(pad).fill(this.#padId), ...ids] : [...ids, ...new Array<number>(pad).fill(this.#padId)];
    const mask = padded.map((_, i) => (this.#padLeft ? i >= pad : i < ids.length) ? 1n : 0n);
    return { ids: BigInt64Array.from(padded, (id) => BigInt(id)), mask: BigInt64Array.from(mask) };
  }

  #withSpecials(tokens: string[]): string[] {
    const processor = this.#tokenizer.post_processor;
    return processor ? processor.post_process(tokens, null, true).tokens : tokens;
  }
}

/** What the tokenizer reads of a family: its name for messages and its text's lengths (a detector reads text too). */
export type TokenizedFamily = Pick<Family, 'name'> & { readonly text?: Pick<NonNullable<Family['text']>, 'padToMaxLength' | 'maxLength'> };

/**
 * The model's tokenizer (tokenizer.json, and tokenizer_config.json where there is one): its length is the least of
 * tokenizer.json's truncation, tokenizer_config.json's model_max_length and config.json's text
 * max_position_embeddings, else the family's; padded as the family (SigLIP: to that length) or tokenizer.json says.
 */
export async function loadTextTokenizer(files: ModelFiles, family: TokenizedFamily, config: ModelConfig): Promise<TextTokenizer> {
  const where = files.source;
  const { value: tokenizerJson, json } = await readModelJson(files, 'tokenizer.json', tokenizerJsonSchema);
  const tokenizerConfig = files.names.includes('tokenizer_config.json') ? (await readModelJson(files, 'tokenizer_config.json', tokenizerConfigSchema)).value : {};
  let tokenizer: Tokenizer;
  try {
    tokenizer = new Tokenizer(json as object, tokenizerConfig);
  } catch (error) {
    throw new Error(`${where}: tokenizer.json could not be read: ${error instanceof Error ? error.message : String(error)}`);
  }
  const lengths = [
    tokenizerJson.truncation?.max_length,
    tokenizerConfig.model_max_length !== undefined && tokenizerConfig.model_max_length < UNSET_LENGTH ? tokenizerConfig.model_max_length : undefined,
    config.text_config?.max_position_embeddings,
  ].filter((length): length is number => length !== undefined);
  const maxLength = lengths.length > 0 ? Math.min(...lengths) : family.text!.maxLength;
  const fixed = tokenizerJson.padding && typeof tokenizerJson.padding.strategy === 'object' ? tokenizerJson.padding.strategy.Fixed : undefined;
  const padTo = family.text!.padToMaxLength ? maxLength : fixed;
  const padToken = tokenizerJson.padding?.pad_token ?? tokenText(tokenizerConfig.pad_token);
  const padId = tokenizerJson.padding?.pad_id ?? (padToken === undefined ? undefined : tokenizer.token_to_id(padToken));
  if (padTo !== undefined && padId === undefined) {
    throw new Error(`${where}: the ${family.name} text tower pads to ${padTo} tokens, but neither tokenizer.json nor tokenizer_config.json names a pad token the tokenizer has`);
  }
  return new TextTokenizer(tokenizer, { maxLength, ...(padTo !== undefined && { padTo }), padId: padId ?? 0, padLeft: tokenizerJson.padding?.direction === 'Left' });
}
