/**
 * `--kv-events-endpoint` / `--kv-events-topic`, shared by `prism serve` and `prism engine`:
 * the command-line form of config.json's BackendConfig.KvEventsConfig (engine/kv-events.ts).
 */
import { KV_EVENTS_ENDPOINT_PATTERN } from '../config/schema.js';
import type { KvEventsOptions } from '../engine/options.js';

export const kvEventsFlagOptions = {
  'kv-events-endpoint': { type: 'string' },
  'kv-events-topic': { type: 'string' },
} as const;

export const kvEventsHelp = `  --kv-events-endpoint E
                        publish KV-cache events (vLLM's format, ZeroMQ) for prefix-aware
                        routers: tcp://*:PORT binds, tcp://HOST:PORT connects to a subscriber
                        that binds (BackendConfig.KvEventsConfig.endpoint; default off)
  --kv-events-topic T   their topic (BackendConfig.KvEventsConfig.topic; default
                        kv@<POD_IP or host name>@<model name>, with :<port> under prism serve)`;

/**
 * The flags over the config file's settings; a usage message (thrown as `error`) names the flag.
 * `defaultTopic` is used when neither gives a topic.
 */
export function kvEventsFromFlags(
  values: { 'kv-events-endpoint'?: string; 'kv-events-topic'?: string },
  fromConfig: KvEventsOptions | undefined,
  defaultTopic: () => string,
  error: (message: string) => Error,
): KvEventsOptions | undefined {
  const endpoint = values['kv-events-endpoint'];
  if (endpoint !== undefined && (endpoint === '' || !new RegExp(KV_EVENTS_ENDPOINT_PATTERN).test(endpoint))) {
    throw error(
      `--kv-events-endpoint: must be tcp://HOST:PORT (tcp://*:PORT binds), ipc://PATH or inproc://NAME, got '${endpoint}'`,
    );
  }
  const topic = values['kv-events-topic'];
  if (topic !== undefined && (topic === '' || topic.length > 1024)) {
    throw error('--kv-events-topic: must be a non-empty string of at most 1024 characters');
  }
  const chosen = endpoint ?? fromConfig?.endpoint;
  if (chosen === undefined) {
    if (topic !== undefined)
      throw error('--kv-events-topic: needs --kv-events-endpoint (or the config field)');
    return undefined;
  }
  return { endpoint: chosen, topic: topic ?? fromConfig?.topic ?? defaultTopic() };
}
