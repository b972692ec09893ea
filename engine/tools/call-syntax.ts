/**
 * Each family's call syntax as data, which call-grammar.ts turns into a grammar:
 * grammar-forced calls (`tool_choice` required / named) and lazily constrained calls under
 * `auto` (free text until `trigger`, then the call is constrained).
 * One call is `prefix(name)` + the arguments (a JSON value matching the tool's `parameters`
 * schema) + `suffix`; parallel calls are joined by `separator` and the whole group is
 * wrapped in `groupBegin` / `groupEnd`. The built-in tool prompt (tool-prompt.ts) writes
 * earlier calls with it too. `call-syntax.test.ts` renders calls with this data and parses
 * them back with the family's parser, so the two cannot drift.
 */
import { CALL_BEGIN, CALL_END, CALLS_BEGIN, CALLS_END, SEP } from './parsers/deepseek-common.js';
import { ASSISTANT } from './name-line-calls.js';
import type { ToolParserFamily } from './types.js';

export interface CallSyntax {
  /** Text whose appearance starts a call (the lazy grammar's trigger). */
  readonly trigger: string;
  readonly groupBegin: string;
  readonly groupEnd: string;
  readonly separator: string;
  prefix(name: string): string;
  readonly suffix: string;
  /** 'json': the arguments are JSON matching `parameters`; 'python-kwargs': `tool_call(k=v, ...)` (ChatGLM3). */
  readonly arguments: 'json' | 'python-kwargs';
}

export interface ToolSpec {
  readonly name: string;
  readonly parameters: Record<string, unknown>;
}

/** One call of `tool` as a grammar would constrain it: literal prefix, schema of the arguments, literal suffix. */
export function callShape(
  syntax: CallSyntax,
  tool: ToolSpec,
): { prefix: string; argumentsSchema: Record<string, unknown>; suffix: string } {
  return { prefix: syntax.prefix(tool.name), argumentsSchema: tool.parameters, suffix: syntax.suffix };
}

const q = JSON.stringify;

const SYNTAX: Record<string, CallSyntax | null> = {
  chatglm2: null,
  chatglm3: {
    trigger: '```python',
    groupBegin: '',
    groupEnd: '',
    separator: ASSISTANT,
    prefix: (name) => `${name}\n\`\`\`python\ntool_call`,
    suffix: '\n```',
    arguments: 'python-kwargs',
  },
  glm_4: {
    trigger: '\n{',
    groupBegin: '',
    groupEnd: '',
    separator: ASSISTANT,
    prefix: (name) => `${name}\n`,
    suffix: '',
    arguments: 'json',
  },
  deepseek_v3: {
    trigger: CALLS_BEGIN,
    groupBegin: CALLS_BEGIN,
    groupEnd: CALLS_END,
    separator: '\n',
    prefix: (name) => `${CALL_BEGIN}function${SEP}${name}\n\`\`\`json\n`,
    suffix: `\n\`\`\`${CALL_END}`,
    arguments: 'json',
  },
  deepseek_v31: {
    trigger: CALLS_BEGIN,
    groupBegin: CALLS_BEGIN,
    groupEnd: CALLS_END,
    separator: '',
    prefix: (name) => `${CALL_BEGIN}${name}${SEP}`,
    suffix: CALL_END,
    arguments: 'json',
  },
  llama3: {
    trigger: '{"name"',
    groupBegin: '',
    groupEnd: '',
    separator: '; ',
    prefix: (name) => `{"name": ${q(name)}, "parameters": `,
    suffix: '}',
    arguments: 'json',
  },
  qwen1_5_or_2: {
    trigger: '✿FUNCTION✿',
    groupBegin: '',
    groupEnd: '\n✿RESULT✿',
    separator: '\n',
    prefix: (name) => `✿FUNCTION✿: ${name}\n✿ARGS✿: `,
    suffix: '',
    arguments: 'json',
  },
  qwen2_5: hermes(),
  qwen3: hermes(),
};

function hermes(): CallSyntax {
  return {
    trigger: '<tool_call>',
    groupBegin: '',
    groupEnd: '',
    separator: '\n',
    prefix: (name) => `<tool_call>\n{"name": ${q(name)}, "arguments": `,
    suffix: '}\n</tool_call>',
    arguments: 'json',
  };
}

/** The family's call syntax; null for a family without one (ChatGLM2). */
export function callSyntax(family: ToolParserFamily): CallSyntax | null {
  return SYNTAX[family.name] ?? null;
}
