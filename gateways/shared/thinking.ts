/**
 * Thinking controls of the OpenAI-style routes, onto the engine's template variables:
 *
 *  - `chat_template_kwargs` (vLLM) go to the chat template as they are (e.g. Qwen3's
 *    `enable_thinking: false`); the engine refuses the renderer's own names;
 *  - `reasoning_effort` (OpenAI) has one switch to map to in the families served here: `none`
 *    turns thinking off through `enable_thinking: false` (Qwen3's variable; a template without
 *    it has no thinking to turn off). The levels (`minimal` … `xhigh`) have no counterpart —
 *    no template served here grades its thinking — and are answered as ignored fields.
 */
import type { Context } from 'koa';
import { invalid } from './http-error.js';
import { noteIgnoredFields } from './ignored-fields.js';
import { nullable } from './schema.js';

const REASONING_EFFORTS = ['none', 'minimal', 'low', 'medium', 'high', 'xhigh'] as const;

export const thinkingSchemaProperties = {
  chat_template_kwargs: nullable({ type: 'object' }),
  reasoning_effort: nullable({ enum: REASONING_EFFORTS }),
} as const;

export interface ThinkingFields {
  chat_template_kwargs?: Record<string, unknown> | null;
  reasoning_effort?: (typeof REASONING_EFFORTS)[number] | null;
}

/** The chat prompt's template variables; `effortField` names reasoning_effort as the route spells it. */
export function templateVariables(
  ctx: Context,
  kwargs: Record<string, unknown> | null | undefined,
  effort: string | null | undefined,
  effortField = 'reasoning_effort',
): { chatTemplateKwargs?: Record<string, unknown> } {
  const vars: Record<string, unknown> = { ...(kwargs ?? {}) };
  if (effort === 'none') {
    if (vars.enable_thinking === true)
      throw invalid(effortField, "'none' contradicts chat_template_kwargs.enable_thinking: true");
    vars.enable_thinking = false;
  } else if (effort !== undefined && effort !== null) noteIgnoredFields(ctx, [effortField]);
  return Object.keys(vars).length > 0 || kwargs ? { chatTemplateKwargs: vars } : {};
}
