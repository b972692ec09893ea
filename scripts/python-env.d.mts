/** Types of scripts/python-env.mjs for the TypeScript benchmarks that need the project's Python. */
export function ensurePythonEnv(root: string): string | undefined;
