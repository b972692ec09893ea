/**
 * The engine's side of tool calling and reasoning, what engine-core calls: checks a chat
 * prompt's tools early (so a bad request fails before tokenizing), renders the prompt with
 * the model's template (or the configured one) and says how each choice's output is parsed.
 */
import { invalidArgument } from '../errors.js';
import { checkMessages, type EngineTokenizer } from '../prompt.js';
import { FALLBACK_CHATML_TEMPLATE, RESERVED_TEMPLATE_VARIABLES } from '../tokenizer/chat-template.js';
import type { CheckedConstraint, GrammarConstraint } from '../structured/constraint.js';
import type { ChatDelta, ChatResult, PromptInput } from '../types.js';
import { toolCallConstraint } from './call-grammar.js';
import type { ChatParsing } from './chat-output.js';
import { checkToolRequest, renderToolChat } from './chat-prompt.js';
import { templateHasReasoning } from './reasoning.js';
import { defaultToolParser } from './registry.js';
import type { ToolParserFamily } from './types.js';

type ChatPrompt = Extract<PromptInput, { kind: 'chat' }>;

export class EngineChat {
  readonly template: string;
  readonly family: ToolParserFamily;
  /** Grammars this made from tool_choice: true when forced (required / named), false under auto. */
  private readonly toolGrammars = new WeakMap<GrammarConstraint, boolean>();

  constructor(
    private readonly tokenizer: EngineTokenizer,
    configuredTemplate: string | undefined,
    architecture: string,
    family?: ToolParserFamily,
    /** Messages reach the template as typed content parts (a vision model's template). */
    private readonly contentParts = false,
  ) {
    this.template = configuredTemplate ?? tokenizer.chatTemplate ?? FALLBACK_CHATML_TEMPLATE;
    this.family = family ?? defaultToolParser(architecture, this.template);
  }

  /** The checks that need no tokenizing (tools, tool_choice, tool messages). */
  check(prompt: PromptInput): void {
    if (prompt?.kind !== 'chat') return;
    checkMessages(prompt.messages, 'prompt.messages');
    checkToolRequest(prompt);
    checkTemplateVariables(prompt.chatTemplateKwargs, 'prompt.chat_template_kwargs');
  }

  /**
   * The grammar the request's output follows: the client's constraint, or the one its
   * tool_choice asks for (call-grammar.ts). A forced call (`required`, a named function)
   * cannot be combined with a client's constraint; under `auto` a client's constraint wins
   * and the calls are parsed from its output as they are without a grammar.
   */
  constraint(prompt: PromptInput, client: CheckedConstraint | null): GrammarConstraint | null {
    if (prompt?.kind !== 'chat') return client;
    const choice = prompt.toolChoice;
    const forced = choice === 'required' || (typeof choice === 'object' && choice !== null);
    if (forced && client !== null)
      throw invalidArgument(
        'constraint',
        'cannot be combined with a forced tool call (tool_choice required or a named function)',
      );
    if (client !== null || !this.tokenizer.grammarVocab) {
      if (forced)
        throw invalidArgument(
          'prompt.tool_choice',
          'this engine has no tokenizer vocabulary to force a call with',
        );
      return client;
    }
    const tools = toolCallConstraint(prompt, this.family, templateHasReasoning(this.template));
    if (tools) this.toolGrammars.set(tools, forced);
    return tools;
  }

  /**
   * Compiles with `compile`. A tools grammar that does not compile (a schema xgrammar cannot
   * handle although the allowlist passed it, e.g. a lookahead in a `pattern`) fails a forced
   * call naming the tools, and leaves an `auto` request's calls unconstrained (null key).
   */
  async compile(
    c: GrammarConstraint,
    compile: (c: GrammarConstraint) => Promise<string>,
  ): Promise<string | null> {
    const forced = this.toolGrammars.get(c);
    if (forced === undefined) return compile(c);
    try {
      return await compile(c);
    } catch (e) {
      if (!forced) return null;
      const reason = e instanceof Error ? e.message.replace(/^constraint:\s*/, '') : String(e);
      throw invalidArgument(
        'prompt.tools',
        `the forced tool call's grammar (from the tools' parameters): ${reason}`,
      );
    }
  }

  /** The prompt text, and how the output is parsed (null: returned as is). */
  render(prompt: ChatPrompt, field = 'prompt.messages'): { text: string; parsing: ChatParsing | null } {
    return renderToolChat(prompt, this.template, this.family, (messages, tools) => {
      try {
        return this.tokenizer.applyChatTemplate(messages, {
          addGenerationPrompt: prompt.addGenerationPrompt ?? true,
          template: this.template,
          ...(this.contentParts ? { contentParts: true } : {}),
          ...(tools ? { tools } : {}),
          ...(prompt.chatTemplateKwargs ? { variables: prompt.chatTemplateKwargs } : {}),
        });
      } catch (e) {
        throw invalidArgument(field, `chat template failed: ${e instanceof Error ? e.message : String(e)}`);
      }
    });
  }
}

/** A request's template variables: an object of JSON values that sets none of the renderer's own. */
function checkTemplateVariables(vars: unknown, field: string): void {
  if (vars === undefined) return;
  if (vars === null || typeof vars !== 'object' || Array.isArray(vars))
    throw invalidArgument(field, 'must be an object');
  for (const key of Object.keys(vars)) {
    if (RESERVED_TEMPLATE_VARIABLES.has(key))
      throw invalidArgument(`${field}.${key}`, 'is set by the server: send it as the request field instead');
  }
}

/** Two deltas of one token as one (the token's own, then what the end of output released). */
export function mergeChatDeltas(a: ChatDelta, b: ChatDelta): ChatDelta {
  return {
    content: a.content + b.content,
    reasoning: a.reasoning + b.reasoning,
    toolCalls: [...a.toolCalls, ...b.toolCalls],
  };
}

/** A whole result as one delta (best_of output, sent at the end). */
export function resultAsDelta(r: ChatResult): ChatDelta {
  return {
    content: r.content,
    reasoning: r.reasoningContent,
    toolCalls: r.toolCalls.flatMap((c, index) => [
      { index, id: c.id, type: 'function' as const, function: { name: c.function.name, arguments: '' } },
      ...(c.function.arguments !== '' ? [{ index, function: { arguments: c.function.arguments } }] : []),
    ]),
  };
}
