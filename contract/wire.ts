/**
 * The wire contract of `POST /predict`, written once: the service parses its form with these schemas and types its
 * answer by them; the Worker's inference port (src/ports/inference/) builds the form with predictForm and checks the
 * answer with predictionSchema. Depends on zod only, so both the Worker's bundler and Node's type stripping load it.
 */
import { z } from 'zod';

/** The tasks a request can ask for; each answers under its own key. */
export const TASKS = ['embed', 'detect', 'colors'] as const;
export type Task = (typeof TASKS)[number];

/**
 * The class of a request, sent in PRIORITY_HEADER (absent: interactive). An interactive prediction (a search) never
 * waits behind bulk ones (inserts), and bulk is refused busy first when the service is saturated.
 */
export const PRIORITIES = ['interactive', 'bulk'] as const;
export type Priority = (typeof PRIORITIES)[number];
export const PRIORITY_HEADER = 'x-inference-priority';

/** x1, y1, x2, y2 in the original image's pixels as displayed; (0,0) is the top-left corner. */
export const box = z.tuple([z.number(), z.number(), z.number(), z.number()]);
export type Box = z.infer<typeof box>;

const paletteColor = z.object({
  /** `rrggbb`, lower case. */
  hex: z.string().regex(/^[0-9a-f]{6}$/),
  /** Its share of the image (or object), 0 to 1. */
  ratio: z.number().min(0).max(1),
});
export type PaletteColor = z.infer<typeof paletteColor>;

export const detectedObject = z.object({
  /** The API's product type, e.g. `Bag`. */
  type: z.string(),
  /** The detector's own label, e.g. `handbag`. */
  label: z.string(),
  score: z.number(),
  /** Integers in original pixels. */
  box,
  /** The embed model's vector of the object's crop (box plus margin), comparable with whole-image vectors. */
  embedding: z.array(z.number()),
  /** The object's own dominant colours (its box, no margin), when `colors` was asked too. */
  colors: z.array(paletteColor).optional(),
  /** Attribute name to the value judged (contract/attributes.ts), for the attributes its type's `attributes_list` names. */
  attributes: z.record(z.string(), z.string()).optional(),
});
export type DetectedObject = z.infer<typeof detectedObject>;

/**
 * What `GET /health` says of the loaded detector (`detector`, once the models are loaded): whether it finds what a text
 * names (any type, by prompts) and the types it reports when a request names none. The Worker checks an
 * application's own types against it.
 */
export const detectorInfo = z.object({ model: z.string(), open_vocabulary: z.boolean(), types: z.array(z.string()) });
export type DetectorInfo = z.infer<typeof detectorInfo>;

/** The most types an application detects, prompts a type, characters a prompt, attributes a type, values an attribute. */
export const VOCABULARY_LIMITS = { types: 100, prompts: 10, promptLength: 200, attributes: 10, values: 50, valueLength: 100 } as const;

export const vocabularyType = z.object({
  /** The product type reported, e.g. `Sneaker`. */
  type: z.string().trim().min(1).max(VOCABULARY_LIMITS.valueLength),
  /** For an open-vocabulary detector: the texts that find it (its default prompts, else its name, when absent). */
  prompts: z.array(z.string().trim().min(1).max(VOCABULARY_LIMITS.promptLength)).min(1).max(VOCABULARY_LIMITS.prompts).optional(),
  /** The attributes judged on its objects and the values each may take (`color`: names of contract/attributes.ts). */
  attributes_list: z
    .record(z.string().min(1).max(VOCABULARY_LIMITS.valueLength), z.array(z.string().trim().min(1).max(VOCABULARY_LIMITS.valueLength)).min(1).max(VOCABULARY_LIMITS.values))
    .refine((list) => Object.keys(list).length <= VOCABULARY_LIMITS.attributes, { error: `at most ${VOCABULARY_LIMITS.attributes} attributes a type` })
    .optional(),
});

/**
 * The types a detection reports, with `detect` (docs/decisions.md, "Product types and attributes"): an application's
 * own, or, when absent, the service's default types with the colour attribute.
 */
export const detectVocabulary = z.object({ types: z.array(vocabularyType).min(1).max(VOCABULARY_LIMITS.types) });
export type DetectVocabulary = z.infer<typeof detectVocabulary>;
export type VocabularyType = z.infer<typeof vocabularyType>;

