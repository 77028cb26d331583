import { z } from 'zod';
import { DECIMAL_TEXT, INTEGER_TEXT } from '../number-text';
import { invalidParameter } from './envelope';
import type { RequestParams } from './params';

/**
 * Request parameters are described once, as zod schemas of their typed values: the name is the key in a shape, the
 * schema holds the type, default, bounds and description. readParam checks a request against them, and the OpenAPI
 * document (src/openapi/) is generated from the same shapes.
 */
export type ParamShape = Record<string, z.ZodType>;

type Bounds = { min: number; max: number; default: number };

export const integer = (bounds: Bounds, description: string) =>
  z.int().min(bounds.min).max(bounds.max).default(bounds.default).meta({ description });

export const decimal = (bounds: Bounds, description: string) =>
  z.number().min(bounds.min).max(bounds.max).default(bounds.default).meta({ description });

/** Accepts true/false, True/False and 1/0 (docs/decisions.md). */
export const flag = (description: string) => z.boolean().default(false).meta({ description });

export const choice = <const T extends readonly [string, ...string[]]>(
  values: T,
  fallback: T[number],
  description: string,
) => z.enum(values).default(fallback).meta({ description });

export const text = (description: string) => z.string().optional().meta({ description });

/** A parameter that may be repeated; every value is kept, in order. */
export const list = (description: string) => z.array(z.string()).default([]).meta({ description });

export const file = (description: string) => z.file().optional().meta({ description });

const BOOLEANS: Record<string, boolean> = { true: true, True: true, '1': true, false: false, False: false, '0': false };

/** The schema under its default and optional wrappers: the one that says what kind of value the parameter is. */
export function valueSchema(schema: z.ZodType): z.ZodType {
  let inner = schema;
  while (inner instanceof z.ZodDefault || inner instanceof z.ZodOptional) inner = inner.unwrap() as z.ZodType;
  return inner;
}

const fallbackOf = (schema: z.ZodType): unknown =>
  schema instanceof z.ZodDefault ? schema.def.defaultValue : undefined;

function readNumber(params: RequestParams, name: string, schema: z.ZodType, number: z.ZodNumber): number {
  const raw = params.string(name);
  if (raw === undefined || raw === '') return fallbackOf(schema) as number;
  const { minValue: min, maxValue: max } = number;
  if (number.format === 'safeint') {
    if (!INTEGER_TEXT.test(raw.trim())) throw invalidParameter(`${name} must be an integer.`);
    if (!number.safeParse(Number(raw)).success) throw invalidParameter(`${name} must be between ${min} and ${max}.`);
    return Number(raw);
  }
  if (!DECIMAL_TEXT.test(raw.trim()) || !number.safeParse(Number(raw)).success) {
    throw invalidParameter(`${name} must be between ${min?.toFixed(1)} and ${max?.toFixed(1)}.`);
  }
  return Number(raw);
}

function readBoolean(params: RequestParams, name: string, schema: z.ZodType): boolean {
  const raw = params.string(name);
  if (raw === undefined || raw === '') return fallbackOf(schema) as boolean;
  const value = BOOLEANS[raw.trim()];
  if (value === undefined) throw invalidParameter(`${name} must be true or false.`);
  return value;
}

/** Only an absent choice takes the default: an empty one is a wrong one. */
function readChoice(params: RequestParams, name: string, schema: z.ZodType, choices: z.ZodEnum): string {
  const raw = params.string(name);
  if (raw === undefined) return fallbackOf(schema) as string;
  if (!choices.safeParse(raw).success) throw invalidParameter(`${name} must be ${choices.options.join(' or ')}.`);
  return raw;
}

/** zod types files with its own File; a parameter's file is the runtime's. */
type Value<T extends z.ZodType> = z.output<T> extends z.core.File | undefined ? File | undefined : z.output<T>;

/** One parameter of a shape, read from the request and checked as its schema says; a wrong value is a 400. */
export function readParam<S extends ParamShape, K extends keyof S & string>(
  params: RequestParams,
  shape: S,
  name: K,
): Value<S[K]> {
  const schema = shape[name]!;
  const inner = valueSchema(schema);
  let value: unknown;
  if (inner instanceof z.ZodNumber) value = readNumber(params, name, schema, inner);
  else if (inner instanceof z.ZodBoolean) value = readBoolean(params, name, schema);
  else if (inner instanceof z.ZodEnum) value = readChoice(params, name, schema, inner);
  else if (inner instanceof z.ZodArray) value = params.strings(name);
  else if (inner instanceof z.ZodFile) value = params.file(name);
  else value = params.string(name);
  return value as Value<S[K]>;
}
