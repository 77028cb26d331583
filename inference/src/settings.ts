/**
 * An integer setting from the environment, `fallback` when unset; a value outside [min, max] stops the service
 * before it listens.
 */
export function integerSetting(env: NodeJS.ProcessEnv, name: string, fallback: number, min: number, max = Number.POSITIVE_INFINITY): number {
  const value = Number(env[name] || fallback);
  if (!(Number.isInteger(value) && value >= min && value <= max)) {
    const range = max === Number.POSITIVE_INFINITY ? `of at least ${min}` : `from ${min} to ${max}`;
    throw new Error(`${name} must be an integer ${range}, got "${env[name]}"`);
  }
  return value;
}

/** One of `choices` from the environment, the first when unset; any other value stops the service before it listens. */
export function choiceSetting<T extends string>(env: NodeJS.ProcessEnv, name: string, choices: readonly [T, ...T[]]): T {
  const value = env[name] || choices[0];
  if (!(choices as readonly string[]).includes(value)) throw new Error(`${name} must be one of ${choices.join(', ')}, got "${value}"`);
  return value as T;
}

/** A fraction from the environment, `fallback` when unset; a value not strictly between 0 and 1 stops the service before it listens. */
export function fractionSetting(env: NodeJS.ProcessEnv, name: string, fallback: number): number {
  const value = Number(env[name] || fallback);
  if (!(value > 0 && value < 1)) throw new Error(`${name} must be a number between 0 and 1, both excluded, got "${env[name]}"`);
  return value;
}