/** The most objects a `detect` answers, the best first. */
export const MAX_DETECTED_OBJECTS = 30;

/** Each task's answer, under the task's own key. */
const taskResults = {
  /** `vector` has unit length (L2): cosine similarity is the dot product. */
  embed: z.object({ model: z.string(), dim: z.number().int().positive(), vector: z.array(z.number()) }),
  /** Objects best first; `types` are every type the loaded detector can report. */
  detect: z.object({ model: z.string(), types: z.array(z.string()), objects: z.array(detectedObject).max(MAX_DETECTED_OBJECTS) }),
  /** At most 8 colours by descending ratio, measured in CIELAB, transparent pixels and a plain background left out. */
  colors: z.object({ model: z.string(), palette: z.array(paletteColor) }),
} satisfies Record<Task, z.ZodType>;
export type TaskResult<T extends Task> = z.infer<(typeof taskResults)[T]>;

const predictionBase = z.object({
  image: z.object({ width: z.number().int().positive(), height: z.number().int().positive(), format: z.string() }),
  /** The request's box clamped to the image, when one was given. */
  box: box.optional(),
});

/** The answer to a request for the tasks T: every asked task's result is there. */
export type Prediction<T extends Task = Task> = z.infer<typeof predictionBase> & { [K in T]: TaskResult<K> };

/** The schema of the answer to `tasks`: a body missing an asked task's result, or holding a malformed one, fails. */
export function predictionSchema<T extends Task>(tasks: readonly T[]): z.ZodType<Prediction<T>> {
  const shape = Object.fromEntries(tasks.map((task) => [task, taskResults[task]]));
  return predictionBase.extend(shape) as unknown as z.ZodType<Prediction<T>>;
}

/** Raw detections a request may carry, at most; DETR answers 100 per image. */
export const MAX_EXTERNAL_DETECTIONS = 1000;

const rawDetection = z.object({
  label: z.string(),
  /** Confidence in [0, 1]. */
  score: z.number(),
  /** Original pixels, fractional, possibly reaching past the image. */
  box,
});
export type RawDetection = z.infer<typeof rawDetection>;

const externalDetections = z.object({
  /** Names the detector; reported as `detect.model`. */
  model: z.string().min(1).max(200),
  objects: z.array(rawDetection).max(MAX_EXTERNAL_DETECTIONS),
});
/** Raw detections made elsewhere (Workers AI's DETR), in the detector's own vocabulary (COCO labels). */
export type ExternalDetections = z.infer<typeof externalDetections>;

export type PredictOptions = {
  /** Sent as PRIORITY_HEADER; interactive when absent. */
  priority?: Priority;
  /** Every task runs on this region only; coordinates in the answer stay the original image's. */
  box?: Box;
  /**
   * With `detect`: these detections instead of the service's own detector. The service still maps labels to product
   * types, applies the score floor and suppression, and embeds and colours each object's crop.
   */
  detections?: ExternalDetections;
  /**
   * The embedder, by the full id an answer reports as `embed.model`, for `embed` and for the detected objects' crop
   * embeddings; the service's default when absent. An application being reindexed names its old or its new one.
   */
  embedModel?: string;
  /** With `detect`: the application's types (their prompts and attributes); the service's defaults when absent. */
  vocabulary?: DetectVocabulary;
};

/**
 * The answer to a text's request: its `embed` alone, the text tower's vector, comparable with the same model's image
 * vectors.
 */
export const textPredictionSchema = z.object({ embed: taskResults.embed });
export type TextPrediction = z.infer<typeof textPredictionSchema>;

/** The request's form, as the Worker sends it. */
export function predictForm(image: Uint8Array, tasks: readonly Task[], options: PredictOptions = {}): FormData {
  const form = new FormData();
  form.set('image', new Blob([image]), 'image');
  form.set('tasks', tasks.join(','));
  if (options.box) form.set('box', options.box.join(','));
  if (options.detections) form.set('detections', JSON.stringify(options.detections));
  if (options.embedModel !== undefined) form.set('embed_model', options.embedModel);
  if (options.vocabulary) form.set('vocabulary', JSON.stringify(options.vocabulary));
  return form;
}

