declare module 'vitest' {
  export interface ProvidedContext {
    benchSizes: number[];
    benchResultsUrl: string;
  }
}

export {};
