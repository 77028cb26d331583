/** ONNX_EXECUTION_PROVIDERS: the execution providers tried in order, e.g. "cuda,cpu"; unset, the CPU alone. */
export function executionProvidersFromEnv(env: NodeJS.ProcessEnv = process.env): string[] {
  const list = env.ONNX_EXECUTION_PROVIDERS?.split(',')
    .map((item) => item.trim())
    .filter(Boolean);
  return list && list.length > 0 ? list : ['cpu'];
}

/** Whether runs happen on the CPU alone: no accelerator among the providers. */
export const onCpuAlone = (providers: readonly string[]): boolean => providers.every((provider) => provider === 'cpu');