/** The longest text `/predict` embeds, in characters: the tokenizer keeps what fits the model's length anyway. */
export const MAX_TEXT_LENGTH = 1000;

/**
 * A text's length in characters (Unicode code points), as the API's length limits count it: an emoji is one, where
 * JavaScript's `length` counts two UTF-16 units.
 */
export function characterLength(text: string): number {
  let count = 0;
  for (let at = 0; at < text.length; at++) {
    const unit = text.charCodeAt(at);
    // A high surrogate followed by a low one is one character.
    if (unit >= 0xd800 && unit <= 0xdbff && at + 1 < text.length) {
      const next = text.charCodeAt(at + 1);
      if (next >= 0xdc00 && next <= 0xdfff) at++;
    }
    count++;
  }
  return count;
}

/** A text's form, as the Worker sends it: `tasks=embed` and the embedder. */
export function textForm(text: string, options: Pick<PredictOptions, 'embedModel'> = {}): FormData {
  const form = new FormData();
  form.set('text', text);
  form.set('tasks', 'embed');
  if (options.embedModel !== undefined) form.set('embed_model', options.embedModel);
  return form;
}

/** A form field that fails its schema answers 400 with the field's code, or the code its issue names. */
export const FORM_ERROR_CODES = {
  image: 'missing_image',
  text: 'bad_text',
  tasks: 'missing_tasks',
  box: 'bad_box',
  detections: 'bad_detections',
  embed_model: 'bad_embed_model',
  vocabulary: 'bad_vocabulary',
} as const;

const failWith = (ctx: z.RefinementCtx, code: string, message: string): typeof z.NEVER => {
  ctx.addIssue({ code: 'custom', message, params: { code } });
  return z.NEVER;
};

/** "embed" or "embed,detect": known task names, duplicates dropped, order kept. */
const tasksField = z.string({ error: `The form field "tasks" must list tasks out of: ${TASKS.join(', ')}.` }).transform((text, ctx) => {
  const names = text.split(',').map((name) => name.trim()).filter(Boolean);
  if (names.length === 0) return failWith(ctx, 'missing_tasks', `The form field "tasks" must list tasks out of: ${TASKS.join(', ')}.`);
  const unknown = names.filter((name) => !(TASKS as readonly string[]).includes(name));
  if (unknown.length > 0) return failWith(ctx, 'unknown_task', `Unknown task(s): ${unknown.join(', ')}; known: ${TASKS.join(', ')}.`);
  return [...new Set(names as Task[])];
});

const BOX_PATTERN = /^\s*(-?\d{1,9})\s*,\s*(-?\d{1,9})\s*,\s*(-?\d{1,9})\s*,\s*(-?\d{1,9})\s*$/;
const BOX_FORMAT = 'The form field "box" must be four integers "x1,y1,x2,y2" in image pixels.';

/** "x1,y1,x2,y2", integers; its area inside the image is checked once the image's size is known. */
const boxField = z.string({ error: BOX_FORMAT }).transform((text, ctx): Box => {
  const match = BOX_PATTERN.exec(text);
  if (!match) return failWith(ctx, 'bad_box', BOX_FORMAT);
  const [x1, y1, x2, y2] = match.slice(1, 5).map(Number) as Box;
  if (!(x2 > x1 && y2 > y1)) return failWith(ctx, 'bad_box', `The box ${x1},${y1},${x2},${y2} needs x2 > x1 and y2 > y1.`);
  return [x1, y1, x2, y2];
});

const DETECTIONS_FORMAT =
  'The form field "detections" must be JSON {"model": string of 1-200 characters, "objects": [{"label": string, ' +
  `"score": number, "box": [x1, y1, x2, y2]}], at most ${MAX_EXTERNAL_DETECTIONS}}.`;

