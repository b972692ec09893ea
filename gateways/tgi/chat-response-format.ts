/**
 * TGI's forms of `response_format` on /v1/chat/completions, which Hugging Face's
 * `InferenceClient.chat_completion` sends: `{"type": "json", "value": schema}`,
 * `{"type": "json_object", "value": schema}` (TGI's alias of `json`; the client rewrites an
 * OpenAI `json_schema` into it) and `{"type": "regex", "value": pattern}`. Each is enforced
 * through the same structured-output mapping as TGI's `parameters.grammar`; the OpenAI forms
 * (`json_object` without `value`, `json_schema`, `text`) go on to the OpenAI mapping.
 */
import type { Constraint } from '../../engine/api.js';
import { invalid } from '../shared/http-error.js';
import { constraintFromFields, fromTgiGrammar, type ConstraintFields } from '../shared/structured.js';

function tgiForm(rf: unknown): { type: 'json' | 'regex'; value: unknown } | undefined {
  if (rf === null || typeof rf !== 'object' || Array.isArray(rf) || !('value' in rf)) return undefined;
  const { type, value } = rf as { type?: unknown; value: unknown };
  if (type === 'json' || type === 'json_object') return { type: 'json', value };
  if (type === 'regex') return { type: 'regex', value };
  return undefined;
}

/** The chat request's constraint: TGI's `response_format` forms, else the OpenAI/vLLM fields. */
export function chatConstraint(
  body: ConstraintFields,
): { constraint: Constraint; field: string } | undefined {
  const tgi = tgiForm(body.response_format);
  if (!tgi) return constraintFromFields(body, { allowResponseFormat: true });
  const other = constraintFromFields({ ...body, response_format: undefined }, { allowResponseFormat: true });
  if (other) throw invalid(other.field, 'cannot be combined with response_format: give one constraint');
  return fromTgiGrammar(tgi, 'response_format');
}
