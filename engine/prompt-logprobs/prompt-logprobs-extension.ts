/**
 * Prompt logprobs as a request extension (engine/extension.ts): vLLM's `prompt_logprobs`,
 * OpenAI's legacy `echo` with `logprobs`, TGI's `decoder_input_details`. A request that asks
 * computes its whole prompt here, the prefix cache bypassed (`RequestPlan.wholePrompt`): a
 * cached block carries KV, not the rows of logits its positions gave, and keeping scores
 * beside the blocks would tie the cache to one kind of request; harnesses that score send
 * mostly distinct prompts, so what the bypass recomputes is small. Its blocks still go into
 * the cache for other requests. The native step scores each prefill row at the next prompt
 * token (engine/step-plan.ts names the rows); `stepOutput` keeps the scores and the finish
 * events carry them. With max_new_tokens 0 the request ends at its first sample, its choices
 * finished by length with no token: the prompt scored, nothing generated.
 */
import { EngineError, invalidArgument } from '../errors.js';
import type { ExtensionHost, RequestExtension, RequestPlan } from '../extension.js';
import type { LiveRequest } from '../live-request.js';
import type { EngineTokenizer } from '../prompt.js';
import type { StepOutput } from '../runner.js';
import type { ResolvedParams } from '../sampling-params.js';
import type { ScheduledBatch } from '../scheduler.js';
import type { Sequence } from '../sequence.js';
import type { FinishEvent, GenerateRequest } from '../types.js';
import { PromptScores } from './prompt-scores.js';

interface PromptPart {
  /** Alternatives per prompt token. */
  readonly top: number;
  /** max_new_tokens 0: the request only scores its prompt. */
  readonly scoreOnly: boolean;
}

export class PromptLogprobsExtension implements RequestExtension<PromptPart> {
  readonly name = 'prompt logprobs';
  private readonly scores = new WeakMap<LiveRequest, PromptScores>();
  private readonly scoreOnly = new WeakSet<LiveRequest>();
  /** Requests admitted with prompt logprobs and not released (none: a step has nothing to read). */
  private live = 0;

  constructor(
    private readonly tokenizer: EngineTokenizer,
    private readonly host: ExtensionHost,
    /** The engine's device ('cpu', 'cuda:N'): the CUDA step does not score prompt rows yet. */
    private readonly device: string,
  ) {}

  check(request: GenerateRequest, params: ResolvedParams): PromptPart | undefined {
    if (params.promptLogprobs === null) return undefined;
    if (this.device.startsWith('cuda'))
      throw new EngineError(
        'UNIMPLEMENTED',
        'prompt logprobs are not supported on the CUDA backend yet',
        'params.prompt_logprobs',
      );
    if (request.kvTransfer)
      throw invalidArgument(
        'kv_transfer',
        'cannot be combined with prompt logprobs: the prompt must be computed on this engine',
      );
    if (params.maxNewTokens === 0 && params.beam)
      throw invalidArgument('params.max_new_tokens', 'must be >= 1 with use_beam_search');
    return { top: params.promptLogprobs, scoreOnly: params.maxNewTokens === 0 };
  }

  plan(plan: RequestPlan, part: PromptPart | undefined): void {
    if (part) plan.wholePrompt = true;
  }

  admit(req: LiveRequest, seq: Sequence, part: PromptPart | undefined): void {
    if (!part) return;
    seq.promptScores = { top: part.top };
    this.scores.set(req, new PromptScores(seq.tokens.slice(0, seq.promptLen), part.top));
    if (part.scoreOnly) this.scoreOnly.add(req);
    this.live++;
  }

  /** Keeps the scores of the step's prompt rows, before its samples can finish a request. */
  stepOutput(batch: ScheduledBatch, out: StepOutput): void {
    if (this.live === 0 || !out.promptLogprobs) return;
    let row = 0;
    for (const { seq, start, numNew, draft } of batch.items) {
      if (seq.promptScores && !seq.aborted) {
        const req = this.host.request(seq.requestId);
        const scores = req && this.scores.get(req);
        scores?.record(out, row, start, numNew);
      }
      row += numNew + (draft?.length ?? 0);
    }
  }

  /** max_new_tokens 0: the prompt is scored; the request ends by length with no output. */
  takeSample(req: LiveRequest): boolean {
    if (!this.scoreOnly.has(req)) return false;
    for (const c of req.choices) if (c.reason === null) c.reason = 'length';
    for (const s of req.seqs) if (s.status !== 'finished') this.host.finishSequence(s);
    this.host.finish(req);
    return true;
  }

  finishFields(req: LiveRequest): Pick<FinishEvent, 'promptLogprobs'> | undefined {
    const scores = this.scores.get(req);
    return scores ? { promptLogprobs: scores.list(this.tokenizer) } : undefined;
  }

  release(req: LiveRequest): void {
    if (this.scores.delete(req)) this.live--;
  }
}