/** A form field holding JSON read by `schema`; anything else fails with `code`, saying where and what is expected. */
const jsonField = <T extends z.ZodType>(field: string, schema: T, code: string, format: string) =>
  z.string({ error: format }).transform((text, ctx): z.infer<T> => {
    let json: unknown;
    try {
      json = JSON.parse(text);
    } catch {
      return failWith(ctx, code, `The form field "${field}" must be JSON.`);
    }
    const parsed = schema.safeParse(json);
    if (parsed.success) return parsed.data;
    const issue = parsed.error.issues[0];
    const where = (issue?.path ?? []).map((key, i) => (typeof key === 'number' ? `[${key}]` : i > 0 ? `.${String(key)}` : String(key))).join('');
    return failWith(ctx, code, `At "${where || field}": ${issue?.message ?? 'invalid'}. ${format}`);
  });

const detectionsField = jsonField('detections', externalDetections, 'bad_detections', DETECTIONS_FORMAT);

const VOCABULARY_FORMAT =
  `The form field "vocabulary" must be JSON {"types": [{"type": string, "prompts"?: [string], "attributes_list"?: {name: [value]}}], ` +
  `1-${VOCABULARY_LIMITS.types} types}.`;
const vocabularyField = jsonField('vocabulary', detectVocabulary, 'bad_vocabulary', VOCABULARY_FORMAT);

/** The longest embed model id: the Worker's settings and admin API hold ids to it too. */
export const MAX_EMBED_MODEL_ID = 200;
const EMBED_MODEL_FORMAT = `The form field "embed_model" must be an embed model id of 1-${MAX_EMBED_MODEL_ID} characters.`;

/** An embed model's full id; whether the service has it loaded is checked once the form is read. */
const embedModelField = z.string({ error: EMBED_MODEL_FORMAT }).min(1, { error: EMBED_MODEL_FORMAT }).max(MAX_EMBED_MODEL_ID, { error: EMBED_MODEL_FORMAT });

const TEXT_FORMAT = `The form field "text" must be a text of 1-${MAX_TEXT_LENGTH} characters.`;

/** What a request asks: tasks on an image, or the embedding of a text. */
export type PredictRequest =
  | { input: 'image'; image: File; tasks: Task[]; box?: Box; detections?: ExternalDetections; embedModel?: string; vocabulary?: DetectVocabulary }
  | { input: 'text'; text: string; embedModel?: string };

/**
 * The form of `POST /predict`: `image` a file, `tasks`, and optionally `box`, `detections` (with detect only) and
 * `embed_model`; or, instead of the image, `text` with `tasks=embed` alone (and `embed_model`).
 */
export const predictFormSchema = z
  .object({
    image: z.instanceof(File, { error: 'The form field "image" must be a file.' }).optional(),
    text: z
      .string({ error: TEXT_FORMAT })
      .min(1, { error: TEXT_FORMAT })
      .refine((text) => characterLength(text) <= MAX_TEXT_LENGTH, { error: TEXT_FORMAT })
      .optional(),
    tasks: tasksField,
    box: boxField.optional(),
    detections: detectionsField.optional(),
    embed_model: embedModelField.optional(),
    vocabulary: vocabularyField.optional(),
  })
  .transform(({ image, text, tasks, box, detections, embed_model: embedModel, vocabulary }, ctx): PredictRequest => {
    const model = embedModel === undefined ? {} : { embedModel };
    if (text !== undefined) {
      if (image) return failWith(ctx, 'text_and_image', 'Send either "image" or "text", not both.');
      if (tasks.length !== 1 || tasks[0] !== 'embed' || box || detections || vocabulary) {
        return failWith(ctx, 'text_embeds_only', 'A text is only embedded: "tasks" must be embed, with no "box" or "detections".');
      }
      return { input: 'text', text, ...model };
    }
    if (!image) return failWith(ctx, 'missing_image', 'The form field "image" must be a file (or "text", to embed a text).');
    if (detections && !tasks.includes('detect')) return failWith(ctx, 'bad_detections', 'The form field "detections" needs the detect task.');
    if (vocabulary && !tasks.includes('detect')) return failWith(ctx, 'bad_vocabulary', 'The form field "vocabulary" needs the detect task.');
    return { input: 'image', image, tasks, ...(box && { box }), ...(detections && { detections }), ...model, ...(vocabulary && { vocabulary }) };
  });

/** Every error the service answers: `{"error": {"code", "message"}}`. */
export const errorBody = z.object({ error: z.object({ code: z.string(), message: z.string() }) });
export type ErrorBody = z.infer<typeof errorBody>;
