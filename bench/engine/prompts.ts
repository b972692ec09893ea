/**
 * The benchmark's inputs: one plain-English passage that the fixed-length prompts are cut
 * from, and three chat questions for the side-by-side greedy continuations. The text is
 * ordinary prose so that the token mix (and the model's attention pattern) looks like real
 * traffic; its content does not change the cost of a greedy step.
 */

/** Source of the 32-token and 512-token prompts (repeated when a tokenizer needs more). */
export const PASSAGE = `The lighthouse on the northern cape was built in 1871, after three ships were lost on the
reef in a single winter. Its first keeper, a former ship's carpenter named Elias Brandt, kept a
logbook in which he wrote down the weather every four hours, the ships that passed, and the
small repairs that the tower always seemed to need. The lamp burned whale oil at first, then
kerosene, and in 1923 it was converted to electricity, which the keepers distrusted for years
because a storm could cut the line from the village. Brandt's granddaughter, who kept the light
from 1930 until it was automated in 1968, wrote that the hardest part of the job was not the
storms but the fog: on a clear night the beam reached twenty miles, but in fog a ship could pass
within a stone's throw and never see it, so the keeper had to sound the horn every thirty seconds
until the air cleared, sometimes for two days without sleep.

Modern navigation has made most lighthouses unnecessary. Satellite positioning tells a captain
where the ship is to within a few metres, and electronic charts show every reef and sandbank.
Yet many countries still maintain their lights, partly as a backup when electronics fail and
partly because sailors trust what they can see. A light that flashes twice every ten seconds is
a message that needs no power on board to read. The old logbooks, meanwhile, have become a
source for climate scientists, who use the keepers' careful notes on wind, temperature and sea
ice to reconstruct the weather of the nineteenth century, long before there were instruments
on every coast.

Computers learned a similar lesson about keeping records. Early machines had so little memory
that programs were written to forget as quickly as possible: each result was used and thrown
away. As memory became cheap, engineers discovered that remembering intermediate work could
save far more time than it cost. A cache keeps recently used data close to the processor
because the next request is likely to ask for something nearby. A database keeps a log of every
change so that it can recover after a crash. A language model that generates text one word at a
time keeps the keys and values it computed for earlier words, so that each new word needs only
a small amount of fresh arithmetic instead of a pass over the whole text again. In each case the
trade is the same one the lighthouse keepers made: a little effort spent writing things down,
in exchange for not having to work everything out again when it matters.

The cost of remembering is not zero, though. Memory has to be moved, and moving data is often
slower than computing with it. A processor that can multiply billions of numbers per second may
spend most of its time waiting for those numbers to arrive from main memory. This is why people
who build fast software spend so much effort on layout: keeping related values next to each
other, reading them in long straight runs, and reusing each value as many times as possible
once it has been fetched. A well-designed program, like a well-kept logbook, puts the
information where the next reader will look for it first.`;

/** Chat questions for the side-by-side greedy continuations (rendered with the model's template). */
export const CHAT_QUESTIONS: readonly string[] = [
  'What is the capital of France?',
  'Write a short poem about the sea.',
  'Explain in one sentence why the sky is blue.',
];

/**
 * Exactly `count` token ids starting at token `offset` of `text`'s tokenization, repeating
 * the text as often as needed (a separator keeps the repeats from merging into one word).
 */
export function tokenWindow(
  tokenize: (text: string) => number[],
  text: string,
  offset: number,
  count: number,
): number[] {
  if (!Number.isInteger(count) || count <= 0)
    throw new RangeError(`tokenWindow: count must be a positive integer, got ${count}`);
  if (!Number.isInteger(offset) || offset < 0)
    throw new RangeError(`tokenWindow: offset must be a non-negative integer, got ${offset}`);
  const once = tokenize(text);
  if (once.length === 0) throw new Error('tokenWindow: the text tokenizes to nothing');
  let source = once;
  let repeated = text;
  while (source.length < offset + count) {
    repeated += '\n\n' + text;
    source = tokenize(repeated);
  }
  return source.slice(offset, offset + count);
}
