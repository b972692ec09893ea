/**
 * Chat templates for GGUF files that carry none, by architecture. Some conversions (the
 * Gemma 3 270M file Prism tests with among them) leave `tokenizer.chat_template` out; ChatML,
 * the general fallback, is not what those models were trained on, so a file of a known
 * architecture gets that architecture's own turn format instead.
 *
 * Gemma 3: `<start_of_turn>user\n…<end_of_turn>\n`, the assistant's role spelled `model`, a
 * system message folded into the first user turn (Gemma has no system role), BOS written by
 * the template, and `<start_of_turn>model\n` as the generation prompt. Content given as a
 * list of parts contributes its text parts.
 */
const GEMMA3 = [
  '{{ bos_token }}',
  '{%- set ns = namespace(prefix="") -%}',
  '{%- set turns = messages -%}',
  "{%- if messages and messages[0]['role'] == 'system' -%}",
  "{%- set ns.prefix = (messages[0]['content'] if messages[0]['content'] is string else messages[0]['content'] | selectattr('type', 'equalto', 'text') | map(attribute='text') | join('')) + '\\n\\n' -%}",
  '{%- set turns = messages[1:] -%}',
  '{%- endif -%}',
  '{%- for message in turns -%}',
  "{%- if (message['role'] == 'user') != (loop.index0 % 2 == 0) -%}",
  "{{ raise_exception('Gemma conversations alternate user and assistant turns, starting with the user') }}",
  '{%- endif -%}',
  "{{ '<start_of_turn>' + ('model' if message['role'] == 'assistant' else message['role']) + '\\n' }}",
  '{%- if loop.first %}{{ ns.prefix }}{% endif -%}',
  "{%- if message['content'] is string -%}{{ message['content'] | trim }}",
  "{%- else -%}{%- for part in message['content'] -%}{%- if part['type'] == 'text' %}{{ part['text'] | trim }}{% endif -%}{%- endfor -%}",
  '{%- endif -%}',
  "{{ '<end_of_turn>\\n' }}",
  '{%- endfor -%}',
  "{%- if add_generation_prompt %}{{ '<start_of_turn>model\\n' }}{% endif -%}",
].join('\n');

const BY_ARCHITECTURE: Readonly<Record<string, string>> = { gemma3: GEMMA3 };

/** The built-in chat template of a GGUF architecture (`general.architecture`), if Prism has one. */
export function builtinChatTemplate(architecture: unknown): string | null {
  return typeof architecture === 'string' ? (BY_ARCHITECTURE[architecture] ?? null) : null;
}
