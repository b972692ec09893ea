/**
 * bad_words (vLLM's): each word is banned as a token sequence. It is tokenized alone and with
 * a leading space (a word that starts the text and one inside it are different tokens), the
 * spaced form kept when it is another word of the same length, as vLLM's
 * `SamplingParams.update_from_tokenizer` does. A one-token word is never sampled; a longer
 * one's last token is banned whenever the output so far ends with the rest of it.
 */
import { invalidArgument } from '../errors.js';
import type { EngineTokenizer } from '../prompt.js';

export async function badWordTokens(tok: EngineTokenizer, words: readonly string[]): Promise<number[][]> {
  const out: number[][] = [];
  for (const [i, word] of words.entries()) {
    const encode = async (text: string) => {
      try {
        return await tok.encodeAsync(text, { addSpecialTokens: false });
      } catch (e) {
        throw invalidArgument(
          `params.bad_words[${i}]`,
          `cannot be tokenized: ${e instanceof Error ? e.message : String(e)}`,
        );
      }
    };
    const bare = word.trimStart();
    const plain = await encode(bare);
    if (plain.length === 0) continue;
    out.push(plain);
    const spaced = await encode(' ' + bare);
    if (spaced.length === plain.length && spaced[0] !== plain[0]) out.push(spaced);
  }
  return out;
}

/** The tokens `words` ban after `output` (the tokens generated so far). */
export function bannedTokens(
  words: readonly (readonly number[])[],
  output: readonly number[],
  outputStart = 0,
): number[] {
  const banned: number[] = [];
  const outputLen = output.length - outputStart;
  for (const w of words) {
    const prefix = w.length - 1;
    if (prefix > outputLen) continue;
    let match = true;
    for (let k = 0; k < prefix && match; k++) match = output[output.length - prefix + k] === w[k];
    if (match) banned.push(w[prefix]);
  }
  return banned;
}

/** Whether a ban depends on the output (a word of several tokens): such a sequence takes no draft tokens. */
export function hasMultiTokenWord(words: readonly (readonly number[])[] | undefined): boolean {
  return words?.some((w) => w.length > 1) ?? false;
}
