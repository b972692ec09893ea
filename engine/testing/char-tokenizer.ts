/**
 * Test-only tokenizer: one printable ASCII character per token (ids 0..94 = ' '..'~') plus
 * two specials, so engine-core tests can check text, stop strings and streaming exactly
 * without a model. The real engine always uses engine/tokenizer/.
 */
import type { EngineTokenizer } from '../prompt.js';
import type { ChatMessage } from '../types.js';

export const BOS = 95;
export const EOS = 96;

export class CharTokenizer implements EngineTokenizer {
  readonly vocabSize = 100;
  readonly eosTokenIds = [EOS];

  encode(text: string, options: { addSpecialTokens?: boolean } = {}): number[] {
    const ids = [...text].map((ch) => {
      const c = ch.charCodeAt(0) - 32;
      return c >= 0 && c < 95 ? c : 31; // '?'
    });
    return options.addSpecialTokens === false ? ids : [BOS, ...ids];
  }

  encodeAsync(text: string, options: { addSpecialTokens?: boolean } = {}): Promise<number[]> {
    return Promise.resolve(this.encode(text, options));
  }

  tokenText(id: number): string {
    if (id === BOS) return '<s>';
    if (id === EOS) return '</s>';
    return id < 95 ? String.fromCharCode(32 + id) : `<${id}>`;
  }

  decode(ids: readonly number[], options: { skipSpecialTokens?: boolean } = {}): string {
    return ids
      .filter((id) => !(options.skipSpecialTokens && id >= 95))
      .map((id) => this.tokenText(id))
      .join('');
  }

  applyChatTemplate(
    messages: readonly ChatMessage[],
    options: { addGenerationPrompt?: boolean; template?: string } = {},
  ): string {
    if (options.template === 'broken') throw new Error('template error: unexpected end');
    const body = messages.map((m) => `[${m.role}]${m.content}`).join('');
    return options.addGenerationPrompt === false ? body : body + '[assistant]';
  }

  createDetokenizer(options: { skipSpecialTokens?: boolean } = {}) {
    let text = '';
    return {
      push: (id: number) => {
        const piece = options.skipSpecialTokens && id >= 95 ? '' : this.tokenText(id);
        text += piece;
        return piece;
      },
      flush: () => '',
      get text() {
        return text;
      },
    };
  }
}
