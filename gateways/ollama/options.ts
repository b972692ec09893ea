/**
 * Ollama's `options` → the engine's sampling parameters. Each option is honoured, refused
 * with a 400 naming it, or — the ones that set how Ollama loads a model (GPU layers, threads,
 * mmap...) and mean nothing per request on this server — accepted and named as ignored
 * (shared/ignored-fields.ts), as Ollama itself only warns about options it does not know.
 *
 * Absent options take Ollama's defaults (its `DefaultOptions`: temperature 0.8, top_k 40,
 * top_p 0.9), which a model's Modelfile would override there; a model here has no Modelfile.
 */
import type { SamplingParams } from '../../engine/api.js';
import { invalid, notSupported } from '../shared/http-error.js';

const OLLAMA_DEFAULTS = { temperature: 0.8, topK: 40, topP: 0.9 } as const;

/** Samplers the engine does not have: accepted only at the value that turns them off. */
const NEUTRAL: Readonly<Record<string, number>> = { tfs_z: 1, mirostat: 0 };

export interface OllamaOptionLimits {
  /** The longest sequence the engine serves (prompt + output). */
  readonly maxSeqLen: number;
}

export interface MappedOptions {
  readonly params: SamplingParams;
  /** options.<name> of each option accepted without effect. */
  readonly ignored: string[];
}

function number(o: Record<string, unknown>, key: string, integer = false): number | undefined {
  const v = o[key];
  if (v === undefined || v === null) return undefined;
  if (typeof v !== 'number' || !Number.isFinite(v) || (integer && !Number.isInteger(v)))
    throw invalid(`options.${key}`, integer ? 'must be an integer' : 'must be a number');
  return v;
}

export function mapOptions(raw: unknown, limits: OllamaOptionLimits): MappedOptions {
  if (raw === undefined || raw === null) raw = {};
  if (typeof raw !== 'object' || Array.isArray(raw)) throw invalid('options', 'must be an object');
  const o = raw as Record<string, unknown>;
  const ignored: string[] = [];
  const known = new Set([
    'temperature',
    'top_k',
    'top_p',
    'min_p',
    'typical_p',
    'seed',
    'num_predict',
    'num_ctx',
    'stop',
    'repeat_penalty',
    'repeat_last_n',
    'presence_penalty',
    'frequency_penalty',
  ]);
  for (const key of Object.keys(o)) {
    if (known.has(key)) continue;
    if (key in NEUTRAL) {
      const v = number(o, key);
      if (v !== undefined && v !== NEUTRAL[key])
        throw notSupported(`options.${key}`, `${key} other than ${NEUTRAL[key]} (its off value)`);
    } else {
      // How Ollama loads a model (num_gpu, num_thread, use_mmap, num_batch, numa, num_keep...),
      // mirostat's settings (read only while mirostat is on, which it cannot be), the deprecated
      // penalize_newline, and options Ollama itself does not know (it warns and goes on).
      ignored.push(`options.${key}`);
    }
  }

  const numCtx = number(o, 'num_ctx', true);
  if (numCtx !== undefined && (numCtx < 1 || numCtx > limits.maxSeqLen))
    throw invalid('options.num_ctx', `must be in [1, ${limits.maxSeqLen}] (the context this server serves)`);
  // -1: until the end of the text; -2: fill the context. Both: what fits.
  const numPredict = number(o, 'num_predict', true);
  if (numPredict !== undefined && (numPredict < -2 || numPredict === 0))
    throw invalid('options.num_predict', 'must be >= 1, or -1 (no limit) or -2 (fill the context)');
  const seed = number(o, 'seed', true);
  if (seed !== undefined && seed < -1) throw invalid('options.seed', 'must be >= 0, or -1 (random)');
  const repeatPenalty = number(o, 'repeat_penalty');
  const repeatLastN = number(o, 'repeat_last_n', true);
  // The engine's penalty covers the whole sequence: Ollama's -1 (the whole context).
  if (repeatPenalty !== undefined && repeatPenalty !== 1 && repeatLastN !== undefined && repeatLastN !== -1)
    throw notSupported(
      'options.repeat_last_n',
      'a repeat_penalty window other than -1 (the whole sequence, what the engine penalizes)',
    );
  if (repeatLastN !== undefined && (repeatPenalty === undefined || repeatPenalty === 1) && repeatLastN !== -1)
    ignored.push('options.repeat_last_n');
  const stop = o.stop;
  if (
    stop !== undefined &&
    stop !== null &&
    (!Array.isArray(stop) || stop.some((s) => typeof s !== 'string'))
  )
    throw invalid('options.stop', 'must be a list of strings');
  const topK = number(o, 'top_k', true);
  const minP = number(o, 'min_p');
  if (minP !== undefined && (minP < 0 || minP > 1)) throw invalid('options.min_p', 'must be in [0, 1]');
  const typicalP = number(o, 'typical_p');
  if (typicalP !== undefined && (typicalP <= 0 || typicalP > 1))
    throw invalid('options.typical_p', 'must be in (0, 1]');
  return {
    params: {
      temperature: number(o, 'temperature') ?? OLLAMA_DEFAULTS.temperature,
      // Ollama: top_k 0 turns top-k off.
      ...(topK === 0 ? {} : { topK: topK ?? OLLAMA_DEFAULTS.topK }),
      topP: number(o, 'top_p') ?? OLLAMA_DEFAULTS.topP,
      ...(minP !== undefined ? { minP } : {}),
      ...(typicalP !== undefined ? { typicalP } : {}),
      ...(seed !== undefined && seed >= 0 ? { seed } : {}),
      ...(numPredict !== undefined && numPredict > 0 ? { maxNewTokens: numPredict } : {}),
      // A prompt longer than the context Ollama was given keeps its end.
      ...(numCtx !== undefined ? { truncate: numCtx } : {}),
      ...(Array.isArray(stop) && stop.length > 0 ? { stop: stop as string[] } : {}),
      ...(repeatPenalty !== undefined ? { repetitionPenalty: repeatPenalty } : {}),
      ...(o.presence_penalty !== undefined ? { presencePenalty: number(o, 'presence_penalty') } : {}),
      ...(o.frequency_penalty !== undefined ? { frequencyPenalty: number(o, 'frequency_penalty') } : {}),
    },
    ignored,
  };
}
