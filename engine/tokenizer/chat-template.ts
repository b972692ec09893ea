/**
 * Chat templates: the model's Jinja template (from tokenizer_config.json, chat_template.jinja
 * or the GGUF `tokenizer.chat_template`) rendered with `@huggingface/jinja`, with the same
 * variables transformers' `apply_chat_template` passes: `messages`, `add_generation_prompt`,
 * `bos_token`, `eos_token`, `tools`, and a request's own variables (`chat_template_kwargs`) (`raise_exception` and `strftime_now`, which Llama 3.x
 * templates call, are built into the renderer). Any template failure is an INVALID_ARGUMENT EngineError that says what
 * went wrong, since it is the request's messages that the template rejected (or the
 * configured template that is broken) — never a crash.
 */
import { Template } from '@huggingface/jinja';
import { EngineError } from '../errors.js';
import type { ChatMessage } from '../types.js';

/**
 * Used when a model ships no chat template (and none is configured): plain ChatML
 * (`<|im_start|>role\ncontent<|im_end|>\n`, then `<|im_start|>assistant\n` as the generation
 * prompt) — the format most small instruct models use and the usual server fallback. A model
 * trained on another format should be given its template (ModelConfig `chat_template`).
 */
export const FALLBACK_CHATML_TEMPLATE =
  "{% for message in messages %}{{ '<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>' + '\\n' }}" +
  "{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}";

export interface ChatTemplateOptions {
  readonly addGenerationPrompt?: boolean;
  readonly tools?: readonly unknown[];
  readonly bosToken?: string | null;
  readonly eosToken?: string | null;
  /** Further template variables (vLLM's chat_template_kwargs); the reserved names are refused. */
  readonly variables?: Readonly<Record<string, unknown>>;
  /**
   * Every message's content as a list of typed parts (`{type: 'text', text}`, `{type:
   * 'image'}`), as a vision model's processor hands its template (SmolVLM's reads no other).
   */
  readonly contentParts?: boolean;
}

/** What a tokenizer's applyChatTemplate takes: the render options and the template to use. */
export interface ChatTemplateCallOptions extends Pick<
  ChatTemplateOptions,
  'addGenerationPrompt' | 'tools' | 'variables' | 'contentParts'
> {
  readonly template?: string;
}

/** Variables the renderer sets itself: a request's template variables may not replace them. */
export const RESERVED_TEMPLATE_VARIABLES: ReadonlySet<string> = new Set([
  'messages',
  'add_generation_prompt',
  'bos_token',
  'eos_token',
  'tools',
  'documents',
]);

/** Parsed templates by source text: parsing is the expensive part and a server renders the same few. */
const compiled = new Map<string, Template>();
const MAX_COMPILED = 16;

function compile(source: string): Template {
  let template = compiled.get(source);
  if (template) return template;
  try {
    template = new Template(source);
  } catch (error) {
    throw new EngineError(
      'INVALID_ARGUMENT',
      `chat template: cannot parse the template: ${messageOf(error)}`,
      'chat_template',
    );
  }
  if (compiled.size >= MAX_COMPILED) compiled.delete(compiled.keys().next().value!);
  compiled.set(source, template);
  return template;
}

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

/**
 * How a template reads assistant tool calls, from its source: most (Llama 3.1's `tojson`,
 * hermes/Qwen) want the arguments as an object, as vLLM passes them; one that concatenates
 * them to text (`arguments'] + …`, DeepSeek-V3) wants the JSON string. Templates
 * that test `content is none` to find a tool-call turn (DeepSeek-V3) get null for its
 * empty content; the others get "" (Qwen3's tests `'</think>' in content`, which null breaks).
 */
interface TemplateConventions {
  readonly argumentsAsObject: boolean;
  readonly emptyCallContentAsNull: boolean;
}

function conventionsOf(source: string): TemplateConventions {
  return {
    argumentsAsObject: !/arguments['"]?\]?\s*\+/.test(source),
    emptyCallContentAsNull: /content['"]?\]?\s+is\s+none/.test(source),
  };
}

/** Tool-call arguments as an object when the string holds a JSON object (else the text). */
function toolArguments(text: string, asObject: boolean): unknown {
  if (!asObject) return text;
  try {
    const parsed: unknown = JSON.parse(text);
    if (parsed !== null && typeof parsed === 'object' && !Array.isArray(parsed)) return parsed;
  } catch {
    // not JSON: pass the text through
  }
  return text;
}

/** A message's content as typed parts: its parts in order, or its text as one part (none when empty). */
function partsOf(message: ChatMessage): Record<string, unknown>[] {
  if (message.parts)
    return message.parts.map((p) =>
      p.type === 'image' ? { type: 'image' } : { type: 'text', text: p.text },
    );
  return message.content === '' ? [] : [{ type: 'text', text: message.content }];
}

/** engine ChatMessage → the dict shape Hugging Face templates read. */
function templateMessage(
  message: ChatMessage,
  conventions: TemplateConventions,
  contentParts: boolean,
): Record<string, unknown> {
  const out: Record<string, unknown> = {
    role: message.role,
    content: contentParts ? partsOf(message) : message.content,
  };
  if (message.name !== undefined) out.name = message.name;
  if (message.toolCallId !== undefined) out.tool_call_id = message.toolCallId;
  if (message.reasoningContent !== undefined) out.reasoning_content = message.reasoningContent;
  if (message.toolCalls && message.toolCalls.length > 0) {
    if (message.content === '' && conventions.emptyCallContentAsNull) out.content = null;
    out.tool_calls = message.toolCalls.map((call) => ({
      id: call.id,
      type: call.type,
      function: {
        name: call.function.name,
        arguments: toolArguments(call.function.arguments, conventions.argumentsAsObject),
      },
    }));
  }
  return out;
}

export function renderChatTemplate(
  source: string,
  messages: readonly ChatMessage[],
  options: ChatTemplateOptions = {},
): string {
  const template = compile(source);
  const conventions = conventionsOf(source);
  try {
    return template.render({
      ...options.variables,
      messages: messages.map((m) => templateMessage(m, conventions, options.contentParts ?? false)),
      add_generation_prompt: options.addGenerationPrompt ?? false,
      bos_token: options.bosToken ?? '',
      eos_token: options.eosToken ?? '',
      // transformers passes None when there are no tools; templates test `tools is not none`.
      tools: options.tools && options.tools.length > 0 ? options.tools : null,
      documents: null,
    });
  } catch (error) {
    if (error instanceof EngineError) throw error;
    throw new EngineError('INVALID_ARGUMENT', `chat template: ${messageOf(error)}`, 'messages');
  }
}
